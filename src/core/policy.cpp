#include "core/policy.h"

namespace pipespin {

std::uint64_t SpinPolicy::budget_ns(const DirState& /*state*/, const PolicyParams& p) noexcept {
    if (p.mode == Mode::Off || p.usable_cpus < 2) return 0;
    // Fixed, and adaptive until its policy lands: the whole ceiling.
    return p.max_spin_ns;
}

void SpinPolicy::observe(DirState& /*state*/, const PolicyParams& /*p*/,
                         const WaitObservation& /*o*/) noexcept {}

}  // namespace pipespin
