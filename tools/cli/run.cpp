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
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
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

}  // namespace

std::string run_usage() {
    std::string out = "  pipespin run [--print-config] [OPTIONS] [--] CMD [ARGS...]\n";
    out += wrap(fmt::format("Run CMD with {} preloaded (put in front of LD_PRELOAD). Each "
                            "option sets the PIPESPIN_ variable of the same name for CMD; the "
                            "rest of the environment passes unchanged. Warns when CMD is a "
                            "program the loader will not preload into (static, setuid). "
                            "--print-config runs nothing: it prints what the shim would "
                            "resolve in CMD's process (config file, program name, "
                            "environment and these options) and where each value comes "
                            "from, and exits 1 if there is any problem.",
                            kLibraryName),
                6);
    for (const OptionSpec& spec : option_table())
        out += fmt::format("        {:<16} {}\n", flag_name(spec), value_hint(spec));
    return out;
}

int run_main(Args args) {
    ArgCursor cur("run", args);
    std::vector<std::pair<const OptionSpec*, std::string>> settings;
    bool print_config = false;
    while (cur.at_flag()) {
        if (cur.take_flag("--print-config")) {
            print_config = true;
            continue;
        }
        bool matched = false;
        for (const OptionSpec& spec : option_table()) {
            if (auto text = cur.take_value(flag_name(spec))) {
                settings.emplace_back(&spec, parse_flag_text("run", spec, *text));
                matched = true;
                break;
            }
        }
        if (!matched) cur.fail_unknown();
    }
    cur.take_separator();
    if (cur.done()) throw UsageError("run: missing CMD");
    // rest() ends at argv[argc], which is a null pointer: execvp can take it as is.
    const Args cmd = cur.rest();
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

}  // namespace pipespin::cli
