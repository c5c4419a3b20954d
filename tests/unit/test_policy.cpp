// The spin policy against simulated workloads: a simulated clock, wait-time
// sequences, and a model of what a wait costs with and without a spin.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "core/policy.h"

using namespace pipespin;

namespace {

constexpr std::uint64_t kUs = 1000;
constexpr std::uint64_t kCeiling = 50 * kUs;

std::uint64_t g_now = 0;
std::uint64_t fake_now() noexcept {
    return g_now;
}

// One call in the simulated world: the peer delivers `wait_ns` after the
// call starts (0: already there) and `bytes` come back.
struct Step {
    std::uint64_t wait_ns;
    std::uint64_t bytes;
};

// A reader under the policy. A sleep costs `wake_ns` of latency on top of
// the wait; a syscall costs `call_ns`; a spin that outlives its budget
// sleeps afterwards.
struct Sim {
    PolicyState s;
    WakeEstimate wake;
    FreshPrior prior;
    FreshPrior::Lane* lane = &prior.lane(Origin::Made, 0);
    PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    std::uint64_t wake_ns = 20 * kUs;
    std::uint64_t call_ns = 1 * kUs;
    std::uint64_t spins = 0, calls = 0, max_budget = 0, watched = 0;
    // The peer needs this thread's CPU (the scheduler put both ends on
    // one): it cannot run while this thread spins, so a spin always misses
    // and the peer answers right after it gave up.
    bool colocated = false;
    // Both ends spin on one CPU: a spin always misses (the peer cannot run
    // while it spins), and the real call then blocks through the peer's own
    // spin, which this thread, woken, waits out runnable (its run delay).
    // The engine reads the run delay where the policy asks
    // (looks_at_run_delay, run_delay_matters); elsewhere it is 0.
    bool both_spin_here = false;
    // The peer needs this thread's CPU, and the spin's yield (engine_detail.h,
    // kYieldAt) gives it: the peer runs, answers, and the spin sees the
    // answer after its yield, which ran another task (gave_cpu).
    bool yields_to_peer = false;
    std::uint64_t delay_looks = 0;
    std::uint64_t measuring = 0;  // calls made in a measuring epoch
    std::uint64_t cut_short = 0;  // runs of not spinning ended before their last epoch
    // As the engine's fast lane does (adaptive mode, no statistics lines,
    // fd_table.h): after a call counted early without a spin, a lane is
    // armed for SpinPolicy::inline_run() calls, which it counts without
    // asking the policy; what it counted is settled
    // (SpinPolicy::settle_inline) at the next call it does not count.
    bool plain_inline = false;
    std::uint32_t lane_armed = 0, lane_left = 0;
    std::uint64_t inline_calls = 0;
    // The calls the lane counted and the policy has not yet seen.
    std::uint32_t lane_pending() const { return lane_armed - lane_left; }

    Sim() { g_now = 1'000'000; }

    // A new fd (the process's prior stays).
    void new_fd() { s.reset(); }

    // Returns whether the call spun.
    bool call(Step st, std::function<Step(bool)> const* by_mode = nullptr) {
        if (lane_left > 0) {
            // Not spinning, counted: the call as a budget of 0 makes it.
            --lane_left;
            if (by_mode) st = (*by_mode)(false);
            ++calls;
            ++inline_calls;
            g_now += st.wait_ns == 0 ? call_ns : st.wait_ns + wake_ns + call_ns;
            return false;
        }
        if (lane_armed != 0) {
            SpinPolicy::settle_inline(s, lane_armed);
            lane_armed = 0;
        }
        const std::uint64_t budget = SpinPolicy::budget_ns(s, p, wake, *lane);
        const bool spinning = budget > SpinPolicy::kWatchOnly;
        if (spinning) max_budget = std::max(max_budget, budget);
        if (by_mode) st = (*by_mode)(spinning);
        ++calls;
        const Phase phase = s.get_phase();
        const std::uint16_t left = s.exploit_left.load();
        if (phase == Phase::TrySpin || phase == Phase::TryPlain) ++measuring;
        // As the engine does (without statistics lines): a call that will
        // not spin is counted before it, when the policy allows that.
        const bool early =
            (budget == 0 || st.wait_ns == 0) && SpinPolicy::count_early(s, p, fake_now);
        if (plain_inline && early && budget == 0 && p.mode == Mode::Adaptive)
            lane_armed = lane_left = SpinPolicy::inline_run(s);
        bool spun = false;
        if (st.wait_ns == 0) {
            g_now += call_ns;
        } else if (budget == SpinPolicy::kWatchOnly) {
            // A fresh fd that does not spin: the wait is timed.
            ++watched;
            WaitObservation o;
            o.watched = true;
            o.budget_ns = SpinPolicy::spin_ns(p, wake);
            o.block_ns = st.wait_ns + wake_ns + call_ns;
            g_now += o.block_ns;
            SpinPolicy::on_wait(s, p, wake, o, lane);
        } else if (budget == 0) {
            g_now += st.wait_ns + wake_ns + call_ns;
        } else {
            spun = true;
            ++spins;
            WaitObservation o;
            o.spun = true;
            o.budget_ns = budget;
            if (yields_to_peer) {
                o.spin_hit = true;
                o.gave_cpu = true;
                o.spin_ns = std::min<std::uint64_t>(budget, 4 * kUs) + st.wait_ns + wake_ns;
                g_now += o.spin_ns + call_ns;
            } else if (both_spin_here) {
                o.spin_ns = budget;
                o.block_ns = budget + wake_ns + call_ns;
                g_now += o.spin_ns + o.block_ns;
            } else if (colocated) {
                o.spin_ns = budget;
                o.block_ns = st.wait_ns + wake_ns + call_ns;
                g_now += o.spin_ns + o.block_ns;
            } else if (st.wait_ns <= budget) {
                o.spin_hit = true;
                o.spin_ns = st.wait_ns;
                g_now += st.wait_ns + call_ns;
            } else {
                o.spin_ns = budget;
                o.block_ns = st.wait_ns - budget + wake_ns + call_ns;
                g_now += o.spin_ns + o.block_ns;
            }
            if (!o.spin_hit && SpinPolicy::looks_at_run_delay(s, p)) {
                ++delay_looks;
                if (SpinPolicy::run_delay_matters(o)) {
                    o.run_delay_known = true;
                    o.run_delay_ns = both_spin_here ? budget : 0;
                }
            }
            SpinPolicy::on_wait(s, p, wake, o, lane);
        }
        if (!early) SpinPolicy::on_call(s, p, st.bytes, fake_now);
        if (phase == Phase::Plain && left > 1 && s.get_phase() == Phase::TrySpin) ++cut_short;
        return spun;
    }

    // Runs n calls of a fixed shape; returns how many spun.
    std::uint64_t run(std::uint64_t n, Step st) {
        std::uint64_t before = spins;
        for (std::uint64_t i = 0; i < n; ++i) call(st);
        return spins - before;
    }
};

constexpr Step kShort{3 * kUs, 1};       // ping-pong: the peer answers in 3 µs
constexpr Step kSparse{2'000 * kUs, 1};  // a byte every 2 ms

}  // namespace

TEST_CASE("fixed mode spins the whole budget, whatever it has seen", "[policy]") {
    Sim sim;
    sim.p.mode = Mode::Fixed;
    sim.run(1000, kSparse);
    CHECK(SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane) == kCeiling);
    sim.p.max_spin_ns = 0;
    CHECK(SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane) == 0);
}

TEST_CASE("off mode never spins", "[policy]") {
    Sim sim;
    sim.p.mode = Mode::Off;
    CHECK(sim.run(1000, kShort) == 0);
}

TEST_CASE("with one usable CPU there is nobody to spin for", "[policy]") {
    Sim sim;
    sim.p.usable_cpus = 1;
    CHECK(sim.run(1000, kShort) == 0);
    sim.p.mode = Mode::Fixed;
    CHECK(SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane) == 0);
}

TEST_CASE("an oversubscribed host stops adaptive spinning at once", "[policy]") {
    Sim sim;
    sim.p.oversubscribed = true;
    CHECK(sim.run(1000, kShort) == 0);
}

TEST_CASE("short waits converge to spinning", "[policy]") {
    Sim sim;
    sim.run(20 * SpinPolicy::kEpochCalls, kShort);
    CHECK(sim.s.get_phase() == Phase::Spin);
    // Once converged, nearly every wait spins (the rest are the periodic
    // re-checks without spinning).
    const std::uint64_t n = 100 * SpinPolicy::kEpochCalls;
    CHECK(sim.run(n, kShort) > n * 9 / 10);
}

TEST_CASE("long waits converge to no spin within a bounded number of waits", "[policy]") {
    Sim sim;
    // A fresh fd does not spin on its first waits (its process has learnt
    // nothing yet); its experiment then starts without spinning (none of
    // those waits was short), and its TrySpin epoch gives up after
    // kLongWaitLimit waits.
    CHECK(sim.run(SpinPolicy::kEpochCalls, kSparse) <= SpinPolicy::kLongWaitLimit);
    CHECK(sim.run(20 * SpinPolicy::kEpochCalls, kSparse) <= 10 * SpinPolicy::kLongWaitLimit);
    // In the long run each re-check costs at most kLongWaitLimit spins per
    // kExploitMax epochs.
    const std::uint64_t n = 200 * SpinPolicy::kEpochCalls;
    const std::uint64_t spun = sim.run(n, kSparse);
    CHECK(spun <=
          (n / SpinPolicy::kEpochCalls / SpinPolicy::kExploitMax + 2) * SpinPolicy::kLongWaitLimit);
}

TEST_CASE("a fd slow from its start learns it without a spin", "[policy]") {
    // Both first waits long (watched, no spin), an epoch of not spinning,
    // then a TrySpin epoch: its first wait is watched too, and outlasting
    // kLongWaitFactor budgets it decides, as an outlasted spin would have.
    // A fd whose first waits were short (spinning won on it once) still
    // gives up a TrySpin epoch only after kLongWaitLimit spins.
    Sim slow;
    CHECK(slow.run(4 * SpinPolicy::kEpochCalls, kSparse) == 0);
    CHECK(slow.watched == SpinPolicy::kFreshWaits + 1);
    CHECK(slow.s.get_phase() == Phase::Plain);
    // Each later measuring pair watches one wait, and spins on none.
    CHECK(slow.run(200 * SpinPolicy::kEpochCalls, kSparse) == 0);
    CHECK(slow.s.get_phase() == Phase::Plain);
    Sim once_fast;
    once_fast.run(4 * SpinPolicy::kEpochCalls, kShort);
    REQUIRE(once_fast.run(SpinPolicy::kEpochCalls, kShort) > SpinPolicy::kEpochCalls / 2);
    CHECK(once_fast.run(SpinPolicy::kEpochCalls, kSparse) >= SpinPolicy::kLongWaitLimit);
}

TEST_CASE("a fd slow from its start whose peer turns fast spins again", "[policy]") {
    // The watched first wait of a TrySpin epoch that comes within
    // kLongWaitFactor budgets lets the epoch's next waits spin: once the
    // peer answers at once, the fd measures and spinning wins.
    Sim sim;
    sim.run(2 * SpinPolicy::kEpochCalls, kSparse);
    REQUIRE(sim.s.get_phase() == Phase::Plain);
    const std::uint64_t watched = sim.watched;
    // At most one run of not spinning at its longest, then the measuring pair.
    const std::uint64_t n = (SpinPolicy::kExploitMax + 3) * SpinPolicy::kEpochCalls;
    CHECK(sim.run(n, kShort) > n / 2);
    CHECK(sim.watched == watched + 1);
    CHECK(sim.s.get_phase() == Phase::Spin);
}

TEST_CASE("a sparse peer's fd spends few calls measuring", "[policy]") {
    // A byte every 2 ms: each measuring pair's TrySpin epoch loses at its
    // second long wait, and not spinning wins there; the calls counted
    // after the call (measuring epochs) are then a few per exploit run, not
    // two epochs' worth (128) of them.
    Sim sim;
    const std::uint64_t n = 200 * SpinPolicy::kEpochCalls;
    sim.run(n, kSparse);
    CAPTURE(sim.measuring, sim.spins);
    // Exploit runs of 4, 8, ... 64 epochs: about 7 measuring starts here,
    // each kLongWaitLimit calls (and the Fresh phase's few).
    CHECK(sim.measuring <= 10 * SpinPolicy::kLongWaitLimit);
    CHECK(sim.s.get_phase() == Phase::Plain);
}

TEST_CASE("alternating phases recover both ways", "[policy]") {
    Sim sim;
    // Bound on how long it takes to notice a change: one exploit run at its
    // longest plus the two measuring epochs.
    const std::uint64_t bound = (SpinPolicy::kExploitMax + 3) * SpinPolicy::kEpochCalls;
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        sim.run(bound, kShort);
        // Converged: most waits spin (the rest are the periodic re-checks).
        CHECK(sim.run(bound, kShort) > bound * 8 / 10);

        // Switching to long waits stops spinning without waiting for the
        // exploit run to end: after kLongWaitLimit waits in the run, and as
        // many in the measuring epoch it starts at once.
        CHECK(sim.run(SpinPolicy::kEpochCalls, kSparse) <= 2 * SpinPolicy::kLongWaitLimit);
        sim.run(bound, kSparse);
        CHECK(sim.run(SpinPolicy::kEpochCalls, kSparse) <= SpinPolicy::kLongWaitLimit);
    }
}

TEST_CASE("a spinning ping-pong that meets two stretched waits measures again at once",
          "[policy]") {
    // A virtual CPU preempted by its host for a few hundred µs stretches two
    // waits of a spread ping-pong past 4x the budget. The rule that then
    // ran not spinning for kExploitMin epochs slept through 256 round trips
    // (17 ms at a cross-CPU wake-up of 66 µs, in a trace of perf bench);
    // measuring again costs a TryPlain epoch ended early.
    Sim sim;
    const std::uint64_t warm = (SpinPolicy::kExploitMaxSpin + 16) * SpinPolicy::kEpochCalls;
    sim.run(warm, kShort);
    // Somewhere in a long run of spinning (the periodic measuring pair
    // aside), as the trace's was.
    while (sim.s.get_phase() != Phase::Spin || sim.s.epoch_calls.load() < 4) sim.call(kShort);
    const Step stretched{600 * kUs, 1};
    sim.call(stretched);
    sim.call(stretched);
    const std::uint64_t n = SpinPolicy::kExploitMin * SpinPolicy::kEpochCalls;
    const std::uint64_t spun = sim.run(n, kShort);
    CAPTURE(spun);
    CHECK(n - spun <= 2 * SpinPolicy::kEarlyCalls);
}

TEST_CASE("streaming: spinning that breaks the kernel's batching loses", "[policy]") {
    // Not spinning lets the writer fill the pipe while the reader sleeps:
    // each wake-up then drains a batch. Spinning answers every message in
    // lock-step. Both "succeed"; only the progress per unit time differs.
    std::function<Step(bool)> model = [](bool spinning) {
        return spinning ? Step{2 * kUs, 100} : Step{5 * kUs, 4000};
    };
    Sim sim;
    for (int i = 0; i < 40 * static_cast<int>(SpinPolicy::kEpochCalls); ++i) sim.call({}, &model);
    CHECK(sim.s.get_phase() == Phase::Plain);
    std::uint64_t before = sim.spins;
    const int n = 100 * SpinPolicy::kEpochCalls;
    for (int i = 0; i < n; ++i) sim.call({}, &model);
    CHECK(sim.spins - before < static_cast<std::uint64_t>(n) / 20);
}

TEST_CASE("a fd trusted to spin notices within one exploit run that batching now wins",
          "[policy]") {
    Sim sim;
    // Ping-pong long enough that spinning is trusted for its longest run.
    sim.run(4 * (SpinPolicy::kExploitMaxSpin + 2) * SpinPolicy::kEpochCalls, kShort);
    CHECK(sim.s.get_phase() == Phase::Spin);
    std::function<Step(bool)> model = [](bool spinning) {
        return spinning ? Step{2 * kUs, 100} : Step{5 * kUs, 4000};
    };
    // No long waits here, so only the next measuring pair can end it.
    const int bound = (SpinPolicy::kExploitMaxSpin + 3) * SpinPolicy::kEpochCalls;
    for (int i = 0; i < bound; ++i) sim.call({}, &model);
    CHECK(sim.s.get_phase() == Phase::Plain);
}

TEST_CASE("calls that never wait cost no spin and no look", "[policy]") {
    Sim sim;
    sim.run(10 * SpinPolicy::kEpochCalls, Step{0, 4096});
    // Spinning and not spinning cost the same here: the tie goes to plain,
    // where the wrapper calls the real function directly.
    CHECK(sim.s.get_phase() != Phase::Spin);
}

TEST_CASE("the ceiling is never exceeded, whatever the waits", "[policy]") {
    std::mt19937_64 rng(42);
    for (std::uint64_t ceiling : {1 * kUs, 10 * kUs, 50 * kUs, 1'000 * kUs}) {
        Sim sim;
        sim.p.max_spin_ns = ceiling;
        std::uniform_int_distribution<std::uint64_t> wait(0, 3 * ceiling);
        for (int i = 0; i < 20'000; ++i) sim.call({wait(rng), 1 + rng() % 5000});
        CAPTURE(ceiling);
        CHECK(sim.max_budget <= ceiling);
        CHECK(sim.max_budget > 0);
    }
}

TEST_CASE("the wake-up estimate learns from blocks and stays under the ceiling", "[policy]") {
    WakeEstimate w;
    CHECK(w.get(kCeiling) == kCeiling);  // nothing learnt: the ceiling
    for (int i = 0; i < 100; ++i) w.observe(8 * kUs, kCeiling);
    CHECK(w.get(kCeiling) > 7 * kUs);
    CHECK(w.get(kCeiling) < 9 * kUs);
    for (int i = 0; i < 100; ++i) w.observe(10'000 * kUs, kCeiling);
    CHECK(w.get(kCeiling) <= kCeiling);
    CHECK(w.get(5 * kUs) == 5 * kUs);  // a lower ceiling caps it too
}

TEST_CASE("a budget follows the learnt wake-up cost", "[policy]") {
    Sim sim;
    sim.s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    for (int i = 0; i < 200; ++i) sim.wake.observe(5 * kUs, kCeiling);
    const std::uint64_t b = SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane);
    CHECK(b >= 5 * kUs);
    CHECK(b < 20 * kUs);
}

TEST_CASE("a wait that found no CPU free stops spinning on that fd for the epoch", "[policy]") {
    Sim sim;
    sim.s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    CHECK(SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane) > 0);
    SpinPolicy::on_no_cpu(sim.s);
    CHECK(SpinPolicy::budget_ns(sim.s, sim.p, sim.wake, *sim.lane) == 0);
    // The next measuring epoch asks again.
    sim.run(3 * SpinPolicy::kEpochCalls, kShort);
    CHECK(sim.run(SpinPolicy::kEpochCalls * (SpinPolicy::kExploitMax + 3), kShort) > 0);
}

TEST_CASE("exploit epochs are counted before the call, measuring epochs after it", "[policy]") {
    PolicyState s;
    const PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    // A fresh fd counts calls only: early.
    CHECK(SpinPolicy::count_early(s, p, fake_now));
    CHECK(s.epoch_calls.load() == 1);
    // A measuring epoch needs on_call() with the bytes.
    s.reset();
    s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    CHECK_FALSE(SpinPolicy::count_early(s, p, fake_now));
    CHECK(s.epoch_calls.load() == 0);
    // The last epoch of a run of not spinning: counted early, without the
    // clock, until it ends and the next measuring pair begins.
    s.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    s.exploit_left.store(1);
    for (std::uint32_t i = 1; i < SpinPolicy::kEpochCalls; ++i) {
        REQUIRE(SpinPolicy::count_early(s, p, fake_now));
        REQUIRE(s.get_phase() == Phase::Plain);
    }
    CHECK(SpinPolicy::count_early(s, p, fake_now));
    CHECK(s.get_phase() == Phase::TrySpin);
    CHECK(s.epoch_calls.load() == 0);
    CHECK_FALSE(SpinPolicy::count_early(s, p, fake_now));
    // Outside adaptive mode nothing is learnt: always early.
    const PolicyParams fixed{Mode::Fixed, kCeiling, 2, false};
    CHECK(SpinPolicy::count_early(s, fixed, fake_now));
}

TEST_CASE("a measuring epoch that clearly loses ends early", "[policy]") {
    const PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    constexpr std::uint64_t kSpinCostPerCall = 5 * kUs;  // 1 byte per call
    auto try_plain = [&](std::uint64_t plain_cost_per_call) {
        PolicyState s;
        s.phase.store(static_cast<std::uint8_t>(Phase::TryPlain));
        s.cost_spin.store(kSpinCostPerCall * 1024);  // ns per KiB
        g_now = 1'000'000;
        SpinPolicy::on_call(s, p, 1, fake_now);  // the epoch's clock starts
        std::uint32_t calls = 1;
        while (s.get_phase() == Phase::TryPlain && calls < 10 * SpinPolicy::kEpochCalls) {
            g_now += plain_cost_per_call;
            SpinPolicy::on_call(s, p, 1, fake_now);
            ++calls;
        }
        CHECK(s.get_phase() == Phase::Spin);
        return calls;
    };
    // A ping-pong that sleeps on every call: 3x the spinning cost. Over at
    // the first look.
    CHECK(try_plain(3 * kSpinCostPerCall) == SpinPolicy::kEarlyCalls);
    // Worse, but not clearly: measured to the end (and spinning still wins).
    CHECK(try_plain(3 * kSpinCostPerCall / 2) == SpinPolicy::kEpochCalls);
}

TEST_CASE("a new ping-pong pays few sleeps to learn that spinning wins", "[policy]") {
    // perf bench sched pipe -l 20000: each side reads 20000 times. The
    // measuring pairs of the first exploit runs (4, 8, ... epochs) each put
    // one epoch of sleeps in; ending them early keeps that to a few calls.
    Sim sim;
    const std::uint64_t n = 20'000;
    const std::uint64_t spun = sim.run(n, kShort);
    CAPTURE(n - spun);
    CHECK(n - spun <= 2 * SpinPolicy::kEpochCalls);
}

namespace {
// The exploit run lengths of a fd's decisions for spinning, in order, over
// `epochs` epochs of one kind of wait.
std::vector<int> spin_runs(Step step, std::uint64_t epochs, std::uint64_t call_ns = 1 * kUs) {
    Sim sim;
    sim.call_ns = call_ns;
    std::vector<int> runs;
    Phase before = sim.s.get_phase();
    for (std::uint64_t i = 0; i < epochs * SpinPolicy::kEpochCalls; ++i) {
        sim.call(step);
        const Phase now = sim.s.get_phase();
        if (before == Phase::TryPlain && now == Phase::Spin)
            runs.push_back(sim.s.exploit_len.load());
        before = now;
    }
    return runs;
}
}  // namespace

TEST_CASE("a clear winner is trusted 4x longer: a ping-pong reaches its longest run in 4 pairs",
          "[policy]") {
    // Each measuring pair of a spread ping-pong costs an epoch of sleeps on
    // each side; its TryPlain epoch costs many times the TrySpin one (and
    // ends early), so the win is clear, and the run grows 4, 16, 64, 256
    // epochs where doubling took 4, 8, ... 256: 7 pairs.
    const std::vector<int> clear = spin_runs(kShort, 1000);
    REQUIRE(clear.size() >= 4);
    CHECK(clear[0] == SpinPolicy::kExploitMin);
    CHECK(clear[3] == SpinPolicy::kExploitMaxSpin);
    // A close call still doubles: calls of 15 µs whose waits of 10 µs a
    // spin catches and a sleep adds a 20 µs wake-up to (spinning costs 25
    // µs a call, not spinning 45).
    const std::vector<int> close = spin_runs(Step{10 * kUs, 1}, 1000, 15 * kUs);
    REQUIRE(close.size() >= 3);
    CHECK(close[0] == SpinPolicy::kExploitMin);
    CHECK(close[1] == 2 * SpinPolicy::kExploitMin);
    CHECK(close[2] == 4 * SpinPolicy::kExploitMin);
}

TEST_CASE("a fd that never waits spends few calls measuring", "[policy]") {
    // A writer into a pipe that always has room (hackbench's senders): each
    // measuring pair would cost two epochs of non-blocking tries and counts
    // after the call, for nothing; a TrySpin epoch without a wait ends at
    // its first look instead.
    Sim sim;
    const std::uint64_t n = 200 * SpinPolicy::kEpochCalls;
    sim.run(n, Step{0, 100});
    CAPTURE(sim.measuring);
    CHECK(sim.spins == 0);
    // One kEarlyCalls look per exploit run (4, 8, ... 64 epochs).
    CHECK(sim.measuring <= 8 * SpinPolicy::kEarlyCalls);
    CHECK(sim.s.get_phase() == Phase::Plain);
}

TEST_CASE("room_credit: the room a pipe's fill proves free, at half a page a page",
          "[policy][room]") {
    // 16 pages of 4 KiB: an empty pipe keeps one page spare and credits
    // the other 15 at half a page; queued bytes take their pages at half
    // fill, plus the partly read first one.
    CHECK(room_credit(0, 16, 4096) == 15 * 2048);
    CHECK(room_credit(1, 16, 4096) == 13 * 2048);
    CHECK(room_credit(2048, 16, 4096) == 13 * 2048);
    CHECK(room_credit(2049, 16, 4096) == 12 * 2048);
    // Nearly full: no credit, every write looks.
    CHECK(room_credit(13 * 2048, 16, 4096) == 2048);
    CHECK(room_credit(13 * 2048 + 1, 16, 4096) == 0);
    CHECK(room_credit(64 * 1024, 16, 4096) == 0);
    // A pipe of one or two pages never gives credit; a large one is capped.
    CHECK(room_credit(0, 1, 4096) == 0);
    CHECK(room_credit(0, 2, 4096) == 2048);
    CHECK(room_credit(0, 254, 4096) == UINT16_MAX);
    CHECK(room_credit(0, 16, 0) == 0);
}

// ---- fresh fds: the process's prior ---------------------------------------

namespace {

constexpr Step kOneShot{300 * kUs, 6};  // a command substitution: the child must start first

// A shell loop: each fd lives for one read that waits, then the data (and
// EOF). Returns how many of the n fds spun.
std::uint64_t one_shot_fds(Sim& sim, int n) {
    std::uint64_t spun = 0;
    for (int i = 0; i < n; ++i) {
        sim.new_fd();
        if (sim.call(kOneShot)) ++spun;
        sim.call(Step{0, 0});  // EOF
    }
    return spun;
}

// The index (from 1) of the first call that spun in a ping-pong on a new fd
// whose first wait is its peer starting up; 0 if none within n calls.
std::uint64_t first_spin_of_ping_pong(Sim& sim, std::uint64_t n) {
    sim.new_fd();
    if (sim.call(Step{2'000 * kUs, 1})) return 1;
    for (std::uint64_t i = 2; i <= n; ++i)
        if (sim.call(kShort)) return i;
    return 0;
}

}  // namespace

TEST_CASE("a stream of one-shot fds converges to not spinning within a bounded number of fds",
          "[policy][fresh]") {
    // From a new process's prior: no fresh fd spins at all.
    Sim sim;
    CHECK(one_shot_fds(sim, 1000) == 0);
    CHECK(sim.watched == 1000);
    CHECK_FALSE(sim.lane->spins());
    // From a prior that a ping-pong phase made as hopeful as it gets: each
    // miss costs more than a hit gains, so it stops within a few fds.
    Sim hopeful;
    hopeful.lane->score.store(FreshPrior::kScoreMax);
    const std::uint64_t bound = FreshPrior::kScoreMax / FreshPrior::kMissCost + 1;
    CHECK(one_shot_fds(hopeful, 1000) <= bound);
    CHECK(hopeful.spins <= bound);
}

TEST_CASE(
    "a long-lived ping-pong still reaches spinning within its first epoch, whatever the prior",
    "[policy][fresh]") {
    for (std::int8_t score :
         {std::int8_t{0}, std::int8_t{-FreshPrior::kScoreMax}, FreshPrior::kScoreMax}) {
        CAPTURE(int{score});
        Sim sim;
        sim.lane->score.store(score);
        const std::uint64_t first = first_spin_of_ping_pong(sim, SpinPolicy::kEpochCalls);
        CHECK(first >= 1);
        CHECK(first <= SpinPolicy::kFreshWaits + 1);
        // And it converges to spinning as any ping-pong does.
        sim.run(20 * SpinPolicy::kEpochCalls, kShort);
        CHECK(sim.s.get_phase() == Phase::Spin);
    }
}

TEST_CASE("a ping-pong whose first two waits were long spins after one epoch of not spinning",
          "[policy][fresh]") {
    // Both first waits outlast the budget (the peer starting up, then the
    // wake-up of an idle virtual CPU), then every round trip is short: the
    // fd measures after kFreshPlainEpochs epochs, where it slept through
    // kExploitMin (4) before.
    Sim sim;
    sim.new_fd();
    CHECK_FALSE(sim.call(Step{2'000 * kUs, 1}));
    CHECK_FALSE(sim.call(Step{200 * kUs, 1}));
    std::uint64_t first = 0;
    for (std::uint64_t i = 1; i <= 8 * SpinPolicy::kEpochCalls && first == 0; ++i)
        if (sim.call(kShort)) first = i;
    CAPTURE(first);
    CHECK(first >= 1);
    CHECK(first <= 2 * SpinPolicy::kEpochCalls);  // 4 epochs: 256
    sim.run(20 * SpinPolicy::kEpochCalls, kShort);
    CHECK(sim.s.get_phase() == Phase::Spin);
}

TEST_CASE("the prior learns from watched waits: short first waits turn spinning on for fresh fds",
          "[policy][fresh]") {
    // A process whose fresh fds answered late learns that its new fds now
    // answer at once (a pool of workers that is warm): the waits it timed
    // without spinning are the evidence, no spin is wasted to get it.
    Sim sim;
    one_shot_fds(sim, 100);
    REQUIRE(sim.lane->score.load() == -FreshPrior::kScoreMax);
    int fds = 0;
    bool spun = false;
    while (!spun && fds < 100) {
        sim.new_fd();
        ++fds;
        spun = sim.call(kShort);
        sim.call(Step{0, 0});
    }
    CHECK(spun);
    // Each short wait gains kHitGain: from the bottom to spinning.
    CHECK(fds <= FreshPrior::kScoreMax / FreshPrior::kHitGain + 2);
}

TEST_CASE("a fresh fd's experiment starts with what its own first waits said", "[policy][fresh]") {
    Sim sim;
    sim.new_fd();
    sim.call(Step{2'000 * kUs, 1});
    sim.call(Step{2'000 * kUs, 1});
    CHECK(sim.s.get_phase() == Phase::Plain);  // neither was short: a run of not spinning first
    CHECK(sim.s.exploit_left.load() == SpinPolicy::kFreshPlainEpochs);
    sim.new_fd();
    sim.call(Step{2'000 * kUs, 1});
    sim.call(kShort);
    CHECK(sim.s.get_phase() == Phase::TrySpin);
    // A fresh fd that does not wait by its kEarlyCalls-th call will not.
    sim.new_fd();
    sim.run(SpinPolicy::kEarlyCalls, Step{0, 100});
    CHECK(sim.s.get_phase() == Phase::Plain);
}

// ---- a peer on this thread's CPU -------------------------------------------

namespace {

// A fd whose peer needs this thread's CPU, from a measuring epoch on: within
// that epoch kCloseMissLimit spins, then none; in the long run
// kCloseMissLimit spins per measuring pair, and the pairs come round after
// 4, 8, ... 64 epochs of not spinning.
void check_spins_for_a_peer_on_this_cpu(Sim& sim) {
    sim.s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    const Step peer{2 * kUs, 1};
    const std::uint64_t first = sim.run(SpinPolicy::kEpochCalls, peer);
    CAPTURE(first);
    CHECK(first == SpinPolicy::kCloseMissLimit);
    const std::uint64_t epochs = 400;
    const std::uint64_t spun = sim.run(epochs * SpinPolicy::kEpochCalls, peer);
    CAPTURE(spun);
    CHECK(spun <= (epochs / SpinPolicy::kExploitMax + 6) * SpinPolicy::kCloseMissLimit);
    // Each measuring pair ends with its TrySpin epoch's close misses: the
    // rest of that epoch and a TryPlain epoch would only measure not
    // spinning, each call on the engine's full path.
    const std::uint64_t pairs = (first + spun) / SpinPolicy::kCloseMissLimit;
    CAPTURE(pairs, sim.measuring);
    CHECK(sim.measuring <= pairs * (SpinPolicy::kCloseMissLimit + 1));
}

}  // namespace

TEST_CASE(
    "a peer that needs this thread's CPU: spinning stops after two misses it answered at once",
    "[policy][colocated]") {
    // Python's os.pipe ping-pong with both ends on one CPU: a plain round
    // trip is a direct switch (~2-3 µs); a spin holds the CPU the peer
    // needs, misses, and the peer answers as soon as it stops.
    Sim sim;
    sim.colocated = true;
    sim.wake_ns = 1 * kUs;  // a switch on the same CPU
    check_spins_for_a_peer_on_this_cpu(sim);
}

TEST_CASE("a peer on this CPU: each repeat of not spinning is trusted 4x longer",
          "[policy][colocated]") {
    // Close misses end the measuring pair with a clear verdict (a spin on
    // the peer's CPU costs about twice a plain round trip): the runs of not
    // spinning grow 4, 16, 64 epochs, as a ping-pong's spinning does, where
    // doubling (4, 8, 16, 32) put a measuring pair and its spins into each
    // 1000 round trips of a pair pinned to one CPU three times.
    Sim sim;
    sim.colocated = true;
    sim.wake_ns = 1 * kUs;
    sim.s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    const Step peer{2 * kUs, 1};
    std::vector<unsigned> runs;
    Phase before = Phase::TrySpin;
    for (std::uint64_t i = 0; i < 200 * SpinPolicy::kEpochCalls && runs.size() < 3; ++i) {
        sim.call(peer);
        const Phase now = sim.s.get_phase();
        if (before != Phase::Plain && now == Phase::Plain) runs.push_back(sim.s.exploit_len.load());
        before = now;
    }
    CHECK(runs == std::vector<unsigned>{SpinPolicy::kExploitMin, 4u * SpinPolicy::kExploitMin,
                                        SpinPolicy::kExploitMax});
}

TEST_CASE("a peer on this CPU that answers during the spin's yield: no hit, spinning stops",
          "[policy][colocated]") {
    // Both ends pinned to one CPU (tools/bench/scripts/onecpu.sh): each
    // spin gives the CPU away at its yield, the peer answers, and the spin
    // returns the answer without a sleep, but only because it stopped
    // spinning. Counted as hits, these spins would win every measuring
    // epoch and go on costing each round trip the looks before the yield.
    Sim sim;
    sim.yields_to_peer = true;
    sim.wake_ns = 1 * kUs;
    check_spins_for_a_peer_on_this_cpu(sim);
    // Nor does such a spin tell a fresh fd's prior that spinning catches
    // first waits.
    Sim fresh;
    fresh.yields_to_peer = true;
    fresh.prior.lane(Origin::Made, 0).score.store(1);  // spins
    fresh.call(kShort);
    CHECK(fresh.spins == 1);
    CHECK_FALSE(fresh.lane->spins());
}

TEST_CASE("a spinning pair the scheduler puts on one CPU spins through its yields, a while",
          "[policy][colocated]") {
    // perf bench sched pipe: a pair that spun spread sleeps through a
    // measuring epoch, and a wake-up pulls the reader to its writer's CPU.
    // Spinning on there, each spin yields to the peer and catches its
    // answer, and the yielder stays runnable: what the balancer spreads.
    // Stopping after two such spins (the close-miss rule) left the pair
    // sleeping in turn on one CPU, which no balancer spreads.
    Sim sim;
    sim.run(40 * SpinPolicy::kEpochCalls, kShort);
    // At the start of an epoch of a run with epochs to go.
    for (int i = 0; i < 4000 && !(sim.s.get_phase() == Phase::Spin &&
                                  sim.s.exploit_left.load() >= 3 && sim.s.epoch_calls.load() <= 1);
         ++i)
        sim.call(kShort);
    REQUIRE(sim.s.get_phase() == Phase::Spin);
    REQUIRE(sim.s.epoch_calls.load() <= 1);
    sim.yields_to_peer = true;
    CHECK(sim.run(SpinPolicy::kYieldHitLimit - 1, kShort) == SpinPolicy::kYieldHitLimit - 1);
    CHECK(sim.s.get_phase() == Phase::Spin);
    // Pinned there for good: the run ends once an epoch without a hit of
    // its own has had kYieldHitLimit of them, and the measuring epochs
    // that follow stop after kCloseMissLimit each, as for any peer on this
    // CPU.
    const std::uint64_t epochs = 400;
    const std::uint64_t spun = sim.run(epochs * SpinPolicy::kEpochCalls, kShort);
    CAPTURE(spun);
    CHECK(spun <= 2 * SpinPolicy::kEpochCalls + SpinPolicy::kYieldHitLimit +
                      (epochs / SpinPolicy::kExploitMax + 6) * SpinPolicy::kCloseMissLimit);
    CHECK(sim.s.last_winner.load() == static_cast<std::uint8_t>(Phase::Plain));
}

TEST_CASE("a spread ping-pong whose spins now and then yield to another task keeps spinning",
          "[policy][colocated]") {
    // One spin in five outlasts the looks before the yield and gives the
    // CPU to some other task (a kernel thread), then catches its answer:
    // among hits, a yield that ran another task stops nothing.
    Sim sim;
    sim.run(40 * SpinPolicy::kEpochCalls, kShort);
    const std::uint64_t before = sim.spins;
    const int n = 100 * static_cast<int>(SpinPolicy::kEpochCalls);
    for (int i = 0; i < n; ++i) {
        sim.yields_to_peer = i % 5 == 0;
        sim.call(kShort);
    }
    CHECK(sim.spins - before > static_cast<std::uint64_t>(n) * 8 / 10);
}

TEST_CASE("a spread ping-pong whose peer wakes slowly at first keeps its spinning epoch",
          "[policy][colocated]") {
    // Both ends leave a run of not spinning at about the same time (the
    // drift rule, once the pair is spread): the first spins of one end wait
    // for the other to wake from its last plain sleep, an idle vCPU's
    // wake-up that outlasts the budget (a trace of perf bench sched pipe:
    // spins of 50 µs, then blocks of 58 and 35 µs; here two of ~80 µs).
    // Neither is a close miss (block < spin) nor a long wait. A rule that
    // counted every miss without a hit (tried and reverted) cut the epoch
    // there: it measured sleeps, not spinning won, and the pair slept
    // through 64 epochs of cross-CPU round trips, 90 ms of a 165 ms run.
    Sim sim;
    sim.s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    const Step waking{110 * kUs, 1};  // 50 µs of spin, then ~60 µs blocked
    sim.call(waking);
    sim.call(waking);
    CHECK(sim.run(SpinPolicy::kEpochCalls - 2, kShort) >= SpinPolicy::kEpochCalls - 3);
    sim.run(4 * SpinPolicy::kEpochCalls, kShort);
    CHECK(sim.s.last_winner.load() == static_cast<std::uint8_t>(Phase::Spin));
}

TEST_CASE("both ends spinning on one CPU: spinning stops after two misses spent waiting for it",
          "[policy][colocated]") {
    // perf bench sched pipe's workers forked onto one CPU, both ends in
    // their first measuring epoch: each spin misses, and the real call then
    // blocks through the peer's spin (a 50 µs spin, a 56 µs block, 51.6 µs
    // of it runnable: tools/bench/rundelay.sh). Neither a close miss by its
    // timing nor a long wait; without the run delay the epoch spun on every
    // call (108 µs round trips, 7 ms of a 50 ms run in a trace).
    Sim sim;
    sim.both_spin_here = true;
    sim.wake_ns = 1 * kUs;
    check_spins_for_a_peer_on_this_cpu(sim);
    // A look only after a missed spin, and never more than kRunDelayLooks an epoch.
    CHECK(sim.delay_looks <= sim.spins);
    CHECK(sim.delay_looks >= SpinPolicy::kCloseMissLimit);
}

TEST_CASE("the run delay is read at most kRunDelayLooks times an epoch, and only before a hit",
          "[policy][colocated]") {
    PolicyState s;
    const PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    for (Phase phase : {Phase::Fresh, Phase::TryPlain, Phase::Plain}) {
        s.phase.store(static_cast<std::uint8_t>(phase));
        CHECK_FALSE(SpinPolicy::looks_at_run_delay(s, p));
    }
    for (Phase phase : {Phase::TrySpin, Phase::Spin}) {
        s.reset();
        s.phase.store(static_cast<std::uint8_t>(phase));
        for (int i = 0; i < SpinPolicy::kRunDelayLooks; ++i)
            CHECK(SpinPolicy::looks_at_run_delay(s, p));
        CHECK_FALSE(SpinPolicy::looks_at_run_delay(s, p));
        s.reset();
        s.phase.store(static_cast<std::uint8_t>(phase));
        s.epoch_hit.store(1);
        CHECK_FALSE(SpinPolicy::looks_at_run_delay(s, p));
    }
    // Fixed mode and hinted fds do not learn: nothing to read it for.
    s.reset();
    s.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    const PolicyParams fixed{Mode::Fixed, kCeiling, 2, false};
    CHECK_FALSE(SpinPolicy::looks_at_run_delay(s, fixed));
    s.set_hint(5000);
    CHECK_FALSE(SpinPolicy::looks_at_run_delay(s, p));
    // Only a miss that was neither close by its timing nor long needs the second read.
    WaitObservation o;
    o.spun = true;
    o.budget_ns = 50 * kUs;
    o.spin_ns = 50 * kUs;
    o.block_ns = 56 * kUs;
    CHECK(SpinPolicy::run_delay_matters(o));
    o.block_ns = 10 * kUs;  // a close miss already
    CHECK_FALSE(SpinPolicy::run_delay_matters(o));
    o.block_ns = 400 * kUs;  // a long wait
    CHECK_FALSE(SpinPolicy::run_delay_matters(o));
    o.block_ns = 56 * kUs;
    o.spin_hit = true;
    CHECK_FALSE(SpinPolicy::run_delay_matters(o));
}

TEST_CASE("a spread ping-pong whose peer is sometimes late keeps spinning", "[policy][colocated]") {
    // One answer in ten comes after the budget, and right after it: a close
    // miss among hits, not a peer that needs this CPU.
    Sim sim;
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> late(0, 9);
    auto step = [&] { return late(rng) == 0 ? Step{60 * kUs, 1} : kShort; };
    for (int i = 0; i < 40 * static_cast<int>(SpinPolicy::kEpochCalls); ++i) sim.call(step());
    const std::uint64_t before = sim.spins;
    const int n = 100 * static_cast<int>(SpinPolicy::kEpochCalls);
    for (int i = 0; i < n; ++i) sim.call(step());
    CHECK(sim.spins - before > static_cast<std::uint64_t>(n) * 8 / 10);
}

TEST_CASE("a ping-pong that stopped spinning while co-located spins again once spread",
          "[policy][colocated]") {
    // perf bench sched pipe: the pair starts on one CPU, where not spinning
    // wins (a plain round trip is a direct switch), and is trusted for
    // ever longer runs; then the load balancer gives each end a CPU, and
    // every plain round trip becomes a cross-CPU wake-up. The run of not
    // spinning must not go on blind for up to kExploitMax epochs: its
    // epochs now cost several times what a call cost when not spinning won.
    Sim sim;
    sim.colocated = true;
    sim.wake_ns = 1 * kUs;
    const Step peer{2 * kUs, 1};
    sim.run(200 * SpinPolicy::kEpochCalls, peer);
    // Until it is trusted not to spin for its longest run.
    for (int i = 0; i < 200 * static_cast<int>(SpinPolicy::kEpochCalls) &&
                    !(sim.s.get_phase() == Phase::Plain &&
                      sim.s.exploit_len.load() == SpinPolicy::kExploitMax);
         ++i)
        sim.call(peer);
    REQUIRE(sim.s.get_phase() == Phase::Plain);
    REQUIRE(sim.s.exploit_len.load() == SpinPolicy::kExploitMax);
    // Wherever in its run the change finds it, it spins again within an
    // epoch of not spinning, the measuring pair, and a little slack.
    sim.colocated = false;
    sim.wake_ns = 20 * kUs;
    std::uint64_t calls = 0;
    while (sim.s.get_phase() != Phase::Spin && calls < 200 * SpinPolicy::kEpochCalls) {
        sim.call(peer);
        ++calls;
    }
    CAPTURE(calls);
    CHECK(calls <= 4 * SpinPolicy::kEpochCalls);
    CHECK(sim.cut_short == 1);
}

TEST_CASE("a run of not spinning whose cost moves within the drift factor is not cut short",
          "[policy]") {
    // A sparse reader whose producer changes pace, 2 ms and 6 ms between
    // bytes, every 5 epochs: within kDriftFactor of what not spinning cost
    // when it won, so no run of not spinning is cut short (each would cost
    // a measuring pair and its wasted spins). The runs grow to their
    // longest; where they stand at the end depends on where the pace
    // changes fell (a measuring pair whose TrySpin epoch met the fast pace
    // and its TryPlain epoch the slow one starts the runs again).
    Sim sim;
    std::uint64_t n = 0;
    auto step = [&] {
        const bool slow = (n++ / (5 * SpinPolicy::kEpochCalls)) % 2 == 1;
        return Step{(slow ? 6'000 : 2'000) * kUs, 1};
    };
    std::uint16_t longest = 0;
    for (std::uint64_t i = 0; i < 400 * SpinPolicy::kEpochCalls; ++i) {
        sim.call(step());
        longest = std::max(longest, sim.s.exploit_len.load());
    }
    CHECK(longest == SpinPolicy::kExploitMax);
    CHECK(sim.cut_short == 0);
}

namespace {
long g_running = 0;
int g_looks = 0;
long fake_running() noexcept {
    ++g_looks;
    return g_running;
}

// A gate on a 2-CPU host, the clock and the run queue simulated.
struct GateSim {
    RunQueueGate gate;
    PolicyState s;
    PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    GateSim() {
        g_now = 1'000'000'000;
        g_looks = 0;
    }
    bool free() { return gate.cpu_free_for_peer(s, p, fake_now, fake_running); }
};
}  // namespace

TEST_CASE("the run-queue gate: adaptive, unhinted fds only, one look per period",
          "[policy][gate]") {
    GateSim g;
    g_running = 3;    // more runnable tasks than the 2 CPUs
    CHECK(g.free());  // one look: not yet
    CHECK(g_looks == 1);
    g_now += RunQueueGate::kPeriodNs;
    CHECK_FALSE(g.free());  // two in a row
    CHECK(g_looks == 2);
    // Within the period the last answer stands, whatever the run queue says.
    g_running = 1;
    g_now += RunQueueGate::kPeriodNs - 1;
    CHECK_FALSE(g.free());
    CHECK(g_looks == 2);
    g_now += 1;
    CHECK(g.free());  // one free look ends it
    CHECK(g_looks == 3);
    // An unreadable run queue never refuses.
    g_running = -1;
    g_now += RunQueueGate::kPeriodNs;
    CHECK(g.free());
    // Fixed mode and hinted fds spin whatever the load: no look at all.
    g_running = 100;
    g_now += RunQueueGate::kPeriodNs;
    const int looks = g_looks;
    PolicyParams fixed = g.p;
    fixed.mode = Mode::Fixed;
    CHECK(g.gate.cpu_free_for_peer(g.s, fixed, fake_now, fake_running));
    g.s.set_hint(5000);
    CHECK(g.free());
    CHECK(g_looks == looks);
}

TEST_CASE("the run-queue gate: a third task runnable for a moment refuses no spin",
          "[policy][gate]") {
    // On an idle 2-CPU host a spinning ping-pong keeps 2 tasks runnable, and
    // a kernel thread or a shell makes it 3 in about one look in fifty, never
    // two looks in a row (measured: docs/policy.md, part 4). Each refusal
    // would land in some fd's epoch and cost it its spinning there; a host
    // that stays oversubscribed is still refused from its second look on.
    GateSim g;
    std::mt19937 rng(7);
    g_running = 2;
    int refused = 0;
    int transients = 0;
    for (int look = 0; look < 2000; ++look) {
        // One look in about ten sees a third task, never two in a row.
        g_running = g_running == 2 && rng() % 10 == 0 ? 3 : 2;
        transients += g_running == 3;
        if (!g.free()) ++refused;
        g_now += RunQueueGate::kPeriodNs;
    }
    CHECK(g_looks == 2000);
    CHECK(transients > 100);
    CHECK(refused == 0);
    // Oversubscribed for good, by one task more than the CPUs: every look
    // from the second on refuses.
    g_running = 3;
    refused = 0;
    for (int look = 0; look < 100; ++look) {
        if (!g.free()) ++refused;
        g_now += RunQueueGate::kPeriodNs;
    }
    CHECK(refused == 99);
    // Far more tasks than CPUs (hackbench's 160 processes on 2): no task
    // passing by does that, and the first look refuses.
    g_running = 2;
    CHECK(g.free());
    g_now += RunQueueGate::kPeriodNs;
    g_running = 160;
    CHECK_FALSE(g.free());
    g_now += RunQueueGate::kPeriodNs;
    g_running = 5;  // 2 x 2 CPUs + 1
    CHECK_FALSE(g.free());
}

namespace {

// Every field of a PolicyState, as numbers, for comparing two.
std::vector<std::uint64_t> fields_of(const PolicyState& s) {
    std::vector<std::uint64_t> v;
#define PIPESPIN_FIELD(type, name, what) v.push_back(static_cast<std::uint64_t>(s.name.load()));
    PIPESPIN_POLICY_FIELDS(PIPESPIN_FIELD)
#undef PIPESPIN_FIELD
    v.push_back(s.hint.load());
    return v;
}

// Runs of one kind of call (a stream that never waits, a ping-pong, a
// sparse producer, a slow one), of random lengths, from one seed.
std::vector<Step> mixed_workload(unsigned seed, std::size_t n) {
    std::mt19937 rng(seed);
    const Step kinds[] = {{0, 4096}, kShort, kSparse, {200 * kUs, 100}, {0, 100}};
    std::vector<Step> out;
    while (out.size() < n) {
        const Step k = kinds[rng() % std::size(kinds)];
        for (std::size_t len = 1 + rng() % 3000; len > 0 && out.size() < n; --len) out.push_back(k);
    }
    return out;
}

}  // namespace

TEST_CASE("calls counted on the fast lane leave the state as the full path does", "[policy]") {
    // The engine's fast lane counts most calls of a run of not spinning
    // without asking budget_ns() or count_early(), and settles them later:
    // the policy must not be able to tell, once what the lane counted is
    // added to the epoch.
    const std::vector<Step> work = mixed_workload(15, 60'000);
    std::vector<std::vector<std::uint64_t>> full_states;
    std::uint64_t full_spins = 0;
    {
        Sim full;
        for (const Step& st : work) {
            full.call(st);
            full_states.push_back(fields_of(full.s));
        }
        full_spins = full.spins;
    }
    Sim fast;
    fast.plain_inline = true;
    constexpr std::size_t kEpochCallsField = 4;  // PIPESPIN_POLICY_FIELDS' fifth
    std::uint64_t pending_seen = 0;
    for (std::size_t i = 0; i < work.size(); ++i) {
        fast.call(work[i]);
        std::vector<std::uint64_t> seen = fields_of(fast.s);
        if (fast.lane_pending() != 0) ++pending_seen;
        seen[kEpochCallsField] += fast.lane_pending();
        INFO("call " << i);
        REQUIRE(seen == full_states[i]);
    }
    CHECK(fast.spins == full_spins);
    // The lane counted most calls of the runs of not spinning, and the
    // comparison saw lanes with calls pending.
    CHECK(fast.inline_calls > work.size() / 4);
    CHECK(pending_seen > 0);
    CHECK(full_spins > 0);
}

TEST_CASE("inline_run: the calls of a Plain epoch between its first and its last", "[policy]") {
    PolicyState s;
    s.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    s.epoch_calls.store(0);
    CHECK(SpinPolicy::inline_run(s) == 0);  // the first call may start the clock
    s.epoch_calls.store(1);
    CHECK(SpinPolicy::inline_run(s) == SpinPolicy::kEpochCalls - 2);
    s.epoch_calls.store(SpinPolicy::kEpochCalls - 2);
    CHECK(SpinPolicy::inline_run(s) == 1);
    s.epoch_calls.store(SpinPolicy::kEpochCalls - 1);
    CHECK(SpinPolicy::inline_run(s) == 0);  // the next call ends the epoch
    s.epoch_calls.store(1);
    s.hint.store(kHintNever);
    CHECK(SpinPolicy::inline_run(s) == 0);  // a hinted fd: the hint decides
    s.hint.store(kHintNone);
    for (Phase ph : {Phase::Fresh, Phase::TrySpin, Phase::TryPlain, Phase::Spin}) {
        s.phase.store(static_cast<std::uint8_t>(ph));
        CHECK(SpinPolicy::inline_run(s) == 0);
    }
    s.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    SpinPolicy::settle_inline(s, 5);
    CHECK(s.epoch_calls.load() == 6);
}

TEST_CASE("a run of not spinning leaves the fast lane once an epoch", "[policy]") {
    // A stream that always finds its pipe ready: after its first measuring
    // pair it runs not spinning, its calls counted on the fast lane. The
    // last call of each epoch of the run, which ends it (and times it:
    // kDriftFactor), is also the next epoch's first, so only that one call
    // an epoch reaches the policy, where the first and the last each did
    // (2.0 an epoch).
    Sim sim;
    sim.plain_inline = true;
    const Step ready{0, 100};
    sim.run(20 * SpinPolicy::kEpochCalls, ready);
    const std::uint64_t calls0 = sim.calls, inline0 = sim.inline_calls, measuring0 = sim.measuring;
    sim.run(1000 * SpinPolicy::kEpochCalls, ready);
    const std::uint64_t measuring = sim.measuring - measuring0;
    const std::uint64_t plain = sim.calls - calls0 - measuring;
    const std::uint64_t asked = plain - (sim.inline_calls - inline0);
    CAPTURE(plain, asked, measuring);
    CHECK(measuring > 0);  // it did measure again between its runs
    CHECK(asked * 4 < plain * 5 / SpinPolicy::kEpochCalls);  // under 1.25 calls an epoch
}

TEST_CASE("never_spins: any switch that stops every spin", "[policy]") {
    const PolicyParams p{Mode::Adaptive, kCeiling, 2, false};
    CHECK_FALSE(SpinPolicy::never_spins(true, p));
    CHECK(SpinPolicy::never_spins(false, p));
    PolicyParams q = p;
    q.mode = Mode::Off;
    CHECK(SpinPolicy::never_spins(true, q));
    q = p;
    q.max_spin_ns = 0;
    CHECK(SpinPolicy::never_spins(true, q));
    q = p;
    q.usable_cpus = 1;
    CHECK(SpinPolicy::never_spins(true, q));
    q = p;
    q.thread_off = true;
    CHECK(SpinPolicy::never_spins(true, q));
}
