#include "interpose/stats.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <atomic>

#include "core/engine.h"
#include "core/out.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// Written at start-up, at a reload and in a fork child; read by the writers.
std::atomic<bool> g_enabled{false};
// Where the lines go, the resolved configuration they report (before the
// arm) and the arm, as the last resolution settled them. A live reload runs
// while other threads may be writing a line, so it fills the slot the
// writers are not using and then switches them over (a writer takes the
// index once per line; only a line rendered across two reloads, reload_ms
// apart, could see a slot change under it).
struct Settled {
    TextValue dest;
    Options config;
    Arm arm = Arm::None;
};
Settled g_settled[2];
std::atomic<int> g_current{0};
const Settled& settled() noexcept {
    return g_settled[g_current.load(std::memory_order_acquire)];
}
// Whose counters these are (a forked child without statistics keeps its
// parent's until a reload turns them on: stats_resolve()).
std::int64_t g_pid = 0;
char g_program[64] = "";
std::uint64_t g_start_ns = 0;  // monotonic
std::uint64_t g_start_unix_us = 0;
std::atomic<std::uint32_t> g_seq{0};
std::atomic<bool> g_exit_written{false};
std::atomic<bool> g_warned{false};  // this process said its lines cannot be written

std::uint64_t unix_us() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

void mark_start() noexcept {
    g_pid = sys::raw(SYS_getpid);
    g_start_ns = sys::now_ns();
    g_start_unix_us = unix_us();
    g_seq.store(0, kRelaxed);
    g_exit_written.store(false, kRelaxed);
    g_warned.store(false, kRelaxed);
}

void interval_tick() noexcept {
    stats_write(StatsEvent::Interval);
}

// The destination, opened for one line (or 2 for stderr): nothing stays
// open in the host, and a file removed (rotated) meanwhile is created
// afresh. sys::open_append: a FIFO without a reader must not hang the host,
// and only a regular file (or a terminal) takes the lines. Returns 0, an
// errno, or kNotRegular.
constexpr int kNotRegular = -1;

int open_dest(const TextValue& dest, int& fd) noexcept {
    fd = 2;
    if (dest.view() == "stderr") return 0;
    char path[sizeof(TextValue::s) + 32];
    if (!expand_stats_path(dest.view(), g_pid, path, sizeof path)) return ENAMETOOLONG;
    const long r = sys::open_append(path);
    if (r == sys::kNotRegular) return kNotRegular;
    if (r < 0) return static_cast<int>(-r);
    fd = static_cast<int>(r);
    return 0;
}

// One line, one write(2).
int write_line(const TextValue& dest, const char* line, std::size_t n) noexcept {
    int fd;
    if (const int err = open_dest(dest, fd); err != 0) return err;
    const bool opened = fd != 2;
    long w;
    do {
        w = sys::write(fd, line, n);
    } while (w == -EINTR);
    if (opened) sys::close(fd);
    if (w < 0) return static_cast<int>(-w);
    return static_cast<std::size_t>(w) == n ? 0 : EIO;  // a short write: the line is torn
}

// The first line that cannot be written says so, once per process, where
// the shim's messages go (log_file when set, else stderr): at once, since
// the process may not get another chance (it is about to exec, or its
// stderr will be closed). Raw writes only: an _exit or an interval line
// may come from inside a signal handler.
void warn_unwritable(const TextValue& dest, int err) noexcept {
    if (g_warned.exchange(true)) return;
    char line[384];
    Out o{line, sizeof line};
    o.put("cannot write statistics to '");
    o.printable(dest.view(), 240);
    o.put("': ");
    const char* name = err == kNotRegular ? nullptr : strerrorname_np(err);
    o.put(err == kNotRegular ? "not a regular file or a terminal"
          : name != nullptr  ? name
                             : "error");
    report::write(LogLevel::Warn, line, false);
}

}  // namespace

void stats_start() noexcept {
    // The pid and the clock wait until lines (or an A/B draw) need them
    // (stats_resolve()): most processes never write a line.
    const char* name = program_invocation_short_name;
    std::size_t n = 0;
    if (name != nullptr)
        for (; name[n] != '\0' && n + 1 < sizeof g_program; ++n) g_program[n] = name[n];
    g_program[n] = '\0';
}

void stats_after_fork() noexcept {
    // A new process with its own counters (the engine's after_fork_child())
    // and clock. It keeps its parent's arm: it goes on running the same
    // program, usually talking to its parent through pipes, and a pair
    // split across arms would measure neither (an exec draws afresh: the
    // constructor runs again). Without statistics lines nothing here is
    // needed, and nothing is written (stats_resolve() catches up if a
    // reload turns them on).
    if (!g_enabled.load(std::memory_order_acquire)) return;
    mark_start();
    const Runtime& rt = runtime();
    const std::uint64_t period = rt.stats_period_ns.load(kRelaxed);
    if (period != 0) set_stats_tick(rt.stats_tick.load(kRelaxed), period);
}

Arm stats_resolve(Options& options, bool ab_configured) noexcept {
    const bool lines = !options.stats.empty();
    // No lines, no experiment, now or before: nothing to keep (a start-up
    // that writes nothing here).
    static bool kept = false;
    if (!lines && !ab_configured && !kept) return Arm::None;
    kept = true;
    if (lines && !g_enabled.load(std::memory_order_relaxed)) {
        // Lines turn on: this process's pid and clock from now. After
        // start-up (a reload), what was counted before is not in them (in
        // a forked child without a fork handler, that includes its
        // parent's counts).
        mark_start();
        if (g_ready.load(std::memory_order_acquire)) fd_table().new_process();
    } else if (g_pid == 0) {
        g_pid = sys::raw(SYS_getpid);  // for the arm's draw
    }
    const int cur = g_current.load(std::memory_order_relaxed);
    Settled& next = g_settled[1 - cur];
    next.config = options;
    next.arm =
        settle_arm(g_settled[cur].arm, ab_configured, options, static_cast<std::uint32_t>(g_pid));
    apply_arm(options, next.arm);
    next.dest = options.stats;
    g_current.store(1 - cur, std::memory_order_release);
    g_enabled.store(!options.stats.empty(), std::memory_order_release);
    // A reload that leaves the interval as it was keeps its schedule:
    // frequent reloads must not keep pushing the next line away.
    const std::uint64_t period =
        options.stats.empty() ? 0 : std::uint64_t{options.stats_interval} * 1'000'000'000u;
    const Runtime& rt = runtime();
    const bool ticking = rt.stats_tick.load(std::memory_order_relaxed) != nullptr;
    if (period != rt.stats_period_ns.load(kRelaxed) || (period != 0) != ticking)
        set_stats_tick(interval_tick, period);
    return next.arm;
}

void stats_write(StatsEvent event) noexcept {
    if (!g_enabled.load(std::memory_order_acquire)) return;
    // A vfork child, or one made by clone() or _Fork() without fork's
    // handlers, shares or copied its parent's counters: not its to report.
    if (sys::raw(SYS_getpid) != g_pid) return;
    const Settled& now = settled();
    StatsSnapshot snap;
    stats_snapshot(snap);
    StatsHeader h;
    h.pid = g_pid;
    h.ppid = sys::raw(SYS_getppid);
    h.program = g_program;
    h.event = event;
    h.arm = now.arm;
    h.start_unix_us = g_start_unix_us;
    h.wall_us = (sys::now_ns() - g_start_ns) / 1000u;
    h.seq = g_seq.fetch_add(1, kRelaxed);
    char line[kStatsLineMax + 1];
    const std::size_t n = render_stats_line(line, sizeof line, h, now.config, snap);
    if (n == 0) return;
    const int err = write_line(now.dest, line, n);
    // An exec line's failure is left to the program it starts: the same pid,
    // most often the same destination, and its own line and warning.
    if (err != 0 && event != StatsEvent::Exec) warn_unwritable(now.dest, err);
}

void stats_exit() noexcept {
    // The pid first: a vfork child shares this memory, and its _exit must
    // not mark its parent's line as written.
    if (!g_enabled.load(std::memory_order_acquire) || sys::raw(SYS_getpid) != g_pid) return;
    if (g_exit_written.exchange(true)) return;
    stats_write(StatsEvent::Exit);
}

bool stats_enabled() noexcept {
    return g_enabled.load(std::memory_order_acquire);
}

bool stats_to_stderr() noexcept {
    return g_enabled.load(std::memory_order_acquire) && settled().dest.view() == "stderr";
}

void stats_before_stderr_closes() noexcept {
    if (!g_enabled.load(std::memory_order_acquire) || g_warned.load(kRelaxed) ||
        sys::raw(SYS_getpid) != g_pid)
        return;
    const Settled& now = settled();
    int fd;
    if (const int err = open_dest(now.dest, fd); err != 0) {
        warn_unwritable(now.dest, err);
    } else if (fd != 2) {
        sys::close(fd);
    }
}

}  // namespace pipespin::interpose
