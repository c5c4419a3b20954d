/* The spin floor (spinfloor.c) with frames added, to measure what one more
 * function frame between the program and the look's system call costs a
 * ping-pong: LOOK_FRAMES calls around each look (the preadv2 made
 * LOOK_FRAMES calls below the spin loop), LOOP_FRAMES calls around the
 * loop (the loop made LOOP_FRAMES calls below read()); 0 to 8 each. Each
 * frame does nothing but call and return, so what one costs is its
 * call and its return, once per look or once per read.
 * tools/bench/scripts/callchain.sh builds it with several counts and runs
 * them side by side. Built by the script with the system's C compiler, not
 * installed, never a product (a read that never answers spins for ever). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef LOOK_FRAMES
#define LOOK_FRAMES 0
#endif
#ifndef LOOP_FRAMES
#define LOOP_FRAMES 0
#endif

#define HIDDEN __attribute__((visibility("hidden"), noinline))
/* The empty asm keeps each frame a frame (no tail call). */
#define KEEP() __asm__ volatile("" ::: "memory")

static ssize_t (*next_read)(int, void*, size_t);

__attribute__((constructor)) static void resolve(void) {
    next_read = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
}

/* Frames of their own, each returning to a different place (as the
 * shim's do): look_k calls look_{k-1}, around_k calls around_{k-1}. */
HIDDEN long look_0(int fd, struct iovec* iov) {
    long r = preadv2(fd, iov, 1, -1, RWF_NOWAIT);
    return r < 0 ? -errno : r;
}
#define LOOK(k, j) \
    HIDDEN long look_##k(int fd, struct iovec* iov) { long r = look_##j(fd, iov); KEEP(); return r; }
LOOK(1, 0) LOOK(2, 1) LOOK(3, 2) LOOK(4, 3) LOOK(5, 4) LOOK(6, 5) LOOK(7, 6) LOOK(8, 7)
#define CAT(a, b) CAT_(a, b)
#define CAT_(a, b) a##b

HIDDEN long around_0(int fd, void* buf, size_t n) {
    struct iovec iov = {buf, n};
    for (;;) {
        long r = CAT(look_, LOOK_FRAMES)(fd, &iov);
        if (r >= 0) return r;
        if (r != -EAGAIN) return next_read(fd, buf, n);
    }
}
#define AROUND(k, j)                                    \
    HIDDEN long around_##k(int fd, void* buf, size_t n) { \
        long r = around_##j(fd, buf, n);                \
        KEEP();                                         \
        return r;                                       \
    }
AROUND(1, 0) AROUND(2, 1) AROUND(3, 2) AROUND(4, 3) AROUND(5, 4) AROUND(6, 5) AROUND(7, 6)
AROUND(8, 7)

ssize_t read(int fd, void* buf, size_t n) {
    return CAT(around_, LOOP_FRAMES)(fd, buf, n);
}
