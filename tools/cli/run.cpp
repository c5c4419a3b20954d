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
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/library.h"
#include "cli/util/preload_check.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"
#include "core/options.h"

namespace pipespin::cli {

namespace {

// What the shim would resolve in CMD's process: the file PIPESPIN_CONFIG
// names (else /etc/pipespin.conf if it exists), CMD's names, and the
// environment with the flags applied over it.
int print_run_config(Args cmd,
                     const std::vector<std::pair<const OptionSpec*, std::string>>& settings) {
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
    return print_resolved(c, absent ? std::string_view{} : std::string_view(file), id);
}

// `cmd` ends in a null pointer: execvp takes it as is.
int run_command(Args cmd, const std::vector<std::pair<const OptionSpec*, std::string>>& settings,
                bool print_config) {
    if (print_config) return print_run_config(cmd, settings);

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

    ::execvp(cmd[0], cmd.data());
    const int err = errno;
    throw Failure(
        err == ENOENT ? kExitNotFound : kExitCannotRun,
        fmt::format("run: cannot execute '{}': {}", printable(cmd[0]), std::strerror(err)));
}

}  // namespace

Action define_run(CLI::App& app) {
    struct Values {
        bool print_config = false;
        std::optional<std::string> settings[kOptionCount];  // as the shim will read them
        std::vector<std::string> cmd;
    };
    auto v = std::make_shared<Values>();
    app.description(fmt::format(
        "Run CMD with {} preloaded (put in front of LD_PRELOAD). pipespin replaces itself "
        "with CMD, so its pid, signals and exit status are CMD's own. Each option sets the "
        "PIPESPIN_ variable of the same name for CMD (and all its children); the rest of the "
        "environment passes unchanged. Warns when CMD is a program the loader will not "
        "preload into (static, setuid).",
        kLibraryName));
    app.add_flag("--print-config", v->print_config,
                 "run nothing: print what the shim would resolve in CMD's process (config "
                 "file, program name, environment and these options) and where each value "
                 "comes from; exit 1 if there is any problem");
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
        std::vector<std::pair<const OptionSpec*, std::string>> settings;
        for (const OptionSpec& spec : option_table())
            if (const auto& value = v->settings[option_index(spec)])
                settings.emplace_back(&spec, *value);
        std::vector<char*> cmd;
        for (std::string& w : v->cmd) cmd.push_back(w.data());
        cmd.push_back(nullptr);  // for execvp
        return run_command(Args(cmd.data(), cmd.size() - 1), settings, v->print_config);
    };
}

}  // namespace pipespin::cli
