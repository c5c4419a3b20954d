// The arithmetic behind `bench matrix`'s acceptance lines (cli_matrix.cpp),
// kept pure and header-only so that tests/cli/test_matrix_verdict.cpp checks
// it without running a benchmark.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipespin::cli {

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

// The place, within round `round` (from 0), of the arm listed at `index`
// of `count`: each round starts one arm further on, so that no arm always
// runs first (after the previous case's last arm) or last; over `count`
// rounds each arm has each place once.
constexpr std::size_t rotated_index(std::size_t round, std::size_t index, std::size_t count) {
    return count == 0 ? 0 : (index + round) % count;
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

// A plain round trip this slow has its ends on two CPUs and a sleeping
// wake-up between them, which is what a spin saves (there a spin must win
// at least 3x).
inline constexpr double kSlowRoundTripUs = 15;

constexpr std::string_view placement_name(Placement p) {
    return p == Placement::CoLocated ? "co-located" : p == Placement::Spread ? "spread" : "mixed";
}

}  // namespace pipespin::cli
