// `pipespin-bench matrix`: the pieces its files share.
//
//   matrix.cpp    arguments, --help text, and the rounds (what runs when)
//   cases.cpp     the case catalogue: command lines, scales, set-up
//   run.cpp       running one sample and measuring it; summaries
//   checks.cpp    the acceptance checks
//   report.cpp    Markdown and JSON
//   plot.cpp      the chart
//
// Everything here runs in the CLI process, never inside a host program.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/matrix/verdict.h"
#include "cli/util/environment.h"
#include "cli/util/plot.h"
#include "cli/util/statistics.h"

namespace pipespin::bench::matrix {

inline constexpr std::string_view kCommand = "matrix";
inline constexpr std::uint64_t kDefaultRounds = 5;

// The arms, in the order they run in each round: beside pipespin pingpong's
// four, an empty preload (a library with one symbol), so that the share of a
// loss that any preload would cause, the loader's, is visible.
inline constexpr ArmKind kArms[] = {kArmKinds[0], kEmptyPreloadArm, kArmKinds[1], kArmKinds[2],
                                    kArmKinds[3]};
inline constexpr std::size_t kArmCount = std::size(kArms);
enum ArmIndex : std::size_t { kNoShim, kEmpty, kOff, kFixed, kAdaptive };

// What a case's output says that is worth a figure.
enum class Figure {
    None,              // wall and CPU only
    PerfUsecsPerOp,    // perf bench's "35.9 usecs/op"
    HackbenchSeconds,  // hackbench's "Time: 1.02", kept in µs
    ConsumerCpu,       // the sparse worker's consumer CPU µs, which replaces the measured CPU
    AddedUsPerOp,      // a worker's µs per operation over the same one without any preload,
                       // which it interleaves with its own (spawn, fork); may be <= 0
    PlacedUsPerOp,     // "µs same total": µs per round trip, and CPU samples that found
                       // both ends on one CPU (same) of all taken (total)
    RssKib,            // the footprint: VmRSS of `sleep 1` once it sleeps, in KiB
};

// The case's pipe traffic within one thread, one operation per `ops`: a
// worker loop that prints the mean µs per operation.
enum class Floor { None, RoundTrips, Blocks };

// A file a case needs, written before its first run into a directory of
// its own, which the argument kCaseDir of its argv then names.
struct CaseFile {
    std::string path;  // relative to that directory
    std::string text;
};
inline constexpr std::string_view kCaseDir = "DIR";

struct Case {
    std::string id;
    std::vector<std::string> argv;  // argv[0] is a tool name, resolved before the runs
    std::string about;              // what the command line alone does not say
    std::uint64_t ops = 0;          // for per-operation figures
    std::string_view op;            // what one operation is
    std::vector<std::string_view> tools{};
    Figure figure = Figure::None;
    Floor floor = Floor::None;
    std::vector<CaseFile> files{};
    // argv is `pipespin-bench worker LOOP N`: this executable runs it, told
    // to fail unless the shim is there exactly when the arm has it.
    bool worker = false;
    std::string shown{};  // the command as the Markdown shows it, when argv is unreadable
    // Set: each run is placed by its voluntary or involuntary context
    // switches per operation (placement_by_switches), and the report and
    // the checks also compare each placement's runs on their own.
    SwitchMarks switch_marks{};
    int cpus = 1;  // the usable CPUs it needs: else skipped, with a note
};

// The full parameters, and a scaled-down set for smoke tests.
struct Scale {
    std::uint64_t perf_loops, hackbench_loops, stream_loops, dd_blocks, seq_lines, sparse_bytes;
    std::uint64_t shell_loops;              // cmdsubst's substitutions, xargs' processes
    std::uint64_t make_dirs, make_recipes;  // sub-makes, and recipes in each
    std::uint64_t spawns, forks, py_round_trips;
    std::uint64_t wakeup_reads;  // the wakeup cases' reads, 2 ms apart
};
extern const Scale kFull, kQuick;

std::vector<Case> all_cases(const Scale& s);
std::vector<std::string> case_ids();
std::string_view floor_about(Floor f);
std::vector<std::string> floor_argv(const Case& c);
// Writes the case's files into a directory under `workdir` (which outlives
// the runs) and names it in argv; `tool` is argv[0] resolved. A make gets
// the pipe jobserver where it would use another.
void prepare_case(Case& c, const std::string& workdir, const std::string& tool,
                  const Environment& env);
// Whether the case's figure is a time per operation (its own column).
bool times_runs(const Case& c);

struct MatrixArgs {
    bool quick = false;
    std::uint64_t rounds = kDefaultRounds;
    std::vector<std::string> cases;  // empty: all
    std::optional<std::string> markdown, json, plot;
    std::optional<std::uint32_t> spin_us;  // unset: the shim's default
};

struct Sample {
    double wall_us = 0;
    double cpu_us = 0;
    double vol_cs = 0, invol_cs = 0;  // context switches of the process tree (wait4)
    std::optional<double> figure{};
    int same_cpu = 0, cpu_samples = 0;  // PlacedUsPerOp only
};

struct ArmResult {
    std::vector<Sample> samples;  // one per round
    Summary wall, cpu, vol_cs, invol_cs;
    std::optional<Summary> figure;
    double wall_ratio = 0;  // no shim / this arm
    double cpu_ratio = 0;   // this arm / no shim
};

// Rounds grouped by what their no-shim run saw (py-pingpong), and each
// arm's median figure over those rounds.
struct RoundGroup {
    std::string name;  // "co-located", "spread", "mixed", "no shim ≥ 15 µs"
    std::vector<std::size_t> rounds;
    std::array<double, kArmCount> median{};
};

struct CaseRun {
    Case spec;
    std::string path;  // argv[0] resolved
    std::array<ArmResult, kArmCount> arms;
    std::vector<double> floor_samples;  // µs per operation, when the case has a floor
    std::optional<Summary> floor;
    std::optional<double> bound;  // speedup_bound() of the medians
    std::vector<RoundGroup> groups;
};

struct Host {
    std::string date, system, cpu_model, load_before, load_after;
    long online_cpus = 0;
    int usable_cpus = 0;
};

struct Report {
    std::string command;
    Host host;
    std::string library;
    std::optional<std::string> empty_library;
    std::vector<std::size_t> arms;  // indexes into kArms of the arms that run
    std::uint32_t spin_us = 0;
    bool spin_us_default = true;
    const MatrixArgs* args = nullptr;
    std::vector<CaseRun> runs;
    std::vector<std::string> notes;          // skipped cases and arms, substituted tools
    std::optional<std::uint64_t> bss_bytes;  // the library's, when the footprint case ran
    double elapsed_s = 0;
    std::size_t run_count = 0;

    bool runs_arm(std::size_t arm) const;
};

// ---- run.cpp ---------------------------------------------------------------

Sample run_once(const CaseRun& run, const ArmKind& arm, const Environment& env);
// One floor sample, in µs per operation, run in the no-shim environment.
double run_floor(const std::string& exe, const CaseRun& run, const Environment& env);
// Throws unless each arm's programs map exactly the libraries it should.
void check_preload(const std::string& cat, const Report& rep, const ArmEnvironments& envs);
void summarize_case(CaseRun& run, const std::vector<std::size_t>& arms);
// One figure of an arm, round by round.
std::vector<double> column(const ArmResult& a, double Sample::*field);
std::vector<double> figures(const ArmResult& a);  // the case's figure; 0 where none
// Where a run of the case ran, by its context switches (Case::switch_marks).
Placement placement_of(const CaseRun& run, const Sample& s);
// The context switches per run of an arm that place it (voluntary or
// involuntary: Case::switch_marks).
std::vector<double> switches(const CaseRun& run, std::size_t arm);
// The wall times, and the figures, of an arm's runs that took placement p.
std::vector<double> walls_placed(const CaseRun& run, std::size_t arm, Placement p);
std::vector<double> figures_placed(const CaseRun& run, std::size_t arm, Placement p);
// The run's rounds, 0..n-1.
std::vector<std::size_t> rounds_of(const CaseRun& run);
// An arm's wall ratio (no shim / arm) and CPU ratio (arm / no shim) over the
// rounds picked: every round gives ArmResult's, a resample an interval's.
double wall_ratio_at(const CaseRun& run, std::size_t arm, Picks picks);
double cpu_ratio_at(const CaseRun& run, std::size_t arm, Picks picks);
Host host_facts();
std::string load_average();

// ---- checks.cpp ------------------------------------------------------------

// One acceptance line.
struct Check {
    std::string what{};
    std::string value = "not run";
    std::string threshold{};
    std::optional<double> bound{};  // for a wall speed-up of a case with a floor
    Verdict verdict = Verdict::NotRun;
    // The value's kBootstrapConfidence interval over resampled rounds
    // (rounds_interval), for a check whose value is a statistic of rounds
    // against a fixed threshold; and whether it leaves the threshold out.
    std::optional<Interval> interval{};
    std::optional<bool> resolved{};
};

std::vector<Check> acceptance(const Report& rep);
std::string_view verdict_name(Verdict v);
// The result cell: the verdict, and where the interval holds the threshold,
// that this run cannot tell a pass from a fail.
std::string verdict_text(const Check& c);
inline constexpr std::string_view kUnresolved = "interval includes the threshold";
const CaseRun* find_run(const Report& rep, std::string_view id);
// The median figure an arm added over no shim (µs per process, KiB), if
// both ran.
std::optional<double> added(const Report& rep, const CaseRun& r, std::size_t arm);

// ---- report.cpp ------------------------------------------------------------

std::string markdown(const Report& rep);
std::string json(const Report& rep);
std::string seconds_text(double us);
std::string per_op_text(double us);

// ---- plot.cpp --------------------------------------------------------------

// Grouped bars of the wall ratio per case and arm.
Chart matrix_chart(const Report& rep);

}  // namespace pipespin::bench::matrix
