// The loops `pipespin coverage` measures, reached as hidden bench-worker
// subcommands (bench/worker.cpp hands them over):
//
//   pipespin bench-worker relay [--preload LIB] [--gap-us US] LINES -- PROG ARGS...
//   pipespin bench-worker feed [--preload LIB] --chunk BYTES --gap-us US FILE -- PROG ARGS...
//
// relay: PROG reads a pipe and writes a pipe; this process sends it one
// line at a time and waits for each answer before the next (a ping-pong
// through the program), US µs after each answer. feed: a paced producer writes FILE into PROG's
// stdin, BYTES every US µs, PROG's stdout goes to a memory file. Pauses
// under 1 ms busy-wait (the scheduler's sleeps are coarser), longer ones
// sleep.
//
// The worker itself never has the shim: with --preload, only PROG gets
// LIB in front of LD_PRELOAD (the rest of the environment, PIPESPIN_STATS
// included, it inherits as it is). So the arms differ only in the program's
// own waits.
//
// On success it prints one line: "WALL_US HASH BYTES", the wall time from
// the first byte sent to PROG's exit, and an FNV-1a hash and the size of
// everything PROG wrote. PROG's failure is this worker's failure.
#include <spawn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"

namespace pipespin::cli {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(std::string_view what) {
    throw Failure(kExitFailure, fmt::format("bench-worker: {}: {}", what, std::strerror(errno)));
}

struct Fnv {
    std::uint64_t h = 0xcbf29ce484222325ull;
    std::uint64_t bytes = 0;
    void add(const char* p, std::size_t n) {
        bytes += n;
        for (std::size_t i = 0; i < n; ++i)
            h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
    }
};

struct Program {
    std::vector<std::string> argv;
    std::optional<std::string> preload;
};

// PROG with stdin and stdout on the given fds; every other fd of ours is
// close-on-exec.
pid_t start(const Program& prog, int in, int out) {
    Environment env = Environment::current();
    if (prog.preload) {
        env.set_preload(preload_with(env.get("LD_PRELOAD").value_or(""), *prog.preload));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    std::vector<char*> cargv, cenv;
    for (const std::string& a : prog.argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const std::string& e : env.entries()) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw Failure(kExitFailure, fmt::format("bench-worker: cannot run {}: {}", prog.argv[0],
                                                std::strerror(rc)));
    return pid;
}

void finish(pid_t pid, const Program& prog) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Failure(kExitFailure, fmt::format("bench-worker: {} {}", prog.argv[0],
                                                describe_wait_status(status)));
}

void write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail("write to the program");
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

void pipe_cloexec(int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe");
}

void print_result(Clock::duration wall, const Fnv& out) {
    fmt::print("{:.1f} {:016x} {}\n", std::chrono::duration<double, std::micro>(wall).count(),
               out.h, out.bytes);
}

void pause_until(Clock::time_point t) {
    if (t - Clock::now() >= std::chrono::milliseconds(1)) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t - Clock::now());
        timespec ts{static_cast<time_t>(ns.count() / 1'000'000'000),
                    static_cast<long>(ns.count() % 1'000'000'000)};
        while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    while (Clock::now() < t) {
    }
}

int relay(const Program& prog, std::uint64_t lines, std::uint64_t gap_us) {
    int to[2], from[2];
    pipe_cloexec(to);
    pipe_cloexec(from);
    const pid_t pid = start(prog, to[0], from[1]);
    ::close(to[0]);
    ::close(from[1]);
    Fnv out;
    char buf[4096];
    std::uint64_t newlines = 0;
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < lines; ++i) {
        if (gap_us > 0 && i > 0) pause_until(Clock::now() + std::chrono::microseconds(gap_us));
        const std::string line = fmt::format("line {:06d} x\n", i);
        write_all(to[1], line.data(), line.size());
        while (newlines <= i) {  // its answer: one line per line
            ssize_t n = ::read(from[0], buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("read from the program");
            if (n == 0)
                throw Failure(kExitFailure,
                              fmt::format("bench-worker: {} ended its output after {} of {} lines",
                                          prog.argv[0], newlines, lines));
            out.add(buf, static_cast<std::size_t>(n));
            for (ssize_t k = 0; k < n; ++k) newlines += buf[k] == '\n';
        }
    }
    ::close(to[1]);
    for (;;) {
        ssize_t n = ::read(from[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.add(buf, static_cast<std::size_t>(n));
    }
    finish(pid, prog);
    const auto t1 = Clock::now();
    ::close(from[0]);
    print_result(t1 - t0, out);
    return kExitOk;
}

int feed(const Program& prog, const std::string& file, std::uint64_t chunk, std::uint64_t gap_us) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Failure(kExitFailure, fmt::format("bench-worker: cannot read {}", file));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    int to[2];
    pipe_cloexec(to);
    const MemoryFile sink("pipespin-coverage");
    const pid_t pid = start(prog, to[0], sink.fd());
    ::close(to[0]);
    const auto t0 = Clock::now();
    auto next = t0;
    for (std::size_t at = 0; at < data.size(); at += chunk) {
        pause_until(next);
        write_all(to[1], data.data() + at, std::min<std::size_t>(chunk, data.size() - at));
        next += std::chrono::microseconds(gap_us);
    }
    ::close(to[1]);
    finish(pid, prog);
    const auto t1 = Clock::now();
    Fnv out;
    const std::string written = sink.contents();
    out.add(written.data(), written.size());
    print_result(t1 - t0, out);
    return kExitOk;
}

}  // namespace

int coverage_worker(std::string_view kind, ArgCursor& cur) {
    Program prog;
    std::uint64_t chunk = 4096, gap_us = kind == "feed" ? 20 : 0;
    while (cur.at_flag()) {
        if (auto v = cur.take_value("--preload"))
            prog.preload = std::string(*v);
        else if (auto v = cur.take_value("--chunk"); v && kind == "feed")
            chunk = parse_count("bench-worker", "--chunk", *v, 1, 1u << 20);
        else if (auto v = cur.take_value("--gap-us"))
            gap_us = parse_count("bench-worker", "--gap-us", *v, 0, 1'000'000);
        else
            cur.fail_unknown();
    }
    const std::string arg(cur.take_word());
    if (!cur.take_separator() || cur.done())
        throw UsageError("bench-worker: " + std::string(kind) + ": missing -- PROG");
    for (char* a : cur.rest()) prog.argv.emplace_back(a);
    if (kind == "relay")
        return relay(prog, parse_count("bench-worker", "LINES", arg, 1, 100'000'000), gap_us);
    return feed(prog, arg, chunk, gap_us);
}

}  // namespace pipespin::cli
