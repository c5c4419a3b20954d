// Shared by the e2e helper programs.
//
// A helper checks its own results and, on the first mismatch, prints where
// and what (with errno) on stderr and exits 1, so that CTest shows the reason.
// Children of a helper fail the same way; the parent turns a child's nonzero
// exit into its own failure through wait_ok().
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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

namespace e2e {

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

}  // namespace e2e

#define CHECK(cond)                                                 \
    do {                                                            \
        if (!(cond)) ::e2e::fail(__FILE__, __LINE__, #cond, errno); \
    } while (0)

// Both sides are evaluated once and shown on failure.
#define CHECK_EQ(a, b)                                                                    \
    do {                                                                                  \
        const long long check_a_ = static_cast<long long>(a);                             \
        const int check_errno_ = errno;                                                   \
        const long long check_b_ = static_cast<long long>(b);                             \
        if (check_a_ != check_b_)                                                         \
            ::e2e::fail_eq(__FILE__, __LINE__, #a, #b, check_a_, check_b_, check_errno_); \
    } while (0)

// A call that must fail with this errno.
#define CHECK_ERRNO(call, err)                                                        \
    do {                                                                              \
        errno = 0;                                                                    \
        const long long check_r_ = static_cast<long long>(call);                      \
        const int check_errno_ = errno;                                               \
        if (check_r_ != -1 || check_errno_ != (err))                                  \
            ::e2e::fail(__FILE__, __LINE__, #call " fails with " #err, check_errno_); \
    } while (0)

namespace e2e {

inline void make_pipe(int fds[2]) {
    CHECK_EQ(pipe(fds), 0);
}

inline void write_full(int fd, const void* buf, size_t n) {
    const auto* p = static_cast<const unsigned char*>(buf);
    while (n > 0) {
        ssize_t r = write(fd, p, n);
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
        CHECK(r >= 0);
        if (r == 0) break;
        got += static_cast<size_t>(r);
    }
    return got;
}

// One byte that tells the peer "go": the only way the helpers order events
// between processes (never a sleep).
inline void signal_peer(int fd) {
    const char c = 'g';
    CHECK_EQ(write(fd, &c, 1), 1);
}

inline void wait_peer(int fd) {
    char c = 0;
    CHECK_EQ(read(fd, &c, 1), 1);
    CHECK_EQ(c, 'g');
}

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

inline std::uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
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

}  // namespace e2e
