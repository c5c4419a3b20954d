// The real libc functions behind our wrappers.
//
// Contract: real_<name> is null until the shim's constructor resolved it with
// dlsym(RTLD_NEXT). Wrappers never call dlsym themselves (a signal handler
// may be the caller); before resolution they pass straight to the kernel
// through raw syscalls, which is what the libc function would do anyway.
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

namespace pipespin::interpose {

#define PIPESPIN_HOOK(ret, name, params) \
    using name##_fn = ret(*) params;     \
    extern name##_fn real_##name;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK

// Set once everything is resolved and configured; wrappers that see it false
// pass through.
extern std::atomic<bool> g_ready;

// Resolves every real_ pointer. Returns the name of a missing symbol that the
// shim cannot work without, or null.
const char* resolve_all() noexcept;

// For hooks that are not async-signal-safe anyway (stdio): the real
// function, resolved now if a call came before the constructor.
void* resolve_one(const char* name) noexcept;
template <class Fn>
Fn lazy(Fn& real, const char* name) noexcept {
    if (real == nullptr) real = reinterpret_cast<Fn>(resolve_one(name));
    return real;
}

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

// init.cpp: the program is about to close its stderr (coreutils'
// close_stdout at exit): what the shim writes there at exit (the summary at
// PIPESPIN_LOG=info, the statistics line with PIPESPIN_STATS=stderr) is
// written now instead, once.
void before_stderr_closes() noexcept;

inline bool engaged() noexcept {
    return g_ready.load(std::memory_order_acquire) && !t_busy;
}

}  // namespace pipespin::interpose
