// Per-fd state: a dense, statically allocated array of atomic slots indexed
// by fd. Nothing here allocates or locks; every operation is a few atomic
// loads and stores, so it is safe from any thread and from signal handlers.
//
// The table is a cache of what each fd is. glibc closes and opens fds behind
// our back (fclose, opendir, posix_spawn), so an entry may be stale; a stale
// entry can only make the shim probe a fd it need not (the probes are
// harmless on any fd) or skip a spin it could have made. Each slot carries a
// generation that every invalidation bumps, so a classification that raced
// with a close is never stored.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/policy.h"
#include "core/stats.h"

namespace pipespin {

enum class Dir : std::uint8_t { Read = 0, Write = 1 };

// Counters (stats.h: calls, bytes, waits, spins, spin_hits, spin_ns,
// sleep_ns) and policy state for one direction of one fd. The counters stay
// on the fd's own cache lines; forgetting the fd folds them into the table's
// process-wide totals.
struct DirState : IoCounters {
    PolicyState policy;  // owned by the spin policy
};

struct alignas(64) FdSlot {
    // low 32 bits: FdBits; high 32 bits: generation.
    std::atomic<std::uint64_t> word{0};
    DirState dir[2];
};

namespace fdbits {
inline constexpr std::uint32_t kKnown = 1u << 0;     // classified (else unknown)
inline constexpr std::uint32_t kPipe = 1u << 1;      // a pipe or FIFO
inline constexpr std::uint32_t kReadable = 1u << 2;  // opened for reading
inline constexpr std::uint32_t kWritable = 1u << 3;  // opened for writing
inline constexpr std::uint32_t kNoNowait = 1u << 4;  // RWF_NOWAIT unsupported here
inline constexpr std::uint32_t kFifo = 1u << 5;      // with kPipe: a named FIFO, not pipe()'s
}  // namespace fdbits

struct FdInfo {
    FdSlot* slot = nullptr;  // null: out of range or not a pipe
    std::uint64_t word = 0;  // the word the decision was made on
    std::uint32_t bits() const noexcept { return static_cast<std::uint32_t>(word); }
    bool pipe() const noexcept { return slot != nullptr && (bits() & fdbits::kPipe); }
    bool can(Dir d) const noexcept {
        return pipe() && (bits() & (d == Dir::Read ? fdbits::kReadable : fdbits::kWritable));
    }
    bool nowait_ok() const noexcept { return !(bits() & fdbits::kNoNowait); }
    StatKind kind() const noexcept {
        return (bits() & fdbits::kFifo) ? StatKind::Fifo : StatKind::Pipe;
    }
};

// Classifies an unknown fd: returns FdBits (kKnown set), or 0 when the fd
// could not be examined (then nothing is cached).
using Classifier = std::uint32_t (*)(int fd) noexcept;

class FdTable {
public:
    static constexpr int kSize = 1 << 16;

    // The slot's current info, classifying it first if unknown.
    FdInfo lookup(int fd, Classifier classify) noexcept;
    // pipe()/pipe2() returned these fds.
    void set_pipe(int rfd, int wfd) noexcept;
    // The fd was closed, replaced (dup2 target) or created by a call whose
    // result we do not classify: forget what we knew.
    void forget(int fd) noexcept;
    void forget_range(unsigned lo, unsigned hi) noexcept;
    void forget_all() noexcept { forget_range(0, kSize - 1); }
    // RWF_NOWAIT answered EOPNOTSUPP on this fd: fall back to poll.
    void set_no_nowait(const FdInfo& info) noexcept;

    FdSlot* slot(int fd) noexcept { return (fd >= 0 && fd < kSize) ? &slots_[fd] : nullptr; }
    // One past the highest fd ever classified: bounds scans over the table so
    // that they never fault in pages nobody used.
    int high_water() const noexcept { return high_water_.load(std::memory_order_relaxed); }

    // Process-wide counters: folded slots, and poll waits (counted there
    // directly).
    ProcessCounters& process() noexcept { return process_; }
    // Every counter of the process: the folded totals plus the live slots.
    // Off the hot path (a scan up to high_water()).
    void snapshot(StatsSnapshot& out) const noexcept;
    // Zeroes every counter (a child after fork reports only its own).
    void reset_counters() noexcept;

private:
    void store_fresh(int fd, std::uint32_t bits) noexcept;
    void note_used(int fd) noexcept;
    std::atomic<int> high_water_{0};
    ProcessCounters process_;
    FdSlot slots_[kSize];
};

// The production classifier: fstat + F_GETFL through raw syscalls.
std::uint32_t classify_fd(int fd) noexcept;

}  // namespace pipespin
