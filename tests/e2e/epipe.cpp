// Case epipe: writing to a pipe without readers fails with EPIPE when SIGPIPE
// is ignored and kills the writer with SIGPIPE when it is not, also for a
// writer that is already waiting on a full pipe when the last reader closes.
#include <signal.h>

#include <vector>

#include "../support/helpers.h"

using namespace support;

namespace {

void expect_killed_by_sigpipe(pid_t pid) {
    int status = wait_status(pid);
    if (!WIFSIGNALED(status))
        std::fprintf(stderr, "expected death by SIGPIPE, got exit status %d\n",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGPIPE);
}

// Fills the pipe to its capacity with one write that fits exactly.
void fill(int wfd) {
    const int cap = fcntl(wfd, F_GETPIPE_SZ);
    CHECK(cap > 0);
    std::vector<char> buf(static_cast<size_t>(cap), 'f');
    CHECK_EQ(write(wfd, buf.data(), buf.size()), cap);
    pollfd pfd{wfd, POLLOUT, 0};
    CHECK_EQ(poll(&pfd, 1, 0), 0);  // really full
}

void no_reader_ignored() {
    static char big[3 * PIPE_BUF];
    int p[2];
    make_pipe(p);
    CHECK_EQ(close(p[0]), 0);
    CHECK_ERRNO(write(p[1], "x", 1), EPIPE);
    CHECK_ERRNO(write(p[1], big, PIPE_BUF), EPIPE);
    CHECK_ERRNO(write(p[1], big, sizeof big), EPIPE);
    close(p[1]);
}

void no_reader_default() {
    int p[2];
    make_pipe(p);
    CHECK_EQ(close(p[0]), 0);  // before fork: no reader anywhere
    pid_t pid = spawn([&] {
        signal(SIGPIPE, SIG_DFL);
        [[maybe_unused]] ssize_t r = write(p[1], "x", 1);
        std::fprintf(stderr, "write to a pipe without readers returned\n");
        _exit(3);
    });
    close(p[1]);
    expect_killed_by_sigpipe(pid);
}

// The parent waits in a write on a full pipe; the child, which holds the only
// read end, closes it once told that the parent is about to write.
void reader_closes_while_writer_waits(int rounds) {
    for (int i = 0; i < rounds; ++i) {
        static char chunk[2 * PIPE_BUF];
        const size_t n = i % 3 == 0 ? 1 : i % 3 == 1 ? PIPE_BUF : sizeof chunk;
        int p[2];
        make_pipe(p);
        fill(p[1]);
        const pid_t pid = spawn_on_go(p, 0, [&] { CHECK_EQ(close(p[0]), 0); });
        CHECK_ERRNO(write(p[1], chunk, n), EPIPE);
        wait_ok(pid);
        close(p[1]);
    }
}

// The same with SIGPIPE at its default: the waiting writer dies of it.
void reader_closes_while_writer_waits_default(int rounds) {
    for (int i = 0; i < rounds; ++i) {
        int p[2], go[2];
        make_pipe(p);
        make_pipe(go);
        fill(p[1]);
        pid_t pid = spawn([&] {
            signal(SIGPIPE, SIG_DFL);
            close(p[0]);
            close(go[0]);
            signal_peer(go[1]);
            [[maybe_unused]] ssize_t r = write(p[1], "x", 1);
            std::fprintf(stderr, "write to a pipe whose reader closed returned\n");
            _exit(3);
        });
        close(p[1]);
        close(go[1]);
        wait_peer(go[0]);
        CHECK_EQ(close(p[0]), 0);
        expect_killed_by_sigpipe(pid);
        close(go[0]);
    }
}

}  // namespace

int main() {
    signal(SIGPIPE, SIG_IGN);
    no_reader_ignored();
    no_reader_default();
    reader_closes_while_writer_waits(60);
    reader_closes_while_writer_waits_default(30);
    std::printf("epipe: ok\n");
    return 0;
}
