// The gate of the shim's own system calls (contract in gate.h).
#include "platform/gate.h"

#include <sys/single_threaded.h>
#include <sys/syscall.h>

#include <cerrno>
#include <ctime>

#include "platform/sys.h"

namespace pipespin::sys {

// Read by every call of the shim's own: not among the cold variables.
constinit std::atomic<unsigned char> g_gate_closed{0};
constinit thread_local std::atomic<std::uint32_t> t_gate_inside{0};
constinit thread_local bool t_gate_listed = false;

namespace {

// The listed threads: where each keeps its count, and its tid (to tell a
// thread that is gone, or that belonged to the parent of a forked child).
PIPESPIN_COLD std::atomic<std::atomic<std::uint32_t>*> g_counts[kGateThreads];
PIPESPIN_COLD std::atomic<long> g_tids[kGateThreads];
PIPESPIN_COLD std::atomic<int> g_listed{0};
PIPESPIN_COLD std::atomic<bool> g_unlisted{false};

std::uint64_t monotonic_ms() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000u +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000u;
}

// sys::readable() without the gate (the closer's own look, before the
// filter): can the 8 bytes at p be read?
bool readable_now(const void* p) noexcept {
    return raw(SYS_rt_sigprocmask, -1, reinterpret_cast<long>(p), 0, 8) == -EINVAL;
}

// Waits until the thread listed as (count, tid) is gone or has no call
// inside the window, or the deadline passes.
void wait_for(const std::atomic<std::uint32_t>* count, long tid, long pid,
              std::uint64_t deadline_ms) noexcept {
    for (;;) {
        if (raw(SYS_tgkill, pid, tid, 0) != 0) return;  // gone (or a forked child's parent's)
        if (!readable_now(count) || count->load(std::memory_order_acquire) == 0) return;
        if (monotonic_ms() >= deadline_ms) return;
        raw(SYS_sched_yield);
    }
}

}  // namespace

bool gate_multithreaded() noexcept {
    return __libc_single_threaded == 0;
}

void gate_list_thread() noexcept {
    t_gate_listed = true;
    // A call through the gate: once it is closed (and a filter may be in
    // place) the thread needs no listing.
    const long tid = pipespin_gated_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
    if (tid < 0) return;
    const int i = g_listed.fetch_add(1, std::memory_order_acq_rel);
    if (i >= kGateThreads) {
        g_unlisted.store(true, std::memory_order_release);
        return;
    }
    g_tids[i].store(tid, std::memory_order_relaxed);
    g_counts[i].store(&t_gate_inside, std::memory_order_release);
}

void close_gate() noexcept {
    if (g_gate_closed.exchange(1, std::memory_order_seq_cst) != 0) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const int n = g_listed.load(std::memory_order_acquire);
    if (n == 0) return;
    const long pid = raw(SYS_getpid);
    const std::uint64_t deadline = monotonic_ms() + kWaitMs;
    for (int i = 0; i < n && i < kGateThreads; ++i) {
        const std::atomic<std::uint32_t>* count = g_counts[i].load(std::memory_order_acquire);
        // This thread's own call inside the window is one a handler
        // interrupted: the trampoline sent it back to its check.
        if (count == nullptr || count == &t_gate_inside) continue;
        wait_for(count, g_tids[i].load(std::memory_order_relaxed), pid, deadline);
    }
    if (g_unlisted.load(std::memory_order_acquire)) {
        const timespec pause{0, kUnlistedWaitMs * 1'000'000L};
        raw(SYS_nanosleep, reinterpret_cast<long>(&pause), 0);
    }
}

}  // namespace pipespin::sys

#if defined(__x86_64__)

// rdi = nr, rsi..r9 = the first five arguments, 8(%rsp) the sixth: moved
// to the registers of the system call convention before the window, so
// that a thread sent back to pipespin_gate_check finds them all in place
// (the kernel puts back every register it saved, and, for a call it
// restarts, %rax = the call's number).
asm(R"(
    .pushsection .text.pipespin_gate,"ax",@progbits
    .globl pipespin_gated_syscall
    .hidden pipespin_gated_syscall
    .type pipespin_gated_syscall, @function
    .p2align 4
pipespin_gated_syscall:
    .cfi_startproc
    endbr64
    movq %rdi, %rax
    movq %rsi, %rdi
    movq %rdx, %rsi
    movq %rcx, %rdx
    movq %r8, %r10
    movq %r9, %r8
    movq 8(%rsp), %r9
    .globl pipespin_gate_check
    .hidden pipespin_gate_check
pipespin_gate_check:
    cmpb $0, pipespin_gate_closed(%rip)
    jne 1f
    syscall
    .globl pipespin_gate_done
    .hidden pipespin_gate_done
pipespin_gate_done:
    ret
1:
    movq $-1, %rax
    ret
    .cfi_endproc
    .size pipespin_gated_syscall, .-pipespin_gated_syscall
    .popsection
)");

#else

extern "C" long pipespin_gated_syscall(long nr, long a, long b, long c, long d, long e,
                                       long f) noexcept {
    if (pipespin::sys::gate_closed()) return -EPERM;
    return pipespin::sys::raw6(nr, a, b, c, d, e, f);
}
extern "C" const char pipespin_gate_check[1] = {};
extern "C" const char pipespin_gate_done[1] = {};

#endif
