// Per-process statistics: what the shim saw and did, per fd kind (anonymous
// pipe, named FIFO) and direction (read, write, poll), and their rendering
// as one JSON line.
//
// Contract: nothing here allocates, locks or calls libc beyond plain memory
// operations, so it may run in a destructor, in an exec wrapper, in a child
// after fork or vfork, and in a signal handler. Counters on the hot path are
// relaxed atomics that live in the fd's own slot (fd_table.h); a slot's
// counters are folded into the process-wide totals when its fd is forgotten,
// so closing a pipe loses nothing and a new pipe on the same number starts
// from zero.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "core/options.h"

namespace pipespin {

enum class StatKind : std::uint8_t { Pipe = 0, Fifo = 1 };
enum class StatDir : std::uint8_t { Read = 0, Write = 1, Poll = 2 };
inline constexpr int kStatKinds = 2;
inline constexpr int kStatDirs = 3;

// A plain snapshot of one set of counters (counters.def).
struct Counters {
#define PIPESPIN_CALL_COUNTER(name, help) std::uint64_t name = 0;
#include "core/counters.def"
#define PIPESPIN_WAIT_COUNTER(name, help) std::uint64_t name = 0;
#define PIPESPIN_DERIVED_COUNTER(name, expr, help) \
    std::uint64_t name() const noexcept {          \
        return expr;                               \
    }
#include "core/counters.def"

    bool any() const noexcept {
        return (0
#define PIPESPIN_COUNTER(name, help) | name
#include "core/counters.def"
                ) != 0;
    }
    Counters& operator+=(const Counters& o) noexcept;
};

// Mode fixed spins on every wait; where a direction's spins mostly missed
// (kFixedMissSpins or more, fewer than half of them hits), it paid CPU (and,
// with both ends on one CPU, time) for nothing, which adaptive mode would
// not have. The shim's exit report and `pipespin stats` flag it alike.
inline constexpr std::uint64_t kFixedMissSpins = 64;
constexpr bool fixed_mostly_missed(std::uint64_t spins, std::uint64_t hits) noexcept {
    return spins >= kFixedMissSpins && 2 * hits < spins;
}

// The same counters as relaxed atomics (DirState derives from this).
struct IoCounters {
#define PIPESPIN_CALL_COUNTER(name, help) std::atomic<std::uint64_t> name{0};
#include "core/counters.def"
#define PIPESPIN_WAIT_COUNTER(name, help) std::atomic<std::uint64_t> name{0};
#include "core/counters.def"

    Counters load() const noexcept;
    // Moves the counters out (each one exchanged with zero): for the fold.
    Counters take() noexcept;
    void add(const Counters& c) noexcept;
    void clear() noexcept;
};

// The cheapest count there is, for the counters every call bumps: a plain
// load and store, no locked instruction. Two threads on the same fd and
// direction at the same instant may lose one increment; these are
// statistics, and the counters the policy acts on are not affected.
[[gnu::always_inline]] inline void bump(std::atomic<std::uint64_t>& c,
                                        std::uint64_t by = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// Which family of hooks a wait came through (engine.h): read and write,
// poll, the stdio reads, readv/writev, select/pselect/ppoll, epoll,
// splice/tee. Counted per process for the waits that spun, so that one can
// tell which hooks engaged in a program.
// One row each: identifier, the name in a statistics line's "via" object
// and the exit summary, the index in the public header (pipespin.h).
#define PIPESPIN_VIAS(X)                     \
    X(Io, "io", PIPESPIN_VIA_IO)             \
    X(Poll, "poll", PIPESPIN_VIA_POLL)       \
    X(Stdio, "stdio", PIPESPIN_VIA_STDIO)    \
    X(Vector, "vector", PIPESPIN_VIA_VECTOR) \
    X(Select, "select", PIPESPIN_VIA_SELECT) \
    X(Epoll, "epoll", PIPESPIN_VIA_EPOLL)    \
    X(Splice, "splice", PIPESPIN_VIA_SPLICE)
enum class Via : std::uint8_t {
#define PIPESPIN_VIA_ID(id, name, index) id,
    PIPESPIN_VIAS(PIPESPIN_VIA_ID)
#undef PIPESPIN_VIA_ID
};
inline constexpr std::string_view kViaNames[] = {
#define PIPESPIN_VIA_NAME(id, name, index) name,
    PIPESPIN_VIAS(PIPESPIN_VIA_NAME)
#undef PIPESPIN_VIA_NAME
};
inline constexpr int kViaCount = static_cast<int>(std::size(kViaNames));
std::string_view via_name(Via v) noexcept;  // "io", "poll", "stdio", ...

struct ViaCount {
    std::uint64_t spins = 0, spin_hits = 0;
};

// How a wait ended (docs/stats.md, "wait_ns" and "wait_log2"): a spin caught
// it (hit), a spin missed and the real call slept (miss), or no spin ran and
// the real call slept (plain: a fresh fd's watched wait, a wait that found
// no CPU free for the peer, or, with statistics lines on, a read made
// without a look that lasted kPlainFloorNs or more: the control arm's waits).
enum class WaitEnd : std::uint8_t { Hit = 0, Miss = 1, Plain = 2 };
inline constexpr int kWaitEnds = 3;
std::string_view wait_end_name(WaitEnd e) noexcept;  // "hit", "miss", "plain"

// A log2 histogram of wait durations: bucket 0 holds waits under 2^10 ns
// (~1 µs), bucket b (1 <= b < kWaitBuckets - 1) those of [2^(b+9), 2^(b+10))
// ns, the last one everything from 2^(kWaitBuckets+8) ns (~268 ms) on.
inline constexpr int kWaitBuckets = 20;
constexpr int wait_bucket(std::uint64_t ns) noexcept {
    if (ns < (1u << 10)) return 0;
    const int b = static_cast<int>(std::bit_width(ns)) - 10;
    return b < kWaitBuckets ? b : kWaitBuckets - 1;
}
// A read made without a look counts as a (plain) wait from this long on:
// longer than a pipe read takes without sleeping, shorter than a sleep and
// a wake-up from another CPU (the start of bucket 3).
inline constexpr std::uint64_t kPlainFloorNs = 1u << 12;

struct WaitHist {
    std::uint64_t n[kWaitBuckets] = {};
    std::uint64_t ns = 0;  // their summed duration
    std::uint64_t count() const noexcept {
        std::uint64_t t = 0;
        for (std::uint64_t x : n) t += x;
        return t;
    }
    WaitHist& operator+=(const WaitHist& o) noexcept {
        for (int b = 0; b < kWaitBuckets; ++b) n[b] += o.n[b];
        ns += o.ns;
        return *this;
    }
};

// The waits of one fd kind and direction, by how they ended.
using WaitHists = WaitHist[kWaitEnds];

struct StatsSnapshot {
    Counters c[kStatKinds][kStatDirs];
    ViaCount via[kViaCount];
    WaitHists wait[kStatKinds][kStatDirs];
    Counters& at(StatKind k, StatDir d) noexcept {
        return c[static_cast<int>(k)][static_cast<int>(d)];
    }
    const Counters& at(StatKind k, StatDir d) const noexcept {
        return c[static_cast<int>(k)][static_cast<int>(d)];
    }
    Counters total(StatDir d) const noexcept;  // both kinds
    Counters total() const noexcept;           // everything
};

// Process-wide totals: what folded slots left behind, the poll waits
// (counted here directly: a poll is not one fd's), and the spins per hook
// family.
struct ProcessCounters {
    IoCounters c[kStatKinds][kStatDirs];
    // Per hook family, each on its own cache line.
    struct alignas(64) ViaCounters {
        std::atomic<std::uint64_t> spins{0}, spin_hits{0};
    } via[kViaCount];
    // The wait histograms, per process rather than per fd: a wait is a slow
    // path (microseconds at least), so two relaxed increments on a
    // process-wide line cost nothing that matters, and the per-fd state
    // stays small.
    struct WaitCounters {
        std::atomic<std::uint64_t> n[kWaitBuckets]{};
        std::atomic<std::uint64_t> ns{0};
    } wait[kStatKinds][kStatDirs][kWaitEnds];
    IoCounters& at(StatKind k, StatDir d) noexcept {
        return c[static_cast<int>(k)][static_cast<int>(d)];
    }
    void count_via(Via v, bool hit) noexcept;
    void count_wait(StatKind k, StatDir d, WaitEnd e, std::uint64_t ns) noexcept;
    void add_to(StatsSnapshot& s) const noexcept;
    void clear() noexcept;
};

std::string_view kind_name(StatKind k) noexcept;
std::string_view dir_name(StatDir d) noexcept;

// A/B arms: none (no experiment), control (mode off), treatment.
enum class Arm : std::uint8_t { None = 0, Control = 1, Treatment = 2 };
std::string_view arm_name(Arm a) noexcept;

// The arm a process with this pid draws in an experiment of `ab` percent
// treatment: splitmix64(seed << 32 ^ pid) % 100 < ab. Deterministic, so a
// run can be reproduced and `pipespin stats` can check the split.
Arm draw_arm(std::uint32_t ab, std::uint32_t seed, std::uint32_t pid) noexcept;
// The arm after a (re-)resolution of the options: none when `ab` was not
// configured anywhere; otherwise the arm the process already has, or, the
// first time, a fresh draw. A live reload never moves a process from one arm
// to the other.
Arm settle_arm(Arm current, bool ab_configured, const Options& o, std::uint32_t pid) noexcept;
// Switchback (ab_period): a process alternates between the arms every
// period_ns from anchor_ns (the start of the program image; a forked child
// keeps its parent's schedule), beginning with `first` (the arm settle_arm()
// drew). The arm in force at `now_ns`; `first` itself when period_ns is 0 or
// there is no experiment.
Arm arm_at(Arm first, std::uint64_t anchor_ns, std::uint64_t period_ns,
           std::uint64_t now_ns) noexcept;
// The next switch after now_ns (0: none).
std::uint64_t next_switch_ns(Arm first, std::uint64_t anchor_ns, std::uint64_t period_ns,
                             std::uint64_t now_ns) noexcept;
// The options the process runs with in its arm: the control arm is mode off
// (interposed, never spinning), so that the comparison isolates the spin.
// Called after every resolution of the options (start-up and reload).
void apply_arm(Options& o, Arm arm) noexcept;

// What a stats line says about the process besides its counters.
enum class StatsEvent : std::uint8_t { Exit = 0, Exec = 1, Interval = 2 };
std::string_view event_name(StatsEvent e) noexcept;

// The process's resource usage (getrusage(RUSAGE_SELF)) since its previous
// line (docs/stats.md says which window the first line of an image covers).
struct Rusage {
    std::uint64_t utime_us = 0, stime_us = 0;  // user and system CPU time
    std::uint64_t nvcsw = 0, nivcsw = 0;       // voluntary, involuntary context switches
    std::uint64_t maxrss_kb = 0;               // peak resident set so far (not a difference)
};

struct StatsHeader {
    std::int64_t pid = 0;
    std::int64_t ppid = 0;
    const char* program = "";  // NUL-terminated; rendered bounded and escaped
    StatsEvent event = StatsEvent::Exit;
    Arm arm = Arm::None;
    std::uint64_t start_unix_us = 0;  // when this process (image, or forked child) began
    std::uint64_t wall_us = 0;        // how long it has run
    std::uint32_t seq = 0;            // lines written by this process before this one
    Rusage ru;
};

// The version of the line render_stats_line() writes (docs/stats.md and
// docs/stats.schema.json describe every version).
inline constexpr int kStatsLineVersion = 2;

// The longest line render_stats_line() makes: below PIPE_BUF, so that one
// write(2) with O_APPEND lands whole even on a pipe.
inline constexpr std::size_t kStatsLineMax = 4000;

// Renders one JSON object and a newline into buf (at most size bytes, and
// never more than kStatsLineMax). `config` is the resolved configuration
// (before the arm is applied). If the full line does not fit, the config
// texts are left out and "truncated":true is set, then also the wait
// histograms' buckets (their sums stay). Returns the length, or 0 if even
// that does not fit (size too small).
std::size_t render_stats_line(char* buf, std::size_t size, const StatsHeader& h,
                              const Options& config, const StatsSnapshot& s) noexcept;

// PIPESPIN_STATS with every "%p" replaced by pid, into buf. False if it does
// not fit.
bool expand_stats_path(std::string_view pattern, std::int64_t pid, char* buf,
                       std::size_t size) noexcept;

}  // namespace pipespin
