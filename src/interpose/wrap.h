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

// Done: the plan's result; Interrupted: EINTR; Call: the real call, whose
// errno the program gets. after_call() sees what the program gets.
template <class R, class Call>
R finish(Plan& plan, int fd, int saved_errno, Call&& call) {
    switch (plan.action) {
        case Plan::Action::Done:
            after_call(plan, plan.result);
            if (plan.result < 0) {
                errno = static_cast<int>(-plan.result);
                return -1;
            }
            sys::restore_errno(saved_errno);
            return static_cast<R>(plan.result);
        case Plan::Action::Interrupted:
            after_call(plan, -EINTR);
            errno = EINTR;
            return -1;
        case Plan::Action::Call:
            break;
    }
    sys::restore_errno(saved_errno);
    R r = call(fd);
    if (plan.dir != nullptr) {
        const int e = errno;
        after_call(plan, static_cast<long>(r));
        sys::restore_errno(e);
    }
    return r;
}

}  // namespace pipespin::interpose
