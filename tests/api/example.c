/* The control API's acceptance program: built from an installed
 * pipespin.h only (as C99 through pkg-config, and as C++ through CMake's
 * find_package), and run by api_test.sh without the shim and under it in
 * each mode:
 *
 *   api_example absent|off|fixed|adaptive
 *
 * Without the shim every call must report "not present" and change
 * nothing. Under it, in a ping-pong between two threads over two pipes:
 * read ends hinted "never spin" never spin (one of them through a dup of
 * the hinted fd); hinted with a budget they spin in fixed and adaptive
 * mode, never in mode off (the A/B control arm stays a control); threads
 * switched off with pipespin_thread_spin(0) never spin; a pipe that takes
 * the number of a closed hinted fd has no hint. Each claim is checked on
 * the process's counters (pipespin_get_stats). Last, the counters are
 * printed as "kind.dir.field=value" lines, for the driver to compare with
 * the statistics line the shim writes at exit: nothing touches a pipe after
 * that snapshot (the driver sends stdout to a file).
 *
 * Exit 0: every check passed; 1: a check failed (what and where on stderr). */
#define _POSIX_C_SOURCE 200809L
#include <pipespin/pipespin.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUNDS 1000

static void check_failed(const char* what, long got, int line) {
    fprintf(stderr, "api_example:%d: check failed: %s (got %ld)\n", line, what, got);
    exit(1);
}
#define CHECK(cond, got)                                         \
    do {                                                         \
        if (!(cond)) check_failed(#cond, (long)(got), __LINE__); \
    } while (0)

struct peer {
    int in, out; /* reads a byte from in, writes it back to out */
    int rounds;
    int thread_off; /* pipespin_thread_spin(0) first */
};

static void* peer_main(void* arg) {
    const struct peer* p = (const struct peer*)arg;
    int i;
    if (p->thread_off) CHECK(pipespin_thread_spin(0) == 1, 0);
    for (i = 0; i < p->rounds; ++i) {
        unsigned char b;
        CHECK(read(p->in, &b, 1) == 1, errno);
        CHECK(write(p->out, &b, 1) == 1, errno);
    }
    return NULL;
}

/* ROUNDS round trips: this thread writes to `out` and reads the answer from
 * `in`; a peer thread answers. */
static void ping_pong(int out, int peer_in, int peer_out, int in, int thread_off) {
    struct peer p;
    pthread_t t;
    int i;
    p.in = peer_in;
    p.out = peer_out;
    p.rounds = ROUNDS;
    p.thread_off = thread_off;
    CHECK(pthread_create(&t, NULL, peer_main, &p) == 0, 0);
    if (thread_off) CHECK(pipespin_thread_spin(0) == 1, 0);
    for (i = 0; i < ROUNDS; ++i) {
        unsigned char b = (unsigned char)i, r = 0;
        CHECK(write(out, &b, 1) == 1, errno);
        CHECK(read(in, &r, 1) == 1, errno);
        CHECK(r == b, r);
    }
    CHECK(pthread_join(t, NULL) == 0, 0);
    if (thread_off) CHECK(pipespin_thread_spin(1) == 0, 0);
}

/* The read counters of one kind of pipe now. */
static struct pipespin_counters counters_of(int kind) {
    struct pipespin_stats s;
    CHECK(pipespin_get_stats(&s) == 0, 0);
    CHECK(s.size == sizeof s, s.size);
    return s.c[kind][PIPESPIN_STAT_READ];
}

/* What the reads of that kind did since `a`. */
static struct pipespin_counters since(int kind, struct pipespin_counters a) {
    struct pipespin_counters b = counters_of(kind);
    b.calls -= a.calls;
    b.waits -= a.waits;
    b.spins -= a.spins;
    b.spin_hits -= a.spin_hits;
    return b;
}

/* Makes fd (a closed one) the lowest free number, so that the next open()
 * gets it: the holes below it are filled with /dev/null until the end. */
static int lowest_free(int fd) {
    int f;
    while ((f = open("/dev/null", O_RDONLY)) != fd) CHECK(f >= 0 && f < fd, f);
    CHECK(close(f) == 0, errno);
    return fd;
}

static void absent(void) {
    int fds[2], back[2];
    struct pipespin_stats s;
    CHECK(pipe(fds) == 0 && pipe(back) == 0, errno);
    errno = 1234;
    CHECK(pipespin_is_present() == 0, 1);
    CHECK(pipespin_version() == 0, pipespin_version());
    CHECK(pipespin_fd_hint(fds[0], PIPESPIN_READ, 100) == PIPESPIN_ENOTPRESENT, 0);
    CHECK(pipespin_fd_hint(-1, 0, -7) == PIPESPIN_ENOTPRESENT, 0);
    CHECK(pipespin_thread_spin(0) == PIPESPIN_ENOTPRESENT, 0);
    memset(&s, 0xff, sizeof s);
    CHECK(pipespin_get_stats(&s) == PIPESPIN_ENOTPRESENT, 0);
    CHECK(s.size == 0 && s.c[0][0].calls == 0 && s.via[PIPESPIN_VIAS - 1].spins == 0, s.size);
    CHECK(errno == 1234, errno);
    /* The program works the same. */
    ping_pong(fds[1], fds[0], back[1], back[0], 0);
    printf("absent: every call reported not present\n");
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    const int spins = strcmp(mode, "fixed") == 0 || strcmp(mode, "adaptive") == 0;
    int a[2], b[2], b_dup, null_fd, fifo_r, fifo_w, i;
    char dir[] = "/tmp/pipespin-api-example.XXXXXX", path[64];
    unsigned v;
    struct pipespin_counters before, d;
    struct pipespin_stats s;

    if (strcmp(mode, "absent") == 0) {
        absent();
        return 0;
    }
    CHECK(spins || strcmp(mode, "off") == 0, 0);
    CHECK(pipespin_is_present() == 1, 0);
    v = pipespin_version();
    CHECK(v != 0, v);
    fprintf(stderr, "api_example: pipespin %u.%u.%u, mode %s\n", v >> 16, (v >> 8) & 255, v & 255,
            mode);

    /* a: this thread -> peer; b: peer -> this thread. */
    CHECK(pipe(a) == 0, errno);
    CHECK(pipe(b) == 0, errno);

    /* What is refused, in every mode alike. */
    errno = 1234;
    CHECK(pipespin_fd_hint(a[0], 0, 100) == -EINVAL, 0);
    CHECK(pipespin_fd_hint(a[0], 4, 100) == -EINVAL, 0);
    CHECK(pipespin_fd_hint(a[0], PIPESPIN_READ, -2) == -EINVAL, 0);
    CHECK(pipespin_fd_hint(a[0], PIPESPIN_READ, PIPESPIN_HINT_MAX_US + 1) == -EINVAL, 0);
    CHECK(pipespin_fd_hint(-1, PIPESPIN_READ, 100) == -EBADF, 0);
    null_fd = open("/dev/null", O_RDONLY);
    CHECK(null_fd >= 0, errno);
    CHECK(pipespin_fd_hint(null_fd, PIPESPIN_READ, 100) == -ENOTSUP, 0);
    CHECK(close(null_fd) == 0, errno);
    CHECK(pipespin_fd_hint(null_fd, PIPESPIN_READ, 100) == -EBADF, 0);
    CHECK(pipespin_thread_spin(2) == -EINVAL, 0);
    CHECK(errno == 1234, errno);

    /* Never spin: a[0] directly, b[0] through a dup (the hint goes with it;
     * the original is closed). */
    CHECK(pipespin_fd_hint(a[0], PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0, 0);
    CHECK(pipespin_fd_hint(b[0], PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0, 0);
    b_dup = dup(b[0]);
    CHECK(b_dup >= 0, errno);
    CHECK(close(b[0]) == 0, errno);
    before = counters_of(PIPESPIN_KIND_PIPE);
    ping_pong(a[1], a[0], b[1], b_dup, 0);
    d = since(PIPESPIN_KIND_PIPE, before);
    CHECK(d.calls == 2 * ROUNDS, d.calls);
    CHECK(d.waits == 0, d.waits);
    CHECK(d.spins == 0, d.spins);

    /* A budget of 1 ms: spins in fixed and adaptive mode (whether they hit
     * is the machine's business), none in mode off. */
    CHECK(pipespin_fd_hint(a[0], PIPESPIN_READ, 1000) == 0, 0);
    CHECK(pipespin_fd_hint(b_dup, PIPESPIN_BOTH, 1000) == 0, 0);
    before = counters_of(PIPESPIN_KIND_PIPE);
    ping_pong(a[1], a[0], b[1], b_dup, 0);
    d = since(PIPESPIN_KIND_PIPE, before);
    if (spins) {
        CHECK(d.spins > 0, d.spins);
    } else {
        CHECK(d.waits == 0, d.waits); /* off: not even a look */
        CHECK(d.spins == 0, d.spins);
    }

    /* Both threads switched off: no spin, whatever the hints say. */
    before = counters_of(PIPESPIN_KIND_PIPE);
    ping_pong(a[1], a[0], b[1], b_dup, 1);
    d = since(PIPESPIN_KIND_PIPE, before);
    CHECK(d.waits == 0, d.waits);
    CHECK(d.spins == 0, d.spins);

    /* A close drops the hint: a FIFO opened on b_dup's number after its
     * close (classified afresh on its first read, on the same slot of the
     * shim's table) is the policy's again, so in fixed mode, which spins on
     * every pipe, it spins. */
    CHECK(pipespin_fd_hint(a[0], PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0, 0);
    CHECK(pipespin_fd_hint(b_dup, PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0, 0);
    CHECK(close(b_dup) == 0, errno);
    CHECK(close(b[1]) == 0, errno);
    fifo_r = lowest_free(b_dup);
    CHECK(mkdtemp(dir) != NULL, errno);
    snprintf(path, sizeof path, "%s/fifo", dir);
    CHECK(mkfifo(path, 0600) == 0, errno);
    CHECK(open(path, O_RDONLY | O_NONBLOCK) == fifo_r, errno);
    fifo_w = open(path, O_WRONLY);
    CHECK(fifo_w >= 0, errno);
    CHECK(fcntl(fifo_r, F_SETFL, 0) == 0, errno);
    CHECK(unlink(path) == 0 && rmdir(dir) == 0, errno);
    before = counters_of(PIPESPIN_KIND_FIFO);
    ping_pong(a[1], a[0], fifo_w, fifo_r, 0);
    d = since(PIPESPIN_KIND_FIFO, before);
    CHECK(d.calls == ROUNDS, d.calls);
    if (strcmp(mode, "fixed") == 0) CHECK(d.spins > 0, d.spins);
    if (!spins) CHECK(d.spins == 0, d.spins);
    CHECK(close(a[0]) == 0 && close(a[1]) == 0, errno);
    CHECK(close(fifo_r) == 0 && close(fifo_w) == 0, errno);

    /* The counters as they stand, for the driver. No pipe is touched after
     * this (stdout is a file). */
    CHECK(pipespin_get_stats(&s) == 0, 0);
    CHECK(s.size == sizeof s, s.size);
    for (i = 0; i < PIPESPIN_KINDS * PIPESPIN_STAT_DIRS; ++i) {
        static const char* const kinds[] = {"pipe", "fifo"};
        static const char* const dirs[] = {"read", "write", "poll"};
        const struct pipespin_counters* c = &s.c[i / PIPESPIN_STAT_DIRS][i % PIPESPIN_STAT_DIRS];
        const char* k = kinds[i / PIPESPIN_STAT_DIRS];
        const char* dn = dirs[i % PIPESPIN_STAT_DIRS];
        printf("%s.%s.calls=%llu\n", k, dn, (unsigned long long)c->calls);
        printf("%s.%s.bytes=%llu\n", k, dn, (unsigned long long)c->bytes);
        printf("%s.%s.waits=%llu\n", k, dn, (unsigned long long)c->waits);
        printf("%s.%s.spins=%llu\n", k, dn, (unsigned long long)c->spins);
        printf("%s.%s.spin_hits=%llu\n", k, dn, (unsigned long long)c->spin_hits);
        printf("%s.%s.spin_ns=%llu\n", k, dn, (unsigned long long)c->spin_ns);
        printf("%s.%s.sleep_ns=%llu\n", k, dn, (unsigned long long)c->sleep_ns);
    }
    for (i = 0; i < PIPESPIN_VIAS; ++i) {
        static const char* const vias[] = {"io",     "poll",  "stdio", "vector",
                                           "select", "epoll", "splice"};
        printf("via.%s.spins=%llu\n", vias[i], (unsigned long long)s.via[i].spins);
        printf("via.%s.spin_hits=%llu\n", vias[i], (unsigned long long)s.via[i].spin_hits);
    }
    return 0;
}
