// The spin decision: how long one wait on one fd and direction may spin.
//
// This is the only place that decides a budget. It is pure: it reads the
// per-direction state it owns (DirState::policy_a/b), the parameters, and
// the observations it is given; it calls nothing, so unit tests drive it
// with a simulated clock.
#pragma once

#include <cstdint>

#include "core/fd_table.h"
#include "core/options.h"

namespace pipespin {

struct PolicyParams {
    Mode mode = Mode::Fixed;
    std::uint64_t max_spin_ns = 50'000;  // spin_us, the ceiling
    int usable_cpus = 2;                 // nobody to spin for on one CPU
};

// What happened around one wait, reported after the real call returned.
struct WaitObservation {
    bool spun = false;           // a spin ran
    bool spin_hit = false;       // the pipe became ready during the spin
    std::uint64_t spin_ns = 0;   // time spent spinning
    std::uint64_t block_ns = 0;  // time in the real (blocking) call after the spin
};

class SpinPolicy {
public:
    // Budget in ns for the next wait; 0 means call the real function at once.
    static std::uint64_t budget_ns(const DirState& state, const PolicyParams& p) noexcept;
    // Learn from a finished wait (no-op for fixed mode).
    static void observe(DirState& state, const PolicyParams& p, const WaitObservation& o) noexcept;
};

}  // namespace pipespin
