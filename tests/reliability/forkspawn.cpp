// Cases fork and spawn: children made while the shim is busy, or that change
// fds before exec, do not damage anybody's shim state.
//
//   forkspawn fork    a thread waits in read (empty pipe), write (full pipe)
//                     or poll(-1), seen spinning (fixed, 1 s budget: it must
//                     be), and the main thread forks. The child uses pipes
//                     normally: creates one, writes, reads it back, polls,
//                     and reads an empty pipe that a child thread fills once
//                     the read waits (in fixed it must spin: the child's shim
//                     works); then exits 0 (and writes its exit report).
//                     Afterwards the parent's thread gets its data.
//   forkspawn spawn   before any wait, vfork children close and dup2 fds over
//                     the parent's pipe fds (the shim's fd table is in memory
//                     they share with the parent) and exec /bin/true, and
//                     posix_spawn runs this helper with file actions that
//                     close the parent's pipe fds and dup2 one onto stdout;
//                     afterwards the parent's pipes still carry data
//                     correctly, and still spin: a ping-pong with a thread
//                     and a write into a full pipe must be seen spinning
//                     (fixed), and run.sh --spun checks the exit report.
//
// How a naive spin fails: a shim that holds a lock while it spins (for its
// fd table, its statistics or its logger) leaves it locked in the forked
// child, whose first pipe call then deadlocks (a timeout). A shim that keeps
// per-process state a vfork child can overwrite (the child runs in the
// parent's memory, on the parent's thread's TLS) stops spinning, or spins on
// the wrong fds, in the parent afterwards.
#include <spawn.h>

#include <atomic>
#include <cstring>
#include <string_view>
#include <thread>

#include "rel.h"

extern char** environ;

using namespace rel;

namespace {

enum class Op { Read, Write, Poll };

// Runs `call` in a new thread, waits until it is inside the call, returns
// the thread and whether it was seen spinning.
struct Waiter {
    std::thread th;
    bool spinning = false;
};

template <class Call>
Waiter start_waiter(long nr, Call call) {
    int ann[2];
    make_pipe(ann);
    std::atomic<pid_t> tid{0};
    Waiter w;
    w.th = std::thread([&tid, ann, call] {
        tid = gettid_();
        const std::uint64_t base = thread_cpu_ns();
        write_full(ann[1], &base, sizeof base);
        call();
    });
    std::uint64_t base = 0;
    CHECK_EQ(read_full(ann[0], &base, sizeof base), sizeof base);
    w.spinning = wait_in_call(tid, cpu_clock_of(w.th.native_handle()), base, {nr, SYS_ppoll}) ==
                 InCall::Spinning;
    close(ann[0]);
    close(ann[1]);
    return w;
}

// In the forked child: pipes work, and the shim spins here too.
void child_uses_pipes() {
    int q[2];
    make_pipe(q);
    CHECK_EQ(write(q[1], "hello", 5), 5);
    pollfd pfd{q[0], POLLIN, 0};
    CHECK_EQ(poll(&pfd, 1, -1), 1);
    char buf[8] = {};
    CHECK_EQ(read(q[0], buf, sizeof buf), 5);
    CHECK(std::string_view(buf) == "hello");
    int r[2];
    make_pipe(r);
    const bool spun = read_seen_in_call(r[0], r[1], "late") == InCall::Spinning;
    if (config() == Config::Fixed && !spun)
        fail(__FILE__, __LINE__, "fixed, 1 s budget: the forked child's read was seen spinning", 0);
    for (int fd : {q[0], q[1], r[0], r[1]}) close(fd);
}

void fork_case() {
    for (Op op : {Op::Read, Op::Write, Op::Poll}) {
        const char* name = op == Op::Read ? "read" : op == Op::Write ? "write" : "poll";
        PROGRESS("fork while a thread waits in %s", name);
        int p[2];
        make_pipe(p);
        CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, kPipeSize), kPipeSize);
        static char full[kPipeSize];
        if (op == Op::Write) write_full(p[1], full, sizeof full);
        long result = -2;
        char got = 0;
        Waiter w;
        switch (op) {
            case Op::Read:
                w = start_waiter(SYS_read, [&] { result = read(p[0], &got, 1); });
                break;
            case Op::Write:
                w = start_waiter(SYS_write, [&] { result = write(p[1], "w", 1); });
                break;
            case Op::Poll:
                w = start_waiter(SYS_poll, [&] {
                    pollfd pfd{p[0], POLLIN, 0};
                    result = poll(&pfd, 1, -1);
                });
                break;
        }
        if (config() == Config::Fixed && !w.spinning)
            fail(__FILE__, __LINE__, "fixed, 1 s budget: the thread was seen spinning", 0);
        pid_t pid = fork_child();
        if (pid == 0) {
            child_uses_pipes();
            std::exit(0);  // normal exit: the child's shim writes its exit report
        }
        wait_ok(pid);
        if (op == Op::Write)
            CHECK_EQ(read_full(p[0], full, sizeof full), sizeof full);
        else
            CHECK_EQ(write(p[1], "r", 1), 1);
        w.th.join();
        CHECK_EQ(result, 1);
        if (op == Op::Read) CHECK_EQ(got, 'r');
        close(p[0]);
        close(p[1]);
    }
}

// ---- spawn ----------------------------------------------------------------

void vfork_exec(int ping_r, int ping_w, int full_w) {
    std::fflush(nullptr);
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    pid_t pid = vfork();
    CHECK(pid >= 0);
    if (pid == 0) {
        // The child shares the parent's memory (and the shim's tables in it).
        close(ping_r);
        dup2(full_w, 1);
        dup2(full_w, ping_w);
        close(full_w);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) dup2(null, 0);
        execve("/bin/true", argv, environ);
        _exit(127);
    }
    wait_ok(pid);
}

void spawn_self(const char* self, int ping_r, int ping_w, int out_w) {
    posix_spawn_file_actions_t fa;
    CHECK_EQ(posix_spawn_file_actions_init(&fa), 0);
    CHECK_EQ(posix_spawn_file_actions_addclose(&fa, ping_r), 0);
    CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, out_w, 1), 0);
    CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, out_w, ping_w), 0);
    CHECK_EQ(posix_spawn_file_actions_addclose(&fa, out_w), 0);
    char* const argv[] = {const_cast<char*>(self), const_cast<char*>("hello"), nullptr};
    pid_t pid = -1;
    std::fflush(nullptr);
    CHECK_EQ(posix_spawn(&pid, self, &fa, nullptr, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    wait_ok(pid);
}

void spawn_case(const char* self) {
    // Pipes made before the children, used (waited on) only after them.
    int ping[2], pong[2], full[2], out[2];
    make_pipe(ping);
    make_pipe(pong);
    make_pipe(full);
    make_pipe(out);
    CHECK_EQ(fcntl(full[1], F_SETPIPE_SZ, kPipeSize), kPipeSize);
    // Classify every end in the shim (non-waiting calls only).
    CHECK_EQ(write(ping[1], "0", 1), 1);
    char c = 0;
    CHECK_EQ(read(ping[0], &c, 1), 1);
    CHECK_EQ(write(pong[1], "0", 1), 1);
    CHECK_EQ(read(pong[0], &c, 1), 1);

    PROGRESS("vfork children close and dup2 over the parent's pipe fds, then exec");
    for (int i = 0; i < 5; ++i) {
        vfork_exec(ping[0], ping[1], full[1]);
        vfork_exec(pong[0], pong[1], full[1]);
    }
    PROGRESS("posix_spawn with file actions over the parent's pipe fds");
    for (int i = 0; i < 5; ++i) {
        spawn_self(self, ping[0], ping[1], out[1]);
        char buf[16] = {};
        CHECK_EQ(read_full(out[0], buf, 6), 6u);
        CHECK(std::string_view(buf) == "hello\n");
    }

    // The children's closes made the shim forget the parent's fds (its
    // table is in the memory a vfork child shares with its parent), and a
    // fd it does not know is classified again on its third call
    // (Runtime::classify_looks): three more non-waiting round trips each.
    for (int round = 0; round < 3; ++round) {
        for (int* p : {ping, pong, full}) {
            CHECK_EQ(write(p[1], "0", 1), 1);
            CHECK_EQ(read(p[0], &c, 1), 1);
        }
    }

    PROGRESS("the parent's pipes still work, and still spin");
    constexpr int kRounds = 200;
    const pid_t me = gettid_();
    const clockid_t cpu = cpu_clock_of(pthread_self());
    int ann[2];
    make_pipe(ann);
    int spun_reads = 0;
    std::thread echo([&] {
        for (int i = 0; i < kRounds; ++i) {
            std::uint64_t base = 0;
            CHECK_EQ(read_full(ann[0], &base, sizeof base), sizeof base);
            char b = 0;
            CHECK_EQ(read(ping[0], &b, 1), 1);
            // Every 20th round, answer only once the parent is inside its read.
            if (i % 20 == 0 && wait_in_call(me, cpu, base, {SYS_read}) == InCall::Spinning)
                ++spun_reads;
            CHECK_EQ(write(pong[1], &b, 1), 1);
        }
    });
    for (int i = 0; i < kRounds; ++i) {
        const std::uint64_t base = thread_cpu_ns();
        write_full(ann[1], &base, sizeof base);
        const char b = static_cast<char>('a' + i % 26);
        CHECK_EQ(write(ping[1], &b, 1), 1);
        char back = 0;
        CHECK_EQ(read(pong[0], &back, 1), 1);
        CHECK_EQ(back, b);
    }
    echo.join();
    PROGRESS("  ping-pong ok, %d of %d watched reads were seen spinning", spun_reads, kRounds / 20);
    if (config() == Config::Fixed) CHECK_EQ(spun_reads, kRounds / 20);

    static char filler[kPipeSize];
    write_full(full[1], filler, sizeof filler);
    Waiter w = start_waiter(SYS_write, [&] { CHECK_EQ(write(full[1], "w", 1), 1); });
    CHECK_EQ(read_full(full[0], filler, sizeof filler), sizeof filler);
    w.th.join();
    CHECK_EQ(read(full[0], &c, 1), 1);
    CHECK_EQ(c, 'w');
    if (config() == Config::Fixed && !w.spinning)
        fail(__FILE__, __LINE__, "fixed, 1 s budget: the write into a full pipe was seen spinning",
             0);
    PROGRESS("  full-pipe write ok (%s)", w.spinning ? "spinning" : "asleep in write");
    for (int fd :
         {ping[0], ping[1], pong[0], pong[1], full[0], full[1], out[0], out[1], ann[0], ann[1]})
        close(fd);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string_view(argv[1]) == "hello") {
        // posix_spawn'ed: stdout is the parent's pipe.
        CHECK_EQ(write(1, "hello\n", 6), 6);
        return 0;
    }
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view mode = argv[1];
    if (mode == "fork")
        fork_case();
    else if (mode == "spawn")
        spawn_case(argv[0]);
    else
        return 2;
    PROGRESS("ok");
    return 0;
}
