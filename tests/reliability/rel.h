// Shared by the reliability helpers (tests/reliability).
//
// A helper checks its own results and, on the first mismatch, prints where
// and what (with errno) on stderr and exits 1. It prints "main-pid N" first
// on stdout so that run.sh can find its own exit report. Events are ordered
// by pipes and handshakes, never by sleeps. The one thing a helper cannot
// learn from a handshake, "the other thread is now inside its read/write/
// poll", comes from InCall below: either /proc shows the thread asleep in
// that very syscall, or the thread has burnt several ms of CPU since it
// announced the call, which only a spin does.
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

// The check macros (CHECK, CHECK_EQ, CHECK_ERRNO) and the small helpers
// both suites use come from the e2e suite's header.
#include "../e2e/common.h"

namespace rel {
using e2e::fail;
using e2e::fail_eq;
using e2e::fill_until_eagain;
using e2e::fork_child;
using e2e::make_pipe;
using e2e::now_ns;
using e2e::set_nonblock;
}  // namespace rel

namespace rel {

// Which run.sh configuration this is (REL_CONFIG); every fixed* is Fixed.
enum class Config { NoShim, Off, Fixed, Adaptive };

inline Config config() {
    const char* c = std::getenv("REL_CONFIG");
    if (c != nullptr && std::strncmp(c, "fixed", 5) == 0) return Config::Fixed;
    if (c != nullptr && std::strcmp(c, "adaptive") == 0) return Config::Adaptive;
    if (c != nullptr && std::strcmp(c, "off") == 0) return Config::Off;
    return Config::NoShim;
}

inline const char* config_name() {
    const char* c = std::getenv("REL_CONFIG");
    return c != nullptr ? c : "noshim";
}

inline void announce_main_pid() {
    std::printf("main-pid %d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
}

// Progress on stderr: when CTest's TIMEOUT catches a hang, the log says where.
#define PROGRESS(...)                      \
    do {                                   \
        std::fprintf(stderr, __VA_ARGS__); \
        std::fputc('\n', stderr);          \
        std::fflush(stderr);               \
    } while (0)

inline pid_t gettid_() {
    return static_cast<pid_t>(syscall(SYS_gettid));
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



inline void wait_ok(pid_t pid) {
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        std::fprintf(stderr, "child %d killed by signal %d\n", static_cast<int>(pid),
                     WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// FNV-1a, 64 bit: order-sensitive checksum of a byte stream.
struct Fnv {
    std::uint64_t h = 0xcbf29ce484222325ull;
    void add(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    }
};

// xorshift64*: deterministic pseudo-random numbers, one stream per seed.
struct Rng {
    std::uint64_t x;
    explicit Rng(std::uint64_t seed) : x(seed * 0x9e3779b97f4a7c15ull + 0x1234567ull) {}
    std::uint64_t next() {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        return x * 0x2545f4914f6cdd1dull;
    }
    // Uniform in [lo, hi].
    std::uint64_t in(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }
};


inline std::uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    CHECK_EQ(clock_gettime(clock, &ts), 0);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

// CPU time of the calling thread (async-signal-safe).
inline std::uint64_t thread_cpu_ns() {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

inline clockid_t cpu_clock_of(pthread_t t) {
    clockid_t c;
    CHECK_EQ(pthread_getcpuclockid(t, &c), 0);
    return c;
}

// One-shot ITIMER_REAL: SIGALRM after `us` microseconds (0 disarms).
inline void arm_alarm_us(long us) {
    itimerval it{};
    it.it_value.tv_sec = us / 1000000;
    it.it_value.tv_usec = us % 1000000;
    CHECK_EQ(setitimer(ITIMER_REAL, &it, nullptr), 0);
}

inline void block_signal(int sig, bool block) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    CHECK_EQ(pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, nullptr), 0);
}

inline void install(int sig, void (*handler)(int), int flags) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, nullptr), 0);
}

// siginterrupt() is deprecated, and what the signal cases test.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
inline int siginterrupt_(int sig, int flag) {
    return siginterrupt(sig, flag);
}
#pragma GCC diagnostic pop

// A one-slot handshake between two threads that involves no pipe (so that
// it is invisible to the shim's counters): put() then take().
struct Mailbox {
    std::atomic<std::uint64_t> value{0};
    std::atomic<int> full{0};
    void put(std::uint64_t v) {
        value.store(v);
        full.store(1);
        full.notify_one();
    }
    std::uint64_t take() {
        full.wait(0);
        full.store(0);
        return value.load();
    }
};

// ---- "the other thread is inside the call" ------------------------------------

enum class InCall { Blocked, Spinning };

struct ThreadView {
    char state = '?';
    long syscall_nr = -2;  // -1: in user space, -2: running or unknown
    bool gone = false;
};

inline ThreadView view_thread(pid_t tid) {
    ThreadView v;
    char path[64], buf[512];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        v.gone = true;
        return v;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        v.gone = true;
        return v;
    }
    buf[n] = '\0';
    const char* rp = std::strrchr(buf, ')');
    if (rp != nullptr && rp[1] == ' ') v.state = rp[2];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            if (buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'))
                v.syscall_nr = std::strtol(buf, nullptr, 10);
        }
    }
    return v;
}

// Waits until thread `tid` (whose CPU clock is `cpu`, read as `cpu_base`
// when it announced the call) is inside the call: asleep in one of
// `syscalls`, or, unless `blocked_only`, burnt kSpinProofNs of CPU since the
// announcement (the few instructions between the announcement and the call
// take microseconds: only a spin burns milliseconds).
inline constexpr std::uint64_t kSpinProofNs = 5'000'000;

inline InCall wait_in_call(pid_t tid, clockid_t cpu, std::uint64_t cpu_base,
                           std::initializer_list<long> syscalls, bool blocked_only = false) {
    for (;;) {
        ThreadView v = view_thread(tid);
        if (v.gone) fail(__FILE__, __LINE__, "the thread ended before it was seen in its call", 0);
        if (v.state == 'S' || v.state == 'D') {
            for (long nr : syscalls)
                if (v.syscall_nr == nr) return InCall::Blocked;
        }
        if (!blocked_only && clock_ns(cpu) - cpu_base >= kSpinProofNs) return InCall::Spinning;
        sched_yield();
    }
}

}  // namespace rel
