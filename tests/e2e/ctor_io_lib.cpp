// A shared library whose constructor does pipe I/O. A program linked with it
// runs this constructor before the constructor of an LD_PRELOADed shim (the
// shim is not one of its dependencies), so these calls reach the shim's
// wrappers before the shim is initialised. It records what went wrong
// instead of printing to stdout, and leaves one pipe, with data in it, for
// the program to use once the shim is up.
#include <cstdio>

#include "../support/helpers.h"
#include "ctor_io_lib.h"

namespace {

char g_error[256];
int g_kept[2] = {-1, -1};

#define CTOR_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond) && g_error[0] == '\0')                                                    \
            std::snprintf(g_error, sizeof g_error, "line %d: %s (errno %d)", __LINE__, #cond, \
                          errno);                                                             \
    } while (0)

__attribute__((constructor)) void ctor_io() {
    int p[2];
    CTOR_CHECK(pipe(p) == 0);
    CTOR_CHECK(write(p[1], "ctor", 4) == 4);
    pollfd pfd{p[0], POLLIN, 0};
    CTOR_CHECK(poll(&pfd, 1, 1000) == 1 && pfd.revents == POLLIN);
    char buf[16] = {};
    CTOR_CHECK(read(p[0], buf, sizeof buf) == 4 && std::memcmp(buf, "ctor", 4) == 0);
    pfd.revents = -1;
    CTOR_CHECK(poll(&pfd, 1, 0) == 0 && pfd.revents == 0);
    pfd.revents = -1;
    CTOR_CHECK(poll(&pfd, 1, 5) == 0 && pfd.revents == 0);  // a real (short) wait
    CTOR_CHECK(close(p[1]) == 0);
    CTOR_CHECK(read(p[0], buf, sizeof buf) == 0);
    CTOR_CHECK(close(p[0]) == 0);

    int q[2];
    CTOR_CHECK(pipe2(q, O_CLOEXEC) == 0);
    int d = dup(q[1]);
    CTOR_CHECK(d >= 0);
    CTOR_CHECK(write(d, "dup", 3) == 3);
    CTOR_CHECK(read(q[0], buf, sizeof buf) == 3 && std::memcmp(buf, "dup", 3) == 0);
    int fl = fcntl(q[0], F_GETFL);
    CTOR_CHECK(fl >= 0 && fcntl(q[0], F_SETFL, fl | O_NONBLOCK) == 0);
    errno = 0;
    CTOR_CHECK(read(q[0], buf, sizeof buf) == -1 && errno == EAGAIN);
    CTOR_CHECK(close(d) == 0 && close(q[0]) == 0 && close(q[1]) == 0);

    CTOR_CHECK(pipe(g_kept) == 0);
    CTOR_CHECK(write(g_kept[1], "from the constructor", 20) == 20);

    static const char kMsg[] = "ctor_io: constructor done\n";
    CTOR_CHECK(write(2, kMsg, sizeof kMsg - 1) == sizeof kMsg - 1);
}

}  // namespace

const char* ctor_io_error() {
    return g_error;
}
int ctor_io_kept_read_fd() {
    return g_kept[0];
}
int ctor_io_kept_write_fd() {
    return g_kept[1];
}
