// Programs whose system calls syscalls_check.py compares, under strace, in
// mode off against no shim. Each makes the same calls on every run (no
// thread, no race with a writer), so that the two traces can be compared
// call by call:
//
//   fread FILE        fread(1 MiB) from FILE until EOF (a regular file:
//                     glibc reads the bulk straight into the buffer)
//   fread-pipe        the same from a pipe whose writer (a child) filled it
//                     and exited before the first fread
//   waits             poll, ppoll, select, pselect, epoll_wait, epoll_pwait
//                     and epoll_pwait2 on a pipe, ready and timing out
//                     (1 ms), then fgets and getc from it
//
// Each prints a one-line summary (byte counts and a checksum, or "ok").
#include <sys/epoll.h>
#include <sys/select.h>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr size_t kChunk = 1 << 20;

void read_stream(FILE* f) {
    static char buf[kChunk];
    size_t total = 0, calls = 0;
    Fnv sum;
    for (;;) {
        const size_t n = fread(buf, 1, sizeof buf, f);
        ++calls;
        sum.add(buf, n);
        total += n;
        if (n < sizeof buf) break;
    }
    CHECK(feof(f) && !ferror(f));
    std::printf("fread: %zu bytes in %zu calls, sum %llx\n", total, calls, sum.value());
}

void fread_file(const char* path) {
    FILE* f = std::fopen(path, "r");
    CHECK(f != nullptr);
    read_stream(f);
    CHECK_EQ(std::fclose(f), 0);
}

void fread_pipe() {
    int p[2];
    make_pipe(p);
    // As large as the system allows (1 MiB by default for root and users):
    // the writer fills it and exits before the reader starts.
    int size = fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    if (size < 0) size = fcntl(p[1], F_GETPIPE_SZ);
    CHECK(size > 0);
    const pid_t pid = spawn([&] {
        static unsigned char data[1 << 20];
        fill_pattern(data, static_cast<size_t>(size), 7);
        write_full(p[1], data, static_cast<size_t>(size));
    });
    close(p[1]);
    wait_ok(pid);
    FILE* f = fdopen(p[0], "r");
    CHECK(f != nullptr);
    read_stream(f);
    CHECK_EQ(std::fclose(f), 0);
}

void waits() {
    int p[2];
    make_pipe(p);
    const timespec ms{0, 1'000'000};
    for (int ready = 1; ready >= 0; --ready) {
        if (ready) write_full(p[1], "x", 1);
        pollfd pfd{p[0], POLLIN, 0};
        CHECK_EQ(poll(&pfd, 1, 1), ready);
        CHECK_EQ(ppoll(&pfd, 1, &ms, nullptr), ready);
        fd_set set;
        FD_ZERO(&set);
        FD_SET(p[0], &set);
        timeval tv{0, 1000};
        CHECK_EQ(select(p[0] + 1, &set, nullptr, nullptr, &tv), ready);
        FD_SET(p[0], &set);
        CHECK_EQ(pselect(p[0] + 1, &set, nullptr, nullptr, &ms, nullptr), ready);
        const int ep = epoll_watching(p[0]);
        epoll_event out{};
        CHECK_EQ(epoll_wait(ep, &out, 1, 1), ready);
        CHECK_EQ(epoll_pwait(ep, &out, 1, 1, nullptr), ready);
        CHECK_EQ(epoll_pwait2(ep, &out, 1, &ms, nullptr), ready);
        close(ep);
        if (ready) {
            char c;
            CHECK_EQ(read(p[0], &c, 1), 1);
        }
    }
    write_full(p[1], "line\nz", 6);
    close(p[1]);
    FILE* f = fdopen(p[0], "r");
    CHECK(f != nullptr);
    char line[16];
    CHECK(fgets(line, sizeof line, f) != nullptr);
    CHECK_EQ(getc(f), 'z');
    CHECK_EQ(getc(f), EOF);
    CHECK_EQ(std::fclose(f), 0);
    std::printf("waits: ok\n");
}

}  // namespace

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "fread") == 0 && argc == 3) {
        fread_file(argv[2]);
    } else if (std::strcmp(mode, "fread-pipe") == 0) {
        fread_pipe();
    } else if (std::strcmp(mode, "waits") == 0) {
        waits();
    } else {
        std::fprintf(stderr, "usage: %s fread FILE | fread-pipe | waits\n", argv[0]);
        return 2;
    }
    return 0;
}
