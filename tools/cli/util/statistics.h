// The statistics the subcommands share: a summary of samples (median,
// quartiles, range), and the A/B ratio test that `pipespin ab` and
// `pipespin stats --compare` draw their verdicts from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
// `confidence`: the interval's level, kBootstrapConfidence unless a family
// of tests widens it (stats --compare: 1 - 0.05/m for each of m lines).
RatioTest bootstrap_ratio(const std::vector<double>& control, const std::vector<double>& treatment,
                          std::uint64_t seed, double margin = 0,
                          double confidence = kBootstrapConfidence);

struct Interval {
    double low = 0, high = 0;
};

// The percentile interval (kBootstrapConfidence unless given) of a set of
// bootstrap replicates (sorted here): what bootstrap_ratio and
// bootstrap_rounds take from their resamples. Not empty, no NaN.
Interval percentile_interval(std::vector<double> replicates,
                             double confidence = kBootstrapConfidence);

// Rounds picked from 0..n-1 (repeats allowed): all of them in order for a
// figure itself, a resample for its interval.
using Picks = std::span<const std::size_t>;

// The median (as summarize's) of samples[p] for each p in picks. Not empty.
double median_at(std::span<const double> samples, Picks picks);

// For figures measured together, round by round (bench matrix's arms run
// interleaved within each round): the kBootstrapConfidence percentile
// bootstrap interval of statistic(picks), with the `rounds` rounds resampled
// as wholes, with replacement, kBootstrapResamples times, from a generator
// seeded with `seed`. Unlike bootstrap_ratio's independent resampling, a
// round's noise that hit every arm moves both sides of a ratio together;
// and a statistic of several arms (a ratio of ratios) is recomputed whole
// from each resample. rounds > 0; the statistic must not return NaN.
Interval bootstrap_rounds(std::size_t rounds, std::uint64_t seed,
                          const std::function<double(Picks)>& statistic);

}  // namespace pipespin::cli
