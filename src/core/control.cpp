#include "core/control.h"

#include <algorithm>
#include <cerrno>

#include "core/engine.h"
#include "core/fd_table.h"
#include "pipespin/pipespin.h"
#include "platform/sys.h"

namespace pipespin {

constinit thread_local bool t_thread_off [[gnu::tls_model("initial-exec")]] = false;

namespace {

// The public header's indexes are the core's.
static_assert(PIPESPIN_KINDS == kStatKinds && PIPESPIN_STAT_DIRS == kStatDirs &&
              PIPESPIN_VIAS == kViaCount);
static_assert(PIPESPIN_KIND_PIPE == static_cast<int>(StatKind::Pipe) &&
              PIPESPIN_KIND_FIFO == static_cast<int>(StatKind::Fifo));
static_assert(PIPESPIN_STAT_READ == static_cast<int>(StatDir::Read) &&
              PIPESPIN_STAT_WRITE == static_cast<int>(StatDir::Write) &&
              PIPESPIN_STAT_POLL == static_cast<int>(StatDir::Poll));
#define PIPESPIN_VIA_INDEX(id, name, index) static_assert(index == static_cast<int>(Via::id));
PIPESPIN_VIAS(PIPESPIN_VIA_INDEX)
#undef PIPESPIN_VIA_INDEX
static_assert(PIPESPIN_READ == 1 << static_cast<int>(Dir::Read) &&
              PIPESPIN_WRITE == 1 << static_cast<int>(Dir::Write));
static_assert(std::uint64_t{PIPESPIN_HINT_MAX_US} * 1000u == kHintMaxNs);

std::uint32_t hint_of(int budget_us) noexcept {
    if (budget_us == PIPESPIN_HINT_POLICY) return kHintNone;
    if (budget_us == PIPESPIN_HINT_NEVER) return kHintNever;
    return static_cast<std::uint32_t>(budget_us) * 1000u;
}

}  // namespace

int control_fd_hint(int fd, int dirs, int budget_us) noexcept {
    if (dirs <= 0 || (dirs & ~PIPESPIN_BOTH) != 0) return -EINVAL;
    if (budget_us < PIPESPIN_HINT_POLICY || budget_us > PIPESPIN_HINT_MAX_US) return -EINVAL;
    if (fd < 0) return -EBADF;
    FdTable& table = fd_table();
    const long fifo = sys::is_fifo(fd);
    if (fifo < 0) return static_cast<int>(fifo);
    if (fifo == 0) {
        // The table may still think it is the pipe this number named before.
        if (table.peek(fd) & fdbits::kPipe) table.forget(fd);
        return -ENOTSUP;
    }
    FdInfo info = table.lookup(fd, classify_fd);
    if (info.cls != nullptr && !info.pipe()) {
        table.forget(fd);  // a stale class: the number names a pipe now
        info = table.lookup(fd, classify_fd);
    }
    // Closed meanwhile, or no memory for the table's block.
    if (!info.pipe()) return sys::getfl(fd) < 0 ? -EBADF : -ENOMEM;
    const std::uint32_t hint = hint_of(budget_us);
    // A hinted fd is not counted on the fast lane (SpinPolicy::inline_run).
    table.settle_fast(fd, *info.state);
    for (Dir d : {Dir::Read, Dir::Write})
        if (dirs & (1 << static_cast<int>(d)))
            info.state->dir[static_cast<int>(d)].policy.set_hint(hint);
    return 0;
}

int control_thread_spin(int enable) noexcept {
    if (enable != 0 && enable != 1) return -EINVAL;
    const int was = t_thread_off ? 0 : 1;
    t_thread_off = enable == 0;
    return was;
}

int control_get_stats(pipespin_stats* out) noexcept {
    if (out == nullptr || out->size < 2 * sizeof(std::uint32_t)) return -EINVAL;
    counters_read();
    StatsSnapshot snap;
    stats_snapshot(snap);
    pipespin_stats all{};
    for (int k = 0; k < kStatKinds; ++k) {
        for (int d = 0; d < kStatDirs; ++d) {
            const Counters& c = snap.c[k][d];
            pipespin_counters& o = all.c[k][d];
            o.calls = c.calls;
            o.bytes = c.bytes;
            o.waits = c.waits;
            o.spins = c.spins;
            o.spin_hits = c.spin_hits;
            o.spin_ns = c.spin_ns;
            o.sleep_ns = c.sleep_ns;
        }
    }
    for (int v = 0; v < kViaCount; ++v) {
        all.via[v].spins = snap.via[v].spins;
        all.via[v].spin_hits = snap.via[v].spin_hits;
    }
    // As much as both sides know: a caller built against an older header
    // has a shorter struct, a newer one keeps its zeros beyond ours.
    const std::size_t n = std::min<std::size_t>(out->size, sizeof all);
    all.size = static_cast<std::uint32_t>(n);
    __builtin_memcpy(out, &all, n);
    return 0;
}

}  // namespace pipespin
