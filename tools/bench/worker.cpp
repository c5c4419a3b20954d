// pipespin-bench worker: the measured loops of the lab, beside pipespin
// pingpong's (tools/cli/worker.h: the contract, and pingpong and floor).
//
//   pipespin-bench worker pingpong [--threads] [--expect-shim|--expect-no-shim] N
//   pipespin-bench worker floor|floor-blocks|sparse|spawn|fork [--expect-...] N
//   pipespin-bench worker wakeup-same|wakeup-spread|wakeup-free [--expect-...] N
//   pipespin-bench worker fork-twin        (fork's other half: see fork_paired())
//   pipespin-bench worker relay|feed ...   (coverage/worker.cpp)
//
// What each prints: pingpong, floor: the mean µs per round trip;
// floor-blocks: the mean µs of copying a 64 KiB block in and out; sparse:
// the consumer's CPU µs over its reads; wakeup-*: the reader's run time
// over its reads, µs; spawn and fork: the median µs a process start or a
// fork took over one without any preload.
//
// floor, floor-blocks: the pipe traffic of a ping-pong (N round trips) or of
// `dd bs=64k | cat` (N blocks) within one thread, the least that traffic can
// cost here; `matrix` divides by them to bound its speed-ups. Of a block
// only the copies count: the kernel copies into and out of a pipe under the
// pipe's mutex, so a writer's and a reader's copies never overlap, but their
// syscalls' own cost could (floor-blocks subtracts the same number of
// zero-length write+read pairs).
//
// sparse: a forked producer writes N bytes, one every 2 ms on absolute
// deadlines, then closes its end; this process, the consumer, reads one byte
// at a time until EOF. What it prints is the user+system CPU the consumer
// spent from its first read to EOF (not its start-up, which is the same in
// every arm and would only dilute the difference spinning makes).
//
// wakeup-same, wakeup-spread, wakeup-free: what a blocking read's wake-up
// costs the reader (tools/bench/scripts/wakeup.sh, matrix's wakeup-*). A
// forked writer sends N + 1 bytes, one every 2 ms as sparse's does; this
// process reads them one at a time. What it prints is its own run time
// (/proc/thread-self/schedstat, in ns: rusage's CPU times are sampled at
// the tick, coarser than a read) from its first byte to EOF, N reads. The
// two ends are pinned, after the shim's constructor (which so still sees
// every usable CPU): same, both to the first usable CPU; spread, the
// writer to the second; free, not at all.
//
// spawn: N times posix_spawn of /bin/true and wait for it, one after
// another; the child inherits this process's environment, so a preload
// here is a preload there: the cost of starting a process in a wrapped tree.
// Each alternates with a spawn in the same environment without LD_PRELOAD,
// and what is printed is the median difference (spawn_true()).
// fork: N times fork, _exit in the child, wait: what the library costs a
// fork that does not exec (its atfork work and its pages' copy-on-write).
// The forks are made by two twins of this worker, one in its environment and
// one without LD_PRELOAD, in turn; what is printed is the median difference
// (fork_paired()).
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "bench/bench.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"
#include "cli/worker.h"

extern char** environ;

namespace pipespin::bench {
namespace {

using namespace cli::worker;

constexpr int kBlockBytes = 64 * 1024;  // dd's bs=64k in the matrix's dd-cat

// 0 on success, else an errno value (EPIPE for an unexpected EOF).
int read_fully(int fd, char* buf, std::size_t len) {
    while (len > 0) {
        ssize_t n = ::read(fd, buf, len);
        if (n == 0) return EPIPE;
        if (n < 0 && errno != EINTR) return errno;
        if (n > 0) {
            buf += n;
            len -= static_cast<std::size_t>(n);
        }
    }
    return 0;
}

// The copies into and out of a pipe happen under the pipe's mutex (Linux
// fs/pipe.c), so a writer's and a reader's never overlap: a block through a
// pipe costs at least its write and its read done one after the other, as
// here. Each write is read back before the next, so the pipe is empty
// whenever a write starts and a blocking write of a whole block cannot wait
// for this thread.
double floor_blocks(std::uint64_t n) {
    Pipe p = make_pipe();
    const int size = ::fcntl(p.w, F_GETPIPE_SZ);
    if (size < kBlockBytes && ::fcntl(p.w, F_SETPIPE_SZ, kBlockBytes) < kBlockBytes)
        throw Failure(kExitFailure,
                      fmt::format("worker: a pipe holds {} bytes here, less than a {}-byte "
                                  "block, and F_SETPIPE_SZ failed: {}",
                                  size, kBlockBytes, std::strerror(errno)));
    std::vector<char> out(kBlockBytes, 'x'), in(kBlockBytes, 0);
    auto blocks = [&](std::uint64_t count) {
        for (std::uint64_t i = 0; i < count; ++i) {
            for (std::size_t done = 0; done < out.size();) {
                ssize_t w = ::write(p.w, out.data() + done, out.size() - done);
                if (w < 0 && errno == EINTR) continue;
                if (w < 0) return errno;
                if (int err = read_fully(p.r, in.data(), static_cast<std::size_t>(w)); err != 0)
                    return err;
                done += static_cast<std::size_t>(w);
            }
        }
        return 0;
    };
    // The syscalls themselves (a zero-length write and read return before
    // the pipe's lock): two processes could overlap those, so they are not
    // part of the floor.
    auto empty_pairs = [&](std::uint64_t count) {
        for (std::uint64_t i = 0; i < count; ++i)
            if (::write(p.w, out.data(), 0) != 0 || ::read(p.r, in.data(), 0) != 0) return errno;
        return 0;
    };
    check(blocks(warmup_of(n)), "floor-blocks");
    const auto t0 = Clock::now();
    check(blocks(n), "floor-blocks");
    const auto t1 = Clock::now();
    check(empty_pairs(n), "floor-blocks");
    const auto t2 = Clock::now();
    ::close(p.r);
    ::close(p.w);
    return std::max(0.0, us_per(t1 - t0, n) - us_per(t2 - t1, n));
}

constexpr long kSparseIntervalNs = 2'000'000;

// The producer of `sparse`: N bytes on a fixed beat; 0 or an errno value.
int trickle(int out, std::uint64_t n) {
    timespec next{};
    ::clock_gettime(CLOCK_MONOTONIC, &next);
    for (std::uint64_t i = 0; i < n; ++i) {
        next.tv_nsec += kSparseIntervalNs;
        if (next.tv_nsec >= 1'000'000'000) {
            next.tv_nsec -= 1'000'000'000;
            ++next.tv_sec;
        }
        // Absolute deadlines: the beat does not drift by the time each write takes.
        int rc;
        while ((rc = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr)) == EINTR) {
        }
        if (rc != 0) return rc;
        if (int err = put_byte(out); err != 0) return err;
    }
    return 0;
}

double cpu_us_self() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double sparse_consumer_cpu(std::uint64_t n) {
    Pipe p = make_pipe();
    pid_t pid = ::fork();
    if (pid < 0) check(errno, "fork");
    if (pid == 0) {
        ::close(p.r);
        ::_exit(trickle(p.w, n) == 0 ? 0 : 1);
    }
    ::close(p.w);
    const double cpu0 = cpu_us_self();
    std::uint64_t got = 0;
    int rc;
    while ((rc = get_byte(p.r)) == 1) ++got;
    const double cpu1 = cpu_us_self();
    ::close(p.r);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    check(rc < 0 ? -rc : 0, "sparse read");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Failure(kExitFailure,
                      fmt::format("worker: producer process {}", describe_wait_status(status)));
    if (got != n)
        throw Failure(kExitFailure,
                      fmt::format("worker: sparse read {} bytes, expected {}", got, n));
    return cpu1 - cpu0;
}

// Waits for pid, which must exit with 0.
void reap(pid_t pid, std::string_view what) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) check(errno, "waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Failure(kExitFailure,
                      fmt::format("worker: {}: a child {}", what, describe_wait_status(status)));
}

enum class Pin { Same, Spread, Free };

// The `which`-th usable CPU of this process (0 or 1); -1 when there are
// not that many.
int usable_cpu(int which) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set) && seen++ == which) return c;
    return -1;
}

// 0 or an errno value: no exceptions, a forked child runs it too.
int pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return ::sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : errno;
}

// This thread's run time so far, ns: the first field of its schedstat.
// Through libc, as the program would: a close through syscall() tells the
// shim that closes escape it (Runtime::fds_all_seen), and its reads would
// then look with poll instead of trying the read, an arm the program never
// runs. The shim's own work on this file (classifying it at its read, a
// few µs once per stretch) is what any program's reads of a file cost.
std::uint64_t run_ns() {
    char buf[128];
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    const ssize_t n = fd < 0 ? -1 : ::read(fd, buf, sizeof buf - 1);
    if (fd >= 0) ::close(fd);
    if (n <= 0)
        throw Failure(kExitFailure,
                      "worker: wakeup: cannot read /proc/thread-self/schedstat (a kernel "
                      "without CONFIG_SCHED_INFO?)");
    buf[n] = '\0';
    return std::strtoull(buf, nullptr, 10);
}

double wakeup_reader_us(std::uint64_t n, Pin pin) {
    const int reader_cpu = pin == Pin::Free ? -1 : usable_cpu(0);
    const int writer_cpu = pin == Pin::Spread ? usable_cpu(1) : reader_cpu;
    if (pin != Pin::Free && writer_cpu < 0)
        throw Failure(kExitFailure, "worker: wakeup-spread needs two usable CPUs");
    Pipe p = make_pipe();
    pid_t pid = ::fork();
    if (pid < 0) check(errno, "fork");
    if (pid == 0) {
        ::close(p.r);
        const bool ok = (writer_cpu < 0 || pin_to(writer_cpu) == 0) && trickle(p.w, n + 1) == 0;
        ::_exit(ok ? 0 : 1);
    }
    ::close(p.w);
    if (reader_cpu >= 0) check(pin_to(reader_cpu), "sched_setaffinity");
    // The first byte is not timed: the writer is on its beat from then on.
    int rc = get_byte(p.r);
    std::uint64_t got = rc == 1 ? 1 : 0;
    const std::uint64_t run0 = run_ns();
    while (rc == 1 && (rc = get_byte(p.r)) == 1) ++got;
    const std::uint64_t run1 = run_ns();
    ::close(p.r);
    reap(pid, "wakeup writer");
    check(rc < 0 ? -rc : 0, "wakeup read");
    if (got != n + 1)
        throw Failure(kExitFailure,
                      fmt::format("worker: wakeup read {} bytes, expected {}", got, n + 1));
    return static_cast<double>(run1 - run0) / 1e3;
}

// This process's environment without LD_PRELOAD, null-terminated for exec.
std::vector<char*> environ_without_preload() {
    std::vector<char*> bare;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) bare.push_back(*e);
    bare.push_back(nullptr);
    return bare;
}

// n pairs of posix_spawn + wait of /bin/true: one in this process's
// environment (the arm's: its preload is the child's), one in the same
// environment without LD_PRELOAD, in turn first; the median of what the
// first took over the second, µs. Interleaved one by one, the two halves
// see the same state of the host: run as whole rounds one after the other,
// the arms' µs per process moved by ±20 µs between rounds here (the host,
// not the library), as much as a preload costs.
double spawn_true(std::uint64_t n) {
    char arg0[] = "true";
    char* argv[] = {arg0, nullptr};
    std::vector<char*> bare = environ_without_preload();
    auto spawn_us = [&](char** env) {
        const auto t0 = Clock::now();
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, env);
        if (rc != 0) check(rc, "posix_spawn /bin/true");
        reap(pid, "posix_spawn /bin/true");
        return us_per(Clock::now() - t0, 1);
    };
    for (std::uint64_t i = 0; i < warmup_of(n); ++i) {
        spawn_us(environ);
        spawn_us(bare.data());
    }
    std::vector<double> over;
    over.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        double arm = 0, none = 0;
        if (i % 2 == 0) {
            arm = spawn_us(environ);
            none = spawn_us(bare.data());
        } else {
            none = spawn_us(bare.data());
            arm = spawn_us(environ);
        }
        over.push_back(arm - none);
    }
    return summarize(over).median;
}

// One fork, _exit in the child, and its wait, µs.
double fork_once_us() {
    const auto t0 = Clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) check(errno, "fork");
    if (pid == 0) ::_exit(0);
    reap(pid, "fork");
    return us_per(Clock::now() - t0, 1);
}

// The twin's half of fork_paired(): for each byte on stdin, one fork, and
// its µs (a double) on stdout. Raw system calls, as its peer uses.
int fork_twin() {
    char c = 0;
    while (::syscall(SYS_read, 0, &c, 1) == 1) {
        const double us = fork_once_us();
        if (::syscall(SYS_write, 1, &us, sizeof us) != static_cast<long>(sizeof us)) return 1;
    }
    return 0;
}

// A fork server: a twin of this worker (`worker fork-twin`) in the
// environment given, which forks once for each byte it reads.
struct ForkTwin {
    pid_t pid = -1;
    int to = -1, from = -1;

    explicit ForkTwin(char** env) {
        int to_twin[2], from_twin[2];
        if (::pipe2(to_twin, O_CLOEXEC) != 0 || ::pipe2(from_twin, O_CLOEXEC) != 0)
            check(errno, "pipe2");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, to_twin[0], 0);
        posix_spawn_file_actions_adddup2(&fa, from_twin[1], 1);
        char arg0[] = "pipespin-bench", arg1[] = "worker", arg2[] = "fork-twin";
        char* argv[] = {arg0, arg1, arg2, nullptr};
        const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) check(rc, "posix_spawn a fork twin");
        ::close(to_twin[0]);
        ::close(from_twin[1]);
        to = to_twin[1];
        from = from_twin[0];
    }
    // One fork in the twin: its µs.
    double fork_us() const {
        const char c = 'f';
        double us = 0;
        if (::syscall(SYS_write, to, &c, 1) != 1 ||
            ::syscall(SYS_read, from, &us, sizeof us) != static_cast<long>(sizeof us))
            throw Failure(kExitFailure, "worker: fork: a twin stopped answering");
        return us;
    }
    void finish() {
        ::close(to);  // EOF: the twin exits
        ::close(from);
        reap(pid, "fork twin");
    }
};

// n pairs of fork + _exit + wait, each in a twin of this worker: one
// started in this process's environment (the arm's: its preload is the
// twin's), one in the same environment without LD_PRELOAD, in turn first;
// the median of what the first took over the second, µs. Measured as whole
// runs, one arm after another, the µs per fork moved by ±20-40 µs between
// rounds here, far more than a preload adds; each pair sees the same host.
// Both halves are alike (each a process woken from a pipe read, then
// timing its own fork): a fork in this worker against one in a woken twin
// came out 14-20 µs faster with no preload on either side. The worker
// talks to its twins with raw system calls, which no preload sees.
double fork_paired(std::uint64_t n) {
    std::vector<char*> bare = environ_without_preload();
    ForkTwin arm(environ), none(bare.data());
    for (std::uint64_t i = 0; i < warmup_of(n); ++i) {
        arm.fork_us();
        none.fork_us();
    }
    std::vector<double> over;
    over.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        double a = 0, b = 0;
        if (i % 2 == 0) {
            a = arm.fork_us();
            b = none.fork_us();
        } else {
            b = none.fork_us();
            a = arm.fork_us();
        }
        over.push_back(a - b);
    }
    arm.finish();
    none.finish();
    return summarize(over).median;
}

double floor_blocks_loop(std::uint64_t n, bool) {
    return floor_blocks(n);
}
double sparse_loop(std::uint64_t n, bool) {
    return sparse_consumer_cpu(n);
}
double wakeup_same_loop(std::uint64_t n, bool) {
    return wakeup_reader_us(n, Pin::Same);
}
double wakeup_spread_loop(std::uint64_t n, bool) {
    return wakeup_reader_us(n, Pin::Spread);
}
double wakeup_free_loop(std::uint64_t n, bool) {
    return wakeup_reader_us(n, Pin::Free);
}
double spawn_loop(std::uint64_t n, bool) {
    return spawn_true(n);
}
double fork_loop(std::uint64_t n, bool) {
    return fork_paired(n);
}

constexpr Loop kLabLoops[] = {
    {"floor-blocks", "dd bs=64k | cat's traffic within one thread; prints µs per block",
     floor_blocks_loop},
    {"sparse", "a consumer of N bytes written every 2 ms; prints its CPU µs", sparse_loop},
    // One loop per placement: a worker loop is LOOP [--expect-...] N, and
    // prints one number.
    {"wakeup-same",
     "a reader of N bytes written every 2 ms, both ends on one CPU; prints its run µs",
     wakeup_same_loop},
    {"wakeup-spread",
     "a reader of N bytes written every 2 ms, the ends on two CPUs; prints its run µs",
     wakeup_spread_loop},
    {"wakeup-free", "a reader of N bytes written every 2 ms, the ends unpinned; prints its run µs",
     wakeup_free_loop},
    {"spawn", "posix_spawn of /bin/true, paired with one without preload; prints the µs added",
     spawn_loop},
    {"fork", "fork and wait, paired with a twin without preload; prints the µs added", fork_loop},
};

}  // namespace

Action define_worker(CLI::App& app) {
    app.description(
        "What the lab's benchmarks re-execute once per sample, in each arm's environment: "
        "one command per loop, each printing one number on stdout (cli/worker.h).");
    static const std::vector<Loop> loops = [] {
        std::vector<Loop> all(pingpong_loops().begin(), pingpong_loops().end());
        all.insert(all.end(), std::begin(kLabLoops), std::end(kLabLoops));
        return all;
    }();
    auto subs = define_loops(app, loops);
    CLI::App* twin = app.add_subcommand("fork-twin", "fork's other half (see fork_paired())");
    subs.emplace_back(twin, [](Args) { return fork_twin() == 0 ? kExitOk : kExitFailure; });
    for (auto& sub : define_coverage_loops(app)) subs.push_back(std::move(sub));
    return dispatch(app, std::move(subs));
}

}  // namespace pipespin::bench
