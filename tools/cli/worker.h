// The worker: what a benchmark re-executes once per sample, because
// LD_PRELOAD only takes effect at exec. `pipespin pingpong` starts
// `pipespin pingpong-worker LOOP ...` in each configuration's environment;
// the lab (tools/bench) runs the same loops, and its own, as
// `pipespin-bench worker LOOP ...`. The loops use plain read()/write()/pipe()
// so that the shim, when present, intercepts them exactly as it would in any
// program.
//
// Contract with the benchmarks: on success a loop prints one number and
// nothing else on stdout (pingpong, floor: the mean µs per round trip; the
// lab's loops say what theirs is); anything else goes to stderr with a
// nonzero exit. --expect-shim / --expect-no-shim make the worker fail when
// the shim's presence is not what the configuration needs, so a library the
// loader refused (it says so on stderr and carries on) cannot pass for a
// measurement of the shim.
//
//   LOOP [--threads] [--expect-shim|--expect-no-shim] N
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/util/command.h"

namespace pipespin::cli::worker {

struct Pipe {
    int r = -1, w = -1;
};
// pipe(), not pipe2(): the plainest way a program makes one.
Pipe make_pipe();
// 0 on success, else an errno value (EPIPE for an unexpected EOF). No
// exceptions: these also run in a forked child and in a peer thread.
int put_byte(int fd);
// 1: got a byte, 0: EOF, -errno: failure.
int get_byte(int fd);
// Throws Failure naming `what` when err (an errno value) is not 0.
void check(int err, std::string_view what);

using Clock = std::chrono::steady_clock;
double us_per(Clock::duration d, std::uint64_t n);
// A short warm-up first so that the timed part sees both peers scheduled,
// pages touched and the shim's per-fd state settled.
std::uint64_t warmup_of(std::uint64_t n);

// A measured loop of N operations; what it returns is what the worker prints.
struct Loop {
    std::string_view name;
    std::string_view help;  // what it measures and what it prints
    double (*run)(std::uint64_t n, bool threads);
    bool threads = false;  // takes --threads
};

// pingpong (a 1-byte round trip over two pipes, between two processes or,
// with --threads, two threads) and floor (the same four pipe operations
// within one thread: the least the traffic costs, which no spinning can go
// below): what `pipespin pingpong` measures.
std::span<const Loop> pingpong_loops();

// One command per loop on `app`: LOOP [--threads] [--expect-shim|--expect-no-shim] N.
std::vector<std::pair<const CLI::App*, Action>> define_loops(CLI::App& app,
                                                             std::span<const Loop> loops);

// The worker flag that makes it fail unless the shim is (or is not) loaded.
inline std::string_view expect_shim_flag(bool shim) {
    return shim ? "--expect-shim" : "--expect-no-shim";
}

}  // namespace pipespin::cli::worker
