// The process's settings (Runtime) and fd table, and what changes them:
// configure() at start-up and on each live reload, pipe(), fork().
#include "core/engine_detail.h"

namespace pipespin {

namespace engine {

constinit Runtime g_runtime;
PIPESPIN_COLD constinit FdTable g_table;

}  // namespace engine

std::atomic<bool>* const FdTable::used_mark = &engine::g_runtime.table_used;

using namespace engine;

Runtime& runtime() noexcept {
    return g_runtime;
}

FdTable& fd_table() noexcept {
    return table();
}

// A new pipe is quiet (FdTable::set_quiet: its calls pass through, and
// nothing about it is written after pipe() returns) where the process has
// learnt that its new pipes are one-shots (FreshPrior::made_one_shot(): a
// shell's $(...), xargs's pipe per child), in adaptive mode, while nobody
// reads the counters (a quiet pipe's calls are not counted). A forked child
// that closes or reads such a pipe then writes no page of the table, nor
// does its parent: after each fork a page written is a copy-on-write fault.
// One pipe in FreshPrior::kQuietSample (by the clock's low bits: a counter
// would be a write) is made as before, so that the process goes on learning
// what its pipes do (note_close(), and the calls of begin_io_full()), and
// turns quiet off when a pipe made here lives on.
namespace {
bool quiet_pipe() noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    return g_runtime.mode.load(kRelaxed) == Mode::Adaptive &&
           g_runtime.classify_looks.load(kRelaxed) > 1 && g_runtime.prior.made_one_shot() &&
           ((sys::now_ns() >> 6) % FreshPrior::kQuietSample) != 0;
}
}  // namespace

void note_pipe(int rfd, int wfd, bool nonblock) noexcept {
    if (g_runtime.inert.load(std::memory_order_relaxed)) return;
    if (quiet_pipe())
        table().set_quiet(rfd, wfd, sys::coarse_ns());
    else
        table().set_pipe(rfd, wfd, nonblock);
}

void note_close(int fd) noexcept {
    constexpr std::uint32_t kMadeReadEnd =
        fdbits::kKnown | fdbits::kPipe | fdbits::kMade | fdbits::kReadable;
    const auto bits = static_cast<std::uint32_t>(table().peek(fd));
    if ((bits & (kMadeReadEnd | fdbits::kWritable)) == kMadeReadEnd)
        g_runtime.prior.made_pipe_closed(table().calls_of(fd, Dir::Read));
    table().forget(fd);
}

void fds_unseen() noexcept {
    if (g_runtime.fds_all_seen.load(std::memory_order_relaxed))
        g_runtime.fds_all_seen.store(false, std::memory_order_relaxed);
}

void after_fork_child(bool counters_read) noexcept {
    if (counters_read) table().new_process();
}

void stats_snapshot(StatsSnapshot& out) noexcept {
    table().snapshot(out);
}

bool anything_spins() noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    const bool any_dir = g_runtime.spin_dir[static_cast<int>(Dir::Read)].load(kRelaxed) ||
                         g_runtime.spin_dir[static_cast<int>(Dir::Write)].load(kRelaxed) ||
                         g_runtime.spin_poll.load(kRelaxed);
    return !SpinPolicy::never_spins(any_dir, g_runtime.params());
}

namespace {
// Writes only what changes (see Runtime); true if it changed.
template <class T, class V>
bool update(std::atomic<T>& field, V value) noexcept {
    const T v = static_cast<T>(value);
    if (field.load(std::memory_order_relaxed) == v) return false;
    field.store(v, std::memory_order_relaxed);
    return true;
}
}  // namespace

void counters_read() noexcept {
    update(g_runtime.counters_asked, true);
    update(g_runtime.classify_looks, 1u);
}

void configure(const Options& o, int usable_cpus) noexcept {
    const bool mode_changed = update(g_runtime.mode, o.mode());
    const bool ceiling_changed =
        update(g_runtime.max_spin_ns, static_cast<std::uint64_t>(o.spin_us) * 1000u);
    update(g_runtime.usable_cpus, usable_cpus);
    update(g_runtime.probe, o.probe());
    update(g_runtime.spin_dir[static_cast<int>(Dir::Read)], o.spin_read != 0);
    update(g_runtime.spin_dir[static_cast<int>(Dir::Write)], o.spin_write != 0);
    update(g_runtime.spin_poll, o.spin_poll != 0);
    update(g_runtime.count_bytes, !o.stats.empty());
    PolicyParams next;
    next.mode = o.mode();
    next.max_spin_ns = static_cast<std::uint64_t>(o.spin_us) * 1000u;
    next.usable_cpus = usable_cpus;
    const bool may_spin =
        !SpinPolicy::never_spins(o.spin_read != 0 || o.spin_write != 0 || o.spin_poll != 0, next);
    update(g_runtime.classify, may_spin || !o.stats.empty());
    const bool counted = !o.stats.empty() || o.log() >= LogLevel::Info ||
                         g_runtime.counters_asked.load(std::memory_order_relaxed);
    update(g_runtime.classify_looks, counted ? 1u : Runtime::kLazyLooks);
    const bool inert = o.mode() == Mode::Off && o.stats.empty() && o.log() < LogLevel::Info;
    update(g_runtime.inert, inert);
    // A changed period starts counting now; the first period of all starts
    // at the first chance (reload_next_ns 0, maybe_reload()): a clock read
    // here would be a page fault in every process, most of which never wait.
    if (update(g_runtime.reload_ms, o.reload_ms))
        g_runtime.reload_next_ns.store(sys::coarse_ns() + std::uint64_t{o.reload_ms} * 1'000'000u,
                                       std::memory_order_relaxed);
    // Not at start-up: nothing was learnt yet, and the look at the table
    // would fault in a page of it that the process may never use.
    const bool learnt = g_runtime.configured.load(std::memory_order_relaxed);
    update(g_runtime.configured, true);
    // The fast lanes count calls that the old settings said need only be
    // counted: settle them, and let the next call of each fd decide anew.
    if (learnt && table().blocks_mapped() != 0) table().void_fast();
    if (learnt && (mode_changed || ceiling_changed) && table().blocks_mapped() != 0) {
        // What adaptive mode measured was under other settings. Threads in
        // a call meanwhile may write a stale field back: that costs one
        // epoch's accuracy, never correctness.
        table().for_each_state([](int, std::uint64_t, FdState& s) {
            for (DirState& st : s.dir) st.policy.relearn();  // a program's hints stay
        });
        g_runtime.wake.reset();
        g_runtime.prior.reset();
    }
}

}  // namespace pipespin
