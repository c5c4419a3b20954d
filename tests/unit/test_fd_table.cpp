#include <catch2/catch.hpp>

#include <memory>

#include "core/fd_table.h"
#include "owned_table.h"
#include "platform/sys.h"

using namespace pipespin;

namespace {

// A scripted classifier: what each fd "is", and how often we were asked.
struct Fake {
    static inline std::uint32_t answer[64];
    static inline int calls = 0;
    static inline FdTable* table = nullptr;
    static inline int close_during = -1;  // simulate a close racing the lookup

    static std::uint32_t classify(int fd) noexcept {
        ++calls;
        if (fd == close_during && table != nullptr) table->forget(fd);
        return answer[fd];
    }
    static void reset() {
        for (auto& a : answer) a = fdbits::kKnown;  // "not a pipe"
        calls = 0;
        close_during = -1;
    }
};

constexpr std::uint32_t kReadPipe = fdbits::kKnown | fdbits::kPipe | fdbits::kReadable;

struct Fixture {
    OwnedTable owned = make_table();
    FdTable& t = *owned;
    Fixture() {
        Fake::reset();
        Fake::table = &t;
    }
};

}  // namespace

TEST_CASE_METHOD(Fixture, "an unknown fd is classified once, then cached", "[fd_table]") {
    Fake::answer[5] = kReadPipe;
    FdInfo a = t.lookup(5, Fake::classify);
    FdInfo b = t.lookup(5, Fake::classify);
    CHECK(Fake::calls == 1);
    CHECK(a.can(Dir::Read));
    CHECK_FALSE(a.can(Dir::Write));
    CHECK(b.word == a.word);
}

TEST_CASE_METHOD(Fixture, "with looks, an unknown fd is classified on its n-th look",
                 "[fd_table]") {
    Fake::answer[5] = kReadPipe;
    for (int i = 0; i < 2; ++i) {
        const FdInfo early = t.lookup(5, Fake::classify, 3);
        CHECK_FALSE(early.pipe());
        CHECK(early.cls == nullptr);
    }
    CHECK(Fake::calls == 0);
    CHECK(t.lookup(5, Fake::classify, 3).can(Dir::Read));
    CHECK(Fake::calls == 1);
    CHECK(t.lookup(5, Fake::classify, 3).can(Dir::Read));
    CHECK(Fake::calls == 1);
    // The looks were counted in the word, which classification replaced.
    CHECK((static_cast<std::uint32_t>(t.peek(5)) & fdbits::kLooks) == 0);
}

TEST_CASE_METHOD(Fixture, "looks count per file: a close starts them again", "[fd_table]") {
    Fake::answer[5] = kReadPipe;
    t.lookup(5, Fake::classify, 3);
    t.lookup(5, Fake::classify, 3);
    t.forget(5);  // closed: the number's next file has had no look
    CHECK_FALSE(t.lookup(5, Fake::classify, 3).pipe());
    CHECK_FALSE(t.lookup(5, Fake::classify, 3).pipe());
    CHECK(Fake::calls == 0);
    CHECK(t.lookup(5, Fake::classify, 3).pipe());
    CHECK(Fake::calls == 1);
    // Without a classifier nothing is counted: the next looks start where
    // they were.
    t.forget(5);
    t.lookup(5, nullptr, 3);
    t.lookup(5, nullptr, 3);
    CHECK_FALSE(t.lookup(5, Fake::classify, 3).pipe());
    CHECK(Fake::calls == 1);
}

TEST_CASE_METHOD(Fixture, "looks beyond what the word can count are capped", "[fd_table]") {
    Fake::answer[5] = kReadPipe;
    unsigned n = 0;
    while (!t.lookup(5, Fake::classify, 1000).pipe() && n < 100) ++n;
    CHECK(n == FdTable::kMaxLooks - 1);
    CHECK(Fake::calls == 1);
}

TEST_CASE_METHOD(Fixture, "a non-pipe is cached as such and never offers a slot", "[fd_table]") {
    FdInfo a = t.lookup(7, Fake::classify);
    FdInfo b = t.lookup(7, Fake::classify);
    CHECK(Fake::calls == 1);
    CHECK_FALSE(a.pipe());
    CHECK(b.state == nullptr);
}

TEST_CASE_METHOD(Fixture, "an fd that cannot be examined is not cached", "[fd_table]") {
    Fake::answer[9] = 0;  // e.g. EBADF
    CHECK_FALSE(t.lookup(9, Fake::classify).pipe());
    CHECK_FALSE(t.lookup(9, Fake::classify).pipe());
    CHECK(Fake::calls == 2);
}

TEST_CASE_METHOD(Fixture, "pipe() marks both ends without asking the kernel", "[fd_table]") {
    t.set_pipe(3, 4);
    CHECK(t.lookup(3, Fake::classify).can(Dir::Read));
    CHECK(t.lookup(4, Fake::classify).can(Dir::Write));
    CHECK_FALSE(t.lookup(4, Fake::classify).can(Dir::Read));
    CHECK(Fake::calls == 0);
}

TEST_CASE_METHOD(Fixture, "close, then reuse of the number by a non-pipe", "[fd_table]") {
    t.set_pipe(3, 4);
    t.forget(3);                       // close(3)
    Fake::answer[3] = fdbits::kKnown;  // open() got 3: a regular file
    CHECK_FALSE(t.lookup(3, Fake::classify).pipe());
    CHECK(Fake::calls == 1);
}

TEST_CASE_METHOD(Fixture, "dup2 over a tracked fd forgets the old pipe", "[fd_table]") {
    t.set_pipe(3, 4);
    t.forget(4);  // dup2(file, 4)
    Fake::answer[4] = fdbits::kKnown;
    CHECK_FALSE(t.lookup(4, Fake::classify).pipe());
    // dup2(pipe read end, 10): the new number is classified from the kernel.
    Fake::answer[10] = kReadPipe;
    t.forget(10);
    CHECK(t.lookup(10, Fake::classify).can(Dir::Read));
}

TEST_CASE_METHOD(Fixture, "a classification that raced with a close is not stored", "[fd_table]") {
    Fake::answer[6] = kReadPipe;
    Fake::close_during = 6;
    CHECK_FALSE(t.lookup(6, Fake::classify).pipe());  // answer dropped
    Fake::close_during = -1;
    Fake::answer[6] = fdbits::kKnown;  // the number now names a file
    CHECK_FALSE(t.lookup(6, Fake::classify).pipe());
    CHECK(Fake::calls == 2);
}

TEST_CASE_METHOD(Fixture, "no ceiling on fd numbers; negative ones pass through", "[fd_table]") {
    CHECK(t.lookup(-1, Fake::classify).state == nullptr);
    CHECK(t.blocks_mapped() == 0);
    for (int fd : {70000, (1 << 20) + 3, (1 << 30) + 7, 0x7ffffffe}) {
        t.set_pipe(fd, fd + 1);
        CHECK(t.lookup(fd, Fake::classify).can(Dir::Read));
        CHECK(t.lookup(fd + 1, Fake::classify).can(Dir::Write));
        t.forget(fd);
        CHECK_FALSE(t.lookup(fd, nullptr).pipe());
    }
    CHECK(Fake::calls == 0);
    t.forget_range(0, ~0u);
    CHECK_FALSE(t.lookup(0x7fffffff, nullptr).pipe());
}

TEST_CASE_METHOD(Fixture, "nothing is mapped until a fd needs remembering", "[fd_table]") {
    CHECK(t.blocks_mapped() == 0);
    t.forget(5);                               // close of a fd never seen
    t.forget_range(0, 1000);                   // close_range over nothing
    CHECK_FALSE(t.lookup(5, nullptr).pipe());  // no classifier: nothing learnt
    CHECK(t.blocks_mapped() == 0);
    t.set_pipe(3, 4);
    CHECK(t.blocks_mapped() == 1);
    t.set_pipe(600, 601);  // the next block of 512 fds
    CHECK(t.blocks_mapped() == 2);
}

TEST_CASE_METHOD(Fixture, "a dup names the same file: known at once, with what it learnt",
                 "[fd_table]") {
    t.set_pipe(3, 4);
    t.state(4)->dir[1].policy.phase.store(static_cast<std::uint8_t>(Phase::Spin));
    t.set_dup(4, 1);  // dup2(4, 1): a shell's child writing into the pipe
    FdInfo one = t.lookup(1, Fake::classify);
    CHECK(Fake::calls == 0);
    CHECK(one.can(Dir::Write));
    CHECK(one.origin() == Origin::Made);
    CHECK(one.state->dir[1].policy.get_phase() == Phase::Spin);
    // A dup of an fd the table does not know is unknown too.
    t.set_dup(9, 10);
    Fake::answer[10] = kReadPipe;
    CHECK(t.lookup(10, Fake::classify).can(Dir::Read));
    CHECK(Fake::calls == 1);
}

TEST_CASE_METHOD(Fixture, "a spin can tell that its fd number was closed or replaced",
                 "[fd_table]") {
    t.set_pipe(3, 4);
    FdInfo info = t.lookup(3, Fake::classify);
    CHECK(info.current());
    t.set_dup(4, 3);  // dup2(4, 3) by another thread
    CHECK_FALSE(info.current());
    FdInfo again = t.lookup(3, Fake::classify);
    CHECK(again.current());
    t.forget_range(0, 10);  // close_range
    CHECK_FALSE(again.current());
}

TEST_CASE_METHOD(Fixture, "the nowait fallback sticks to the file it was learnt on", "[fd_table]") {
    t.set_pipe(3, 4);
    FdInfo info = t.lookup(3, Fake::classify);
    CHECK(info.nowait_ok());
    t.set_no_nowait(info);
    CHECK_FALSE(t.lookup(3, Fake::classify).nowait_ok());
    t.forget(3);
    t.set_pipe(3, 5);
    CHECK(t.lookup(3, Fake::classify).nowait_ok());

    // A stale FdInfo (the fd was replaced since) changes nothing.
    FdInfo old = t.lookup(3, Fake::classify);
    t.forget(3);
    t.set_pipe(3, 4);
    t.set_no_nowait(old);
    CHECK(t.lookup(3, Fake::classify).nowait_ok());
}

TEST_CASE_METHOD(Fixture, "forgetting a range (close_range) resets every used slot in it",
                 "[fd_table]") {
    t.set_pipe(3, 4);
    t.set_pipe(20, 21);
    t.forget_range(4, 20);
    CHECK(t.lookup(3, Fake::classify).can(Dir::Read));
    CHECK_FALSE(t.lookup(4, Fake::classify).pipe());
    CHECK_FALSE(t.lookup(20, Fake::classify).pipe());
    CHECK(t.lookup(21, Fake::classify).can(Dir::Write));
    t.forget_all();
    CHECK_FALSE(t.lookup(3, Fake::classify).pipe());
}

TEST_CASE_METHOD(Fixture, "a new pipe on a reused number starts with fresh learning",
                 "[fd_table]") {
    t.set_pipe(3, 4);
    FdState* s = t.state(3);
    s->dir[0].policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    t.forget(3);
    t.set_pipe(3, 4);
    CHECK(s->dir[0].policy.get_phase() == Phase::Fresh);
}

TEST_CASE_METHOD(Fixture, "a pipe's class word and its state share one page", "[fd_table]") {
    // pipe(), the calls on the pipe and its close then write one page: in a
    // process that forks, one copy-on-write fault instead of two.
    const auto page = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) >> 12; };
    for (int fd : {0, 3, 14, 15, 29, 30, 509, 511, 600, 70000}) {
        t.set_pipe(fd, fd + 1000);
        const FdInfo info = t.lookup(fd, nullptr);
        REQUIRE(info.pipe());
        CHECK(page(info.cls) == page(info.state));
    }
}

TEST_CASE_METHOD(Fixture, "which fds below a bound have been pipes, across pages and blocks",
                 "[fd_table]") {
    CHECK_FALSE(t.pipe_seen_below(1 << 20));
    t.set_pipe(40, 41);
    CHECK_FALSE(t.pipe_seen_below(40));
    CHECK(t.pipe_seen_below(41));
    CHECK(t.pipe_seen_below(1000));
    t.forget(40);
    t.forget(41);
    CHECK(t.pipe_seen_below(41));  // seen stays: a racing call may still count on it
    Fixture other;
    other.t.set_pipe(700, 14);
    CHECK_FALSE(other.t.pipe_seen_below(14));
    CHECK(other.t.pipe_seen_below(15));
    other.t.forget(14);
    Fixture third;
    third.t.set_pipe(700, 701);
    CHECK_FALSE(third.t.pipe_seen_below(700));
    CHECK(third.t.pipe_seen_below(701));
}

// ---- the fast lane --------------------------------------------------------

namespace {
std::uint64_t snapshot_calls(FdTable& t, StatDir d) {
    StatsSnapshot s;
    t.snapshot(s);
    return s.total(d).calls;
}
}  // namespace

TEST_CASE_METHOD(Fixture, "a fast lane counts the calls it was armed for, then none",
                 "[fd_table][fast]") {
    t.set_pipe(3, 4);
    CHECK_FALSE(t.count_fast(3, Dir::Read));  // never armed
    t.arm_fast(3, Dir::Read, 3, t.fast_tag());
    CHECK_FALSE(t.count_fast(3, Dir::Write));  // the other direction's lane
    CHECK_FALSE(t.count_fast(4, Dir::Read));   // another fd's
    for (int i = 0; i < 3; ++i) CHECK(t.count_fast(3, Dir::Read));
    CHECK_FALSE(t.count_fast(3, Dir::Read));  // ran out
    CHECK(t.take_fast(3, Dir::Read) == 3);
    CHECK(t.take_fast(3, Dir::Read) == 0);  // taken once
    CHECK_FALSE(t.count_fast(3, Dir::Read));
    // No lanes above kFastFds, nor for negative fds.
    t.arm_fast(FdTable::kFastFds, Dir::Read, 3, t.fast_tag());
    CHECK_FALSE(t.count_fast(FdTable::kFastFds, Dir::Read));
    t.arm_fast(-1, Dir::Read, 3, t.fast_tag());
    CHECK_FALSE(t.count_fast(-1, Dir::Read));
    CHECK(t.take_fast(-1, Dir::Read) == 0);
}

TEST_CASE_METHOD(Fixture, "what a lane counted is in the fd's counters and its policy's epoch",
                 "[fd_table][fast]") {
    t.set_pipe(3, 4);
    FdState& s = *t.lookup(3, nullptr).state;
    s.dir[0].calls.store(1);
    s.dir[0].policy.epoch_calls.store(1);
    t.arm_fast(3, Dir::Read, 10, t.fast_tag());
    for (int i = 0; i < 4; ++i) REQUIRE(t.count_fast(3, Dir::Read));
    // A snapshot sees them before they are settled.
    CHECK(snapshot_calls(t, StatDir::Read) == 5);
    CHECK(s.dir[0].calls.load() == 1);
    t.settle_fast(3, s);
    CHECK(s.dir[0].calls.load() == 5);
    CHECK(s.dir[0].policy.epoch_calls.load() == 5);
    CHECK(snapshot_calls(t, StatDir::Read) == 5);  // not twice
    CHECK_FALSE(t.count_fast(3, Dir::Read));       // settled: the lane is clear
}

TEST_CASE_METHOD(Fixture, "a close folds what the lane counted, and the next fd starts clear",
                 "[fd_table][fast]") {
    t.set_pipe(3, 4);
    t.arm_fast(3, Dir::Read, 10, t.fast_tag());
    for (int i = 0; i < 7; ++i) REQUIRE(t.count_fast(3, Dir::Read));
    t.forget(3);
    CHECK(snapshot_calls(t, StatDir::Read) == 7);  // in the process's totals
    CHECK_FALSE(t.count_fast(3, Dir::Read));       // a new occupant is looked at
    t.set_pipe(3, 5);
    CHECK_FALSE(t.count_fast(3, Dir::Read));
    CHECK(snapshot_calls(t, StatDir::Read) == 7);
}

TEST_CASE_METHOD(Fixture, "new settings settle every lane and void it", "[fd_table][fast]") {
    t.set_pipe(3, 4);
    t.arm_fast(3, Dir::Read, 10, t.fast_tag());
    t.arm_fast(4, Dir::Write, 10, t.fast_tag());
    REQUIRE(t.count_fast(3, Dir::Read));
    REQUIRE(t.count_fast(4, Dir::Write));
    REQUIRE(t.count_fast(4, Dir::Write));
    t.void_fast();
    CHECK_FALSE(t.count_fast(3, Dir::Read));
    CHECK_FALSE(t.count_fast(4, Dir::Write));
    CHECK(t.lookup(3, nullptr).state->dir[0].calls.load() == 1);
    CHECK(t.lookup(4, nullptr).state->dir[1].calls.load() == 2);
    CHECK(snapshot_calls(t, StatDir::Write) == 2);
    // A lane armed under the new settings counts again.
    t.arm_fast(3, Dir::Read, 2, t.fast_tag());
    CHECK(t.count_fast(3, Dir::Read));
    // One armed with the tag of before a change (the engine read it, then
    // the settings changed under it) counts nothing.
    const std::uint32_t before = t.fast_tag();
    t.void_fast();
    t.arm_fast(4, Dir::Write, 5, before);
    CHECK_FALSE(t.count_fast(4, Dir::Write));
}

TEST_CASE_METHOD(Fixture, "after fork, a lane armed by the parent counts nothing in the child",
                 "[fd_table][fast]") {
    t.set_pipe(3, 4);
    t.arm_fast(3, Dir::Read, 10, t.fast_tag());
    REQUIRE(t.count_fast(3, Dir::Read));
    t.new_process();  // the child, whose counters start from zero
    CHECK_FALSE(t.count_fast(3, Dir::Read));
    CHECK(t.take_fast(3, Dir::Read) == 0);  // the parent's count is not the child's
    CHECK(snapshot_calls(t, StatDir::Read) == 0);
}

// ---- what a closed pipe counted ---------------------------------------------

TEST_CASE_METHOD(Fixture, "a closed pipe's counters stay on its page, not in the process-wide ones",
                 "[fd_table]") {
    // A shell that forks between pipes writes each page anew after every
    // fork: the close must not write a page the pipe's calls did not.
    for (int fd : {3, 20, 600}) {
        t.set_pipe(fd, fd + 1);
        FdInfo info = t.lookup(fd, nullptr);
        REQUIRE(info.pipe());
        bump(info.state->dir[0].calls, 5);
        bump(info.state->dir[0].bytes, 50);
        t.forget(fd);
        t.forget(fd + 1);
    }
    CHECK(t.process().at(StatKind::Pipe, StatDir::Read).load().calls == 0);  // untouched
    StatsSnapshot s;
    t.snapshot(s);
    CHECK(s.total(StatDir::Read).calls == 15);  // still counted, once
    CHECK(s.total(StatDir::Read).bytes == 150);
    // A new pipe on the number starts at zero, the closed one's count stays.
    t.set_pipe(3, 4);
    bump(t.lookup(3, nullptr).state->dir[0].calls, 2);
    CHECK(snapshot_calls(t, StatDir::Read) == 17);
}

TEST_CASE_METHOD(Fixture, "a forked child does not report what its parent's closed pipes counted",
                 "[fd_table]") {
    t.set_pipe(3, 4);
    bump(t.lookup(3, nullptr).state->dir[0].calls, 5);
    t.forget(3);
    REQUIRE(snapshot_calls(t, StatDir::Read) == 5);
    t.new_process();  // the child
    CHECK(snapshot_calls(t, StatDir::Read) == 0);
    t.set_pipe(3, 4);  // its own pipe on the same page
    bump(t.lookup(3, nullptr).state->dir[0].calls, 1);
    t.forget(3);
    CHECK(snapshot_calls(t, StatDir::Read) == 1);
}

// ---- quiet pipes (fdbits::kQuiet) --------------------------------------------

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kTick = 1ull << fdbits::kQuietTickShift;

// A mark the lookups (which read the coarse clock) see as young whatever
// the machine's delays: one from the future, as another clock's tick may
// be. And one they see as old.
std::uint64_t young_mark() {
    return sys::coarse_ns() + 1000 * kMs;
}
std::uint64_t old_mark() {
    return sys::coarse_ns() - 1000 * kMs;
}

}  // namespace

TEST_CASE("a quiet mark is young for 3 to 4 ticks of its clock, a mark from the future too",
          "[fd_table][quiet]") {
    const std::uint64_t t0 = 1000 * kTick;  // at a tick's start
    const std::uint64_t w = FdTable::quiet_bits(t0);
    CHECK(FdTable::quiet_young(w, t0));
    CHECK(FdTable::quiet_young(w, t0 + 3 * kTick + kTick / 2));
    CHECK_FALSE(FdTable::quiet_young(w, t0 + 4 * kTick));
    CHECK_FALSE(FdTable::quiet_young(w, t0 + 1000 * kMs));
    CHECK(FdTable::quiet_young(w, t0 - 3 * kTick));
    // Not quiet at all: never young.
    CHECK_FALSE(FdTable::quiet_young(kReadPipe, t0));
    // The field wraps (every 73 min): a mark that old reads young again,
    // for a few ms, which only passes that fd's calls through.
    CHECK(FdTable::quiet_young(w, t0 + (std::uint64_t{fdbits::kQuietTicks} + 1) * kTick));
}

TEST_CASE_METHOD(Fixture,
                 "a quiet pipe passes its calls through, and nothing about it is written again",
                 "[fd_table][quiet]") {
    Fake::answer[3] = kReadPipe;
    const std::uint64_t mark = young_mark();
    t.set_quiet(3, 4, mark);
    const std::uint64_t w3 = t.peek(3);
    CHECK((w3 & fdbits::kQuiet) != 0);
    // Known, not a pipe: no classification, no look counted.
    for (int i = 0; i < 4; ++i) {
        const FdInfo info = t.lookup(3, Fake::classify, 3);
        CHECK(info.cls != nullptr);
        CHECK_FALSE(info.pipe());
    }
    CHECK(t.lookup_known(3).cls != nullptr);
    CHECK(Fake::calls == 0);
    // A close leaves the mark, generation and all; so does a close_range,
    // and a new quiet pipe with the same mark stores nothing.
    t.forget(3);
    t.forget_range(0, 100);
    t.set_quiet(3, 4, mark);
    CHECK(t.peek(3) == w3);
    CHECK(t.lookup(3, Fake::classify, 3).cls != nullptr);
    CHECK(Fake::calls == 0);
    // A number given an aux word since (epoll_create got it) forgets as any.
    t.aux(4, true)->store(42);
    t.forget(4);
    CHECK(t.aux(4, false) == nullptr);
    CHECK((t.peek(4) & fdbits::kQuiet) == 0);
}

TEST_CASE_METHOD(Fixture, "a quiet mark grown old is classified afresh on its next look",
                 "[fd_table][quiet]") {
    Fake::answer[3] = kReadPipe;
    t.set_quiet(3, 4, old_mark());
    CHECK(t.lookup_known(3).cls == nullptr);   // ask the full lookup
    CHECK_FALSE(t.lookup(3, nullptr).pipe());  // no classifier: unknown
    // At once, not on a third look: the fd has lived on.
    const FdInfo info = t.lookup(3, Fake::classify, 3);
    CHECK(info.can(Dir::Read));
    CHECK(Fake::calls == 1);
    CHECK((t.peek(3) & fdbits::kQuiet) == 0);
}

TEST_CASE_METHOD(Fixture,
                 "a quiet mark grown old, closed while it is classified: the answer is dropped",
                 "[fd_table][quiet]") {
    // A close leaves a quiet mark as it is; a classification that a close
    // (and a socket on the number) raced must still not be stored.
    Fake::answer[3] = kReadPipe;
    t.set_quiet(3, 4, old_mark());
    Fake::close_during = 3;
    CHECK_FALSE(t.lookup(3, Fake::classify).pipe());
    CHECK((t.peek(3) & fdbits::kPipe) == 0);
    Fake::close_during = -1;
    Fake::answer[3] = fdbits::kKnown;  // the number now names a socket
    CHECK_FALSE(t.lookup(3, Fake::classify).pipe());
    CHECK(Fake::calls == 2);
}

TEST_CASE_METHOD(
    Fixture, "a pipe() or a dup of a known fd replaces a quiet mark; a dup of a quiet fd is quiet",
    "[fd_table][quiet]") {
    t.set_quiet(3, 4, young_mark());
    t.set_pipe(3, 4);
    CHECK(t.lookup(3, Fake::classify).can(Dir::Read));
    CHECK(t.lookup(4, Fake::classify).can(Dir::Write));
    t.set_quiet(5, 6, young_mark());
    // dup2(quiet write end, 10), 10 unknown to the table: what a $(...)
    // child does onto its stdout. Nothing is written: 10 stays unknown.
    t.set_dup(6, 10);
    CHECK(t.peek(10) == 0);
    // Onto a number the table knows (here as not a pipe), the mark is copied.
    CHECK_FALSE(t.lookup(9, Fake::classify).pipe());
    REQUIRE(Fake::calls == 1);
    t.set_dup(6, 9);
    CHECK(static_cast<std::uint32_t>(t.peek(9)) == static_cast<std::uint32_t>(t.peek(6)));
    CHECK_FALSE(t.lookup(9, Fake::classify).pipe());
    t.set_dup(3, 5);  // dup2(pipe, quiet number)
    CHECK(t.lookup(5, Fake::classify).can(Dir::Read));
    CHECK(Fake::calls == 1);
}
