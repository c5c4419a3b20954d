// The statistics lines against a program that knows how many times it
// waited. Run by stats_check.py, which reads the lines back with python's
// json module.
//
//   e2e_stats waits N P K EXIT EXEC
//       N read handshakes and P poll handshakes in which the reader is
//       guaranteed to find its pipe empty and then to sleep: the writer
//       writes only once /proc shows the reader asleep in read (or poll),
//       which with a short spin budget happens only after the spin missed.
//       So the process's line must show exactly N read waits, N spins, no
//       spin hits, N misses, and P poll waits likewise. Then it forks a
//       child that does K read handshakes of its own and ends with
//       EXIT (exit: the destructor; _exit: the _exit hook); the child's line
//       must show K waits, not N + K (counters are reset at fork). Then, if
//       EXEC is a path, it execs it (the exec line carries the N and P
//       waits; the new program writes its own line under the same pid).
//       Prints "pid P child C" first.
//   e2e_stats gate [FORKS]
//       Reads stdin to EOF, then forks FORKS children that _exit at once,
//       waits for them and exits: many of these end at the same moment when
//       their common pipe closes (concurrent writers).
//   e2e_stats pingpong MS
//       A ping-pong between two threads for at least MS ms of its own clock
//       (for interval lines), then exits.
#include <pthread.h>

#include <atomic>
#include <string>

#include "../reliability/rel.h"

namespace {

struct Handshake {
    int data[2];  // the reader waits on data[0]
    std::atomic<pid_t> tid{0};
    std::atomic<int> round{0};  // rounds the reader has started
    int rounds = 0;
    bool poll_wait = false;
};

void* reader(void* arg) {
    auto* h = static_cast<Handshake*>(arg);
    h->tid.store(rel::gettid_());
    for (int i = 0; i < h->rounds; ++i) {
        h->round.store(i + 1);
        if (h->poll_wait) {
            pollfd pfd{h->data[0], POLLIN, 0};
            CHECK_EQ(poll(&pfd, 1, -1), 1);
        }
        char c = 0;
        CHECK_EQ(read(h->data[0], &c, 1), 1);
        CHECK_EQ(c, 'x');
    }
    return nullptr;
}

// `rounds` handshakes: each time, the reader is seen asleep in its call
// before the byte it waits for is written.
void handshakes(int rounds, bool poll_wait) {
    Handshake h;
    CHECK_EQ(pipe(h.data), 0);
    h.rounds = rounds;
    h.poll_wait = poll_wait;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, nullptr, reader, &h), 0);
    while (h.tid.load() == 0) sched_yield();
    const long calls[] = {poll_wait ? SYS_poll : SYS_read, poll_wait ? SYS_ppoll : SYS_read};
    for (int i = 0; i < rounds; ++i) {
        while (h.round.load() != i + 1) sched_yield();
        // blocked_only: the reader must be asleep in the very call, so its
        // spin is over and missed.
        rel::wait_in_call(h.tid.load(), CLOCK_MONOTONIC, 0, {calls[0], calls[1]}, true);
        CHECK_EQ(write(h.data[1], "x", 1), 1);
    }
    CHECK_EQ(pthread_join(t, nullptr), 0);
    close(h.data[0]);
    close(h.data[1]);
}

int waits_main(int argc, char** argv) {
    CHECK(argc == 7);
    const int n = std::atoi(argv[2]), p = std::atoi(argv[3]), k = std::atoi(argv[4]);
    const std::string how = argv[5];
    handshakes(n, false);
    handshakes(p, true);
    // A vfork child shares our memory: its _exit writes nothing and must
    // not stop our own line.
    pid_t vchild = vfork();
    if (vchild == 0) _exit(0);
    CHECK(vchild > 0);
    CHECK_EQ(waitpid(vchild, nullptr, 0), vchild);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        handshakes(k, false);
        if (how == "_exit") _exit(0);
        std::exit(0);
    }
    std::printf("pid %d child %d\n", static_cast<int>(getpid()), static_cast<int>(child));
    std::fflush(stdout);
    int status = 0;
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (std::string(argv[6]) != "-") {
        execl(argv[6], argv[6], static_cast<char*>(nullptr));
        CHECK(!"execl failed");
    }
    return 0;
}

struct PingPong {
    int to[2], from[2];
    std::atomic<bool> stop{false};
};

void* echo(void* arg) {
    auto* pp = static_cast<PingPong*>(arg);
    char c;
    while (read(pp->to[0], &c, 1) == 1) CHECK_EQ(write(pp->from[1], &c, 1), 1);
    return nullptr;
}

int pingpong_main(int ms) {
    PingPong pp;
    CHECK_EQ(pipe(pp.to), 0);
    CHECK_EQ(pipe(pp.from), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, nullptr, echo, &pp), 0);
    const std::uint64_t end = rel::clock_ns(CLOCK_MONOTONIC) + std::uint64_t(ms) * 1'000'000u;
    long rounds = 0;
    while (rel::clock_ns(CLOCK_MONOTONIC) < end) {
        char c = 'p';
        CHECK_EQ(write(pp.to[1], &c, 1), 1);
        CHECK_EQ(read(pp.from[0], &c, 1), 1);
        ++rounds;
    }
    close(pp.to[1]);
    CHECK_EQ(pthread_join(t, nullptr), 0);
    std::printf("rounds %ld\n", rounds);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "waits") return waits_main(argc, argv);
    if (mode == "gate") {
        char buf[64];
        while (read(0, buf, sizeof buf) > 0) {
        }
        const int forks = argc > 2 ? std::atoi(argv[2]) : 0;
        for (int i = 0; i < forks; ++i) {
            pid_t c = fork();
            CHECK(c >= 0);
            if (c == 0) _exit(0);
        }
        for (int i = 0; i < forks; ++i) CHECK(wait(nullptr) > 0);
        return 0;
    }
    if (mode == "pingpong" && argc == 3) return pingpong_main(std::atoi(argv[2]));
    std::fprintf(stderr, "usage: e2e_stats waits N P K exit|_exit EXEC|- | gate | pingpong MS\n");
    return 2;
}
