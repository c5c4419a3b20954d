// pipespin-bench matrix's acceptance arithmetic (tools/bench/matrix/verdict.h): the bound a
// floor puts on a wall speed-up, and which verdict a check gets with it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <vector>

#include "bench/matrix/verdict.h"

using namespace pipespin::bench;

TEST_CASE("the bound is the no-shim wall per operation over the floor per operation") {
    // 20000 round trips in 400 ms without the shim, 5 µs each in one thread.
    REQUIRE(speedup_bound(400'000, 20'000, 5.0) == Approx(4.0));
    // 40000 blocks in 530 ms, 9 µs each written and read back in one thread.
    REQUIRE(speedup_bound(530'000, 40'000, 9.0) == Approx(530'000.0 / 40'000 / 9.0));
    // A slower floor is a lower bound, a slower no-shim run a higher one.
    REQUIRE(*speedup_bound(400'000, 20'000, 10.0) < *speedup_bound(400'000, 20'000, 5.0));
    REQUIRE(*speedup_bound(800'000, 20'000, 5.0) > *speedup_bound(400'000, 20'000, 5.0));
}

TEST_CASE("no bound without something to divide") {
    REQUIRE_FALSE(speedup_bound(400'000, 0, 5.0));
    REQUIRE_FALSE(speedup_bound(400'000, 20'000, 0.0));
    REQUIRE_FALSE(speedup_bound(0, 20'000, 5.0));
}

TEST_CASE("verdicts without a bound are PASS and FAIL as before") {
    REQUIRE(verdict(std::nullopt, true, 1.5, std::nullopt) == Verdict::NotRun);
    REQUIRE(verdict(std::nullopt, true, 1.5, 1.2) == Verdict::NotRun);
    REQUIRE(verdict(1.5, true, 1.5, std::nullopt) == Verdict::Pass);
    REQUIRE(verdict(1.49, true, 1.5, std::nullopt) == Verdict::Fail);
    REQUIRE(verdict(1.5, false, 1.5, std::nullopt) == Verdict::Pass);
    REQUIRE(verdict(1.51, false, 1.5, std::nullopt) == Verdict::Fail);
}

TEST_CASE("a miss is unreachable only when the threshold is above the bound") {
    // perf-pipe here: 2.8x measured, 20x asked, 3.2x possible.
    REQUIRE(verdict(2.8, true, 20, 3.2) == Verdict::Unreachable);
    // dd-cat here: 1.18x measured, 1.5x asked, 1.47x possible.
    REQUIRE(verdict(1.18, true, 1.5, 1.47) == Verdict::Unreachable);
    // A threshold within the bound is a plain failure, even at the bound.
    REQUIRE(verdict(1.18, true, 1.5, 1.5) == Verdict::Fail);
    REQUIRE(verdict(1.18, true, 1.5, 2.0) == Verdict::Fail);
    REQUIRE(verdict(1.6, true, 1.5, 2.0) == Verdict::Pass);
    // Meeting the threshold passes even above a (noisy) bound.
    REQUIRE(verdict(1.6, true, 1.5, 1.4) == Verdict::Pass);
    // For an "at most" check the bound is how small the value can be (what
    // an empty preload adds to a fork): a bound within the threshold leaves
    // a miss a failure; one beyond it makes the threshold unreachable.
    REQUIRE(verdict(1.6, false, 1.5, 1.0) == Verdict::Fail);
    REQUIRE(verdict(1.6, false, 1.5, 1.5) == Verdict::Fail);
    REQUIRE(verdict(10.9, false, 3, 9.0) == Verdict::Unreachable);
    REQUIRE(verdict(2.5, false, 3, 9.0) == Verdict::Pass);
}

TEST_CASE("a process start may add 1.5x the empty preload's cost, and never less than 10 µs") {
    REQUIRE(spawn_allowance_us(30) == Approx(45));
    REQUIRE(spawn_allowance_us(6) == Approx(kSpawnSlackUs));
    // An empty preload measured as free (or cheaper than none, by noise).
    REQUIRE(spawn_allowance_us(0) == Approx(kSpawnSlackUs));
    REQUIRE(spawn_allowance_us(-4) == Approx(kSpawnSlackUs));
    // perf-pipe's floor-bounded verdict does not apply: an allowance is an "at most".
    REQUIRE(verdict(44.9, false, spawn_allowance_us(30), std::nullopt) == Verdict::Pass);
    REQUIRE(verdict(45.1, false, spawn_allowance_us(30), std::nullopt) == Verdict::Fail);
}

TEST_CASE("a ping-pong's placement is what most of its CPU samples saw") {
    REQUIRE(classify_placement(100, 100) == Placement::CoLocated);
    REQUIRE(classify_placement(80, 100) == Placement::CoLocated);
    REQUIRE(classify_placement(79, 100) == Placement::Mixed);
    REQUIRE(classify_placement(50, 100) == Placement::Mixed);
    REQUIRE(classify_placement(21, 100) == Placement::Mixed);
    REQUIRE(classify_placement(20, 100) == Placement::Spread);
    REQUIRE(classify_placement(0, 100) == Placement::Spread);
    REQUIRE(classify_placement(1, 1) == Placement::CoLocated);
    // Nothing to classify, or counts that cannot be.
    REQUIRE_FALSE(classify_placement(0, 0));
    REQUIRE_FALSE(classify_placement(5, 4));
    REQUIRE_FALSE(classify_placement(-1, 4));
    REQUIRE(placement_name(Placement::CoLocated) == "co-located");
    REQUIRE(placement_name(Placement::Spread) == "spread");
    REQUIRE(placement_name(Placement::Mixed) == "mixed");
}

TEST_CASE(
    "the arms' order is balanced: each arm at each place, and after each other arm, "
    "equally often") {
    for (std::size_t n = 1; n <= 8; ++n) {
        const std::size_t period = order_period(n);
        REQUIRE(period % n == 0);
        std::vector<std::size_t> at_place(n * n, 0), after(n * n, 0);
        for (std::size_t round = 0; round < period; ++round) {
            std::vector<bool> seen(n, false);
            for (std::size_t k = 0; k < n; ++k) {
                const std::size_t arm = arm_order(round, k, n);
                REQUIRE(arm < n);
                seen[arm] = true;
                ++at_place[arm * n + k];
                if (k > 0) ++after[arm_order(round, k - 1, n) * n + arm];
            }
            for (bool b : seen) REQUIRE(b);  // each round a permutation of the arms
        }
        for (std::size_t c : at_place) REQUIRE(c == period / n);
        // An order that only rotates runs each arm after one other only
        // (after[a][a+1] = n - 1 of n rounds): the run before leaves the
        // host in a state one arm would always meet.
        for (std::size_t a = 0; a < n; ++a)
            for (std::size_t b = 0; b < n; ++b)
                REQUIRE(after[a * n + b] == (a == b ? 0 : period / n));
        // The order repeats after its period.
        for (std::size_t k = 0; k < n; ++k)
            REQUIRE(arm_order(period + 1, k, n) == arm_order(1, k, n));
    }
    REQUIRE(arm_order(3, 2, 0) == 0);
}

// ---- the checks' intervals: rounds resampled as wholes ----------------------

namespace {
// The interval of median(num) / median(den) over every round, as the
// matrix's wall ratio checks have it.
std::optional<Interval> ratio_interval(const std::vector<double>& num,
                                       const std::vector<double>& den) {
    return rounds_interval(all_rounds(num.size()), [&](Picks p) -> std::optional<double> {
        return median_ratio(num, den, p);
    });
}
// Fifteen rounds of a noisy wall time, in ms, and a second arm's.
const std::vector<double> kNoShim{412, 398, 455, 401, 530, 407, 399, 420,
                                  610, 404, 415, 402, 398, 470, 409};
const std::vector<double> kArm{420, 405, 441, 430, 515, 396, 428, 433,
                               580, 411, 402, 419, 425, 512, 418};
}  // namespace

TEST_CASE("identical rounds give a zero-width interval at the ratio") {
    const std::vector<double> num(9, 400.0), den(9, 500.0);
    const std::optional<Interval> ci = ratio_interval(num, den);
    REQUIRE(ci);
    REQUIRE(ci->low == Approx(0.8));
    REQUIRE(ci->high == Approx(0.8));
}

TEST_CASE("the interval of a noisy sample holds its median ratio and has a width") {
    const double ratio = median_ratio(kNoShim, kArm, all_rounds(kNoShim.size()));
    REQUIRE(ratio == Approx(409.0 / 425.0));  // the 8th of 15 of each
    const std::optional<Interval> ci = ratio_interval(kNoShim, kArm);
    REQUIRE(ci);
    REQUIRE(ci->low <= ratio);
    REQUIRE(ratio <= ci->high);
    REQUIRE(ci->high - ci->low > 0.01);
    // Within what the rounds' own ratios span.
    REQUIRE(ci->low >= 398.0 / 580);
    REQUIRE(ci->high <= 610.0 / 396);
}

TEST_CASE("a seed gives the same interval twice, another seed draws other resamples") {
    const std::optional<Interval> a = ratio_interval(kNoShim, kArm),
                                  b = ratio_interval(kNoShim, kArm);
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(a->low == b->low);
    REQUIRE(a->high == b->high);
    auto median_of_picks = [](Picks p) { return median_at(kNoShim, p) / median_at(kArm, p); };
    const Interval same = bootstrap_rounds(kNoShim.size(), kIntervalSeed, median_of_picks);
    REQUIRE(same.low == a->low);
    REQUIRE(same.high == a->high);
    // The statistic sees other picks under another seed (the interval may
    // still coincide, being drawn from the same few values).
    std::vector<std::size_t> first_a, first_b;
    bootstrap_rounds(kNoShim.size(), kIntervalSeed, [&](Picks p) {
        if (first_a.empty()) first_a.assign(p.begin(), p.end());
        return 0.0;
    });
    bootstrap_rounds(kNoShim.size(), kIntervalSeed + 1, [&](Picks p) {
        if (first_b.empty()) first_b.assign(p.begin(), p.end());
        return 0.0;
    });
    REQUIRE(first_a.size() == kNoShim.size());
    REQUIRE(first_a != first_b);
}

TEST_CASE("rounds are resampled as wholes: noise shared by both arms of a round cancels") {
    // Each round's two runs move together by up to 50%; the arm is always
    // 10% slower within its round. Independent resampling of each arm would
    // give a wide interval; paired rounds give 1/1.1 exactly.
    std::vector<double> arm;
    for (double v : kNoShim) arm.push_back(v * 1.1);
    const std::optional<Interval> ci = ratio_interval(kNoShim, arm);
    REQUIRE(ci);
    REQUIRE(ci->low == Approx(1 / 1.1));
    REQUIRE(ci->high == Approx(1 / 1.1));
}

TEST_CASE("a ratio of ratios is recomputed whole from each resample") {
    // (no shim / adaptive) / (no shim / fixed) is fixed / adaptive, round set
    // by round set: both give the same interval.
    const std::vector<double> fixed{500, 480, 560, 470, 650, 495, 505, 490,
                                    720, 500, 510, 480, 485, 575, 500};
    const std::vector<std::size_t> every = all_rounds(kNoShim.size());
    const std::optional<Interval> whole =
        rounds_interval(every, [&](Picks p) -> std::optional<double> {
            return median_ratio(kNoShim, kArm, p) / median_ratio(kNoShim, fixed, p);
        });
    const std::optional<Interval> direct = ratio_interval(fixed, kArm);
    REQUIRE(whole);
    REQUIRE(direct);
    REQUIRE(whole->low == Approx(direct->low));
    REQUIRE(whole->high == Approx(direct->high));
    REQUIRE(whole->high > whole->low);
}

TEST_CASE("a subset of the rounds is resampled within itself") {
    // Rounds 1, 3 and 5 only (a py-pingpong placement): the others, however
    // far out, never enter.
    const std::vector<double> num{1, 100, 1e6, 100, 1e6, 100}, den{1, 50, 1, 50, 1, 50};
    const std::vector<std::size_t> some{1, 3, 5};
    const std::optional<Interval> ci = rounds_interval(
        some, [&](Picks p) -> std::optional<double> { return median_ratio(num, den, p); });
    REQUIRE(ci);
    REQUIRE(ci->low == Approx(2));
    REQUIRE(ci->high == Approx(2));
}

TEST_CASE("no interval from one round, or where a resample has no value") {
    REQUIRE_FALSE(ratio_interval({400}, {500}));
    REQUIRE(ratio_interval({400, 410}, {500, 490}));
    // A resample of only the round whose denominator is 0 has nothing to divide.
    const std::vector<double> num{400, 410, 420}, den{0, 0, 500};
    REQUIRE_FALSE(rounds_interval(all_rounds(3), [&](Picks p) -> std::optional<double> {
        const double d = median_at(den, p);
        if (!(d > 0)) return std::nullopt;
        return median_at(num, p) / d;
    }));
    // median_ratio itself reads such a ratio as 0, as the wall ratio does.
    REQUIRE(median_ratio(num, den, all_rounds(2)) == 0);
}

TEST_CASE("a threshold inside the interval, ends included, is not resolved") {
    const Interval ci{0.95, 1.02};
    REQUIRE_FALSE(resolves(ci, 0.97));
    REQUIRE_FALSE(resolves(ci, 0.95));
    REQUIRE_FALSE(resolves(ci, 1.02));
    REQUIRE(resolves(ci, 0.949));
    REQUIRE(resolves(ci, 1.021));
    // A zero-width interval resolves every threshold but its own value.
    REQUIRE(resolves(Interval{1, 1}, 0.97));
    REQUIRE_FALSE(resolves(Interval{1, 1}, 1));
}

TEST_CASE("the percentile interval takes the 2.5% and 97.5% replicates") {
    std::vector<double> r;
    for (int i = 10000; i >= 1; --i) r.push_back(i);  // unsorted in
    const Interval ci = percentile_interval(r);
    REQUIRE(ci.low == 251);    // index 0.025 x 9999 rounded: 250
    REQUIRE(ci.high == 9750);  // index 0.975 x 9999 rounded: 9749
}

TEST_CASE("a run is placed by its voluntary switches per operation") {
    // cmdsubst: 3.9 per substitution on one CPU, 3.0 on two.
    constexpr SwitchMarks m{.colocated_at = 3.75, .spread_at = 3.25};
    CHECK(m.on());
    CHECK_FALSE(SwitchMarks{}.on());
    CHECK(placement_by_switches(7500, 2000, m) == Placement::CoLocated);
    CHECK(placement_by_switches(7860, 2000, m) == Placement::CoLocated);
    CHECK(placement_by_switches(7499, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(6501, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(6500, 2000, m) == Placement::Spread);
    CHECK(placement_by_switches(6010, 2000, m) == Placement::Spread);
    CHECK(placement_by_switches(5, 0, m) == Placement::Mixed);  // nothing to divide
    const std::vector<double> wall{10, 20, 30, 40, 50}, cs{760, 600, 800, 640, 700};
    CHECK(placed_values(wall, cs, 200, m, Placement::CoLocated) == std::vector<double>{10, 30});
    CHECK(placed_values(wall, cs, 200, m, Placement::Spread) == std::vector<double>{20, 40});
    CHECK(placed_values(wall, cs, 200, m, Placement::Mixed) == std::vector<double>{50});
}

TEST_CASE("a ping-pong is placed by its involuntary switches per round trip") {
    // perf bench sched pipe: 0.83-0.87 per round trip on one CPU in every
    // arm, at most 0.09 on two; 0.2-0.29, 0.58 and 0.71 moved during the run.
    constexpr SwitchMarks m{.colocated_at = 0.75, .spread_at = 0.1, .involuntary = true};
    CHECK(m.counter() == "involuntary");
    CHECK(SwitchMarks{.colocated_at = 1}.counter() == "voluntary");
    CHECK(placement_by_switches(1652, 2000, m) == Placement::CoLocated);
    CHECK(placement_by_switches(1500, 2000, m) == Placement::CoLocated);
    CHECK(placement_by_switches(1428, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(1164, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(398, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(201, 2000, m) == Placement::Mixed);
    CHECK(placement_by_switches(200, 2000, m) == Placement::Spread);
    CHECK(placement_by_switches(170, 2000, m) == Placement::Spread);
    CHECK(placement_by_switches(3, 2000, m) == Placement::Spread);
    // Four runs: a wall time each, and its switches.
    const std::vector<double> wall{12e3, 118e3, 11e3, 35e3}, cs{1720, 4, 1716, 1164};
    CHECK(placed_values(wall, cs, 2000, m, Placement::CoLocated) ==
          std::vector<double>{12e3, 11e3});
    CHECK(placed_values(wall, cs, 2000, m, Placement::Spread) == std::vector<double>{118e3});
    CHECK(placed_values(wall, cs, 2000, m, Placement::Mixed) == std::vector<double>{35e3});
}

TEST_CASE("a placement's ratio compares the runs each arm had in it, from three of each") {
    const std::vector<double> base{100, 110, 90}, arm{125, 110, 100, 120};
    const PlacedRatio r = placed_ratio(base, arm);
    REQUIRE(r.value);
    CHECK(*r.value == Approx(100.0 / 115.0));  // medians 100 and 115
    REQUIRE(r.interval);
    CHECK(r.interval->low <= *r.value);
    CHECK(*r.value <= r.interval->high);
    CHECK(r.interval->low < r.interval->high);
    // Identical runs: no width.
    const PlacedRatio same = placed_ratio({5, 5, 5}, {4, 4, 4});
    REQUIRE(same.interval);
    CHECK(same.interval->low == Approx(1.25));
    CHECK(same.interval->high == Approx(1.25));
    // Two runs of a side are too few: no value, no interval.
    CHECK_FALSE(placed_ratio({100, 110}, arm).value);
    CHECK_FALSE(placed_ratio(base, {100, 110}).interval);
}
