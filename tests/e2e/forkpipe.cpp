// Case fork: pipes created before fork() work in both processes, in both
// directions (the child inherits the pipes and whatever the shim learned
// about them); afterwards a pipe fd number reused for another file reads
// that file.
#include <vector>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr size_t kSize = 200000;

// Exchanges in pieces so that each side waits for the other many times.
void send(int fd, const std::vector<unsigned char>& data) {
    for (size_t off = 0; off < data.size(); off += 1000)
        write_full(fd, data.data() + off, std::min<size_t>(1000, data.size() - off));
}

// Opens path until it gets fd number `want` (open() takes the lowest free
// number, so the lower ones are filled first); returns want.
int reopen_as(int want, const char* path, int flags) {
    for (;;) {
        int fd = open(path, flags);
        CHECK(fd >= 0 && fd <= want);
        if (fd == want) return fd;
    }
}

void receive_and_check(int fd, const std::vector<unsigned char>& want) {
    std::vector<unsigned char> got(want.size() + 1);
    CHECK_EQ(read_full(fd, got.data(), got.size()), want.size());  // then EOF
    CHECK(std::memcmp(got.data(), want.data(), want.size()) == 0);
}

}  // namespace

int main() {
    std::vector<unsigned char> up(kSize), down(kSize);
    fill_pattern(up.data(), kSize, 7);
    fill_pattern(down.data(), kSize, 8);

    int to_parent[2], to_child[2];
    make_pipe(to_parent);
    make_pipe(to_child);
    pid_t pid = spawn([&] {
        close(to_parent[0]);
        close(to_child[1]);
        send(to_parent[1], up);
        CHECK_EQ(close(to_parent[1]), 0);
        receive_and_check(to_child[0], down);
        // The number of the pipe's read end now names /dev/zero.
        const int old = to_child[0];
        CHECK_EQ(close(old), 0);
        CHECK_EQ(reopen_as(old, "/dev/zero", O_RDONLY), old);
        unsigned char z[64];
        std::memset(z, 1, sizeof z);
        CHECK_EQ(read(old, z, sizeof z), sizeof z);
        for (unsigned char b : z) CHECK_EQ(b, 0);
    });
    close(to_parent[1]);
    close(to_child[0]);
    receive_and_check(to_parent[0], up);
    send(to_child[1], down);
    CHECK_EQ(close(to_child[1]), 0);
    wait_ok(pid);

    close(to_parent[0]);

    // The same in the parent: the write end's number now names /dev/null.
    const int old = to_child[1];
    CHECK_EQ(reopen_as(old, "/dev/null", O_WRONLY), old);
    CHECK_EQ(write(old, up.data(), 5000), 5000);
    close(old);

    Fnv sum;
    sum.add(up.data(), kSize);
    sum.add(down.data(), kSize);
    std::printf("fork: bytes=%zu checksum=%016llx\n", 2 * kSize, sum.value());
    return 0;
}
