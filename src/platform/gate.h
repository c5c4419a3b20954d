// The gate every system call of the shim's own passes (a probe, a look at
// the run queue, a statistics line; not a call the program made, which the
// shim makes raw only before it has resolved libc's): once a sandbox is
// about to be installed (close_gate()), the shim's own calls are refused
// without reaching the kernel (-EPERM), so that a seccomp filter never sees
// one. What has to hold (docs/intercepted.md, "Sandboxes"):
//
//   - a call that checked the gate before it closed and is still on its way
//     to the kernel must not be made after the filter is in place:
//       * on the thread that closes the gate, that call can only be one a
//         signal handler interrupted (the handler then installs the
//         filter). The check and the `syscall` instruction are one small
//         window of assembly (x86_64); the signal trampolines
//         (interpose/trampoline.cpp) move a thread interrupted inside it
//         back to its check, so that the call, resumed after the handler,
//         checks again and is refused;
//       * on other threads (a filter with SECCOMP_FILTER_FLAG_TSYNC):
//         each thread counts the calls it has inside the window
//         (t_gate_inside, in its own TLS, behind a full fence, so that it
//         and the closer cannot both miss each other), and close_gate()
//         waits, after it closed the gate, until every other thread's count
//         is zero. Only once a process has a second thread (glibc's
//         __libc_single_threaded): each thread is listed at its first call
//         of the shim's own from then on, in a list of kGateThreads;
//   - nothing more per call than a thread-local count, a fence and a load.
//
// Bounds: a thread past kGateThreads is not listed (close_gate() then also
// waits kUnlistedWaitMs); a wait for a thread that stays inside longer than
// kWaitMs (one that died there) gives up. Without the assembly window
// (other architectures) a handler that interrupts its own thread between
// the check and the call is not caught.
#pragma once

#include <atomic>
#include <cstdint>

namespace pipespin::sys {

// The window (x86_64): pipespin_gate_check is the check, pipespin_gate_done
// the instruction after the `syscall`.
extern "C" long pipespin_gated_syscall(long nr, long a, long b, long c, long d, long e,
                                       long f) noexcept;
extern "C" const char pipespin_gate_check[];
extern "C" const char pipespin_gate_done[];

// Nonzero once closed (for good, in this process and its forked children).
extern std::atomic<unsigned char> g_gate_closed asm("pipespin_gate_closed");

extern constinit thread_local std::atomic<std::uint32_t> t_gate_inside
    [[gnu::tls_model("initial-exec")]];
extern constinit thread_local bool t_gate_listed [[gnu::tls_model("initial-exec")]];

inline constexpr int kGateThreads = 512;
inline constexpr int kWaitMs = 1000;
inline constexpr int kUnlistedWaitMs = 20;

// Lists this thread, once, where the process has more than one.
void gate_list_thread() noexcept;
bool gate_multithreaded() noexcept;

// A system call of the shim's own, through the gate: -EPERM once closed.
// A process with one thread counts nothing (no other thread could be
// inside the window when the gate closes, and no thread can start while
// its only thread is inside the window), nor writes the count, which is on
// a page a forked child would have to copy.
inline long own6(long nr, long a, long b, long c, long d, long e, long f) noexcept {
    if (!gate_multithreaded()) [[likely]]
        return pipespin_gated_syscall(nr, a, b, c, d, e, f);
    t_gate_inside.store(t_gate_inside.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!t_gate_listed) [[unlikely]]
        gate_list_thread();
    const long r = pipespin_gated_syscall(nr, a, b, c, d, e, f);
    t_gate_inside.store(t_gate_inside.load(std::memory_order_relaxed) - 1,
                        std::memory_order_release);
    return r;
}

inline bool gate_closed() noexcept {
    return g_gate_closed.load(std::memory_order_relaxed) != 0;
}

// Closes the gate, then waits until no other thread is between its check
// and its call (see above). The caller's own calls are refused from here.
void close_gate() noexcept;

}  // namespace pipespin::sys
