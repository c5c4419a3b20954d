// Per-fd state: what each fd is (a class word per fd) and, for pipes only,
// what the shim counts and learns about it (an FdState per pipe fd).
// Nothing here locks, and the hot path allocates nothing; every operation is
// a few atomic loads and stores, safe from any thread and from signal
// handlers.
//
// Sized by use. The shim rides in every process of a wrapped tree, most of
// which never touch a pipe, so nothing is written at start-up: the fds are
// split into blocks of 512, each used only once a call needs to remember
// something about one of its fds. A block is 37 pages of 14 fds each: a
// page holds the class words of its 14 fds, which of them have been pipes,
// their FdStates and what its closed pipes counted, so that a call on a
// pipe, its pipe() and its close write one page (a process that forks pays
// a copy-on-write fault per page it writes after each fork), and the
// kernel backs a page only when it is first written: a process with a few
// pipes at low fds uses one or two pages. A quiet pipe (fdbits::kQuiet:
// made where the process's new pipes have been one-shots) writes its class
// words at pipe() and never again. The first block (fds 0-511,
// where nearly every process's pipes are) is part of the table, in .bss,
// so it costs no system call either; the others are anonymous mmaps. Blocks are never
// unmapped (a racing call may still read one), and there is no ceiling on
// the fd number.
//
// The class words are a cache of what each fd is. glibc closes and opens
// fds behind our back (fclose, opendir, posix_spawn), so an entry may be
// stale; a stale entry can only make the shim look at a fd it need not (the
// looks are harmless on any fd) or skip a spin it could have made. Each
// word carries a generation that every change bumps, so a classification
// that raced with a close is never stored, and a spin can tell that its fd
// number was closed or replaced meanwhile (FdInfo::current()).
//
// After fork() the child shares every page with its parent until it writes
// one (a copy-on-write fault each, 10-20 µs in a VM), so nothing here is
// written for the child at fork: counters are tagged with the process
// generation they belong to (new_process() bumps it), and a pipe's counters
// from the parent read as zero until the child first uses that fd.
//
// The fast lane: most calls on a pipe in a run of not spinning (a stream's:
// SpinPolicy::inline_run()) need nothing of the shim but to be counted. The
// engine arms a lane for the next n such calls of a fd and direction; each
// of them then costs one load of the lane, a compare and a store
// (count_fast(), inline in the wrappers), on a dense array of 4 bytes per
// fd and direction below 512, where the hot fds of a process share a cache
// line or two; the full path reads the fd's class word and its state, a
// page of its own. What the lane counted is settled into the fd's state
// (its counters and the policy's epoch) when the lane runs out, and folded
// when the fd is forgotten or the settings change; snapshot() adds what is
// pending. A lane is tagged: new settings or a new process (new_process())
// move the tag on, which voids every lane at once without writing them.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/policy.h"
#include "core/stats.h"

namespace pipespin {

enum class Dir : std::uint8_t { Read = 0, Write = 1 };

// Counters (stats.h: calls, bytes, waits, spins, spin_hits, spin_ns,
// sleep_ns) and policy state for one direction of one pipe fd. The counters
// stay on the fd's own cache lines; forgetting the fd folds them into the
// table's process-wide totals.
struct DirState : IoCounters {
    PolicyState policy;  // owned by the spin policy
};

struct alignas(64) FdState {
    DirState dir[2];
    // The process generation (FdTable::new_process()) the counters were
    // last written in; older ones belong to a parent and count as zero.
    std::atomic<std::uint32_t> gen{0};
    // For a fd that is not a pipe, one word its user keeps about it (an
    // epoll set: the pipe it waits on). Cleared when the fd is forgotten.
    std::atomic<std::uint64_t> aux{0};
};

namespace fdbits {
inline constexpr std::uint32_t kKnown = 1u << 0;     // classified (else unknown)
inline constexpr std::uint32_t kPipe = 1u << 1;      // a pipe or FIFO
inline constexpr std::uint32_t kReadable = 1u << 2;  // opened for reading
inline constexpr std::uint32_t kWritable = 1u << 3;  // opened for writing
inline constexpr std::uint32_t kNoNowait = 1u << 4;  // RWF_NOWAIT unsupported here
inline constexpr std::uint32_t kFifo = 1u << 5;      // with kPipe: a named FIFO, not pipe()'s
inline constexpr std::uint32_t kMade = 1u << 6;      // with kPipe: made by pipe() in this process
inline constexpr std::uint32_t kHasAux = 1u
                                         << 7;  // FdState::aux may be set (kept by classification)
// An unknown fd's word counts the looks it has had (FdTable::lookup with
// looks > 1): a fd is classified on its n-th look, not its first.
inline constexpr int kLookShift = 8;
inline constexpr std::uint32_t kLooks = 3u << kLookShift;
// With kPipe: last seen in non-blocking mode (a spin that read O_NONBLOCK,
// pipe2 or F_SETFL with it): its calls skip the spin (FdTable::set_nonblock).
inline constexpr std::uint32_t kNonBlock = 1u << 10;
// A quiet pipe (FdTable::set_quiet): made by pipe() where the process has
// learnt that its new pipes are one-shots. Known, and not a pipe, while its
// mark is young: its calls pass straight through, as a file's do, and
// nothing about it is written again, not even by its close, which leaves
// the mark (a stale mark on a reused number only passes that fd's calls
// through for a few ms, which is always right). Once the mark is old (the
// fd, or its number, lived on), the next look classifies the fd afresh. The
// mark's time, coarse monotonic ns >> kQuietTickShift (4.2 ms), is kept in
// the bits from kQuietShift up.
inline constexpr std::uint32_t kQuiet = 1u << 11;
inline constexpr int kQuietShift = 12;
inline constexpr int kQuietTickShift = 22;
inline constexpr std::uint32_t kQuietTicks = (1u << (32 - kQuietShift)) - 1;  // mask
// Young: less than this many ticks old (12.6 to 16.8 ms).
inline constexpr std::uint32_t kQuietYoungTicks = 4;
}  // namespace fdbits

struct FdInfo {
    FdState* state = nullptr;                   // null: not a pipe (or unknown)
    std::atomic<std::uint64_t>* cls = nullptr;  // the fd's class word
    std::uint64_t word = 0;                     // the word the decision was made on
    std::uint32_t bits() const noexcept { return static_cast<std::uint32_t>(word); }
    bool pipe() const noexcept { return state != nullptr && (bits() & fdbits::kPipe); }
    bool can(Dir d) const noexcept {
        return pipe() && (bits() & (d == Dir::Read ? fdbits::kReadable : fdbits::kWritable));
    }
    bool nowait_ok() const noexcept { return !(bits() & fdbits::kNoNowait); }
    bool nonblock_seen() const noexcept { return bits() & fdbits::kNonBlock; }
    StatKind kind() const noexcept {
        return (bits() & fdbits::kFifo) ? StatKind::Fifo : StatKind::Pipe;
    }
    Origin origin() const noexcept {
        return (bits() & fdbits::kFifo)   ? Origin::Fifo
               : (bits() & fdbits::kMade) ? Origin::Made
                                          : Origin::Inherited;
    }
    // The fd number still names the file this info was read for: no close,
    // dup2 or the like that the shim saw has happened to it since. One load.
    bool current() const noexcept {
        return cls != nullptr && cls->load(std::memory_order_acquire) == word;
    }
};

// Classifies an unknown fd: returns FdBits (kKnown set), or 0 when the fd
// could not be examined (then nothing is cached).
using Classifier = std::uint32_t (*)(int fd) noexcept;

// One page of a block: 14 fds' states, class words, which of them have
// ever been a pipe's (bit i for the page's fd i: the only states with
// counters), and what its closed pipes counted.
struct FdPage {
    static constexpr std::size_t kBytes = 4096;  // a page
    static constexpr int kFds = 14;
    FdState state[kFds];
    std::atomic<std::uint64_t> cls[kFds];
    std::atomic<std::uint64_t> pipe_seen;
    // In a block's first page only: which of its pages have a pipe_seen bit
    // (bit p for page p), so that a scan reads only those pages.
    std::atomic<std::uint64_t> pages_seen;
    // In the table's first block's first page only: nonzero once a class
    // word of that block was stored (FdTable::block()). The first block has
    // no pointer to set: its use is marked on the page that fds 0-13, where
    // nearly every process's pipes are, write anyway.
    std::atomic<std::uint64_t> in_use;
    // The table's process generation and whether a fast lane was ever
    // armed (FdTable::process_gen(), fast_armed()): in the same first
    // page, so that a short-lived process that reads, writes and closes a
    // few low fds touches one page of the table, not three.
    std::atomic<std::uint32_t> process_gen;
    std::atomic<std::uint32_t> fast_armed;
    // What the page's pipes counted until they were closed (read and
    // write, per kind), and the process generation that was (older ones
    // are a parent's: void). A close folds a pipe's counters here, on the
    // page its pipe(), calls and close write anyway, not into the
    // process-wide totals: in a program that forks between pipes (a
    // shell's $(...)), each page written after a fork is a copy-on-write
    // fault, and the totals' page was one more per pipe.
    std::atomic<std::uint32_t> retired_gen;
    // In the table's first page only: the process generation the process
    // counters (FdTable::process()) belong to. Here, not beside them, so
    // that a process's first count (its first spin) writes their page
    // before anything reads it: a first read of a page never touched maps
    // the zero page, and the write after it faults again.
    std::atomic<std::uint32_t> counters_gen;
    IoCounters retired[kStatKinds][2];
    unsigned char pad_[kBytes - sizeof(state) - sizeof(cls) - 3 * sizeof(std::uint64_t) -
                       4 * sizeof(std::uint32_t) - sizeof(retired)];
};
static_assert(sizeof(FdPage) == FdPage::kBytes);

// 512 fds, in pages of 15 (backed page by page as they are written).
struct FdBlock {
    static constexpr int kShift = 9;
    static constexpr int kFds = 1 << kShift;
    static constexpr int kPages = (kFds + FdPage::kFds - 1) / FdPage::kFds;
    FdPage page[kPages];

    // i: the fd's index in the block (0-511).
    // Unsigned: a multiply and a shift, where int division needs a sign fix-up.
    static constexpr int page_of(int i) noexcept {
        return static_cast<int>(static_cast<unsigned>(i) / FdPage::kFds);
    }
    static constexpr int slot_of(int i) noexcept {
        return static_cast<int>(static_cast<unsigned>(i) % FdPage::kFds);
    }
    std::atomic<std::uint64_t>& cls(int i) noexcept { return page[page_of(i)].cls[slot_of(i)]; }
    const std::atomic<std::uint64_t>& cls(int i) const noexcept {
        return page[page_of(i)].cls[slot_of(i)];
    }
    FdState& state(int i) noexcept { return page[page_of(i)].state[slot_of(i)]; }
};

class FdTable {
public:
    static constexpr int kBlockShift = FdBlock::kShift;  // 512 fds per block
    static constexpr int kBlockFds = FdBlock::kFds;

    constexpr FdTable() = default;
    // Unmaps the blocks: for tables the tests make and drop. The process's
    // own table is never released (calls may still arrive during exit), and
    // the type is trivially destructible, so that it registers nothing to
    // run at exit.
    void release() noexcept;
    FdTable(const FdTable&) = delete;
    FdTable& operator=(const FdTable&) = delete;

    // The fd's current info. An unknown fd is classified first when a
    // classifier is given (a few syscalls, once per fd); with none, it is
    // left unknown (info.pipe() false). With looks > 1 (up to kMaxLooks),
    // an unknown fd is classified on its looks-th lookup: the ones before
    // only count a look in its word (no syscall) and answer "unknown", so
    // that a fd used for fewer calls, as most files a process opens are
    // (read, read EOF, close), costs no classification at all.
    static constexpr unsigned kMaxLooks = (fdbits::kLooks >> fdbits::kLookShift) + 1;
    FdInfo lookup(int fd, Classifier classify, unsigned looks = 1) noexcept;
    // lookup()'s answer where it takes a few loads and no call (every read
    // and write the fast lane does not count asks): a known fd below 512
    // (not a pipe, or a pipe whose counters are this process's). Otherwise
    // an info with a null cls: ask lookup().
    FdInfo lookup_known(int fd) noexcept;

    // The fast lane (see the top of this file). fds below kFastFds only.
    static constexpr int kFastFds = kBlockFds;
    static constexpr std::uint32_t kFastMax = 255;  // calls one lane may count
    // Counts one call on fd's lane for d and returns true, if the lane is
    // armed (this process, these settings) and has calls left; otherwise
    // changes nothing. A few instructions, no call: the wrappers ask it
    // before anything else of the engine. It reads the lanes' page even in
    // a table that never armed one (a first read of a page is a fault):
    // the wrappers ask it only once some lane was (engine.h,
    // io_counted_fast()).
    bool count_fast(int fd, Dir d) noexcept;
    // The lanes' tag now, in the high half of a lane's word (see fast_).
    // Read it before the settings a lane is armed under: a change of
    // settings after it voids the lane.
    std::uint32_t fast_tag() const noexcept { return fast_tag_.load(std::memory_order_acquire); }
    // fast_tag(), for an arm_fast(fd, d) that follows. In a table that never
    // armed a lane (fast_armed()) the lanes' page may be untouched: it is
    // first written (an atomic add of 0 to fd's lane, which changes
    // nothing), so that the read of the tag and the arm that follows take
    // one page fault between them, not two (a read of an untouched page
    // maps the zero page, and the write after it faults again).
    std::uint32_t tag_to_arm(int fd, Dir d) noexcept {
        if (!fast_armed())
            if (std::atomic<std::uint32_t>* lane = fast_lane(fd, d))
                lane->fetch_add(0, std::memory_order_relaxed);
        return fast_tag();
    }
    // Arms fd's lane for d for the next n calls (1..kFastMax), which
    // count_fast() then counts while `tag` (fast_tag()) is current. The
    // caller settles the lane first (a lane that still had calls pending
    // would lose them).
    void arm_fast(int fd, Dir d, std::uint32_t n, std::uint32_t tag) noexcept;
    // The calls fd's lane for d counted since it was armed (0 for a void
    // lane), and the lane cleared (no store when it already is).
    std::uint32_t take_fast(int fd, Dir d) noexcept;
    // Settles fd's lane for d into st, fd's state for d: the calls it
    // counted are added to st's counters and to the policy's epoch
    // (SpinPolicy::settle_inline), as if each had been counted on its own.
    // Inline: in a table that never armed a lane (mode fixed, a process
    // whose pipes all spin) it is one load.
    void settle_fast(int fd, Dir d, DirState& st) noexcept;
    // The same for both of fd's lanes, into its state s.
    void settle_fast(int fd, FdState& s) noexcept;
    // New settings: every lane is settled, then voided (the tag moves on),
    // so that no call is counted past a change that may make it spin.
    void void_fast() noexcept;
    // What the table knows about fd, without classifying or mapping
    // anything: a class word (0 when unknown).
    std::uint64_t peek(int fd) const noexcept;
    // The class word of fd's number, in a block that is mapped (fd has an
    // entry): one address computation, no look-up of the entry's state.
    std::atomic<std::uint64_t>& class_word(int fd) const noexcept {
        return block(fd)->cls(fd & (kBlockFds - 1));
    }
    // The generation in a class word (kGenShift).
    static std::uint32_t gen_of(std::uint64_t word) noexcept {
        return static_cast<std::uint32_t>(word >> 32);
    }
    // The state kept for fd's number whatever the fd is now (null if its
    // block was never mapped). For tests and inspection.
    FdState* state(int fd) const noexcept;
    // The calls this process counted on fd's number in direction d, what
    // its fast lane has pending included (0 where the counters are a
    // parent's). Reads, never writes.
    std::uint64_t calls_of(int fd, Dir d) const noexcept;
    // pipe()/pipe2() returned these fds.
    void set_pipe(int rfd, int wfd, bool nonblock = false) noexcept;
    // pipe()/pipe2() returned these fds, and the process's new pipes have
    // been one-shots (the engine's note_pipe()): both get a quiet mark of
    // time now_ns (coarse monotonic; see fdbits::kQuiet), which is stored
    // only where the fd's word does not already hold that very mark.
    void set_quiet(int rfd, int wfd, std::uint64_t now_ns) noexcept;
    // Is the word a quiet mark younger than kQuietYoungTicks at now_ns?
    static bool quiet_young(std::uint64_t word, std::uint64_t now_ns) noexcept {
        const auto bits = static_cast<std::uint32_t>(word);
        if (!(bits & fdbits::kQuiet)) return false;
        const std::uint32_t mark = bits >> fdbits::kQuietShift;
        const auto tick = static_cast<std::uint32_t>(now_ns >> fdbits::kQuietTickShift);
        // Modulo the field: a mark from the future (another clock's tick) is young.
        const std::uint32_t age = (tick - mark) & fdbits::kQuietTicks;
        return age < fdbits::kQuietYoungTicks || age > fdbits::kQuietTicks / 2;
    }
    static std::uint32_t quiet_bits(std::uint64_t now_ns) noexcept {
        const auto tick = static_cast<std::uint32_t>(now_ns >> fdbits::kQuietTickShift);
        return fdbits::kKnown | fdbits::kQuiet |
               ((tick & fdbits::kQuietTicks) << fdbits::kQuietShift);
    }
    // newfd is now a duplicate of oldfd (dup, dup2, dup3, F_DUPFD): it
    // names the same file, so it is what oldfd is, and it starts from what
    // oldfd has learnt.
    void set_dup(int oldfd, int newfd) noexcept;
    // The fd was closed, replaced, or created by a call whose result we do
    // not classify: forget what we knew.
    void forget(int fd) noexcept;
    void forget_range(unsigned lo, unsigned hi) noexcept;
    void forget_all() noexcept { forget_range(0, ~0u); }
    // RWF_NOWAIT answered EOPNOTSUPP on this fd: fall back to poll.
    void set_no_nowait(const FdInfo& info) noexcept;
    // O_NONBLOCK is a mark of the open file, which a dup shares and which
    // fcntl, FIONBIO or another process sharing the file can change: the
    // bit is what the shim last saw (a spin's F_GETFL, pipe2, an F_SETFL it
    // saw), never the truth. A set bit only spares the calls of a
    // non-blocking fd the looks and the F_GETFL of a spin that could not
    // have waited (the engine reads the mode again now and then: a stale
    // bit costs spins, never an answer); a clear one costs those looks.
    // set_nonblock() only if the word still describes the file `info` was
    // read for; note_nonblock() for whatever fd names now.
    void set_nonblock(const FdInfo& info, bool on) noexcept;
    void note_nonblock(int fd, bool on) noexcept;
    // Has a fd below nfds been a pipe in this process (a few loads: the
    // table's own bits, no classification, no syscall)? False only when
    // none is or was.
    bool pipe_seen_below(int nfds) const noexcept;
    // The fd's aux word (FdState::aux), mapping its block if `create`; null
    // if there is none.
    std::atomic<std::uint64_t>* aux(int fd, bool create) noexcept;

    // The pipe an epoll set waits on, as the set's aux word holds it (one
    // per set: the engine keeps the first pipe added). watch_word() is that
    // word for fd, now, in direction dir; watched_pipe() reads one back: the
    // pipe's fd (and its direction into *dir), or -1 when the word holds no
    // pipe or the pipe was closed or replaced since (its class word's
    // generation moved on). A few loads, no system call.
    std::uint64_t watch_word(int fd, Dir dir) const noexcept;
    int watched_pipe(std::uint64_t w, Dir* dir) const noexcept;

    // Calls fn(fd, word, state) for every fd that has been a pipe in this
    // process or its parents (so that counts a racing call made after the
    // fd's close are seen too), off the hot path: the mapped blocks only.
    template <class Fn>
    void for_each_state(Fn&& fn) noexcept;

    // Process-wide counters: poll waits, spins per hook family and the
    // wait histograms (a closed pipe's counters stay on its page:
    // FdPage::retired). Counters of a parent process read as zero in its
    // child.
    ProcessCounters& process() noexcept;
    // Every counter of the process: the process-wide ones, the closed
    // pipes' on their pages, and the live states. Off the hot path (a scan
    // of the pages that have had pipes).
    void snapshot(StatsSnapshot& out) noexcept;
    // A child after fork(): what was counted so far is the parent's. Writes
    // one word; every counter of the parent then reads as zero.
    void new_process() noexcept;

    // Set (once) when a table first stores an entry. Never null: the
    // engine points it at a flag of its Runtime, on a page every process
    // touches anyway, so that a close or dup in a process whose table has
    // never held anything reads nothing of the table (io_table_kept(): a
    // first read of the table's page is a page fault, and every short-lived
    // process closes something, `true` its stdout at exit). A const pointer
    // to a static object: it sits in the library's relocated read-only
    // data, not in the table, whose pages must stay untouched.
    static std::atomic<bool>* const used_mark;
    // Whether the table may hold an entry (used_mark set). Until then its
    // first page is not read (lookup_known(), lookup_slow()): a process's
    // first read of a page it never touched maps the zero page, and the
    // write that stores its first entry then faults again (two faults where
    // one will do, in every process whose first read or write the shim
    // looks at).
    static bool used() noexcept { return used_mark->load(std::memory_order_relaxed); }

    // Blocks in use so far (for tests and the footprint check).
    int blocks_mapped() const noexcept {
        return blocks_.load(std::memory_order_relaxed) + (first_in_use() ? 1 : 0);
    }

    // A class word: the FdBits in the low half, the generation that every
    // change bumps in the high half.
    static constexpr int kGenShift = 32;

private:
    using Block = FdBlock;
    // A watch word (watch_word()): the pipe's fd (bits 0-31), its direction
    // (bit 32), valid (bit 33), and the low 30 bits of the generation of
    // the pipe's class word (bits 34-63).
    static constexpr std::uint64_t kWatchValid = 1ull << 33;
    std::uint64_t watch_gen(int fd) const noexcept { return (peek(fd) >> kGenShift) & 0x3fffffff; }
    Block* block(int fd) const noexcept;
    Block* block_or_map(int fd) noexcept;
    static void mark_used() noexcept {
        if (!used_mark->load(std::memory_order_relaxed))
            used_mark->store(true, std::memory_order_release);
    }
    std::atomic<Block*>* block_ref(int fd, bool create) noexcept;
    // The fd's state, its counters made this process's.
    FdState* live(Block& b, int fd) noexcept;
    FdInfo lookup_slow(int fd, Classifier classify, unsigned looks) noexcept;
    // lookup_known() of a quiet word: is the mark still young (now)?
    static bool quiet_young_now(std::uint64_t word) noexcept;
    void store_fresh(int fd, std::uint32_t bits, const FdState* learnt_from) noexcept;
    void become_pipe(Block& b, int fd, const FdState* learnt_from) noexcept;
    // fn(block, first fd) for every mapped block.
    template <class Fn>
    void for_each_block(Fn&& fn) const noexcept;
    // fn(page, first fd) for every page that has had a pipe.
    template <class Fn>
    void for_each_pipe_page(Fn&& fn) const noexcept;
    // A closing pipe's counters, onto its page (FdPage::retired).
    void retire(FdPage& page, StatKind kind, int dir, const Counters& c) noexcept;

    // fds below kNearFds: one load to the block. Above: a directory per
    // 2^20 fds, mapped on first use. 16 KiB each, zero until used.
    static constexpr int kNearShift = 20;
    static constexpr int kNearBlocks = 1 << (kNearShift - kBlockShift);
    static constexpr int kFarDirs = 1 << (31 - kNearShift);
    // Blocks mapped (the first block, in this object, counts apart:
    // first_in_use()). near_[0] stays null: the first block is found by
    // its address, so that a process's first lookup reads no pointer and
    // its first classification writes none (each a page fault: the
    // pointer's page is untouched until then).
    std::atomic<int> blocks_{0};
    std::atomic<Block*> near_[kNearBlocks] = {};
    std::atomic<std::atomic<Block*>*> far_[kFarDirs] = {};
    ProcessCounters process_;
    // The first block, last (its untouched pages cost nothing), at the
    // first page boundary inside this storage: a block's pages must be
    // pages, and an alignment of 4096 here would align the library's whole
    // .bss to a page of its own (a page fault more at every start).
    Block* first_block() const noexcept {
        constexpr std::uintptr_t kMask = FdPage::kBytes - 1;
        const auto at = reinterpret_cast<std::uintptr_t>(first_storage_);
        return reinterpret_cast<Block*>((at + kMask) & ~kMask);
    }
    bool first_in_use() const noexcept {
        return first_block()->page[0].in_use.load(std::memory_order_acquire) != 0;
    }
    // The process generation (new_process()): a state whose gen differs
    // holds a parent's counters. In the first block's first page (FdPage).
    std::atomic<std::uint32_t>& process_gen() const noexcept {
        return first_block()->page[0].process_gen;
    }
    void settle_lane(int fd, Dir d, DirState& st) noexcept;  // settle_fast() once armed
    // A lane has been armed in this process or a parent: until then no
    // call or close need read the lanes' page (a read of a page never
    // touched is a fault, in a forked child each time).
    bool fast_armed() const noexcept {
        return first_block()->page[0].fast_armed.load(std::memory_order_relaxed) != 0;
    }
    alignas(64) unsigned char first_storage_[sizeof(Block) + FdPage::kBytes - 64] = {};
    // The fast lanes' tag, kept where a lane keeps it (tag << 16: its low
    // half is zero, and it moves on by 1 << 16, wrapping), so that a lane
    // is current when (lane ^ tag) < 1 << 16; on the line of the first
    // lanes. Zero is a tag too: a zero lane counts nothing and has nothing
    // pending.
    static constexpr std::uint32_t kTagStep = 1u << 16;
    alignas(64) std::atomic<std::uint32_t> fast_tag_{0};
    // The fast lanes: per fd and direction, tag << 16 | armed n << 8 | calls
    // left. Untouched (no page backed) until a lane is first armed.
    std::atomic<std::uint32_t> fast_[kFastFds][2] = {};
    // fd's lane for d, or null above kFastFds.
    std::atomic<std::uint32_t>* fast_lane(int fd, Dir d) noexcept {
        return static_cast<unsigned>(fd) < static_cast<unsigned>(kFastFds)
                   ? &fast_[fd][static_cast<int>(d)]
                   : nullptr;
    }
    const std::atomic<std::uint32_t>* fast_lane(int fd, Dir d) const noexcept {
        return const_cast<FdTable*>(this)->fast_lane(fd, d);
    }
    // What a lane counted since it was armed, if its tag is current.
    std::uint32_t fast_pending(std::uint32_t v) const noexcept {
        if ((v ^ fast_tag_.load(std::memory_order_relaxed)) >= kTagStep) return 0;
        return ((v >> 8) & 0xff) - (v & 0xff);
    }
};

// The production classifier: fstat + F_GETFL through raw syscalls.
std::uint32_t classify_fd(int fd) noexcept;

// ---- implementation of the inline functions and templates -----------------

inline FdInfo FdTable::lookup_known(int fd) noexcept {
    // The first block is where nearly every process's pipes are.
    if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kBlockFds)) [[unlikely]]
        return {};
    // A table that never stored an entry holds only unknown fds: its first
    // page is not read (used()). Otherwise not asked whether the first block
    // is in use: an unused one reads as zero class words, unknown.
    if (!used()) return {};
    Block* b = first_block();
    std::atomic<std::uint64_t>& cls = b->cls(fd);
    const std::uint64_t w = cls.load(std::memory_order_acquire);
    constexpr std::uint32_t kKnownPipe = fdbits::kKnown | fdbits::kPipe;
    const std::uint32_t what = static_cast<std::uint32_t>(w) & kKnownPipe;
    if (what == fdbits::kKnown) {  // known, not a pipe (or quiet, while its mark is young)
        if ((static_cast<std::uint32_t>(w) & fdbits::kQuiet) && !quiet_young_now(w)) [[unlikely]]
            return {};
        return {nullptr, &cls, w};
    }
    FdState& s = b->state(fd);
    if (what == kKnownPipe && s.gen.load(std::memory_order_relaxed) ==
                                  process_gen().load(std::memory_order_relaxed)) [[likely]]
        return {&s, &cls, w};
    return {};
}

inline bool FdTable::count_fast(int fd, Dir d) noexcept {
    std::atomic<std::uint32_t>* lane = fast_lane(fd, d);
    if (lane == nullptr) [[unlikely]]
        return false;
    const std::uint32_t v = lane->load(std::memory_order_relaxed);
    if ((v ^ fast_tag_.load(std::memory_order_relaxed)) >= kTagStep || (v & 0xff) == 0)
        return false;
    // Two threads on one fd and direction at once may lose a count, as
    // bump() may: statistics, and an epoch a call longer.
    lane->store(v - 1, std::memory_order_relaxed);
    return true;
}

inline void FdTable::settle_fast(int fd, Dir d, DirState& st) noexcept {
    if (fast_armed()) settle_lane(fd, d, st);
}

inline FdInfo FdTable::lookup(int fd, Classifier classify, unsigned looks) noexcept {
    const FdInfo known = lookup_known(fd);
    if (known.cls != nullptr) [[likely]]
        return known;
    return lookup_slow(fd, classify, looks);
}

inline std::uint64_t FdTable::watch_word(int fd, Dir dir) const noexcept {
    return static_cast<std::uint32_t>(fd) | (static_cast<std::uint64_t>(dir) << 32) | kWatchValid |
           (watch_gen(fd) << 34);
}

inline int FdTable::watched_pipe(std::uint64_t w, Dir* dir) const noexcept {
    if (!(w & kWatchValid)) return -1;
    const int fd = static_cast<int>(static_cast<std::uint32_t>(w));
    *dir = static_cast<Dir>((w >> 32) & 1);
    if ((w >> 34) != watch_gen(fd)) return -1;
    return fd;
}

template <class Fn>
void FdTable::for_each_block(Fn&& fn) const noexcept {
    if (first_in_use()) fn(first_block(), 0L);
    for (int i = 1; i < kNearBlocks; ++i)
        if (Block* b = near_[i].load(std::memory_order_acquire))
            fn(b, static_cast<long>(i) << kBlockShift);
    for (int d = 1; d < kFarDirs; ++d) {
        std::atomic<Block*>* dir = far_[d].load(std::memory_order_acquire);
        if (dir == nullptr) continue;
        for (int i = 0; i < kNearBlocks; ++i)
            if (Block* b = dir[i].load(std::memory_order_acquire))
                fn(b, (static_cast<long>(d) << kNearShift) + (static_cast<long>(i) << kBlockShift));
    }
}

template <class Fn>
void FdTable::for_each_pipe_page(Fn&& fn) const noexcept {
    for_each_block([&](Block* b, long base) {
        for (std::uint64_t pages = b->page[0].pages_seen.load(std::memory_order_acquire);
             pages != 0; pages &= pages - 1) {
            const int p = __builtin_ctzll(pages);
            fn(b->page[p], base + p * FdPage::kFds);
        }
    });
}

template <class Fn>
void FdTable::for_each_state(Fn&& fn) noexcept {
    for_each_pipe_page([&](FdPage& page, long first) {
        for (std::uint64_t bits = page.pipe_seen.load(std::memory_order_acquire); bits != 0;
             bits &= bits - 1) {
            const int slot = __builtin_ctzll(bits);
            fn(static_cast<int>(first + slot), page.cls[slot].load(std::memory_order_relaxed),
               page.state[slot]);
        }
    });
}

}  // namespace pipespin
