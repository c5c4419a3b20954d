// The command table of `pipespin`, and the end of its --help.
#include "cli/commands.h"

#include <fmt/format.h>

#include "cli/util/library.h"
#include "cli/util/text.h"
#include "core/config.h"
#include "core/options.h"

#ifndef PIPESPIN_VERSION
#error "PIPESPIN_VERSION must be defined by the build (tools/cli/CMakeLists.txt)"
#endif

namespace pipespin::cli {
namespace {

constexpr Example kRunExamples[] = {
    {"pipespin run -- perf bench sched pipe",
     "Runs perf's pipe benchmark with the shim preloaded, in its default mode (adaptive)."},
    {"pipespin run --mode fixed --spin-us 100 -- make -j8",
     "Spins up to 100 µs before every blocking pipe wait, in make and in every job it starts."},
    {"pipespin run --summary -- sh -c 'seq 1000000 | sort | uniq -c | wc -l'",
     "The pipeline's output as ever, then one table on stderr: what the shim did in each "
     "program."},
    {"PIPESPIN_LOG=info pipespin run -- sh -c 'seq 1000000 | wc -l'",
     "Each process of the pipeline says what the shim did for it when it exits."},
    {"pipespin run --print-config -- nginx",
     "Runs nothing: prints the settings nginx would get, and where each comes from."},
};
constexpr Example kCheckConfigExamples[] = {
    {"pipespin check-config --program nginx /etc/pipespin.conf",
     "What nginx's processes would resolve from the file, line by line, with its problems."},
    {"pipespin check-config --example > pipespin.conf",
     "A config file that documents every option and changes nothing yet."},
    {"pipespin check-config --json /etc/pipespin.conf",
     "The same table as one JSON document (docs/config.schema.json)."},
};
constexpr Example kStatsExamples[] = {
    {"pipespin run --stats /tmp/s.jsonl -- make -j8 && pipespin stats /tmp/s.jsonl",
     "What the shim did in each program of a build: waits, spins, the sleeps they avoided."},
    {"pipespin stats --compare --plot waits.png /var/tmp/ab-*.jsonl",
     "An A/B test's lines (PIPESPIN_AB=50 on a fleet): did the treatment arm wait less?"},
    {"pipespin stats --advise /var/tmp/ab-*.jsonl > advice.conf",
     "The config file the same lines support: mode = off where the treatment was slower, "
     "a spin_us that fits the peer's answers, each with its evidence."},
};
constexpr Example kAbExamples[] = {
    {"pipespin ab -n 20 -- make -j8",
     "20 builds with the shim spinning and 20 with it off, interleaved: is the build faster?"},
    {"PIPESPIN_MODE=fixed pipespin ab --json -- ./pipeline.sh",
     "The same for mode fixed, as one JSON object."},
};
constexpr Example kPingpongExamples[] = {
    {"pipespin pingpong",
     "7 rounds of 20000 round trips between two processes: does spinning pay on this "
     "machine?"},
    {"pipespin pingpong --threads --spin-us 100",
     "Between two threads, with a spin budget of 100 µs."},
};

constexpr Command kCommands[] = {
    {"run", "run a command with libpipespin.so preloaded",
     "run [-s|--summary] [--json] [--export-json FILE] [OPTIONS] [--] CMD [ARGS...]\n"
     "run --print-config [--json] [OPTIONS] [--] CMD [ARGS...]",
     define_run, kRunExamples},
    {"check-config", "what a config file resolves to, and where each value comes from",
     "check-config [--program NAME] [--json] [--export-json FILE] FILE\ncheck-config --example",
     define_check_config, kCheckConfigExamples},
    {"stats", "what the shim did, from the statistics lines processes wrote",
     "stats [--json] [--export-json FILE] FILE...\n"
     "stats --compare [--program NAME] [--margin PCT] [--seed S] [--json] [--plot OUT] FILE...\n"
     "stats --advise [--program NAME] [--margin PCT] [--seed S] [--json] FILE...",
     define_stats, kStatsExamples},
    {"ab", "A/B test: is a command faster with the shim spinning than off?",
     "ab [-n N] [--warmup W] [--config FILE] [--seed S] [--json] [--export-json FILE] "
     "[--plot FILE] [--] CMD [ARGS...]",
     define_ab, kAbExamples},
    {"pingpong", "time a pipe ping-pong with and without the shim on this machine",
     "pingpong [--threads] [--iterations N] [--rounds R] [--spin-us N] [--json] "
     "[--export-json FILE]",
     define_pingpong, kPingpongExamples},
    {"pingpong-worker",
     "what pingpong runs once per sample",
     "pingpong-worker LOOP [OPTIONS] N",
     define_pingpong_worker,
     {},
     true},
};

// The settings most people touch; the rest are in `run --help` and the
// manual pages.
constexpr OptionId kEverydayOptions[] = {OptionId::Mode, OptionId::SpinUs, OptionId::Log};

std::string footer() {
    std::string out = wrap(fmt::format("Settings, read by {} in the program it is preloaded "
                                       "into (`run` flags of the same names set them; all of "
                                       "them: pipespin run --help, pipespin.conf(5)):",
                                       kLibraryName),
                           0);
    for (OptionId id : kEverydayOptions) {
        const OptionSpec& spec = option_spec(id);
        out += fmt::format("  {}={} (default: {})\n", env_name(spec), value_hint(spec),
                           format_default(spec));
    }
    out += fmt::format("  PIPESPIN_CONFIG=PATH (default: {})\n", kDefaultConfigPath);
    out += fmt::format("  {}=PATH\n", kLibraryEnv);
    out += wrap(fmt::format("the {} to preload; unset, the first of: {}", kLibraryName,
                            fmt::join(library_search_path(), ", ")),
                6);
    out += "\n" + wrap("Exit status: " + exit_status_text(), 0);
    return out;
}

}  // namespace

std::string exit_status_text() {
    return fmt::format(
        "{} for a usage error; {} when {} cannot be found or used; for run, {} when CMD "
        "cannot be executed, {} when it is not found, otherwise the status of CMD.",
        kExitUsage, kExitSetup, kLibraryName, kExitCannotRun, kExitNotFound);
}

const Program& pipespin_program() {
    static const Program program{"pipespin", PIPESPIN_VERSION,
                                 "spin briefly on pipes before blocking, by LD_PRELOAD", kCommands,
                                 footer};
    return program;
}

}  // namespace pipespin::cli
