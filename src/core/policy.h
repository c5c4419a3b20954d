// The spin decision: whether, and how long, one wait on one fd and direction
// may spin. This is the only place that decides (the engine, core/engine.h,
// asks it before every wait); docs/policy.md explains why it decides this
// way.
//
// Contract: pure. It reads and writes only the PolicyState it is given (and
// the process-wide WakeEstimate and RunQueueGate), takes the time and the
// length of the host's run queue from functions the caller passes, and
// calls nothing else, so unit tests drive it with a simulated clock. Every
// field is a relaxed atomic: threads sharing a fd may race and lose an
// update, which costs a little accuracy, never correctness.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/options.h"

namespace pipespin {

struct PolicyParams {
    Mode mode = Mode::Fixed;
    std::uint64_t max_spin_ns = 50'000;  // spin_us: the budget (fixed) or ceiling (adaptive)
    int usable_cpus = 2;                 // nobody to spin for on one CPU
    bool oversubscribed = false;         // more runnable tasks than CPUs: spinning steals
    bool thread_off = false;             // the calling thread never spins (pipespin.h)
};

// What happened around one wait, reported after the real call returned.
struct WaitObservation {
    bool spun = false;            // a spin ran
    bool watched = false;         // no spin, but the wait was timed (a fresh fd, see FreshPrior)
    bool spin_hit = false;        // the pipe became ready during the spin
    bool gave_cpu = false;        // the spin's yield ran another task on this CPU
    std::uint64_t spin_ns = 0;    // time spent spinning
    std::uint64_t block_ns = 0;   // time in the real (possibly blocking) call after the spin
    std::uint64_t budget_ns = 0;  // the budget the spin had (or would have had, watched)
    // A missed spin whose block the engine watched (SpinPolicy::looks_at_run_delay):
    // how long of block_ns this thread was runnable, waiting for a CPU
    // (/proc/thread-self/schedstat). Unknown otherwise.
    bool run_delay_known = false;
    std::uint64_t run_delay_ns = 0;
};

// Phases of the per-fd experiment (adaptive mode).
enum class Phase : std::uint8_t {
    Fresh = 0,     // a new fd's first waits: the process's prior decides (FreshPrior)
    TrySpin = 1,   // measuring an epoch with spinning (where waits are short)
    TryPlain = 2,  // measuring an epoch without any spin or probe
    Spin = 3,      // spinning won: exploit for a while
    Plain = 4,     // not spinning won: exploit for a while
};

// Every field of PolicyState, once: X(type, name, what it is).
#define PIPESPIN_POLICY_FIELDS(X)                                                            \
    X(std::uint64_t, epoch_start_ns, "when the epoch's clock started")                       \
    X(std::uint64_t, epoch_bytes, "bytes moved this epoch")                                  \
    X(std::uint64_t, cost_spin, "ns per KiB moved in the last TrySpin epoch")                \
    X(std::uint64_t, cost_plain, "same, last TryPlain epoch")                                \
    X(std::uint32_t, epoch_calls, "calls this epoch")                                        \
    X(std::uint32_t, plain_call_ns, "ns per call when not spinning last won (saturating)")   \
    X(std::uint16_t, exploit_left, "epochs left in Spin/Plain")                              \
    X(std::uint16_t, exploit_len, "length of the current exploit run")                       \
    X(std::uint16_t, room_credit, "bytes writes may still write without a look (room)")      \
    X(std::uint16_t, room_call, "the direction's calls (mod 2^16) when the credit was used") \
    X(std::uint8_t, phase, "Phase")                                                          \
    X(std::uint8_t, long_waits, "waits this epoch that outlasted the spin")                  \
    X(std::uint8_t, close_misses, "missed spins this epoch the peer answered right after")   \
    X(std::uint8_t, epoch_hit, "a spin hit this epoch")                                      \
    X(std::uint8_t, delay_looks, "missed spins this epoch whose run delay was read")         \
    X(std::uint8_t, last_winner, "Phase::Spin/Plain of the last decision, 0 none")           \
    X(std::uint8_t, epoch_waits, "waits this epoch (spun, or refused a CPU), capped")        \
    X(std::uint8_t, fresh_waits, "waits while Fresh")                                        \
    X(std::uint8_t, fresh_hits, "of those, the ones a spin caught (or would have)")          \
    X(std::uint8_t, try_watched, "TrySpin watched its first wait (slow from start)")         \
    X(std::uint8_t, pipe_pages, "the pipe's size in pages; 0 not asked, UINT8_MAX none")

// Room credit: a write's look is never the write itself (docs/policy.md,
// "What a look may do"), so a look that finds room costs a system call the
// program does not make. Instead a write's look asks how full the pipe is
// (FIONREAD), and the room it proves free lets the writes that follow go
// without a look until they have written that much (PolicyState::
// room_credit). Only the pipe's readers take data out, so what was free
// stays free for this writer, except for what other writers put in: then
// a write may wait without a spin, as it would without the shim.
// The pipe holds `pipe_pages` pages (F_GETPIPE_SZ); `queued` bytes are in
// it. The kernel fills a pipe page by page, a write of up to PIPE_BUF
// bytes going into the last page when it fits and into a new one when it
// does not, so pages of writes of one size up to PIPE_BUF are at least
// half full (a write that starts a new page did not fit in the half that
// was left). The credit counts the pages `queued` can take at that fill,
// plus the partly read first page, keeps one page spare, and gives the
// rest at half a page each: 0 when the pipe is nearly full. Pages of mixed
// or spliced writes may hold less; the cost of a credit too large is a
// write that waits without a spin.
// At most UINT16_MAX, what PolicyState::room_credit holds.
constexpr std::uint16_t room_credit(std::uint64_t queued, std::uint32_t pipe_pages,
                                    std::uint32_t page) noexcept {
    const std::uint64_t half = page / 2;
    if (half == 0) return 0;
    const std::uint64_t used = queued == 0 ? 0 : (queued + half - 1) / half + 1;
    if (used + 2 > pipe_pages) return 0;
    const std::uint64_t credit = (pipe_pages - used - 1) * half;
    return credit > UINT16_MAX ? UINT16_MAX : static_cast<std::uint16_t>(credit);
}

// The program's hint for one direction of a fd (pipespin_fd_hint() in
// include/pipespin/pipespin.h), as PolicyState::hint holds it: 0 none (the
// policy decides), kHintNever, or a spin budget in ns (at least 1000: never
// SpinPolicy::kWatchOnly).
inline constexpr std::uint32_t kHintNone = 0;
inline constexpr std::uint32_t kHintNever = UINT32_MAX;
inline constexpr std::uint32_t kHintMaxNs = 1'000'000'000;  // 1 s, as spin_us

// All zero is a fresh fd's state: zero pages need no initialisation.
struct PolicyState {
#define PIPESPIN_FIELD(type, name, what) std::atomic<type> name{0};
    PIPESPIN_POLICY_FIELDS(PIPESPIN_FIELD)
#undef PIPESPIN_FIELD
    // Not learnt but told: the program's hint (kHintNone, kHintNever or a
    // budget in ns). A hinted fd is steered by its hint alone: the policy
    // neither decides nor learns for it.
    std::atomic<std::uint32_t> hint{kHintNone};

    // Back to a fresh fd's state, hint included (a close). Stores only
    // fields that are not zero already: after fork() each store into a page
    // shared with the parent is a copy-on-write fault.
    void reset() noexcept;
    // What another fd learnt and was told (a dup of it: the same file).
    void copy_from(const PolicyState& o) noexcept;
    // Forgets what was learnt, keeps the hint (new settings; a new hint).
    void relearn() noexcept;
    // Sets the hint; a change starts the learning afresh, so that the
    // policy, when it decides again, decides from what it sees from then on.
    void set_hint(std::uint32_t h) noexcept;
    Phase get_phase() const noexcept {
        return static_cast<Phase>(phase.load(std::memory_order_relaxed));
    }
};

// Where a pipe fd came from: the first waits of fresh fds of one origin tend
// to end alike (a shell's command substitutions each make a pipe here whose
// one read waits for a process to start; a worker's inherited pipes answer
// at once), so the prior is kept per origin.
enum class Origin : std::uint8_t {
    Made = 0,       // pipe()/pipe2() in this process (or a forked parent)
    Inherited = 1,  // a pipe the process found open (from its parent, or made unseen)
    Fifo = 2,       // a named FIFO opened by path
};
inline constexpr int kOrigins = 3;

// What the process has learnt about the first waits of its fresh fds, per
// origin and direction (docs/policy.md, "Fresh fds"). Most pipes on a host
// live for one or two reads; a fresh fd spins on its first waits only once
// the process has seen such first waits end within a spin's budget. Starts
// undecided (not spinning); a forked child keeps its parent's.
class FreshPrior {
public:
    static constexpr std::int8_t kScoreMax = 8;
    static constexpr std::int8_t kHitGain = 1;   // a first wait a spin caught (or would have)
    static constexpr std::int8_t kMissCost = 2;  // one it did not: spin only above 2/3 hits
    // New pipes made here are quiet (FdTable::set_quiet) while the pipes
    // made here have been one-shots (docs/policy.md, part 0), judged by
    // what they did, not by how long their waits took (a busy host answers
    // a $(...) at once as often as an idle one makes it wait): a read end
    // closed after 1 to kOneShotCalls calls (read once or twice, to its
    // EOF) is a one-shot, -1; a pipe made here that reaches kLongCalls
    // calls (either end) is not, and the score goes back to 0. Quiet at or
    // below -kQuietScore: four one-shots in a row.
    static constexpr std::int8_t kQuietScore = 4;
    static constexpr std::uint64_t kOneShotCalls = 4;
    static constexpr std::uint64_t kLongCalls = 64;
    // One new pipe in kQuietSample is made as before, tracked, so that the
    // process goes on learning what its pipes do while the rest are quiet.
    static constexpr unsigned kQuietSample = 16;
    struct Lane {
        std::atomic<std::int8_t> score{0};
        bool spins() const noexcept { return score.load(std::memory_order_relaxed) > 0; }
        void observe(bool would_hit) noexcept;
    };
    Lane& lane(Origin o, int dir) noexcept { return lanes_[static_cast<int>(o)][dir & 1]; }
    // Have the pipes made here been one-shots (see kQuietScore)?
    bool made_one_shot() const noexcept {
        return life_.load(std::memory_order_relaxed) <= -kQuietScore;
    }
    // The read end of a pipe made here was closed after `calls` calls.
    void made_pipe_closed(std::uint64_t calls) noexcept;
    // A call on a pipe made here, its `calls`-th (either end).
    void made_pipe_call(std::uint64_t calls) noexcept {
        if (calls >= kLongCalls && calls < 2 * kLongCalls) made_pipe_lives();
    }
    void reset() noexcept;

private:
    void made_pipe_lives() noexcept;
    Lane lanes_[kOrigins][2];
    std::atomic<std::int8_t> life_{0};  // see kQuietScore
};

// Process-wide estimate of what a sleep plus wake-up costs on this host,
// learnt from the real calls that blocked after a spin missed: the shortest
// of those blocks are (almost) pure wake-up latency. Starts at the ceiling.
class WakeEstimate {
public:
    std::uint64_t get(std::uint64_t ceiling_ns) const noexcept;
    void observe(std::uint64_t block_ns, std::uint64_t ceiling_ns) noexcept;
    void reset() noexcept { ns_.store(0, std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> ns_{0};  // 0: nothing learnt yet
};

class SpinPolicy {
public:
    // Nothing on this thread can spin in a direction (or family of waits)
    // that the settings switch on or off with `dir_on`: then no call ever
    // takes the slow path, whatever the fd, and the engine runs the
    // slow-path hooks from every call instead (the control arm of an A/B
    // test must report on the same schedule as the treatment, and a
    // process in mode off must notice a retuned config).
    static bool never_spins(bool dir_on, const PolicyParams& p) noexcept {
        return !dir_on || p.mode == Mode::Off || p.max_spin_ns == 0 || p.usable_cpus < 2 ||
               p.thread_off;
    }
    // Tunables, named so that tests and docs can refer to them.
    static constexpr std::uint32_t kEpochCalls = 64;  // calls per measured epoch
    static constexpr std::uint32_t kMarginPct = 5;    // spinning must win by this much
    static constexpr std::uint16_t kExploitMin = 4;   // epochs; doubles while confirmed
    // A winner confirmed by a clear margin (the loser cost kEarlyFactor
    // times as much or more: a ping-pong's TryPlain epoch, ended early)
    // is trusted this many times as long, not twice: a new spread ping-pong
    // reaches kExploitMaxSpin after 4 measuring pairs instead of 7, each
    // pair an epoch of sleeps on each side (~9% of perf bench's 20000
    // round trips with 7).
    static constexpr std::uint32_t kClearGrowth = 4;
    // A winner is trusted at most this many epochs before the next pair of
    // measuring epochs. Spinning may be trusted longer: a spinning fd still
    // stops within kLongWaitLimit waits when waits grow long, and each
    // measuring pair costs a ping-pong two epochs of sleeps (one per side);
    // a fd that does not spin must find out soon that spinning would pay.
    static constexpr std::uint16_t kExploitMaxSpin = 256;
    static constexpr std::uint16_t kExploitMax = 64;  // not spinning
    // A measuring epoch that after kEarlyCalls calls (or 2x, 4x as many)
    // costs kEarlyFactor times what the other way cost last ends there:
    // such a loser cannot win in the calls left, and each of them pays.
    // A TrySpin epoch without a single wait by then ends too: spinning
    // cannot matter to a fd that never waits (a writer into a pipe with
    // room), and not spinning wins, as a repeat when it won before.
    static constexpr std::uint32_t kEarlyCalls = 8;
    static constexpr std::uint64_t kEarlyFactor = 2;
    // Outlasted spins before giving up: for the rest of the epoch, and in a
    // TrySpin epoch without a hit, for the experiment (not spinning wins);
    // one for a fd slow from its start (each first wait long) on which
    // spinning never won.
    static constexpr std::uint8_t kLongWaitLimit = 2;
    static constexpr std::uint64_t kLongWaitFactor = 4;  // "outlasted": wait > 4x budget
    // A spin that missed and whose real call then had the answer sooner
    // than the spin had lasted (block < spin): the peer answered as soon as
    // this thread stopped spinning, as a peer waiting for this thread's very
    // CPU does (docs/policy.md, part 2). kCloseMissLimit of them in an epoch
    // without a hit stop spinning as long waits do.
    static constexpr std::uint8_t kCloseMissLimit = 2;
    // A spin that caught its answer only after its yield ran another task
    // (WaitObservation::gave_cpu: the peer, on this CPU) is a close miss,
    // except while spinning is exploited: a pair that spun spread and that
    // the scheduler then put on one CPU (a sleep's wake-up pulls the reader
    // to its waker's CPU) is spread again by the balancer only while one
    // end stays runnable on that CPU, as a yielding spinner does, and two
    // ends sleeping in turn there never look unbalanced. In a Spin epoch
    // such spins end the run only at kYieldHitLimit without a hit of its
    // own (a pair pinned to one CPU, which no balancer spreads, pays at
    // most that many spins of kYieldAt looks an epoch).
    static constexpr std::uint8_t kYieldHitLimit = 32;
    // A missed spin whose real call then blocked for longer than the spin
    // may still be one the peer could not answer for want of this CPU:
    // both ends spinning on one CPU, each waits for the other's spin to
    // give up. Timing alone cannot tell it from a spread peer that wakes
    // slowly; the run delay across the block can (most of the block spent
    // runnable, against none). The engine reads it around such a block, at
    // most kRunDelayLooks times per epoch, only while the epoch has had no
    // hit (after one the close misses no longer stop spinning), and a miss
    // whose run delay was more than half its block counts as a close miss.
    static constexpr std::uint8_t kRunDelayLooks = 4;
    // A fresh fd's first kFreshWaits waits follow the process's prior; then
    // its own experiment starts (TrySpin if one of them was caught or would
    // have been, else TryPlain). A fresh fd that has not waited by its
    // kEarlyCalls-th call will not: not spinning wins at once, as in a
    // TrySpin epoch without waits. One that waits rarely starts its
    // experiment after kEpochCalls calls.
    static constexpr std::uint8_t kFreshWaits = 2;
    // A fresh fd none of whose first waits was short measures after this
    // many epochs of not spinning (then the runs grow from kExploitMin).
    // One, not kExploitMin: a spread ping-pong whose first two round trips
    // both outlast the budget (its peer starting up, then a wake-up of an
    // idle virtual CPU: 40-200 µs on this project's VMs) slept through 4
    // epochs of 40-200 µs round trips, 5-24 ms of a 45 ms perf bench, where
    // a sparse producer's fd pays for one measuring pair earlier (at most
    // kLongWaitLimit spins).
    static constexpr std::uint16_t kFreshPlainEpochs = 1;
    // A run of not spinning ends early, and the fd measures again, when one
    // of its epochs costs per call more than kDriftFactor times what a call
    // cost when not spinning won (its TryPlain epoch, or a TrySpin epoch
    // that never waited): a cost this far above the one the decision was
    // made on says the workload changed under it (the scheduler moved a
    // co-located peer to a CPU of its own, and every plain round trip
    // became a cross-CPU wake-up).
    static constexpr std::uint64_t kDriftFactor = 4;
    // A watched wait (kWatchOnly) went through a sleep and a wake-up, which
    // a spin that caught its peer would not have: it counts as outlasting
    // the budget (kLongWaitFactor) only beyond the slowest wake-up seen on
    // this project's VMs (an idle virtual CPU's, 40-200 µs), so that a
    // slow wake-up alone never passes for a slow peer.
    static constexpr std::uint64_t kSlowWakeNs = 200'000;

    // budget_ns() for a fresh fd whose prior says not to spin, and for the
    // first wait of a TrySpin epoch on a fd slow from its start (its first
    // waits all long, spinning never won on it): look first (a wait must be
    // seen to be timed), do not spin, time the real call.
    static constexpr std::uint64_t kWatchOnly = 1;
    // Budget in ns for the next wait on this fd; 0 means call the real
    // function at once, without even a look; kWatchOnly, see above. `lane`
    // is the fd's origin and direction in the process's FreshPrior.
    // Precedence, first match: nothing spins (mode off, spin_us 0, one CPU)
    // or the thread is switched off: 0; the fd's hint; the mode (fixed: the
    // budget; adaptive: what the fd learnt).
    static std::uint64_t budget_ns(const PolicyState& s, const PolicyParams& p,
                                   const WakeEstimate& wake, const FreshPrior::Lane& lane) noexcept;
    // How long a spin may run here now (the budget of a spinning phase).
    static std::uint64_t spin_ns(const PolicyParams& p, const WakeEstimate& wake) noexcept;
    // Every call on a tracked pipe (waiting or not), with the bytes it moved
    // (1 for a poll). Closes epochs and runs the experiment; asks the clock
    // only when an epoch starts or ends.
    using NowFn = std::uint64_t (*)() noexcept;
    static void on_call(PolicyState& s, const PolicyParams& p, std::uint64_t bytes,
                        NowFn now) noexcept {
        if (learns(s, p)) on_call_learning(s, bytes, now);
    }
    // The policy learns (and runs its experiment) for this fd: adaptive
    // mode, and no hint. Inline, with the early outs of on_call(),
    // count_early() and on_wait() that ask it: a fixed-mode call costs
    // them a compare each (the spinning round trip's path).
    static bool learns(const PolicyState& s, const PolicyParams& p) noexcept {
        return p.mode == Mode::Adaptive && s.hint.load(std::memory_order_relaxed) == kHintNone;
    }
    // A call about to be made without a spin, whose result the policy does
    // not need: any call outside adaptive mode, or one in an exploit phase
    // (Spin, Plain), whose epochs only count calls. Counts it now, before
    // the real call, and returns true; returns false (and counts nothing)
    // in a measuring epoch, whose cost needs the bytes the call moves:
    // on_call() after the real call then counts it. Asks the clock only at
    // the first and last call of a Plain epoch (kDriftFactor; once where
    // the last of one epoch of a run is the next one's first).
    static bool count_early(PolicyState& s, const PolicyParams& p, NowFn now) noexcept {
        return !learns(s, p) || count_early_learning(s, now);
    }
    // Whether the fd is in a measuring epoch (adaptive mode, not hinted),
    // whose cost counts the calls that waited: a wait on a set that will not
    // spin still needs its first look there, to tell a wait from a ready set
    // as the other way's epoch did. Elsewhere count_early() counts the call.
    static bool measures(const PolicyState& s, const PolicyParams& p) noexcept;
    // The calls of a run of not spinning need nothing but their count: how
    // many of the calls after this one may be counted without asking the
    // policy (the engine's fast lane, fd_table.h), then settled with
    // settle_inline(). For a fd in Plain, not hinted, whose epoch has
    // started (its first call, which may start the epoch's clock, was
    // counted; in a run of not spinning that goes on, the last call of the
    // epoch before is the first of the next: count_early()): the calls up
    // to, not including, the epoch's last, which ends it (and may start
    // measuring). 0 otherwise. budget_ns() would say
    // 0 for each of them and count_early() would only count it. Adaptive
    // mode only (the caller's check).
    static std::uint32_t inline_run(const PolicyState& s) noexcept {
        if (s.phase.load(std::memory_order_relaxed) != static_cast<std::uint8_t>(Phase::Plain) ||
            s.hint.load(std::memory_order_relaxed) != kHintNone)
            return 0;
        const std::uint32_t calls = s.epoch_calls.load(std::memory_order_relaxed);
        return calls >= 1 && calls < kEpochCalls - 1 ? kEpochCalls - 1 - calls : 0;
    }
    // n calls were counted on the fast lane (inline_run()): the epoch
    // counts them, as count_early() would have one by one.
    static void settle_inline(PolicyState& s, std::uint32_t n) noexcept {
        s.epoch_calls.store(s.epoch_calls.load(std::memory_order_relaxed) + n,
                            std::memory_order_relaxed);
    }
    // Whether a spin must first find a CPU free for the peer (the caller's
    // look at the run queue): in adaptive mode, unless the fd is hinted
    // (a hint says how to wait whatever the load, as fixed mode does).
    static bool needs_free_cpu(const PolicyState& s, const PolicyParams& p) noexcept {
        return learns(s, p);
    }
    // A wait could not spin because no CPU is free for the peer: do not
    // spin (nor look at the run queue again) on this fd for the rest of the
    // epoch.
    static void on_no_cpu(PolicyState& s) noexcept;
    // A spin just missed: should the engine read the thread's run delay
    // before and after the real call (kRunDelayLooks)? True counts a look.
    static bool looks_at_run_delay(PolicyState& s, const PolicyParams& p) noexcept;
    // After the real call: does the run delay across it matter to on_wait()
    // (a miss that was neither a close miss by its timing nor a long wait)?
    // If not, the engine does not read it a second time.
    static bool run_delay_matters(const WaitObservation& o) noexcept;
    // A wait finished (after the real call returned). `lane` (null for the
    // waits on sets: poll, select, epoll) learns from a fresh fd's waits.
    static void on_wait(PolicyState& s, const PolicyParams& p, WakeEstimate& wake,
                        const WaitObservation& o, FreshPrior::Lane* lane) noexcept {
        if (learns(s, p)) on_wait_learning(s, p, wake, o, lane);
    }

private:
    // The bodies of on_call(), count_early() and on_wait() where learns().
    static void on_call_learning(PolicyState& s, std::uint64_t bytes, NowFn now) noexcept;
    static bool count_early_learning(PolicyState& s, NowFn now) noexcept;
    static void on_wait_learning(PolicyState& s, const PolicyParams& p, WakeEstimate& wake,
                                 const WaitObservation& o, FreshPrior::Lane* lane) noexcept;
};

// The run-queue gate: a spin that needs a free CPU for the peer
// (SpinPolicy::needs_free_cpu) is refused while the host's runnable tasks,
// which count the spinning thread, outnumber the CPUs the process may use:
// spinning then steals the CPU the peer needs. One per process. The run
// queue is read at most once every kPeriodNs per process, by the one
// thread that wins the slot, from a thread about to spin anyway; the
// others use the last answer. The host counts as oversubscribed at once
// when more than twice as many tasks as CPUs are runnable, and otherwise
// only once kConfirmLooks looks in a row said so: a third task that is
// runnable for a moment (a kernel thread, a shell between two commands)
// shows in one look in fifty on an idle 2-CPU host, and a refusal that
// lands in a fd's measuring epoch hands the experiment to not spinning for
// several epochs (docs/policy.md, part 4).
class RunQueueGate {
public:
    static constexpr std::uint64_t kPeriodNs = 5'000'000;
    static constexpr std::uint8_t kConfirmLooks = 2;
    // Runnable tasks on the host now, or < 0 if unknown (sys::running_tasks).
    using RunningFn = long (*)() noexcept;

    // May a spin with state s start now? Asks the clock and the run queue
    // only when the fd needs a free CPU for its peer.
    bool cpu_free_for_peer(const PolicyState& s, const PolicyParams& p, SpinPolicy::NowFn now,
                           RunningFn running) noexcept {
        if (!SpinPolicy::needs_free_cpu(s, p)) return true;
        return !host_oversubscribed(now(), p.usable_cpus, running);
    }
    // More runnable tasks than usable CPUs in the last kConfirmLooks looks,
    // or more than twice as many in the last one (a new look if kPeriodNs
    // have passed since the last one).
    bool host_oversubscribed(std::uint64_t now, int usable_cpus, RunningFn running) noexcept;

    // Looks in a row, up to kConfirmLooks, that saw more runnable tasks than CPUs.
    std::atomic<std::uint8_t> over_looks{0};
    std::atomic<std::uint64_t> next_ns{0};  // when to look again
};

}  // namespace pipespin
