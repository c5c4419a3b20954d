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

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <thread>

#include "../support/helpers.h"

namespace rel {

using namespace support;

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

// CPU time of the calling thread (async-signal-safe).
inline std::uint64_t thread_cpu_ns() {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

inline clockid_t cpu_clock_of(pthread_t t) {
    clockid_t c;
    CHECK_EQ(pthread_getcpuclockid(t, &c), 0);
    return c;
}

inline void block_signal(int sig, bool block) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    CHECK_EQ(pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, nullptr), 0);
}

// siginterrupt() is deprecated, and what the signal cases test.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
inline int siginterrupt_(int sig, int flag) {
    return siginterrupt(sig, flag);
}
#pragma GCC diagnostic pop

// The kernel's view of an action: what a raw rt_sigaction reads and writes.
struct KernelAction {
    void* handler;
    unsigned long flags;
    void* restorer;
    std::uint64_t mask;
};

// SA_RESTORER, which a raw install needs with the restorer glibc uses.
inline constexpr unsigned long kSaRestorer = 0x04000000;

inline KernelAction kernel_action(int sig) {
    KernelAction k{};
    CHECK_EQ(syscall(SYS_rt_sigaction, sig, nullptr, &k, 8), 0);
    return k;
}

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

// ---- a SIGALRM during the call under test ------------------------------------------
//
// The signal cases arm a one-shot kTimerUs ITIMER_REAL before each trial's
// call. Where only the signal can end the call, the handler re-arms a
// kBackstopUs backstop while the call is still in progress, so that a shim
// that misses the signal makes a late trial, not a hang. At most kMaxLate
// trials of a run may need the backstop: the helper can be preempted between
// arming the timer and entering the call, with or without the shim.
inline constexpr long kTimerUs = 2000;
inline constexpr long kBackstopUs = 100000;
inline constexpr int kMaxLate = 3;
// The pipe size the cases set (F_SETPIPE_SZ) where a write waits on a full pipe.
inline constexpr int kPipeSize = 4096;

inline volatile sig_atomic_t g_in_call = 0;  // the call under test is in progress
inline volatile sig_atomic_t g_sent = 0;     // the go byte went out in this trial
inline int g_go_w = -1;                      // >= 0: a peer waits for the go byte here

// The handler's part of a trial: with a peer, tells it (once per trial) to
// deliver; without one, re-arms the backstop.
inline void go_or_backstop() {
    if (g_go_w >= 0) {
        if (g_in_call && !g_sent) {
            g_sent = 1;
            const char c = 'g';
            if (write(g_go_w, &c, 1) != 1) _exit(3);
        }
    } else if (g_in_call) {
        arm_alarm_us(kBackstopUs);
    }
}

// A peer thread, SIGALRM blocked: for each go byte on go_r it runs act(byte),
// until the byte 'q'. It reads go_r by a raw system call, so that the exit
// report's spins count only the calls under test (run.sh --spun checks them).
template <class Act>
std::thread start_peer(int go_r, Act act) {
    return std::thread([go_r, act] {
        block_signal(SIGALRM, true);
        for (;;) {
            char c = 0;
            long r = syscall(SYS_read, go_r, &c, 1);
            if (r < 0 && errno == EINTR) continue;
            CHECK_EQ(r, 1);
            if (c == 'q') return;
            act(c);
        }
    });
}

// The bytes queued in a pipe.
inline int queued(int fd) {
    int n = -1;
    CHECK_EQ(ioctl(fd, FIONREAD, &n), 0);
    return n;
}

// ---- the waits of the signal and cancellation cases -------------------------------

// A call that waits on a pipe: the reads and polls on an empty one, the
// write on a full one.
enum class Wait { Read, Write, Poll, PollTimeout, Ppoll, PollMany, Fread };

inline constexpr int kPollMany = 1000;

inline const char* wait_name(Wait w) {
    switch (w) {
        case Wait::Read:
            return "read(empty pipe)";
        case Wait::Write:
            return "write(full pipe)";
        case Wait::Poll:
            return "poll(-1)";
        case Wait::PollTimeout:
            return "poll(60000)";
        case Wait::Ppoll:
            return "ppoll(NULL)";
        case Wait::PollMany:
            return "poll(1000 entries, -1)";
        case Wait::Fread:
            return "fread(empty pipe)";
    }
    return "?";
}

// Makes the call: a read of n bytes into buf from rfd, a write of one byte
// 'w' to wfd, a poll for POLLIN on rfd (PollMany: kPollMany entries, all
// rfd), an fread of n bytes from `file`.
inline long make_call(Wait w, int rfd, int wfd, char* buf, size_t n, FILE* file = nullptr) {
    pollfd pfd{rfd, POLLIN, 0};
    switch (w) {
        case Wait::Read:
            return read(rfd, buf, n);
        case Wait::Write:
            return write(wfd, "w", 1);
        case Wait::Poll:
            return poll(&pfd, 1, -1);
        case Wait::PollTimeout:
            return poll(&pfd, 1, 60000);
        case Wait::Ppoll:
            return ppoll(&pfd, 1, nullptr, nullptr);
        case Wait::PollMany: {
            static pollfd many[kPollMany];
            for (auto& m : many) m = pfd;
            return poll(many, kPollMany, -1);
        }
        case Wait::Fread:
            return static_cast<long>(fread(buf, 1, n, file));
    }
    return -2;
}

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

// A read of rfd by this thread that has to wait: another thread writes msg
// (at most 16 bytes) to wfd only once it sees this thread inside the read.
// Checks that the read returns msg; says how the read was seen. The
// announcement is a Mailbox, not a pipe: the shim sees no call but the read
// and the filler's write.
inline InCall read_seen_in_call(int rfd, int wfd, std::string_view msg) {
    const pid_t me = gettid_();
    const clockid_t cpu = cpu_clock_of(pthread_self());
    Mailbox ann;
    InCall seen = InCall::Blocked;
    std::thread filler([&] {
        seen = wait_in_call(me, cpu, ann.take(), {SYS_read});
        CHECK_EQ(write(wfd, msg.data(), msg.size()), msg.size());
    });
    ann.put(thread_cpu_ns());
    char buf[16] = {};
    CHECK_EQ(read(rfd, buf, sizeof buf), msg.size());
    filler.join();
    CHECK(std::string_view(buf, msg.size()) == msg);
    return seen;
}

}  // namespace rel
