/* The least an LD_PRELOAD read/write wrapper can be: resolve the next read
 * and write once, then tail-call them, so that libc returns straight to the
 * program. tools/bench/scripts/interpose.sh measures pipespin against it: what any
 * interposition costs a workload, and what pipespin adds to that. Not
 * installed; built by the script with the system's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

static ssize_t (*next_read)(int, void*, size_t);
static ssize_t (*next_write)(int, const void*, size_t);

__attribute__((constructor)) static void resolve(void) {
    next_read = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
    next_write = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
}

ssize_t read(int fd, void* buf, size_t n) {
    return next_read(fd, buf, n);
}

ssize_t write(int fd, const void* buf, size_t n) {
    return next_write(fd, buf, n);
}
