// The waits on one fd (engine.h: read, write, readv, writev, the stdio
// refills, splice and tee) and what follows every call, after_call(). Every
// read and write of the program comes through begin_read() or
// begin_write(): what they call is in this file or inline, so that the
// common call (not a pipe, or one that will not spin) costs a few loads.
#include <limits.h>

#include <algorithm>

#include "core/engine_detail.h"

namespace pipespin {

using namespace engine;

namespace {

constexpr short kDone = sys::kPollHup | sys::kPollErr | sys::kPollNval;

// A zero-timeout poll, or FIONREAD, on one fd.
[[gnu::noinline]] Look probe_fd(int fd, short events, Probe probe, unsigned iteration) noexcept {
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

// A write of n bytes that the fd's room credit covers (look_for_room()
// below gives it) spends it and needs no look: it cannot wait. The credit holds
// only if every write since it was given came through a look or spent it
// (`call`: this call's number, the calls before it): a call that went
// without (a run of not spinning) wrote what it did not count.
bool spend_room_credit(DirState& st, std::size_t n) noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    if (n > PIPE_BUF) return false;
    PolicyState& ps = st.policy;
    const auto call = static_cast<std::uint16_t>(st.calls.load(kRelaxed));
    if (static_cast<std::uint16_t>(ps.room_call.load(kRelaxed) + 1) != call) return false;
    const std::uint16_t credit = ps.room_credit.load(kRelaxed);
    if (credit < n) return false;
    ps.room_call.store(call, kRelaxed);
    ps.room_credit.store(static_cast<std::uint16_t>(credit - n), kRelaxed);
    return true;
}

// The pipe's size in pages (F_GETPIPE_SZ), kNoPipeSize where the fd
// does not answer (not a pipe: its writes are never looked at again).
constexpr std::uint8_t kNoPipeSize = UINT8_MAX;
// The look of a write's spin that asks the size again (look_for_room()).
constexpr unsigned kAskSizeAgainAt = 16;
std::uint8_t ask_pipe_pages(int fd, unsigned long page) noexcept {
    const long size = sys::pipe_size(fd);
    return size > 0 && page != 0 ? static_cast<std::uint8_t>(std::min<unsigned long>(
                                       static_cast<unsigned long>(size) / page, kNoPipeSize - 1))
                                 : kNoPipeSize;
}

// How full a pipe is, for a write (docs/policy.md, "What a look may do"):
// FIONREAD, never poll. A poll of a pipe marks it for good as one that
// epoll may watch (pipe_poll() sets pipe->poll_usage), and from then on
// every write into it wakes its readers' queue, empty or not: a poll the
// program never made would make each of its writes dearer for the pipe's
// life (hackbench, whose 20 writers share each pipe: 10% slower). FIONREAD
// takes the pipe's mutex for a moment and changes nothing.
// Pending: the pipe is full (the bytes in it fill all its pages but one,
// where poll would say not writable; its size asked again once a spin
// lasts). Ready otherwise, and with the room it proves free given to the
// writes that follow as credit (room_credit() in policy.h): a write the
// credit covers is not looked at at all (begin_io_full() spends it, before
// any look). A reader that leaves during a write's spin is not seen: its
// EPIPE comes at the end of the budget, from the real call. Writes over
// PIPE_BUF (and writev, n = SIZE_MAX: only ever probed) get no credit: the
// kernel may take them in parts. Relaxed: threads that write one fd at
// once can only make the credit wrong, which costs a write that waits
// unspun.
[[gnu::noinline]] Look look_for_room(DirState& st, int fd, std::size_t n,
                                     unsigned iteration) noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    PolicyState& ps = st.policy;
    const unsigned long page = sys::page_size();
    std::uint8_t pages = ps.pipe_pages.load(kRelaxed);
    if (pages == 0) {  // once per fd
        pages = ask_pipe_pages(fd, page);
        ps.pipe_pages.store(pages, kRelaxed);
    }
    if (pages == kNoPipeSize || pages == 0) return Look::Ready;  // the real call decides
    const long queued = sys::fionread(fd);
    if (queued == -EINTR) return Look::Pending;  // the spin's signal check decides
    if (queued < 0) return Look::Ready;          // the real call reports it
    const auto full = [&] {
        return static_cast<std::uint64_t>(queued) > (pages - 1) * static_cast<std::uint64_t>(page);
    };
    if (full()) {
        // A spin that lasts asks the size again, once: a pipe grown since
        // it was asked (F_SETPIPE_SZ, by this process or its peer) would
        // otherwise look full, and each write would spin its budget for
        // nothing. Not sooner: a spin the reader ends soon pays nothing.
        if (iteration != kAskSizeAgainAt) return Look::Pending;
        const std::uint8_t now = ask_pipe_pages(fd, page);
        if (now == pages) return Look::Pending;
        ps.pipe_pages.store(now, kRelaxed);
        if (now == kNoPipeSize) return Look::Ready;
        pages = now;
        if (full()) return Look::Pending;
    }
    if (n <= PIPE_BUF) {
        const auto call = static_cast<std::uint16_t>(st.calls.load(kRelaxed));
        const std::uint16_t room = room_credit(static_cast<std::uint64_t>(queued), pages,
                                               static_cast<std::uint32_t>(page));
        ps.room_call.store(call, kRelaxed);
        ps.room_credit.store(room >= n ? static_cast<std::uint16_t>(room - n) : 0, kRelaxed);
    }
    return Look::Ready;
}

// How one read or write looks at its fd. For a read with the nowait probe
// (wait_io() says when) the look is a non-blocking attempt of the very call
// the program made (preadv2 with RWF_NOWAIT): when it succeeds it is the
// answer, so a hit costs no extra syscall. Where the kernel refuses
// RWF_NOWAIT (kernels before 6.4, FIFOs opened by path, spliced pipes), or
// the read may not be tried, the fd falls back to poll. A write's look is
// look_for_room() (`room`: the write's state), whatever the probe setting.
struct Looker {
    const Fd& on;
    short events;
    Probe probe;
    bool nowait;
    void* buf;
    std::size_t n;
    const void* iov = nullptr;  // readv: the caller's iovecs instead of buf
    int iovcnt = 0;
    DirState* room = nullptr;  // a write's
    long result = 0;

    // Inline where it is used (the read's look is then the system call
    // alone); a write's look and the probes are calls of their own.
    [[gnu::always_inline]] Look operator()(unsigned iteration) noexcept {
        if (room != nullptr) return look_for_room(*room, on.fd, n, iteration);
        if (nowait) {
            long r = iov != nullptr ? sys::readv_nowait(on.fd, iov, iovcnt)
                                    : sys::read_nowait(on.fd, buf, n);
            if (r >= 0) {
                result = r;
                return Look::Answer;
            }
            if (r == -EAGAIN || r == -EINTR) return Look::Pending;
            if (r != -EOPNOTSUPP && r != -EINVAL) return Look::Ready;  // the real call reports it
            table().set_no_nowait(on.info);
            nowait = false;
        }
        return probe_fd(on.fd, events, probe, iteration);
    }
};

// The fd would block now (its first look said so): the slow path's periodic
// work, the run-queue gate, then the spin and its accounting. False when no
// spin ran (mode turned off, no CPU free for the peer, or the fd is in
// non-blocking mode and the real call must give its EAGAIN): the plan is
// left as it was.
template <class Step>
[[gnu::always_inline]] inline bool spin_on_fd(DirState& st, Plan& plan, const PolicyParams& params,
                                              const SignalMark& mark, std::uint64_t budget,
                                              Step& look, const Fd& on, Via via, SpinEnd& end) {
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
    std::uint64_t ended_ns = 0;
    std::uint64_t away_ns = 0;
    end = spin(mark, budget, spent, look, &on, &ended_ns, &away_ns);
    if (end == SpinEnd::NonBlocking) {
        table().set_nonblock(on.info, true);  // its next calls skip the looks (resume())
        return false;
    }
    st.waits.fetch_add(1, std::memory_order_relaxed);
    // A handler ran: with SA_RESTART the kernel would have gone on waiting.
    if (end == SpinEnd::Interrupted && !mark.wants_eintr()) end = SpinEnd::Exhausted;
    count_spin(st, plan, end, spent, ended_ns, away_ns);
    count_via(via, end);
    plan.obs.budget_ns = budget;
    watch_run_delay(plan, st.policy, params, end);
    return true;
}

// The periodic work of reads and writes (interval lines, A/B switches, the
// config re-check), from one call in 16 per fd direction (a look at the
// clock would otherwise be the largest part of what interposition costs a
// call that does not spin), before the call decides anything, so that a
// switch or a reload applies to it already. A fd that does not spin (mode
// off, the direction switched off, a plain phase, a pipe always ready)
// makes no slow-path call: without this a process in mode off would never
// report its interval lines or pick up a changed config file, and one that
// never waited would never switch arms. A fd in a run of not spinning whose
// calls the fast lane counts runs them from the calls it does not (the
// last of each epoch, which is also the next one's first: one in 63).
bool due_periodic_hooks(const IoCounters& c) noexcept {
    return (c.calls.load(std::memory_order_relaxed) & 15) == 0;
}

// A call on a tracked pipe that will not spin. Whatever it still has to
// count is done here, before its real call, when nothing needs the call's
// result: the policy is not measuring (SpinPolicy::count_early) and the
// statistics do not count bytes. Then (true) nothing is left for after the
// real call, and the wrapper hands the call to libc as a tail call.
bool settle_early(DirState& st, const PolicyParams& params) noexcept {
    if (g_runtime.count_bytes.load(std::memory_order_relaxed)) return false;
    if (!SpinPolicy::count_early(st.policy, params, sys::now_ns)) return false;
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

// Calls of a run of not spinning are counted on the fast lane
// (fd_table.h): in adaptive mode, without statistics lines (which count
// bytes, after the call).
bool plain_inline_on() noexcept {
    return g_runtime.mode.load(std::memory_order_relaxed) == Mode::Adaptive &&
           !g_runtime.count_bytes.load(std::memory_order_relaxed);
}

// The first step of every read- or write-side wait (engine.h, Begun) that
// the fast lane did not count: the fd's state and the budget now, or a null
// state when the real call is all there is to do.
// `known`: what lookup_known() found (a pipe), or an info with a null cls:
// the fd is looked up (and classified) here.
// `n`: a write's byte count (its room credit may spare it the look).
[[gnu::noinline]] Begun begin_io_full(int fd, Dir dir, FdInfo known, std::size_t n) noexcept {
    const FdInfo info = known.cls != nullptr ? known : look_up(fd);
    if (!info.can(dir)) return {};
    DirState& st = info.state->dir[static_cast<int>(dir)];
    // What the fd's lane counted, before anything reads the epoch.
    table().settle_fast(fd, dir, st);
    // A pipe made here that lives on: its process's new pipes are not all
    // one-shots (FreshPrior, quiet pipes).
    if (info.bits() & fdbits::kMade)
        g_runtime.prior.made_pipe_call(st.calls.load(std::memory_order_relaxed));
    // The periodic hooks: one call in 16; in a run of not spinning, every
    // call that comes here (the fast lane counts the others), which is the
    // last of each epoch of the run, also the next one's first: one in 63.
    if (due_periodic_hooks(st) || (st.policy.get_phase() == Phase::Plain && plain_inline_on()))
        slow_path_hooks();
    const PolicyParams params = g_runtime.params();
    // A write the room credit covers cannot wait, whatever the budget would
    // be: it spends the credit (which keeps it true for the next writes)
    // and asks no budget.
    const bool credited = dir == Dir::Write && spend_room_credit(st, n);
    const bool dir_on = g_runtime.spin_dir[static_cast<int>(dir)].load(std::memory_order_relaxed);
    const std::uint64_t budget =
        dir_on && !credited ? budget_for(st, params, lane_of(info, dir)) : 0;
    const std::uint32_t gen = FdTable::gen_of(info.word);
    if (budget != 0) return {info.state, static_cast<std::uint32_t>(budget), gen};
    if (!settle_early(st, params)) return {info.state, 0, gen};
    // Counted: if the run of not spinning goes on, the fast lane counts
    // the calls up to its epoch's last. The settings are asked again (the
    // hooks above may have applied new ones: a reload, an A/B switch)
    // after the lanes' tag, so that settings that change after this look
    // void the lane (configure() stores them before it moves the tag on).
    if (plain_inline_on())
        if (const std::uint32_t n = SpinPolicy::inline_run(st.policy)) {
            const std::uint32_t tag = table().tag_to_arm(fd, dir);
            if (!plain_inline_on()) return {};
            table().arm_fast(fd, dir, n, tag);
            if (!g_runtime.lanes_armed.load(std::memory_order_relaxed))
                g_runtime.lanes_armed.store(true, std::memory_order_relaxed);
        }
    return {};
}

// What most reads and writes come to: a fd that is not a pipe, answered
// from its class word with a few loads and no call (the calls the fast
// lane counts never get here: the wrappers ask io_counted_fast() first).
// Anything else takes begin_io_full().
// begin_tracked_io(): for a call io_untracked() let through.
[[gnu::always_inline]] inline Begun begin_tracked_io(int fd, Dir dir, std::size_t n) noexcept {
    const FdInfo info = table().lookup_known(fd);
    if (info.cls != nullptr && !info.pipe()) return {};
    return begin_io_full(fd, dir, info, n);
}

inline Begun begin_io(int fd, Dir dir, std::size_t n) noexcept {
    return io_untracked(n) || io_counted_fast(fd, dir) ? Begun{} : begin_tracked_io(fd, dir, n);
}

// A fd last seen in non-blocking mode (FdTable::set_nonblock): its call
// cannot wait, so it gets no look and no spin, whose F_GETFL would only
// find that out again (a loop of reads until EAGAIN took four system calls
// a read in fixed mode). The mode is read again on one call in 16 (or, once
// nothing spins, never): a fd made blocking by a way the shim does not see
// (FIONBIO, another process sharing the file) loses at most that many
// spins. True: the call goes to the kernel as it is.
bool still_non_blocking(int fd, FdInfo& info, const DirState& st) noexcept {
    if (!info.nonblock_seen()) return false;
    if ((st.calls.load(std::memory_order_relaxed) & 15) != 0 || non_blocking_now(fd)) return true;
    table().set_nonblock(info, false);
    info.word = info.cls->load(std::memory_order_acquire);  // what the spin's same_file() compares
    return false;
}

// The second step, from a non-null Begun: the plan that counts the call on
// the fd's state for `dir`. False when there is nothing to spin for (the
// budget is 0: the call is counted after it; the fd is non-blocking; or it
// was closed and its number reused meanwhile: the real call decides alone);
// the caller then returns its plan as it is.
bool resume(const Begun& b, int fd, Dir dir, Plan& plan, FdInfo& info) noexcept {
    if (b.state == nullptr) return false;
    // The fd's entry as the first step found it, if its number still names
    // that file: its class word reread, not looked up again.
    std::atomic<std::uint64_t>& cls = table().class_word(fd);
    info = FdInfo{b.state, &cls, cls.load(std::memory_order_acquire)};
    if (FdTable::gen_of(info.word) != b.gen || !info.can(dir)) return false;
    DirState& st = b.state->dir[static_cast<int>(dir)];
    plan.dir = &st;
    plan.ctr = &st;
    plan.lane = &lane_of(info, dir);
    plan.kind = info.kind();
    plan.stat_dir = dir == Dir::Read ? StatDir::Read : StatDir::Write;
    if (b.budget != 0) return !still_non_blocking(fd, info, st);
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
//
// Inline (with its spin) in continue_read(), the read of a spinning
// ping-pong: the spin loop then runs two frames below the program's read
// (read_waiting() in the wrapper, continue_read() here). Each frame that
// the answer returns through, entered before the spin's system calls, cost
// a round trip about 1.5% at the spin floor on the project's VM, where
// frames around each look cost nothing (tools/bench/scripts/callchain.sh).
[[gnu::always_inline]] inline Plan wait_io_inline(const Begun& b, int fd, Dir dir, void* buf,
                                                  std::size_t n, Via via = Via::Io,
                                                  const void* iov = nullptr, int iovcnt = 0) {
    Plan plan;
    FdInfo info;
    if (!resume(b, fd, dir, plan, info)) return plan;
    DirState& st = *plan.dir;
    const PolicyParams params = g_runtime.params();
    const std::uint64_t budget = b.budget;

    const bool reading = dir == Dir::Read;
    const Probe probe = g_runtime.probe.load(std::memory_order_relaxed);
    // A look must not change what the real call does, whatever the fd
    // table believes (docs/policy.md, "What a look may do"). A write is
    // never tried: on a number the table wrongly takes for a pipe (closed
    // where the shim could not see it, and reused by a socket) a
    // non-blocking try may send part of what the program asked to send,
    // which a blocking write never returns. A read is tried only while
    // every close of the process passes through the shim (fds_trusted()):
    // on a pipe, or on whatever a seen close let the number become
    // (classified afresh), a non-blocking read returns what the blocking
    // one would have, at once.
    const bool nowait = reading && probe == Probe::Nowait && info.nowait_ok() && fds_trusted();
    const Fd on{fd, info};
    Looker look{on,
                reading ? sys::kPollIn : sys::kPollOut,
                probe == Probe::Nowait ? Probe::Poll : probe,
                nowait,
                buf,
                n,
                iov,
                iovcnt,
                reading ? nullptr : &st};
    const SignalMark mark;
    // The look may be the call itself (nowait): a cancellation point first,
    // as the call is at its entry, before anything is consumed or written.
    if (nowait) sys::test_cancel();
    const Look first = look(0);
    switch (first) {
        case Look::Answer:
            // The plan resume() made, as done() would make it: one Plan
            // object in this function, which the caller's return slot holds
            // (a second one cost every read a copy and a zeroing).
            plan.action = Plan::Action::Done;
            plan.result = look.result;
            return plan;
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

[[gnu::noinline]] Plan wait_io(const Begun& b, int fd, Dir dir, void* buf, std::size_t n,
                               Via via = Via::Io, const void* iov = nullptr, int iovcnt = 0) {
    return wait_io_inline(b, fd, dir, buf, n, via, iov, iovcnt);
}

}  // namespace

Begun begin_read(int fd) noexcept {
    return begin_tracked_io(fd, Dir::Read, SIZE_MAX);
}

Begun begin_write(int fd, std::size_t n) noexcept {
    return begin_tracked_io(fd, Dir::Write, n);
}

Plan continue_read(Begun b, int fd, void* buf, std::size_t n) {
    return wait_io_inline(b, fd, Dir::Read, buf, n);
}

Plan continue_write(Begun b, int fd, const void* buf, std::size_t n) {
    return wait_io(b, fd, Dir::Write, const_cast<void*>(buf), n);
}

bool may_spin(int fd, Dir dir) noexcept {
    const PolicyParams params = g_runtime.params();
    if (SpinPolicy::never_spins(
            g_runtime.spin_dir[static_cast<int>(dir)].load(std::memory_order_relaxed), params))
        return false;
    const FdInfo info = look_up(fd);
    if (!info.can(dir)) return false;
    const std::uint64_t b =
        budget_for(info.state->dir[static_cast<int>(dir)], params, lane_of(info, dir));
    return b != 0 && b != SpinPolicy::kWatchOnly;
}

bool known_anonymous_pipe(int fd) noexcept {
    const FdInfo info = table().lookup(fd, nullptr);
    return info.pipe() && info.kind() == StatKind::Pipe;
}

Plan before_read(int fd, void* buf, std::size_t n) {
    return continue_read(begin_io(fd, Dir::Read, n), fd, buf, n);
}

Plan before_write(int fd, const void* buf, std::size_t n) {
    return continue_write(begin_io(fd, Dir::Write, n), fd, buf, n);
}

Plan before_ready(int fd, Dir dir, Via via) {
    Plan plan;
    plan.per_call = true;
    FdInfo info;
    // No room credit for a splice: it takes whole pages (n = SIZE_MAX).
    const Begun b = begin_io(fd, dir, SIZE_MAX);
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
                SIZE_MAX,  // no credit: a splice takes whole pages
                nullptr,
                0,
                dir == Dir::Read ? nullptr : &st};
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
        // the call in 16 that runs the periodic hooks only every 16 reads
        // (16 s for a message a second), and its interval lines and A/B
        // switches would lag that much. The fine clock is never behind the
        // coarse one.
        if (now >= g_runtime.stats_next_ns.load(std::memory_order_relaxed)) maybe_stats_tick();
        if (plan.timed == Plan::Timed::Unlooked && ns < kPlainFloorNs) return;  // no wait
    } else {
        return;
    }
    // The histograms are read only by statistics lines: without them, no
    // write (a process-wide page that a forking parent would copy once per
    // child).
    if (!g_runtime.count_bytes.load(std::memory_order_relaxed)) return;
    table().process().count_wait(plan.kind, plan.stat_dir, end, ns);
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
            if (plan.run_delay_from >= 0 && SpinPolicy::run_delay_matters(plan.obs)) {
                const std::int64_t to = sys::run_delay_ns();
                if (to >= plan.run_delay_from) {
                    plan.obs.run_delay_known = true;
                    plan.obs.run_delay_ns = static_cast<std::uint64_t>(to - plan.run_delay_from);
                }
            }
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

}  // namespace pipespin
