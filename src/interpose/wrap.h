// What every wrapper file shares (hooks.cpp, hooks_stdio.cpp,
// hooks_event.cpp, hooks_vector.cpp, hooks_signal.cpp): the export
// attribute, the raw-syscall to libc result convention, and steps 3-4 of
// the wrapper contract (hooks.cpp states it): act on the core's plan and
// call the real function.
#pragma once

#include <cerrno>

#include "core/engine.h"
#include "platform/sys.h"

#define PIPESPIN_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" void __chk_fail(void) __attribute__((noreturn));

namespace pipespin::interpose {

// Raw-syscall result to the libc convention.
inline long to_libc(long r) noexcept {
    if (r < 0) {
        errno = static_cast<int>(-r);
        return -1;
    }
    return r;
}

// Plan::Action::Call: the real call, counted after it.
template <class R, class Call>
R finish_call(Plan& plan, int fd, int saved_errno, Call&& call) {
    sys::restore_errno(saved_errno);
    R r = call(fd);
    if (plan.dir != nullptr) {
        const int e = errno;
        after_call(plan, static_cast<long>(r));
        sys::restore_errno(e);
    }
    return r;
}

// A call that cannot be made without blocking (poll, select, epoll: a
// handler that runs during their wait fails them with EINTR whatever the
// set holds): a spin's EINTR stands.
inline long cannot_try() noexcept {
    return -EAGAIN;
}

// A RWF_NOWAIT try (preadv2, pwritev2): the kernel refuses the flag with
// EOPNOTSUPP for a file that cannot honour it, and with EINVAL before 4.14;
// either says nothing about the call.
inline long nowait_try(long r) noexcept {
    return r == -EINVAL ? -EOPNOTSUPP : r;
}

// Done: the plan's result; Interrupted: EINTR, if the call would have
// blocked; Call: the real call, whose errno the program gets. after_call()
// sees what the program gets.
//
// Interrupted: a handler that wants EINTR ran during the spin. The blocking
// call would have been interrupted only if it would have blocked at all:
// one that the kernel answers at once (0 bytes asked, a bad fd or offset,
// data or room that came with the signal) must get the kernel's answer.
// `try_now` makes the very call without blocking (RWF_NOWAIT,
// SPLICE_F_NONBLOCK) and returns its raw result; -EAGAIN (it would block)
// is the EINTR. Where the kernel cannot try the call without blocking
// (RWF_NOWAIT refused: -EOPNOTSUPP) the EINTR stands, as before. The fd's
// O_NONBLOCK was read by the spin (engine_detail.h): a non-blocking fd
// never gets here.
template <class R, class Call, class Try>
R finish(Plan& plan, int fd, int saved_errno, Call&& call, Try&& try_now) {
    switch (plan.action) {
        case Plan::Action::Done:
            break;
        case Plan::Action::Interrupted: {
            const long r = try_now();
            if (r == -EAGAIN || r == -EOPNOTSUPP) {
                after_call(plan, -EINTR);
                errno = EINTR;
                return -1;
            }
            plan.action = Plan::Action::Done;
            plan.result = r;
            break;
        }
        case Plan::Action::Call:
            return finish_call<R>(plan, fd, saved_errno, call);
    }
    after_call(plan, plan.result);
    if (plan.result < 0) {
        errno = static_cast<int>(-plan.result);
        return -1;
    }
    sys::restore_errno(saved_errno);
    return static_cast<R>(plan.result);
}

template <class R, class Call>
R finish(Plan& plan, int fd, int saved_errno, Call&& call) {
    return finish<R>(plan, fd, saved_errno, call, cannot_try);
}

}  // namespace pipespin::interpose
