/* e2e.next_symbol: a second interposer after the checker in LD_PRELOAD. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

pid_t getppid(void) {
    return 4242;
}

ssize_t read(int fd, void* buf, size_t n) {
    ssize_t (*next)(int, void*, size_t) = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
    return next(fd, buf, n);
}
