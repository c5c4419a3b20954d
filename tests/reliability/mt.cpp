// Case mt: 4 writer and 4 reader threads on one pipe. Writers send records
// of kRecord bytes (writer id, sequence number, checksum, payload), 1 to
// PIPE_BUF / kRecord records per write() call, so every write is atomic.
// Readers ask for a random number of whole records per read(), so every
// read returns whole records. Checked: every read returns a multiple of
// kRecord bytes; every record is intact; each reader sees each writer's
// sequence numbers strictly increasing (the pipe is FIFO and a reader's
// reads are ordered); across readers every record of every writer arrives
// exactly once (no loss, no duplicate).
//
// How a naive spin fails: a spin that completes a write partly with a
// non-blocking attempt and then the rest with the blocking call splits a
// PIPE_BUF write, so records of two writers interleave (torn records);
// a probe that reads into its own buffer to "peek" and then returns that
// data to whichever reader asked loses or reorders records between readers.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kWriters = 4;
constexpr int kReaders = 4;
constexpr std::uint32_t kRecords = 20000;  // per writer
constexpr size_t kRecord = 64;
constexpr size_t kMaxPerCall = PIPE_BUF / kRecord;

struct Record {
    std::uint32_t writer;
    std::uint32_t seq;
    std::uint64_t check;
    unsigned char payload[kRecord - 16];
};
static_assert(sizeof(Record) == kRecord);

std::uint64_t checksum(const Record& r) {
    Fnv f;
    f.add(&r.writer, sizeof r.writer);
    f.add(&r.seq, sizeof r.seq);
    f.add(r.payload, sizeof r.payload);
    return f.h;
}

void make_record(Record& r, std::uint32_t writer, std::uint32_t seq) {
    r.writer = writer;
    r.seq = seq;
    Rng rng(static_cast<std::uint64_t>(writer) << 32 | seq);
    for (auto& b : r.payload) b = static_cast<unsigned char>(rng.next());
    r.check = checksum(r);
}

}  // namespace

int main() {
    announce_main_pid();
    int p[2];
    make_pipe(p);
    std::vector<std::atomic<std::uint8_t>> seen(kWriters * kRecords);
    std::atomic<std::uint64_t> reads{0}, writes{0};

    std::vector<std::thread> writers, readers;
    for (std::uint32_t w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            Rng rng(1000 + w);
            Record batch[kMaxPerCall];
            std::uint32_t seq = 0;
            while (seq < kRecords) {
                size_t k = rng.in(1, kMaxPerCall);
                if (k > kRecords - seq) k = kRecords - seq;
                for (size_t i = 0; i < k; ++i)
                    make_record(batch[i], w, seq + static_cast<std::uint32_t>(i));
                const ssize_t r = write(p[1], batch, k * kRecord);
                CHECK_EQ(r, static_cast<ssize_t>(k * kRecord));  // <= PIPE_BUF: all or nothing
                seq += static_cast<std::uint32_t>(k);
                writes.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    for (int rd = 0; rd < kReaders; ++rd) {
        readers.emplace_back([&, rd] {
            Rng rng(2000 + rd);
            Record batch[kMaxPerCall];
            std::int64_t last[kWriters];
            for (auto& l : last) l = -1;
            for (;;) {
                const size_t want = rng.in(1, kMaxPerCall);
                const ssize_t r = read(p[0], batch, want * kRecord);
                CHECK(r >= 0);
                if (r == 0) break;
                reads.fetch_add(1, std::memory_order_relaxed);
                if (r % static_cast<ssize_t>(kRecord) != 0) {
                    std::fprintf(stderr, "reader %d: read returned %zd bytes\n", rd, r);
                    fail(__FILE__, __LINE__, "a read returns whole records", 0);
                }
                for (ssize_t i = 0; i < r / static_cast<ssize_t>(kRecord); ++i) {
                    const Record& rec = batch[i];
                    CHECK(rec.writer < kWriters);
                    CHECK(rec.seq < kRecords);
                    CHECK_EQ(rec.check, checksum(rec));
                    if (static_cast<std::int64_t>(rec.seq) <= last[rec.writer]) {
                        std::fprintf(stderr, "reader %d: writer %u's record %u after %lld\n", rd,
                                     rec.writer, rec.seq, static_cast<long long>(last[rec.writer]));
                        fail(__FILE__, __LINE__, "one writer's records arrive in order", 0);
                    }
                    last[rec.writer] = rec.seq;
                    if (seen[rec.writer * kRecords + rec.seq].fetch_add(1) != 0) {
                        std::fprintf(stderr, "writer %u's record %u arrived twice\n", rec.writer,
                                     rec.seq);
                        fail(__FILE__, __LINE__, "no record is duplicated", 0);
                    }
                }
            }
        });
    }
    for (auto& t : writers) t.join();
    CHECK_EQ(close(p[1]), 0);
    for (auto& t : readers) t.join();
    for (std::uint32_t w = 0; w < kWriters; ++w)
        for (std::uint32_t s = 0; s < kRecords; ++s)
            if (seen[w * kRecords + s].load() != 1) {
                std::fprintf(stderr, "writer %u's record %u never arrived\n", w, s);
                fail(__FILE__, __LINE__, "no record is lost", 0);
            }
    PROGRESS("ok: %u records from %d writers in %llu writes, read by %d readers in %llu reads",
             kWriters * kRecords, kWriters, static_cast<unsigned long long>(writes.load()),
             kReaders, static_cast<unsigned long long>(reads.load()));
    return 0;
}
