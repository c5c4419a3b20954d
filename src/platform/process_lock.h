// A lock that belongs to a process: held, it records its holder's pid, so
// that a child forked while another thread of its parent held it finds it
// free (the holder does not exist in the child), without a fork handler.
// The shim registers no fork handler in processes that do not need one (a
// handler costs every process its registration, and every fork a call).
//
// Contract: lock-free, allocation-free, async-signal-safe; taking or
// checking it costs a getpid system call, so it guards slow paths only
// (a live reload, installing signal handlers). Not recursive.
#pragma once

#include <atomic>

#include "platform/sys.h"

namespace pipespin::sys {

class ProcessLock {
public:
    // Takes the lock unless a thread of this process holds it.
    bool try_lock() noexcept {
        const long me = raw(SYS_getpid);
        long holder = owner_.load(std::memory_order_relaxed);
        for (;;) {
            if (holder == me) return false;
            // Free, or held by a process this one was forked from.
            if (owner_.compare_exchange_weak(holder, me, std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
    }
    void lock() noexcept {
        while (!try_lock()) sys::sched_yield();
    }
    void unlock() noexcept { owner_.store(0, std::memory_order_release); }

private:
    std::atomic<long> owner_{0};
};

}  // namespace pipespin::sys
