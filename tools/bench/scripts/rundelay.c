// Does a missed spin's blocking read show whether the peer holds this
// thread's CPU? A 1-byte ping-pong over two pipes between two processes,
// each pinned to a CPU. The measured side (A) spins up to BUDGET µs with
// non-blocking reads, then blocks; around each block it reads its run delay
// (/proc/thread-self/schedstat, second field: ns spent runnable, waiting
// for a CPU). The peer (B) spins the same way or blocks at once.
//   usage: rundelay CPU_A CPU_B PEER_SPINS(0|1) ROUND_TRIPS BUDGET_US
// Prints one line: round trips, misses, and over the misses the median block
// (µs), the median run delay during it (µs), the share of misses whose run
// delay was more than half the block, and the median cost of one run-delay
// read (open, read, close; ns).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pin.h"

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t run_delay_ns(void) {
    char b[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    b[n > 0 ? n : 0] = '\0';
    unsigned long long on_cpu = 0, delay = 0;
    if (sscanf(b, "%llu %llu", &on_cpu, &delay) != 2) return 0;
    return delay;
}

static uint64_t budget_ns;

// Spins with non-blocking reads for up to the budget; 1 if a byte came.
static int spin_read(int fd, char* c) {
    const int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    const uint64_t end = now_ns() + budget_ns;
    int hit = 0;
    while (!hit && now_ns() < end) hit = read(fd, c, 1) == 1;
    fcntl(fd, F_SETFL, fl);
    return hit;
}

static int cmp_u64(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static double median_us(uint64_t* v, int n) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return (double)v[n / 2] / 1000;
}

int main(int argc, char** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: rundelay CPU_A CPU_B PEER_SPINS(0|1) ROUND_TRIPS BUDGET_US\n");
        return 2;
    }
    const int cpu_a = atoi(argv[1]), cpu_b = atoi(argv[2]), peer_spins = atoi(argv[3]);
    const int rounds = atoi(argv[4]);
    budget_ns = (uint64_t)atoll(argv[5]) * 1000;
    int ab[2], ba[2];
    if (rounds <= 0 || pipe(ab) != 0 || pipe(ba) != 0) return 2;
    char c = 'x';
    const pid_t peer = fork();
    if (peer == 0) {
        pin_to(cpu_b);
        for (int i = 0; i < rounds; i++) {
            if (!(peer_spins && spin_read(ab[0], &c)) && read(ab[0], &c, 1) != 1) _exit(1);
            if (write(ba[1], &c, 1) != 1) _exit(1);
        }
        _exit(0);
    }
    pin_to(cpu_a);
    uint64_t* block = calloc((size_t)rounds, sizeof *block);
    uint64_t* delay = calloc((size_t)rounds, sizeof *delay);
    uint64_t* cost = calloc((size_t)rounds, sizeof *cost);
    int misses = 0, queued = 0;
    for (int i = 0; i < rounds; i++) {
        if (write(ab[1], &c, 1) != 1) return 1;
        if (spin_read(ba[0], &c)) continue;
        const uint64_t t0 = now_ns();
        const uint64_t d0 = run_delay_ns();
        const uint64_t t1 = now_ns();
        if (read(ba[0], &c, 1) != 1) return 1;
        const uint64_t t2 = now_ns();
        const uint64_t d1 = run_delay_ns();
        cost[misses] = t1 - t0;
        block[misses] = t2 - t1;
        delay[misses] = d1 - d0;
        if (2 * delay[misses] > block[misses]) queued++;
        misses++;
    }
    int status = 0;
    waitpid(peer, &status, 0);
    printf("A on CPU %d, B on CPU %d, B %s, budget %s us: %d round trips, %d misses; "
           "median block %.1f us, median run delay in it %.1f us, run delay > half the block "
           "in %d%% of misses; one run-delay read %.0f ns\n",
           cpu_a, cpu_b, peer_spins ? "spins" : "blocks", argv[5], rounds, misses,
           median_us(block, misses), median_us(delay, misses), misses ? queued * 100 / misses : 0,
           median_us(cost, misses) * 1000);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
