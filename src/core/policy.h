// The spin decision: whether, and how long, one wait on one fd and direction
// may spin. This is the only place that decides; docs/policy.md explains why
// it decides this way.
//
// Contract: pure. It reads and writes only the PolicyState it is given (and
// the process-wide WakeEstimate), takes time from the caller, and calls
// nothing, so unit tests drive it with a simulated clock. Every field is a
// relaxed atomic: threads sharing a fd may race and lose an update, which
// costs a little accuracy, never correctness.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/options.h"

namespace pipespin {

struct PolicyParams {
    Mode mode = Mode::Fixed;
    std::uint64_t max_spin_ns = 50'000;  // spin_us: the budget (fixed) or ceiling (adaptive)
    int usable_cpus = 2;                 // nobody to spin for on one CPU
    bool oversubscribed = false;         // more runnable tasks than CPUs: spinning steals
};

// What happened around one wait, reported after the real call returned.
struct WaitObservation {
    bool spun = false;            // a spin ran
    bool spin_hit = false;        // the pipe became ready during the spin
    std::uint64_t spin_ns = 0;    // time spent spinning
    std::uint64_t block_ns = 0;   // time in the real (possibly blocking) call after the spin
    std::uint64_t budget_ns = 0;  // the budget the spin had
};

// Phases of the per-fd experiment (adaptive mode).
enum class Phase : std::uint8_t {
    TrySpin = 0,   // measuring an epoch with spinning (where waits are short)
    TryPlain = 1,  // measuring an epoch without any spin or probe
    Spin = 2,      // spinning won: exploit for a while
    Plain = 3,     // not spinning won: exploit for a while
};

struct PolicyState {
    std::atomic<std::uint64_t> epoch_start_ns{0};
    std::atomic<std::uint64_t> epoch_bytes{0};
    std::atomic<std::uint64_t> cost_spin{0};   // ns per KiB moved in the last TrySpin epoch
    std::atomic<std::uint64_t> cost_plain{0};  // same, last TryPlain epoch
    std::atomic<std::uint32_t> epoch_calls{0};
    std::atomic<std::uint16_t> exploit_left{0};  // epochs left in Spin/Plain
    std::atomic<std::uint16_t> exploit_len{0};   // length of the current exploit run
    std::atomic<std::uint8_t> phase{0};
    std::atomic<std::uint8_t> long_waits{0};   // waits this epoch that outlasted the spin
    std::atomic<std::uint8_t> last_winner{0};  // Phase::Spin/Plain of the last decision, 0 none
    std::atomic<std::uint8_t> epoch_waits{0};  // waits this epoch (spun, or refused a CPU), capped

    void reset() noexcept;
    Phase get_phase() const noexcept {
        return static_cast<Phase>(phase.load(std::memory_order_relaxed));
    }
};

// Process-wide estimate of what a sleep plus wake-up costs on this host,
// learnt from the real calls that blocked after a spin missed: the shortest
// of those blocks are (almost) pure wake-up latency. Starts at the ceiling.
class WakeEstimate {
public:
    std::uint64_t get(std::uint64_t ceiling_ns) const noexcept;
    void observe(std::uint64_t block_ns, std::uint64_t ceiling_ns) noexcept;
    void reset() noexcept { ns_.store(0, std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> ns_{0};  // 0: nothing learnt yet
};

class SpinPolicy {
public:
    // Tunables, named so that tests and docs can refer to them.
    static constexpr std::uint32_t kEpochCalls = 64;  // calls per measured epoch
    static constexpr std::uint32_t kMarginPct = 5;    // spinning must win by this much
    static constexpr std::uint16_t kExploitMin = 4;   // epochs; doubles while confirmed
    // A winner is trusted at most this many epochs before the next pair of
    // measuring epochs. Spinning may be trusted longer: a spinning fd still
    // stops within kLongWaitLimit waits when waits grow long, and each
    // measuring pair costs a ping-pong two epochs of sleeps (one per side);
    // a fd that does not spin must find out soon that spinning would pay.
    static constexpr std::uint16_t kExploitMaxSpin = 256;
    static constexpr std::uint16_t kExploitMax = 64;  // not spinning
    // A measuring epoch that after kEarlyCalls calls (or 2x, 4x as many)
    // costs kEarlyFactor times what the other way cost last ends there:
    // such a loser cannot win in the calls left, and each of them pays.
    // A TrySpin epoch without a single wait by then ends too: spinning
    // cannot matter to a fd that never waits (a writer into a pipe with
    // room), and not spinning wins, as a repeat when it won before.
    static constexpr std::uint32_t kEarlyCalls = 8;
    static constexpr std::uint64_t kEarlyFactor = 2;
    static constexpr std::uint8_t kLongWaitLimit = 2;    // outlasted spins before giving up
    static constexpr std::uint64_t kLongWaitFactor = 4;  // "outlasted": wait > 4x budget

    // Budget in ns for the next wait on this fd; 0 means call the real
    // function at once, without even a look.
    static std::uint64_t budget_ns(const PolicyState& s, const PolicyParams& p,
                                   const WakeEstimate& wake) noexcept;
    // Every call on a tracked pipe (waiting or not), with the bytes it moved
    // (1 for a poll). Closes epochs and runs the experiment; asks the clock
    // only when an epoch starts or ends.
    using NowFn = std::uint64_t (*)() noexcept;
    static void on_call(PolicyState& s, const PolicyParams& p, std::uint64_t bytes,
                        NowFn now) noexcept;
    // A call about to be made without a spin, whose result the policy does
    // not need: any call outside adaptive mode, or one in an exploit phase
    // (Spin, Plain), whose epochs only count calls. Counts it now, before
    // the real call and without the clock, and returns true; returns false
    // (and counts nothing) in a measuring epoch, whose cost needs the bytes
    // the call moves: on_call() after the real call then counts it.
    static bool count_early(PolicyState& s, const PolicyParams& p) noexcept;
    // A wait could not spin because no CPU is free for the peer: do not
    // spin (nor look at the run queue again) on this fd for the rest of the
    // epoch.
    static void on_no_cpu(PolicyState& s) noexcept;
    // A wait finished (after the real call returned).
    static void on_wait(PolicyState& s, const PolicyParams& p, WakeEstimate& wake,
                        const WaitObservation& o) noexcept;
};

}  // namespace pipespin
