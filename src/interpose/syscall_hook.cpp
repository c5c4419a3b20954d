// The syscall() hook: an assembly stub, so that a program's syscall() of
// any number reaches libc's with its arguments untouched, the seventh on
// the stack included, and with no frame of the shim's left on the stack
// (a raw clone or vfork through syscall() returns twice).
//
// It exists for two kinds of numbers:
//   - seccomp(2), which glibc has no wrapper for, and which a privileged
//     process (CAP_SYS_ADMIN) may call without setting no_new_privs first
//     (prctl, which the shim watches, hooks.cpp). Installing a filter
//     (SECCOMP_SET_MODE_FILTER, or STRICT) makes the shim step aside first,
//     as prctl does (before_sandbox(), init.cpp): after it, a system call
//     the program does not make itself may kill the program;
//   - the calls that may make memory unreadable that the kernel read for a
//     poll or select (munmap, mprotect, mremap, mmap, pkey_mprotect,
//     shmdt): memory_changed(), core/engine.h;
//   - the calls that change what an fd number names behind the fd table's
//     back (close, close_range, dup2, dup3, io_uring_setup, whose ring can
//     close fds) or that share the fd table with memory the shim does not
//     share (clone with CLONE_FILES but not CLONE_VM or the reverse,
//     clone3, vfork): from then on the table may be stale, and no look is
//     a try of the read itself (fds_unseen(), core/engine.h).
//
// The stub saves the six argument registers, calls
// pipespin_syscall_prepare(number, first argument), which steps aside when
// the call installs a filter and returns libc's syscall, restores the
// registers and the stack exactly as the program left them and jumps there.
// x86_64 only (hooks.def): elsewhere syscall() is not hooked, and a
// privileged process that installs a filter with it is not seen.
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/syscall.h>

#include "core/engine.h"
#include "interpose/real.h"

#if defined(__x86_64__)

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

// clone flags that share the fd table and the memory unequally: the other
// task's closes do not reach this table, or its fds land in it.
bool shares_fds_unequally(long flags) noexcept {
    return ((flags & CLONE_FILES) != 0) != ((flags & CLONE_VM) != 0);
}

}  // namespace

extern "C" [[gnu::visibility("hidden"), gnu::used]] void* pipespin_syscall_prepare(
    long number, long op) noexcept {
    switch (number) {
        case SYS_seccomp:
            if (op == SECCOMP_SET_MODE_FILTER || op == SECCOMP_SET_MODE_STRICT) before_sandbox();
            break;
        case SYS_clone:
            if (shares_fds_unequally(op)) fds_unseen();
            break;
        case SYS_munmap:
        case SYS_mprotect:
        case SYS_mremap:
        case SYS_pkey_mprotect:
        case SYS_shmdt:
            memory_changed();
            break;
        case SYS_mmap:
            // The flags are the fourth argument, not seen here: any mmap.
            memory_changed();
            break;
        case SYS_close:
        case SYS_close_range:
        case SYS_dup2:
        case SYS_dup3:
        case SYS_clone3:  // its flags are in the program's memory, unread
        case SYS_vfork:
        case SYS_io_uring_setup:
            fds_unseen();
            break;
        default:
            break;
    }
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
