// The system calls (and the time) a call that cannot or need not wait on a
// pipe costs, for tools/bench/scripts/waitcalls.sh. Each case prints "ops N" and
// "ns_per_op X" (wall time over its loop).
//   eagain N     N reads of an empty pipe in non-blocking mode (EAGAIN):
//                an event loop's read-until-EAGAIN
//   pollsock N   N round trips over a socketpair, each side poll()ing its
//                end before it reads: a set without a pipe
//   pollslow N   N polls, each then a read, of a pipe a child writes a byte
//                into every 100 us: waits far longer than a spin, a pipe
//                adaptive mode stops spinning on
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char* what) {
    perror(what);
    exit(1);
}

static void pong(int fd, int n, int first) {
    char c = 'x';
    struct pollfd p = {fd, POLLIN, 0};
    for (int i = 0; i < n; i++) {
        if (first && write(fd, &c, 1) != 1) die("write");
        if (poll(&p, 1, -1) != 1) die("poll");
        if (read(fd, &c, 1) != 1) die("read");
        if (!first && write(fd, &c, 1) != 1) die("write");
    }
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: waitcalls eagain|pollsock|pollslow N\n");
        return 2;
    }
    const int n = atoi(argv[2]);
    double t = 0;
    if (strcmp(argv[1], "eagain") == 0) {
        int p[2];
        if (pipe2(p, O_NONBLOCK) != 0) die("pipe2");
        char c;
        t = now_ns();
        for (int i = 0; i < n; i++)
            if (read(p[0], &c, 1) != -1 || errno != EAGAIN) die("read");
        t = now_ns() - t;
    } else if (strcmp(argv[1], "pollsock") == 0) {
        int s[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) die("socketpair");
        t = now_ns();
        const pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            pong(s[1], n, 0);
            _exit(0);
        }
        pong(s[0], n, 1);
        if (waitpid(pid, NULL, 0) != pid) die("waitpid");
        t = now_ns() - t;
    } else if (strcmp(argv[1], "pollslow") == 0) {
        int p[2];
        if (pipe(p) != 0) die("pipe");
        t = now_ns();
        const pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            close(p[0]);
            const struct timespec gap = {0, 100000};
            for (int i = 0; i < n; i++)
                if (nanosleep(&gap, NULL) != 0 || write(p[1], "x", 1) != 1) _exit(1);
            _exit(0);
        }
        close(p[1]);
        struct pollfd pfd = {p[0], POLLIN, 0};
        char c;
        for (int i = 0; i < n; i++) {
            if (poll(&pfd, 1, -1) != 1) die("poll");
            if (read(p[0], &c, 1) != 1) die("read");
        }
        if (waitpid(pid, NULL, 0) != pid) die("waitpid");
        t = now_ns() - t;
    } else {
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    printf("ops %d\nns_per_op %.1f\n", n, t / n);
    return 0;
}
