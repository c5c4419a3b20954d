// Case vfork_child: what a vfork child does to its own fds and signal
// actions does not change what the shim believes of its parent's.
//
// The parent holds a blocking socket (a socketpair end that a thread
// drains, with a small send buffer) on fd `sock`, and a pipe it has used.
// It has spun once (fixed: it must have), so that its handlers are wrapped,
// and installed a SIGUSR1 handler. Three vfork children each install another
// SIGUSR1 handler and dup2 the pipe's write end onto `sock`; one then
// _exits, one execs /bin/true, one writes to `sock` (the pipe, in the
// child) a few times before it _exits. Afterwards, in the parent:
//   - 2000 writes of 4096 bytes to `sock` each return 4096 (a blocking
//     socket write is never short), and the reader gets every byte;
//   - sigaction(SIGUSR1, NULL, &old) shows the parent's own handler and
//     flags, and a SIGUSR1 runs it (not the children's).
//
// How a naive shim fails: a vfork child runs in its parent's memory, so
// hooks that record its dup2 (the fd table) and its sigaction (the table of
// handlers behind the trampoline) write them into the parent's bookkeeping:
// the parent then takes `sock` for a pipe and tries its writes without
// waiting (RWF_NOWAIT), which on a socket returns short counts, and its
// trampoline calls the child's handler. Or, where only the hooks that
// record were kept out of the child, its writes to `sock` classify the
// number in the parent's table as the pipe it names in the child.
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <thread>

#include "rel.h"

extern char** environ;

using namespace rel;

namespace {

constexpr int kWrites = 2000;
constexpr int kChunk = 4096;

std::atomic<int> g_parent_ran{0};
std::atomic<int> g_child_ran{0};

void parent_handler(int) {
    g_parent_ran.fetch_add(1);
}

void child_handler(int) {
    g_child_ran.fetch_add(1);
}

// The child: only async-signal-safe calls, nothing of the parent's stack
// frame written, no return.
enum class Then { Exit, Exec, WriteAndExit };

[[gnu::noinline]] void vfork_child(int pipe_w, int sock, Then then) {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    const pid_t pid = vfork();
    if (pid == 0) {
        struct sigaction sa {};
        sa.sa_handler = child_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, nullptr);
        dup2(pipe_w, sock);
        if (then == Then::Exec) execve("/bin/true", argv, environ);
        if (then == Then::WriteAndExit)  // more calls than a fd needs to be classified
            for (int i = 0; i < 6; ++i)
                if (write(sock, "y", 1) != 1) _exit(3);
        _exit(then == Then::Exec ? 127 : 0);
    }
    CHECK(pid > 0);
    wait_ok(pid);
}

}  // namespace

int main() {
    announce_main_pid();
    std::fflush(nullptr);

    PROGRESS("a pipe the shim knows, and one spin (fixed: it arms the handlers)");
    int p[2];
    make_pipe(p);
    const InCall seen = read_seen_in_call(p[0], p[1], "spin");
    if (config() == Config::Fixed) CHECK(seen == InCall::Spinning);
    for (int i = 0; i < 3; ++i) {
        char c = 0;
        CHECK_EQ(write(p[1], "x", 1), 1);
        CHECK_EQ(read(p[0], &c, 1), 1);
    }
    install(SIGUSR1, parent_handler, SA_RESTART);

    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const int small = 4096;
    CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    const int sock = sv[0];

    PROGRESS("vfork children install a handler and dup2 the pipe onto the socket's fd");
    vfork_child(p[1], sock, Then::Exit);
    vfork_child(p[1], sock, Then::Exec);
    vfork_child(p[1], sock, Then::WriteAndExit);

    PROGRESS("the parent's signal action is its own");
    struct sigaction old {};
    CHECK_EQ(sigaction(SIGUSR1, nullptr, &old), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    // Checked after the writes, so that a failure shows both.
    const bool own_action = old.sa_handler == parent_handler && (old.sa_flags & SA_RESTART) != 0;
    const bool own_handler_ran = g_parent_ran.load() == 1 && g_child_ran.load() == 0;
    if (!own_action) PROGRESS("FAILED: sigaction(SIGUSR1) shows another handler or flags");
    if (!own_handler_ran)
        PROGRESS("FAILED: SIGUSR1 ran the parent's handler %d times, a child's %d times",
                 g_parent_ran.load(), g_child_ran.load());

    PROGRESS("%d blocking writes of %d bytes to the socket, a thread draining it", kWrites, kChunk);
    long got = 0;
    std::thread reader([&] {
        char buf[100];
        for (;;) {
            const ssize_t r = read(sv[1], buf, sizeof buf);
            CHECK(r >= 0);
            if (r == 0) break;
            got += r;
        }
    });
    static char chunk[kChunk];
    std::memset(chunk, 'q', sizeof chunk);
    int shorts = 0;
    for (int i = 0; i < kWrites; ++i) {
        const ssize_t r = write(sock, chunk, sizeof chunk);
        CHECK(r > 0);
        if (r != kChunk) {
            ++shorts;
            write_full(sock, chunk + r, sizeof chunk - static_cast<size_t>(r));
        }
    }
    CHECK_EQ(close(sock), 0);
    reader.join();
    if (shorts != 0) PROGRESS("FAILED: %d of %d writes were short", shorts, kWrites);
    CHECK_EQ(shorts, 0);
    CHECK_EQ(got, static_cast<long>(kWrites) * kChunk);
    CHECK(own_action);
    CHECK(own_handler_ran);
    close(p[0]);
    close(p[1]);
    return 0;
}
