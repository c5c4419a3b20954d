// Cases stale_rawclose, stale_clonefiles and stale_race: whatever the shim's
// fd table believes, a look never changes what the real call does.
//
//   stale rawclose    a pipe the shim knows is closed by syscall(SYS_close),
//                     which no close hook sees, and a TCP connection takes
//                     both numbers (a unix stream socketpair). Every
//                     blocking write(4096) on the socket that now has the
//                     write end's number, made when its send buffer has
//                     room for part of it, returns 4096, and the peer
//                     receives every byte.
//   stale clonefiles  the same, the pipe closed with close() by a child made
//                     with clone(CLONE_FILES) (it shares the fd table, not
//                     the memory: its shim's table is its own copy).
//   stale race        a stress: one thread makes pipes, uses them once and
//                     closes them while a TCP connection takes their
//                     numbers, 2000 times; another thread keeps asking
//                     select() about those numbers (which classifies them
//                     in the shim, racing with the closes). Every blocking
//                     write on the sockets is whole, as above.
//
// How a naive spin fails: a table entry that still says "pipe" for a number
// a socket took makes the shim try the write with pwritev2(RWF_NOWAIT),
// which on a socket sends what fits and returns a short count that a
// blocking stream-socket write never returns (data the program believes
// sent is never sent).
#include <sched.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <string_view>
#include <thread>
#include <vector>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kWrites = 40;
constexpr size_t kMessage = 4096;  // PIPE_BUF: a pipe write of it would be all or nothing

void set_int(int fd, int level, int opt, int v) {
    CHECK_EQ(setsockopt(fd, level, opt, &v, sizeof v), 0);
}

// A unix stream connection whose numbers are the lowest free ones (this
// thread makes no other fd meanwhile): *a, then *b.
void connect_pair(int* a, int* b) {
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    *a = sv[0];
    *b = sv[1];
}

// kWrites blocking writes of kMessage bytes on `fd`, each made when its
// send buffer has room for part of the message but not all of it (filled,
// then one of its 1000-byte sends taken by the peer), the rest taken by a
// thread that reads `peer` once this one is seen inside its write (asleep
// in it, or spinning): each returns kMessage, and the peer gets every byte.
void writes_are_whole(int fd, int peer) {
    set_int(fd, SOL_SOCKET, SO_SNDBUF, 4096);
    std::vector<unsigned char> msg(kMessage, 'm');
    const pid_t me = gettid_();
    const clockid_t cpu = cpu_clock_of(pthread_self());
    int short_writes = 0;
    for (int i = 0; i < kWrites; ++i) {
        size_t queued = 0;
        for (;;) {  // send is not a name the shim replaces
            const ssize_t r = send(fd, msg.data(), 1000, MSG_DONTWAIT);
            if (r < 0) {
                CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
                break;
            }
            queued += static_cast<size_t>(r);
        }
        char buf[1000];
        CHECK_EQ(recv(peer, buf, sizeof buf, 0), static_cast<ssize_t>(sizeof buf));
        const size_t rest = queued - sizeof buf + kMessage;
        std::atomic<bool> returned{false};
        const std::uint64_t cpu_base = thread_cpu_ns();
        std::thread reader([&] {
            // Inside the write (asleep in it, or spinning), or back from it.
            for (;;) {
                if (returned.load()) break;
                const ThreadView v = view_thread(me);
                if ((v.state == 'S' || v.state == 'D') && v.syscall_nr == SYS_write) break;
                if (clock_ns(cpu) - cpu_base >= kSpinProofNs) break;
                sched_yield();
            }
            std::vector<unsigned char> all(rest);
            CHECK_EQ(read_full(peer, all.data(), rest), rest);
        });
        const ssize_t r = write(fd, msg.data(), msg.size());
        returned.store(true);
        if (r != static_cast<ssize_t>(msg.size())) {
            std::fprintf(stderr, "write %d of %zu bytes on a blocking stream socket returned %zd\n",
                         i, msg.size(), r);
            ++short_writes;
            if (r > 0) write_full(fd, msg.data() + r, msg.size() - static_cast<size_t>(r));
        }
        reader.join();
    }
    if (short_writes != 0)
        fail(__FILE__, __LINE__, "a blocking write on a stream socket returns the whole count", 0);
}

// A pipe the shim knows, both ends used once (a write that does not wait
// and a read).
void known_pipe(int p[2]) {
    make_pipe(p);
    CHECK_EQ(write(p[1], "k", 1), 1);
    char c = 0;
    CHECK_EQ(read(p[0], &c, 1), 1);
}

// The pipe's numbers are taken by a stream connection (client on p[0],
// server on p[1], the write end's number), whose writes must be whole.
void socket_takes_numbers(const int p[2]) {
    int client, server;
    connect_pair(&client, &server);
    CHECK_EQ(client, p[0]);
    CHECK_EQ(server, p[1]);
    writes_are_whole(server, client);
    close(client);
    close(server);
}

void rawclose_case() {
    int p[2];
    known_pipe(p);
    PROGRESS("pipe %d/%d closed by syscall(SYS_close)", p[0], p[1]);
    CHECK_EQ(syscall(SYS_close, p[0]), 0);
    CHECK_EQ(syscall(SYS_close, p[1]), 0);
    socket_takes_numbers(p);
}

int close_both(void* arg) {
    const int* p = static_cast<const int*>(arg);
    return close(p[0]) == 0 && close(p[1]) == 0 ? 0 : 1;
}

void clonefiles_case() {
    int p[2];
    known_pipe(p);
    PROGRESS("pipe %d/%d closed by a clone(CLONE_FILES) child", p[0], p[1]);
    constexpr size_t kStack = 256 * 1024;
    void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(stack != MAP_FAILED);
    std::fflush(nullptr);
    const pid_t pid =
        clone(close_both, static_cast<char*>(stack) + kStack, CLONE_FILES | SIGCHLD, p);
    CHECK(pid > 0);
    wait_ok(pid);
    munmap(stack, kStack);
    socket_takes_numbers(p);
}

void race_case() {
    std::atomic<bool> done{false};
    std::atomic<int> hi{0};
    // Asks select() about every number up to the highest one in use: the
    // shim classifies what it does not know (its third look at a fd, or its
    // first with the exit report on), racing with the closes below.
    std::thread asker([&] {
        while (!done.load()) {
            const int n = hi.load() + 1;
            fd_set w;
            FD_ZERO(&w);
            for (int fd = 3; fd < n; ++fd) FD_SET(fd, &w);
            timeval tv{0, 1};
            select(n, nullptr, &w, nullptr, &tv);  // EBADF for a number closed meanwhile
        }
    });
    for (int i = 0; i < 2000; ++i) {
        int p[2];
        known_pipe(p);
        hi.store(std::max(p[0], p[1]) + 2);
        CHECK_EQ(close(p[0]), 0);
        CHECK_EQ(close(p[1]), 0);
        int client, server;
        connect_pair(&client, &server);
        if (i % 200 == 0) {
            PROGRESS("round %d: socket on %d", i, server);
            writes_are_whole(server, client);
        } else {
            const char m[kMessage] = {};
            CHECK_EQ(write(server, m, sizeof m), static_cast<ssize_t>(sizeof m));
            char buf[kMessage];
            CHECK_EQ(read_full(client, buf, sizeof buf), sizeof buf);
        }
        close(client);
        close(server);
    }
    done.store(true);
    asker.join();
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view mode = argv[1];
    if (mode == "rawclose")
        rawclose_case();
    else if (mode == "clonefiles")
        clonefiles_case();
    else if (mode == "race")
        race_case();
    else
        return 2;
    PROGRESS("ok");
    return 0;
}
