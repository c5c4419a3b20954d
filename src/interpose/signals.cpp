// Signal handlers the program installs are wrapped in a trampoline, so that a
// spin in user space learns that a handler ran while it stood in for a
// blocking call (src/core/signals.h says what the core does with that).
//
// Contract: the program sees exactly its own handlers and flags through
// sigaction(oldact) and signal()'s return value; SIG_DFL and SIG_IGN, and the
// signals glibc keeps for itself, pass straight through. Handlers installed
// before the shim's constructor ran, or by a raw syscall, are not wrapped: a
// spin then cannot notice them (it stays bounded by its budget).
#include <dlfcn.h>
#include <signal.h>

#include <atomic>
#include <cerrno>

#include "core/signals.h"
#include "interpose/real.h"

#define PIPESPIN_EXPORT extern "C" __attribute__((visibility("default")))

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

constexpr int kMaxSig = 65;

struct UserHandler {
    std::atomic<void*> fn{nullptr};    // the program's handler
    std::atomic<bool> siginfo{false};  // it wants (int, siginfo_t*, void*)
};
UserHandler g_user[kMaxSig];
// Signals siginterrupt() asked to interrupt system calls: signal() then
// installs without SA_RESTART, as glibc's own signal() does.
std::atomic<std::uint64_t> g_sigintr{0};

int bsd_flags(int sig) {
    return (g_sigintr.load(std::memory_order_relaxed) >> (sig & 63)) & 1 ? 0 : SA_RESTART;
}

void trampoline(int sig, siginfo_t* info, void* uctx) {
    const int saved = errno;
    note_signal(sig);  // raw syscalls only: errno is untouched, restored anyway
    errno = saved;
    if (sig <= 0 || sig >= kMaxSig) return;
    UserHandler& u = g_user[sig];
    void* fn = u.fn.load(std::memory_order_acquire);
    if (fn == nullptr) return;
    if (u.siginfo.load(std::memory_order_relaxed))
        reinterpret_cast<void (*)(int, siginfo_t*, void*)>(fn)(sig, info, uctx);
    else
        reinterpret_cast<void (*)(int)>(fn)(sig);
}

bool is_trampoline(const struct sigaction& sa) {
    return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == trampoline;
}

bool is_function(const struct sigaction& sa) {
    if (sa.sa_flags & SA_SIGINFO) return sa.sa_sigaction != nullptr;
    return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_ERR;
}

// Shows the program what it installed, not our trampoline.
void unwrap(int sig, struct sigaction* sa, void* prev_fn, bool prev_siginfo) {
    if (sa == nullptr || !is_trampoline(*sa) || sig <= 0 || sig >= kMaxSig) return;
    if (prev_siginfo) {
        sa->sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(prev_fn);
    } else {
        sa->sa_flags &= ~SA_SIGINFO;
        sa->sa_handler = reinterpret_cast<void (*)(int)>(prev_fn);
    }
}

int call_real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    return real_sigaction(sig, act, old);
}

int wrapped_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    if (real_sigaction == nullptr) {
        // Before the constructor: resolve now (never reached from a handler:
        // nothing is wrapped yet).
        real_sigaction = reinterpret_cast<sigaction_fn>(dlsym(RTLD_NEXT, "sigaction"));
        if (real_sigaction == nullptr) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (!g_ready.load(std::memory_order_acquire) || sig <= 0 || sig >= kMaxSig)
        return call_real_sigaction(sig, act, old);

    UserHandler& u = g_user[sig];
    void* prev_fn = u.fn.load(std::memory_order_acquire);
    const bool prev_siginfo = u.siginfo.load(std::memory_order_relaxed);
    if (act == nullptr || !is_function(*act)) {
        int r = call_real_sigaction(sig, act, old);
        unwrap(sig, old, prev_fn, prev_siginfo);
        return r;
    }
    struct sigaction mine = *act;
    const bool wants_siginfo = (act->sa_flags & SA_SIGINFO) != 0;
    void* fn = wants_siginfo ? reinterpret_cast<void*>(act->sa_sigaction)
                             : reinterpret_cast<void*>(act->sa_handler);
    mine.sa_flags |= SA_SIGINFO;
    mine.sa_sigaction = trampoline;
    // Publish the handler before the kernel can deliver to the trampoline.
    u.siginfo.store(wants_siginfo, std::memory_order_relaxed);
    u.fn.store(fn, std::memory_order_release);
    int r = call_real_sigaction(sig, &mine, old);
    if (r != 0) {
        u.siginfo.store(prev_siginfo, std::memory_order_relaxed);
        u.fn.store(prev_fn, std::memory_order_release);
        return r;
    }
    unwrap(sig, old, prev_fn, prev_siginfo);
    return r;
}

// signal() and friends, on top of the wrapped sigaction, with the semantics
// glibc gives each: BSD (SA_RESTART, handler stays) or System V
// (SA_RESETHAND | SA_NODEFER, no restart).
sighandler_t install(int sig, sighandler_t handler, int flags, bool block_self) {
    if (handler == SIG_ERR || sig <= 0 || sig >= kMaxSig) {
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

}  // namespace

PIPESPIN_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    return wrapped_sigaction(sig, act, old);
}

PIPESPIN_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    return install(sig, handler, bsd_flags(sig), true);
}

PIPESPIN_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) {
    return install(sig, handler, bsd_flags(sig), true);
}

// The real siginterrupt() re-installs the current action (our trampoline, if
// wrapped) with SA_RESTART changed; we only remember it for signal().
PIPESPIN_EXPORT int siginterrupt(int sig, int flag) {
    if (real_siginterrupt == nullptr) {
        errno = ENOSYS;
        return -1;
    }
    int r = real_siginterrupt(sig, flag);
    if (r == 0 && sig > 0 && sig < kMaxSig) {
        const std::uint64_t bit = 1ull << (sig & 63);
        if (flag)
            g_sigintr.fetch_or(bit, std::memory_order_relaxed);
        else
            g_sigintr.fetch_and(~bit, std::memory_order_relaxed);
    }
    return r;
}

PIPESPIN_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

PIPESPIN_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

// sigset(): SIG_HOLD blocks the signal; anything else installs the handler
// and unblocks it; the return value is SIG_HOLD if it was blocked.
PIPESPIN_EXPORT sighandler_t sigset(int sig, sighandler_t handler) {
    if (sig <= 0 || sig >= kMaxSig) {
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
