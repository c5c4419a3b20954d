// What a blocking read's wake-up costs the reader: a forked writer sends one
// byte every 2 ms (absolute deadlines), the reader reads them one at a time.
// Prints the reader's run time (/proc/thread-self/schedstat, ns precision)
// over its reads after the first, in µs, and its voluntary context switches.
//   wakeup N [same|spread|free]
// same: both ends pinned to the first usable CPU, spread: to the first two,
// free: wherever the scheduler puts them. Pinning happens after the shim's
// constructor, which so still sees every usable CPU.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long run_ns(void) {
    unsigned long long run = 0;
    FILE* f = fopen("/proc/thread-self/schedstat", "r");
    if (f == NULL || fscanf(f, "%llu", &run) != 1) exit(2);
    fclose(f);
    return run;
}

static void pin(int which) {
    cpu_set_t set, one;
    if (sched_getaffinity(0, sizeof set, &set) != 0) exit(2);
    int seen = 0, cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (!CPU_ISSET(c, &set)) continue;
        cpu = c;
        if (seen++ == which) break;
    }
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) exit(2);
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const int n = atoi(argv[1]);
    const char* where = argc > 2 ? argv[2] : "free";
    const int pinned = strcmp(where, "free") != 0, spread = strcmp(where, "spread") == 0;
    int p[2];
    if (n < 2 || pipe(p) != 0) return 2;
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        if (pinned) pin(spread ? 1 : 0);
        close(p[0]);
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        for (int i = 0; i < n; i++) {
            t.tv_nsec += 2000000;
            if (t.tv_nsec >= 1000000000) t.tv_nsec -= 1000000000, t.tv_sec++;
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
            }
            if (write(p[1], "x", 1) != 1) _exit(2);
        }
        _exit(0);
    }
    if (pinned) pin(0);
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1) return 2;
    struct rusage a, b;
    getrusage(RUSAGE_THREAD, &a);
    const unsigned long long r0 = run_ns();
    int got = 1;
    while (read(p[0], &c, 1) == 1) ++got;
    const unsigned long long r1 = run_ns();
    getrusage(RUSAGE_THREAD, &b);
    int st = 0;
    waitpid(pid, &st, 0);
    if (got != n || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 2;
    printf("%.1f %ld\n", (r1 - r0) / 1e3, b.ru_nvcsw - a.ru_nvcsw);
    return 0;
}
