// Case selfpipe: the self-pipe trick. A SIGALRM handler write()s a byte into
// a pipe while the main thread spins in read (or poll) on that same pipe's
// read end. The handler's write goes through the shim too, on the very pipe
// the interrupted spin is probing. 100 trials per variant:
//   restart    handler with SA_RESTART: the read returns the byte;
//   eintr      handler without SA_RESTART: the read returns the byte or fails
//              with EINTR (both happen without the shim, depending on whether
//              the signal came before or during the syscall); after EINTR
//              the byte is there at once;
//   poll       poll(-1) on the self pipe: 1 with POLLIN, or EINTR; then the
//              byte is there;
//   elsewhere  the handler (no SA_RESTART) writes its byte to the self pipe
//              while the main thread waits in read on another pipe that
//              nobody writes: the read must fail with EINTR, ended by the
//              first signal (as in the signals case, a 100 ms backstop keeps
//              a broken shim from hanging; at most 3 of 100 trials may need
//              it); the byte is then in the self pipe;
//   nested     the same, and the handler also polls a third, empty pipe with
//              a 1 ms timeout, i.e. it spins inside the shim itself.
//
// How a naive spin fails: a shim that takes a lock, or keeps per-thread
// state for "the wait in progress" that a nested call from a handler
// clobbers, deadlocks in the handler's write or loses the interrupted wait's
// bookkeeping (elsewhere, nested: the outer read forgets that a handler
// without SA_RESTART ran, and blocks); a shim that blocks signals while it spins
// delays every handler to the end of a 1 s spin (100 trials: a timeout).
#include <string_view>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kTrials = 100;

int g_self_w = -1;
int g_empty_r = -1;  // nested: the handler polls this empty pipe
bool g_nested = false;
bool g_backstop = false;  // the call under test may not end without a signal
volatile sig_atomic_t g_sigs = 0;

void handler(int) {
    const int saved = errno;
    g_sigs = g_sigs + 1;
    if (g_sigs == 1) {
        const char c = 'x';
        if (write(g_self_w, &c, 1) != 1) _exit(3);
    }
    if (g_nested) {
        pollfd pfd{g_empty_r, POLLIN, 0};
        if (poll(&pfd, 1, 1) != 0) _exit(4);
    }
    if (g_backstop && g_in_call) arm_alarm_us(kBackstopUs);
    errno = saved;
}

enum class Variant { Restart, Eintr, Poll, Elsewhere, Nested };

void run(Variant v, const char* name) {
    PROGRESS("%s: %d trials", name, kTrials);
    int self[2], other[2], empty[2];
    make_pipe(self);
    make_pipe(other);
    make_pipe(empty);
    g_self_w = self[1];
    g_empty_r = empty[0];
    g_nested = v == Variant::Nested;
    g_backstop = v == Variant::Nested || v == Variant::Elsewhere;
    install(SIGALRM, handler, v == Variant::Restart ? SA_RESTART : 0);
    int interrupted = 0, late = 0;
    for (int t = 0; t < kTrials; ++t) {
        char c = 0;
        pollfd pfd{self[0], POLLIN, 0};
        g_sigs = 0;
        g_in_call = 1;
        arm_alarm_us(kTimerUs);
        errno = 0;
        long r;
        switch (v) {
            case Variant::Restart:
            case Variant::Eintr:
                r = read(self[0], &c, 1);
                break;
            case Variant::Poll:
                r = poll(&pfd, 1, -1);
                break;
            case Variant::Elsewhere:
            case Variant::Nested:
                r = read(other[0], &c, 1);
                break;
        }
        const int e = errno;
        const int sigs = g_sigs;
        g_in_call = 0;
        arm_alarm_us(0);
        switch (v) {
            case Variant::Restart:
                CHECK_EQ(r, 1);
                CHECK_EQ(c, 'x');
                break;
            case Variant::Eintr:
            case Variant::Poll:
                if (r == -1) {
                    CHECK_EQ(e, EINTR);
                    ++interrupted;
                } else if (v == Variant::Poll) {
                    CHECK_EQ(r, 1);
                    CHECK(pfd.revents & POLLIN);
                } else {
                    CHECK_EQ(r, 1);
                    CHECK_EQ(c, 'x');
                }
                if (v == Variant::Poll || r == -1) {
                    // The byte is in the pipe now: this read cannot block.
                    c = 0;
                    CHECK_EQ(read(self[0], &c, 1), 1);
                    CHECK_EQ(c, 'x');
                }
                break;
            case Variant::Elsewhere:
            case Variant::Nested:
                CHECK_EQ(r, -1);
                CHECK_EQ(e, EINTR);
                CHECK(sigs >= 1);
                if (sigs > 1) {
                    std::fprintf(stderr, "trial %d: ended only by signal %d (backstop)\n", t, sigs);
                    if (++late > kMaxLate)
                        fail(__FILE__, __LINE__,
                             "the first signal ends the read although its handler did I/O "
                             "(more than 3 trials needed the backstop)",
                             0);
                }
                c = 0;
                CHECK_EQ(read(self[0], &c, 1), 1);
                CHECK_EQ(c, 'x');
                break;
        }
        CHECK(sigs >= 1);
    }
    install(SIGALRM, SIG_IGN, 0);
    for (int fd : {self[0], self[1], other[0], other[1], empty[0], empty[1]}) close(fd);
    PROGRESS("  ok (%d interrupted, %d needed the backstop)", interrupted, late);
}

}  // namespace

int main() {
    announce_main_pid();
    run(Variant::Restart, "restart: read on the self pipe, SA_RESTART handler writes to it");
    run(Variant::Eintr, "eintr: read on the self pipe, handler without SA_RESTART writes to it");
    run(Variant::Poll, "poll: poll(-1) on the self pipe");
    run(Variant::Elsewhere, "elsewhere: handler without SA_RESTART writes; read on another pipe");
    run(Variant::Nested, "nested: the handler writes and polls; read on another pipe");
    return 0;
}
