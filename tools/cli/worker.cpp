// The worker's plumbing and pipespin pingpong's loops (worker.h).
#include "cli/worker.h"

#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/util/args.h"
#include "cli/util/library.h"
#include "cli/util/spawn.h"

namespace pipespin::cli::worker {

Pipe make_pipe() {
    int fds[2];
    if (::pipe(fds) != 0)
        throw Failure(kExitFailure, fmt::format("worker: pipe: {}", std::strerror(errno)));
    return {fds[0], fds[1]};
}

int put_byte(int fd) {
    const char c = 'x';
    for (;;) {
        ssize_t n = ::write(fd, &c, 1);
        if (n == 1) return 0;
        if (n < 0 && errno != EINTR) return errno;
    }
}

int get_byte(int fd) {
    char c;
    for (;;) {
        ssize_t n = ::read(fd, &c, 1);
        if (n >= 0) return static_cast<int>(n);
        if (errno != EINTR) return -errno;
    }
}

void check(int err, std::string_view what) {
    if (err != 0)
        throw Failure(kExitFailure, fmt::format("worker: {}: {}", what, std::strerror(err)));
}

double us_per(Clock::duration d, std::uint64_t n) {
    return std::chrono::duration<double, std::micro>(d).count() / static_cast<double>(n);
}

std::uint64_t warmup_of(std::uint64_t n) {
    return n / 10;
}

namespace {

// The peer: echo every byte from `in` to `out` until EOF.
int echo(int in, int out) {
    for (;;) {
        int got = get_byte(in);
        if (got == 0) return 0;
        if (got < 0) return -got;
        if (int err = put_byte(out); err != 0) return err;
    }
}

int ping(int out, int in, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        if (int err = put_byte(out); err != 0) return err;
        int got = get_byte(in);
        if (got <= 0) return got == 0 ? EPIPE : -got;
    }
    return 0;
}

double pingpong_processes(std::uint64_t n) {
    Pipe a = make_pipe(), b = make_pipe();
    pid_t pid = ::fork();
    if (pid < 0) check(errno, "fork");
    if (pid == 0) {
        ::close(a.w);
        ::close(b.r);
        ::_exit(echo(a.r, b.w) == 0 ? 0 : 1);
    }
    ::close(a.r);
    ::close(b.w);
    check(ping(a.w, b.r, warmup_of(n)), "ping-pong");
    const auto t0 = Clock::now();
    check(ping(a.w, b.r, n), "ping-pong");
    const auto t1 = Clock::now();
    ::close(a.w);  // the peer sees EOF and exits
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(b.r);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Failure(kExitFailure,
                      fmt::format("worker: peer process {}", describe_wait_status(status)));
    return us_per(t1 - t0, n);
}

double pingpong_threads(std::uint64_t n) {
    Pipe a = make_pipe(), b = make_pipe();
    int peer_err = 0;
    std::thread peer([&] { peer_err = echo(a.r, b.w); });
    int err = ping(a.w, b.r, warmup_of(n));
    const auto t0 = Clock::now();
    if (err == 0) err = ping(a.w, b.r, n);
    const auto t1 = Clock::now();
    ::close(a.w);  // the peer sees EOF and returns
    peer.join();
    for (int fd : {a.r, b.r, b.w}) ::close(fd);
    check(err, "ping-pong");
    check(peer_err, "peer thread");
    return us_per(t1 - t0, n);
}

double pingpong(std::uint64_t n, bool threads) {
    return threads ? pingpong_threads(n) : pingpong_processes(n);
}

// The same four pipe operations as a round trip, with no second party: the
// cost of the syscalls alone, which no amount of spinning can go below. A
// round trip's four calls follow each other in any schedule, so all of
// them count.
double floor_one_thread(std::uint64_t n, bool) {
    Pipe a = make_pipe(), b = make_pipe();
    auto trip = [&](std::uint64_t count) {
        for (std::uint64_t i = 0; i < count; ++i) {
            for (const Pipe& p : {a, b}) {
                if (int err = put_byte(p.w); err != 0) return err;
                if (int got = get_byte(p.r); got <= 0) return got == 0 ? EPIPE : -got;
            }
        }
        return 0;
    };
    check(trip(warmup_of(n)), "floor");
    const auto t0 = Clock::now();
    check(trip(n), "floor");
    const auto t1 = Clock::now();
    for (int fd : {a.r, a.w, b.r, b.w}) ::close(fd);
    return us_per(t1 - t0, n);
}

constexpr Loop kPingpongLoops[] = {
    {"pingpong",
     "N 1-byte round trips over two pipes between two processes (or two threads); prints the "
     "mean µs per round trip",
     pingpong, true},
    {"floor",
     "the same pipe traffic within one thread, the least it can cost here; prints the mean µs "
     "per round trip",
     floor_one_thread},
};

bool shim_loaded() {
    bool found = false;
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            if (info->dlpi_name != nullptr && is_shim_entry(info->dlpi_name)) {
                *static_cast<bool*>(data) = true;
                return 1;
            }
            return 0;
        },
        &found);
    return found;
}

}  // namespace

std::span<const Loop> pingpong_loops() {
    return kPingpongLoops;
}

std::vector<std::pair<const CLI::App*, Action>> define_loops(CLI::App& app,
                                                             std::span<const Loop> loops) {
    std::vector<std::pair<const CLI::App*, Action>> out;
    for (const Loop& loop : loops) {
        struct Values {
            bool threads = false;
            bool expect_shim = false, expect_no_shim = false;
            std::uint64_t n = 0;
        };
        auto v = std::make_shared<Values>();
        CLI::App* sub = app.add_subcommand(std::string(loop.name), std::string(loop.help));
        if (loop.threads) sub->add_flag("--threads", v->threads, "two threads, not processes");
        CLI::Option* yes =
            sub->add_flag("--expect-shim", v->expect_shim, "fail unless libpipespin.so is loaded");
        sub->add_flag("--expect-no-shim", v->expect_no_shim, "fail if libpipespin.so is loaded")
            ->excludes(yes);
        add_count(*sub, "N", v->n, 1, 1'000'000'000, "how many operations")
            ->default_str("")
            ->required();
        out.emplace_back(sub, [v, loop](Args) {
            if ((v->expect_shim || v->expect_no_shim) && shim_loaded() != v->expect_shim)
                throw Failure(kExitFailure,
                              fmt::format("worker: {} is {}loaded, but this configuration "
                                          "needs it {}",
                                          kLibraryName, v->expect_shim ? "not " : "",
                                          v->expect_shim ? "loaded" : "absent"));
            fmt::print("{:.4f}\n", loop.run(v->n, v->threads));  // may be negative: a difference
            return kExitOk;
        });
    }
    return out;
}

}  // namespace pipespin::cli::worker

namespace pipespin::cli {

Action define_pingpong_worker(CLI::App& app) {
    app.description("What `pipespin pingpong` runs once per sample, in each configuration.");
    return dispatch(app, worker::define_loops(app, worker::pingpong_loops()));
}

}  // namespace pipespin::cli
