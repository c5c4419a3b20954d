// pipespin run: exec a command with the shim preloaded.
//
// The flags are generated from the option table, so every option the shim
// reads from PIPESPIN_<NAME> can be given as --<name> here, validated the same
// way. pipespin replaces itself with the command (no fork), so signals, the
// exit status and the process id are the command's own.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/resolved.h"
#include "cli/run_summary.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/json.h"
#include "cli/util/library.h"
#include "cli/util/preload_check.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"
#include "core/config.h"
#include "core/options.h"
#include "report/env_marker.h"

extern char** environ;

namespace pipespin::cli {

namespace {

// What the shim would resolve in CMD's process: the file PIPESPIN_CONFIG
// names (else /etc/pipespin.conf if it exists), CMD's names, and the
// environment with the flags applied over it.
int print_run_config(Args cmd,
                     const std::vector<std::pair<const OptionSpec*, std::string>>& settings,
                     const JsonOutput& json) {
    Environment env = Environment::current();
    for (const auto& [spec, value] : settings) env.set(env_name(*spec), value);
    std::string file(kDefaultConfigPath);
    bool must_exist = false;
    if (auto v = env.get("PIPESPIN_CONFIG")) {
        file = std::string(*v);
        must_exist = true;
    }
    ProgramNames names;
    ProgramId id;
    if (auto path = resolve_command(cmd[0])) {
        id = program_id_for_command(*path, cmd[0], names);
    } else {
        fmt::print(stderr, "pipespin: warning: '{}' not found; matching its name as given\n",
                   printable(cmd[0]));
        id = program_id_for(base_name(cmd[0]), names);
    }
    const ConfigCheck c = check_config(
        file, must_exist, id,
        [](const char* name, void* ctx) -> const char* {
            auto v = static_cast<const Environment*>(ctx)->get(name);
            return v ? v->data() : nullptr;  // entries are NAME=value strings: NUL-terminated
        },
        &env, static_cast<unsigned>(::geteuid()));
    const bool absent =
        !must_exist && !c.file_read && c.problem_count == 0 && ::access(file.c_str(), F_OK) != 0;
    return print_resolved(c, absent ? std::string_view{} : std::string_view(file), id, json, "run");
}

// The PIPESPIN_* variables CMD's processes will read, checked here once:
// their problems are said once for the whole tree, and the marker
// (report/env_marker.h) tells every shim of the tree that they were.
void check_environment() {
    EnvOverlay overlay;
    capture_env([](const char* name, void*) -> const char* { return ::getenv(name); }, nullptr,
                overlay);
    Options options;
    OptionSources sources;
    std::vector<std::string> problems;
    apply_env(
        overlay, options, sources,
        [](void* ctx, const char* message) {
            static_cast<std::vector<std::string>*>(ctx)->push_back(message);
        },
        &problems);
    for (const std::string& p : problems)
        fmt::print(stderr, "pipespin: warning: {} (said once for every process of CMD)\n",
                   printable(p));
    char marker[env_marker::kValueLength + 1];
    ::unsetenv(env_marker::kName);
    env_marker::format(env_marker::sum(environ), marker);
    ::setenv(env_marker::kName, marker, 1);
}

struct RunArgs {
    bool print_config = false;
    bool summary = false;
    JsonOutput json;
};

// `cmd` ends in a null pointer: execvp takes it as is.
int run_command(Args cmd, const std::vector<std::pair<const OptionSpec*, std::string>>& settings,
                const RunArgs& a) {
    if (a.print_config) return print_run_config(cmd, settings, a.json);

    const std::string library = find_library();

    // Flags after the environment: what the user typed last wins.
    for (const auto& [spec, value] : settings) ::setenv(env_name(*spec).c_str(), value.c_str(), 1);

    const char* old_preload = ::getenv("LD_PRELOAD");
    std::vector<std::string> dropped;
    const std::string preload = preload_with(old_preload ? old_preload : "", library, &dropped);
    for (const std::string& other : dropped)
        fmt::print(stderr, "pipespin: warning: replacing {} in LD_PRELOAD with {}\n",
                   printable(other), library);
    ::setenv("LD_PRELOAD", preload.c_str(), 1);

    // Warn, do not refuse: the user may want the run anyway (e.g. as a control).
    if (auto path = resolve_command(cmd[0]))
        for (const std::string& why : preload_obstacles(*path))
            fmt::print(stderr, "pipespin: warning: {} {}; it will run without pipespin\n",
                       printable(*path), why);

    if (a.summary) return run_with_summary(cmd, a.json, check_environment);
    check_environment();

    ::execvp(cmd[0], cmd.data());
    const int err = errno;
    throw Failure(
        err == ENOENT ? kExitNotFound : kExitCannotRun,
        fmt::format("run: cannot execute '{}': {}", printable(cmd[0]), std::strerror(err)));
}

}  // namespace

Action define_run(CLI::App& app) {
    struct Values {
        RunArgs run;
        std::optional<std::string> settings[kOptionCount];  // as the shim will read them
        std::vector<std::string> cmd;
    };
    auto v = std::make_shared<Values>();
    app.description(fmt::format(
        "Run CMD with {} preloaded (put in front of LD_PRELOAD). pipespin replaces itself "
        "with CMD, so its pid, signals and exit status are CMD's own. Each option sets the "
        "PIPESPIN_ variable of the same name for CMD (and all its children); the rest of the "
        "environment passes unchanged. The PIPESPIN_ variables are checked once, here: a bad "
        "value is reported once for the whole tree (PIPESPIN_CHECKED tells the shim in each "
        "process), not by each process. Warns when CMD is a program the loader will not "
        "preload into (static, setuid).\n"
        "--summary: CMD runs as a child instead, every process of its tree writes a "
        "statistics line (to PIPESPIN_STATS when that names a file, else to a private one), "
        "and when CMD exits a table on stderr says what the shim did, per program: "
        "processes, calls, waits, spins, hit rate, sleeps avoided, CPU spent spinning and "
        "time asleep, with a total line. CMD's output and exit status are its own; killed by "
        "a signal, it is reported and pipespin dies of the same signal. With --json the "
        "table is a JSON document on stdout, after CMD's own output (--export-json FILE "
        "keeps stdout CMD's).",
        kLibraryName));
    app.add_flag("--print-config", v->run.print_config,
                 "run nothing: print what the shim would resolve in CMD's process (config "
                 "file, program name, environment and these options) and where each value "
                 "comes from; exit 1 if there is any problem");
    app.add_flag("-s,--summary", v->run.summary,
                 "after CMD exits, print a table of what the shim did in its processes, per "
                 "program, on stderr");
    add_json_options(app, v->run.json, "the --summary table or the --print-config table");
    for (const OptionSpec& spec : option_table()) {
        const std::size_t i = option_index(spec);
        CLI::Option* opt = app.add_option(flag_name(spec), CLI::callback_t{},
                                          fmt::format("{} ({})", spec.help, env_name(spec)));
        opt->type_name(std::string(value_hint(spec)))
            ->default_str(format_default(spec).empty() ? "empty" : format_default(spec))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
            ->each([v, &spec, i](const std::string& text) {
                v->settings[i] = parse_flag_text("run", spec, text);
            });
    }
    app.add_option("CMD", v->cmd, "the command and its arguments");
    // The first word that is not an option is CMD: what follows is its own.
    app.positionals_at_end();
    return [v](Args) {
        if (v->cmd.empty()) throw UsageError("run: missing CMD");
        if (v->run.print_config && v->run.summary)
            throw UsageError("run: --print-config runs nothing to summarize");
        if (v->run.json.wanted() && !v->run.print_config && !v->run.summary)
            throw UsageError("run: --json and --export-json go with --summary or --print-config");
        std::vector<std::pair<const OptionSpec*, std::string>> settings;
        for (const OptionSpec& spec : option_table())
            if (const auto& value = v->settings[option_index(spec)])
                settings.emplace_back(&spec, *value);
        std::vector<char*> cmd;
        for (std::string& w : v->cmd) cmd.push_back(w.data());
        cmd.push_back(nullptr);  // for execvp
        return run_command(Args(cmd.data(), cmd.size() - 1), settings, v->run);
    };
}

}  // namespace pipespin::cli
