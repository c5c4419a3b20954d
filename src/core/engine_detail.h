// What the engine's files share (engine.h is the engine's API):
//   engine.cpp          the waits on one fd: read, write, readv, writev,
//                       stdio refills, and after_call();
//   engine_sets.cpp     the waits on sets: poll, select, ppoll, epoll;
//   engine_ticks.cpp    the slow path's periodic work and hooks;
//   engine_runtime.cpp  the process's settings and fd table.
// Only those files include this one.
//
// Everything here runs on the paths engine.h describes: lock-free,
// allocation-free, async-signal-safe, errno left alone. The small helpers
// are inline, so that a wait compiles to what it would in one file; the
// declarations are hidden, so that the shim reaches the process's settings
// and table directly, not through the GOT.
#pragma once

#include <fcntl.h>

#include <cerrno>
#include <cstdint>

#include "core/engine.h"
#include "platform/sys.h"

#pragma GCC visibility push(hidden)

namespace pipespin::engine {

// ---- the process's settings and fd table (engine_runtime.cpp) -------------

extern constinit Runtime g_runtime;

// The process's table is never destroyed (calls may still arrive while the
// process exits: other threads, destructors of other libraries), and being
// trivially destructible, it registers nothing to run at exit.
extern constinit FdTable g_table;

inline FdTable& table() noexcept {
    return g_table;
}

// Unknown fds are classified only while Runtime::classify says so.
inline Classifier classifier() noexcept {
    return g_runtime.classify.load(std::memory_order_relaxed) ? classify_fd : nullptr;
}

// The fd's info, an unknown fd classified on its Runtime::classify_looks-th
// look: for the calls that come back (reads, writes, polls), not for one
// that happens once per fd (epoll_ctl).
inline FdInfo look_up(int fd) noexcept {
    return table().lookup(fd, classifier(),
                          g_runtime.classify_looks.load(std::memory_order_relaxed));
}

// Runtime::fds_all_seen: may a read's look be the read itself?
inline bool fds_trusted() noexcept {
    return g_runtime.fds_all_seen.load(std::memory_order_relaxed);
}

// The fd's origin and direction in the process's fresh-fd prior.
inline FreshPrior::Lane& lane_of(const FdInfo& info, Dir dir) noexcept {
    return g_runtime.prior.lane(info.origin(), static_cast<int>(dir));
}

// ---- the policy's answers, with the process's state -----------------------

// The policy's budget for this fd now (SpinPolicy::budget_ns()).
inline std::uint64_t budget_for(DirState& st, const PolicyParams& params,
                                const FreshPrior::Lane& lane) noexcept {
    return SpinPolicy::budget_ns(st.policy, params, g_runtime.wake, lane);
}

// The run-queue gate (RunQueueGate), with the real clock and run queue.
inline bool cpu_free_for_peer(const PolicyParams& params, const PolicyState& st) noexcept {
    return g_runtime.run_queue.cpu_free_for_peer(st, params, sys::now_ns, sys::running_tasks);
}

// The slow path's periodic work may just have switched the process to the
// control arm (ab_period) or reloaded mode off: a wait that has not spun yet
// follows it at once.
inline bool turned_off() noexcept {
    return g_runtime.mode.load(std::memory_order_relaxed) == Mode::Off;
}

// ---- the slow path's periodic work and hooks (engine_ticks.cpp) -----------

// The statistics tick (interval lines, A/B switches), once its deadline has
// passed.
void maybe_stats_tick() noexcept;
// The live re-check of the config file, once reload_ms has passed.
void maybe_reload() noexcept;

// A call is about to spin or block (or nothing spins, see
// SpinPolicy::never_spins): the statistics tick and the live re-check.
inline void slow_path_hooks() noexcept {
    maybe_stats_tick();
    maybe_reload();
}

// A spin is about to start: the deferred work that only a spin needs
// (Runtime::spin_hook).
inline void before_spin() noexcept {
    const SpinHook hook = g_runtime.spin_hook.load(std::memory_order_acquire);
    if (hook == nullptr) [[likely]]
        return;
    const int saved_errno = errno;
    hook();
    sys::restore_errno(saved_errno);
}

// ---- one spin --------------------------------------------------------------

enum class SpinEnd : std::uint8_t { Ready, Answer, Exhausted, Interrupted, NonBlocking };

// A spin reads the clock for its budget after every kClockEvery looks (and
// once when it ends).
constexpr unsigned kClockEvery = 4;

// A spin that has not seen its answer by its kYieldAt-th look gives its CPU
// away once (sched_yield): a peer that needs this very CPU (the scheduler
// put both ends on one) runs now, where it would otherwise wait for the
// whole budget to be burnt, and the spin's next look sees its answer. A
// yield with nobody else to run returns as a look does (one system call);
// one that lasted more than kYieldAwayLooks looks' time ran another task on
// this CPU, and the spin reports it (SpinPolicy::on_wait: a spin that only
// gave the CPU away is no hit). At 8 looks a spread ping-pong's spins,
// which see their answer within a few looks, never yield.
constexpr unsigned kYieldAt = 8;
constexpr std::uint64_t kYieldAwayLooks = 3;
static_assert(kYieldAt % kClockEvery == 0, "the yield is decided where the clock is read");

// A spin looks this many times before it asks whether the fd is in
// non-blocking mode: an EAGAIN is delayed by at most these few looks (a
// few µs), while a peer that answers within them costs no extra system
// call. At 2 looks every spin of a spread ping-pong paid an F_GETFL, and a
// round trip in fixed mode 0.03-0.06 µs more (`perf_ab.sh`, 51 rounds).
// At the look that may yield, and before it: a non-blocking fd's EAGAIN
// must not wait for the tasks a yield lets run first (at 16 looks, a
// spin that yielded to a busy CPU's tasks could outlast its budget before
// it asked, and count as a spin).
constexpr unsigned kNonBlockCheckAt = kYieldAt;

// What one look at the fd (or the set) found.
enum class Look : std::uint8_t {
    Pending,  // not ready: keep spinning
    Ready,    // the real call will not block now (ready, hung up, or an error it will report)
    Answer,   // the look was the operation itself and succeeded: its result is the answer
};

// The file a read or write began on. A spin looks at the fd *number*; if
// another thread closes or dup2()s that number meanwhile, the next look
// would see the new file, where a blocking call already in the kernel would
// have kept waiting on the pipe it began on. The shim holds no reference of
// its own (an fd of ours would be one the program can see, close, leak or
// have replaced under it); instead every look first checks that the number
// still names the file the call began on (FdInfo::current(): one load of
// the class word, which every close, dup2, dup3, close_range and F_DUPFD
// the shim sees bumps). When it does not, the spin ends and the real call
// goes to the kernel on the number, as if the program had entered the
// kernel just then: an outcome of the program's own race between its call
// and the other thread's close, as if its thread had been preempted before
// the call (the spin lengthens the race's window, it adds no outcome).
struct Fd {
    int fd;
    FdInfo info;  // what the table said when the call began (info.cls null: untracked)
    bool same_file() const noexcept { return info.cls == nullptr || info.current(); }
};

// The kernel's word on fd's O_NONBLOCK now (one F_GETFL); a fd that is gone
// counts as non-blocking: its call gets the real call's answer at once.
inline bool non_blocking_now(int fd) noexcept {
    const long fl = sys::getfl(fd);
    return fl < 0 || (fl & O_NONBLOCK) != 0;
}

// Spins until the look reports progress, the budget runs out, or a signal
// handler runs on this thread (the blocking call would have been interrupted).
// With an Fd it also stops when the fd turns out to be in non-blocking mode
// (the program must get its EAGAIN, not a spin) or no longer names the file
// the call began on (see Fd). `mark` holds the signal epochs as they were
// before the first look at the fd, so that a handler that ran during that
// look counts too. Each look comes after a cancellation point: a look may
// be the call itself (Look::Answer), and the blocking call would have acted
// on a pending cancellation before it consumed or wrote anything.
// `away_ns` gets how long the spin's yield lasted if it ran another task
// (kYieldAt), else 0: a part of spent_ns this thread was off its CPU.
template <class Step>
[[gnu::always_inline]] inline SpinEnd spin(const SignalMark& mark, std::uint64_t budget_ns,
                                           std::uint64_t& spent_ns, Step&& step,
                                           const Fd* on = nullptr,
                                           std::uint64_t* ended_ns = nullptr,
                                           std::uint64_t* away_ns = nullptr) {
    const std::uint64_t start = sys::now_ns();
    const std::uint64_t deadline = start + budget_ns;
    spent_ns = 0;
    // The spin's end on the clock: its length, and when it ended (where the
    // real call that follows is timed from).
    const auto ended = [&](std::uint64_t now) noexcept {
        spent_ns = now - start;
        if (ended_ns != nullptr) *ended_ns = now;
    };
    // A spin reads O_NONBLOCK from the kernel (the table's bit is only what
    // was last seen, FdTable::set_nonblock): a dup, fcntl, FIONBIO or
    // another process sharing the file description may have changed it. A
    // non-blocking fd (or one that is gone) gets the real call's answer,
    // never a spin's EINTR.
    // A handler ran: the next look is the last (see below).
    bool last = false;
    // No pause between looks: each is a system call, far longer than a
    // pause, which only delays the look that sees the answer (a round trip
    // in fixed mode: 0.04 µs more with it).
    for (unsigned i = 1;; ++i) {
        if (on != nullptr) {
            if (i == kNonBlockCheckAt && !last && non_blocking_now(on->fd)) {
                ended(sys::now_ns());
                return SpinEnd::NonBlocking;
            }
            if (!on->same_file()) {
                ended(sys::now_ns());
                return SpinEnd::Ready;  // the kernel decides, on what the number names now
            }
        }
        // Deferred cancellation: the blocking call would be a cancellation
        // point, so the spin is one too (no-op unless a cancel is pending).
        sys::test_cancel();
        const Look look = step(i);
        if (look != Look::Pending || last) {
            ended(sys::now_ns());
            if (look == Look::Answer) return SpinEnd::Answer;
            if (look == Look::Ready) return SpinEnd::Ready;
            return SpinEnd::Interrupted;
        }
        if (mark.handler_ran()) {
            // Before the fd's mode was read: a non-blocking fd's call would
            // have returned at once, with nothing to interrupt.
            if (on != nullptr && i < kNonBlockCheckAt && non_blocking_now(on->fd))
                return SpinEnd::NonBlocking;
            // What came with the signal (the peer's answer, a hang-up) is
            // what the blocking call would have returned: the kernel looks
            // for it before it looks for a signal. One more look, as every
            // look is made (the same file, a cancellation point first).
            last = true;
            continue;
        }
        // The budget, on the clock every kClockEvery looks: a look is a
        // system call of a few hundred ns, the clock a tenth of one, and
        // the budget is tens of µs.
        if (i % kClockEvery == 0) {
            const std::uint64_t now = sys::now_ns();
            if (now >= deadline) {
                ended(now);
                return SpinEnd::Exhausted;
            }
            if (i == kYieldAt) {
                sys::sched_yield();
                const std::uint64_t back = sys::now_ns();
                // (back - now) > kYieldAwayLooks * ((now - start) / i), in integers.
                if (away_ns != nullptr && (back - now) * i > kYieldAwayLooks * (now - start))
                    *away_ns = back - now;
            }
        }
    }
}

// ---- plans and their accounting -------------------------------------------

// The real call that follows is timed (Plan::Timed; after_call() counts it).
inline void time_call(Plan& plan, Plan::Timed how) noexcept {
    plan.timed = how;
    plan.t_call = sys::now_ns();
}

// Per family of hooks (process-wide): only waits that spun count.
inline void count_via(Via via, SpinEnd end) noexcept {
    table().process().count_via(via, end == SpinEnd::Ready || end == SpinEnd::Answer);
}

// `ended_ns`: when the spin ended (spin()), where the real call after it
// is timed from. `away_ns`: how long of `spent` another task had the CPU
// (spin(), which reads both from one clock, the yield within the spin):
// not time spent spinning, though part of the wait.
inline void count_spin(IoCounters& st, Plan& plan, SpinEnd end, std::uint64_t spent,
                       std::uint64_t ended_ns, std::uint64_t away_ns) noexcept {
    const bool hit = end == SpinEnd::Ready || end == SpinEnd::Answer;
    st.spins.fetch_add(1, std::memory_order_relaxed);
    st.spin_ns.fetch_add(spent - away_ns, std::memory_order_relaxed);
    if (hit) st.spin_hits.fetch_add(1, std::memory_order_relaxed);
    plan.obs.spun = true;
    plan.obs.spin_hit = hit;
    plan.obs.spin_ns = spent;
    plan.obs.gave_cpu = away_ns != 0;
    plan.action = end == SpinEnd::Interrupted ? Plan::Action::Interrupted : Plan::Action::Call;
    plan.t_call = ended_ns;
}

// A spin missed and the real call follows: if the policy asks, read the
// thread's run delay now, and after the call (after_call()) see how much of
// its block was spent waiting for a CPU. The call's clock starts after the
// read.
inline void watch_run_delay(Plan& plan, PolicyState& ps, const PolicyParams& params,
                            SpinEnd end) noexcept {
    // A spin whose yield ran another task is a close miss already.
    if (end != SpinEnd::Exhausted || plan.obs.gave_cpu ||
        !SpinPolicy::looks_at_run_delay(ps, params))
        return;
    plan.run_delay_from = sys::run_delay_ns();
    plan.t_call = sys::now_ns();
}

inline Plan done(DirState* dir, long result) noexcept {
    Plan plan;
    plan.action = Plan::Action::Done;
    plan.result = result;
    plan.dir = dir;
    plan.ctr = dir;
    return plan;
}

// A fresh fd whose prior says not to spin would block now: no spin, but the
// real call is timed, so that the process learns whether a spin would have
// caught it (after_call()). A non-blocking fd's EAGAIN teaches nothing:
// after_call() drops results < 0.
inline void watch_wait(Plan& plan, const PolicyParams& params) noexcept {
    plan.obs.watched = true;
    plan.obs.budget_ns = SpinPolicy::spin_ns(params, g_runtime.wake);
    plan.t_call = sys::now_ns();
}

}  // namespace pipespin::engine

#pragma GCC visibility pop
