// readv and writev, and splice and tee, which move pipe data inside the
// kernel. readv is read with an iovec array (its nowait look is preadv2 of
// the same array); writev waits for room, then writes; splice and tee wait,
// consuming nothing, until their input pipe is readable (or, when the input
// is not a tracked pipe, their output pipe writable), unless called with
// SPLICE_F_NONBLOCK. The contract is hooks.cpp's.
#include <fcntl.h>
#include <sys/uio.h>

#include <cerrno>

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

// splice and tee: a wait for the input pipe, else for the output pipe (not
// for 0 bytes, which the kernel answers at once). A handler that interrupts
// the wait gets EINTR only if the call, tried with SPLICE_F_NONBLOCK, would
// still block (wrap.h, finish()): a bad fd or offset, tee of a pipe to
// itself, get the kernel's error.
Plan before_transfer(int in, int out, unsigned int flags) {
    if (flags & SPLICE_F_NONBLOCK) return {};
    Plan plan = before_ready(in, Dir::Read, Via::Splice);
    if (plan.dir == nullptr) plan = before_ready(out, Dir::Write, Via::Splice);
    plan.per_call = false;  // the result is the bytes moved, as a read's or a write's
    return plan;
}

}  // namespace

PIPESPIN_EXPORT ssize_t readv(int fd, const struct iovec* iov, int n) {
    if (!engaged() || real_readv == nullptr) [[unlikely]] {
        if (real_readv != nullptr) return real_readv(fd, iov, n);
        return to_libc(sys::raw(SYS_readv, fd, reinterpret_cast<long>(iov), n));
    }
    const int saved = errno;
    Plan plan = before_readv(fd, iov, n);
    return finish<ssize_t>(
        plan, fd, saved, [&](int use) { return real_readv(use, iov, n); },
        [&] { return nowait_try(sys::readv_nowait(fd, iov, n)); });
}

PIPESPIN_EXPORT ssize_t writev(int fd, const struct iovec* iov, int n) {
    if (!engaged() || real_writev == nullptr) [[unlikely]] {
        if (real_writev != nullptr) return real_writev(fd, iov, n);
        return to_libc(sys::raw(SYS_writev, fd, reinterpret_cast<long>(iov), n));
    }
    const int saved = errno;
    Plan plan = before_writev(fd, iov, n);
    return finish<ssize_t>(
        plan, fd, saved, [&](int use) { return real_writev(use, iov, n); },
        [&] { return nowait_try(sys::writev_nowait(fd, iov, n)); });
}

PIPESPIN_EXPORT ssize_t splice(int in, loff_t* in_off, int out, loff_t* out_off, size_t len,
                               unsigned int flags) {
    if (!engaged() || real_splice == nullptr) [[unlikely]] {
        if (real_splice != nullptr) return real_splice(in, in_off, out, out_off, len, flags);
        return to_libc(sys::raw(SYS_splice, in, reinterpret_cast<long>(in_off), out,
                                reinterpret_cast<long>(out_off), static_cast<long>(len), flags));
    }
    const int saved = errno;
    Plan plan = len == 0 ? Plan{} : before_transfer(in, out, flags);
    return finish<ssize_t>(
        plan, -1, saved, [&](int) { return real_splice(in, in_off, out, out_off, len, flags); },
        [&] {
            return sys::raw(SYS_splice, in, reinterpret_cast<long>(in_off), out,
                            reinterpret_cast<long>(out_off), static_cast<long>(len),
                            flags | SPLICE_F_NONBLOCK);
        });
}

PIPESPIN_EXPORT ssize_t tee(int in, int out, size_t len, unsigned int flags) {
    if (!engaged() || real_tee == nullptr) [[unlikely]] {
        if (real_tee != nullptr) return real_tee(in, out, len, flags);
        return to_libc(sys::raw(SYS_tee, in, out, static_cast<long>(len), flags));
    }
    const int saved = errno;
    Plan plan = len == 0 ? Plan{} : before_transfer(in, out, flags);
    return finish<ssize_t>(
        plan, -1, saved, [&](int) { return real_tee(in, out, len, flags); },
        [&] {
            return sys::raw(SYS_tee, in, out, static_cast<long>(len), flags | SPLICE_F_NONBLOCK);
        });
}
