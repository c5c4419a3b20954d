// `pipespin coverage`: the pieces its files share.
//
//   coverage.cpp  arguments, --help, the runs and what the shim said
//   programs.cpp  the programs, their scales and their inputs
//   report.cpp    the verdicts and the Markdown table
//
// Everything here runs in the CLI process, never inside a host program.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.h"
#include "cli/util/environment.h"
#include "cli/util/temp_dir.h"
#include "core/options.h"

namespace pipespin::bench::coverage {

inline constexpr std::string_view kCommand = "coverage";
inline constexpr std::uint64_t kDefaultRounds = 5;

enum class Role { Relay, Feed, Own };
enum class Input { None, Text, Gzip, Xz, Zstd, Tar };

struct Program {
    std::string id;
    std::vector<std::string> argv;  // argv[0] is resolved on PATH
    Role role;
    Input input = Input::None;
    std::uint64_t gap_us = 0;  // feed: the producer's pause; 0: by input
};

struct Scale {
    std::uint64_t relay_lines, text_lines, perf_loops, hackbench_loops;
};
inline constexpr Scale kFull{2000, 100'000, 20'000, 200};
inline constexpr Scale kQuick{200, 5'000, 2'000, 20};
// The paced producer: this many bytes every this many µs. The consumer
// finds the pipe empty between chunks, for less than a spin budget. A
// decompressor does more work per byte: it gets them 5 times slower, or it
// would never wait.
inline constexpr std::uint64_t kChunk = 1024, kGapUs = 20, kCompressedGapUs = 100;

std::vector<Program> all_programs(const Scale& s);
std::vector<std::string> program_ids();

struct CoverageArgs {
    bool quick = false;
    std::uint64_t rounds = kDefaultRounds;
    std::vector<std::string> programs;  // empty: all
    std::optional<std::string> markdown;
    std::optional<std::uint64_t> gap_us;  // unset: kGapUs (feed), none (relay)
    // fixed: "engaged" then says whether the hooks reach the waits, not what
    // the adaptive policy thinks of this host's load at the moment.
    Mode mode = Mode::Fixed;
};

struct ShimCounters {
    int processes = 0;  // process images that wrote a statistics line
    std::uint64_t waits = 0, spins = 0, spin_hits = 0;
    std::map<std::string, std::uint64_t> spins_by_hook;  // "stdio" -> spins
    void add(const ShimCounters& o) {
        processes += o.processes;
        waits += o.waits;
        spins += o.spins;
        spin_hits += o.spin_hits;
        for (const auto& [hook, n] : o.spins_by_hook) spins_by_hook[hook] += n;
    }
};

// The inputs of the feed programs, and each run's statistics file, in a
// directory that goes with the object.
struct Inputs {
    TempDir tmp{"pipespin-coverage"};
    std::filesystem::path dir{tmp.path()};
    std::map<Input, std::filesystem::path> files;
    std::map<Input, std::string> problems;  // why an input could not be made
};
// Writes the text every feed program reads, and its compressed forms (by
// the programs that decompress them, run in `env`).
void make_inputs(Inputs& in, const Scale& s, const Environment& env);

struct Sample {
    double wall_us = 0;
    std::string output;  // a hash of what the program wrote (digits masked for Own)
    ShimCounters shim;
};

struct Row {
    Program spec;
    std::string path;
    std::string status;  // "dynamic", or why it did not run
    bool ran = false;
    std::vector<Sample> arms[2];  // [0] no shim, [1] shim
};

// The table: one row per program, `command` being how coverage was run.
std::string markdown(const std::vector<Row>& rows, const std::string& command,
                     const CoverageArgs& a, const std::string& library);
// Whether the shim engaged and the output was the same in every run (or the
// program did not run).
bool row_ok(const Row& row);

}  // namespace pipespin::bench::coverage
