// Case ctor: pipe I/O from a library constructor, before the shim is
// initialised, must work (ctor_io_lib.cpp checks it), and the pipe that
// constructor created must keep working, in both processes, afterwards.
#include "../support/helpers.h"
#include "ctor_io_lib.h"

using namespace support;

int main() {
    if (ctor_io_error()[0] != '\0') std::fprintf(stderr, "constructor: %s\n", ctor_io_error());
    CHECK(ctor_io_error()[0] == '\0');

    const int rfd = ctor_io_kept_read_fd(), wfd = ctor_io_kept_write_fd();
    char buf[64];
    CHECK_EQ(read(rfd, buf, sizeof buf), 20);
    CHECK(std::memcmp(buf, "from the constructor", 20) == 0);

    // A child echoes back over the constructor's pipe and one made now.
    int back[2];
    make_pipe(back);
    constexpr int kRounds = 2000;
    pid_t pid = spawn([&] {
        close(back[0]);
        close(wfd);
        for (int i = 0; i < kRounds; ++i) {
            unsigned char c = 0;
            CHECK_EQ(read(rfd, &c, 1), 1);
            c = static_cast<unsigned char>(c + 1);
            CHECK_EQ(write(back[1], &c, 1), 1);
        }
        unsigned char c;
        CHECK_EQ(read(rfd, &c, 1), 0);
    });
    close(back[1]);
    close(rfd);
    Fnv sum;
    for (int i = 0; i < kRounds; ++i) {
        unsigned char c = static_cast<unsigned char>(i * 13);
        CHECK_EQ(write(wfd, &c, 1), 1);
        unsigned char r = 0;
        CHECK_EQ(read(back[0], &r, 1), 1);
        CHECK_EQ(r, static_cast<unsigned char>(c + 1));
        sum.add(&r, 1);
    }
    close(wfd);
    wait_ok(pid);
    close(back[0]);
    std::printf("ctor: constructor ok, rounds=%d checksum=%016llx\n", kRounds, sum.value());
    return 0;
}
