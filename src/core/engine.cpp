#include "core/engine.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/epoll.h>

#include <algorithm>

#include "core/control.h"
#include "platform/sys.h"

namespace pipespin {

namespace {

constinit Runtime g_runtime;
// The process's table is never destroyed (calls may still arrive while the
// process exits: other threads, destructors of other libraries), and being
// trivially destructible, it registers nothing to run at exit.
PIPESPIN_COLD constinit FdTable g_table;

enum class SpinEnd : std::uint8_t { Ready, Answer, Exhausted, Interrupted, NonBlocking };

// A spin looks this many times before it asks whether the fd is in
// non-blocking mode: an EAGAIN is delayed by at most these few looks (a
// couple of µs), while a peer that answers at once costs no extra syscall.
constexpr unsigned kNonBlockCheckAt = 2;

// What one look at the fd found.
enum class Look : std::uint8_t {
    Pending,  // not ready: keep spinning
    Ready,    // the real call will not block now (ready, hung up, or an error it will report)
    Answer,   // the look was the operation itself and succeeded: its result is the answer
};

constexpr short kDone = sys::kPollHup | sys::kPollErr | sys::kPollNval;

// A zero-timeout poll, or FIONREAD, on one fd.
Look probe_fd(int fd, short events, Probe probe, unsigned iteration) noexcept {
    if (probe == Probe::Fionread && events == sys::kPollIn) {
        long queued = sys::fionread(fd);
        if (queued == -EINTR) return Look::Pending;
        if (queued != 0) return Look::Ready;
        // FIONREAD says 0 both for "empty" and for "writer gone": look for
        // the hang-up every few rounds so that EOF is not delayed.
        if (iteration % 8 != 0) return Look::Pending;
    }
    long rev = sys::poll0_one(fd, events);
    // EINTR: a handler ran during the probe itself. Not ready: the spin's
    // signal check decides what the blocking call would have done.
    if (rev == 0 || rev == -EINTR) return Look::Pending;
    return (rev < 0 || (rev & (events | kDone))) ? Look::Ready : Look::Pending;
}

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
// kernel just then: the window is that of the program's own race between
// its call and the other thread's close, never wider than one look.
struct Fd {
    int fd;
    FdInfo info;  // what the table said when the call began (info.cls null: untracked)
    bool same_file() const noexcept { return info.cls == nullptr || info.current(); }
};

// How one read or write looks at its fd. With the nowait probe the look is
// a non-blocking attempt of the very call the program made (preadv2 or
// pwritev2 with RWF_NOWAIT): when it succeeds it is the answer, so a hit
// costs no extra syscall. Where the kernel refuses RWF_NOWAIT (kernels
// before 6.4, FIFOs opened by path, spliced pipes) the fd falls back to poll.
struct Looker {
    const Fd& on;
    short events;
    Probe probe;
    bool nowait;
    void* buf;
    std::size_t n;
    const void* iov = nullptr;  // readv: the caller's iovecs instead of buf
    int iovcnt = 0;
    long result = 0;

    Look operator()(unsigned iteration) noexcept {
        if (nowait) {
            long r = iov != nullptr           ? sys::readv_nowait(on.fd, iov, iovcnt)
                     : events == sys::kPollIn ? sys::read_nowait(on.fd, buf, n)
                                              : sys::write_nowait(on.fd, buf, n);
            // EPIPE: the kernel already raised SIGPIPE; the program must see
            // this very result, not a second write.
            if (r >= 0 || r == -EPIPE) {
                result = r;
                return Look::Answer;
            }
            if (r == -EAGAIN || r == -EINTR) return Look::Pending;
            if (r != -EOPNOTSUPP && r != -EINVAL) return Look::Ready;  // the real call reports it
            g_table.set_no_nowait(on.info);
            nowait = false;
        }
        return probe_fd(on.fd, events, probe, iteration);
    }
};

// Spins until the look reports progress, the budget runs out, or a signal
// handler runs on this thread (the blocking call would have been interrupted).
// With an Fd it also stops when the fd turns out to be in non-blocking mode
// (the program must get its EAGAIN, not a spin) or no longer names the file
// the call began on (see Fd). `mark` holds the signal epochs as they were
// before the first look at the fd, so that a handler that ran during that
// look counts too.
template <class Step>
SpinEnd spin(const SignalMark& mark, std::uint64_t budget_ns, std::uint64_t& spent_ns, Step&& step,
             const Fd* on = nullptr) {
    const std::uint64_t start = sys::now_ns();
    const std::uint64_t deadline = start + budget_ns;
    for (unsigned i = 1;; ++i) {
        sys::cpu_relax();
        if (on != nullptr) {
            // O_NONBLOCK is read from the kernel each time, never cached: a
            // dup, fcntl, FIONBIO or another process sharing the file
            // description may have changed it.
            long fl = i == kNonBlockCheckAt ? sys::getfl(on->fd) : 0;
            if (fl < 0 || (fl & O_NONBLOCK)) {
                spent_ns = sys::now_ns() - start;
                return SpinEnd::NonBlocking;
            }
            if (!on->same_file()) {
                spent_ns = sys::now_ns() - start;
                return SpinEnd::Ready;  // the kernel decides, on what the number names now
            }
        }
        Look look = step(i);
        std::uint64_t now = sys::now_ns();
        spent_ns = now - start;
        if (look == Look::Answer) return SpinEnd::Answer;
        if (look == Look::Ready) return SpinEnd::Ready;
        if (mark.handler_ran()) return SpinEnd::Interrupted;
        // Deferred cancellation: the blocking call would be a cancellation
        // point, so the spin is one too (no-op unless a cancel is pending).
        sys::test_cancel();
        if (now >= deadline) return SpinEnd::Exhausted;
    }
}

// Is any CPU free for the peer? Looks at the number of runnable tasks in
// /proc/loadavg (it counts us) against the CPUs we may use, at most every
// kLoadPeriodNs per process, from a thread that is about to spin anyway.
constexpr std::uint64_t kLoadPeriodNs = 5'000'000;

long parse_running(const char* buf, long n) noexcept {
    // "0.10 0.20 0.30 3/120 4567": the field before the '/'.
    for (long i = 0; i < n; ++i) {
        if (buf[i] != '/') continue;
        long j = i, v = 0, scale = 1;
        while (j > 0 && buf[j - 1] >= '0' && buf[j - 1] <= '9') {
            v += (buf[--j] - '0') * scale;
            scale *= 10;
        }
        return j < i ? v : -1;
    }
    return -1;
}

bool oversubscribed(std::uint64_t now) noexcept {
    std::uint64_t next = g_runtime.load_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_runtime.load_next_ns.compare_exchange_strong(next, now + kLoadPeriodNs,
                                                                      std::memory_order_relaxed))
        return g_runtime.oversubscribed.load(std::memory_order_relaxed);
    char buf[128];
    long running = -1;
    long fd = sys::raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/loadavg"),
                       O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        long n = sys::read(static_cast<int>(fd), buf, sizeof buf);
        sys::close(static_cast<int>(fd));
        if (n > 0) running = parse_running(buf, n);
    }
    const bool over = running > g_runtime.usable_cpus.load(std::memory_order_relaxed);
    g_runtime.oversubscribed.store(over, std::memory_order_relaxed);
    return over;
}

// The real call that follows is timed (Plan::Timed; after_call() counts it).
void time_call(Plan& plan, Plan::Timed how) noexcept {
    plan.timed = how;
    plan.t_call = sys::now_ns();
}

// Per family of hooks (process-wide): only waits that spun count.
void count_via(Via via, SpinEnd end) noexcept {
    g_table.process().count_via(via, end == SpinEnd::Ready || end == SpinEnd::Answer);
}

void count_spin(IoCounters& st, Plan& plan, SpinEnd end, std::uint64_t spent) noexcept {
    const bool hit = end == SpinEnd::Ready || end == SpinEnd::Answer;
    st.spins.fetch_add(1, std::memory_order_relaxed);
    st.spin_ns.fetch_add(spent, std::memory_order_relaxed);
    if (hit) st.spin_hits.fetch_add(1, std::memory_order_relaxed);
    plan.obs.spun = true;
    plan.obs.spin_hit = hit;
    plan.obs.spin_ns = spent;
    plan.action = end == SpinEnd::Interrupted ? Plan::Action::Interrupted : Plan::Action::Call;
    plan.t_call = sys::now_ns();
}

Plan done(DirState* dir, long result) noexcept {
    Plan plan;
    plan.action = Plan::Action::Done;
    plan.result = result;
    plan.dir = dir;
    plan.ctr = dir;
    return plan;
}

// The statistics tick (interval lines, A/B switches), once its deadline has
// passed: one thread wins the slot (the deadline moves out of reach while it
// runs), the others go on at once. A coarse clock (a few ns, no syscall) is
// enough for periods in seconds.
void maybe_stats_tick() noexcept {
    const StatsTick tick = g_runtime.stats_tick.load(std::memory_order_acquire);
    if (tick == nullptr) [[likely]]
        return;
    const std::uint64_t now = sys::coarse_ns();
    std::uint64_t next = g_runtime.stats_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_runtime.stats_next_ns.compare_exchange_strong(next, UINT64_MAX,
                                                                       std::memory_order_relaxed))
        return;
    const int saved_errno = errno;  // the hooks may call libc; the caller's errno stays
    const std::uint64_t after = tick(now);
    errno = saved_errno;
    g_runtime.stats_next_ns.store(after != 0 ? after : UINT64_MAX, std::memory_order_relaxed);
}

// The policy's budget for this fd now (SpinPolicy::budget_ns()). In
// adaptive mode a budget that would spin is checked against the run queue
// first.
std::uint64_t budget_for(DirState& st, const PolicyParams& params,
                         const FreshPrior::Lane& lane) noexcept {
    return SpinPolicy::budget_ns(st.policy, params, g_runtime.wake, lane);
}

bool cpu_free_for_peer(const PolicyParams& params, const PolicyState& st) noexcept {
    if (!SpinPolicy::needs_free_cpu(st, params)) return true;
    return !oversubscribed(sys::now_ns());
}

// Nothing in this process (or on this thread) can spin in this direction:
// no call ever takes the slow path, so every call on a tracked pipe may run
// the slow-path hooks (the control arm of an A/B test must report on the
// same schedule as the treatment, and a process in mode off must notice a
// retuned config).
bool never_spins(bool dir_on, const PolicyParams& p) noexcept {
    return !dir_on || p.mode == Mode::Off || p.max_spin_ns == 0 || p.usable_cpus < 2 ||
           p.thread_off;
}

// The live re-check, at most every reload_ms per process: one thread wins
// the slot, the others go on at once. A coarse clock (a few ns, no syscall)
// is enough for a period in milliseconds.
void maybe_reload() noexcept {
    const ReloadHook hook = g_runtime.reload_hook.load(std::memory_order_acquire);
    if (hook == nullptr) return;
    const std::uint64_t period_ms = g_runtime.reload_ms.load(std::memory_order_relaxed);
    if (period_ms == 0) return;
    const std::uint64_t now = sys::coarse_ns();
    std::uint64_t next = g_runtime.reload_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_runtime.reload_next_ns.compare_exchange_strong(
                          next, now + period_ms * 1'000'000u, std::memory_order_relaxed))
        return;
    const int saved_errno = errno;
    hook();
    errno = saved_errno;
}

// A spin is about to start: the deferred work that only a spin needs.
void before_spin() noexcept {
    const SpinHook hook = g_runtime.spin_hook.load(std::memory_order_acquire);
    if (hook == nullptr) [[likely]]
        return;
    const int saved_errno = errno;
    hook();
    errno = saved_errno;
}

// A call is about to spin or block (or nothing spins, see never_spins).
void slow_path_hooks() noexcept {
    maybe_stats_tick();
    maybe_reload();
}

// The slow path's periodic work may just have switched the process to the
// control arm (ab_period) or reloaded mode off: a wait that has not spun yet
// follows it at once.
bool turned_off() noexcept {
    return g_runtime.mode.load(std::memory_order_relaxed) == Mode::Off;
}

// The fd would block now (its first look said so): the slow path's periodic
// work, the run-queue gate, then the spin and its accounting. False when no
// spin ran (mode turned off, no CPU free for the peer, or the fd is in
// non-blocking mode and the real call must give its EAGAIN): the plan is
// left as it was.
template <class Step>
bool spin_on_fd(DirState& st, Plan& plan, const PolicyParams& params, const SignalMark& mark,
                std::uint64_t budget, Step& look, const Fd& on, Via via, SpinEnd& end) {
    slow_path_hooks();
    if (turned_off()) {
        time_call(plan, Plan::Timed::Pending);
        return false;
    }
    if (!cpu_free_for_peer(params, st.policy)) {
        SpinPolicy::on_no_cpu(st.policy);
        time_call(plan, Plan::Timed::Pending);
        return false;
    }
    before_spin();
    std::uint64_t spent = 0;
    end = spin(mark, budget, spent, look, &on);
    if (end == SpinEnd::NonBlocking) return false;
    st.waits.fetch_add(1, std::memory_order_relaxed);
    // A handler ran: with SA_RESTART the kernel would have gone on waiting.
    if (end == SpinEnd::Interrupted && !mark.wants_eintr()) end = SpinEnd::Exhausted;
    count_spin(st, plan, end, spent);
    count_via(via, end);
    plan.obs.budget_ns = budget;
    return true;
}

// A fresh fd whose prior says not to spin would block now: no spin, but the
// real call is timed, so that the process learns whether a spin would have
// caught it (after_call()). A non-blocking fd's EAGAIN teaches nothing:
// after_call() drops results < 0.
void watch_wait(Plan& plan, const PolicyParams& params) noexcept {
    plan.obs.watched = true;
    plan.obs.budget_ns = SpinPolicy::spin_ns(params, g_runtime.wake);
    plan.t_call = sys::now_ns();
}

// The periodic work of reads and writes (interval lines, A/B switches, the
// config re-check), from one call in 16 per fd direction (a look at the
// clock would otherwise be the largest part of what interposition costs a
// call that does not spin), before the call decides anything, so that a
// switch or a reload applies to it already. A fd that does not spin (mode
// off, the direction switched off, a plain phase, a pipe always ready)
// makes no slow-path call: without this a process in mode off would never
// report its interval lines or pick up a changed config file, and one that
// never waited would never switch arms.
void periodic_hooks(const IoCounters& c) noexcept {
    if ((c.calls.load(std::memory_order_relaxed) & 15) != 0) [[likely]]
        return;
    slow_path_hooks();
}

// A call on a tracked pipe that will not spin. Whatever it still has to
// count is done here, before its real call, when nothing needs the call's
// result: the policy is not measuring (SpinPolicy::count_early) and the
// statistics do not count bytes. Then (true) nothing is left for after the
// real call, and the wrapper hands the call to libc as a tail call.
bool settle_early(DirState& st, const PolicyParams& params) noexcept {
    if (g_runtime.count_bytes.load(std::memory_order_relaxed)) return false;
    if (!SpinPolicy::count_early(st.policy, params)) return false;
    bump(st.calls);
    return true;
}

// The same for a plan whose fd was ready at the first look: a call counted
// now leaves after_call() nothing to do.
void settle_plan(Plan& plan, DirState& st, const PolicyParams& params) noexcept {
    if (!settle_early(st, params)) return;
    plan.dir = nullptr;
    plan.ctr = nullptr;
}

Classifier classifier() noexcept {
    return g_runtime.classify.load(std::memory_order_relaxed) ? classify_fd : nullptr;
}

FreshPrior::Lane& lane_of(const FdInfo& info, Dir dir) noexcept {
    return g_runtime.prior.lane(info.origin(), static_cast<int>(dir));
}

// The cheap first step of every read- or write-side wait (engine.h,
// Begun): the fd's state and the budget now, or a null state when the real
// call is all there is to do.
Begun begin_io(int fd, Dir dir, std::size_t n) noexcept {
    if (n == 0 || g_runtime.inert.load(std::memory_order_relaxed)) return {};
    const FdInfo info = g_table.lookup(fd, classifier());
    if (!info.can(dir)) return {};
    DirState& st = info.state->dir[static_cast<int>(dir)];
    periodic_hooks(st);
    const PolicyParams params = g_runtime.params();
    const bool dir_on = g_runtime.spin_dir[static_cast<int>(dir)].load(std::memory_order_relaxed);
    const std::uint64_t budget = dir_on ? budget_for(st, params, lane_of(info, dir)) : 0;
    if (budget != 0) return {info.state, budget};
    if (settle_early(st, params)) return {};
    return {info.state, 0};
}

// The second step, from a non-null Begun: the plan that counts the call on
// the fd's state for `dir`. False when there is nothing to spin for (the
// budget is 0: the call is counted after it; or the fd was closed and its
// number reused meanwhile: the real call decides alone); the caller then
// returns its plan as it is.
bool resume(const Begun& b, int fd, Dir dir, Plan& plan, FdInfo& info) noexcept {
    if (b.state == nullptr) return false;
    info = g_table.lookup(fd, nullptr);
    if (info.state != b.state || !info.can(dir)) return false;
    DirState& st = b.state->dir[static_cast<int>(dir)];
    plan.dir = &st;
    plan.ctr = &st;
    plan.lane = &lane_of(info, dir);
    plan.kind = info.kind();
    plan.stat_dir = dir == Dir::Read ? StatDir::Read : StatDir::Write;
    if (b.budget != 0) return true;
    // No look: with statistics lines on, a read is timed, so that the waits
    // of a fd that does not spin (the control arm's) are seen too. Not a
    // write: one that lasts is mostly one that woke its reader on another
    // CPU (an interrupt, in a VM an exit), which takes as long as a wait
    // and is none; a write waits only for room, which a look would show.
    if (dir == Dir::Read && g_runtime.count_bytes.load(std::memory_order_relaxed))
        time_call(plan, Plan::Timed::Unlooked);
    return false;
}

// Shared by read and write: one look; if the fd would block and is in
// blocking mode, spin within the policy's budget (or, for a fresh fd that
// does not spin, time the wait).
// readv passes its iovecs (and n = 1: the kernel knows the size), writev
// iov = null and n = SIZE_MAX (only ever probed, never tried).
Plan wait_io(const Begun& b, int fd, Dir dir, void* buf, std::size_t n, Via via = Via::Io,
             const void* iov = nullptr, int iovcnt = 0) {
    Plan plan;
    FdInfo info;
    if (!resume(b, fd, dir, plan, info)) return plan;
    DirState& st = *plan.dir;
    const PolicyParams params = g_runtime.params();
    const std::uint64_t budget = b.budget;

    const bool reading = dir == Dir::Read;
    const Probe probe = g_runtime.probe.load(std::memory_order_relaxed);
    // Up to PIPE_BUF a pipe write is all or nothing, so a non-blocking try
    // either is the complete answer or changed nothing; larger writes may
    // be split, so they are only probed.
    const bool nowait = probe == Probe::Nowait && info.nowait_ok() && (reading || n <= PIPE_BUF);
    const Fd on{fd, info};
    Looker look{on,
                reading ? sys::kPollIn : sys::kPollOut,
                probe == Probe::Nowait ? Probe::Poll : probe,
                nowait,
                buf,
                n,
                iov,
                iovcnt};
    const SignalMark mark;
    switch (look(0)) {
        case Look::Answer:
            return done(&st, look.result);
        case Look::Ready:
            settle_plan(plan, st, params);
            return plan;
        case Look::Pending:
            break;
    }
    if (budget == SpinPolicy::kWatchOnly) {
        slow_path_hooks();
        watch_wait(plan, params);
        return plan;
    }
    SpinEnd end;
    if (!spin_on_fd(st, plan, params, mark, budget, look, on, via, end)) return plan;
    if (end == SpinEnd::Answer) {
        plan.action = Plan::Action::Done;
        plan.result = look.result;
    }
    return plan;
}

}  // namespace

void after_fork_child(bool counters_read) noexcept {
    if (counters_read) g_table.new_process();
}

Runtime& runtime() noexcept {
    return g_runtime;
}

void note_pipe(int rfd, int wfd) noexcept {
    if (!g_runtime.inert.load(std::memory_order_relaxed)) g_table.set_pipe(rfd, wfd);
}
FdTable& fd_table() noexcept {
    return g_table;
}

PolicyParams Runtime::params() const noexcept {
    PolicyParams p;
    p.mode = mode.load(std::memory_order_relaxed);
    p.max_spin_ns = max_spin_ns.load(std::memory_order_relaxed);
    p.usable_cpus = usable_cpus.load(std::memory_order_relaxed);
    p.thread_off = t_thread_off;
    return p;
}

bool anything_spins() noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    const bool any_dir = g_runtime.spin_dir[static_cast<int>(Dir::Read)].load(kRelaxed) ||
                         g_runtime.spin_dir[static_cast<int>(Dir::Write)].load(kRelaxed) ||
                         g_runtime.spin_poll.load(kRelaxed);
    return !never_spins(any_dir, g_runtime.params());
}

namespace {
// Writes only what changes (see Runtime); true if it changed.
template <class T, class V>
bool update(std::atomic<T>& field, V value) noexcept {
    const T v = static_cast<T>(value);
    if (field.load(std::memory_order_relaxed) == v) return false;
    field.store(v, std::memory_order_relaxed);
    return true;
}
}  // namespace

void configure(const Options& o, int usable_cpus) noexcept {
    const bool mode_changed = update(g_runtime.mode, o.mode());
    const bool ceiling_changed =
        update(g_runtime.max_spin_ns, static_cast<std::uint64_t>(o.spin_us) * 1000u);
    update(g_runtime.usable_cpus, usable_cpus);
    update(g_runtime.probe, o.probe());
    update(g_runtime.spin_dir[static_cast<int>(Dir::Read)], o.spin_read != 0);
    update(g_runtime.spin_dir[static_cast<int>(Dir::Write)], o.spin_write != 0);
    update(g_runtime.spin_poll, o.spin_poll != 0);
    update(g_runtime.count_bytes, !o.stats.empty());
    const bool may_spin = o.mode() != Mode::Off && o.spin_us != 0 && usable_cpus >= 2 &&
                          (o.spin_read != 0 || o.spin_write != 0 || o.spin_poll != 0);
    update(g_runtime.classify, may_spin || !o.stats.empty());
    update(g_runtime.inert, o.mode() == Mode::Off && o.stats.empty() && o.log() < LogLevel::Info);
    // A changed period starts counting now; the first check of all comes at
    // the first chance (reload_next_ns 0), since the file may have changed
    // since it was read.
    if (update(g_runtime.reload_ms, o.reload_ms))
        g_runtime.reload_next_ns.store(sys::coarse_ns() + std::uint64_t{o.reload_ms} * 1'000'000u,
                                       std::memory_order_relaxed);
    if ((mode_changed || ceiling_changed) && g_table.blocks_mapped() != 0) {
        // What adaptive mode measured was under other settings. Threads in
        // a call meanwhile may write a stale field back: that costs one
        // epoch's accuracy, never correctness.
        g_table.for_each_state([](int, std::uint64_t, FdState& s) {
            for (DirState& st : s.dir) st.policy.relearn();  // a program's hints stay
        });
        g_runtime.wake.reset();
        g_runtime.prior.reset();
    }
}

void set_reload_hook(ReloadHook hook) noexcept {
    g_runtime.reload_hook.store(hook, std::memory_order_release);
}

void set_spin_hook(SpinHook hook) noexcept {
    if (g_runtime.spin_hook.load(std::memory_order_relaxed) != hook)
        g_runtime.spin_hook.store(hook, std::memory_order_release);
}

void set_stats_tick(StatsTick tick, std::uint64_t deadline_ns) noexcept {
    g_runtime.stats_next_ns.store(deadline_ns, std::memory_order_relaxed);
    g_runtime.stats_tick.store(tick, std::memory_order_release);
}

Begun begin_read(int fd, std::size_t n) noexcept {
    return begin_io(fd, Dir::Read, n);
}

Begun begin_write(int fd, std::size_t n) noexcept {
    return begin_io(fd, Dir::Write, n);
}

Plan continue_read(Begun b, int fd, void* buf, std::size_t n) {
    return wait_io(b, fd, Dir::Read, buf, n);
}

Plan continue_write(Begun b, int fd, const void* buf, std::size_t n) {
    return wait_io(b, fd, Dir::Write, const_cast<void*>(buf), n);
}

bool may_spin(int fd, Dir dir) noexcept {
    const PolicyParams params = g_runtime.params();
    if (never_spins(g_runtime.spin_dir[static_cast<int>(dir)].load(std::memory_order_relaxed),
                    params))
        return false;
    const FdInfo info = g_table.lookup(fd, classifier());
    if (!info.can(dir)) return false;
    const std::uint64_t b =
        budget_for(info.state->dir[static_cast<int>(dir)], params, lane_of(info, dir));
    return b != 0 && b != SpinPolicy::kWatchOnly;
}

Plan before_read(int fd, void* buf, std::size_t n) {
    return continue_read(begin_read(fd, n), fd, buf, n);
}

Plan before_write(int fd, const void* buf, std::size_t n) {
    return continue_write(begin_write(fd, n), fd, buf, n);
}

// ---- poll, select, ppoll, epoll: waits on sets ------------------------------

namespace {

// The tracked pipe a set waits on whose state decides for the set (the
// first one): its direction's state, its kind (for the counters), and its
// origin's lane in the process's fresh-fd prior. st is null if there is none.
struct SetPipe {
    DirState* st = nullptr;
    StatKind kind = StatKind::Pipe;
    FreshPrior::Lane* lane = nullptr;
};

SetPipe set_pipe(const FdInfo& info, Dir dir) noexcept {
    return {&info.state->dir[static_cast<int>(dir)], info.kind(), &lane_of(info, dir)};
}

// The spin shared by select, ppoll and epoll, once the set is known to hold
// a tracked pipe (whose policy state `st` decides) and a first look found
// nothing ready. The counters are the process's poll counters for the
// pipe's kind, as for poll (a set is not one fd's). `look` is the call
// itself with a zero timeout, under the call's signal mask: > 0 ready, 0
// nothing, -errno. Its answer is the program's (answer_is_done: ppoll and
// epoll, whose look wrote the result where the program reads it) or only a
// sign that the real call will not wait (select, whose look ran on copies).
// A signal handler that runs ends the wait with EINTR, whatever SA_RESTART
// says, as for these calls in the kernel.
//
// With a signal mask (pselect, ppoll, epoll_pwait) the kernel applies it on
// entry and restores the thread's own on return, atomically: a handler runs
// because of the call's mask only if the call fails with EINTR. The spin
// keeps that guarantee by never installing the call's mask in user space:
//  - every look passes it to the kernel, which applies and restores it as
//    for the real call: a signal it lets through, pending or arriving, fails
//    a ppoll or pselect look with EINTR after its handler ran. A
//    zero-timeout epoll_pwait ignores signals (it returns 0), so there
//    (looks_see_signals false) a zero-timeout ppoll on no fds under the
//    same mask follows each look that found nothing;
//  - between looks the thread's mask also blocks what the call's blocks
//    (one SIG_BLOCK, which reports the thread's own mask), so that a signal
//    the call would not have been interrupted by stays pending;
//  - the thread's own mask is back before the spin returns, so before the
//    real call, which gets the call's mask as its argument: nothing of the
//    shim runs under a mask the program did not install.
// What can still run a handler outside the looks matches a schedule the
// program could see without the shim: a signal that neither mask blocks,
// arriving after the last look, runs its handler before the real call (as
// if it had come just before the call); one that only the call's mask
// blocks, pending when the thread's mask comes back, runs its handler
// before the real call or after the answer (as after the kernel's restore).
template <class SetLook>
Plan spin_set(Plan plan, const SetPipe& pipe, Via via, const PolicyParams& params,
              std::int64_t timeout_ns, const void* sigmask, SignalMark mark, bool answer_is_done,
              bool looks_see_signals, SetLook&& look) {
    DirState& st = *pipe.st;
    IoCounters& ctr = g_table.process().at(pipe.kind, StatDir::Poll);
    plan.dir = &st;
    plan.ctr = &ctr;
    plan.per_call = true;
    plan.kind = pipe.kind;
    plan.stat_dir = StatDir::Poll;
    slow_path_hooks();  // nothing is ready: the slow path
    if (turned_off()) return plan;
    const bool dir_on = g_runtime.spin_poll.load(std::memory_order_relaxed);
    std::uint64_t budget = dir_on ? budget_for(st, params, *pipe.lane) : 0;
    if (budget == SpinPolicy::kWatchOnly) {  // a fresh pipe: no spin, the wait timed
        plan.lane = pipe.lane;
        watch_wait(plan, params);
        return plan;
    }
    if (timeout_ns >= 0) budget = std::min<std::uint64_t>(budget, timeout_ns);
    if (budget == 0) return plan;
    if (!cpu_free_for_peer(params, st.policy)) {
        SpinPolicy::on_no_cpu(st.policy);
        time_call(plan, Plan::Timed::Pending);
        return plan;
    }
    before_spin();
    std::uint64_t own_mask = 0;
    if (sigmask != nullptr) {
        // The kernel reads the caller's mask: a bad one is the real call's EFAULT.
        if (sys::change_sigmask(SIG_BLOCK, sigmask, &own_mask) < 0) return plan;
        // A handler that ran before this point ran under the thread's own
        // mask, before the call (as far as the program can tell) began.
        mark = SignalMark{};
    }
    // Only a signal the thread blocks can be one that the call's mask lets through.
    const bool check_signals = sigmask != nullptr && !looks_see_signals && own_mask != 0;
    ctr.waits.fetch_add(1, std::memory_order_relaxed);
    long ready = 0;
    bool eintr = false;
    std::uint64_t spent = 0;
    SpinEnd end = spin(mark, budget, spent, [&](unsigned) {
        ready = look();
        if (ready == 0 && check_signals) ready = sys::poll_signals0(sigmask);
        if (ready == -EINTR) {  // a handler ran during the look itself
            eintr = true;
            return Look::Ready;
        }
        if (ready > 0) return answer_is_done ? Look::Answer : Look::Ready;
        return ready < 0 ? Look::Ready : Look::Pending;  // an error: the real call reports it
    });
    if (sigmask != nullptr) sys::change_sigmask(SIG_SETMASK, &own_mask, nullptr);
    if (eintr) end = SpinEnd::Interrupted;
    count_spin(ctr, plan, end, spent);
    count_via(via, end);
    plan.obs.budget_ns = budget;
    if (end == SpinEnd::Answer) {
        plan.action = Plan::Action::Done;
        plan.result = ready;
    }
    if (timeout_ns >= 0)
        plan.timeout_ns = std::max<std::int64_t>(0, timeout_ns - static_cast<std::int64_t>(spent));
    return plan;
}

Plan interrupted(Plan plan) noexcept {
    plan.action = Plan::Action::Interrupted;
    return plan;
}

// Which pipe each epoll set waits on (one per set: the first one added),
// in the epoll fd's aux word (FdTable::aux: cleared when the epoll fd is
// closed or replaced): the pipe's fd (32 bits), direction, valid, and the
// low 30 bits of the generation of the pipe's class word, so that a close
// of the pipe, which the table sees, makes the entry stale.
constexpr std::uint64_t kWatchValid = 1ull << 33;

std::uint64_t gen_of(int fd) noexcept {
    return (g_table.peek(fd) >> 32) & 0x3fffffff;
}

std::uint64_t watch_word(int fd, Dir dir) noexcept {
    return static_cast<std::uint32_t>(fd) | (static_cast<std::uint64_t>(dir) << 32) | kWatchValid |
           (gen_of(fd) << 34);
}

// The pipe an epoll set still waits on, or -1.
int watched_pipe(std::uint64_t w, Dir* dir) noexcept {
    if (!(w & kWatchValid)) return -1;
    const int fd = static_cast<int>(static_cast<std::uint32_t>(w));
    *dir = static_cast<Dir>((w >> 32) & 1);
    if ((w >> 34) != gen_of(fd)) return -1;
    return fd;
}

SetPipe first_pipe_in_pollfds(void* fds, unsigned long nfds) noexcept {
    auto* pfds = static_cast<sys::PollFd*>(fds);
    for (unsigned long i = 0; i < nfds; ++i) {
        if (pfds[i].fd < 0) continue;
        FdInfo info = g_table.lookup(pfds[i].fd, classifier());
        if ((pfds[i].events & sys::kPollIn) && info.can(Dir::Read))
            return set_pipe(info, Dir::Read);
        if ((pfds[i].events & sys::kPollOut) && info.can(Dir::Write))
            return set_pipe(info, Dir::Write);
    }
    return {};
}

// Is a fd below nfds known to the table as a pipe? Only the table's words
// are read: no system call, no classification, none of the caller's
// memory. A pipe the shim has not looked at yet (an inherited stdin that
// was never read) is not found: the select passes through until a read
// classifies it.
bool known_pipe_below(int nfds) noexcept {
    return g_table.pipe_seen_below(nfds);
}

// select, ppoll, epoll cannot spin in this process: the call passes
// straight through (and may be the one that writes the interval line, as
// for poll).
bool set_waits_off(const PolicyParams& params) noexcept {
    if (g_runtime.inert.load(std::memory_order_relaxed)) return true;
    if (!never_spins(g_runtime.spin_poll.load(std::memory_order_relaxed), params)) return false;
    slow_path_hooks();
    return true;
}

}  // namespace

Plan before_poll(void* fds, unsigned long nfds, int timeout_ms) {
    Plan plan;
    plan.timeout_ms = timeout_ms;
    if (timeout_ms == 0 || nfds == 0 || g_runtime.inert.load(std::memory_order_relaxed))
        return plan;
    const PolicyParams params = g_runtime.params();
    if (never_spins(g_runtime.spin_poll.load(std::memory_order_relaxed), params)) {
        slow_path_hooks();
        return plan;
    }
    // Let the kernel look at the array first: it validates the pointer (a bad
    // one gives EFAULT from the real poll, not a crash here), and a ready set
    // is the answer at once.
    const SignalMark mark;
    long r = sys::poll0(fds, nfds);
    if (r > 0) return done(nullptr, r);
    if (r == -EINTR) {
        // A handler ran: poll fails with EINTR whatever SA_RESTART says.
        plan.action = Plan::Action::Interrupted;
        return plan;
    }
    if (r < 0) return plan;
    const SetPipe pipe = first_pipe_in_pollfds(fds, nfds);
    if (pipe.st == nullptr) return plan;
    const std::int64_t timeout_ns =
        timeout_ms < 0 ? kNoTimeout : static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    plan = spin_set(plan, pipe, Via::Poll, params, timeout_ns, nullptr, mark, true, true,
                    [&]() noexcept { return sys::poll0(fds, nfds); });
    // Never shorten the caller's timeout: what remains, rounded up to ms.
    if (plan.obs.spun && timeout_ms > 0)
        plan.timeout_ms = static_cast<int>((plan.timeout_ns + 999'999) / 1'000'000);
    return plan;
}

Plan before_ready(int fd, Dir dir, Via via) {
    Plan plan;
    plan.per_call = true;
    FdInfo info;
    const Begun b = begin_io(fd, dir, 1);
    if (!resume(b, fd, dir, plan, info)) return plan;
    DirState& st = *plan.dir;
    const PolicyParams params = g_runtime.params();
    const std::uint64_t budget = b.budget;
    const Probe probe = g_runtime.probe.load(std::memory_order_relaxed);
    const Fd on{fd, info};
    Looker look{on,
                dir == Dir::Read ? sys::kPollIn : sys::kPollOut,
                probe == Probe::Nowait ? Probe::Poll : probe,
                false,  // never the operation itself: this look must not consume
                nullptr,
                0};
    const SignalMark mark;
    if (look(0) != Look::Pending) {
        settle_plan(plan, st, params);
        return plan;
    }
    if (budget == SpinPolicy::kWatchOnly) {
        slow_path_hooks();
        watch_wait(plan, params);
        return plan;
    }
    SpinEnd end;
    spin_on_fd(st, plan, params, mark, budget, look, on, via, end);
    return plan;
}

Plan before_readv(int fd, const void* iov, int iovcnt) {
    // A count the kernel refuses is the real call's EINVAL (and must not
    // pass for "RWF_NOWAIT unsupported on this fd").
    if (iovcnt <= 0 || iovcnt > IOV_MAX) return {};
    return wait_io(begin_io(fd, Dir::Read, 1), fd, Dir::Read, nullptr, 1, Via::Vector, iov, iovcnt);
}

Plan before_writev(int fd, const void*, int iovcnt) {
    if (iovcnt <= 0 || iovcnt > IOV_MAX) return {};
    return wait_io(begin_io(fd, Dir::Write, SIZE_MAX), fd, Dir::Write, nullptr, SIZE_MAX,
                   Via::Vector);
}

Plan before_select(int nfds, void* rfds, void* wfds, void* efds, std::int64_t timeout_ns,
                   const void* sigmask) {
    Plan plan;
    plan.timeout_ns = timeout_ns;
    constexpr int kMaxFds = 1024;  // FD_SETSIZE; larger sets are left alone
    const PolicyParams params = g_runtime.params();
    if (timeout_ns == 0 || nfds <= 0 || nfds > kMaxFds ||
        (rfds == nullptr && wfds == nullptr) ||  // select(0, 0, 0, 0, &tv): a sleep
        set_waits_off(params) || !known_pipe_below(nfds))
        return plan;
    // The sets are read here, in user space. No system call copies memory
    // without a side effect but process_vm_readv, which a strict seccomp
    // profile may forbid (or kill for), and the first look cannot run on
    // the caller's own sets: a select that finds nothing zeroes them. So the
    // bound, documented in the README: a program that passes an unreadable
    // fd_set, while a pipe the shim knows is below nfds, gets SIGSEGV where
    // the kernel returns EFAULT; as does one whose set is shorter than nfds
    // bits with nfds above the size of its fd table (the kernel reads only
    // that far).
    constexpr int kWords = kMaxFds / 64;
    const int words = (nfds + 63) / 64;
    const std::size_t bytes = static_cast<std::size_t>(words) * 8;
    void* user[3] = {rfds, wfds, efds};
    std::uint64_t in[3][kWords];
    for (int k = 0; k < 3; ++k)
        if (user[k] != nullptr) __builtin_memcpy(in[k], user[k], bytes);

    // The first tracked pipe in the read set, else in the write set.
    SetPipe pipe;
    for (int k = 0; k < 2 && pipe.st == nullptr; ++k) {
        if (user[k] == nullptr) continue;
        const Dir dir = k == 0 ? Dir::Read : Dir::Write;
        for (int w = 0; w < words && pipe.st == nullptr; ++w) {
            for (std::uint64_t bits = in[k][w]; bits != 0; bits &= bits - 1) {
                const int fd = w * 64 + __builtin_ctzll(bits);
                if (fd >= nfds) break;
                FdInfo info = g_table.lookup(fd, classifier());
                if (info.can(dir)) {
                    pipe = set_pipe(info, dir);
                    break;
                }
            }
        }
    }
    if (pipe.st == nullptr) return plan;

    std::uint64_t work[3][kWords];
    auto look = [&]() noexcept {
        void* sets[3];
        for (int k = 0; k < 3; ++k) {
            sets[k] = user[k] != nullptr ? work[k] : nullptr;
            if (sets[k] != nullptr) __builtin_memcpy(work[k], in[k], bytes);
        }
        return sys::pselect0(nfds, sets[0], sets[1], sets[2], sigmask);
    };
    const SignalMark mark;
    const long r = look();
    if (r == -EINTR) return interrupted(plan);
    if (r != 0) return plan;  // ready, or an error: the real call says which
    return spin_set(plan, pipe, Via::Select, params, timeout_ns, sigmask, mark, false, true, look);
}

Plan before_ppoll(void* fds, unsigned long nfds, std::int64_t timeout_ns, const void* sigmask) {
    Plan plan;
    plan.timeout_ns = timeout_ns;
    const PolicyParams params = g_runtime.params();
    if (timeout_ns == 0 || nfds == 0 || set_waits_off(params)) return plan;
    // The kernel looks first: it validates the array and the mask.
    const SignalMark mark;
    const long r = sys::ppoll0(fds, nfds, sigmask);
    if (r > 0) return done(nullptr, r);
    if (r == -EINTR) return interrupted(plan);
    if (r < 0) return plan;
    const SetPipe pipe = first_pipe_in_pollfds(fds, nfds);
    if (pipe.st == nullptr) return plan;
    return spin_set(plan, pipe, Via::Poll, params, timeout_ns, sigmask, mark, true, true,
                    [&]() noexcept { return sys::ppoll0(fds, nfds, sigmask); });
}

void note_epoll_ctl(int epfd, int op, int fd, std::uint32_t events) noexcept {
    if (epfd < 0 || fd < 0 || g_runtime.inert.load(std::memory_order_relaxed)) return;
    std::atomic<std::uint64_t>* aux = g_table.aux(epfd, op == EPOLL_CTL_ADD);
    if (aux == nullptr) return;
    std::atomic<std::uint64_t>& slot = *aux;
    const std::uint64_t w = slot.load(std::memory_order_acquire);
    Dir old_dir;
    const int watched = watched_pipe(w, &old_dir);
    if (op == EPOLL_CTL_DEL) {
        if (watched == fd) slot.store(0, std::memory_order_release);
        return;
    }
    if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD) return;
    if (watched >= 0 && watched != fd) return;  // the set keeps its first pipe
    FdInfo info = g_table.lookup(fd, classifier());
    if ((events & sys::kPollIn) && info.can(Dir::Read))
        slot.store(watch_word(fd, Dir::Read), std::memory_order_release);
    else if ((events & sys::kPollOut) && info.can(Dir::Write))
        slot.store(watch_word(fd, Dir::Write), std::memory_order_release);
    else if (watched == fd)
        slot.store(0, std::memory_order_release);
}

namespace {

// epoll_wait, epoll_pwait and epoll_pwait2: the timeout is timeout_ns, or
// (ts non-null) the caller's timespec, which the kernel reads first.
Plan epoll_plan(int epfd, void* events, int maxevents, std::int64_t timeout_ns, const void* ts,
                const void* sigmask) {
    Plan plan;
    plan.timeout_ns = timeout_ns;
    const PolicyParams params = g_runtime.params();
    if (timeout_ns == 0 || maxevents <= 0 || set_waits_off(params)) return plan;
    const std::atomic<std::uint64_t>* aux = g_table.aux(epfd, false);
    if (aux == nullptr) return plan;
    Dir dir;
    const int fd = watched_pipe(aux->load(std::memory_order_acquire), &dir);
    if (fd < 0) return plan;
    FdInfo info = g_table.lookup(fd, classifier());
    if (!info.can(dir)) return plan;
    if (ts != nullptr) {
        // Before the first look, which may consume an event: a timeout the
        // kernel refuses (EFAULT, EINVAL) fails the real call with nothing
        // consumed. Once the kernel read it, so may we (only another thread
        // unmapping it meanwhile could make that fault). One that another
        // thread made invalid since is the real call's to refuse.
        if (sys::check_timeout(ts) != 0) return plan;
        const auto* t = static_cast<const timespec*>(ts);
        timeout_ns = wait_timeout_ns(t->tv_sec, t->tv_nsec, 1, 1'000'000'000);
        if (timeout_ns == 0 || timeout_ns == kBadTimeout) return plan;
        plan.timeout_ns = timeout_ns;
    }
    const SignalMark mark;
    const long r = sys::epoll_pwait0(epfd, events, maxevents, sigmask);
    if (r > 0) return done(nullptr, r);
    if (r == -EINTR) return interrupted(plan);
    if (r < 0) return plan;
    return spin_set(plan, set_pipe(info, dir), Via::Epoll, params, timeout_ns, sigmask, mark, true,
                    false,
                    [&]() noexcept { return sys::epoll_pwait0(epfd, events, maxevents, sigmask); });
}

}  // namespace

Plan before_epoll_wait(int epfd, void* events, int maxevents, std::int64_t timeout_ns,
                       const void* sigmask) {
    return epoll_plan(epfd, events, maxevents, timeout_ns, nullptr, sigmask);
}

Plan before_epoll_pwait2(int epfd, void* events, int maxevents, const void* ts,
                         const void* sigmask) {
    return epoll_plan(epfd, events, maxevents, -1, ts, sigmask);
}

namespace {

// The wait a finished call was, into the process's histograms: a spin's
// (hit: the spin; miss: the spin and the real call), a watched one's, or a
// timed real call's (Plan::Timed) that ended with what it waited for.
void count_wait(const Plan& plan, long result, bool watched) noexcept {
    WaitEnd end = WaitEnd::Plain;
    std::uint64_t ns;
    if (plan.obs.spun) {
        end = plan.obs.spin_hit ? WaitEnd::Hit : WaitEnd::Miss;
        ns = plan.obs.spin_ns + (plan.obs.spin_hit ? 0 : plan.obs.block_ns);
    } else if (watched) {
        ns = plan.obs.block_ns;
    } else if (plan.timed != Plan::Timed::No && result >= 0) {
        const std::uint64_t now = sys::now_ns();
        ns = now - plan.t_call;
        // A timed read is the statistics tick's chance, at no cost but a
        // compare: a reader that adaptive mode keeps from spinning reaches
        // the 16th call of periodic_hooks() only every 16 reads (16 s for a
        // message a second), and its interval lines and A/B switches would
        // lag that much. The fine clock is never behind the coarse one.
        if (now >= g_runtime.stats_next_ns.load(std::memory_order_relaxed)) maybe_stats_tick();
        if (plan.timed == Plan::Timed::Unlooked && ns < kPlainFloorNs) return;  // no wait
    } else {
        return;
    }
    // The histograms are read only by statistics lines: without them, no
    // write (a process-wide page that a forking parent would copy once per
    // child).
    if (!g_runtime.count_bytes.load(std::memory_order_relaxed)) return;
    g_table.process().count_wait(plan.kind, plan.stat_dir, end, ns);
}

}  // namespace

void after_call(Plan& plan, long result) noexcept {
    if (plan.dir == nullptr) return;
    PolicyState& ps = plan.dir->policy;
    const PolicyParams params = g_runtime.params();
    // A watched wait teaches something when it ended with what it waited for:
    // not an error (a non-blocking fd's EAGAIN), not a set's timeout.
    const bool sample = plan.obs.watched && (plan.per_call ? result > 0 : result >= 0);
    if (plan.obs.spun || sample) {
        if (plan.action == Plan::Action::Call) {
            plan.obs.block_ns = sys::now_ns() - plan.t_call;
            if (plan.obs.spun && plan.ctr != nullptr)
                plan.ctr->sleep_ns.fetch_add(plan.obs.block_ns, std::memory_order_relaxed);
        }
        if (plan.obs.watched && plan.ctr != nullptr)
            plan.ctr->waits.fetch_add(1, std::memory_order_relaxed);
        SpinPolicy::on_wait(ps, params, g_runtime.wake, plan.obs, plan.lane);
    }
    count_wait(plan, result, sample);
    const std::uint64_t progress = result <= 0     ? 0
                                   : plan.per_call ? 1
                                                   : static_cast<std::uint64_t>(result);
    if (plan.ctr != nullptr) {
        bump(plan.ctr->calls);
        if (!plan.per_call && result > 0) bump(plan.ctr->bytes, progress);
    }
    SpinPolicy::on_call(ps, params, progress, sys::now_ns);
}

void stats_snapshot(StatsSnapshot& out) noexcept {
    g_table.snapshot(out);
}

}  // namespace pipespin
