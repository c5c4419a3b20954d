/* The floor of a spinning read, as a preload: read() tries preadv2 with
 * RWF_NOWAIT until the pipe answers (no budget, no look at signals, no fd
 * table, no policy), write() is the plain write. Under `perf bench sched
 * pipe` with its two ends on two CPUs, no shim that spins can do a round
 * trip in less: perf_ab.sh runs it as an arm beside pipespin's modes
 * (docs/benchmarks.md, "The spin floor"). Not installed, never a product:
 * a read on a fd that never answers spins for ever. Built by the script
 * with the system's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

static ssize_t (*next_read)(int, void*, size_t);

__attribute__((constructor)) static void resolve(void) {
    next_read = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
}

ssize_t read(int fd, void* buf, size_t n) {
    struct iovec iov = {buf, n};
    for (;;) {
        ssize_t r = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
        if (r >= 0) return r;
        if (errno != EAGAIN) return next_read(fd, buf, n);
    }
}
