#include "interpose/stats.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "core/engine.h"
#include "core/out.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "interpose/settings.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// Written at start-up, at a reload and in a fork child; read by the writers.
std::atomic<bool> g_enabled{false};
// Where the lines go, the resolved configuration they report (before the
// arm), the arm and the schedules, as the last resolution (or A/B switch)
// settled them. A live reload runs while other threads may be writing a
// line: the state is kept as words written and read as relaxed atomics
// under a sequence count (a seqlock: odd while a write is under way), and
// each reader copies it whole, again if a write overlapped its copy. The
// writer never waits for a reader (a reader may be a signal handler on the
// writer's own thread, or gone with a fork); one writer at a time
// (stats_resolve(): the constructor, or under the settings lock).
struct Settled {
    TextValue dest;
    Options config;
    Arm first = Arm::None;          // the arm drawn once (settle_arm)
    Arm arm = Arm::None;            // the arm in force (arm_at: ab_period)
    std::uint64_t period_ns = 0;    // ab_period, when there is an experiment
    std::uint64_t interval_ns = 0;  // stats_interval, when lines are on
};
static_assert(std::is_trivially_copyable_v<Settled>);
constexpr std::size_t kSettledWords = (sizeof(Settled) + 7) / 8;
// Zero until the first publish(): Arm::None and no interval, which is all
// that is read of it before then (stats_resolve()'s `prev`); the rest is
// read only once lines or an experiment are on, that is after a publish().
std::uint64_t g_settled[kSettledWords];
std::atomic<std::uint32_t> g_settled_seq{0};
static_assert(static_cast<int>(Arm::None) == 0);

// A reader that finds a write under way tries again; one that keeps finding
// one (a handler that interrupted the writer on its own thread) takes what
// it copied after this many tries rather than wait for ever.
constexpr int kSettledTries = 1000;

Settled settled() noexcept {
    std::uint64_t words[kSettledWords];
    for (int tries = 0;; ++tries) {
        const std::uint32_t before = g_settled_seq.load(std::memory_order_acquire);
        if ((before & 1) != 0 && tries < kSettledTries) {
            sys::cpu_relax();
            continue;
        }
        for (std::size_t i = 0; i < kSettledWords; ++i)
            words[i] = std::atomic_ref<std::uint64_t>(g_settled[i]).load(kRelaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (g_settled_seq.load(kRelaxed) == before || tries >= kSettledTries) break;
    }
    Settled out;
    std::memcpy(&out, words, sizeof out);
    return out;
}

void publish(const Settled& next) noexcept {
    std::uint64_t words[kSettledWords] = {};
    std::memcpy(words, &next, sizeof next);
    const std::uint32_t seq = g_settled_seq.load(kRelaxed);
    g_settled_seq.store(seq + 1, kRelaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t i = 0; i < kSettledWords; ++i)
        std::atomic_ref<std::uint64_t>(g_settled[i]).store(words[i], kRelaxed);
    g_settled_seq.store(seq + 2, std::memory_order_release);
}
// Whose counters these are (a forked child without statistics keeps its
// parent's until a reload turns them on: stats_resolve()).
std::int64_t g_pid = 0;
char g_program[64] = "";
std::uint64_t g_start_ns = 0;  // monotonic
std::uint64_t g_start_unix_us = 0;
// Where the A/B switchback schedule starts (coarse monotonic ns): the start
// of the program image. A forked child keeps its parent's, so that a pair
// of processes talking through pipes switches arms together.
std::uint64_t g_anchor_ns = 0;
std::atomic<std::uint64_t> g_next_line_ns{0};  // the next interval line (coarse ns)
// getrusage() as the previous line read it (user and system µs, voluntary
// and involuntary switches): each line reports the difference.
std::atomic<std::uint64_t> g_ru_last[4] = {};
std::atomic<std::uint32_t> g_seq{0};
std::atomic<bool> g_exit_written{false};
std::atomic<bool> g_warned{false};  // this process said its lines cannot be written

std::uint64_t unix_us() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

void copy_program_name() noexcept {
    const char* name = program_invocation_short_name;
    std::size_t n = 0;
    if (name != nullptr)
        for (; name[n] != '\0' && n + 1 < sizeof g_program; ++n) g_program[n] = name[n];
    g_program[n] = '\0';
}

void mark_start() noexcept {
    g_pid = sys::own(SYS_getpid);
    g_start_ns = sys::now_ns();
    g_start_unix_us = unix_us();
    g_seq.store(0, kRelaxed);
    g_exit_written.store(false, kRelaxed);
    g_warned.store(false, kRelaxed);
    // A new process's usage starts at zero (fork resets it in the kernel).
    for (auto& v : g_ru_last)
        if (v.load(kRelaxed) != 0) v.store(0, kRelaxed);
}

// last := max(last, now), and what it grew by: lines written at once by two
// threads split the usage between them, never count it twice.
std::uint64_t advance(std::atomic<std::uint64_t>& last, std::uint64_t now) noexcept {
    std::uint64_t prev = last.load(kRelaxed);
    while (now > prev && !last.compare_exchange_weak(prev, now, kRelaxed)) {
    }
    return now > prev ? now - prev : 0;
}

Rusage rusage_since_last_line() noexcept {
    Rusage out;
    struct rusage ru {};
    if (sys::own(SYS_getrusage, RUSAGE_SELF, reinterpret_cast<long>(&ru)) != 0) return out;
    auto us = [](const timeval& tv) {
        return static_cast<std::uint64_t>(tv.tv_sec) * 1000000u +
               static_cast<std::uint64_t>(tv.tv_usec);
    };
    out.utime_us = advance(g_ru_last[0], us(ru.ru_utime));
    out.stime_us = advance(g_ru_last[1], us(ru.ru_stime));
    out.nvcsw = advance(g_ru_last[2], static_cast<std::uint64_t>(ru.ru_nvcsw));
    out.nivcsw = advance(g_ru_last[3], static_cast<std::uint64_t>(ru.ru_nivcsw));
    out.maxrss_kb = static_cast<std::uint64_t>(ru.ru_maxrss);
    return out;
}

// The next time the tick has something to do: an interval line or a switch.
std::uint64_t next_deadline(const Settled& s, std::uint64_t now) noexcept {
    std::uint64_t next = UINT64_MAX;
    if (s.interval_ns != 0) next = g_next_line_ns.load(kRelaxed);
    const std::uint64_t sw = next_switch_ns(s.first, g_anchor_ns, s.period_ns, now);
    if (sw != 0 && sw < next) next = sw;
    return next;
}

void write_line(StatsEvent event, Arm arm) noexcept;

// A reload that holds the settings while a period ends: try again soon.
constexpr std::uint64_t kSwitchRetryNs = 10'000'000;

// engine.h, StatsTick: an A/B switch when a period of ab_period ended (its
// line, marked with the arm it covered, then the other arm for the same
// options), and the interval line when one is due.
std::uint64_t stats_tick(std::uint64_t now) noexcept {
    bool wrote = false;
    {
        const Settled s = settled();
        if (s.period_ns != 0 && arm_at(s.first, g_anchor_ns, s.period_ns, now) != s.arm) {
            sys::SignalsBlocked quiet;  // as reload() (settings.cpp)
            if (!try_lock_settings()) return now + kSwitchRetryNs;
            // The other arm first, then the line of the period that ended:
            // the calls of other threads that the line then counts for the
            // wrong arm are those of the few µs until its snapshot (a call
            // in flight at the switch ends in the arm it began in).
            const Arm ended = s.arm;
            Options options = s.config;
            stats_resolve(options, true);  // settles the arm in force now
            configure(options, runtime().usable_cpus.load(kRelaxed));
            unlock_settings();
            write_line(StatsEvent::Interval, ended);
            wrote = true;
        }
    }
    // A switch's line is an interval line too: the next one an interval later.
    const Settled s = settled();
    if (s.interval_ns != 0 && (wrote || now >= g_next_line_ns.load(kRelaxed))) {
        if (!wrote) stats_write(StatsEvent::Interval);
        g_next_line_ns.store(now + s.interval_ns, kRelaxed);
    }
    return next_deadline(s, now);
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

// One line, one write(2), which can neither kill the host (SIGPIPE,
// SIGXFSZ) nor hold it on a stderr nobody reads (sys::OutputGuard,
// sys::write_out).
int write_line(const TextValue& dest, const char* line, std::size_t n) noexcept {
    const sys::OutputGuard guard;
    int fd;
    if (const int err = open_dest(dest, fd); err != 0) return err;
    const bool opened = fd != 2;
    if (!opened && report::stderr_released()) return 0;  // fd 2 is not stderr now
    const long w = sys::write_out(fd, line, n, opened ? -1 : sys::kStderrWaitMs);
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

void stats_after_fork() noexcept {
    // A new process with its own counters (the engine's after_fork_child())
    // and clock. It keeps its parent's arm: it goes on running the same
    // program, usually talking to its parent through pipes, and a pair
    // split across arms would measure neither (an exec draws afresh: the
    // constructor runs again). Without statistics lines nothing here is
    // needed, and nothing is written (stats_resolve() catches up if a
    // reload turns them on).
    // An A/B switchback schedule goes on as it was (the engine's deadline
    // is the parent's): the pair switches together.
    if (!g_enabled.load(std::memory_order_acquire)) return;
    mark_start();
    const Settled s = settled();
    if (s.interval_ns == 0) return;
    const std::uint64_t now = sys::coarse_ns();
    g_next_line_ns.store(now + s.interval_ns, kRelaxed);
    set_stats_tick(stats_tick, next_deadline(s, now));
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
        copy_program_name();
        if (g_ready.load(std::memory_order_acquire)) fd_table().new_process();
    } else if (g_pid == 0) {
        g_pid = sys::own(SYS_getpid);  // for the arm's draw
    }
    const std::uint64_t now = sys::coarse_ns();
    // The switchback schedule (ab_period) counts from here: at start-up,
    // the image's start.
    if (g_anchor_ns == 0) g_anchor_ns = now;
    const Settled prev = settled();
    Settled next;
    next.config = options;
    next.first = settle_arm(prev.first, ab_configured, options, static_cast<std::uint32_t>(g_pid));
    next.period_ns =
        next.first == Arm::None ? 0 : std::uint64_t{options.ab_period} * 1'000'000'000u;
    next.arm = arm_at(next.first, g_anchor_ns, next.period_ns, now);
    apply_arm(options, next.arm);
    next.dest = options.stats;
    next.interval_ns =
        options.stats.empty() ? 0 : std::uint64_t{options.stats_interval} * 1'000'000'000u;
    // A reload that leaves the interval as it was keeps its schedule:
    // frequent reloads must not keep pushing the next line away.
    if (next.interval_ns != prev.interval_ns)
        g_next_line_ns.store(now + next.interval_ns, kRelaxed);
    publish(next);
    g_enabled.store(!options.stats.empty(), std::memory_order_release);
    // Written only when there is a tick, or was one (Runtime: a page
    // written at start-up is a page fault in every process).
    const bool tick = next.interval_ns != 0 || next.period_ns != 0;
    if (tick || runtime().stats_tick.load(std::memory_order_relaxed) != nullptr)
        set_stats_tick(tick ? stats_tick : nullptr, next_deadline(next, now));
    return next.arm;
}

void stats_write(StatsEvent event) noexcept {
    write_line(event, settled().arm);
}

namespace {

// A line that covered `arm` (the arm in force, or the one a switch ended).
void write_line(StatsEvent event, Arm arm) noexcept {
    if (!g_enabled.load(std::memory_order_acquire)) return;
    // A vfork child, or one made by clone() or _Fork() without fork's
    // handlers, shares or copied its parent's counters: not its to report.
    if (sys::own(SYS_getpid) != g_pid) return;
    const Settled now = settled();
    StatsSnapshot snap;
    stats_snapshot(snap);
    StatsHeader h;
    h.pid = g_pid;
    h.ppid = sys::own(SYS_getppid);
    h.program = g_program;
    h.event = event;
    h.arm = arm;
    h.start_unix_us = g_start_unix_us;
    h.wall_us = (sys::now_ns() - g_start_ns) / 1000u;
    h.seq = g_seq.fetch_add(1, kRelaxed);
    h.ru = rusage_since_last_line();
    char line[kStatsLineMax + 1];
    const std::size_t n = render_stats_line(line, sizeof line, h, now.config, snap);
    if (n == 0) return;
    const int err = write_line(now.dest, line, n);
    // An exec line's failure is left to the program it starts: the same pid,
    // most often the same destination, and its own line and warning.
    if (err != 0 && event != StatsEvent::Exec) warn_unwritable(now.dest, err);
}

}  // namespace

void stats_exit() noexcept {
    // The pid first: a vfork child shares this memory, and its _exit must
    // not mark its parent's line as written.
    if (!g_enabled.load(std::memory_order_acquire) || sys::own(SYS_getpid) != g_pid) return;
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
        sys::own(SYS_getpid) != g_pid)
        return;
    const Settled now = settled();
    int fd;
    if (const int err = open_dest(now.dest, fd); err != 0) {
        warn_unwritable(now.dest, err);
    } else if (fd != 2) {
        sys::close(fd);
    }
}

}  // namespace pipespin::interpose
