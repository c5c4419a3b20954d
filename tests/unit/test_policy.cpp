#include <catch2/catch.hpp>

#include "core/policy.h"

using namespace pipespin;

TEST_CASE("fixed mode spins the whole budget when a CPU is free for the peer", "[policy]") {
    DirState st;
    PolicyParams p{Mode::Fixed, 50'000, 2};
    CHECK(SpinPolicy::budget_ns(st, p) == 50'000);
    p.max_spin_ns = 0;
    CHECK(SpinPolicy::budget_ns(st, p) == 0);
}

TEST_CASE("off mode never spins", "[policy]") {
    DirState st;
    CHECK(SpinPolicy::budget_ns(st, {Mode::Off, 50'000, 8}) == 0);
}

TEST_CASE("with one usable CPU there is nobody to spin for", "[policy]") {
    DirState st;
    CHECK(SpinPolicy::budget_ns(st, {Mode::Fixed, 50'000, 1}) == 0);
    CHECK(SpinPolicy::budget_ns(st, {Mode::Adaptive, 50'000, 1}) == 0);
}
