// The real libc functions behind our wrappers.
//
// Contract: real_<name> stands for the next definition of <name> after the
// shim (what dlsym(RTLD_NEXT) finds), resolved on its first use, not at
// start-up: most processes call a handful of the ~75 hooked names, and each
// resolution costs a hash look-up. A real_<name> is used as the function
// pointer itself (real_read(fd, buf, n); real_x != nullptr: libc has it).
// A resolution is async-signal-safe (a look-up in the loader's symbol
// tables, no lock, no allocation: next_symbol.h); only where that look-up
// has no answer does it ask dlsym. Wrappers never call dlsym themselves. A name libc lacks (an
// older glibc) resolves to null, and its wrapper passes straight to the
// kernel through a raw syscall, which is what the libc function would do.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>

#include "interpose/vfork.h"

namespace pipespin::interpose {

// Every hooked name, in hooks.def order.
enum class Hook : int {
#define PIPESPIN_HOOK(ret, name, params) name,
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
    kCount
};

// Resolves h now and stores it where real_<name> reads it; null if libc has
// no such name. Async-signal-safe (but where only dlsym has the answer).
void* resolve_hook(Hook h) noexcept;
// Before a fork, once per process: resolves the names a forked child calls
// where its parent may not have (real.cpp), so that each child inherits them.
void resolve_before_fork() noexcept;

template <class Fn, Hook H>
class Real {
public:
    Fn get() const noexcept {
        void* p = slot.load(std::memory_order_acquire);
        if (p == nullptr) [[unlikely]]
            p = resolve_hook(H);
        return reinterpret_cast<Fn>(p);
    }
    // Used as the pointer itself: a call, a comparison with nullptr.
    operator Fn() const noexcept { return get(); }
    // A call, with the first use's resolution out of line: a wrapper whose
    // every path is a tail call then saves no register for it (read and
    // write: the call most programs make most). For a name libc has.
    template <class... A>
    auto tail_call(A... a) const noexcept {
        void* p = slot.load(std::memory_order_acquire);
        if (p == nullptr) [[unlikely]]
            return resolving_call(a...);
        return reinterpret_cast<Fn>(p)(a...);
    }

    std::atomic<void*> slot{nullptr};

private:
    template <class... A>
    [[gnu::noinline]] static auto resolving_call(A... a) noexcept {
        return reinterpret_cast<Fn>(resolve_hook(H))(a...);
    }
};

#define PIPESPIN_HOOK(ret, name, params) \
    using name##_fn = ret(*) params;     \
    extern Real<name##_fn, Hook::name> real_##name;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK

// Set once everything is resolved and configured; wrappers that see it false
// pass through.
extern std::atomic<bool> g_ready;

// Re-entry guard: set while the shim's own slow-path code (start-up,
// logging, exit report) runs, so that any libc call it makes passes through.
extern constinit thread_local bool t_busy [[gnu::tls_model("initial-exec")]];

class BusyScope {
public:
    BusyScope() noexcept : was_(t_busy) { t_busy = true; }
    ~BusyScope() { t_busy = was_; }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;

private:
    bool was_;
};

// init.cpp: statistics lines or the exit summary are on (at start-up or
// after a reload): a forked child must start its own counters.
void counters_are_read() noexcept;

// init.cpp: the program is about to close its stderr (coreutils'
// close_stdout at exit): what the shim writes there at exit (the summary at
// PIPESPIN_LOG=info, the statistics line with PIPESPIN_STATS=stderr) is
// written now instead, once.
void before_stderr_closes() noexcept;

// init.cpp: the program is about to sandbox itself (prctl PR_SET_NO_NEW_PRIVS,
// PR_SET_SECCOMP): from its next call on, a system call it does not make
// itself may kill it (SECCOMP_RET_KILL), fail, or be logged. The shim writes
// now what it would write at exit, then steps aside for good: mode off with
// nothing to report (Runtime::inert), no reload, no statistics line, no log
// line; the process's calls are the real calls alone. Not in a vfork child
// (its memory is its parent's). Before the constructor ran, the constructor
// does the same without reading any configuration.
void before_sandbox() noexcept;

// Not while a vfork mark stands either (vfork.h): in a vfork child, whatever
// it reads, writes or waits on, its calls are the real calls alone, so that
// nothing of its own (a write to a fd it dup2()ed, classified in the table)
// lands in its parent's memory. One more TLS load while no vfork is under
// way. The parent, resumed, clears the mark in its next hook that records
// (in_vfork_child()) or its next read, write or poll (their unengaged
// paths, engage_again()); until then its calls pass through as the child's.
inline bool engaged() noexcept {
    return g_ready.load(std::memory_order_acquire) && !t_busy && !vfork_marked();
}

// On an unengaged path: the mark that kept the call from the shim was its
// own, from a vfork whose child is gone (cleared now), and nothing else
// keeps it out. Out of line where it matters (vfork_parent_resumed()).
inline bool engage_again() noexcept {
    return vfork_marked() && vfork_parent_resumed() && engaged();
}

}  // namespace pipespin::interpose
