// Case atomic: several writer processes each write records of exactly
// PIPE_BUF bytes into one pipe at the same time. POSIX makes such writes
// atomic, so the reader must find every record whole (filled with its
// writer's id and sequence number) and each writer's records in order.
#include <vector>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr int kWriters = 4;
constexpr int kRecords = 400;  // per writer

unsigned char fill_byte(std::uint32_t id, std::uint32_t seq) {
    return static_cast<unsigned char>(id * 61 + seq * 7 + 1);
}

void make_record(unsigned char* rec, std::uint32_t id, std::uint32_t seq) {
    std::memset(rec, fill_byte(id, seq), PIPE_BUF);
    std::memcpy(rec, &id, sizeof id);
    std::memcpy(rec + sizeof id, &seq, sizeof seq);
}

}  // namespace

int main() {
    int p[2], gate[2];
    make_pipe(p);
    make_pipe(gate);
    std::vector<pid_t> pids;
    for (std::uint32_t id = 0; id < kWriters; ++id) {
        pids.push_back(spawn([&] {
            close(p[0]);
            close(gate[1]);
            char c;
            CHECK_EQ(read(gate[0], &c, 1), 0);  // all writers start together
            static unsigned char rec[PIPE_BUF];
            for (std::uint32_t seq = 0; seq < kRecords; ++seq) {
                make_record(rec, id, seq);
                CHECK_EQ(write(p[1], rec, PIPE_BUF), PIPE_BUF);
            }
        }));
    }
    close(p[1]);
    close(gate[0]);
    close(gate[1]);  // opens the gate

    static unsigned char rec[PIPE_BUF];
    std::uint32_t next[kWriters] = {};
    int total = 0;
    for (;;) {
        size_t got = read_full(p[0], rec, PIPE_BUF);
        if (got == 0) break;
        CHECK_EQ(got, PIPE_BUF);  // the stream is made of whole records
        std::uint32_t id, seq;
        std::memcpy(&id, rec, sizeof id);
        std::memcpy(&seq, rec + sizeof id, sizeof seq);
        CHECK(id < kWriters);
        CHECK_EQ(seq, next[id]);
        for (size_t i = sizeof id + sizeof seq; i < PIPE_BUF; ++i) {
            if (rec[i] != fill_byte(id, seq)) {
                std::fprintf(stderr, "record %u/%u interleaved at byte %zu\n", id, seq, i);
                CHECK(rec[i] == fill_byte(id, seq));
            }
        }
        ++next[id];
        ++total;
    }
    for (pid_t pid : pids) wait_ok(pid);
    for (int id = 0; id < kWriters; ++id) CHECK_EQ(next[id], kRecords);
    std::printf("atomic: writers=%d records=%d record_size=%d\n", kWriters, total, PIPE_BUF);
    return 0;
}
