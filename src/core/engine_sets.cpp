// The waits on sets (engine.h: poll, select, ppoll, epoll): each finds the
// first tracked pipe the set waits on, whose policy state decides for the
// set, lets the kernel look once, and then spins with spin_set().
#include <signal.h>
#include <sys/epoll.h>

#include <algorithm>

#include "core/engine_detail.h"

namespace pipespin {

using namespace engine;

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

// The spin shared by poll, select, ppoll and epoll, once the set is known to hold
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
    IoCounters& ctr = table().process().at(pipe.kind, StatDir::Poll);
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
    std::uint64_t ended_ns = 0;
    std::uint64_t away_ns = 0;
    SpinEnd end = spin(
        mark, budget, spent,
        [&](unsigned) {
            ready = look();
            if (ready == 0 && check_signals) ready = sys::poll_signals0(sigmask);
            if (ready == -EINTR) {  // a handler ran during the look itself
                eintr = true;
                return Look::Ready;
            }
            if (ready > 0) return answer_is_done ? Look::Answer : Look::Ready;
            return ready < 0 ? Look::Ready : Look::Pending;  // an error: the real call reports it
        },
        nullptr, &ended_ns, &away_ns);
    if (sigmask != nullptr) sys::change_sigmask(SIG_SETMASK, &own_mask, nullptr);
    if (eintr) end = SpinEnd::Interrupted;
    count_spin(ctr, plan, end, spent, ended_ns, away_ns);
    count_via(via, end);
    plan.obs.budget_ns = budget;
    // Not when the caller's timeout ended the spin: the real call then
    // returns at once, and must not be made later than that.
    if (timeout_ns < 0 || spent < static_cast<std::uint64_t>(timeout_ns))
        watch_run_delay(plan, st.policy, params, end);
    if (end == SpinEnd::Answer) {
        plan.action = Plan::Action::Done;
        plan.result = ready;
    }
    if (timeout_ns >= 0)
        plan.timeout_ns = std::max<std::int64_t>(0, timeout_ns - static_cast<std::int64_t>(spent));
    return plan;
}

// A set whose pipe will not spin now, outside a measuring epoch: the real
// call is all there is, without the first look, which would only have told
// a wait from a ready set at the price of one system call more than the
// program makes (a pipe not spinning, in a loop that polls it, was two
// calls a wait). Counted as a wait that did not spin is (spin_set()):
// now, by count_early(), or after the call with statistics lines on, whose
// counters want the result. A fresh pipe that does not spin still looks
// (its wait is watched, SpinPolicy::kWatchOnly), as does a measuring
// epoch, whose cost counts the calls a look found waiting, as the other
// way's did. True: plan is the call's.
bool passes_unlooked(Plan& plan, const SetPipe& pipe, const PolicyParams& params) noexcept {
    DirState& st = *pipe.st;
    if (g_runtime.spin_poll.load(std::memory_order_relaxed) &&
        budget_for(st, params, *pipe.lane) != 0)
        return false;
    if (SpinPolicy::measures(st.policy, params)) return false;
    slow_path_hooks();
    IoCounters& ctr = table().process().at(pipe.kind, StatDir::Poll);
    if (!g_runtime.count_bytes.load(std::memory_order_relaxed)) {
        SpinPolicy::count_early(st.policy, params, sys::now_ns);
        bump(ctr.calls);
        return true;
    }
    plan.dir = &st;
    plan.ctr = &ctr;
    plan.per_call = true;
    plan.kind = pipe.kind;
    plan.stat_dir = StatDir::Poll;
    return true;
}

// What the kernel last read for this thread, at the memory-map generation
// of then (Runtime::map_gen): a poll's array (poll, ppoll: the first look,
// which validates it), or select's fd_sets (found readable by the
// kernel: sys::readable()). The same addresses
// and lengths again, with no unmap or protection change since, may be
// read in user space before the kernel looks, to find the set's pipe and
// skip a look that cannot lead to a spin (no pipe in the set, or one that
// does not spin: passes_unlooked()). Anything else is read by the kernel
// first: a bad pointer is the call's EFAULT, never a fault here. (Only
// another thread unmapping the memory while this one passes it to the call
// could make a read fault: the program's own race.)
struct Seen {
    const void* at[3] = {};
    std::size_t bytes = 0;
    std::uint32_t gen = 0;
};
constinit thread_local Seen t_poll_seen [[gnu::tls_model("initial-exec")]];
constinit thread_local Seen t_select_seen [[gnu::tls_model("initial-exec")]];

std::uint32_t map_gen() noexcept {
    return g_runtime.map_gen.load(std::memory_order_acquire);
}

bool seen_before(const Seen& seen, const void* const (&at)[3], std::size_t bytes) noexcept {
    return seen.bytes == bytes && seen.at[0] == at[0] && seen.at[1] == at[1] &&
           seen.at[2] == at[2] && seen.gen == map_gen();
}

// The generation is read before the kernel reads the memory: a change
// between the two leaves an old generation, which the next call refuses.
void note_seen(Seen& seen, const void* const (&at)[3], std::size_t bytes,
               std::uint32_t gen) noexcept {
    if (!g_runtime.map_gen_watched.load(std::memory_order_relaxed))
        g_runtime.map_gen_watched.store(true, std::memory_order_release);
    for (int k = 0; k < 3; ++k) seen.at[k] = at[k];
    seen.bytes = bytes;
    seen.gen = gen;
}

bool poll_array_read(const void* fds, unsigned long nfds) noexcept {
    return seen_before(t_poll_seen, {fds, nullptr, nullptr}, nfds * sizeof(sys::PollFd));
}

Plan interrupted(Plan plan) noexcept {
    plan.action = Plan::Action::Interrupted;
    return plan;
}
SetPipe first_pipe_in_pollfds(void* fds, unsigned long nfds) noexcept {
    auto* pfds = static_cast<sys::PollFd*>(fds);
    for (unsigned long i = 0; i < nfds; ++i) {
        if (pfds[i].fd < 0) continue;
        FdInfo info = look_up(pfds[i].fd);
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
    return table().pipe_seen_below(nfds);
}

// The policy says nothing spins in waits on sets on this thread
// (SpinPolicy::never_spins for spin_poll): the call passes straight through,
// and may be the one that writes the interval line.
bool set_waits_never_spin(const PolicyParams& params) noexcept {
    if (!SpinPolicy::never_spins(g_runtime.spin_poll.load(std::memory_order_relaxed), params))
        return false;
    slow_path_hooks();
    return true;
}

// The same, or nothing is tracked at all (Runtime::inert).
bool set_waits_off(const PolicyParams& params) noexcept {
    return g_runtime.inert.load(std::memory_order_relaxed) || set_waits_never_spin(params);
}

// poll and ppoll (sigmask null for poll: the same zero-timeout ppoll looks
// at the set): an array the kernel read before, its pipe first
// (poll_array_read()); else the kernel looks first, which validates the
// array (a bad pointer gives EFAULT from the real call, not a crash here)
// and the mask, and a ready set is the answer at once. A cancellation point
// before the look, as the call's entry is (the look may be its answer).
Plan poll_set(Plan plan, void* fds, unsigned long nfds, const PolicyParams& params,
              std::int64_t timeout_ns, const void* sigmask) {
    SetPipe pipe;
    const bool read_before = poll_array_read(fds, nfds);
    if (read_before) {
        pipe = first_pipe_in_pollfds(fds, nfds);
        if (pipe.st == nullptr || passes_unlooked(plan, pipe, params)) return plan;
    }
    sys::test_cancel();
    const SignalMark mark;
    const std::uint32_t gen = map_gen();
    const long r = sys::ppoll0(fds, nfds, sigmask);
    if (r >= 0) note_seen(t_poll_seen, {fds, nullptr, nullptr}, nfds * sizeof(sys::PollFd), gen);
    if (r > 0) return done(nullptr, r);
    // A handler ran: the call fails with EINTR whatever SA_RESTART says.
    if (r == -EINTR) return interrupted(plan);
    if (r < 0) return plan;
    if (!read_before) pipe = first_pipe_in_pollfds(fds, nfds);
    if (pipe.st == nullptr) return plan;
    return spin_set(plan, pipe, Via::Poll, params, timeout_ns, sigmask, mark, true, true,
                    [&]() noexcept { return sys::ppoll0(fds, nfds, sigmask); });
}

}  // namespace

Plan before_poll(void* fds, unsigned long nfds, int timeout_ms) {
    Plan plan;
    plan.timeout_ms = timeout_ms;
    if (timeout_ms == 0 || nfds == 0 || g_runtime.inert.load(std::memory_order_relaxed))
        return plan;
    const PolicyParams params = g_runtime.params();
    if (set_waits_never_spin(params)) return plan;
    const std::int64_t timeout_ns =
        timeout_ms < 0 ? kNoTimeout : static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    plan = poll_set(plan, fds, nfds, params, timeout_ns, nullptr);
    // Never shorten the caller's timeout: what remains, rounded up to ms.
    if (plan.obs.spun && timeout_ms > 0)
        plan.timeout_ms = static_cast<int>((plan.timeout_ns + 999'999) / 1'000'000);
    return plan;
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
    // The first look cannot run on the caller's own sets (a select that
    // finds nothing zeroes them), so they are copied first, once the kernel
    // said they can be read (sys::readable(): where it says no, the real
    // call gives its own EFAULT), unless this thread passed the same sets
    // before with no unmap or protection change since (Seen). A set shorter
    // than nfds bits, with nfds above the size of the fd table (the kernel
    // reads only that far), may be found unreadable: the call then passes
    // through.
    constexpr int kWords = kMaxFds / 64;
    const int words = (nfds + 63) / 64;
    const std::size_t bytes = static_cast<std::size_t>(words) * 8;
    void* user[3] = {rfds, wfds, efds};
    std::uint64_t in[3][kWords];
    if (seen_before(t_select_seen, {rfds, wfds, efds}, bytes)) {
        for (int k = 0; k < 3; ++k)
            if (user[k] != nullptr) __builtin_memcpy(in[k], user[k], bytes);
    } else {
        const std::uint32_t gen = map_gen();
        for (int k = 0; k < 3; ++k) {
            if (user[k] == nullptr) continue;
            if (!sys::readable(user[k], bytes)) return plan;
            __builtin_memcpy(in[k], user[k], bytes);
        }
        note_seen(t_select_seen, {rfds, wfds, efds}, bytes, gen);
    }

    // The first tracked pipe in the read set, else in the write set.
    SetPipe pipe;
    for (int k = 0; k < 2 && pipe.st == nullptr; ++k) {
        if (user[k] == nullptr) continue;
        const Dir dir = k == 0 ? Dir::Read : Dir::Write;
        for (int w = 0; w < words && pipe.st == nullptr; ++w) {
            for (std::uint64_t bits = in[k][w]; bits != 0; bits &= bits - 1) {
                const int fd = w * 64 + __builtin_ctzll(bits);
                if (fd >= nfds) break;
                FdInfo info = look_up(fd);
                if (info.can(dir)) {
                    pipe = set_pipe(info, dir);
                    break;
                }
            }
        }
    }
    if (pipe.st == nullptr || passes_unlooked(plan, pipe, params)) return plan;

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
    return poll_set(plan, fds, nfds, params, timeout_ns, sigmask);
}

// Which pipe each epoll set waits on (one per set: the first one added) is
// kept in the epoll fd's aux word (FdTable::aux, cleared when the epoll fd
// is closed or replaced), as a watch word (FdTable::watch_word), which a
// close of the pipe makes stale.
void note_epoll_ctl(int epfd, int op, int fd, std::uint32_t events) noexcept {
    if (epfd < 0 || fd < 0 || g_runtime.inert.load(std::memory_order_relaxed)) return;
    std::atomic<std::uint64_t>* aux = table().aux(epfd, op == EPOLL_CTL_ADD);
    if (aux == nullptr) return;
    std::atomic<std::uint64_t>& slot = *aux;
    const std::uint64_t w = slot.load(std::memory_order_acquire);
    Dir old_dir;
    const int watched = table().watched_pipe(w, &old_dir);
    if (op == EPOLL_CTL_DEL) {
        if (watched == fd) slot.store(0, std::memory_order_release);
        return;
    }
    if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD) return;
    if (watched >= 0 && watched != fd) return;  // the set keeps its first pipe
    FdInfo info = table().lookup(fd, classifier());
    if ((events & sys::kPollIn) && info.can(Dir::Read))
        slot.store(table().watch_word(fd, Dir::Read), std::memory_order_release);
    else if ((events & sys::kPollOut) && info.can(Dir::Write))
        slot.store(table().watch_word(fd, Dir::Write), std::memory_order_release);
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
    const std::atomic<std::uint64_t>* aux = table().aux(epfd, false);
    if (aux == nullptr) return plan;
    Dir dir;
    const int fd = table().watched_pipe(aux->load(std::memory_order_acquire), &dir);
    if (fd < 0) return plan;
    FdInfo info = table().lookup(fd, classifier());
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
    if (passes_unlooked(plan, set_pipe(info, dir), params)) return plan;
    sys::test_cancel();  // the call's entry: the look may be the answer
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

}  // namespace pipespin
