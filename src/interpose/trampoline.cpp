// The signal trampolines (contract in trampoline.h).
//
// Why assembly on x86_64: a handler may run on a tiny alternate stack
// (MINSIGSTKSZ is legal), or on one the program made read-only (an empty
// handler only reads its stack: `ret`). Any byte the shim pushed there would
// overflow the first or fault on the second, and a fault on the alternate
// stack cannot be delivered: the program dies. So the trampoline never
// touches the stack: it bumps the thread's epochs in TLS, tests the signal's
// SA_RESTART bit, loads the program's handler and jumps to it. rdi, rsi and
// rdx still hold (sig, info, uctx) as the kernel set them (the kernel sets
// rsi and rdx for plain handlers too, which ignore them), rax is still 0 and
// rsp is untouched; rcx, r8 and flags are scratch at a function's entry.
#include "interpose/trampoline.h"

#include "core/signals.h"
#include "platform/sys.h"

namespace pipespin::interpose {

// Written when a handler is installed, read when one runs: no start-up page.
PIPESPIN_COLD constinit std::atomic<void*> g_plain_handlers[kSigSlots] = {};
PIPESPIN_COLD constinit std::atomic<void*> g_info_handlers[kSigSlots] = {};

}  // namespace pipespin::interpose

#if defined(__x86_64__) && !defined(PIPESPIN_C_TRAMPOLINE)

#include <ucontext.h>

#include <cstddef>

#include "platform/gate.h"

// The offset the assembly reads the interrupted rip at.
static_assert(offsetof(ucontext_t, uc_mcontext.gregs) + REG_RIP * sizeof(greg_t) == 168);

// One body for both kinds; only the table differs. First, a thread that
// the signal interrupted inside the gate of the shim's own system calls
// (platform/gate.h: between its check and its `syscall`) is sent back to
// the check, so that the call, resumed after the handler, checks again:
// a handler that installs a seccomp filter closes the gate first. The
// interrupted rip is in the ucontext the kernel passes in rdx, which on
// x86_64 is always 8 bytes above the stack pointer at entry (the
// rt_sigframe: the restorer's address, then the ucontext); a stray direct
// call, with anything else in rdx, skips this. Then the signal number is
// range-checked (the kernel never delivers 0 or > 64; a stray direct call
// returns), and a null slot (impossible: slots are written before the
// trampoline is installed) returns to the restorer.
asm(R"(
    .macro PIPESPIN_TRAMPOLINE name, table
    .pushsection .text.\name,"ax",@progbits
    .p2align 4
    .globl \name
    .hidden \name
    .type \name, @function
\name:
    .cfi_startproc
    endbr64
    leaq 8(%rsp), %rcx
    cmpq %rcx, %rdx
    jne 3f
    movq 168(%rdx), %rcx
    leaq pipespin_gate_check(%rip), %r8
    cmpq %r8, %rcx
    jb 3f
    leaq pipespin_gate_done(%rip), %r8
    cmpq %r8, %rcx
    jae 3f
    leaq pipespin_gate_check(%rip), %r8
    movq %r8, 168(%rdx)
3:
    movq pipespin_signal_epoch@gottpoff(%rip), %rcx
    incl %fs:(%rcx)
    leal -1(%rdi), %ecx
    cmpl $63, %ecx
    ja 2f
    movq pipespin_restart_bits(%rip), %r8
    btq %rcx, %r8
    jc 1f
    movq pipespin_eintr_epoch@gottpoff(%rip), %r8
    incl %fs:(%r8)
1:
    leaq \table(%rip), %r8
    movq 8(%r8,%rcx,8), %r8
    testq %r8, %r8
    jz 2f
    jmp *%r8
2:
    ret
    .cfi_endproc
    .size \name, .-\name
    .popsection
    .endm

    PIPESPIN_TRAMPOLINE pipespin_trampoline_plain, pipespin_plain_handlers
    PIPESPIN_TRAMPOLINE pipespin_trampoline_info, pipespin_info_handlers
    .purgem PIPESPIN_TRAMPOLINE
)");

#else

// Portable C: the compiler makes the handler call a tail call when it
// optimises (note_signal touches only TLS and one atomic load).
using namespace pipespin;
using namespace pipespin::interpose;

extern "C" void pipespin_trampoline_plain(int sig) {
    note_signal(sig);
    if (sig <= 0 || sig >= kSigSlots) return;
    void* fn = g_plain_handlers[sig].load(std::memory_order_acquire);
    if (fn != nullptr) reinterpret_cast<void (*)(int)>(fn)(sig);
}

extern "C" void pipespin_trampoline_info(int sig, siginfo_t* info, void* uctx) {
    note_signal(sig);
    if (sig <= 0 || sig >= kSigSlots) return;
    void* fn = g_info_handlers[sig].load(std::memory_order_acquire);
    if (fn != nullptr) reinterpret_cast<void (*)(int, siginfo_t*, void*)>(fn)(sig, info, uctx);
}

#endif
