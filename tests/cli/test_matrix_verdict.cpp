// bench matrix's acceptance arithmetic (tools/matrix_verdict.h): the bound a
// floor puts on a wall speed-up, and which verdict a check gets with it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "matrix_verdict.h"

using namespace pipespin::cli;

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

TEST_CASE("each round starts one arm further on, and each arm has each place once") {
    constexpr std::size_t n = 5;
    for (std::size_t round = 0; round < n; ++round) {
        bool seen[n] = {};
        for (std::size_t k = 0; k < n; ++k) seen[rotated_index(round, k, n)] = true;
        for (bool b : seen) REQUIRE(b);  // a permutation of the arms
    }
    // Round 0 runs the arms as listed; round 1 starts with the second.
    REQUIRE(rotated_index(0, 0, n) == 0);
    REQUIRE(rotated_index(1, 0, n) == 1);
    REQUIRE(rotated_index(1, n - 1, n) == 0);
    // Over n rounds, the arm listed first runs at each place (k) once.
    bool first_arm_at[n] = {};
    for (std::size_t round = 0; round < n; ++round)
        for (std::size_t k = 0; k < n; ++k)
            if (rotated_index(round, k, n) == 0) first_arm_at[k] = true;
    for (bool b : first_arm_at) REQUIRE(b);
    REQUIRE(rotated_index(3, 2, 0) == 0);
}
