// The libc names that install signal handlers: sigaction and __sigaction,
// and signal() and its relatives on top of it, with the semantics glibc
// gives each. Each is a thin wrapper around wrapped_sigaction()
// (signals.cpp), which puts the program's handler behind the trampoline
// while anything can spin, and shows the program its own handlers and
// flags. Until then (signals_pass_through()) the signal() family calls the
// next definition of its own name instead: libc's, or that of a preload
// after the shim that interposes it (the JDK's libjsig).
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "interpose/real.h"
#include "interpose/signals.h"
#include "interpose/trampoline.h"
#include "interpose/wrap.h"

using namespace pipespin::interpose;

namespace {

// Signals siginterrupt() asked to interrupt system calls: signal() then
// installs without SA_RESTART, as glibc's own signal() does.
std::atomic<std::uint64_t> g_sigintr{0};

// siginterrupt(sig, flag) succeeded: signal() installs sig without
// SA_RESTART from now on (flag), or with it.
void note_sigintr(int sig, int flag) {
    const std::uint64_t bit = 1ull << (sig & 63);
    if (flag)
        g_sigintr.fetch_or(bit, std::memory_order_relaxed);
    else
        g_sigintr.fetch_and(~bit, std::memory_order_relaxed);
}

int bsd_flags(int sig) {
    return (g_sigintr.load(std::memory_order_relaxed) >> (sig & 63)) & 1 ? 0 : SA_RESTART;
}

// signal() and friends, on top of the wrapped sigaction, with the semantics
// glibc gives each: BSD (SA_RESTART unless siginterrupt() said otherwise,
// handler stays) or System V (SA_RESETHAND | SA_NODEFER, no restart).
sighandler_t install(int sig, sighandler_t handler, int flags, bool block_self) {
    if (handler == SIG_ERR || sig <= 0 || sig >= kSigSlots) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction act {
    }, old{};
    act.sa_handler = handler;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (block_self) sigaddset(&act.sa_mask, sig);
    if (wrapped_sigaction(sig, &act, &old) < 0) return SIG_ERR;
    return old.sa_handler;
}

sighandler_t bsd_signal_impl(int sig, sighandler_t handler) {
    return install(sig, handler, sig > 0 && sig < kSigSlots ? bsd_flags(sig) : 0, true);
}

}  // namespace

PIPESPIN_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    return wrapped_sigaction(sig, act, old);
}

PIPESPIN_EXPORT int __sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    return wrapped_sigaction(sig, act, old);
}

PIPESPIN_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    if (signals_pass_through() && real_signal != nullptr)
        return signals_after_pass_through(sig, real_signal(sig, handler));
    return bsd_signal_impl(sig, handler);
}

PIPESPIN_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) {
    if (signals_pass_through() && real_bsd_signal != nullptr)
        return signals_after_pass_through(sig, real_bsd_signal(sig, handler));
    return bsd_signal_impl(sig, handler);
}

PIPESPIN_EXPORT sighandler_t ssignal(int sig, sighandler_t handler) {
    if (signals_pass_through() && real_ssignal != nullptr)
        return signals_after_pass_through(sig, real_ssignal(sig, handler));
    return bsd_signal_impl(sig, handler);
}

// As glibc's: remember the choice for signal(), and re-install the current
// action with SA_RESTART changed (here through the wrapped sigaction, so
// that the trampoline's SA_RESTART bit follows). In a vfork child too: glibc
// keeps the choice in its own memory (_sigintr), which the child shares with
// its parent, so the parent's later signal() sees it there as well.
PIPESPIN_EXPORT int siginterrupt(int sig, int flag) {
    // Not armed: libc's own, which keeps the choice where libc's signal()
    // (called through, above) reads it; the shim's copy follows for the
    // day it is armed.
    if (signals_pass_through() && real_siginterrupt != nullptr) {
        const int r = real_siginterrupt(sig, flag);
        if (r == 0 && sig > 0 && sig < kSigSlots) {
            note_sigintr(sig, flag);
            // Armed meanwhile: wrap what libc re-installed (no handler to show).
            signals_after_pass_through(sig, SIG_DFL);
        }
        return r;
    }
    struct sigaction act {};
    if (wrapped_sigaction(sig, nullptr, &act) < 0) return -1;
    note_sigintr(sig, flag);
    if (flag)
        act.sa_flags &= ~SA_RESTART;
    else
        act.sa_flags |= SA_RESTART;
    return wrapped_sigaction(sig, &act, nullptr) < 0 ? -1 : 0;
}

PIPESPIN_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) {
    if (signals_pass_through() && real_sysv_signal != nullptr)
        return signals_after_pass_through(sig, real_sysv_signal(sig, handler));
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

PIPESPIN_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) {
    if (signals_pass_through() && real___sysv_signal != nullptr)
        return signals_after_pass_through(sig, real___sysv_signal(sig, handler));
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

// sigset(): SIG_HOLD blocks the signal; anything else installs the handler
// and unblocks it; the return value is SIG_HOLD if it was blocked.
PIPESPIN_EXPORT sighandler_t sigset(int sig, sighandler_t handler) {
    if (signals_pass_through() && real_sigset != nullptr)
        return signals_after_pass_through(sig, real_sigset(sig, handler));
    if (sig <= 0 || sig >= kSigSlots) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigset_t one, prev_mask;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct sigaction old {};
    if (handler == SIG_HOLD) {
        if (wrapped_sigaction(sig, nullptr, &old) < 0) return SIG_ERR;
        if (sigprocmask(SIG_BLOCK, &one, &prev_mask) < 0) return SIG_ERR;
        return sigismember(&prev_mask, sig) ? SIG_HOLD : old.sa_handler;
    }
    struct sigaction act {};
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (wrapped_sigaction(sig, &act, &old) < 0) return SIG_ERR;
    if (sigprocmask(SIG_UNBLOCK, &one, &prev_mask) < 0) return SIG_ERR;
    return sigismember(&prev_mask, sig) ? SIG_HOLD : old.sa_handler;
}
