#include "core/fd_table.h"

#include <fcntl.h>

#include "platform/sys.h"

namespace pipespin {
namespace {

constexpr std::uint64_t kGenOne = 1ull << 32;

std::uint64_t next_gen(std::uint64_t word) noexcept {
    return (word & ~0xffffffffull) + kGenOne;
}

void reset_learning(FdSlot& s) noexcept {
    for (auto& d : s.dir) d.policy.reset();
}

StatKind kind_of(std::uint64_t word) noexcept {
    return (static_cast<std::uint32_t>(word) & fdbits::kFifo) ? StatKind::Fifo : StatKind::Pipe;
}

}  // namespace

FdInfo FdTable::lookup(int fd, Classifier classify) noexcept {
    FdSlot* s = slot(fd);
    if (s == nullptr) return {};
    std::uint64_t w = s->word.load(std::memory_order_acquire);
    if (!(static_cast<std::uint32_t>(w) & fdbits::kKnown)) [[unlikely]] {
        std::uint32_t bits = classify(fd);
        if (bits == 0) return {};
        note_used(fd);
        std::uint64_t fresh = (w & ~0xffffffffull) | bits;
        // Lose the race on purpose: if a close bumped the generation while we
        // looked, our answer may describe the old file, so do not keep it.
        if (!s->word.compare_exchange_strong(w, fresh, std::memory_order_acq_rel)) return {};
        w = fresh;
    }
    if (!(static_cast<std::uint32_t>(w) & fdbits::kPipe)) return {nullptr, w};
    return {s, w};
}

void FdTable::note_used(int fd) noexcept {
    int hw = high_water_.load(std::memory_order_relaxed);
    while (hw <= fd && !high_water_.compare_exchange_weak(hw, fd + 1, std::memory_order_relaxed)) {
    }
}

void FdTable::store_fresh(int fd, std::uint32_t bits) noexcept {
    FdSlot* s = slot(fd);
    if (s == nullptr) return;
    if (bits != 0) note_used(fd);
    reset_learning(*s);
    std::uint64_t w = s->word.load(std::memory_order_relaxed);
    // What the fd counted so far belongs to the process, not to whatever
    // the number names next. A call racing with the close may still count
    // into the slot after this: it is then folded with the next occupant
    // (or read by snapshot()), never lost.
    for (int d = 0; d < 2; ++d)
        process_.at(kind_of(w), static_cast<StatDir>(d)).add(s->dir[d].take());
    std::uint64_t fresh;
    do {
        fresh = next_gen(w) | bits;
    } while (!s->word.compare_exchange_weak(w, fresh, std::memory_order_acq_rel));
}

void FdTable::set_pipe(int rfd, int wfd) noexcept {
    store_fresh(rfd, fdbits::kKnown | fdbits::kPipe | fdbits::kReadable);
    store_fresh(wfd, fdbits::kKnown | fdbits::kPipe | fdbits::kWritable);
}

void FdTable::forget(int fd) noexcept {
    store_fresh(fd, 0);
}

void FdTable::forget_range(unsigned lo, unsigned hi) noexcept {
    if (lo >= static_cast<unsigned>(kSize)) return;
    unsigned top = static_cast<unsigned>(high_water());
    if (top == 0) return;
    if (hi >= top) hi = top - 1;
    for (unsigned fd = lo; fd <= hi; ++fd) {
        // Untouched slots stay untouched: no need to fault in their pages.
        if (slots_[fd].word.load(std::memory_order_relaxed) != 0) forget(static_cast<int>(fd));
    }
}

void FdTable::snapshot(StatsSnapshot& out) const noexcept {
    out = StatsSnapshot{};
    process_.add_to(out);
    const int top = high_water();
    for (int fd = 0; fd < top; ++fd) {
        const FdSlot& s = slots_[fd];
        const StatKind k = kind_of(s.word.load(std::memory_order_relaxed));
        for (int d = 0; d < 2; ++d) out.at(k, static_cast<StatDir>(d)) += s.dir[d].load();
    }
}

void FdTable::reset_counters() noexcept {
    process_.clear();
    const int top = high_water();
    for (int fd = 0; fd < top; ++fd)
        for (auto& d : slots_[fd].dir) d.clear();
}

void FdTable::set_no_nowait(const FdInfo& info) noexcept {
    if (info.slot == nullptr) return;
    std::uint64_t w = info.word;
    // Only if the slot still describes the same file.
    info.slot->word.compare_exchange_strong(w, w | fdbits::kNoNowait, std::memory_order_acq_rel);
}

std::uint32_t classify_fd(int fd) noexcept {
    long fifo = sys::is_fifo(fd);
    if (fifo < 0) return 0;
    if (fifo == 0) return fdbits::kKnown;
    long fl = sys::getfl(fd);
    if (fl < 0) return 0;
    std::uint32_t bits = fdbits::kKnown | fdbits::kPipe;
    // Only for the statistics: an inherited pipe (a shell pipeline) lives in
    // pipefs, a FIFO opened by path in the file system that holds it.
    if (sys::is_pipefs(fd) == 0) bits |= fdbits::kFifo;
    switch (fl & O_ACCMODE) {
        case O_RDONLY:
            bits |= fdbits::kReadable;
            break;
        case O_WRONLY:
            bits |= fdbits::kWritable;
            break;
        default:
            bits |= fdbits::kReadable | fdbits::kWritable;
            break;
    }
    return bits;
}

}  // namespace pipespin
