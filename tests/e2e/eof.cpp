// Case eof: when the last write end is closed, read returns the data still
// queued and then 0, also for a reader that is already waiting (spinning or
// blocked) when the writer closes.
#include "../support/helpers.h"

using namespace support;

namespace {

void queued_data_then_eof() {
    int p[2];
    make_pipe(p);
    CHECK_EQ(write(p[1], "abc", 3), 3);
    CHECK_EQ(close(p[1]), 0);
    char buf[16];
    CHECK_EQ(read(p[0], buf, sizeof buf), 3);
    CHECK(std::memcmp(buf, "abc", 3) == 0);
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);  // EOF stays EOF
    close(p[0]);
}

// EOF only when every write end is gone: a dup keeps the pipe open.
void eof_waits_for_last_writer() {
    int p[2];
    make_pipe(p);
    int w2 = dup(p[1]);
    CHECK(w2 >= 0);
    CHECK_EQ(close(p[1]), 0);
    pollfd pfd{p[0], POLLIN, 0};
    CHECK_EQ(poll(&pfd, 1, 0), 0);  // not readable, not hung up
    CHECK_EQ(write(w2, "z", 1), 1);
    CHECK_EQ(close(w2), 0);
    char c = 0;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(c, 'z');
    CHECK_EQ(read(p[0], &c, 1), 0);
    close(p[0]);
}

// The child closes its write end (after writing `tail`, if any) once the
// parent has announced that it is about to read. Repeated, so that the close
// lands sometimes during the shim's spin and sometimes in the blocked read.
void writer_closes_while_reader_waits(int rounds) {
    for (int i = 0; i < rounds; ++i) {
        const bool with_data = i % 2 == 1;
        int p[2];
        make_pipe(p);
        const pid_t pid = spawn_on_go(p, 1, [&] {
            if (with_data) CHECK_EQ(write(p[1], "tail", 4), 4);
            CHECK_EQ(close(p[1]), 0);
        });
        char buf[64];
        if (with_data) {
            CHECK_EQ(read_full(p[0], buf, 4), 4);
            CHECK(std::memcmp(buf, "tail", 4) == 0);
        }
        CHECK_EQ(read(p[0], buf, sizeof buf), 0);
        wait_ok(pid);
        close(p[0]);
    }
}

}  // namespace

int main() {
    queued_data_then_eof();
    eof_waits_for_last_writer();
    writer_closes_while_reader_waits(200);
    std::printf("eof: ok\n");
    return 0;
}
