// The loops `pipespin-bench coverage` measures, commands of the worker
// (bench/worker.cpp adds them):
//
//   pipespin-bench worker relay [--preload LIB] [--gap-us US] LINES -- PROG ARGS...
//   pipespin-bench worker feed [--preload LIB] --chunk BYTES --gap-us US FILE -- PROG ARGS...
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
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"

namespace pipespin::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(std::string_view what) {
    throw Failure(kExitFailure, fmt::format("worker: {}: {}", what, std::strerror(errno)));
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

struct Prog {
    std::vector<std::string> argv;
    std::optional<std::string> preload;
};

// PROG with stdin and stdout on the given fds; every other fd of ours is
// close-on-exec.
pid_t start(const Prog& prog, int in, int out) {
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
        throw Failure(kExitFailure,
                      fmt::format("worker: cannot run {}: {}", prog.argv[0], std::strerror(rc)));
    return pid;
}

void finish(pid_t pid, const Prog& prog) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Failure(kExitFailure,
                      fmt::format("worker: {} {}", prog.argv[0], describe_wait_status(status)));
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

int relay(const Prog& prog, std::uint64_t lines, std::uint64_t gap_us) {
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
                              fmt::format("worker: {} ended its output after {} of {} lines",
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

int feed(const Prog& prog, const std::string& file, std::uint64_t chunk, std::uint64_t gap_us) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Failure(kExitFailure, fmt::format("worker: cannot read {}", file));
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

std::vector<std::pair<const CLI::App*, Action>> define_coverage_loops(CLI::App& worker) {
    struct Values {
        Prog prog;
        std::uint64_t chunk = 4096, gap_us = 0;
        std::uint64_t lines = 0;
        std::string file;
    };
    auto relay_v = std::make_shared<Values>();
    auto feed_v = std::make_shared<Values>();
    feed_v->gap_us = 20;
    auto common = [](CLI::App& app, Values& v) {
        app.add_option_function<std::string>(
               "--preload", [&v](const std::string& lib) { v.prog.preload = lib; },
               "put LIB in front of PROG's LD_PRELOAD")
            ->type_name("LIB");
        add_count(app, "--gap-us", v.gap_us, 0, 1'000'000, "the pause, µs", "US");
    };
    CLI::App* relay_app = worker.add_subcommand(
        "relay",
        "send PROG one line at a time, waiting for each answer; prints WALL_US HASH BYTES");
    common(*relay_app, *relay_v);
    add_count(*relay_app, "LINES", relay_v->lines, 1, 100'000'000, "lines to send")
        ->default_str("")
        ->required();
    relay_app->add_option("PROG", relay_v->prog.argv, "the program and its arguments, after --")
        ->required();
    CLI::App* feed_app = worker.add_subcommand(
        "feed", "write FILE into PROG's stdin, paced; prints WALL_US HASH BYTES");
    common(*feed_app, *feed_v);
    add_count(*feed_app, "--chunk", feed_v->chunk, 1, 1u << 20, "bytes per write", "BYTES");
    feed_app->add_option("FILE", feed_v->file, "what to feed")->required();
    feed_app->add_option("PROG", feed_v->prog.argv, "the program and its arguments, after --")
        ->required();
    return {
        {relay_app,
         [relay_v](Args) { return relay(relay_v->prog, relay_v->lines, relay_v->gap_us); }},
        {feed_app,
         [feed_v](Args) {
             return feed(feed_v->prog, feed_v->file, feed_v->chunk, feed_v->gap_us);
         }},
    };
}

}  // namespace pipespin::bench
