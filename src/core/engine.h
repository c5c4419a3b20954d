// The core API the interpose layer calls: "before the real call, should we
// wait, and did the wait already produce the answer?".
//
// Contract for callers (src/interpose): call before_*() first; if it says
// Done, the result is what the real call would have returned (it came from a
// real non-blocking syscall on the same fd) and the real function must not
// be called; if Interrupted, a signal handler ran during the spin and the
// caller fails with EINTR as the blocking call would have; otherwise call the
// real function, then after_call(). Everything here is
// async-signal-safe, lock-free and allocation-free, and leaves errno alone. The before_*() calls
// are not noexcept: a spin is a cancellation point, as the blocking call it stands in for, and a
// pending cancellation unwinds out of it.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "core/control.h"
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
    DirState* dir = nullptr;    // a tracked pipe: after_call() counts the call
    IoCounters* ctr = nullptr;  // where it counts (dir's own, or the process's poll counters)
    FreshPrior::Lane* lane = nullptr;  // the fd's origin and direction (read/write waits)
    WaitObservation obs;               // obs.spun: a spin ran, after_call() learns from it
    std::uint64_t t_call = 0;          // when the real call was let go
    // A missed spin whose block is watched (SpinPolicy::looks_at_run_delay):
    // the thread's run delay before the real call (sys::run_delay_ns); -1 none.
    std::int64_t run_delay_from = -1;
    // select, ppoll, epoll: what remains of the caller's timeout after the
    // spin (-1: none), in ns; the caller rounds it up to its own unit. When
    // no spin ran (obs.spun false) the real call gets the caller's own.
    std::int64_t timeout_ns = -1;
    // Where after_call() counts the wait in the process's histograms
    // (core/stats.h, WaitEnd), and whether it times a real call that no spin
    // preceded: Unlooked, a read made without a look (statistics lines on;
    // a wait if it lasted kPlainFloorNs or more), Pending, a call a look
    // found not ready that could not spin (no CPU free for the peer).
    enum class Timed : std::uint8_t { No, Unlooked, Pending };
    Timed timed = Timed::No;
    StatKind kind = StatKind::Pipe;
    StatDir stat_dir = StatDir::Read;
};

// Two slow-path hooks the interpose layer registers, each called at most
// once per its period per process, from a call on a tracked pipe that is
// about to spin or block (or, when nothing in the process spins in that
// direction, from any call on a tracked pipe), never from a call that found
// its pipe ready:
//  - statistics: interval lines every stats_interval seconds, and the A/B
//    switches of ab_period. Also checked, when a tick is registered, from
//    one read or write in 16 per fd direction of any other kind (a process
//    whose pipes are always ready, or that adaptive mode keeps from
//    spinning, makes no slow-path call; in a run of not spinning without
//    statistics lines, one in 63: see begin_io_full() in engine.cpp), and
//    after every timed read (Plan::Timed), which has the clock in hand.
//    Called once its deadline (coarse monotonic ns) has passed, it returns
//    the next one (0: none);
//  - live retuning every reload_ms: look for a changed config file and, if
//    it changed, apply it (configure()).
using StatsTick = std::uint64_t (*)(std::uint64_t now_ns) noexcept;
using ReloadHook = void (*)() noexcept;
// Called once before a spin starts, while set (the signal layer's deferred
// work: wrapping the handlers installed before spinning was possible, which
// only a spin needs). The hook clears itself.
using SpinHook = void (*)() noexcept;

// Process-wide settings, constant-initialised to what the default options
// resolve to (configure() then writes only what differs: a page written at
// start-up is a page fault in every process), and so that calls arriving
// before the shim's constructor find sane values. configure() rewrites them
// while other threads read them (a live reload), so every field is a
// relaxed atomic: a call that began under the old values may finish under
// them.
struct Runtime {
    static constexpr Options kDefaults{};
    static constexpr unsigned kLazyLooks = 3;  // classify_looks where nothing reads the counters
    static_assert(kLazyLooks <= FdTable::kMaxLooks);
    // configure() has run once (start-up): only later calls can find learnt
    // state to reset.
    std::atomic<bool> configured{false};
    std::atomic<Mode> mode{kDefaults.mode()};
    std::atomic<std::uint64_t> max_spin_ns{std::uint64_t{kDefaults.spin_us} * 1000u};
    std::atomic<int> usable_cpus{2};
    std::atomic<Probe> probe{kDefaults.probe()};
    std::atomic<bool> spin_dir[2] = {kDefaults.spin_read != 0, kDefaults.spin_write != 0};
    std::atomic<bool> spin_poll{kDefaults.spin_poll != 0};  // spin in poll/select/epoll
    // Statistics lines are on, so the bytes each call moved are counted, and
    // a read made without a look is timed (Plan::Timed::Unlooked). Otherwise
    // no one reads them, and a call that does not spin is counted before its
    // real call (settle_early() in engine.cpp).
    std::atomic<bool> count_bytes{!kDefaults.stats.empty()};
    // Mode off, and nobody reads the counters (no statistics lines, log
    // below info): no call has anything to do, so none looks at its fd,
    // counts, records a new pipe or runs the slow-path hooks. The process
    // then makes exactly the system calls it would make without the shim
    // (after start-up); the price is that it never looks for a changed
    // config file either (restart it to turn the shim on).
    std::atomic<bool> inert{false};
    // The fd table has stored an entry, in this process or a parent
    // (FdTable::used_mark): until then closes and dups have nothing in it
    // to keep true (io_table_kept()).
    std::atomic<bool> table_used{false};
    // Every close, dup and fd-sharing clone of this process (and of its
    // parents since their exec) went through the shim's hooks: the fd
    // table may lag behind a close that libc made internally but nothing
    // else. Cleared for good (fds_unseen()) by a raw close, dup or clone
    // through syscall(), or a clone that shares the fd table but not the
    // memory (or the memory but not the fd table): from then on an entry
    // may name a number whose file changed unseen, and reads are not tried
    // on a look (engine.cpp, wait_io()).
    std::atomic<bool> fds_all_seen{true};
    // Moved on by every munmap, mprotect, mremap, mmap over a mapping,
    // pkey_mprotect and shmdt the shim sees (memory_changed()), once
    // map_gen_watched: a caller's poll array or fd_sets that the kernel
    // read at one generation may be read in user space again while it
    // stands (engine_sets.cpp), and not after.
    std::atomic<std::uint32_t> map_gen{0};
    std::atomic<bool> map_gen_watched{false};
    // A fast lane has been armed in this process or a parent (the table's
    // fast_armed(), on this line, which every wrapper reads first: until
    // then io_counted_fast() reads nothing of the table).
    std::atomic<bool> lanes_armed{false};
    WakeEstimate wake;
    FreshPrior prior;  // what the first waits of fresh fds taught the process
    // Unknown fds are classified (a few syscalls, once per fd): only when
    // something may spin or statistics count, so that mode off makes the
    // syscalls the program makes and no more.
    std::atomic<bool> classify{true};
    // On which look an unknown fd is classified (FdTable::lookup): the
    // first where something reads the counters (statistics lines, the exit
    // summary of log=info, the program through pipespin_get_stats: they
    // count every call of every pipe), else the third, so that a file read
    // to its end in one read (a read, the read of EOF, a close: what grep,
    // cat and compilers do with most files) is never classified. A pipe's
    // first two calls then neither spin nor teach the policy anything: a
    // wait or two of a long-lived pipe, and a one-shot inherited pipe would
    // seldom have spun anyway.
    std::atomic<unsigned> classify_looks{kDefaults.stats.empty() ? kLazyLooks : 1u};
    // The program asked for its counters (counters_read()): classify_looks
    // stays 1 through reloads.
    std::atomic<bool> counters_asked{false};
    RunQueueGate run_queue;                       // is a CPU free for the peer (policy.h)
    std::atomic<StatsTick> stats_tick{nullptr};   // null: no interval lines, no switches
    std::atomic<std::uint64_t> stats_next_ns{0};  // its deadline (coarse monotonic ns)
    std::atomic<std::uint32_t> reload_ms{kDefaults.reload_ms};  // 0: no re-checks
    std::atomic<std::uint64_t> reload_next_ns{0};               // 0: a period from the first chance
    std::atomic<ReloadHook> reload_hook{nullptr};
    std::atomic<SpinHook> spin_hook{nullptr};

    // The policy's view of the settings now.
    PolicyParams params() const noexcept {
        PolicyParams p;
        p.mode = mode.load(std::memory_order_relaxed);
        p.max_spin_ns = max_spin_ns.load(std::memory_order_relaxed);
        p.usable_cpus = usable_cpus.load(std::memory_order_relaxed);
        p.thread_off = t_thread_off;
        return p;
    }
};
Runtime& runtime() noexcept;
namespace engine {
// The same object, and the process's fd table, for io_untracked() and
// io_counted_fast() below (engine_runtime.cpp; hidden: the shim reaches
// them directly, not through the GOT).
__attribute__((visibility("hidden"))) extern constinit Runtime g_runtime;
__attribute__((visibility("hidden"))) extern constinit FdTable g_table;
}  // namespace engine
// A read or write that moves no bytes, or any call of an inert process
// (Runtime::inert: mode off with nothing to report), is the real call
// alone. Inline, so that the wrappers test it before anything else of the
// shim's runs: io_inert() first of all (one load; set only once the real
// functions are resolved, by configure() during start-up, and never
// cleared in such a process, which looks for no new settings).
inline bool io_inert() noexcept {
    return engine::g_runtime.inert.load(std::memory_order_relaxed);
}
// Closes and dups must keep the fd table true, once it holds anything: not
// in a process whose table has never stored an entry (an inert one, mode
// off with nothing to report, never stores one; nor does `true`, which
// only closes its stdout at exit), whose closes then do not even look at
// it: a first look is a page fault.
inline bool io_table_kept() noexcept {
    return engine::g_runtime.table_used.load(std::memory_order_acquire);
}
inline bool io_untracked(std::size_t n) noexcept {
    return n == 0 || io_inert();
}
// A call on a pipe in a run of not spinning, counted here and now on the
// fd's fast lane (FdTable::count_fast(): a load, a compare and a store):
// nothing else of the shim's is left to do for it but the real call. The
// wrappers ask it after io_inert() and the zero-byte test (io_untracked()),
// before they call into the engine.
inline bool io_counted_fast(int fd, Dir dir) noexcept {
    return engine::g_runtime.lanes_armed.load(std::memory_order_relaxed) &&
           engine::g_table.count_fast(fd, dir);
}
// The fd table (fd_table.h: nothing mapped until an fd is used).
FdTable& fd_table() noexcept;
// pipe()/pipe2() made these fds (nonblock: with O_NONBLOCK): the table
// records them (not in an inert process, which tracks nothing: see
// Runtime::inert).
void note_pipe(int rfd, int wfd, bool nonblock = false) noexcept;

// The program is about to unmap memory or change its protection
// (Runtime::map_gen): what the kernel read for an earlier call is no longer
// known to be readable.
inline void memory_changed() noexcept {
    if (engine::g_runtime.map_gen_watched.load(std::memory_order_relaxed))
        engine::g_runtime.map_gen.fetch_add(1, std::memory_order_acq_rel);
}

// The program closed fd (close()): what the table knew of it goes. Where fd
// was the read end of a pipe made here, how many calls it lived for tells
// the process whether its pipes are one-shots (FreshPrior, quiet pipes).
void note_close(int fd) noexcept;

// The process's fds may change where the shim cannot see it (a raw close,
// dup or clone through syscall(), a clone sharing the fd table but not the
// memory): Runtime::fds_all_seen, for good.
void fds_unseen() noexcept;

// The program reads its counters (pipespin_get_stats): from now on every
// call of every pipe is counted, a fd not made by pipe() from its first.
void counters_read() noexcept;
// Applies resolved options to every fd (at start-up and on a live reload).
// A change of mode or spin_us restarts what adaptive mode learnt.
void configure(const Options& o, int usable_cpus) noexcept;
// Whether any call in this process may spin under the settings now (mode,
// spin_us, usable CPUs, the spin directions): false exactly when every
// direction never spins. The signal layer wraps handlers only while true.
bool anything_spins() noexcept;
// Registers (or, with null, removes) the statistics tick, first called once
// `deadline_ns` (coarse monotonic ns) has passed.
void set_stats_tick(StatsTick tick, std::uint64_t deadline_ns) noexcept;
// Registers (or, with null, removes) the live re-check; its period is
// reload_ms, set by configure().
void set_reload_hook(ReloadHook hook) noexcept;
// Registers (or, with null, removes) the hook a spin calls before it starts.
void set_spin_hook(SpinHook hook) noexcept;

// A read or write in two steps, so that the wrapper can hand most calls to
// libc as a tail call: after the real call returns, nothing of the shim's
// runs, not even the wrapper's own return (where every call is separated
// from the next by a process switch, each page touched after a syscall
// costs; docs/policy.md, "What it costs").
//  1. begin_*(): cheap, for every call; leaves errno alone. A null state
//     means the real call is all there is to do (not a tracked pipe, or a
//     call that will not spin and was already counted).
//  2. continue_*(), only for a non-null state: the plan, as before_*().
// Two words, returned in registers, so that the wrapper's other paths stay
// tail calls.
struct Begun {
    FdState* state = nullptr;
    // The spin budget (SpinPolicy::budget_ns(): kWatchOnly for a fresh fd
    // that looks but does not spin; at most spin_us's 1 s); 0: none, count
    // the call after it.
    std::uint32_t budget = 0;
    // The generation of the fd's class word the call began with: the
    // second step carries on only where the number still names that file
    // (no close or dup since), without a second look-up.
    std::uint32_t gen = 0;
};
// For a call that io_untracked(n) has let through (the caller tests it:
// a read of 0 bytes must never spin).
Begun begin_read(int fd) noexcept;
Begun begin_write(int fd, std::size_t n) noexcept;
Plan continue_read(Begun b, int fd, void* buf, std::size_t n);
Plan continue_write(Begun b, int fd, const void* buf, std::size_t n);
// Both steps at once.
Plan before_read(int fd, void* buf, std::size_t n);
// Could a wait on fd for `dir` spin now (a tracked pipe, spinning on in
// that direction, the policy's budget for the fd not 0)? For stdio, which
// splits a large fread into waits only when one could spin.
bool may_spin(int fd, Dir dir) noexcept;
// Is fd known to the table as a pipe in pipefs (made by pipe(), or found
// open and classified so), not a FIFO opened by path? Its st_blksize is a
// page, which is what glibc gives a stream on it for a buffer. No
// classification, no system call.
bool known_anonymous_pipe(int fd) noexcept;
Plan before_write(int fd, const void* buf, std::size_t n);
// fds is a struct pollfd array (kept opaque here).
Plan before_poll(void* fds, unsigned long nfds, int timeout_ms);

// ---- the waits that real programs make without calling read() ------------
//
// Each entry point below names the family of hooks it serves (Via, in
// core/stats.h): the process counts spins and hits per family, for the exit
// report, the statistics line's "via" object and `pipespin-bench coverage`.

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
// A caller's timeout in ns: `sec` seconds and `frac` units of `frac_ns` ns
// (a timeval's µs, a timespec's ns, below frac_max). kNoTimeout for one too
// long to matter to a spin (the real call then gets the caller's own),
// kBadTimeout for one the kernel refuses with EINVAL.
inline constexpr std::int64_t kNoTimeout = -1;
inline constexpr std::int64_t kBadTimeout = -2;
constexpr std::int64_t wait_timeout_ns(long long sec, long long frac, std::int64_t frac_ns,
                                       long long frac_max) noexcept {
    constexpr std::int64_t kNsPerSec = 1'000'000'000;
    constexpr std::int64_t kLongest = INT64_MAX / 2;  // ~146 years
    if (sec < 0 || frac < 0 || frac >= frac_max) return kBadTimeout;
    if (sec >= kLongest / kNsPerSec) return kNoTimeout;
    return sec * kNsPerSec + frac * frac_ns;
}

// The select, ppoll and epoll waits, with the caller's signal mask (the
// kernel's 8-byte mask, or null) where the call takes one. The spin keeps
// the kernel's guarantee for that mask: a handler runs because of it only if
// the call fails with EINTR (spin_set() in engine_sets.cpp says how). Never a
// caller's pointer that the kernel would validate is dereferenced before the
// kernel read it, except select's fd_sets (see before_select), and a pollfd
// array the kernel read at the same address, with the same length, in the
// thread's last poll or ppoll that reached it (engine_sets.cpp). A set whose
// pipe will not spin now, outside a measuring epoch, and a set of an array
// read before that holds no pipe, get no first look: the real call only.
//
// select and pselect: the sets are the caller's fd_set pointers (any may be
// null), timeout_ns < 0 for none. Never Done (the real call fills in the
// sets); on Call, the real call gets plan.timeout_ns. The sets are read in
// user space, and only when a fd below nfds is a pipe the shim knows: an
// unreadable set there is a SIGSEGV, where the kernel returns EFAULT.
Plan before_select(int nfds, void* rfds, void* wfds, void* efds, std::int64_t timeout_ns,
                   const void* sigmask);
// ppoll: as before_poll, with ns and a mask.
Plan before_ppoll(void* fds, unsigned long nfds, std::int64_t timeout_ns, const void* sigmask);
// epoll_ctl succeeded: remember which pipe an epoll set waits on.
void note_epoll_ctl(int epfd, int op, int fd, std::uint32_t events) noexcept;
// epoll_wait, epoll_pwait, epoll_pwait2 without a timeout. Done carries the
// events a zero-timeout epoll_pwait returned (an edge-triggered or one-shot
// event is consumed by it, so that is the answer).
Plan before_epoll_wait(int epfd, void* events, int maxevents, std::int64_t timeout_ns,
                       const void* sigmask);
// epoll_pwait2 with a timeout: `ts` is the caller's struct timespec, which
// the kernel reads first (a bad pointer or value is the real call's EFAULT
// or EINVAL, with nothing consumed), and only when the call may spin.
Plan before_epoll_pwait2(int epfd, void* events, int maxevents, const void* ts,
                         const void* sigmask);

// In a child after fork(): what the parent counted is not the child's
// (one word written: FdTable::new_process()), if anybody will read the
// counters (`counters_read`: statistics lines, the exit summary). Otherwise
// the child writes nothing here; a statistics line turned on later by a
// reload calls fd_table().new_process() then.
void after_fork_child(bool counters_read) noexcept;

// After the real call (or a Done plan): `result` is what the program gets.
void after_call(Plan& plan, long result) noexcept;

// Every counter of the process (closed fds included), for the exit report
// and the statistics lines.
void stats_snapshot(StatsSnapshot& out) noexcept;

}  // namespace pipespin
