// Case threads: several threads write to and several threads read from the
// same pipe at once. Messages interleave arbitrarily, but no byte may be
// lost or invented: the readers' byte count and byte-value histogram must
// equal what the writers wrote.
#include <array>
#include <thread>
#include <vector>

#include "../support/helpers.h"

using namespace support;

namespace {

constexpr int kWriters = 3;
constexpr int kReaders = 3;
constexpr int kMessages = 4000;  // per writer

using Histogram = std::array<unsigned long long, 256>;

// Message sizes vary from 1 byte to PIPE_BUF; contents follow the pattern.
size_t message_size(int writer, int i) {
    return 1 + static_cast<size_t>((writer * 7919 + i * 104729) % (i % 16 == 0 ? PIPE_BUF : 256));
}

void message(unsigned char* buf, int writer, int i) {
    fill_pattern(buf, message_size(writer, i), static_cast<std::uint64_t>(writer) << 32 | i);
}

}  // namespace

int main() {
    Histogram expect{};
    unsigned long long expect_bytes = 0;
    {
        static unsigned char buf[PIPE_BUF];
        for (int w = 0; w < kWriters; ++w) {
            for (int i = 0; i < kMessages; ++i) {
                message(buf, w, i);
                for (size_t k = 0; k < message_size(w, i); ++k) ++expect[buf[k]];
                expect_bytes += message_size(w, i);
            }
        }
    }

    int p[2];
    make_pipe(p);
    std::vector<Histogram> seen(kReaders, Histogram{});
    std::vector<std::thread> readers, writers;
    for (int r = 0; r < kReaders; ++r) {
        readers.emplace_back([&, r] {
            unsigned char buf[1000 + 317 * 3];
            const size_t want = 1000 + 317 * static_cast<size_t>(r);
            for (;;) {
                ssize_t n = read(p[0], buf, want);
                CHECK(n >= 0);
                if (n == 0) break;
                for (ssize_t k = 0; k < n; ++k) ++seen[r][buf[k]];
            }
        });
    }
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            unsigned char buf[PIPE_BUF];
            for (int i = 0; i < kMessages; ++i) {
                message(buf, w, i);
                CHECK_EQ(write(p[1], buf, message_size(w, i)), message_size(w, i));
            }
        });
    }
    for (auto& t : writers) t.join();
    CHECK_EQ(close(p[1]), 0);  // the readers see EOF once the pipe is drained
    for (auto& t : readers) t.join();
    close(p[0]);

    Histogram got{};
    unsigned long long got_bytes = 0;
    for (const auto& h : seen)
        for (int b = 0; b < 256; ++b) {
            got[b] += h[b];
            got_bytes += h[b];
        }
    CHECK_EQ(got_bytes, expect_bytes);
    for (int b = 0; b < 256; ++b) CHECK_EQ(got[b], expect[b]);
    Fnv sum;
    sum.add(got.data(), sizeof got);
    std::printf("threads: writers=%d readers=%d bytes=%llu histogram=%016llx\n", kWriters, kReaders,
                got_bytes, sum.value());
    return 0;
}
