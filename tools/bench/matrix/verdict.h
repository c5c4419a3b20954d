// The arithmetic behind `pipespin-bench matrix`'s acceptance lines (matrix.cpp),
// kept pure (header-only, but for cli/util/statistics.cpp's bootstrap) so that
// tests/cli/test_matrix_verdict.cpp checks it without running a benchmark.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "cli/util/statistics.h"

namespace pipespin::bench {

// The lab is built on the command line's utilities (tools/cli/util).
using namespace pipespin::cli;

// The largest wall speed-up (no-shim wall / arm wall) any spin policy could
// reach: an arm's run cannot cost less per operation than the floor, the
// same pipe traffic done within one thread. The no-shim wall also holds its
// start-up, which the floor does not, so the bound errs high. nullopt when
// there is nothing to divide.
constexpr std::optional<double> speedup_bound(double no_shim_wall_us, std::uint64_t ops,
                                              double floor_us_per_op) {
    if (!(no_shim_wall_us > 0) || ops == 0 || !(floor_us_per_op > 0)) return std::nullopt;
    return no_shim_wall_us / static_cast<double>(ops) / floor_us_per_op;
}

// The rounds after which the arms' order (arm_order()) repeats: `count`
// for an even count, twice it for an odd one.
constexpr std::size_t order_period(std::size_t count) {
    return count % 2 == 0 ? count : 2 * count;
}

// The arm (its index in the list of `count`) that runs at place `place` in
// round `round` (from 0). A balanced order (a Williams design): over
// order_period(count) rounds each arm runs at each place equally often,
// and after each other arm equally often. A run can leave the host in a
// state that the next run meets: after a run that spun on both CPUs, a
// shell loop's forks were spread over the two CPUs in 16 of 16 runs, 0.78
// s against 0.68 when they stayed on one (bash's $(...) x 2000, fixed then
// adaptive then off and fixed then off then adaptive, 8 times each). An
// order that only rotates keeps each arm's predecessor: in the matrix,
// adaptive always ran after fixed. Row 0 is 0, 1, n-1, 2, n-2, ...; row r
// adds r (mod n); for an odd count, rows n to 2n-1 are rows 0 to n-1
// backwards.
constexpr std::size_t arm_order(std::size_t round, std::size_t place, std::size_t count) {
    if (count == 0) return 0;
    const std::size_t row = round % order_period(count);
    const std::size_t j = row < count ? place : count - 1 - place;
    const std::size_t first = j % 2 == 1 ? (j + 1) / 2 : (count - j / 2) % count;
    return (first + row % count) % count;
}

enum class Verdict { NotRun, Pass, Fail, Unreachable };

// value: nullopt when the case did not run; at_least: the value must be
// >= threshold, else <=; bound: if known, the most the value can be on this
// host (>= checks: a speed-up), or the least (<= checks: what an empty
// preload already adds). A value that meets its threshold passes, even
// beyond the bound (the bound is measured too); one that misses a threshold
// the bound already misses is not a failure of any spin policy but of the
// host: Unreachable.
constexpr Verdict verdict(std::optional<double> value, bool at_least, double threshold,
                          std::optional<double> bound) {
    if (!value) return Verdict::NotRun;
    if (at_least ? *value >= threshold : *value <= threshold) return Verdict::Pass;
    if (bound && (at_least ? *bound < threshold : *bound > threshold)) return Verdict::Unreachable;
    return Verdict::Fail;
}

// A check's interval: its value recomputed from resamples of the rounds
// (bootstrap_rounds), from this seed so that a report is reproducible. One
// round has nothing to resample.
inline constexpr std::uint64_t kIntervalSeed = 1;
inline constexpr std::size_t kIntervalMinRounds = 2;

// The interval of statistic(picks) over `rounds` rounds, whose picks are
// positions in `rounds`; statistic returns nullopt where it has no value
// (nothing to divide), and a resample without one leaves no interval.
template <typename Statistic>
std::optional<Interval> rounds_interval(std::span<const std::size_t> rounds, Statistic statistic) {
    if (rounds.size() < kIntervalMinRounds) return std::nullopt;
    bool undefined = false;
    std::vector<std::size_t> picked(rounds.size());
    const Interval ci = bootstrap_rounds(rounds.size(), kIntervalSeed, [&](Picks p) {
        for (std::size_t i = 0; i < p.size(); ++i) picked[i] = rounds[p[i]];
        const std::optional<double> v = statistic(Picks(picked));
        undefined = undefined || !v;
        return v.value_or(0);
    });
    if (undefined) return std::nullopt;
    return ci;
}

// Rounds 0..n-1.
inline std::vector<std::size_t> all_rounds(std::size_t n) {
    std::vector<std::size_t> v(n);
    std::iota(v.begin(), v.end(), std::size_t{0});
    return v;
}

// The ratio of two arms' medians over the rounds picked, num / den, as the
// matrix's wall ratio is (no shim / arm): 0 when den's median is not
// positive.
inline double median_ratio(std::span<const double> num, std::span<const double> den, Picks p) {
    const double d = median_at(den, p);
    return d > 0 ? median_at(num, p) / d : 0;
}

// Whether a check's interval leaves its threshold out, so that this run's
// rounds tell a pass from a fail. An interval that holds the threshold
// (ends included) does not: the verdict of the medians could go either way
// on another run of the same code.
constexpr bool resolves(const Interval& ci, double threshold) {
    return threshold < ci.low || threshold > ci.high;
}

// What a process start or a fork may add over no shim (the `spawn` check):
// 1.5x what an empty preload adds, or kSpawnSlackUs, whichever is larger, so
// that a host where any preload is nearly free does not ask the impossible.
inline constexpr double kSpawnSlackUs = 10;
constexpr double spawn_allowance_us(double empty_added_us) {
    return std::max(1.5 * empty_added_us, kSpawnSlackUs);
}

// Where the two ends of a ping-pong ran, from CPU samples taken on both
// sides at the same round trips: `same` of `total` found them on one CPU.
// A run that kept to one placement for most of its samples is that
// placement; one the scheduler moved about is Mixed.
enum class Placement { CoLocated, Spread, Mixed };
inline constexpr int kPlacementPercent = 80;  // of the samples, for one placement
constexpr std::optional<Placement> classify_placement(int same, int total) {
    if (total <= 0 || same < 0 || same > total) return std::nullopt;
    // In integers: 20 of 100 is exactly the 20% it is.
    const long long pct_same = 100LL * same, pct_other = 100LL * (total - same);
    if (pct_same >= kPlacementPercent * static_cast<long long>(total)) return Placement::CoLocated;
    if (pct_other >= kPlacementPercent * static_cast<long long>(total)) return Placement::Spread;
    return Placement::Mixed;
}

// A run without CPU samples of its own shows where its processes ran in
// its context switches per operation, voluntary or involuntary
// (SwitchMarks::involuntary), whichever separates the placements of the
// case in every arm. A run at or above colocated_at per operation was
// co-located, one at or below spread_at spread, one between moved during
// the run (mixed).
//
// A shell's $(...) whose forked child runs on its parent's CPU switches
// voluntarily about once more per iteration (the parent gives way to the
// child, then waits for its exit) than one whose child starts on the other
// CPU. A ping-pong whose ends share a CPU is preempted: the woken peer
// takes the CPU from the writer before it blocks in its read, almost once
// per round trip, where ends on two CPUs are all but never preempted; its
// voluntary switches cannot tell, as a spin that hits removes them only
// where the ends are apart (cases.cpp).
struct SwitchMarks {
    double colocated_at = 0, spread_at = 0;  // colocated_at 0: not placed this way
    bool involuntary = false;                // else the voluntary switches
    constexpr bool on() const { return colocated_at > 0; }
    constexpr std::string_view counter() const { return involuntary ? "involuntary" : "voluntary"; }
};
constexpr Placement placement_by_switches(double cs, std::uint64_t ops, SwitchMarks m) {
    if (ops == 0) return Placement::Mixed;
    const double per_op = cs / static_cast<double>(ops);
    return per_op >= m.colocated_at ? Placement::CoLocated
           : per_op <= m.spread_at  ? Placement::Spread
                                    : Placement::Mixed;
}

// The values of the runs (values, cs: one per run; cs the switches the
// marks count) that took placement p.
inline std::vector<double> placed_values(std::span<const double> values, std::span<const double> cs,
                                         std::uint64_t ops, SwitchMarks marks, Placement p) {
    std::vector<double> out;
    for (std::size_t i = 0; i < values.size() && i < cs.size(); ++i)
        if (placement_by_switches(cs[i], ops, marks) == p) out.push_back(values[i]);
    return out;
}

// A placement's median needs this many runs of each arm compared.
inline constexpr std::size_t kMinPlacedRuns = 3;

// base / arm over the runs each took in one placement (no shim / arm, or
// arm / arm, or an arm's µs per operation / its floor's), which need not
// be the same rounds: the ratio of their medians, and its interval with
// each side's runs resampled on their own (bootstrap_ratio). Nothing
// without kMinPlacedRuns runs on each side.
struct PlacedRatio {
    std::optional<double> value;
    std::optional<Interval> interval;
};
inline PlacedRatio placed_ratio(const std::vector<double>& base, const std::vector<double>& arm) {
    if (base.size() < kMinPlacedRuns || arm.size() < kMinPlacedRuns) return {};
    const RatioTest t = bootstrap_ratio(base, arm, kIntervalSeed);
    return {t.ratio, Interval{t.ci_low, t.ci_high}};
}

// A plain round trip this slow has its ends on two CPUs and a sleeping
// wake-up between them, which is what a spin saves (there a spin must win
// at least 3x).
inline constexpr double kSlowRoundTripUs = 15;

constexpr std::string_view placement_name(Placement p) {
    return p == Placement::CoLocated ? "co-located" : p == Placement::Spread ? "spread" : "mixed";
}

}  // namespace pipespin::bench
