#include "core/fd_table.h"

#include <fcntl.h>

#include <algorithm>
#include <type_traits>

#include "platform/sys.h"

namespace pipespin {
namespace {

constexpr std::uint64_t kGenOne = 1ull << FdTable::kGenShift;
constexpr auto kRelaxed = std::memory_order_relaxed;

std::uint64_t next_gen(std::uint64_t word) noexcept {
    return (word & ~0xffffffffull) + kGenOne;
}

StatKind kind_of(std::uint64_t word) noexcept {
    return (static_cast<std::uint32_t>(word) & fdbits::kFifo) ? StatKind::Fifo : StatKind::Pipe;
}

bool is_pipe(std::uint64_t word) noexcept {
    return (static_cast<std::uint32_t>(word) & fdbits::kPipe) != 0;
}

int index_in_block(int fd) noexcept {
    return fd & (FdTable::kBlockFds - 1);
}

}  // namespace

void FdTable::release() noexcept {
    for_each_block([this](Block* b, long) {
        if (b != first_block()) sys::unmap(b, sizeof(Block));
    });
    for (auto& n : near_) n.store(nullptr, kRelaxed);
    for (auto& d : far_)
        if (auto* dir = d.exchange(nullptr, kRelaxed))
            sys::unmap(dir, sizeof(std::atomic<Block*>) * kNearBlocks);
}

static_assert(std::is_trivially_destructible_v<FdTable>);

std::atomic<FdTable::Block*>* FdTable::block_ref(int fd, bool create) noexcept {
    if (fd < 0) return nullptr;
    if (fd < (1 << kNearShift)) return &near_[fd >> kBlockShift];
    std::atomic<std::atomic<Block*>*>& slot = far_[fd >> kNearShift];
    std::atomic<Block*>* dir = slot.load(std::memory_order_acquire);
    if (dir == nullptr) {
        if (!create) return nullptr;
        constexpr std::size_t kBytes = sizeof(std::atomic<Block*>) * kNearBlocks;
        auto* fresh = static_cast<std::atomic<Block*>*>(sys::map_anon(kBytes));
        if (fresh == nullptr) return nullptr;
        if (slot.compare_exchange_strong(dir, fresh, std::memory_order_acq_rel)) {
            dir = fresh;
        } else {
            sys::unmap(fresh, kBytes);  // another thread mapped it first
        }
    }
    return &dir[(fd >> kBlockShift) & (kNearBlocks - 1)];
}

FdTable::Block* FdTable::block(int fd) const noexcept {
    if (fd < 0) return nullptr;
    if (fd < kBlockFds) return first_in_use() ? first_block() : nullptr;
    if (fd < (1 << kNearShift)) return near_[fd >> kBlockShift].load(std::memory_order_acquire);
    std::atomic<Block*>* dir = far_[fd >> kNearShift].load(std::memory_order_acquire);
    return dir == nullptr
               ? nullptr
               : dir[(fd >> kBlockShift) & (kNearBlocks - 1)].load(std::memory_order_acquire);
}

FdTable::Block* FdTable::block_or_map(int fd) noexcept {
    if (fd >= 0 && fd < kBlockFds) {
        Block* const first = first_block();
        // Unused (used()), its first page is written before it is read.
        if (!used() || !first_in_use()) {
            first->page[0].in_use.store(1, std::memory_order_release);
            mark_used();
        }
        return first;
    }
    std::atomic<Block*>* ref = block_ref(fd, true);
    if (ref == nullptr) return nullptr;
    Block* b = ref->load(std::memory_order_acquire);
    if (b != nullptr) return b;
    // Zero pages are a valid Block: every field is an atomic that starts
    // at zero. The kernel backs each page on its first write.
    auto* fresh = static_cast<Block*>(sys::map_anon(sizeof(Block)));
    if (fresh == nullptr) return nullptr;  // no memory: the fd is left alone
    if (!ref->compare_exchange_strong(b, fresh, std::memory_order_acq_rel)) {
        sys::unmap(fresh, sizeof(Block));
        return b;
    }
    blocks_.fetch_add(1, kRelaxed);
    mark_used();
    return fresh;
}

FdState* FdTable::live(Block& b, int fd) noexcept {
    FdState& s = b.state(index_in_block(fd));
    const std::uint32_t g = process_gen().load(kRelaxed);
    if (s.gen.load(kRelaxed) != g) [[unlikely]] {
        // Counted by a parent before fork(): not this process's.
        for (DirState& d : s.dir) d.clear();
        s.gen.store(g, kRelaxed);
    }
    return &s;
}

FdInfo FdTable::lookup_slow(int fd, Classifier classify, unsigned looks) noexcept {
    // An unused table's first block is not read (used()): it is mapped,
    // and its page written first, below.
    Block* b = fd < kBlockFds && !used() ? nullptr : block(fd);
    if (b == nullptr) {
        if (classify == nullptr || fd < 0) return {};
        b = block_or_map(fd);
        if (b == nullptr) return {};
    }
    std::atomic<std::uint64_t>& cls = b->cls(index_in_block(fd));
    std::uint64_t w = cls.load(std::memory_order_acquire);
    // A quiet mark grown old: the fd lived on, so it is classified now.
    const bool aged = (static_cast<std::uint32_t>(w) & fdbits::kQuiet) && !quiet_young_now(w);
    if (!(static_cast<std::uint32_t>(w) & fdbits::kKnown) || aged) [[unlikely]] {
        if (classify == nullptr) return {};
        const std::uint32_t seen =
            (static_cast<std::uint32_t>(w) & fdbits::kLooks) >> fdbits::kLookShift;
        if (!aged && seen + 1 < std::min(looks, kMaxLooks)) {
            // Not yet: one look more. A racing look or close may win the
            // word: then this look is not counted, which only delays the
            // classification by a call.
            cls.compare_exchange_strong(w, w + (1u << fdbits::kLookShift),
                                        std::memory_order_acq_rel);
            return {};
        }
        if (aged) {
            // A close leaves a quiet mark as it is (store_fresh()), so a
            // close and a new file on the number while the fd is looked at
            // would not stop the answer from being stored. The mark first
            // becomes an unknown word of a new generation, which a close
            // bumps as it bumps any word.
            const std::uint64_t unknown = next_gen(w) | (w & fdbits::kHasAux);
            if (!cls.compare_exchange_strong(w, unknown, std::memory_order_acq_rel)) return {};
            w = unknown;
        }
        const std::uint32_t bits = classify(fd);
        if (bits == 0) return {};
        const std::uint64_t fresh = (w & ~0xffffffffull) | (w & fdbits::kHasAux) | bits;
        // Lose the race on purpose: if a close bumped the generation while we
        // looked, our answer may describe the old file, so do not keep it.
        if (!cls.compare_exchange_strong(w, fresh, std::memory_order_acq_rel)) return {};
        w = fresh;
        if (is_pipe(w)) become_pipe(*b, fd, nullptr);
    }
    if (!is_pipe(w)) return {nullptr, &cls, w};
    return {live(*b, fd), &cls, w};
}

bool FdTable::quiet_young_now(std::uint64_t word) noexcept {
    return quiet_young(word, sys::coarse_ns());
}

FdState* FdTable::state(int fd) const noexcept {
    Block* b = block(fd);
    return b == nullptr ? nullptr : &b->state(index_in_block(fd));
}

std::uint64_t FdTable::calls_of(int fd, Dir d) const noexcept {
    const FdState* s = state(fd);
    if (s == nullptr || s->gen.load(kRelaxed) != process_gen().load(kRelaxed)) return 0;
    std::uint64_t calls = s->dir[static_cast<int>(d)].calls.load(kRelaxed);
    if (fast_armed())
        if (const std::atomic<std::uint32_t>* lane = fast_lane(fd, d))
            calls += fast_pending(lane->load(kRelaxed));
    return calls;
}

std::uint64_t FdTable::peek(int fd) const noexcept {
    Block* b = block(fd);
    return b == nullptr ? 0 : b->cls(index_in_block(fd)).load(std::memory_order_acquire);
}

void FdTable::store_fresh(int fd, std::uint32_t bits, const FdState* learnt_from) noexcept {
    Block* b = bits != 0 ? block_or_map(fd) : block(fd);
    if (b == nullptr) return;
    std::atomic<std::uint64_t>& cls = b->cls(index_in_block(fd));
    std::uint64_t w = cls.load(kRelaxed);
    // A quiet mark is left by a close (or anything else that forgets), and
    // not stored again as it is: a shell that forks between its pipes
    // writes nothing here from one $(...) to the next (fdbits::kQuiet). Not
    // where the number has been given an aux word since (an epoll fd on it):
    // that is cleared as for any fd.
    const auto now_bits = static_cast<std::uint32_t>(w);
    if ((now_bits & (fdbits::kQuiet | fdbits::kHasAux)) == fdbits::kQuiet &&
        (bits == 0 || bits == now_bits))
        return;
    // Only what this process counted, and only state it wrote: a child
    // closing the fds it inherited touches no page of their state.
    FdState& s = b->state(index_in_block(fd));
    if (static_cast<std::uint32_t>(w) & fdbits::kHasAux) s.aux.store(0, kRelaxed);
    // The number's fast lanes count nothing for its next occupant: what
    // they counted is the fd's (if its counters are this process's).
    if (is_pipe(w) && s.gen.load(kRelaxed) == process_gen().load(kRelaxed)) {
        settle_fast(fd, s);
        // What the fd counted so far belongs to the process, not to whatever
        // the number names next. A call racing with the close may still
        // count into the state after this: it is then folded with the next
        // occupant (or read by snapshot()), never lost.
        for (int d = 0; d < 2; ++d) {
            const Counters c = s.dir[d].take();
            if (c.any()) retire(b->page[FdBlock::page_of(index_in_block(fd))], kind_of(w), d, c);
        }
    } else if (fast_armed()) {
        take_fast(fd, Dir::Read);
        take_fast(fd, Dir::Write);
    }
    if (is_pipe(bits)) become_pipe(*b, fd, learnt_from);
    std::uint64_t fresh;
    do {
        fresh = next_gen(w) | bits;
    } while (!cls.compare_exchange_weak(w, fresh, std::memory_order_acq_rel));
}

void FdTable::become_pipe(Block& b, int fd, const FdState* learnt_from) noexcept {
    // Learning starts fresh for a new pipe on this number (or from what its
    // source learnt, for a dup); a forgotten fd's state was left as it was.
    FdState& s = b.state(index_in_block(fd));
    for (int d = 0; d < 2; ++d) {
        if (learnt_from != nullptr)
            s.dir[d].policy.copy_from(learnt_from->dir[d].policy);
        else
            s.dir[d].policy.reset();
    }
    const int i = index_in_block(fd);
    const int p = FdBlock::page_of(i);
    std::atomic<std::uint64_t>& word = b.page[p].pipe_seen;
    const std::uint64_t bit = 1ull << FdBlock::slot_of(i);
    if (!(word.load(kRelaxed) & bit)) word.fetch_or(bit, std::memory_order_release);
    std::atomic<std::uint64_t>& pages = b.page[0].pages_seen;
    if (!(pages.load(kRelaxed) & (1ull << p))) pages.fetch_or(1ull << p, std::memory_order_release);
}

void FdTable::set_pipe(int rfd, int wfd, bool nonblock) noexcept {
    const std::uint32_t made =
        fdbits::kKnown | fdbits::kPipe | fdbits::kMade | (nonblock ? fdbits::kNonBlock : 0u);
    store_fresh(rfd, made | fdbits::kReadable, nullptr);
    store_fresh(wfd, made | fdbits::kWritable, nullptr);
}

void FdTable::set_quiet(int rfd, int wfd, std::uint64_t now_ns) noexcept {
    const std::uint32_t quiet = quiet_bits(now_ns);
    store_fresh(rfd, quiet, nullptr);
    store_fresh(wfd, quiet, nullptr);
}

void FdTable::set_dup(int oldfd, int newfd) noexcept {
    if (oldfd == newfd) return;
    const std::uint64_t w = peek(oldfd);
    const auto bits = static_cast<std::uint32_t>(w);
    if (!(bits & fdbits::kKnown)) {
        forget(newfd);
        return;
    }
    // A quiet pipe dup'ed onto a number the table knows nothing of (a
    // $(...)'s child's dup2 of the write end onto its stdout): the number
    // stays unknown, classified (a pipe) if it is used on, and the child
    // writes no page of the table, a copy-on-write fault after each fork. A
    // classification of the number's old file racing with this dup2 can
    // only make it a pipe passed through: spins lost, never an answer.
    if ((bits & fdbits::kQuiet) && peek(newfd) == 0) return;
    Block* from = is_pipe(w) ? block(oldfd) : nullptr;
    store_fresh(newfd, bits, from != nullptr ? &from->state(index_in_block(oldfd)) : nullptr);
}

void FdTable::forget(int fd) noexcept {
    store_fresh(fd, 0, nullptr);
}

void FdTable::forget_range(unsigned lo, unsigned hi) noexcept {
    if (lo > static_cast<unsigned>(INT32_MAX)) return;
    if (hi > static_cast<unsigned>(INT32_MAX)) hi = INT32_MAX;
    unsigned fd = lo;
    while (fd <= hi) {
        Block* b = block(static_cast<int>(fd));
        const unsigned block_end = (fd | (kBlockFds - 1));
        const unsigned end = block_end < hi ? block_end : hi;
        if (b != nullptr) {
            for (unsigned f = fd; f <= end; ++f)
                if (b->cls(index_in_block(static_cast<int>(f))).load(kRelaxed) != 0)
                    forget(static_cast<int>(f));
        }
        if (end == static_cast<unsigned>(INT32_MAX)) break;
        fd = end + 1;
    }
}

void FdTable::set_no_nowait(const FdInfo& info) noexcept {
    if (info.cls == nullptr) return;
    std::uint64_t w = info.word;
    // Only if the word still describes the same file.
    info.cls->compare_exchange_strong(w, w | fdbits::kNoNowait, std::memory_order_acq_rel);
}

void FdTable::set_nonblock(const FdInfo& info, bool on) noexcept {
    if (info.cls == nullptr || !info.pipe() || info.nonblock_seen() == on) return;
    std::uint64_t w = info.word;
    info.cls->compare_exchange_strong(
        w, on ? w | fdbits::kNonBlock : w & ~std::uint64_t{fdbits::kNonBlock},
        std::memory_order_acq_rel);
}

void FdTable::note_nonblock(int fd, bool on) noexcept {
    set_nonblock(lookup(fd, nullptr), on);
}

bool FdTable::pipe_seen_below(int nfds) const noexcept {
    for (int base = 0; base < nfds; base += kBlockFds) {
        const Block* b = block(base);
        if (b == nullptr) continue;
        const int n = nfds - base < kBlockFds ? nfds - base : kBlockFds;
        // Only the pages that have had a pipe are read.
        for (std::uint64_t pages = b->page[0].pages_seen.load(std::memory_order_acquire);
             pages != 0; pages &= pages - 1) {
            const int p = __builtin_ctzll(pages);
            const int first = p * FdPage::kFds;
            if (first >= n) break;
            std::uint64_t bits = b->page[p].pipe_seen.load(std::memory_order_acquire);
            if (n - first < FdPage::kFds) bits &= (1ull << (n - first)) - 1;
            if (bits != 0) return true;
        }
    }
    return false;
}

std::atomic<std::uint64_t>* FdTable::aux(int fd, bool create) noexcept {
    Block* b = create ? block_or_map(fd) : block(fd);
    if (b == nullptr) return nullptr;
    std::atomic<std::uint64_t>& cls = b->cls(index_in_block(fd));
    if (!(cls.load(std::memory_order_acquire) & fdbits::kHasAux)) {
        if (!create) return nullptr;
        cls.fetch_or(fdbits::kHasAux, std::memory_order_acq_rel);
    }
    return &b->state(index_in_block(fd)).aux;
}

void FdTable::retire(FdPage& page, StatKind kind, int dir, const Counters& c) noexcept {
    const std::uint32_t g = process_gen().load(kRelaxed);
    if (page.retired_gen.load(kRelaxed) != g) [[unlikely]] {
        // A parent's (new_process()): not this process's to report.
        for (auto& k : page.retired)
            for (IoCounters& d : k) d.clear();
        page.retired_gen.store(g, kRelaxed);
    }
    page.retired[static_cast<int>(kind)][dir].add(c);
}

ProcessCounters& FdTable::process() noexcept {
    const std::uint32_t g = process_gen().load(kRelaxed);
    std::atomic<std::uint32_t>& counted = first_block()->page[0].counters_gen;
    if (counted.load(kRelaxed) != g) [[unlikely]] {
        process_.clear();
        counted.store(g, kRelaxed);
    }
    return process_;
}

void FdTable::snapshot(StatsSnapshot& out) noexcept {
    out = StatsSnapshot{};
    process().add_to(out);
    const std::uint32_t g = process_gen().load(kRelaxed);
    for_each_pipe_page([&](const FdPage& page, long) {
        if (page.retired_gen.load(kRelaxed) != g) return;
        for (int k = 0; k < kStatKinds; ++k)
            for (int d = 0; d < 2; ++d)
                out.at(static_cast<StatKind>(k), static_cast<StatDir>(d)) +=
                    page.retired[k][d].load();
    });
    for_each_state([&](int fd, std::uint64_t w, FdState& s) {
        if (s.gen.load(kRelaxed) != g) return;
        for (int d = 0; d < 2; ++d) {
            Counters c = s.dir[d].load();
            if (const auto* lane = fast_lane(fd, static_cast<Dir>(d)); lane && fast_armed())
                c.calls += fast_pending(lane->load(kRelaxed));
            out.at(kind_of(w), static_cast<StatDir>(d)) += c;
        }
    });
}

void FdTable::new_process() noexcept {
    process_gen().fetch_add(1, kRelaxed);
    // What the lanes counted was the parent's, as its counters were.
    fast_tag_.fetch_add(kTagStep, std::memory_order_release);
}

void FdTable::arm_fast(int fd, Dir d, std::uint32_t n, std::uint32_t tag) noexcept {
    std::atomic<std::uint32_t>* lane = fast_lane(fd, d);
    if (lane == nullptr || n == 0 || n > kFastMax) return;
    if (!fast_armed()) first_block()->page[0].fast_armed.store(1, kRelaxed);
    lane->store((tag & ~(kTagStep - 1)) | n << 8 | n, kRelaxed);
}

std::uint32_t FdTable::take_fast(int fd, Dir d) noexcept {
    std::atomic<std::uint32_t>* lane = fast_lane(fd, d);
    if (lane == nullptr || !fast_armed()) return 0;
    const std::uint32_t v = lane->load(kRelaxed);
    if (v == 0) return 0;  // no store: after fork, a write is a page copied
    lane->store(0, kRelaxed);
    return fast_pending(v);
}

void FdTable::settle_lane(int fd, Dir d, DirState& st) noexcept {
    const std::uint32_t n = take_fast(fd, d);
    if (n == 0) return;
    bump(st.calls, n);
    SpinPolicy::settle_inline(st.policy, n);
}

void FdTable::settle_fast(int fd, FdState& s) noexcept {
    if (!fast_armed()) return;
    for (int d = 0; d < 2; ++d)  // no {Read, Write} list: a constant's page to fault in
        settle_fast(fd, static_cast<Dir>(d), s.dir[d]);
}

void FdTable::void_fast() noexcept {
    const std::uint32_t g = process_gen().load(kRelaxed);
    // A parent's lanes are void already (new_process()).
    for_each_state([&](int fd, std::uint64_t, FdState& s) {
        if (s.gen.load(kRelaxed) == g) settle_fast(fd, s);
    });
    fast_tag_.fetch_add(kTagStep, std::memory_order_release);
}

std::uint32_t classify_fd(int fd) noexcept {
    long fifo = sys::is_fifo(fd);
    if (fifo < 0) return 0;
    if (fifo == 0) return fdbits::kKnown;
    long fl = sys::getfl(fd);
    if (fl < 0) return 0;
    std::uint32_t bits = fdbits::kKnown | fdbits::kPipe;
    // An inherited pipe (a shell pipeline) lives in pipefs, a FIFO opened by
    // path in the file system that holds it: the statistics tell them
    // apart, and the policy keeps a prior per origin.
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
