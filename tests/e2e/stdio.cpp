// Case stdio: the stdio read functions on pipes, whose refills glibc makes
// through an internal read() that the shim cannot see (it waits before the
// call instead). Built twice: plainly (fgets, fread, getc_unlocked's macro
// calling __uflow, ...) and with _FORTIFY_SOURCE (__fgets_chk, __fread_chk,
// ...); the driver checks the imports. Checked, in every configuration:
//   - a ping-pong between two processes through every read function gives
//     the right lines in the right order;
//   - buffered data, ungetc, EOF and the error flag behave as without the shim;
//   - a SIGALRM handler without SA_RESTART during the wait fails the call
//     with EINTR and sets the stream's error flag, as glibc does; with
//     SA_RESTART the call goes on and returns what the handler wrote (the
//     case runs with a 1 s spin budget, so the signal lands in the spin);
//   - a non-blocking stream gets EAGAIN at once (100 calls: a spin each
//     would outlast the test's timeout).
#include <stdio.h>

#include "../support/helpers.h"
#include "timer.h"

using namespace e2e;

namespace {

constexpr int kLine = 6;  // "%05d\n"
constexpr int kReaders = 11;
// Sizes the compiler cannot see, or the fortified build calls the plain functions.
volatile int g_bufsize = 64;
volatile size_t g_line = kLine;
volatile size_t g_one = 1;

// Reads one line of kLine bytes from fp with reader number `how`; returns
// the number it carried.
int read_line(FILE* fp, int how) {
    char buf[64] = {};
    static char* line = nullptr;
    static size_t cap = 0;
    if (line == nullptr) {
        cap = 16;
        line =
            static_cast<char*>(std::malloc(cap));  // getline must not allocate: see hooks_stdio.cpp
    }
    auto chars = [&](auto get) {
        int i = 0;
        for (int c; i < kLine && (c = get()) != EOF; ++i) buf[i] = static_cast<char>(c);
        CHECK_EQ(i, kLine);
    };
    switch (how) {
        case 0:
            CHECK(fgets(buf, g_bufsize, fp) == buf);
            break;
        case 1:
            CHECK(fgets_unlocked(buf, g_bufsize, fp) == buf);
            break;
        case 2:
            CHECK_EQ(getline(&line, &cap, fp), kLine);
            std::memcpy(buf, line, kLine);
            break;
        case 3:
            CHECK_EQ(getdelim(&line, &cap, '\n', fp), kLine);
            std::memcpy(buf, line, kLine);
            break;
        case 4:
            CHECK_EQ(fread(buf, g_one, g_line, fp), static_cast<size_t>(kLine));
            break;
        case 5:
            CHECK_EQ(fread_unlocked(buf, g_line, g_one, fp), 1u);
            break;
        case 6:
            chars([&] { return getc(fp); });
            break;
        case 7:
            chars([&] { return fgetc(fp); });
            break;
        case 8:
            chars([&] { return getc_unlocked(fp); });  // the macro: __uflow when empty
            break;
        case 9:
            chars([&] { return fgetc_unlocked(fp); });
            break;
        case 10:
            CHECK(fp == stdin);
            chars([&] { return getchar(); });
            break;
    }
    CHECK_EQ(buf[kLine - 1], '\n');
    return std::atoi(buf);
}

void send_line(int fd, int v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%05d\n", v);
    write_full(fd, buf, kLine);
}

// Parent and child answer each other's lines; the child reads its lines
// through stdin (so that getchar has a pipe to read), the parent through a
// fdopen()ed stream.
unsigned long long pingpong(int rounds) {
    int down[2], up[2];
    const pid_t pid = spawn_talking(down, up, [&] {
        CHECK_EQ(dup2(down[0], 0), 0);
        close(down[0]);
        for (int i = 0; i < rounds; ++i) {
            const int how = i % kReaders;
            CHECK_EQ(read_line(stdin, how), i);
            send_line(up[1], 99999 - i);
        }
        // EOF: the parent closed its end.
        CHECK_EQ(getc(stdin), EOF);
        CHECK(feof(stdin));
        CHECK(!ferror(stdin));
        CHECK(fgets(static_cast<char*>(std::malloc(8)), 8, stdin) == nullptr);
    });
    FILE* in = fdopen(up[0], "r");
    CHECK(in != nullptr);
    Fnv sum;
    for (int i = 0; i < rounds; ++i) {
        send_line(down[1], i);
        const int v = read_line(in, i % (kReaders - 1));  // no getchar: stdin is not ours
        CHECK_EQ(v, 99999 - i);
        sum.add(&v, sizeof v);
    }
    close(down[1]);
    wait_ok(pid);
    CHECK_EQ(fgetc(in), EOF);
    CHECK(feof(in));
    fclose(in);
    return sum.value();
}

// Data already buffered is returned without a wait; ungetc's byte too.
void buffered_and_ungetc() {
    int p[2];
    make_pipe(p);
    FILE* fp = fdopen(p[0], "r");
    CHECK(fp != nullptr);
    write_full(p[1], "abc\ndef", 7);
    char buf[16];
    CHECK(fgets(buf, sizeof buf, fp) == buf);
    CHECK(std::strcmp(buf, "abc\n") == 0);
    CHECK_EQ(getc(fp), 'd');
    CHECK_EQ(ungetc('D', fp), 'D');
    CHECK_EQ(getc(fp), 'D');
    write_full(p[1], "\n", 1);
    CHECK(fgets(buf, sizeof buf, fp) == buf);
    CHECK(std::strcmp(buf, "ef\n") == 0);
    // fgets of one byte reads nothing and never waits.
    CHECK(fgets(buf, 1, fp) == buf);
    CHECK_EQ(buf[0], '\0');
    close(p[1]);
    CHECK_EQ(getc(fp), EOF);
    CHECK(feof(fp));
    fclose(fp);
}

// One read function on an empty pipe while SIGALRM arrives.
void interrupted(int how, bool restart) {
    int p[2];
    make_pipe(p);
    FILE* fp = fdopen(p[0], "r");
    CHECK(fp != nullptr);
    char buf[64];
    char* line = static_cast<char*>(std::malloc(16));
    size_t cap = 16;
    const auto [r, e] = with_alarm(restart, restart ? p[1] : -1, "00042\n", [&]() -> long {
        long n = 0;
        switch (how) {
            case 0:
                n = fgets(buf, sizeof buf, fp) != nullptr ? 6 : -1;
                break;
            case 1:
                n = static_cast<long>(fread(buf, 1, kLine, fp));
                n = n == 0 ? -1 : n;
                break;
            case 2:
                n = getc(fp);
                n = n == EOF ? -1 : 6;
                break;
            case 3:
                n = getc_unlocked(fp);
                n = n == EOF ? -1 : 6;
                break;
            case 4:
                n = getline(&line, &cap, fp);
                break;
        }
        return n;
    });
    if (restart) {
        CHECK_EQ(r, 6);
        CHECK(!ferror(fp));
    } else {
        CHECK_EQ(r, -1);
        CHECK_EQ(e, EINTR);
        CHECK(ferror(fp));
        CHECK(!feof(fp));
        // The stream still works after clearerr.
        clearerr(fp);
        write_full(p[1], "00007\n", kLine);
        CHECK(fgets(buf, sizeof buf, fp) == buf);
        CHECK(std::strcmp(buf, "00007\n") == 0);
    }
    std::free(line);
    fclose(fp);
    close(p[1]);
}

// One fread larger than the stream's buffer and than the pipe, while the
// writer sends in pieces (the shim reads it in pieces too); then items that
// end in a partial one at EOF.
void big_fread() {
    int p[2];
    make_pipe(p);
    constexpr size_t kSize = 300000;
    static unsigned char data[kSize], got[kSize + 16];
    fill_pattern(data, kSize, 9);
    pid_t pid = spawn([&] {
        close(p[0]);
        for (size_t at = 0; at < kSize; at += 7000)
            write_full(p[1], data + at, at + 7000 <= kSize ? 7000 : kSize - at);
        write_full(p[1], "0123456789abcdefghij", 20);
    });
    close(p[1]);
    FILE* fp = fdopen(p[0], "r");
    CHECK(fp != nullptr);
    CHECK_EQ(fread(got, g_one, kSize, fp), kSize);
    CHECK(std::memcmp(got, data, kSize) == 0);
    wait_ok(pid);
    CHECK_EQ(fread(got, 7, 5, fp), 2u);  // 20 bytes: two items and 6 bytes of a third
    CHECK(std::memcmp(got, "0123456789abcdefghij", 20) == 0);
    CHECK(feof(fp));
    CHECK(!ferror(fp));
    fclose(fp);
}

void nonblocking() {
    int p[2];
    make_pipe(p);
    set_nonblock(p[0], true);
    FILE* fp = fdopen(p[0], "r");
    CHECK(fp != nullptr);
    char buf[16];
    for (int i = 0; i < 100; ++i) {
        errno = 0;
        CHECK_EQ(getc(fp), EOF);
        CHECK_EQ(errno, EAGAIN);
        CHECK(ferror(fp));
        clearerr(fp);
        errno = 0;
        CHECK(fgets(buf, sizeof buf, fp) == nullptr);
        CHECK_EQ(errno, EAGAIN);
        clearerr(fp);
    }
    write_full(p[1], "x\n", 2);
    CHECK(fgets(buf, sizeof buf, fp) == buf);
    CHECK(std::strcmp(buf, "x\n") == 0);
    fclose(fp);
    close(p[1]);
}

// Closing a stream leaves errno as it was: a stream without a file buffer
// (open_memstream's) has no fd, and asking glibc's fileno() for it, as the
// fclose wrapper once did, set EBADF. Then the fd of a closed pipe stream
// is free for whatever comes next, which reads as itself.
void closing_streams() {
    char* text = nullptr;
    std::size_t len = 0;
    FILE* mem = open_memstream(&text, &len);
    CHECK(mem != nullptr);
    CHECK(std::fputs("memory", mem) >= 0);
    errno = 0;
    CHECK_EQ(fclose(mem), 0);
    CHECK_EQ(errno, 0);
    CHECK_EQ(len, 6u);
    std::free(text);
    int p[2];
    make_pipe(p);
    FILE* fp = fdopen(p[0], "r");
    CHECK(fp != nullptr);
    errno = 0;
    CHECK_EQ(fclose(fp), 0);
    CHECK_EQ(errno, 0);
    const int fd = open("/dev/zero", O_RDONLY);
    CHECK(fd >= 0);
    char z[4] = {1, 1, 1, 1};
    CHECK_EQ(read(fd, z, sizeof z), static_cast<ssize_t>(sizeof z));
    CHECK(z[0] == 0 && z[3] == 0);
    close(fd);
    close(p[1]);
}

}  // namespace

int main() {
    const int rounds = 3000;
    const unsigned long long sum = pingpong(rounds);
    buffered_and_ungetc();
    big_fread();
    for (int how = 0; how < 5; ++how) {
        interrupted(how, false);
        interrupted(how, true);
    }
    nonblocking();
    closing_streams();
    std::printf("stdio: rounds=%d checksum=%016llx\n", rounds, sum);
    return 0;
}
