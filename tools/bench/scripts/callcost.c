/* N rounds of a 100-byte write and read on one pipe that never waits: what
 * a call on a stream costs in instructions, the kernel's work aside
 * (tools/bench/scripts/callcost.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s ROUNDS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int p[2];
    char buf[100] = {0};
    if (pipe(p) != 0) return 1;
    for (long i = 0; i < n; i++) {
        if (write(p[1], buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
        if (read(p[0], buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
    }
    return 0;
}
