// pipespin bench: A/B measurements of the shim on this machine.
//
// Each sample is a fresh worker process (bench/worker.cpp) started with
// exactly the environment of its configuration: PIPESPIN_* variables the user
// happened to export are dropped, and the shim is removed from LD_PRELOAD
// for the "no shim" arm (other preloads are kept in every arm, so the shim is
// the only difference). Configurations run interleaved, round after round,
// so that a noisy neighbour or a frequency change hits all of them alike;
// only medians are compared. `bench matrix` (bench/matrix/matrix.cpp) does the same
// for whole command lines.
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/json_writer.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"
#include "core/options.h"
#include "platform/sys.h"

namespace pipespin::cli {
namespace {

constexpr std::uint64_t kDefaultIterations = 20000;
constexpr std::uint64_t kDefaultRounds = 7;

struct PingpongArgs {
    bool threads = false;
    bool json = false;
    std::uint64_t iterations = kDefaultIterations;
    std::uint64_t rounds = kDefaultRounds;
    std::optional<std::uint32_t> spin_us;  // unset: the shim's default
};

// One configuration: how its worker is started and what it measured.
struct Arm {
    std::string name;
    Environment env;
    std::vector<std::string> worker_args;  // after "bench-worker"
    std::vector<double> samples;
};

double run_worker(const std::string& exe, const Arm& arm) {
    std::vector<std::string> argv{"pipespin", "bench-worker"};
    argv.insert(argv.end(), arm.worker_args.begin(), arm.worker_args.end());
    Captured c = spawn_capture(exe, argv, arm.env);
    if (!exited_ok(c.wait_status))
        throw Failure(kExitFailure, fmt::format("bench: the worker for '{}' {}", arm.name,
                                                describe_wait_status(c.wait_status)));
    const std::optional<double> us = parse_decimal(c.out);
    if (!us || !(*us > 0))
        throw Failure(kExitFailure, fmt::format("bench: the worker for '{}' printed '{}', not a "
                                                "time per round trip",
                                                arm.name, printable(c.out)));
    return *us;
}

PingpongArgs parse_pingpong(ArgCursor& cur) {
    PingpongArgs a;
    while (!cur.done()) {
        if (cur.take_flag("--threads"))
            a.threads = true;
        else if (cur.take_flag("--json"))
            a.json = true;
        else if (auto v = cur.take_value("--iterations"))
            a.iterations = parse_count("bench pingpong", "--iterations", *v, 1, 1'000'000'000);
        else if (auto v = cur.take_value("--rounds"))
            a.rounds = parse_count("bench pingpong", "--rounds", *v, 1, 10'000);
        else if (auto v = cur.take_value("--spin-us"))
            a.spin_us = parse_flag_value("bench pingpong", option_spec(OptionId::SpinUs), *v);
        else
            cur.fail_unknown();
    }
    return a;
}

void print_table(const PingpongArgs& a, const std::vector<Arm>& arms, const Arm& floor,
                 std::uint32_t spin_us, const std::string& library) {
    fmt::print("pingpong between two {}: {} round trips x {} rounds, interleaved\n",
               a.threads ? "threads" : "processes", a.iterations, a.rounds);
    fmt::print("library {}; spin_us={} (fixed, and the ceiling of adaptive); {} usable CPUs\n\n",
               library, spin_us, sys::usable_cpus());
    fmt::print("{:<18}{:>12}{:>10}{:>10}{:>9}\n", "configuration", "median µs", "min µs", "max µs",
               "ratio");
    const double base = summarize(arms.front().samples).median;
    auto row = [&](const Arm& arm) {
        Summary s = summarize(arm.samples);
        fmt::print("{:<18}{:>12.3f}{:>10.3f}{:>10.3f}{:>8.2f}x\n", arm.name, s.median, s.min, s.max,
                   base / s.median);
    };
    for (const Arm& arm : arms) row(arm);
    row(floor);
    fmt::print(
        "\nratio = no-shim median / this median. The floor is the same pipe traffic in one\n"
        "thread (no shim): its ratio bounds the speedup any spinning could reach here.\n");
}

void print_json(const PingpongArgs& a, const std::vector<Arm>& arms, const Arm& floor,
                std::uint32_t spin_us, const std::string& library) {
    const double base = summarize(arms.front().samples).median;
    auto object = [&](const Arm& arm) {
        Summary s = summarize(arm.samples);
        return JsonObject()
            .str("name", arm.name)
            .fixed("median_us", s.median, 4)
            .fixed("min_us", s.min, 4)
            .fixed("max_us", s.max, 4)
            .fixed("ratio", base / s.median, 4)
            .raw("samples_us", json_fixed_array(arm.samples, 4))
            .text();
    };
    std::vector<std::string> configurations;
    for (const Arm& arm : arms) configurations.push_back(object(arm));
    fmt::print("{}\n", JsonObject()
                           .str("benchmark", "pingpong")
                           .str("peers", a.threads ? "threads" : "processes")
                           .num("iterations", a.iterations)
                           .num("rounds", a.rounds)
                           .num("spin_us", spin_us)
                           .num("usable_cpus", sys::usable_cpus())
                           .str("library", library)
                           .raw("configurations", json_array(configurations))
                           .raw("floor", object(floor))
                           .text());
}

int bench_pingpong(ArgCursor& cur) {
    const PingpongArgs a = parse_pingpong(cur);
    const std::string exe = self_exe();
    const std::string library = find_library();

    const ArmEnvironments envs(library, a.spin_us);

    const std::string n = std::to_string(a.iterations);
    std::vector<std::string> pingpong{"pingpong"};
    if (a.threads) pingpong.push_back("--threads");
    auto args = [&](std::vector<std::string> head, bool shim) {
        head.emplace_back(expect_shim_flag(shim));
        head.push_back(n);
        return head;
    };
    std::vector<Arm> arms;
    for (const ArmKind& kind : kArmKinds)
        arms.push_back(
            {std::string(kind.name), envs.of(kind), args(pingpong, kind.mode.has_value()), {}});
    Arm floor{"floor (1 thread)", envs.of(kArmKinds[0]), args({"floor"}, false), {}};

    // Progress only for a person watching; scripts and --json get clean output.
    const bool progress = !a.json && ::isatty(STDERR_FILENO);
    for (std::uint64_t r = 0; r < a.rounds; ++r) {
        if (progress) fmt::print(stderr, "\rround {}/{} ", r + 1, a.rounds);
        for (Arm& arm : arms) arm.samples.push_back(run_worker(exe, arm));
        floor.samples.push_back(run_worker(exe, floor));
    }
    if (progress) fmt::print(stderr, "\r{:20}\r", "");

    const std::uint32_t spin_us = a.spin_us.value_or(Options{}.spin_us);
    if (a.json)
        print_json(a, arms, floor, spin_us, library);
    else
        print_table(a, arms, floor, spin_us, library);
    return kExitOk;
}

struct Benchmark {
    std::string_view name;
    int (*main)(ArgCursor&);
};
// More benchmarks are one line here.
constexpr Benchmark kBenchmarks[] = {
    {"pingpong", bench_pingpong},
    {"matrix", bench_matrix},
};

}  // namespace

std::string bench_usage() {
    return usage_entry(
               "  pipespin bench pingpong [--threads] [--iterations N] [--rounds R] [--spin-us N]\n"
               "                          [--json]\n",
               fmt::format(
                   "Time a 1-byte ping-pong over two pipes between two processes (or two "
                   "threads with --threads) in four configurations, run interleaved: no "
                   "shim, the shim with mode=off, mode=fixed and mode=adaptive (spin_us "
                   "from --spin-us, else the default). Prints median, min and max µs per round "
                   "trip and the ratio no-shim median / median, plus the floor: the same "
                   "pipe traffic within one thread, which bounds any speedup. Defaults: {} "
                   "round trips, {} rounds. --json prints one JSON object instead.",
                   kDefaultIterations, kDefaultRounds)) +
           bench_matrix_usage();
}

int bench_main(Args args) {
    ArgCursor cur("bench", args);
    cur.check_help();
    std::vector<std::string_view> known;
    for (const Benchmark& b : kBenchmarks) known.push_back(b.name);
    if (cur.done())
        throw UsageError(fmt::format("bench: missing benchmark name ({})", fmt::join(known, ", ")));
    const std::string_view name = cur.take_word();
    for (const Benchmark& b : kBenchmarks)
        if (b.name == name) return b.main(cur);
    throw UsageError(fmt::format("bench: unknown benchmark '{}' (known: {})", printable(name),
                                 fmt::join(known, ", ")));
}

}  // namespace pipespin::cli
