// Event waits: select, pselect, ppoll and the epoll family. When the set
// holds a tracked pipe, the core spins with zero-timeout calls (each given
// the caller's signal mask, where there is one, for the kernel to apply),
// and the real call then waits for what remains of the caller's timeout,
// rounded up to the call's unit so that a wait never ends early.
// select(0, NULL, NULL, NULL, &tv), a sleep, is never spun. The contract is
// hooks.cpp's; in addition:
//   - select updates *timeout to the time not slept, as Linux does, counting
//     the spin as slept;
//   - a signal handler that runs during the spin fails the call with EINTR,
//     whatever SA_RESTART says, as the kernel does for these calls; with a
//     signal mask, a handler runs because of it only if the call fails
//     with EINTR, as in the kernel (engine_sets.cpp, spin_set);
//   - a caller's pointer is read only where glibc reads it too (the
//     timeouts of select, pselect and ppoll), or after the kernel read it
//     (epoll_ctl's event, epoll_pwait2's timeout), or, for select's fd_sets,
//     as engine.h's before_select says;
//   - epoll_ctl is passed through and tells the core which pipe a set holds.
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <cerrno>
#include <climits>
#include <cstdint>

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/vfork.h"
#include "interpose/wrap.h"
#include "platform/sys.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

constexpr long long kNsPerSec = 1'000'000'000;

// ppoll, pselect: glibc reads the caller's timespec itself (it copies it, so
// that the kernel's update does not reach the caller), so reading it here
// adds no fault the call did not have.
std::int64_t ns_of(const timespec* ts) {
    return ts == nullptr ? kNoTimeout : wait_timeout_ns(ts->tv_sec, ts->tv_nsec, 1, kNsPerSec);
}

// The timeout the real call gets: what remains after a spin, else the
// caller's own.
const timespec* real_timeout(const Plan& plan, const timespec* ts, timespec& left) {
    if (!plan.obs.spun || plan.timeout_ns < 0) return ts;
    left = {static_cast<time_t>(plan.timeout_ns / kNsPerSec),
            static_cast<long>(plan.timeout_ns % kNsPerSec)};
    return &left;
}

// What remains of a timeout given in ms, rounded up.
int ms_of(std::int64_t ns) {
    const std::int64_t ms = (ns + 999'999) / 1'000'000;
    return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

// glibc reads select's timeval itself too (and writes it back).
int do_select(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* tv) {
    const int saved = errno;
    const std::int64_t ns =
        tv == nullptr ? kNoTimeout : wait_timeout_ns(tv->tv_sec, tv->tv_usec, 1000, 1'000'000);
    if (ns == kBadTimeout) return real_select(nfds, r, w, e, tv);
    Plan plan = before_select(nfds, r, w, e, ns, nullptr);
    if (tv != nullptr && plan.timeout_ns >= 0 && plan.timeout_ns < ns) {
        // The spin counts as slept; subtract whole µs only.
        const std::int64_t spent_us = (ns - plan.timeout_ns) / 1000;
        std::int64_t left_us = static_cast<std::int64_t>(tv->tv_sec) * 1'000'000 + tv->tv_usec;
        left_us = left_us > spent_us ? left_us - spent_us : 0;
        tv->tv_sec = static_cast<time_t>(left_us / 1'000'000);
        tv->tv_usec = static_cast<suseconds_t>(left_us % 1'000'000);
    }
    return finish<int>(plan, -1, saved, [&](int) { return real_select(nfds, r, w, e, tv); });
}

int do_ppoll(pollfd* fds, nfds_t nfds, const timespec* ts, const sigset_t* mask) {
    const int saved = errno;
    const std::int64_t ns = ns_of(ts);
    if (ns == kBadTimeout) return real_ppoll(fds, nfds, ts, mask);
    Plan plan = before_ppoll(fds, nfds, ns, mask);
    return finish<int>(plan, -1, saved, [&](int) {
        timespec left;
        return real_ppoll(fds, nfds, real_timeout(plan, ts, left), mask);
    });
}

}  // namespace

// ---- select -----------------------------------------------------------------

PIPESPIN_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* e, struct timeval* tv) {
    if (!engaged() || real_select == nullptr) [[unlikely]] {
        if (real_select != nullptr) return real_select(nfds, r, w, e, tv);
        return static_cast<int>(
            to_libc(sys::raw(SYS_select, nfds, reinterpret_cast<long>(r), reinterpret_cast<long>(w),
                             reinterpret_cast<long>(e), reinterpret_cast<long>(tv))));
    }
    return do_select(nfds, r, w, e, tv);
}

PIPESPIN_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* e, const struct timespec* ts,
                            const sigset_t* mask) {
    if (!engaged() || real_pselect == nullptr) [[unlikely]] {
        if (real_pselect != nullptr) return real_pselect(nfds, r, w, e, ts, mask);
        // The kernel updates the timeout it gets; pselect's is const.
        timespec copy = ts != nullptr ? *ts : timespec{};
        struct {
            const sigset_t* set;
            unsigned long size;
        } m{mask, 8};
        return static_cast<int>(to_libc(
            sys::raw(SYS_pselect6, nfds, reinterpret_cast<long>(r), reinterpret_cast<long>(w),
                     reinterpret_cast<long>(e), ts != nullptr ? reinterpret_cast<long>(&copy) : 0,
                     mask != nullptr ? reinterpret_cast<long>(&m) : 0)));
    }
    const int saved = errno;
    const std::int64_t ns = ns_of(ts);
    if (ns == kBadTimeout) return real_pselect(nfds, r, w, e, ts, mask);
    Plan plan = before_select(nfds, r, w, e, ns, mask);
    return finish<int>(plan, -1, saved, [&](int) {
        timespec left;
        return real_pselect(nfds, r, w, e, real_timeout(plan, ts, left), mask);
    });
}

// ---- ppoll ------------------------------------------------------------------

namespace {
// ppoll and __ppoll_chk: before the constructor, inside the shim's own
// code, or without a libc ppoll.
int ppoll_unengaged(pollfd* fds, nfds_t nfds, const timespec* ts, const sigset_t* mask) {
    if (real_ppoll != nullptr) return real_ppoll(fds, nfds, ts, mask);
    timespec copy = ts != nullptr ? *ts : timespec{};
    return static_cast<int>(to_libc(sys::raw(
        SYS_ppoll, reinterpret_cast<long>(fds), static_cast<long>(nfds),
        ts != nullptr ? reinterpret_cast<long>(&copy) : 0, reinterpret_cast<long>(mask), 8)));
}
}  // namespace

PIPESPIN_EXPORT int ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* ts,
                          const sigset_t* mask) {
    if (!engaged() || real_ppoll == nullptr) [[unlikely]]
        return ppoll_unengaged(fds, nfds, ts, mask);
    return do_ppoll(fds, nfds, ts, mask);
}

PIPESPIN_EXPORT int __ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* ts,
                                const sigset_t* mask, size_t fdslen) {
    if (fdslen / sizeof(*fds) < nfds) [[unlikely]] {
        if (auto real = real___ppoll_chk.get()) return real(fds, nfds, ts, mask, fdslen);
        __chk_fail();
    }
    if (!engaged() || real_ppoll == nullptr) [[unlikely]]
        return ppoll_unengaged(fds, nfds, ts, mask);
    return do_ppoll(fds, nfds, ts, mask);
}

// ---- epoll ------------------------------------------------------------------

PIPESPIN_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event* ev) noexcept {
    const int r = real_epoll_ctl != nullptr
                      ? real_epoll_ctl(epfd, op, fd, ev)
                      : static_cast<int>(to_libc(
                            sys::raw(SYS_epoll_ctl, epfd, op, fd, reinterpret_cast<long>(ev))));
    // Not a vfork child's: the sets the core knows are its parent's (vfork.h).
    if (r == 0 && !in_vfork_child()) {
        const int e = errno;
        note_epoll_ctl(epfd, op, fd, ev != nullptr && op != EPOLL_CTL_DEL ? ev->events : 0);
        sys::restore_errno(e);
    }
    return r;
}

namespace {

long raw_epoll_pwait(int epfd, epoll_event* ev, int max, int timeout, const sigset_t* mask) {
    return to_libc(sys::raw(SYS_epoll_pwait, epfd, reinterpret_cast<long>(ev), max, timeout,
                            reinterpret_cast<long>(mask), 8));
}

}  // namespace

PIPESPIN_EXPORT int epoll_wait(int epfd, struct epoll_event* ev, int max, int timeout) {
    if (!engaged() || real_epoll_wait == nullptr) [[unlikely]] {
        if (real_epoll_wait != nullptr) return real_epoll_wait(epfd, ev, max, timeout);
        return static_cast<int>(raw_epoll_pwait(epfd, ev, max, timeout, nullptr));
    }
    const int saved = errno;
    Plan plan = before_epoll_wait(epfd, ev, max, timeout < 0 ? -1 : timeout * 1'000'000ll, nullptr);
    return finish<int>(plan, -1, saved, [&](int) {
        return real_epoll_wait(epfd, ev, max, timeout < 0 ? timeout : ms_of(plan.timeout_ns));
    });
}

PIPESPIN_EXPORT int epoll_pwait(int epfd, struct epoll_event* ev, int max, int timeout,
                                const sigset_t* mask) {
    if (!engaged() || real_epoll_pwait == nullptr) [[unlikely]] {
        if (real_epoll_pwait != nullptr) return real_epoll_pwait(epfd, ev, max, timeout, mask);
        return static_cast<int>(raw_epoll_pwait(epfd, ev, max, timeout, mask));
    }
    const int saved = errno;
    Plan plan = before_epoll_wait(epfd, ev, max, timeout < 0 ? -1 : timeout * 1'000'000ll, mask);
    return finish<int>(plan, -1, saved, [&](int) {
        return real_epoll_pwait(epfd, ev, max, timeout < 0 ? timeout : ms_of(plan.timeout_ns),
                                mask);
    });
}

PIPESPIN_EXPORT int epoll_pwait2(int epfd, struct epoll_event* ev, int max,
                                 const struct timespec* ts, const sigset_t* mask) {
    if (!engaged() || real_epoll_pwait2 == nullptr) [[unlikely]] {
        if (real_epoll_pwait2 != nullptr) return real_epoll_pwait2(epfd, ev, max, ts, mask);
        // The kernel neither writes this timeout back nor needs a copy.
        return static_cast<int>(
            to_libc(sys::raw(SYS_epoll_pwait2, epfd, reinterpret_cast<long>(ev), max,
                             reinterpret_cast<long>(ts), reinterpret_cast<long>(mask), 8)));
    }
    // glibc passes the timespec to the kernel unread: so does the shim (the
    // core has the kernel check it before it reads it).
    const int saved = errno;
    Plan plan = ts != nullptr ? before_epoll_pwait2(epfd, ev, max, ts, mask)
                              : before_epoll_wait(epfd, ev, max, kNoTimeout, mask);
    return finish<int>(plan, -1, saved, [&](int) {
        timespec left;
        return real_epoll_pwait2(epfd, ev, max, real_timeout(plan, ts, left), mask);
    });
}
