#include "cli/util/statistics.h"

#include <algorithm>
#include <limits>
#include <random>
#include <stdexcept>

namespace pipespin::cli {

Summary summarize(std::span<const double> samples) {
    if (samples.empty()) return {};
    std::vector<double> v(samples.begin(), samples.end());
    std::sort(v.begin(), v.end());
    auto quantile = [&](double p) {
        const double h = static_cast<double>(v.size() - 1) * p;
        const auto lo = static_cast<std::size_t>(h);
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
    };
    return {quantile(0.5), v.front(), v.back(), quantile(0.25), quantile(0.75)};
}

double ratio_of(double a, double b) {
    if (b != 0) return a / b;
    return a == 0 ? 1 : std::numeric_limits<double>::infinity();
}

RatioTest bootstrap_ratio(const std::vector<double>& control, const std::vector<double>& treatment,
                          std::uint64_t seed, double margin, double confidence) {
    if (control.empty() || treatment.empty())
        throw std::logic_error("bootstrap_ratio: an empty sample");
    auto median = [](std::span<const double> v) { return summarize(v).median; };
    RatioTest t;
    t.ratio = ratio_of(median(control), median(treatment));
    std::mt19937_64 rng(seed);
    std::vector<double> ratios;
    ratios.reserve(kBootstrapResamples);
    std::vector<double> a(control.size()), b(treatment.size());
    std::uniform_int_distribution<std::size_t> pick_a(0, control.size() - 1);
    std::uniform_int_distribution<std::size_t> pick_b(0, treatment.size() - 1);
    for (int r = 0; r < kBootstrapResamples; ++r) {
        for (double& x : a) x = control[pick_a(rng)];
        for (double& x : b) x = treatment[pick_b(rng)];
        ratios.push_back(ratio_of(median(a), median(b)));
    }
    const Interval ci = percentile_interval(std::move(ratios), confidence);
    t.ci_low = ci.low;
    t.ci_high = ci.high;
    t.verdict = t.ci_low > 1 + margin          ? kFaster
                : t.ci_high < 1 / (1 + margin) ? kSlower
                                               : kNoDifference;
    return t;
}

Interval percentile_interval(std::vector<double> replicates, double confidence) {
    if (replicates.empty()) throw std::logic_error("percentile_interval: no replicates");
    std::sort(replicates.begin(), replicates.end());
    const double tail = (1 - confidence) / 2;
    auto at = [&](double q) {
        const std::size_t i =
            static_cast<std::size_t>(q * static_cast<double>(replicates.size() - 1) + 0.5);
        return replicates[std::min(i, replicates.size() - 1)];
    };
    return {at(tail), at(1 - tail)};
}

double median_at(std::span<const double> samples, Picks picks) {
    std::vector<double> v;
    v.reserve(picks.size());
    for (std::size_t p : picks) v.push_back(samples[p]);
    return summarize(v).median;
}

Interval bootstrap_rounds(std::size_t rounds, std::uint64_t seed,
                          const std::function<double(Picks)>& statistic) {
    if (rounds == 0) throw std::logic_error("bootstrap_rounds: no rounds");
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> pick(0, rounds - 1);
    std::vector<std::size_t> picks(rounds);
    std::vector<double> replicates;
    replicates.reserve(kBootstrapResamples);
    for (int r = 0; r < kBootstrapResamples; ++r) {
        for (std::size_t& p : picks) p = pick(rng);
        replicates.push_back(statistic(picks));
    }
    return percentile_interval(std::move(replicates));
}

}  // namespace pipespin::cli
