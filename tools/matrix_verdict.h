// The arithmetic behind `bench matrix`'s acceptance lines (cli_matrix.cpp),
// kept pure and header-only so that tests/cli/test_matrix_verdict.cpp checks
// it without running a benchmark.
#pragma once

#include <cstdint>
#include <optional>

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

enum class Verdict { NotRun, Pass, Fail, Unreachable };

// value: nullopt when the case did not run; at_least: the value must be
// >= threshold, else <=; bound: the most the value can be on this host, if
// known. A value that meets its threshold passes, even above the bound (the
// bound is measured too); one that misses a threshold above the bound is not
// a failure of any spin policy but of the host: Unreachable.
constexpr Verdict verdict(std::optional<double> value, bool at_least, double threshold,
                          std::optional<double> bound) {
    if (!value) return Verdict::NotRun;
    if (at_least ? *value >= threshold : *value <= threshold) return Verdict::Pass;
    if (at_least && bound && *bound < threshold) return Verdict::Unreachable;
    return Verdict::Fail;
}

}  // namespace pipespin::cli
