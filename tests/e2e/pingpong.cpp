// Case pingpong: two processes bounce N one-byte messages over two pipes.
// Every request and every reply is checked, so a lost, duplicated or
// reordered byte fails at once; the checksum of the whole exchange is printed
// for the driver to compare across configurations. Each side spends most of
// its time reading an empty pipe: the case the shim spins for.
#include "../support/helpers.h"

using namespace support;

namespace {
unsigned char request(int i) {
    return static_cast<unsigned char>(i * 131 + 7);
}
unsigned char reply(unsigned char b, int i) {
    return static_cast<unsigned char>(b * 7 + 3 + i);
}
}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
    CHECK(n > 0);
    int to_child[2], to_parent[2];
    const pid_t pid = spawn_talking(to_child, to_parent, [&] {
        for (int i = 0; i < n; ++i) {
            unsigned char b = 0;
            CHECK_EQ(read(to_child[0], &b, 1), 1);
            CHECK_EQ(b, request(i));
            unsigned char r = reply(b, i);
            CHECK_EQ(write(to_parent[1], &r, 1), 1);
        }
        unsigned char b = 0;
        CHECK_EQ(read(to_child[0], &b, 1), 0);  // the parent closed: EOF
    });

    Fnv sum;
    for (int i = 0; i < n; ++i) {
        unsigned char b = request(i);
        CHECK_EQ(write(to_child[1], &b, 1), 1);
        unsigned char r = 0;
        CHECK_EQ(read(to_parent[0], &r, 1), 1);
        CHECK_EQ(r, reply(b, i));
        sum.add(&b, 1);
        sum.add(&r, 1);
    }
    close(to_child[1]);
    wait_ok(pid);
    unsigned char b = 0;
    CHECK_EQ(read(to_parent[0], &b, 1), 0);  // the child is gone: EOF
    std::printf("pingpong: messages=%d checksum=%016llx\n", n, sum.value());
    return 0;
}
