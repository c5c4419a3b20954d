// Shared by the helper programs of tests/e2e and tests/reliability.
//
// A helper checks its own results and, on the first mismatch, prints where
// and what (with errno) on stderr and exits 1, so that CTest shows the reason.
// Children of a helper fail the same way; the parent turns a child's nonzero
// exit into its own failure through wait_ok(). Events between processes and
// threads are ordered by pipes and handshakes, never by sleeps.
//
// The loops that move a whole buffer (write_full, read_full, recv_byte) retry
// a call that a signal handler interrupted (EINTR): they move data, they do
// not test signals. A case that checks how a call ends under a signal makes
// that call itself and checks its result and errno.
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace support {

[[noreturn]] inline void fail(const char* file, int line, const char* what, int err) {
    std::fprintf(stderr, "%s:%d: pid %d: check failed: %s (errno %d: %s)\n", file, line,
                 static_cast<int>(getpid()), what, err, std::strerror(err));
    std::fflush(stderr);
    // _exit: a forked child must not flush stdio buffers it shares with its parent.
    _exit(1);
}

[[noreturn]] inline void fail_eq(const char* file, int line, const char* a, const char* b,
                                 long long va, long long vb, int err) {
    char what[512];
    std::snprintf(what, sizeof what, "%s == %s, but %lld != %lld", a, b, va, vb);
    fail(file, line, what, err);
}

}  // namespace support

#define CHECK(cond)                                                     \
    do {                                                                \
        if (!(cond)) ::support::fail(__FILE__, __LINE__, #cond, errno); \
    } while (0)

// Both sides are evaluated once and shown on failure.
#define CHECK_EQ(a, b)                                                                        \
    do {                                                                                      \
        const long long check_a_ = static_cast<long long>(a);                                 \
        const int check_errno_ = errno;                                                       \
        const long long check_b_ = static_cast<long long>(b);                                 \
        if (check_a_ != check_b_)                                                             \
            ::support::fail_eq(__FILE__, __LINE__, #a, #b, check_a_, check_b_, check_errno_); \
    } while (0)

// A call that must fail with this errno.
#define CHECK_ERRNO(call, err)                                                            \
    do {                                                                                  \
        errno = 0;                                                                        \
        const long long check_r_ = static_cast<long long>(call);                          \
        const int check_errno_ = errno;                                                   \
        if (check_r_ != -1 || check_errno_ != (err))                                      \
            ::support::fail(__FILE__, __LINE__, #call " fails with " #err, check_errno_); \
    } while (0)

namespace support {

// ---- pipes and data -------------------------------------------------------------

inline void make_pipe(int fds[2]) {
    CHECK_EQ(pipe(fds), 0);
}

inline void write_full(int fd, const void* buf, size_t n) {
    const auto* p = static_cast<const unsigned char*>(buf);
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        CHECK(r > 0);
        p += r;
        n -= static_cast<size_t>(r);
    }
}

// Reads until n bytes or EOF; returns the count.
inline size_t read_full(int fd, void* buf, size_t n) {
    auto* p = static_cast<unsigned char*>(buf);
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        CHECK(r >= 0);
        if (r == 0) break;
        got += static_cast<size_t>(r);
    }
    return got;
}

inline void send_byte(int fd, char c = 'g') {
    CHECK_EQ(write(fd, &c, 1), 1);
}

inline char recv_byte(int fd) {
    char c = 0;
    ssize_t r;
    while ((r = read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    CHECK_EQ(r, 1);
    return c;
}

// One byte that tells the peer "go": the only way the helpers order events
// between processes (never a sleep).
inline void signal_peer(int fd) {
    send_byte(fd, 'g');
}

inline void wait_peer(int fd) {
    CHECK_EQ(recv_byte(fd), 'g');
}

inline void set_nonblock(int fd, bool on) {
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0);
    CHECK_EQ(fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK)), 0);
}

// Fills a non-blocking pipe until a write fails with EAGAIN (PIPE_BUF chunks,
// then single bytes); returns the bytes written.
inline size_t fill_until_eagain(int wfd) {
    static char buf[PIPE_BUF];
    size_t total = 0;
    for (size_t size : {sizeof buf, size_t{1}}) {
        for (;;) {
            ssize_t r = write(wfd, buf, size);
            if (r < 0) break;
            total += static_cast<size_t>(r);
        }
        CHECK_EQ(errno, EAGAIN);
    }
    return total;
}

// Reads a non-blocking pipe until a read fails with EAGAIN; returns the bytes read.
inline size_t drain_until_eagain(int rfd) {
    static char buf[PIPE_BUF];
    size_t drained = 0;
    for (;;) {
        ssize_t r = read(rfd, buf, sizeof buf);
        if (r < 0) break;
        CHECK(r > 0);
        drained += static_cast<size_t>(r);
    }
    CHECK_EQ(errno, EAGAIN);
    return drained;
}

// An epoll instance that watches fd for EPOLLIN, with the fd as its data.
inline int epoll_watching(int fd) {
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
    return ep;
}

// FNV-1a, 64 bit: order-sensitive checksum of a byte stream.
struct Fnv {
    std::uint64_t h = 0xcbf29ce484222325ull;
    void add(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    }
    unsigned long long value() const { return h; }
};

// Deterministic test data (xorshift), the same in every process and run.
inline void fill_pattern(unsigned char* buf, size_t n, std::uint64_t seed) {
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = static_cast<unsigned char>(x >> 24);
    }
}

// ---- processes --------------------------------------------------------------------

// Children inherit no unflushed output.
inline pid_t fork_child() {
    std::fflush(nullptr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    return pid;
}

// Runs body in a child process that then exits normally (so that the shim,
// when loaded, writes its exit report for the child too).
template <class Body>
pid_t spawn(Body&& body) {
    pid_t pid = fork_child();
    if (pid == 0) {
        body();
        std::exit(0);
    }
    return pid;
}

// Forks a child that keeps end `child_end` (0 or 1) of the pipe p, closes
// the other, and runs act() once the parent says "go"; the parent closes the
// child's end and says "go" before this returns. Returns the child's pid.
template <class Act>
pid_t spawn_on_go(int p[2], int child_end, Act act) {
    int go[2];
    make_pipe(go);
    const pid_t pid = spawn([&] {
        close(p[1 - child_end]);
        close(go[1]);
        wait_peer(go[0]);
        act();
    });
    close(p[child_end]);
    close(go[0]);
    signal_peer(go[1]);
    close(go[1]);
    return pid;
}

// Forks a child that talks with the parent over two new pipes: the child
// reads down[0] and writes up[1], the parent writes down[1] and reads up[0];
// each side closes the other's ends. Returns the child's pid.
template <class Child>
pid_t spawn_talking(int down[2], int up[2], Child child) {
    make_pipe(down);
    make_pipe(up);
    const pid_t pid = spawn([&] {
        close(down[1]);
        close(up[0]);
        child();
    });
    close(down[0]);
    close(up[1]);
    return pid;
}

inline int wait_status(pid_t pid) {
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

inline void wait_ok(pid_t pid) {
    int status = wait_status(pid);
    if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "child %d killed by signal %d\n", static_cast<int>(pid),
                     WTERMSIG(status));
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// ---- clocks and signals ------------------------------------------------------------

inline std::uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    CHECK_EQ(clock_gettime(clock, &ts), 0);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

inline std::uint64_t now_ns() {
    return clock_ns(CLOCK_MONOTONIC);
}

// One-shot ITIMER_REAL: SIGALRM after `us` microseconds (0 disarms).
inline void arm_alarm_us(long us) {
    itimerval it{};
    it.it_value.tv_sec = us / 1000000;
    it.it_value.tv_usec = us % 1000000;
    CHECK_EQ(setitimer(ITIMER_REAL, &it, nullptr), 0);
}

inline void install(int sig, void (*handler)(int), int flags) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, nullptr), 0);
}

}  // namespace support
