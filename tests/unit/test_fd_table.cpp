#include <catch2/catch.hpp>

#include <memory>

#include "core/fd_table.h"

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
    std::unique_ptr<FdTable> owned = std::make_unique<FdTable>();
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

TEST_CASE_METHOD(Fixture, "a non-pipe is cached as such and never offers a slot", "[fd_table]") {
    FdInfo a = t.lookup(7, Fake::classify);
    FdInfo b = t.lookup(7, Fake::classify);
    CHECK(Fake::calls == 1);
    CHECK_FALSE(a.pipe());
    CHECK(b.slot == nullptr);
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

TEST_CASE_METHOD(Fixture, "fds outside the table pass through", "[fd_table]") {
    CHECK(t.lookup(-1, Fake::classify).slot == nullptr);
    CHECK(t.lookup(FdTable::kSize, Fake::classify).slot == nullptr);
    CHECK(t.lookup(1 << 20, Fake::classify).slot == nullptr);
    t.set_pipe(FdTable::kSize + 1, FdTable::kSize + 2);  // no crash, nothing stored
    t.forget(FdTable::kSize + 5);
    CHECK(Fake::calls == 0);
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
    CHECK(t.high_water() == 22);
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
    FdSlot* s = t.slot(3);
    s->dir[0].policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    t.forget(3);
    t.set_pipe(3, 4);
    CHECK(s->dir[0].policy.get_phase() == Phase::TrySpin);
}
