// Memory mappings: munmap, mprotect, mremap, mmap over an existing mapping,
// pkey_mprotect and shmdt can make memory unreadable that the kernel read
// for an earlier call. Before such a call the wrapper tells the core
// (memory_changed(), core/engine.h), which then reads a poll array or
// select's fd_sets only through the kernel again (engine_sets.cpp): a bad
// pointer is the call's EFAULT, never a fault in the shim. The wrappers
// make the real call and nothing else (the contract is hooks.cpp's).
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace pipespin;
using namespace pipespin::interpose;

PIPESPIN_EXPORT int munmap(void* addr, size_t len) noexcept {
    memory_changed();
    return real_munmap.tail_call(addr, len);
}

PIPESPIN_EXPORT int mprotect(void* addr, size_t len, int prot) noexcept {
    memory_changed();
    return real_mprotect.tail_call(addr, len, prot);
}

PIPESPIN_EXPORT int pkey_mprotect(void* addr, size_t len, int prot, int pkey) noexcept {
    memory_changed();
    return real_pkey_mprotect.tail_call(addr, len, prot, pkey);
}

// The new address, with MREMAP_FIXED, is read only for that flag (glibc
// reads it the same way).
PIPESPIN_EXPORT void* mremap(void* addr, size_t old_len, size_t new_len, int flags, ...) noexcept {
    va_list ap;
    va_start(ap, flags);
    void* new_addr = (flags & MREMAP_FIXED) != 0 ? va_arg(ap, void*) : nullptr;
    va_end(ap);
    memory_changed();
    return real_mremap.get()(addr, old_len, new_len, flags, new_addr);
}

// Only a fixed mapping replaces memory that was there.
PIPESPIN_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd,
                           off_t off) noexcept {
    if ((flags & MAP_FIXED) != 0) memory_changed();
    return real_mmap.tail_call(addr, len, prot, flags, fd, off);
}

PIPESPIN_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd,
                             off64_t off) noexcept {
    if ((flags & MAP_FIXED) != 0) memory_changed();
    return real_mmap64.tail_call(addr, len, prot, flags, fd, off);
}

PIPESPIN_EXPORT int shmdt(const void* addr) noexcept {
    memory_changed();
    return real_shmdt.tail_call(addr);
}
