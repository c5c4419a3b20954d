// pipespin: run programs with the shim preloaded, and measure what it buys.
//
// This file owns the subcommand table, --help and --version, and turns the
// errors subcommands throw into messages and exit statuses. Adding a
// subcommand is a new cli_NAME.cpp (listed in tools/CMakeLists.txt), its
// declarations in cli.h and one line in kCommands.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/library.h"
#include "cli/util/text.h"
#include "core/config.h"
#include "core/options.h"

#ifndef PIPESPIN_VERSION
#error "PIPESPIN_VERSION must be defined by the build (tools/CMakeLists.txt)"
#endif

namespace pipespin::cli {
namespace {

constexpr Command kCommands[] = {
    {"run", run_main, run_usage, full_usage},
    {"bench", bench_main, bench_usage, full_usage},
    {"stats", stats_main, stats_usage, stats_usage},
    {"ab", ab_main, ab_usage, ab_usage},
    {"coverage", coverage_main, coverage_usage, full_usage},
    {"check-config", check_config_main, check_config_usage, full_usage},
    {"bench-worker", bench_worker_main, nullptr, nullptr},
    {"gen-docs", gen_docs_main, nullptr, nullptr},
};

std::string environment_help() {
    std::string out =
        "Environment read by libpipespin.so in the program it is preloaded into\n"
        "(`pipespin run` flags of the same names set them):\n";
    for (const OptionSpec& spec : option_table()) {
        out += fmt::format("  {}={} (default: {})\n", env_name(spec), value_hint(spec),
                           format_default(spec).empty() ? "empty" : format_default(spec));
        out += wrap(spec.help, 6);
    }
    out += fmt::format("  PIPESPIN_CONFIG=PATH (default: {})\n", kDefaultConfigPath);
    out += wrap(fmt::format("the config file, whose keys are the names above in lower case "
                            "([global] and [program NAME] sections; see check-config); the "
                            "variables above override it. {} is read only if it exists; set "
                            "but empty: no file.",
                            kDefaultConfigPath),
                6);
    out += "\nEnvironment read by this tool:\n";
    out += fmt::format("  {}=PATH\n", kLibraryEnv);
    out += wrap(fmt::format("the {} to preload; when unset, the first of: {}", kLibraryName,
                            fmt::join(library_search_path(), ", ")),
                6);
    return out;
}

}  // namespace

std::span<const Command> commands() {
    return kCommands;
}

std::string exit_status_text() {
    return fmt::format(
        "{} for a usage error; {} when {} cannot be found or used; for "
        "run, {} when CMD cannot be executed, {} when it is not found, "
        "otherwise the status of CMD.",
        kExitUsage, kExitSetup, kLibraryName, kExitCannotRun, kExitNotFound);
}

std::string full_usage() {
    std::string out = fmt::format(
        "pipespin {}: spin briefly on pipes before blocking, by LD_PRELOAD\n\n"
        "Usage: pipespin COMMAND [ARGS...]\n\n",
        PIPESPIN_VERSION);
    for (const Command& c : kCommands)
        if (c.usage != nullptr) out += c.usage() + "\n";
    out +=
        "  pipespin help | --help | -h\n"
        "      Show this text.\n"
        "  pipespin --version\n"
        "      Show the version.\n\n";
    out += environment_help();
    out += "\nExit status:\n";
    out += wrap(exit_status_text(), 2);
    return out;
}

namespace {

int dispatch(Args args) {
    if (args.empty()) {
        std::fputs(full_usage().c_str(), stderr);
        return kExitUsage;
    }
    const std::string_view first = args[0];
    if (first == "--help" || first == "-h" || first == "help") {
        std::fputs(full_usage().c_str(), stdout);
        return kExitOk;
    }
    if (first == "--version") {
        fmt::print("pipespin {}\n", PIPESPIN_VERSION);
        return kExitOk;
    }
    for (const Command& c : kCommands) {
        if (c.name != first) continue;
        try {
            return c.main(args.subspan(1));
        } catch (const HelpRequested&) {
            if (c.help == nullptr) throw;
            std::fputs(c.help().c_str(), stdout);
            return kExitOk;
        }
    }
    if (first.starts_with("-"))
        throw UsageError(fmt::format("unknown option '{}'", printable(first)));
    throw UsageError(fmt::format("unknown command '{}'", printable(first)));
}

}  // namespace
}  // namespace pipespin::cli

int main(int argc, char** argv) {
    using namespace pipespin::cli;
    try {
        return dispatch(Args(argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0)));
    } catch (const UsageError& e) {
        fmt::print(stderr, "pipespin: {}\nTry 'pipespin --help'.\n", e.what());
        return kExitUsage;
    } catch (const Failure& e) {
        fmt::print(stderr, "pipespin: error: {}\n", e.what());
        return e.exit_code;
    } catch (const std::exception& e) {
        fmt::print(stderr, "pipespin: error: {}\n", e.what());
        return kExitFailure;
    }
}
