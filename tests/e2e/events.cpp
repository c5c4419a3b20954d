// Case events: select, pselect, ppoll, epoll_wait, epoll_pwait and
// epoll_pwait2 on pipes. Checked, in every configuration:
//   - a ping-pong between two processes, each waiting in one of the six
//     calls (in turn) on a set of two pipes, reports exactly the pipe that
//     became readable;
//   - timeouts: an empty set times out, not before its timeout, with
//     select's timeval updated to zero and pselect's timespec untouched;
//   - a SIGALRM handler (SA_RESTART or not) that runs during the wait fails
//     the call with EINTR; select's timeval then holds the time not slept;
//   - a mask that blocks SIGALRM keeps the handler from running during the
//     wait (the call times out with 0), one that unblocks a pending signal
//     fails the call with EINTR at once;
//   - epoll: an edge-triggered event is reported once, a one-shot event
//     once until re-armed, a removed fd never; a hang-up is EPOLLHUP;
//   - bad arguments fail as without the shim (epoll_pwait2's timeout
//     pointer included: EFAULT, not a crash, and nothing consumed).
// The case runs with a 1 s spin budget, so the signals land in the spins.
// `events sleep` only sleeps in select and pselect (no fd, or no pipe),
// which the shim must never spin in (the driver checks its counters).
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>

#include "../support/helpers.h"
#include "timer.h"

using namespace e2e;

namespace {

enum Way { kSelect, kPselect, kPpoll, kEpollWait, kEpollPwait, kEpollPwait2, kWays };

// Waits in `way` until one of a or b is readable (no timeout, or a long one);
// returns which fd it reported.
struct Waiter {
    int a, b, ep = -1;
    Waiter(int a_, int b_) : a(a_), b(b_) {
        ep = epoll_create1(EPOLL_CLOEXEC);
        CHECK(ep >= 0);
        for (int fd : {a, b}) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = fd;
            CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
        }
    }
    ~Waiter() { close(ep); }

    int wait(Way way, int round) {
        sigset_t none;
        sigemptyset(&none);
        switch (way) {
            case kSelect:
            case kPselect: {
                fd_set r;
                FD_ZERO(&r);
                FD_SET(a, &r);
                FD_SET(b, &r);
                const int n = (a > b ? a : b) + 1;
                int got;
                if (way == kSelect) {
                    timeval tv{60, 0};
                    got = select(n, &r, nullptr, nullptr, round % 2 ? &tv : nullptr);
                    if (round % 2) CHECK(tv.tv_sec <= 60 && (tv.tv_sec > 0 || tv.tv_usec > 0));
                } else {
                    const timespec ts{60, 0};
                    got = pselect(n, &r, nullptr, nullptr, round % 2 ? &ts : nullptr,
                                  round % 3 ? &none : nullptr);
                    CHECK(ts.tv_sec == 60 && ts.tv_nsec == 0);
                }
                CHECK_EQ(got, 1);
                CHECK(FD_ISSET(a, &r) != FD_ISSET(b, &r));
                return FD_ISSET(a, &r) ? a : b;
            }
            case kPpoll: {
                pollfd p[2] = {{a, POLLIN, -1}, {b, POLLIN, -1}};
                const timespec ts{60, 0};
                CHECK_EQ(ppoll(p, 2, round % 2 ? &ts : nullptr, round % 3 ? &none : nullptr), 1);
                CHECK((p[0].revents == POLLIN) != (p[1].revents == POLLIN));
                CHECK_EQ(p[0].revents | p[1].revents, POLLIN);
                return p[0].revents ? a : b;
            }
            default: {
                epoll_event ev[4];
                const timespec ts{60, 0};
                int got = way == kEpollWait ? epoll_wait(ep, ev, 4, round % 2 ? 60000 : -1)
                          : way == kEpollPwait
                              ? epoll_pwait(ep, ev, 4, -1, round % 3 ? &none : nullptr)
                              : epoll_pwait2(ep, ev, 4, round % 2 ? &ts : nullptr, nullptr);
                CHECK_EQ(got, 1);
                CHECK_EQ(ev[0].events, EPOLLIN);
                return ev[0].data.fd;
            }
        }
    }
};

unsigned long long pingpong(int rounds) {
    int d1[2], d2[2], u1[2], u2[2];
    for (auto* q : {d1, d2, u1, u2}) make_pipe(q);
    pid_t pid = spawn([&] {
        close(d1[1]);
        close(d2[1]);
        close(u1[0]);
        close(u2[0]);
        Waiter w(d1[0], d2[0]);
        for (int i = 0; i < rounds; ++i) {
            const int fd = w.wait(static_cast<Way>(i % kWays), i);
            CHECK_EQ(fd, i % 2 ? d2[0] : d1[0]);
            char c;
            CHECK_EQ(read(fd, &c, 1), 1);
            CHECK_EQ(c, static_cast<char>(i));
            c = static_cast<char>(~c);
            CHECK_EQ(write(i % 3 ? u1[1] : u2[1], &c, 1), 1);
        }
        // Stay until the parent is done: our exit would hang up both pipes.
        char c;
        CHECK_EQ(read(d1[0], &c, 1), 0);
    });
    close(d1[0]);
    close(d2[0]);
    close(u1[1]);
    close(u2[1]);
    Waiter w(u1[0], u2[0]);
    Fnv sum;
    for (int i = 0; i < rounds; ++i) {
        const char c = static_cast<char>(i);
        CHECK_EQ(write(i % 2 ? d2[1] : d1[1], &c, 1), 1);
        const int fd = w.wait(static_cast<Way>((i + 3) % kWays), i);
        CHECK_EQ(fd, i % 3 ? u1[0] : u2[0]);
        char r;
        CHECK_EQ(read(fd, &r, 1), 1);
        CHECK_EQ(r, static_cast<char>(~c));
        sum.add(&r, 1);
    }
    close(d1[1]);
    close(d2[1]);
    wait_ok(pid);
    close(u1[0]);
    close(u2[0]);
    return sum.value();
}

// One wait on an empty pipe in `way` with a timeout of `ms`, or none (-1).
// Returns the call's result; *left is select's timeval afterwards (µs).
int wait_empty(Way way, int fd, int ep, int ms, const sigset_t* mask, long long* left = nullptr) {
    const timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    switch (way) {
        case kSelect:
        case kPselect: {
            fd_set r;
            FD_ZERO(&r);
            FD_SET(fd, &r);
            int got;
            if (way == kSelect) {
                timeval tv{ms / 1000, (ms % 1000) * 1000};
                got = select(fd + 1, &r, nullptr, nullptr, ms < 0 ? nullptr : &tv);
                if (left != nullptr) *left = tv.tv_sec * 1000000LL + tv.tv_usec;
            } else {
                got = pselect(fd + 1, &r, nullptr, nullptr, ms < 0 ? nullptr : &ts, mask);
                if (ms >= 0) CHECK(ts.tv_sec == ms / 1000 && ts.tv_nsec == (ms % 1000) * 1000000L);
            }
            if (got == 0) CHECK(!FD_ISSET(fd, &r));
            return got;
        }
        case kPpoll: {
            pollfd p{fd, POLLIN, -1};
            int got = ppoll(&p, 1, ms < 0 ? nullptr : &ts, mask);
            if (got == 0) CHECK_EQ(p.revents, 0);
            return got;
        }
        case kEpollWait:
        case kEpollPwait: {
            epoll_event ev[2];
            return way == kEpollWait ? epoll_wait(ep, ev, 2, ms) : epoll_pwait(ep, ev, 2, ms, mask);
        }
        default: {
            epoll_event ev[2];
            return epoll_pwait2(ep, ev, 2, ms < 0 ? nullptr : &ts, mask);
        }
    }
}

struct EmptyPipe {
    int p[2];
    int ep;
    EmptyPipe() {
        make_pipe(p);
        ep = epoll_create1(0);
        CHECK(ep >= 0);
        epoll_event ev{};
        ev.events = EPOLLIN;
        CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    }
    ~EmptyPipe() {
        for (int fd : {p[0], p[1], ep}) close(fd);
    }
};

void timeouts() {
    EmptyPipe e;
    for (int way = 0; way < kWays; ++way) {
        for (int ms : {30, 3}) {
            const std::uint64_t start = now_ns();
            long long left = -1;
            CHECK_EQ(wait_empty(static_cast<Way>(way), e.p[0], e.ep, ms, nullptr, &left), 0);
            const std::uint64_t took = now_ns() - start;
            if (took < static_cast<std::uint64_t>(ms) * 1000000u)
                std::fprintf(stderr, "way %d: %d ms timeout returned after %llu ns\n", way, ms,
                             static_cast<unsigned long long>(took));
            CHECK(took >= static_cast<std::uint64_t>(ms) * 1000000u);
            if (way == kSelect) CHECK_EQ(left, 0);
        }
    }
}

void interrupted() {
    EmptyPipe e;
    for (bool restart : {false, true}) {
        for (int way = 0; way < kWays; ++way) {
            long long left = -1;
            const int ms = way == kSelect && restart ? 10000 : -1;
            const auto [r, err] = with_alarm(restart, -1, nullptr, [&] {
                return wait_empty(static_cast<Way>(way), e.p[0], e.ep, ms, nullptr, &left);
            });
            CHECK_EQ(r, -1);
            CHECK_EQ(err, EINTR);
            // select counts the time it waited out of its timeval.
            if (ms > 0) CHECK(left > 0 && left < ms * 1000LL);
        }
    }
}

// A mask that blocks SIGALRM for the wait: the handler runs only after the
// call, which times out. One that unblocks a pending SIGUSR1: EINTR at once.
volatile sig_atomic_t g_usr1 = 0;
void on_usr1(int) {
    g_usr1 = g_usr1 + 1;
}

void masks() {
    EmptyPipe e;
    sigset_t block_alrm;
    sigemptyset(&block_alrm);
    sigaddset(&block_alrm, SIGALRM);
    for (Way way : {kPselect, kPpoll, kEpollPwait, kEpollPwait2}) {
        // The handler runs once, when the call gives its mask back.
        const Outcome o = with_alarm(
            false, -1, nullptr, [&] { return wait_empty(way, e.p[0], e.ep, 60, &block_alrm); });
        CHECK_EQ(o.result, 0);
    }
    struct sigaction sa {};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    sigset_t usr1, old, none;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    CHECK_EQ(sigprocmask(SIG_BLOCK, &usr1, &old), 0);
    for (Way way : {kPselect, kPpoll, kEpollPwait, kEpollPwait2}) {
        const int before = g_usr1;
        CHECK_EQ(raise(SIGUSR1), 0);
        CHECK_EQ(g_usr1, before);  // blocked
        errno = 0;
        CHECK_EQ(wait_empty(way, e.p[0], e.ep, -1, &none), -1);
        CHECK_EQ(errno, EINTR);
        CHECK_EQ(g_usr1, before + 1);
    }
    CHECK_EQ(sigprocmask(SIG_SETMASK, &old, nullptr), 0);
}

// Edge-triggered and one-shot events are consumed by the wait that reports
// them; a removed fd is never reported; a hang-up is.
void epoll_semantics(int rounds) {
    int p[2], go[2];
    make_pipe(p);
    make_pipe(go);
    pid_t pid = spawn([&] {
        close(p[0]);
        close(go[1]);
        for (int i = 0; i < rounds; ++i) {
            wait_peer(go[0]);
            CHECK_EQ(write(p[1], "e", 1), 1);
        }
        wait_peer(go[0]);
    });
    close(p[1]);
    close(go[0]);
    const int ep = epoll_create1(0);
    CHECK(ep >= 0);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = 0x1234567890ull;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    for (int i = 0; i < rounds; ++i) {
        if (i == rounds / 2) {  // from here on: one-shot
            ev.events = EPOLLIN | EPOLLONESHOT;
            CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
        } else if (i > rounds / 2) {
            CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);  // re-arm
        }
        signal_peer(go[1]);
        epoll_event out[2];
        CHECK_EQ(epoll_wait(ep, out, 2, -1), 1);
        CHECK_EQ(out[0].data.u64, 0x1234567890ull);
        // Not read yet: edge-triggered and one-shot events do not come back.
        CHECK_EQ(epoll_wait(ep, out, 2, 1), 0);
        char c;
        CHECK_EQ(read(p[0], &c, 1), 1);
    }
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], nullptr), 0);
    signal_peer(go[1]);
    wait_ok(pid);  // the child has closed its end: a hang-up, but p[0] is not in the set
    epoll_event out[2];
    CHECK_EQ(epoll_wait(ep, out, 2, 5), 0);
    ev.events = EPOLLIN;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    CHECK_EQ(epoll_wait(ep, out, 2, -1), 1);
    CHECK((out[0].events & EPOLLHUP) != 0);
    close(ep);
    close(p[0]);
    close(go[1]);
}

// Hidden from the compiler.
volatile int g_minus_one = -1;
volatile int g_zero = 0;

void bad_arguments() {
    EmptyPipe e;
    epoll_event ev[1];
    CHECK_ERRNO(epoll_wait(e.ep, ev, g_zero, 10), EINVAL);
    CHECK_ERRNO(epoll_wait(e.p[0], ev, 1, 10), EINVAL);  // not an epoll fd
    fd_set r;
    FD_ZERO(&r);
    FD_SET(e.p[0], &r);
    timeval tv{0, 10000};
    CHECK_ERRNO(select(g_minus_one, &r, nullptr, nullptr, &tv), EINVAL);
    timeval bad_tv{-1, 0};
    CHECK_ERRNO(select(e.p[0] + 1, &r, nullptr, nullptr, &bad_tv), EINVAL);
    int dead[2];
    make_pipe(dead);
    close(dead[0]);
    close(dead[1]);
    FD_ZERO(&r);
    FD_SET(e.p[0], &r);
    FD_SET(dead[0], &r);
    CHECK_ERRNO(select((dead[0] > e.p[0] ? dead[0] : e.p[0]) + 1, &r, nullptr, nullptr, &tv),
                EBADF);
    pollfd p{e.p[0], POLLIN, 0};
    const timespec bad_ts{0, 1000000000L};
    CHECK_ERRNO(ppoll(&p, 1, &bad_ts, nullptr), EINVAL);

    // epoll_pwait2's timeout is the kernel's to read (glibc passes it on
    // unread): a pointer to no memory or to an unreadable page fails with
    // EFAULT, a bad value with EINVAL, and neither consumes the pending
    // edge-triggered event that the next call reports.
    void* pages = mmap(nullptr, 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(pages != MAP_FAILED);
    CHECK_EQ(munmap(static_cast<char*>(pages) + 4096, 4096), 0);
    const auto* unreadable = static_cast<const timespec*>(pages);
    const auto* unmapped = reinterpret_cast<const timespec*>(static_cast<char*>(pages) + 4096);
    CHECK_ERRNO(epoll_pwait2(e.ep, ev, 1, unreadable, nullptr), EFAULT);
    CHECK_ERRNO(epoll_pwait2(e.ep, ev, 1, unmapped, nullptr), EFAULT);
    CHECK_ERRNO(epoll_pwait2(e.ep, ev, 1, &bad_ts, nullptr), EINVAL);
    sigset_t none;
    sigemptyset(&none);
    CHECK_ERRNO(epoll_pwait2(e.ep, ev, 1, unreadable, &none), EFAULT);
    int q[2];
    make_pipe(q);
    const int ep = epoll_create1(0);
    CHECK(ep >= 0);
    epoll_event et{};
    et.events = EPOLLIN | EPOLLET;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &et), 0);
    CHECK_EQ(write(q[1], "x", 1), 1);
    CHECK_ERRNO(epoll_pwait2(ep, ev, 1, unreadable, nullptr), EFAULT);
    CHECK_ERRNO(epoll_pwait2(ep, ev, 1, &bad_ts, nullptr), EINVAL);
    const timespec second{1, 0};
    CHECK_EQ(epoll_pwait2(ep, ev, 1, &second, nullptr), 1);
    CHECK_EQ(ev[0].events, EPOLLIN);
    CHECK_EQ(munmap(pages, 4096), 0);
    for (int fd : {q[0], q[1], ep}) close(fd);
}

// select and pselect as sleeps, and on a set without a pipe.
void sleeps() {
    const int devnull = open("/dev/null", O_WRONLY);
    CHECK(devnull >= 0);
    for (int i = 0; i < 20; ++i) {
        timeval tv{0, 2000};
        CHECK_EQ(select(0, nullptr, nullptr, nullptr, &tv), 0);
        const timespec ts{0, 2000000};
        CHECK_EQ(pselect(0, nullptr, nullptr, nullptr, &ts, nullptr), 0);
        fd_set w;
        FD_ZERO(&w);
        FD_SET(devnull, &w);
        timeval tv2{0, 2000};
        CHECK_EQ(select(devnull + 1, nullptr, &w, nullptr, &tv2), 1);
    }
    close(devnull);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "sleep") == 0) {
        sleeps();
        std::printf("events: sleeps ok\n");
        return 0;
    }
    const int rounds = 3000;
    const unsigned long long sum = pingpong(rounds);
    timeouts();
    interrupted();
    masks();
    epoll_semantics(200);
    bad_arguments();
    std::printf("events: rounds=%d checksum=%016llx\n", rounds, sum);
    return 0;
}
