// The vfork hook: an assembly stub, since no C function can stand between
// the program and libc's vfork.
//
// A vfork child runs on its parent's stack until it execs or exits, and it
// returns from vfork first: a C wrapper that called the real vfork would
// return into its own frame in the child, the child's later calls would
// overwrite that frame, and the parent, resumed, would return through
// what the child left there (a crash). So the stub keeps nothing on the
// stack across the real call: it calls pipespin_vfork_prepare() (below),
// which marks this thread as having a vfork child (vfork.h: t_vfork_tid)
// and returns libc's vfork, restores the stack exactly as the program left
// it and jumps there: libc's vfork returns straight to the program, in the
// child and in the parent.
//
// Contract (vfork.h): after the stub, in_vfork_child() is true in the child
// and false in the parent once it resumes; the wrappers that record
// anything about fds or signals, or write statistics, make only the real
// call in the child. Programs call vfork (glibc's __vfork alias is libc's
// own name for it; nothing outside libc calls that), so hooking vfork is
// enough. posix_spawn clones inside libc and runs no hook in its child.
//
// x86_64 only. Elsewhere vfork is not hooked at all (hooks.def exports it
// only on x86_64): the stub is per-architecture assembly, and without it a
// vfork child's dup2, close and sigaction still write into its parent's fd
// table and handler table (docs/architecture.md, README.md's limits).
#include "interpose/vfork.h"

#include "interpose/real.h"

#if defined(__x86_64__)

namespace pipespin::interpose {

constinit thread_local long t_vfork_tid [[gnu::tls_model("initial-exec")]] = 0;

}  // namespace pipespin::interpose

using namespace pipespin;
using namespace pipespin::interpose;

[[gnu::noinline, gnu::cold]] bool pipespin::interpose::vfork_parent_resumed() noexcept {
    const long mark = t_vfork_tid;
    if (mark == 0 || sys::own(SYS_gettid) != mark) return false;
    t_vfork_tid = 0;
    return true;
}

// Called by the stub, on the program's thread, before the real vfork. A
// vfork child that vforks again leaves the mark alone (it is the parent's:
// the grandchild, and the child, have other tids than the one marked).
// Where libc has no vfork (none does), fork stands in, as POSIX allows, and
// nothing is marked: a forked child has its own memory.
extern "C" [[gnu::visibility("hidden"), gnu::used]] void* pipespin_vfork_prepare() noexcept {
    void* real = reinterpret_cast<void*>(real_vfork.get());
    if (real == nullptr) return reinterpret_cast<void*>(real_fork.get());
    if (!in_vfork_child()) {
        // Refused once the shim stepped aside for a sandbox: no mark then
        // (nothing is recorded anyway).
        const long tid = sys::own(SYS_gettid);
        if (tid > 0) t_vfork_tid = tid;
    }
    return real;
}

// At entry %rsp is 8 below a 16-byte boundary (the return address): 8 more
// align it for the call. After it the stack is the program's again, with
// its return address on top, and libc's vfork pops and pushes that as if
// the program had called it. %rax (the helper's result) is free: vfork's
// result comes back there.
__asm__(R"(
    .pushsection .text.vfork,"ax",@progbits
    .globl vfork
    .type vfork, @function
    .p2align 4
vfork:
    .cfi_startproc
    endbr64
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call pipespin_vfork_prepare
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork
    .popsection
)");

#endif
