// A 1-byte ping-pong over two pipes between a process and its fork, both of
// which pin themselves to one CPU after they started: the shim read the
// usable CPUs at its start (two or more), as it does in a program that a
// `taskset -p` or a cpuset change narrows while it runs. Both ends then
// share one CPU, and a spin only keeps the peer it waits for from running.
//   usage: onecpu ROUND_TRIPS [CPU]   (CPU -1: no pinning)
// Prints µs per round trip, timed in the parent from its first write to
// its last read.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pin.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void must(int ok, const char* what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: onecpu ROUND_TRIPS [CPU]\n");
        return 2;
    }
    const int n = atoi(argv[1]), cpu = argc > 2 ? atoi(argv[2]) : 0;
    int ping[2], pong[2];
    must(pipe(ping) == 0 && pipe(pong) == 0, "pipe");
    char c = 'x';
    const pid_t child = fork();
    must(child >= 0, "fork");
    if (child == 0) {
        pin_to(cpu);
        for (int i = 0; i < n; i++) must(read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) == 1, "child");
        _exit(0);
    }
    pin_to(cpu);
    const double t = now_s();
    for (int i = 0; i < n; i++) must(write(ping[1], &c, 1) == 1 && read(pong[0], &c, 1) == 1, "parent");
    const double e = now_s() - t;
    int status = 0;
    must(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
    printf("%.3f\n", e / n * 1e6);
    return 0;
}
