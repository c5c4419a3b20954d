// Case stress: PIPES pipes, each with a writer and a reader thread, for a
// few seconds; writes and reads of random sizes (1 byte to beyond the pipe's
// capacity, so that writes are split and partial), sometimes after a poll;
// and a signaller thread that sends SIGUSR1 to the workers round-robin
// (tgkill) every 100 µs. The handler has no SA_RESTART, so reads, writes
// and polls fail with EINTR (or return partial counts) all the time, and
// the program retries as it must. Each pipe carries a deterministic byte
// stream that the reader regenerates and compares byte by byte: nothing
// lost, duplicated, reordered or invented, and the byte counts match.
//
//   stress [SECONDS [PIPES]]   (defaults 3 and 4)
//
// Also the sanitizer workload of tools/sanitize.sh.
//
// How a naive spin fails: one that looks for a handler before it looks at
// what its probe did turns a probe that already moved data (a non-blocking
// read that returned bytes) into EINTR: those bytes are lost and the stream
// check fails at once (checked against such a mutant). One that retries a
// split write from the start, or returns a probe's bytes twice, duplicates
// data. (A spin that merely swallows signals is not caught here: the next
// signal, 100 µs later, interrupts the real call anyway; the signals case
// catches it.)
#include <atomic>
#include <string_view>
#include <thread>
#include <vector>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kMaxPipes = 16;
constexpr size_t kMaxChunk = 70000;
constexpr long kSignalPeriodNs = 100'000;

std::atomic<unsigned long> g_handled{0};
void on_usr1(int) {
    g_handled.fetch_add(1, std::memory_order_relaxed);
}

// The bytes of pipe i, in order.
struct Stream {
    Rng rng;
    std::uint64_t word = 0;
    int left = 0;
    explicit Stream(int pipe) : rng(0x5eed0000u + static_cast<unsigned>(pipe)) {}
    unsigned char next() {
        if (left == 0) {
            word = rng.next();
            left = 8;
        }
        --left;
        const auto b = static_cast<unsigned char>(word);
        word >>= 8;
        return b;
    }
};

struct PipeStats {
    std::atomic<unsigned long long> written{0}, read{0};
    std::atomic<unsigned long> eintr_w{0}, eintr_r{0}, partial_w{0}, polls{0};
};

struct Workers {
    std::vector<pid_t> tids;
    std::atomic<int> started{0}, done{0};
};

void writer(int i, int fd, std::uint64_t deadline, PipeStats& st, Workers& ws, int slot) {
    ws.tids[slot] = gettid_();
    ws.started.fetch_add(1);
    Stream stream(i);
    Rng rng(100 + i);
    std::vector<unsigned char> buf(kMaxChunk);
    while (now_ns() < deadline) {
        // Mostly small, sometimes up to beyond the pipe's capacity.
        const size_t n = rng.in(0, 7) == 0 ? rng.in(1, kMaxChunk) : rng.in(1, 512);
        for (size_t k = 0; k < n; ++k) buf[k] = stream.next();
        if (rng.in(0, 7) == 0) {
            pollfd pfd{fd, POLLOUT, 0};
            for (;;) {
                const int r = poll(&pfd, 1, -1);
                if (r == 1) break;
                CHECK(r == -1 && errno == EINTR);
            }
            st.polls.fetch_add(1, std::memory_order_relaxed);
        }
        size_t off = 0;
        while (off < n) {
            const ssize_t r = write(fd, buf.data() + off, n - off);
            if (r < 0) {
                CHECK_EQ(errno, EINTR);
                st.eintr_w.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            CHECK(r > 0);
            if (static_cast<size_t>(r) < n - off)
                st.partial_w.fetch_add(1, std::memory_order_relaxed);
            off += static_cast<size_t>(r);
        }
        st.written.fetch_add(n, std::memory_order_relaxed);
    }
    CHECK_EQ(close(fd), 0);
    ws.done.fetch_add(1);
}

void reader(int i, int fd, PipeStats& st, Workers& ws, int slot) {
    ws.tids[slot] = gettid_();
    ws.started.fetch_add(1);
    Stream stream(i);
    Rng rng(200 + i);
    std::vector<unsigned char> buf(kMaxChunk);
    unsigned long long offset = 0;
    for (;;) {
        if (rng.in(0, 7) == 0) {
            pollfd pfd{fd, POLLIN, 0};
            for (;;) {
                const int r = poll(&pfd, 1, -1);
                if (r == 1) break;
                CHECK(r == -1 && errno == EINTR);
            }
            st.polls.fetch_add(1, std::memory_order_relaxed);
        }
        const size_t want = rng.in(0, 7) == 0 ? rng.in(1, kMaxChunk) : rng.in(1, 512);
        const ssize_t r = read(fd, buf.data(), want);
        if (r < 0) {
            CHECK_EQ(errno, EINTR);
            st.eintr_r.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        if (r == 0) break;
        for (ssize_t k = 0; k < r; ++k) {
            const unsigned char expect = stream.next();
            if (buf[k] != expect) {
                std::fprintf(stderr, "pipe %d: byte %llu is %u, expected %u\n", i,
                             offset + static_cast<unsigned long long>(k), buf[k], expect);
                fail(__FILE__, __LINE__, "the stream arrives intact", 0);
            }
        }
        offset += static_cast<unsigned long long>(r);
        st.read.fetch_add(static_cast<unsigned long long>(r), std::memory_order_relaxed);
    }
    CHECK_EQ(close(fd), 0);
    ws.done.fetch_add(1);
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
    const int pipes = argc > 2 ? std::atoi(argv[2]) : 4;
    CHECK(seconds > 0);
    CHECK(pipes >= 1 && pipes <= kMaxPipes);
    install(SIGUSR1, on_usr1, 0);  // no SA_RESTART
    install(SIGPIPE, SIG_IGN, 0);

    PipeStats stats[kMaxPipes];
    Workers ws;
    ws.tids.assign(2 * pipes, 0);
    const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
    std::vector<std::thread> threads;
    for (int i = 0; i < pipes; ++i) {
        int p[2];
        make_pipe(p);
        threads.emplace_back(writer, i, p[1], deadline, std::ref(stats[i]), std::ref(ws), 2 * i);
        threads.emplace_back(reader, i, p[0], std::ref(stats[i]), std::ref(ws), 2 * i + 1);
    }
    // The signaller: one signal every 100 µs, round-robin over the workers,
    // until every worker is done.
    unsigned long sent = 0;
    std::thread signaller([&] {
        block_signal(SIGUSR1, true);
        while (ws.started.load() < 2 * pipes) sched_yield();
        timespec next;
        clock_gettime(CLOCK_MONOTONIC, &next);
        for (size_t k = 0; ws.done.load() < 2 * pipes; ++k) {
            const pid_t tid = ws.tids[k % ws.tids.size()];
            if (syscall(SYS_tgkill, getpid(), tid, SIGUSR1) == 0) ++sent;
            next.tv_nsec += kSignalPeriodNs;
            if (next.tv_nsec >= 1000000000) {
                next.tv_nsec -= 1000000000;
                ++next.tv_sec;
            }
            // Pacing, not synchronisation: nothing waits for this thread.
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
            }
        }
    });
    for (auto& t : threads) t.join();
    signaller.join();

    unsigned long long total = 0;
    unsigned long eintr = 0, partial = 0, polls = 0;
    for (int i = 0; i < pipes; ++i) {
        const PipeStats& st = stats[i];
        if (st.written.load() != st.read.load()) {
            std::fprintf(stderr, "pipe %d: %llu bytes written, %llu read\n", i, st.written.load(),
                         st.read.load());
            fail(__FILE__, __LINE__, "every byte written is read", 0);
        }
        total += st.read.load();
        eintr += st.eintr_w.load() + st.eintr_r.load();
        partial += st.partial_w.load();
        polls += st.polls.load();
    }
    PROGRESS(
        "ok: %llu bytes through %d pipes in %.1f s; %lu signals sent, %lu handled; "
        "%lu EINTR retries, %lu partial writes, %lu polls",
        total, pipes, seconds, sent, g_handled.load(), eintr, partial, polls);
    CHECK(g_handled.load() > 0);
    CHECK(total > 0);
    return 0;
}
