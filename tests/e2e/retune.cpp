// Case retune: a running process picks up a changed config file.
//
//   e2e_retune CONFIG NEW RELOAD_MS ROUNDS
//
// A thread echoes bytes over a pair of pipes made at the start, so every
// wait below is on fds that existed before the change. The program does
// ROUNDS round trips under the config it started with, then replaces CONFIG
// by NEW (rename, as an editor does), then keeps waiting on its pipes until
// a reload must have happened, then does ROUNDS more round trips under the
// new settings. The driver reads the result in the shim's exit report.
//
// "Must have happened", without a sleep: the shim looks at the file at most
// every RELOAD_MS, from a pipe wait, on a clock that lags by up to one tick
// of CLOCK_MONOTONIC_COARSE. Once RELOAD_MS plus two ticks have passed
// after the rename, with waits all along, some wait looked after it.
#include <pthread.h>

#include <cstdio>
#include <ctime>

#include "../support/helpers.h"

using namespace support;

namespace {

int g_ping[2], g_pong[2];

void* echo(void*) {
    unsigned char b;
    for (;;) {
        ssize_t r = read(g_ping[0], &b, 1);
        if (r == 0) return nullptr;
        CHECK_EQ(r, 1);
        CHECK_EQ(write(g_pong[1], &b, 1), 1);
    }
}

void round_trip(int i) {
    unsigned char b = static_cast<unsigned char>(i), r = 0;
    CHECK_EQ(write(g_ping[1], &b, 1), 1);
    CHECK_EQ(read(g_pong[0], &r, 1), 1);
    CHECK_EQ(r, b);
}

}  // namespace

int main(int argc, char** argv) {
    CHECK(argc == 5);
    const char* config = argv[1];
    const char* next = argv[2];
    const std::uint64_t reload_ns = std::strtoull(argv[3], nullptr, 10) * 1'000'000ull;
    const int rounds = std::atoi(argv[4]);
    CHECK(rounds > 0);
    make_pipe(g_ping);
    make_pipe(g_pong);
    pthread_t t;
    CHECK(pthread_create(&t, nullptr, echo, nullptr) == 0);

    for (int i = 0; i < rounds; ++i) round_trip(i);

    CHECK(rename(next, config) == 0);
    timespec res{};
    CHECK(clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0);
    const std::uint64_t tick = static_cast<std::uint64_t>(res.tv_sec) * 1'000'000'000ull +
                               static_cast<std::uint64_t>(res.tv_nsec);
    const std::uint64_t until = now_ns() + reload_ns + 2 * tick;
    int waited = 0;
    while (now_ns() < until || waited < 2) round_trip(waited++);

    for (int i = 0; i < rounds; ++i) round_trip(i);
    close(g_ping[1]);
    CHECK(pthread_join(t, nullptr) == 0);
    std::printf("retune: ok\n");
    return 0;
}
