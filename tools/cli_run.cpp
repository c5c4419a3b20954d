// pipespin run: exec a command with the shim preloaded.
//
// The flags are generated from the option table, so every option the shim
// reads from PIPESPIN_<NAME> can be given as --<name> here, validated the same
// way. pipespin replaces itself with the command (no fork), so signals, the
// exit status and the process id are the command's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "common.h"
#include "core/options.h"

namespace pipespin::cli {

std::string run_usage() {
    std::string out = "  pipespin run [OPTIONS] [--] CMD [ARGS...]\n";
    out += wrap(fmt::format("Run CMD with {} preloaded (put in front of LD_PRELOAD). Each "
                            "option sets the PIPESPIN_ variable of the same name for CMD; the "
                            "rest of the environment passes unchanged. Warns when CMD is a "
                            "program the loader will not preload into (static, setuid).",
                            kLibraryName),
                6);
    for (const OptionSpec& spec : option_table())
        out += fmt::format("        {:<16} {}\n", flag_name(spec), value_hint(spec));
    return out;
}

int run_main(Args args) {
    ArgCursor cur("run", args);
    std::vector<std::pair<const OptionSpec*, std::string>> settings;
    while (cur.at_flag()) {
        if (cur.take_flag("--help") || cur.take_flag("-h")) {
            std::fputs(full_usage().c_str(), stdout);
            return kExitOk;
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

    const std::string library = find_library();

    // Flags after the environment: what the user typed last wins.
    for (const auto& [spec, value] : settings)
        ::setenv(env_name(*spec).c_str(), value.c_str(), 1);

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
