// The core API the interpose layer calls: "before the real call, should we
// wait, and did the wait already produce the answer?".
//
// Contract for callers (src/interpose): call before_*() first; if it says
// Done, the result is what the real call would have returned (it came from a
// real non-blocking syscall on the same fd) and the real function must not
// be called; if Interrupted, a signal handler ran during the spin and the
// caller fails with EINTR as the blocking call would have; otherwise call the
// real function (on plan.held_fd when set, then close it), then after_call(). Everything here is
// async-signal-safe, lock-free and allocation-free, and leaves errno alone. The before_*() calls
// are not noexcept: a spin is a cancellation point, as the blocking call it stands in for, and a
// pending cancellation unwinds out of it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/fd_table.h"
#include "core/options.h"
#include "core/policy.h"
#include "core/signals.h"

namespace pipespin {

struct Plan {
    enum class Action : std::uint8_t { Call, Done, Interrupted };
    Action action = Action::Call;
    bool per_call = false;      // poll: progress is counted in calls, not bytes
    int timeout_ms = 0;         // poll: what remains of the caller's timeout
    long result = 0;            // Done: >= 0, or -errno
    int held_fd = -1;           // Call: make the real call on this fd and close it
                                // (our reference to the file the call began on)
    DirState* dir = nullptr;    // a tracked pipe: after_call() counts the call
    IoCounters* ctr = nullptr;  // where it counts (dir's own, or the process's poll counters)
    WaitObservation obs;        // obs.spun: a spin ran, after_call() learns from it
    std::uint64_t t_call = 0;   // when the real call was let go
    // select, ppoll, epoll: what remains of the caller's timeout after the
    // spin (-1: none), in ns; the caller rounds it up to its own unit.
    std::int64_t timeout_ns = -1;
    // pselect, ppoll, epoll_pwait with a signal mask: the spin ran under the
    // caller's mask, as the call would wait; the real call must run under it
    // too, then end_wait() puts this one back.
    bool mask_applied = false;
    std::uint64_t old_mask = 0;
};

// Two slow-path hooks the interpose layer registers, each called at most
// once per its period per process, from a call on a tracked pipe that is
// about to spin or block (or, when nothing in the process spins in that
// direction, from any call on a tracked pipe), never from a call that found
// its pipe ready:
//  - statistics lines every stats_interval seconds;
//  - live retuning every reload_ms: look for a changed config file and, if
//    it changed, apply it (configure()).
using StatsTick = void (*)() noexcept;
using ReloadHook = void (*)() noexcept;

// Process-wide settings, constant-initialised so that calls arriving before
// the shim's constructor find sane values. configure() rewrites them while
// other threads read them (a live reload), so every field is a relaxed
// atomic: a call that began under the old values may finish under them.
struct Runtime {
    std::atomic<Mode> mode{Mode::Fixed};
    std::atomic<std::uint64_t> max_spin_ns{50'000};
    std::atomic<int> usable_cpus{2};
    std::atomic<Probe> probe{Probe::Nowait};
    std::atomic<bool> spin_dir[2] = {true, true};  // spin_read, spin_write (indexed by Dir)
    std::atomic<bool> spin_poll{true};             // spin in poll/select/epoll
    // Statistics lines are on, so the bytes each call moved are counted.
    // Otherwise no one reads them, and a call that does not spin is counted
    // before its real call (see settle_early in engine.cpp).
    std::atomic<bool> count_bytes{true};
    // Mode off, and nobody reads the counters (no statistics lines, log
    // below info): no call has anything to do, so none looks at its fd,
    // counts, or runs the slow-path hooks. The process then makes exactly
    // the system calls it would make without the shim (after start-up);
    // the price is that it never looks for a changed config file either.
    std::atomic<bool> inert{false};
    WakeEstimate wake;
    std::atomic<bool> oversubscribed{false};     // from the last look at the run queue
    std::atomic<std::uint64_t> load_next_ns{0};  // when to look again
    std::atomic<StatsTick> stats_tick{nullptr};  // null: no interval lines
    std::atomic<std::uint64_t> stats_period_ns{0};
    std::atomic<std::uint64_t> stats_next_ns{0};
    std::atomic<std::uint32_t> reload_ms{0};  // 0: no re-checks
    std::atomic<std::uint64_t> reload_next_ns{0};
    std::atomic<ReloadHook> reload_hook{nullptr};

    // The policy's view of the settings now.
    PolicyParams params() const noexcept;
};
Runtime& runtime() noexcept;
// The fd table: all zeros at start, so it lives in .bss and costs no page
// until an fd is used.
FdTable& fd_table() noexcept;

// Applies resolved options to every fd (at start-up and on a live reload).
// A change of mode or spin_us restarts what adaptive mode learnt.
void configure(const Options& o, int usable_cpus) noexcept;
// Registers (or, with null or a zero period, removes) the interval writer.
void set_stats_tick(StatsTick tick, std::uint64_t period_ns) noexcept;
// Registers (or, with null, removes) the live re-check; its period is
// reload_ms, set by configure().
void set_reload_hook(ReloadHook hook) noexcept;

// A read or write in two steps, so that the wrapper can hand most calls to
// libc as a tail call: after the real call returns, nothing of the shim's
// runs, not even the wrapper's own return (where every call is separated
// from the next by a process switch, each page touched after a syscall
// costs; docs/policy.md, "What it costs").
//  1. begin_*(): cheap, for every call; leaves errno alone. A null slot
//     means the real call is all there is to do (not a tracked pipe, or a
//     call that will not spin and was already counted).
//  2. continue_*(), only for a non-null slot: the plan, as before_*().
struct Begun {
    FdSlot* slot = nullptr;
    std::uint64_t budget = 0;  // the spin budget; 0: none, count the call after it
};
Begun begin_read(int fd, std::size_t n) noexcept;
Begun begin_write(int fd, std::size_t n) noexcept;
Plan continue_read(Begun b, int fd, void* buf, std::size_t n);
Plan continue_write(Begun b, int fd, const void* buf, std::size_t n);
// Both steps at once.
Plan before_read(int fd, void* buf, std::size_t n);
// Could a wait on fd for `dir` spin now (a tracked pipe, spinning on in
// that direction, the policy's budget for the fd not 0)? For stdio, which
// splits a large fread into waits only when one could spin.
bool may_spin(int fd, Dir dir) noexcept;
Plan before_write(int fd, const void* buf, std::size_t n);
// fds is a struct pollfd array (kept opaque here).
Plan before_poll(void* fds, unsigned long nfds, int timeout_ms);

// ---- the waits that real programs make without calling read() ------------
//
// Each entry point below names the family of hooks it serves (Via, in
// core/stats.h): the process counts spins and hits per family, for the exit
// report, the statistics line's "via" object and `pipespin coverage`.

// stdio refills, splice, tee: the real call reads (or writes) inside libc or
// the kernel, where no probe can stand in for it. Waits, consuming nothing
// (a zero-timeout poll or FIONREAD, never a RWF_NOWAIT read), until fd is
// ready for `dir` or the budget runs out. Never Done; Interrupted exactly
// when a blocking read or write would have failed with EINTR.
Plan before_ready(int fd, Dir dir, Via via);
// readv: as before_read, the nowait look being preadv2 of the same iovecs.
Plan before_readv(int fd, const void* iov, int iovcnt);
// writev: a wait for room (never a nowait look: a vector larger than
// PIPE_BUF may be split), then the real writev.
Plan before_writev(int fd, const void* iov, int iovcnt);
// select and pselect: the sets are the caller's fd_set pointers (any may be
// null), timeout_ns < 0 for none, sigmask the kernel's 8-byte mask or null.
// Never Done (the real call fills in the sets); on Call, the real call gets
// plan.timeout_ns.
Plan before_select(int nfds, void* rfds, void* wfds, void* efds, std::int64_t timeout_ns,
                   const void* sigmask);
// ppoll: as before_poll, with ns and a mask.
Plan before_ppoll(void* fds, unsigned long nfds, std::int64_t timeout_ns, const void* sigmask);
// epoll_ctl succeeded: remember which pipe an epoll set waits on.
void note_epoll_ctl(int epfd, int op, int fd, std::uint32_t events) noexcept;
// epoll_wait, epoll_pwait, epoll_pwait2. Done carries the events a
// zero-timeout epoll_pwait returned (an edge-triggered or one-shot event is
// consumed by it, so that is the answer).
Plan before_epoll_wait(int epfd, void* events, int maxevents, std::int64_t timeout_ns,
                       const void* sigmask);
// After the real call of a plan from the select/ppoll/epoll family (or
// right away for Done/Interrupted): puts the thread's signal mask back.
// Leaves errno alone.
void end_wait(Plan& plan) noexcept;

// Closes a reference a plan held (plan.held_fd) once its real call returned.
void release_hold(int held_fd) noexcept;
// In a child after fork(): closes the references other threads of the
// parent held, which the child must not keep open.
void close_holds_after_fork() noexcept;

// After the real call (or a Done plan): `result` is what the program gets.
void after_call(Plan& plan, long result) noexcept;

// Every counter of the process (closed fds included), for the exit report
// and the statistics lines.
void stats_snapshot(StatsSnapshot& out) noexcept;

}  // namespace pipespin
