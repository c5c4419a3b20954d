// Case fortify: built with -O2 -D_FORTIFY_SOURCE=2, so that read() and poll()
// with sizes unknown at compile time become __read_chk and __poll_chk (the
// driver checks the imports). A ping-pong over those calls must give the
// right data, and the shim must see (and spin in) them.
#include "../support/helpers.h"

using namespace support;

namespace {

// Not constants, or glibc calls the plain functions.
volatile size_t g_one = 1;
volatile nfds_t g_nfds = 1;

unsigned char wait_and_read(int fd) {
    pollfd pfd[1] = {{fd, POLLIN, 0}};
    CHECK_EQ(poll(pfd, g_nfds, -1), 1);
    CHECK((pfd[0].revents & POLLIN) != 0);
    unsigned char buf[1] = {0};
    CHECK_EQ(read(fd, buf, g_one), 1);
    return buf[0];
}

unsigned char just_read(int fd) {
    unsigned char buf[1] = {0};
    CHECK_EQ(read(fd, buf, g_one), 1);
    return buf[0];
}

}  // namespace

int main() {
    constexpr int kRounds = 5000;
    int to_child[2], to_parent[2];
    const pid_t pid = spawn_talking(to_child, to_parent, [&] {
        for (int i = 0; i < kRounds; ++i) {
            unsigned char c = just_read(to_child[0]);
            CHECK_EQ(c, static_cast<unsigned char>(i));
            c = static_cast<unsigned char>(~c);
            CHECK_EQ(write(to_parent[1], &c, 1), 1);
        }
    });
    Fnv sum;
    for (int i = 0; i < kRounds; ++i) {
        unsigned char c = static_cast<unsigned char>(i);
        CHECK_EQ(write(to_child[1], &c, 1), 1);
        unsigned char r = wait_and_read(to_parent[0]);
        CHECK_EQ(r, static_cast<unsigned char>(~c));
        sum.add(&r, 1);
    }
    close(to_child[1]);
    wait_ok(pid);
    close(to_parent[0]);
    std::printf("fortify: rounds=%d checksum=%016llx\n", kRounds, sum.value());
    return 0;
}
