// Case poll: poll() keeps its timeout (never returns 0 before it expired;
// timeout 0 does not wait), reports the fd that became readable while it
// waited, and reports POLLHUP when the last writer goes away.
#include "../support/helpers.h"

using namespace support;

namespace {

// An empty pipe: poll must time out, and not before the timeout.
void times_out(int timeout_ms) {
    int p[2];
    make_pipe(p);
    pollfd pfd{p[0], POLLIN, -1};
    const std::uint64_t start = now_ns();
    CHECK_EQ(poll(&pfd, 1, timeout_ms), 0);
    const std::uint64_t elapsed = now_ns() - start;
    if (elapsed < static_cast<std::uint64_t>(timeout_ms) * 1000000u)
        std::fprintf(stderr, "poll(%d ms) returned 0 after %llu ns\n", timeout_ms,
                     static_cast<unsigned long long>(elapsed));
    CHECK(elapsed >= static_cast<std::uint64_t>(timeout_ms) * 1000000u);
    CHECK_EQ(pfd.revents, 0);
    close(p[0]);
    close(p[1]);
}

// POLLOUT on a full pipe times out the same way.
void full_pipe_times_out() {
    int p[2];
    make_pipe(p);
    set_nonblock(p[1], true);
    static char buf[PIPE_BUF];
    while (write(p[1], buf, sizeof buf) > 0) {
    }
    CHECK_EQ(errno, EAGAIN);
    set_nonblock(p[1], false);
    pollfd pfd{p[1], POLLOUT, 0};
    const std::uint64_t start = now_ns();
    CHECK_EQ(poll(&pfd, 1, 20), 0);
    CHECK(now_ns() - start >= 20000000u);
    CHECK_EQ(pfd.revents, 0);
    close(p[0]);
    close(p[1]);
}

void zero_timeout() {
    int p[2];
    make_pipe(p);
    pollfd pfd{p[0], POLLIN, -1};
    for (int i = 0; i < 1000; ++i) {
        CHECK_EQ(poll(&pfd, 1, 0), 0);
        CHECK_EQ(pfd.revents, 0);
    }
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(poll(&pfd, 1, 0), 1);
    CHECK_EQ(pfd.revents, POLLIN);
    close(p[0]);
    close(p[1]);
}

// Three pipes and an ignored entry; after each "go" the child writes to one
// of the pipes, which poll (no timeout) must report alone.
void readiness_during_wait(int rounds) {
    int p[3][2], go[2];
    for (auto& q : p) make_pipe(q);
    make_pipe(go);
    pid_t pid = spawn([&] {
        close(go[1]);
        for (auto& q : p) close(q[0]);
        for (int i = 0; i < rounds; ++i) {
            wait_peer(go[0]);
            const char c = static_cast<char>('a' + i % 26);
            CHECK_EQ(write(p[i % 3][1], &c, 1), 1);
        }
        // Stay until the parent is done: our exit would hang up all three.
        char c;
        CHECK_EQ(read(go[0], &c, 1), 0);
    });
    close(go[0]);
    for (auto& q : p) close(q[1]);
    for (int i = 0; i < rounds; ++i) {
        pollfd pfds[4] = {
            {p[0][0], POLLIN, -1}, {-1, POLLIN, -1}, {p[1][0], POLLIN, -1}, {p[2][0], POLLIN, -1}};
        const int want = i % 3 == 0 ? 0 : i % 3 + 1;  // index in pfds
        signal_peer(go[1]);
        CHECK_EQ(poll(pfds, 4, i % 2 == 0 ? -1 : 60000), 1);
        for (int k = 0; k < 4; ++k) CHECK_EQ(pfds[k].revents, k == want ? POLLIN : 0);
        char c = 0;
        CHECK_EQ(read(pfds[want].fd, &c, 1), 1);
        CHECK_EQ(c, 'a' + i % 26);
    }
    close(go[1]);
    wait_ok(pid);
    for (auto& q : p) close(q[0]);
}

// The child closes the only write end after "go": poll reports POLLHUP.
void hangup_during_wait(int rounds) {
    for (int i = 0; i < rounds; ++i) {
        int p[2];
        make_pipe(p);
        const pid_t pid = spawn_on_go(p, 1, [&] { CHECK_EQ(close(p[1]), 0); });
        pollfd pfd{p[0], POLLIN, 0};
        CHECK_EQ(poll(&pfd, 1, -1), 1);
        CHECK((pfd.revents & POLLHUP) != 0);
        CHECK((pfd.revents & ~(POLLHUP | POLLIN)) == 0);
        char c;
        CHECK_EQ(read(p[0], &c, 1), 0);
        wait_ok(pid);
        close(p[0]);
    }
}

void closed_fd_is_pollnval() {
    int p[2];
    make_pipe(p);
    const int dead = p[0];
    close(p[0]);
    pollfd pfd{dead, POLLIN, 0};
    CHECK_EQ(poll(&pfd, 1, 1000), 1);
    CHECK_EQ(pfd.revents, POLLNVAL);
    close(p[1]);
}

}  // namespace

int main() {
    times_out(100);
    times_out(7);
    full_pipe_times_out();
    zero_timeout();
    readiness_during_wait(300);
    hangup_during_wait(100);
    closed_fd_is_pollnval();
    std::printf("poll: ok\n");
    return 0;
}
