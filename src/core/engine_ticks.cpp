// The slow path's periodic work and hooks (engine.h: StatsTick, ReloadHook,
// SpinHook): the statistics tick, the live re-check of the config file, and
// the deferred work before a first spin. Each runs from a call that is
// about to spin or block, at most once per its period per process: one
// thread wins the slot, the others go on at once.
#include "core/engine_detail.h"

namespace pipespin {

namespace engine {

// The live re-check, at most every reload_ms per process: one thread wins
// the slot, the others go on at once. A coarse clock (a few ns, no syscall)
// is enough for a period in milliseconds. The first chance only starts the
// period: the file was read at start-up, and looking again at once cost
// every process that waits (and every forked child of one that had not
// waited yet) a stat, two signal-mask calls and two pages written.
void maybe_reload() noexcept {
    const ReloadHook hook = g_runtime.reload_hook.load(std::memory_order_acquire);
    if (hook == nullptr) return;
    const std::uint64_t period_ms = g_runtime.reload_ms.load(std::memory_order_relaxed);
    if (period_ms == 0) return;
    const std::uint64_t now = sys::coarse_ns();
    std::uint64_t next = g_runtime.reload_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_runtime.reload_next_ns.compare_exchange_strong(
                          next, now + period_ms * 1'000'000u, std::memory_order_relaxed))
        return;
    if (next == 0) return;
    const int saved_errno = errno;
    hook();
    sys::restore_errno(saved_errno);
}

// The statistics tick (interval lines, A/B switches), once its deadline has
// passed: one thread wins the slot (the deadline moves out of reach while it
// runs), the others go on at once. A coarse clock (a few ns, no syscall) is
// enough for periods in seconds.
void maybe_stats_tick() noexcept {
    const StatsTick tick = g_runtime.stats_tick.load(std::memory_order_acquire);
    if (tick == nullptr) [[likely]]
        return;
    const std::uint64_t now = sys::coarse_ns();
    std::uint64_t next = g_runtime.stats_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_runtime.stats_next_ns.compare_exchange_strong(next, UINT64_MAX,
                                                                       std::memory_order_relaxed))
        return;
    const int saved_errno = errno;  // the hooks may call libc; the caller's errno stays
    const std::uint64_t after = tick(now);
    sys::restore_errno(saved_errno);
    g_runtime.stats_next_ns.store(after != 0 ? after : UINT64_MAX, std::memory_order_relaxed);
}

}  // namespace engine

using engine::g_runtime;

void set_reload_hook(ReloadHook hook) noexcept {
    g_runtime.reload_hook.store(hook, std::memory_order_release);
}

void set_spin_hook(SpinHook hook) noexcept {
    if (g_runtime.spin_hook.load(std::memory_order_relaxed) != hook)
        g_runtime.spin_hook.store(hook, std::memory_order_release);
}

void set_stats_tick(StatsTick tick, std::uint64_t deadline_ns) noexcept {
    g_runtime.stats_next_ns.store(deadline_ns, std::memory_order_relaxed);
    g_runtime.stats_tick.store(tick, std::memory_order_release);
}

}  // namespace pipespin
