// Workloads for the A/B comparison from statistics lines (compare_check.py):
// one that spinning helps and one it cannot, each a pair of processes (a
// parent and its forked child, which keeps the parent's A/B arm).
//
//   e2e_abload pingpong ROUNDS|-MS
//       1-byte round trips between the two processes, each pinned to its
//       own CPU, so that every reply without spinning costs a sleep and a
//       wake-up from the other CPU (tens of µs in a VM), and with spinning
//       the reply is caught on the spinning CPU (a few µs).
//   e2e_abload sparse WRITES|-MS
//       The child writes one byte at random intervals of 1 to 3 ms (its own
//       clock_nanosleep, a seeded generator), the parent reads them: the
//       reads wait for the writer's timer, which no spin can shorten. Each
//       side on its own CPU, so that a spinning reader takes no CPU from
//       the writer.
//
// A count runs that many round trips or writes; -MS runs for MS ms (the
// long-lived process of a switchback test). Prints "done N".
#include <pthread.h>
#include <sched.h>

#include <random>
#include <string>

#include "../support/helpers.h"

namespace {

std::uint64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The usable CPUs, in order; `which` picks the first or the second (the
// same one when only one is usable: then nothing can spin anyway).
void pin(int which) {
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int seen = 0, cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (!CPU_ISSET(c, &set)) continue;
        cpu = c;
        if (seen++ == which) break;
    }
    CHECK(cpu >= 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
}

// A count (> 0) or a duration (-MS): go on while this says so.
struct Until {
    long count = 0;
    std::uint64_t end_ms = 0;
    explicit Until(long arg) {
        if (arg > 0)
            count = arg;
        else
            end_ms = now_ms() + static_cast<std::uint64_t>(-arg);
    }
    bool more(long done) const { return count > 0 ? done < count : now_ms() < end_ms; }
};

int pingpong(long arg) {
    int to_child[2], to_parent[2];
    CHECK_EQ(pipe(to_child), 0);
    CHECK_EQ(pipe(to_parent), 0);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        pin(1);
        close(to_child[1]);
        close(to_parent[0]);
        char c;
        long n = 0;
        while (read(to_child[0], &c, 1) == 1) {
            CHECK_EQ(write(to_parent[1], &c, 1), 1);
            ++n;
        }
        _exit(0);
    }
    pin(0);
    close(to_child[0]);
    close(to_parent[1]);
    const Until until(arg);
    long n = 0;
    for (; until.more(n); ++n) {
        char c = static_cast<char>(n);
        CHECK_EQ(write(to_child[1], &c, 1), 1);
        char r = 0;
        CHECK_EQ(read(to_parent[0], &r, 1), 1);
        CHECK_EQ(r, c);
    }
    close(to_child[1]);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::printf("done %ld\n", n);
    return 0;
}

int sparse(long arg) {
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        pin(1);
        close(fds[0]);
        std::mt19937 rng(static_cast<unsigned>(getpid()));
        std::uniform_int_distribution<long> gap_us(1000, 3000);
        const Until until(arg);
        for (long n = 0; until.more(n); ++n) {
            const long us = gap_us(rng);
            timespec ts{0, us * 1000};
            while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
            }
            CHECK_EQ(write(fds[1], "x", 1), 1);
        }
        _exit(0);
    }
    pin(0);
    close(fds[1]);
    char c;
    long n = 0;
    while (read(fds[0], &c, 1) == 1) ++n;
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::printf("done %ld\n", n);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc == 3 ? argv[1] : "";
    const long arg = argc == 3 ? std::atol(argv[2]) : 0;
    if (mode == "pingpong" && arg != 0) return pingpong(arg);
    if (mode == "sparse" && arg != 0) return sparse(arg);
    std::fprintf(stderr, "usage: e2e_abload pingpong|sparse COUNT|-MS\n");
    return 2;
}
