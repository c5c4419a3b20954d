// Case partial: a read asks for more than the pipe holds and must return
// exactly what is there at once (not wait to fill its buffer); the rest
// arrives with later reads. Writes of up to PIPE_BUF land whole, so a reader
// woken by one gets all of that write and nothing more.
#include "../support/helpers.h"

using namespace support;

namespace {

void same_process() {
    int p[2];
    make_pipe(p);
    unsigned char data[100], buf[200];
    fill_pattern(data, sizeof data, 1);

    CHECK_EQ(write(p[1], data, 10), 10);
    CHECK_EQ(read(p[0], buf, 100), 10);
    CHECK(std::memcmp(buf, data, 10) == 0);

    CHECK_EQ(write(p[1], data + 10, 90), 90);
    CHECK_EQ(read(p[0], buf, 4), 4);  // less than is there
    CHECK_EQ(read(p[0], buf + 4, sizeof buf - 4), 86);
    CHECK(std::memcmp(buf, data + 10, 90) == 0);
    close(p[0]);
    close(p[1]);
}

// The writer writes one chunk per round, each only after the reader says it
// is about to read, and the reader's buffer is always larger than the chunk.
void chunk_by_chunk(int rounds) {
    int p[2], go[2];
    make_pipe(p);
    make_pipe(go);
    auto size_of = [](int i) { return i == 0 ? 10 : i == 1 ? 90 : 1 + (i * 397) % PIPE_BUF; };
    pid_t pid = spawn([&] {
        close(p[0]);
        close(go[1]);
        static unsigned char chunk[PIPE_BUF];
        for (int i = 0; i < rounds; ++i) {
            wait_peer(go[0]);
            fill_pattern(chunk, sizeof chunk, static_cast<std::uint64_t>(i));
            CHECK_EQ(write(p[1], chunk, size_of(i)), size_of(i));
        }
    });
    close(p[1]);
    close(go[0]);
    static unsigned char want[PIPE_BUF], buf[2 * PIPE_BUF];
    Fnv sum;
    for (int i = 0; i < rounds; ++i) {
        signal_peer(go[1]);
        const ssize_t n = read(p[0], buf, sizeof buf);
        CHECK_EQ(n, size_of(i));
        fill_pattern(want, sizeof want, static_cast<std::uint64_t>(i));
        CHECK(std::memcmp(buf, want, static_cast<size_t>(n)) == 0);
        sum.add(buf, static_cast<size_t>(n));
    }
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    wait_ok(pid);
    close(p[0]);
    close(go[1]);
    std::printf("partial: rounds=%d checksum=%016llx\n", rounds, sum.value());
}

}  // namespace

int main() {
    same_process();
    chunk_by_chunk(300);
    return 0;
}
