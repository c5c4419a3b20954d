// Case eagain: on a pipe in non-blocking mode, read on empty and write on
// full fail at once with EAGAIN, however O_NONBLOCK was set: pipe2(), fcntl,
// ioctl(FIONBIO), through a dup'ed fd, or by another process sharing the
// open file description. Run with a long spin budget, 200 such calls only
// complete in time if the shim never spins on a non-blocking fd. Once
// O_NONBLOCK is cleared again the pipe blocks (and delivers) as before.
#include <sys/ioctl.h>

#include <initializer_list>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr int kCalls = 200;

// rfd and wfd are one pipe's ends, both already in non-blocking mode (perhaps
// through another fd or process).
void expect_eagain(const char* how, int rfd, int wfd) {
    char c = 0;
    std::uint64_t start = now_ns();
    for (int i = 0; i < kCalls; ++i) CHECK_ERRNO(read(rfd, &c, 1), EAGAIN);
    const std::uint64_t read_ns = now_ns() - start;

    const size_t filled = fill_until_eagain(wfd);
    CHECK(filled >= PIPE_BUF);
    start = now_ns();
    for (int i = 0; i < kCalls; ++i) CHECK_ERRNO(write(wfd, "x", 1), EAGAIN);
    const std::uint64_t write_ns = now_ns() - start;

    // Nothing was lost or added on the way.
    CHECK_EQ(drain_until_eagain(rfd), filled);

    std::printf("%s: %d EAGAIN reads, %d EAGAIN writes\n", how, kCalls, kCalls);
    std::fprintf(stderr, "%s: mean %.1f us per EAGAIN read, %.1f us per EAGAIN write\n", how,
                 read_ns / 1e3 / kCalls, write_ns / 1e3 / kCalls);
}

// With O_NONBLOCK cleared (through the fds given), a read waits for a writer
// in another process again, and a write that fills the pipe waits for a reader.
void expect_blocking_again(int rfd, int wfd) {
    set_nonblock(rfd, false);
    set_nonblock(wfd, false);
    int go[2];
    make_pipe(go);
    pid_t pid = spawn([&] {
        close(go[1]);
        wait_peer(go[0]);
        CHECK_EQ(write(wfd, "late", 4), 4);
        // Now the other way, once the parent has taken "late": drain what it
        // writes below.
        wait_peer(go[0]);
        static char buf[3 * 65536];
        CHECK_EQ(read_full(rfd, buf, sizeof buf), sizeof buf);
    });
    close(go[0]);
    signal_peer(go[1]);
    char buf[16];
    CHECK_EQ(read(rfd, buf, sizeof buf), 4);
    CHECK(std::memcmp(buf, "late", 4) == 0);
    signal_peer(go[1]);
    static char big[3 * 65536];
    CHECK_EQ(write(wfd, big, sizeof big), sizeof big);
    wait_ok(pid);
    close(go[1]);
}

void by_pipe2() {
    int p[2];
    CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
    expect_eagain("pipe2(O_NONBLOCK)", p[0], p[1]);
    expect_blocking_again(p[0], p[1]);
    close(p[0]);
    close(p[1]);
}

void by_fcntl() {
    int p[2];
    make_pipe(p);
    set_nonblock(p[0], true);
    set_nonblock(p[1], true);
    expect_eagain("fcntl(F_SETFL)", p[0], p[1]);
    expect_blocking_again(p[0], p[1]);
    close(p[0]);
    close(p[1]);
}

void by_fionbio() {
    int p[2];
    make_pipe(p);
    int on = 1;
    CHECK_EQ(ioctl(p[0], FIONBIO, &on), 0);
    CHECK_EQ(ioctl(p[1], FIONBIO, &on), 0);
    expect_eagain("ioctl(FIONBIO)", p[0], p[1]);
    int off = 0;
    CHECK_EQ(ioctl(p[0], FIONBIO, &off), 0);
    CHECK_EQ(ioctl(p[1], FIONBIO, &off), 0);
    expect_blocking_again(p[0], p[1]);
    close(p[0]);
    close(p[1]);
}

// O_NONBLOCK belongs to the open file description: set through dups, it
// applies to the original fds, which the shim already knows as pipes.
void through_dup() {
    int p[2];
    make_pipe(p);
    char c = 0;
    CHECK_EQ(write(p[1], "a", 1), 1);
    CHECK_EQ(read(p[0], &c, 1), 1);  // both ends used (and classified) while blocking
    int r2 = dup(p[0]), w2 = fcntl(p[1], F_DUPFD_CLOEXEC, 0);
    CHECK(r2 >= 0 && w2 >= 0);
    set_nonblock(r2, true);
    set_nonblock(w2, true);
    expect_eagain("dup + fcntl", p[0], p[1]);
    expect_blocking_again(r2, w2);
    close(r2);
    close(w2);
    close(p[0]);
    close(p[1]);
}

// Another process sets O_NONBLOCK on its inherited copies and exits; the
// parent's own fds are now non-blocking too.
void by_child() {
    int p[2];
    make_pipe(p);
    char c = 0;
    CHECK_EQ(write(p[1], "a", 1), 1);
    CHECK_EQ(read(p[0], &c, 1), 1);
    wait_ok(spawn([&] {
        set_nonblock(p[0], true);
        set_nonblock(p[1], true);
    }));
    expect_eagain("child's fcntl", p[0], p[1]);
    wait_ok(spawn([&] {
        set_nonblock(p[0], false);
        set_nonblock(p[1], false);
    }));
    expect_blocking_again(p[0], p[1]);
    close(p[0]);
    close(p[1]);
}

}  // namespace

int main() {
    by_pipe2();
    by_fcntl();
    by_fionbio();
    through_dup();
    by_child();
    return 0;
}
