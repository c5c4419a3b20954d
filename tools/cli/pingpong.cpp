// pipespin pingpong: what the shim buys on this machine, on a 1-byte
// ping-pong over pipes.
//
// Each sample is a fresh worker process (worker.h) started with
// exactly the environment of its configuration: PIPESPIN_* variables the user
// happened to export are dropped, and the shim is removed from LD_PRELOAD
// for the "no shim" arm (other preloads are kept in every arm, so the shim is
// the only difference). Configurations run interleaved, round after round,
// so that a noisy neighbour or a frequency change hits all of them alike;
// only medians are compared. The lab's `pipespin-bench matrix` does the same
// for whole command lines.
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/json.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"
#include "cli/worker.h"
#include "core/options.h"
#include "platform/sys.h"

namespace pipespin::cli {
namespace {

constexpr std::uint64_t kDefaultIterations = 20000;
constexpr std::uint64_t kDefaultRounds = 7;

struct PingpongArgs {
    bool threads = false;
    JsonOutput json;
    std::uint64_t iterations = kDefaultIterations;
    std::uint64_t rounds = kDefaultRounds;
    std::optional<std::uint32_t> spin_us;  // unset: the shim's default
};

// One configuration: how its worker is started and what it measured.
struct Arm {
    std::string name;
    Environment env;
    std::vector<std::string> worker_args;  // after "pingpong-worker"
    std::vector<double> samples;
};

double run_worker(const std::string& exe, const Arm& arm) {
    std::vector<std::string> argv{"pipespin", "pingpong-worker"};
    argv.insert(argv.end(), arm.worker_args.begin(), arm.worker_args.end());
    Captured c = spawn_capture(exe, argv, arm.env);
    if (!exited_ok(c.wait_status))
        throw Failure(kExitFailure, fmt::format("pingpong: the worker for '{}' {}", arm.name,
                                                describe_wait_status(c.wait_status)));
    const std::optional<double> us = parse_decimal(c.out);
    if (!us || !(*us > 0))
        throw Failure(kExitFailure, fmt::format("pingpong: the worker for '{}' printed '{}', not a "
                                                "time per round trip",
                                                arm.name, printable(c.out)));
    return *us;
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

Json pingpong_json(const PingpongArgs& a, const std::vector<Arm>& arms, const Arm& floor,
                   std::uint32_t spin_us, const std::string& library) {
    const double base = summarize(arms.front().samples).median;
    auto object = [&](const Arm& arm) {
        Summary s = summarize(arm.samples);
        return Json{{"name", arm.name},
                    {"median_us", json_number(s.median, 4)},
                    {"min_us", json_number(s.min, 4)},
                    {"max_us", json_number(s.max, 4)},
                    {"ratio", json_number(base / s.median, 4)},
                    {"samples_us", json_numbers(arm.samples, 4)}};
    };
    Json configurations = Json::array();
    for (const Arm& arm : arms) configurations.push_back(object(arm));
    return {{"benchmark", "pingpong"},    {"peers", a.threads ? "threads" : "processes"},
            {"iterations", a.iterations}, {"rounds", a.rounds},
            {"spin_us", spin_us},         {"usable_cpus", sys::usable_cpus()},
            {"library", library},         {"configurations", std::move(configurations)},
            {"floor", object(floor)}};
}

int pingpong(const PingpongArgs& a) {
    const std::string exe = self_exe();
    const std::string library = find_library();

    const ArmEnvironments envs(library, a.spin_us);

    const std::string n = std::to_string(a.iterations);
    std::vector<std::string> pingpong{"pingpong"};
    if (a.threads) pingpong.push_back("--threads");
    auto args = [&](std::vector<std::string> head, bool shim) {
        head.emplace_back(worker::expect_shim_flag(shim));
        head.push_back(n);
        return head;
    };
    std::vector<Arm> arms;
    for (const ArmKind& kind : kArmKinds)
        arms.push_back(
            {std::string(kind.name), envs.of(kind), args(pingpong, kind.mode.has_value()), {}});
    Arm floor{"floor (1 thread)", envs.of(kArmKinds[0]), args({"floor"}, false), {}};

    // Progress only for a person watching; scripts and --json get clean output.
    const bool progress = !a.json.print && ::isatty(STDERR_FILENO);
    for (std::uint64_t r = 0; r < a.rounds; ++r) {
        if (progress) fmt::print(stderr, "\rround {}/{} ", r + 1, a.rounds);
        for (Arm& arm : arms) arm.samples.push_back(run_worker(exe, arm));
        floor.samples.push_back(run_worker(exe, floor));
    }
    if (progress) fmt::print(stderr, "\r{:20}\r", "");

    const std::uint32_t spin_us = a.spin_us.value_or(Options{}.spin_us);
    if (emit_json("pingpong", a.json, pingpong_json(a, arms, floor, spin_us, library)))
        print_table(a, arms, floor, spin_us, library);
    return kExitOk;
}

}  // namespace

Action define_pingpong(CLI::App& app) {
    auto a = std::make_shared<PingpongArgs>();
    app.description(
        "Time a 1-byte ping-pong over two pipes between two processes (or two threads) in "
        "four configurations, run interleaved: no shim, the shim with mode=off, mode=fixed "
        "and mode=adaptive. Prints median, min and max µs per round trip and the ratio "
        "no-shim median / median, plus the floor: the same pipe traffic within one thread, "
        "which bounds any speedup. A minute's answer to \"does spinning pay on this "
        "machine?\"");
    app.add_flag("--threads", a->threads, "two threads of one process, not two processes");
    add_count(app, "--iterations", a->iterations, 1, 1'000'000'000, "round trips per sample");
    add_count(app, "--rounds", a->rounds, 1, 10'000, "samples per configuration", "R");
    add_setting(app, option_spec(OptionId::SpinUs), a->spin_us,
                "the shim's spin_us in every shim configuration");
    add_json_options(app, a->json, "the samples and medians of every configuration");
    return [a](Args) { return pingpong(*a); };
}

}  // namespace pipespin::cli
