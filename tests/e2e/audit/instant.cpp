// Case audit_instant (from the faithfulness audit): calls that the kernel
// answers at once, without waiting, on an empty (or full) blocking pipe:
// splice and tee of 0 bytes (0), splice to a bad fd (EBADF), splice with an
// offset on a pipe (ESPIPE), tee of a pipe into itself (EINVAL), readv of
// zero-length iovecs on an empty pipe (0) and writev of zero-length iovecs
// on a full pipe (0). None of them can fail with EINTR: no wait, nothing to
// interrupt. A shim that spins on the pipe before such a call, and ends the
// spin with EINTR when a handler without SA_RESTART runs, invents an EINTR.
//
// A one-shot timer signal (handler without SA_RESTART) is armed just before
// each call. Without a wait the call returns before the signal or runs after
// its handler: either way it gives its immediate answer. With a long spin
// (SPIN_ENV) the signal lands during the spin.
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <sys/uio.h>

#include <cstring>

#include "../../support/helpers.h"

using namespace support;

namespace {

volatile sig_atomic_t g_signals = 0;
void on_alarm(int) {
    g_signals = g_signals + 1;
}

int failures = 0;

template <class Call>
void expect(const char* name, long want, int want_errno, Call&& call) {
    arm_alarm_us(2000);
    errno = 0;
    const long r = call();
    const int e = errno;
    arm_alarm_us(0);
    if (r != want || (want < 0 && e != want_errno)) {
        std::fprintf(stderr, "%s: got %ld (errno %d: %s), want %ld (errno %d)\n", name, r, e,
                     std::strerror(e), want, want < 0 ? want_errno : 0);
        ++failures;
    }
}

}  // namespace

int main() {
    install(SIGALRM, on_alarm, 0);  // no SA_RESTART
    int p[2], q[2];
    make_pipe(p);  // stays empty
    make_pipe(q);
    char c;
    for (int i = 0; i < 3; ++i) {  // well known to the shim
        write_full(p[1], "x", 1);
        CHECK_EQ(read(p[0], &c, 1), 1);
    }
    expect("splice 0 bytes", 0, 0, [&] { return splice(p[0], nullptr, q[1], nullptr, 0, 0); });
    expect("tee 0 bytes", 0, 0, [&] { return tee(p[0], q[1], 0, 0); });
    expect("splice to a bad fd", -1, EBADF,
           [&] { return splice(p[0], nullptr, 1000, nullptr, 16, 0); });
    loff_t off = 0;
    expect("splice with an offset on a pipe", -1, ESPIPE,
           [&] { return splice(p[0], &off, q[1], nullptr, 16, 0); });
    expect("tee into itself", -1, EINVAL, [&] { return tee(p[0], p[1], 16, 0); });
    iovec none[2] = {{&c, 0}, {&c, 0}};
    expect("readv of 0 bytes", 0, 0, [&] { return readv(p[0], none, 2); });
    set_nonblock(q[1], true);
    fill_until_eagain(q[1]);  // q full, and in blocking mode again
    set_nonblock(q[1], false);
    expect("writev of 0 bytes", 0, 0, [&] { return writev(q[1], none, 2); });
    if (failures != 0) return 1;
    std::printf("instant: ok\n");
    return 0;
}
