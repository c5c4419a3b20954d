// A vfork() child runs in its parent's memory until it execs or exits: the
// shim's bookkeeping (the fd table, the recorded signal handlers, the
// statistics) is the parent's there, and what the child does to its own fd
// table and signal actions must not be written into it.
//
// Contract: the vfork hook (vfork.cpp) stores the calling thread's tid in
// t_vfork_tid before it jumps to libc's vfork. in_vfork_child() is then true
// in the child (same memory and TLS, another tid) and false in the parent
// once it resumes (it clears the mark). A wrapper that records anything
// about fds or signals, or writes a statistics line, asks it first and, in a
// vfork child, only makes the real call. The child never writes
// t_vfork_tid. The common case, no vfork under way on this thread, costs one
// TLS load. x86_64 only: elsewhere vfork is not hooked (vfork.cpp says why)
// and in_vfork_child() is always false.
#pragma once

#include "platform/sys.h"

namespace pipespin::interpose {

#if defined(__x86_64__)

// The tid of this thread while it has a vfork child; 0 otherwise.
extern constinit thread_local long t_vfork_tid [[gnu::tls_model("initial-exec")]];

// Whether a mark stands on this thread (no system call): this thread has a
// vfork child under way, or is one, or resumed as the parent and has not
// looked since. engaged() asks this, so that no hot wrapper inlines the
// system call below (it would save registers on every path).
inline bool vfork_marked() noexcept {
    return t_vfork_tid != 0;
}

// The mark stands and this is the thread that set it (gettid): its child
// has exec'd or exited. Clears the mark. Out of line.
bool vfork_parent_resumed() noexcept;

inline bool in_vfork_child() noexcept {
    return vfork_marked() && !vfork_parent_resumed();
}

#else

inline bool vfork_marked() noexcept {
    return false;
}
inline bool vfork_parent_resumed() noexcept {
    return false;
}
inline bool in_vfork_child() noexcept {
    return false;
}

#endif

}  // namespace pipespin::interpose
