// Case bigwrite: one write() of 1 MiB, far more than the 64 KiB a pipe holds,
// on a blocking pipe with a concurrent reader, returns the full count and the
// data arrive intact and in order; likewise the other way round.
#include <vector>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr size_t kSize = 1 << 20;

struct Summary {
    unsigned long long bytes;
    unsigned long long fnv;
};

// Reads to EOF in odd-sized pieces.
Summary drain(int fd) {
    static unsigned char buf[7919];
    Summary s{0, 0};
    Fnv sum;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        CHECK(r >= 0);
        if (r == 0) break;
        sum.add(buf, static_cast<size_t>(r));
        s.bytes += static_cast<unsigned long long>(r);
    }
    s.fnv = sum.value();
    return s;
}

}  // namespace

int main() {
    std::vector<unsigned char> data(kSize);
    fill_pattern(data.data(), data.size(), 42);
    Fnv expect;
    expect.add(data.data(), data.size());

    // Parent writes, child reads and reports what it got.
    int p[2], report[2];
    make_pipe(p);
    make_pipe(report);
    pid_t pid = spawn([&] {
        close(p[1]);
        close(report[0]);
        Summary s = drain(p[0]);
        write_full(report[1], &s, sizeof s);
    });
    close(p[0]);
    close(report[1]);
    CHECK_EQ(write(p[1], data.data(), data.size()), kSize);
    close(p[1]);
    Summary got{};
    CHECK_EQ(read_full(report[0], &got, sizeof got), sizeof got);
    wait_ok(pid);
    close(report[0]);
    CHECK_EQ(got.bytes, kSize);
    CHECK_EQ(got.fnv, expect.value());

    // Child writes, parent reads and compares byte by byte.
    make_pipe(p);
    pid = spawn([&] {
        close(p[0]);
        CHECK_EQ(write(p[1], data.data(), data.size()), kSize);
    });
    close(p[1]);
    std::vector<unsigned char> back(kSize + 1);
    CHECK_EQ(read_full(p[0], back.data(), back.size()), kSize);
    CHECK(std::memcmp(back.data(), data.data(), kSize) == 0);
    wait_ok(pid);
    close(p[0]);

    std::printf("bigwrite: bytes=%zu checksum=%016llx\n", kSize, expect.value());
    return 0;
}
