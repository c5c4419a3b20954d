// Shared by the C programs in tools/bench: pin the calling process to one CPU.
#pragma once
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

// Pins the caller to `cpu` (a negative cpu: leaves it alone); exits on failure.
static void pin_to(int cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}
