#include "cli/run_summary.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cli/stats/lines.h"
#include "cli/util/spawn.h"
#include "cli/util/temp_dir.h"
#include "cli/util/text.h"

namespace pipespin::cli {
namespace {

// Where the run's lines go, and where reading them starts.
struct LineSource {
    std::string path;
    std::uint64_t offset = 0;  // the size the user's file had before the run
};

LineSource choose_source(const TempDir& tmp) {
    const char* user = std::getenv("PIPESPIN_STATS");
    const std::string_view u = user != nullptr ? user : "";
    if (!u.empty() && u != "stderr" && u.find("%p") == std::string_view::npos) {
        struct stat st {};
        const std::uint64_t size =
            ::stat(user, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
        return {std::string(u), size};
    }
    if (!u.empty())
        fmt::print(stderr,
                   "pipespin: warning: run --summary: PIPESPIN_STATS={} is not a file it can read "
                   "back; the run's lines go to a private file instead\n",
                   printable(u));
    LineSource s{tmp.path() + "/stats.jsonl", 0};
    ::setenv("PIPESPIN_STATS", s.path.c_str(), 1);
    return s;
}

std::string read_from(const LineSource& s) {
    std::ifstream in(s.path, std::ios::binary);
    if (!in) return {};
    in.seekg(static_cast<std::streamoff>(s.offset));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---- the child ------------------------------------------------------------------

volatile sig_atomic_t g_child = 0;

void pass_on(int sig) {
    if (g_child > 0) ::kill(g_child, sig);
}

constexpr int kIgnored[] = {SIGINT, SIGQUIT};
constexpr int kPassedOn[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

// Starts cmd; an exec that fails is a Failure here, as `run` without
// --summary reports it (the child tells through a close-on-exec pipe).
pid_t start(Args cmd) {
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        throw Failure(kExitFailure, fmt::format("run: pipe: {}", std::strerror(errno)));
    const pid_t pid = ::fork();
    if (pid < 0) throw Failure(kExitFailure, fmt::format("run: fork: {}", std::strerror(errno)));
    if (pid == 0) {
        ::close(report[0]);
        ::execvp(cmd[0], cmd.data());
        const int err = errno;
        (void)!::write(report[1], &err, sizeof err);
        ::_exit(err == ENOENT ? kExitNotFound : kExitCannotRun);
    }
    ::close(report[1]);
    int err = 0;
    ssize_t n;
    while ((n = ::read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    ::close(report[0]);
    if (n == sizeof err) {
        ::waitpid(pid, nullptr, 0);
        throw Failure(
            err == ENOENT ? kExitNotFound : kExitCannotRun,
            fmt::format("run: cannot execute '{}': {}", printable(cmd[0]), std::strerror(err)));
    }
    return pid;
}

int wait_for(pid_t pid) {
    g_child = pid;
    struct sigaction pass {};
    pass.sa_handler = pass_on;
    sigemptyset(&pass.sa_mask);
    pass.sa_flags = SA_RESTART;
    for (int sig : kPassedOn) ::sigaction(sig, &pass, nullptr);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    return status;
}

// ---- the table ------------------------------------------------------------------

struct Row {
    std::string program;
    std::size_t processes = 0;
    Counters total;
};

std::string hit_rate(const Counters& c) {
    return c.spins == 0 ? "-"
                        : fmt::format("{:.1f}%", 100.0 * static_cast<double>(c.spin_hits) /
                                                     static_cast<double>(c.spins));
}

Json row_json(const Row& r) {
    const Counters& c = r.total;
    return {{"program", r.program},
            {"processes", r.processes},
            {"calls", c.calls},
            {"waits", c.waits},
            {"spins", c.spins},
            {"spin_hits", c.spin_hits},
            {"hit_rate",
             c.spins == 0
                 ? Json(nullptr)
                 : json_number(static_cast<double>(c.spin_hits) / static_cast<double>(c.spins), 4)},
            {"sleeps_avoided", c.spin_hits},
            {"spin_ms", json_number(static_cast<double>(c.spin_ns) / 1e6, 3)},
            {"sleep_ms", json_number(static_cast<double>(c.sleep_ns) / 1e6, 3)}};
}

void print_row(const Row& r) {
    const Counters& c = r.total;
    fmt::print(stderr, "  {:<16} {:>6} {:>11} {:>9} {:>9} {:>7} {:>9} {:>11.3f} {:>11.3f}\n",
               printable(r.program).substr(0, 16), r.processes, c.calls, c.waits, c.spins,
               hit_rate(c), c.spin_hits, static_cast<double>(c.spin_ns) / 1e6,
               static_cast<double>(c.sleep_ns) / 1e6);
}

Json exit_json(int status) {
    if (WIFSIGNALED(status))
        return {{"status", nullptr},
                {"signal", WTERMSIG(status)},
                {"signal_name", fmt::format("SIG{}", sigabbrev_np(WTERMSIG(status))
                                                         ? sigabbrev_np(WTERMSIG(status))
                                                         : "?")}};
    return {{"status", WIFEXITED(status) ? WEXITSTATUS(status) : 1},
            {"signal", nullptr},
            {"signal_name", nullptr}};
}

void report(Args cmd, int status, double wall_s, const std::string& text, const JsonOutput& json) {
    LoadedStats st;
    add_stats_text(st, text, "the run's statistics");
    std::map<std::string, Row> rows;
    Row total{"total", 0, {}};
    for (const ProcessRecord& r : st.records) {
        Row& row = rows[r.program];
        row.program = r.program;
        ++row.processes;
        row.total += r.counters.total();
        ++total.processes;
        total.total += r.counters.total();
    }
    std::vector<std::string> words(cmd.begin(), cmd.end());
    Json doc = {
        {"command", words},  {"exit", exit_json(status)}, {"wall_s", json_number(wall_s, 6)},
        {"lines", st.lines}, {"programs", Json::array()}, {"total", row_json(total)}};
    for (const auto& [name, row] : rows) doc["programs"].push_back(row_json(row));
    if (!emit_json("run", json, doc)) return;
    fmt::print(stderr, "\n pipespin summary for {} ({}, {:.3f} s):\n\n", shell_join(words),
               describe_wait_status(status), wall_s);
    if (st.records.empty()) {
        fmt::print(stderr, "  no process wrote statistics: {}\n\n",
                   WIFSIGNALED(status) ? "a process killed by a signal writes none"
                                       : "the shim was not loaded (a static or setuid program?)");
        return;
    }
    fmt::print(stderr, "  {:<16} {:>6} {:>11} {:>9} {:>9} {:>7} {:>9} {:>11} {:>11}\n", "program",
               "procs", "calls", "waits", "spins", "hit %", "avoided", "spin ms", "asleep ms");
    for (const auto& [name, row] : rows) print_row(row);
    print_row(total);
    fmt::print(stderr,
               "\n  calls: reads, writes and waits the shim saw; waits: those that found the "
               "pipe not ready;\n  avoided: spins that found it ready (a sleep avoided); spin "
               "ms: CPU spent spinning;\n  asleep ms: time blocked after a spin that missed.\n\n");
}

// As a shell shows a child killed by a signal: this process dies of it
// too (its parent's wait says so), without a core file of its own.
[[noreturn]] void die_like(int status) {
    const int sig = WTERMSIG(status);
    std::fflush(stdout);
    std::fflush(stderr);
    const struct rlimit none { 0, 0 };
    ::setrlimit(RLIMIT_CORE, &none);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    std::_Exit(128 + sig);  // a signal that does not kill (SIGCHLD...)
}

}  // namespace

int run_with_summary(Args cmd, const JsonOutput& json, void (*ready)()) {
    int status = 0;
    {  // the private file goes before a signal is re-raised (no destructor runs then)
        const TempDir tmp("pipespin-run");
        const LineSource source = choose_source(tmp);
        ready();
        const auto begin = std::chrono::steady_clock::now();
        // Ignored only after the fork: an ignored signal stays ignored across
        // exec, and CMD must get the terminal's ^C as it would without us.
        struct sigaction old[std::size(kIgnored)];
        for (std::size_t i = 0; i < std::size(kIgnored); ++i)
            ::sigaction(kIgnored[i], nullptr, &old[i]);
        const pid_t pid = start(cmd);
        for (int sig : kIgnored) ::signal(sig, SIG_IGN);
        status = wait_for(pid);
        for (std::size_t i = 0; i < std::size(kIgnored); ++i)
            ::sigaction(kIgnored[i], &old[i], nullptr);
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        std::fflush(stdout);
        report(cmd, status, wall_s, read_from(source), json);
    }
    if (WIFSIGNALED(status)) {
        fmt::print(stderr, "pipespin: {} was killed by signal {} ({})\n", printable(cmd[0]),
                   WTERMSIG(status), ::strsignal(WTERMSIG(status)));
        die_like(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailure;
}

}  // namespace pipespin::cli
