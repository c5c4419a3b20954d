// Case vector: readv and writev, splice and tee on pipes. Checked, in every
// configuration:
//   - a ping-pong between two processes with writev (three pieces) and readv
//     (three buffers) gives the right bytes in the right places;
//   - a writev larger than the pipe arrives whole and in order;
//   - readv: iovcnt 0 returns 0, a bad iovcnt EINVAL, a bad iovec EFAULT, EOF 0;
//   - splice and tee from a pipe that the peer fills after "go" move exactly
//     what was written; SPLICE_F_NONBLOCK on an empty pipe gives EAGAIN;
//   - a SIGALRM handler without SA_RESTART during readv or splice fails it
//     with EINTR, with SA_RESTART the call returns what the handler wrote
//     (the case runs with a 1 s spin budget, so the signal lands in the spin);
//   - readv on a non-blocking empty pipe gives EAGAIN at once (100 calls).
#include <fcntl.h>
#include <sys/uio.h>

#include "../support/helpers.h"
#include "timer.h"

using namespace e2e;

namespace {

unsigned long long pingpong(int rounds) {
    int down[2], up[2];
    const pid_t pid = spawn_talking(down, up, [&] {
        for (int i = 0; i < rounds; ++i) {
            char a[2], b[3], c[4];
            iovec iov[3] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof c}};
            CHECK_EQ(readv(down[0], iov, 3), 9);
            char want[10];
            std::snprintf(want, sizeof want, "%09d", i);
            CHECK(std::memcmp(a, want, 2) == 0 && std::memcmp(b, want + 2, 3) == 0 &&
                  std::memcmp(c, want + 5, 4) == 0);
            for (char& ch : c) ch = static_cast<char>(ch + 1);
            iovec back[2] = {{c, sizeof c}, {a, sizeof a}};
            CHECK_EQ(writev(up[1], back, 2), 6);
        }
        char x;
        iovec one{&x, 1};
        CHECK_EQ(readv(down[0], &one, 1), 0);  // EOF
    });
    Fnv sum;
    for (int i = 0; i < rounds; ++i) {
        char msg[10];
        std::snprintf(msg, sizeof msg, "%09d", i);
        iovec out[3] = {{msg, 4}, {msg + 4, 1}, {msg + 5, 4}};
        CHECK_EQ(writev(down[1], out, 3), 9);
        char back[6];
        iovec in{back, sizeof back};
        CHECK_EQ(readv(up[0], &in, 1), 6);
        for (int k = 0; k < 4; ++k) CHECK_EQ(back[k], msg[5 + k] + 1);
        CHECK(back[4] == msg[0] && back[5] == msg[1]);
        sum.add(back, sizeof back);
    }
    close(down[1]);
    wait_ok(pid);
    close(up[0]);
    return sum.value();
}

// 1 MiB in 16 pieces through a 64 KiB pipe: writev blocks until all is
// written. The child writes: a forked child counts only its own calls, and a
// reader that may never find the pipe empty would show no spin of its own.
void big_writev() {
    int p[2];
    make_pipe(p);
    constexpr size_t kPiece = 65536, kPieces = 16;
    static unsigned char data[kPiece * kPieces];
    fill_pattern(data, sizeof data, 5);
    pid_t pid = spawn([&] {
        close(p[0]);
        iovec iov[kPieces];
        for (size_t i = 0; i < kPieces; ++i) iov[i] = {data + i * kPiece, kPiece};
        CHECK_EQ(writev(p[1], iov, kPieces), static_cast<ssize_t>(sizeof data));
    });
    close(p[1]);
    static unsigned char got[sizeof data];
    CHECK_EQ(read_full(p[0], got, sizeof got), sizeof got);
    CHECK(std::memcmp(got, data, sizeof got) == 0);
    char x;
    CHECK_EQ(read(p[0], &x, 1), 0);
    close(p[0]);
    wait_ok(pid);
}

// Hidden from the compiler, which would reject the bad calls at build time.
volatile int g_minus_one = -1;
volatile int g_too_many = IOV_MAX + 1;
iovec* volatile g_bad_iov = reinterpret_cast<iovec*>(8);

void readv_errors() {
    int p[2];
    make_pipe(p);
    char buf[4];
    iovec iov{buf, sizeof buf};
    CHECK_EQ(readv(p[0], &iov, 0), 0);
    CHECK_ERRNO(readv(p[0], &iov, g_minus_one), EINVAL);
    CHECK_ERRNO(readv(p[0], &iov, g_too_many), EINVAL);
    write_full(p[1], "abcd", 4);
    CHECK_ERRNO(readv(p[0], g_bad_iov, 1), EFAULT);
    iovec bad{reinterpret_cast<void*>(8), 4};
    CHECK_ERRNO(readv(p[0], &bad, 1), EFAULT);
    CHECK_EQ(readv(p[0], &iov, 1), 4);
    CHECK(std::memcmp(buf, "abcd", 4) == 0);
    close(p[1]);
    CHECK_EQ(readv(p[0], &iov, 1), 0);
    close(p[0]);
}

// The child fills `src` after each "go"; splice moves it into `mid`, tee
// copies it into `copy` first.
void splice_and_tee(int rounds) {
    int src[2], mid[2], copy[2], go[2];
    for (auto* q : {src, mid, copy, go}) make_pipe(q);
    pid_t pid = spawn([&] {
        close(src[0]);
        close(go[1]);
        for (int i = 0; i < rounds; ++i) {
            wait_peer(go[0]);
            char msg[8];
            std::snprintf(msg, sizeof msg, "%07d", i);
            write_full(src[1], msg, 7);
        }
    });
    close(src[1]);
    close(go[0]);
    for (int i = 0; i < rounds; ++i) {
        signal_peer(go[1]);
        char want[8];
        std::snprintf(want, sizeof want, "%07d", i);
        char got[8] = {};
        if (i % 2 == 0) {
            CHECK_EQ(tee(src[0], copy[1], 7, 0), 7);
            CHECK_EQ(read_full(copy[0], got, 7), 7u);
            CHECK(std::memcmp(got, want, 7) == 0);
        }
        ssize_t moved = 0;
        while (moved < 7) {
            ssize_t r = splice(src[0], nullptr, mid[1], nullptr, 7 - moved, 0);
            CHECK(r > 0);
            moved += r;
        }
        CHECK_EQ(read_full(mid[0], got, 7), 7u);
        CHECK(std::memcmp(got, want, 7) == 0);
    }
    close(go[1]);
    wait_ok(pid);
    CHECK_EQ(splice(src[0], nullptr, mid[1], nullptr, 7, 0), 0);  // EOF
    CHECK_ERRNO(splice(mid[0], nullptr, copy[1], nullptr, 7, SPLICE_F_NONBLOCK), EAGAIN);
    CHECK_ERRNO(tee(mid[0], copy[1], 7, SPLICE_F_NONBLOCK), EAGAIN);
    for (auto* q : {mid, copy}) {
        close(q[0]);
        close(q[1]);
    }
    close(src[0]);
}

void interrupted(bool use_splice, bool restart) {
    int p[2], q[2];
    make_pipe(p);
    make_pipe(q);
    char buf[8] = {};
    iovec iov{buf, sizeof buf};
    const auto [r, e] = with_alarm(restart, restart ? p[1] : -1, "late!", [&] {
        return use_splice ? splice(p[0], nullptr, q[1], nullptr, sizeof buf, 0)
                          : readv(p[0], &iov, 1);
    });
    if (restart) {
        CHECK_EQ(r, 5);
        if (use_splice) CHECK_EQ(read(q[0], buf, sizeof buf), 5);
        CHECK(std::memcmp(buf, "late!", 5) == 0);
    } else {
        CHECK_EQ(r, -1);
        CHECK_EQ(e, EINTR);
    }
    for (int fd : {p[0], p[1], q[0], q[1]}) close(fd);
}

void nonblocking() {
    int p[2];
    make_pipe(p);
    set_nonblock(p[0], true);
    char buf[4];
    iovec iov{buf, sizeof buf};
    for (int i = 0; i < 100; ++i) CHECK_ERRNO(readv(p[0], &iov, 1), EAGAIN);
    close(p[0]);
    close(p[1]);
}

}  // namespace

int main() {
    const int rounds = 3000;
    const unsigned long long sum = pingpong(rounds);
    big_writev();
    readv_errors();
    splice_and_tee(1000);
    for (bool s : {false, true})
        for (bool restart : {false, true}) interrupted(s, restart);
    nonblocking();
    std::printf("vector: rounds=%d checksum=%016llx\n", rounds, sum);
    return 0;
}
