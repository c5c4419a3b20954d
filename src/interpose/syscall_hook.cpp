// The syscall() hook: an assembly stub, so that a program's syscall() of
// any number reaches libc's with its arguments untouched, the seventh on
// the stack included, and with no frame of the shim's left on the stack
// (a raw clone or vfork through syscall() returns twice).
//
// It exists for one number: seccomp(2), which glibc has no wrapper for, and
// which a privileged process (CAP_SYS_ADMIN) may call without setting
// no_new_privs first (prctl, which the shim watches, hooks.cpp). Installing
// a filter (SECCOMP_SET_MODE_FILTER, or STRICT) makes the shim step aside
// first, as prctl does (before_sandbox(), init.cpp): after it, a system call
// the program does not make itself may kill the program.
//
// The stub saves the six argument registers, calls
// pipespin_syscall_prepare(number, first argument), which steps aside when
// the call installs a filter and returns libc's syscall, restores the
// registers and the stack exactly as the program left them and jumps there.
// x86_64 only (hooks.def): elsewhere syscall() is not hooked, and a
// privileged process that installs a filter with it is not seen.
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "interpose/real.h"

#if defined(__x86_64__)

using namespace pipespin;
using namespace pipespin::interpose;

extern "C" [[gnu::visibility("hidden"), gnu::used]] void* pipespin_syscall_prepare(
    long number, long op) noexcept {
    if (number == SYS_seccomp && (op == SECCOMP_SET_MODE_FILTER || op == SECCOMP_SET_MODE_STRICT))
        [[unlikely]]
        before_sandbox();
    return reinterpret_cast<void*>(real_syscall.get());
}

// At entry %rsp is 8 below a 16-byte boundary (the return address); six
// pushes and 8 more align it for the call. %rax (the helper's result) and
// %r11 are free at a call: the real syscall() sets %rax.
__asm__(R"(
    .pushsection .text.syscall_hook,"ax",@progbits
    .globl syscall
    .type syscall, @function
    .p2align 4
syscall:
    .cfi_startproc
    endbr64
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    pushq %rdx
    .cfi_adjust_cfa_offset 8
    pushq %rcx
    .cfi_adjust_cfa_offset 8
    pushq %r8
    .cfi_adjust_cfa_offset 8
    pushq %r9
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call pipespin_syscall_prepare
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %r9
    .cfi_adjust_cfa_offset -8
    popq %r8
    .cfi_adjust_cfa_offset -8
    popq %rcx
    .cfi_adjust_cfa_offset -8
    popq %rdx
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size syscall, .-syscall
    .popsection
)");

#endif
