// The statistics the subcommands share: a summary of samples (median,
// quartiles, range), and the A/B ratio test that `pipespin ab` and
// `pipespin stats --compare` draw their verdicts from.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pipespin::cli {

struct Summary {
    double median = 0, min = 0, max = 0;
    double q1 = 0, q3 = 0;  // first and third quartiles
};
// Median (mean of the middle two for an even count), min, max and the
// quartiles, all interpolated linearly between order statistics at
// (n - 1) x p (Hyndman and Fan's type 7, numpy's default; p = 0.5 is the
// median). Empty in, zeros out.
Summary summarize(std::span<const double> samples);

inline constexpr int kBootstrapResamples = 10000;
inline constexpr double kBootstrapConfidence = 0.95;

// The words of a verdict, as `pipespin ab` prints them.
inline constexpr const char* kFaster = "faster";
inline constexpr const char* kSlower = "slower";
inline constexpr const char* kNoDifference = "no significant difference";

struct RatioTest {
    double ratio = 0, ci_low = 0, ci_high = 0;  // control / treatment
    std::string verdict;
};

// a / b for figures that may be zero (counts): 0/0 is no difference (1),
// a/0 is +inf; never NaN, which would break a sort.
double ratio_of(double a, double b);

// The ratio of the medians (control / treatment: above 1, the treatment's
// figure is lower) and its kBootstrapConfidence percentile bootstrap
// interval: each sample resampled with replacement on its own,
// kBootstrapResamples times, from a generator seeded with `seed`. The
// verdict is "faster" when the whole interval lies above 1 + margin,
// "slower" when it lies below 1 / (1 + margin), else "no significant
// difference" (`pipespin ab`: margin 0). Both samples must be non-empty.
RatioTest bootstrap_ratio(const std::vector<double>& control, const std::vector<double>& treatment,
                          std::uint64_t seed, double margin = 0);

}  // namespace pipespin::cli
