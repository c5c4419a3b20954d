// The engine against real, deterministic pipes: no peer, no timing.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstring>

#include <cstring>

#include "core/engine.h"
#include "pipe_fixture.h"
#include "platform/sys.h"

using namespace pipespin;

namespace {

using test::PipeFixture;

// Fills a pipe to its size through its write end, not through the engine
// (as another writer would), and leaves the end blocking.
void fill_pipe(int fd) {
    const int fl = ::fcntl(fd, F_GETFL);
    REQUIRE(::fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
    char buf[100] = {};
    while (::write(fd, buf, sizeof buf) > 0) {
    }
    REQUIRE(errno == EAGAIN);
    REQUIRE(::fcntl(fd, F_SETFL, fl) == 0);
}

// Somebody reads the counters (the exit report): mode off is not inert.
Options at_info(Options o = {}) {
    o.log_v = static_cast<std::uint32_t>(LogLevel::Info);
    return o;
}

}  // namespace

TEST_CASE("engine: data already there is the answer, without a spin", "[engine]") {
    PipeFixture p(Mode::Fixed);
    REQUIRE(::write(p.fds[1], "abc", 3) == 3);
    char buf[8] = {};
    Plan plan = before_read(p.fds[0], buf, sizeof buf);
    CHECK(plan.action == Plan::Action::Done);
    CHECK(plan.result == 3);
    CHECK(std::string(buf, 3) == "abc");
    CHECK_FALSE(plan.obs.spun);
}

TEST_CASE("engine: an empty pipe spins its budget, then lets the real call go", "[engine]") {
    PipeFixture p(Mode::Fixed, 1);
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.obs.spun);  // after_call() must learn from this wait
    CHECK_FALSE(plan.obs.spin_hit);
    CHECK(plan.obs.budget_ns == 1000);
    CHECK(plan.dir == &p.reader());
    CHECK(p.reader().spins.load() >= 1);
    after_call(plan, -EAGAIN);
}

TEST_CASE("engine: spin_read=off and spin_write=off switch off one direction only", "[engine]") {
    Options o;
    o.spin_read = 0;
    PipeFixture p(Mode::Fixed, 1, o);
    char c = 'x';
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK_FALSE(plan.obs.spun);
    // The write side still spins: fill the pipe, then ask to write more.
    REQUIRE(::fcntl(p.fds[1], F_SETFL, O_NONBLOCK) == 0);
    char block[4096] = {};
    while (::write(p.fds[1], block, sizeof block) > 0) {
    }
    REQUIRE(::fcntl(p.fds[1], F_SETFL, 0) == 0);
    plan = before_write(p.fds[1], block, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.obs.spun);

    o.spin_read = 1;
    o.spin_write = 0;
    PipeFixture q(Mode::Fixed, 1, o);
    plan = before_read(q.fds[0], &c, 1);
    CHECK(plan.obs.spun);
}

TEST_CASE("engine: may_spin: a tracked pipe that the policy would spin on now", "[engine]") {
    PipeFixture p(Mode::Fixed, 1);
    CHECK(may_spin(p.fds[0], Dir::Read));
    CHECK_FALSE(may_spin(p.fds[0], Dir::Write));  // the read end
    CHECK(may_spin(p.fds[1], Dir::Write));
    char path[] = "/tmp/pipespin-may-spin.XXXXXX";
    const int file = ::mkstemp(path);
    REQUIRE(file >= 0);
    ::unlink(path);
    CHECK_FALSE(may_spin(file, Dir::Read));  // not a pipe
    ::close(file);
    fd_table().forget(file);
    Options o;
    o.spin_read = 0;
    PipeFixture q(Mode::Fixed, 1, o);
    CHECK_FALSE(may_spin(q.fds[0], Dir::Read));
    PipeFixture r(Mode::Off, 1, at_info());
    CHECK_FALSE(may_spin(r.fds[0], Dir::Read));
    PipeFixture a(Mode::Adaptive, 50);
    // A fresh fd whose process has learnt nothing yet is watched, not spun.
    runtime().prior.lane(Origin::Made, 0).score.store(0);
    CHECK_FALSE(may_spin(a.fds[0], Dir::Read));
    a.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    CHECK(may_spin(a.fds[0], Dir::Read));
    a.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    CHECK_FALSE(may_spin(a.fds[0], Dir::Read));
}

TEST_CASE("engine: a non-blocking fd is never spun for", "[engine]") {
    PipeFixture p(Mode::Fixed, 1000000);  // a 1 s budget would be noticed
    REQUIRE(::fcntl(p.fds[0], F_SETFL, O_NONBLOCK) == 0);
    const auto waits = p.reader().waits.load();  // counters are per slot, cumulative
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK_FALSE(plan.obs.spun);
    CHECK(p.reader().waits.load() == waits);
}

TEST_CASE("engine: off mode that nobody observes does nothing at all", "[engine]") {
    // No statistics lines, log below info: nobody reads the counters, so a
    // call neither counts nor looks at its fd (off makes the syscalls no
    // shim makes).
    PipeFixture p(Mode::Off);
    CHECK(runtime().inert.load());
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.dir == nullptr);
    CHECK(io_untracked(1));  // the read and write wrappers go no further
    CHECK(before_ready(p.fds[0], Dir::Read, Via::Stdio).dir == nullptr);
    CHECK(p.reader().calls.load() == 0);
    // An fd never seen before is not even classified (fstat, fcntl).
    int q[2];
    REQUIRE(::pipe(q) == 0);
    fd_table().forget(q[0]);
    before_read(q[0], &c, 1);
    CHECK((fd_table().peek(q[0]) & fdbits::kKnown) == 0);
    ::close(q[0]);
    ::close(q[1]);
    // Observed (log=info, or statistics), off counts again.
    Options o = at_info();
    o.mode_v = static_cast<std::uint32_t>(Mode::Off);
    configure(o, 4096);
    CHECK_FALSE(runtime().inert.load());
    CHECK_FALSE(io_untracked(1));
    CHECK(io_untracked(0));  // a read of nothing never waits
    before_read(p.fds[0], &c, 1);
    CHECK(p.reader().calls.load() == 1);
}

TEST_CASE("engine: closes keep the fd table once it has stored an entry", "[engine]") {
    // Every short-lived process closes something ("true" its stdout at
    // exit); while its table has never stored an entry, a close that looked
    // at it would only fault its page in: in mode off with nothing to
    // report (inert), and as much in adaptive mode.
    runtime().table_used.store(false);
    Options off;
    off.mode_v = static_cast<std::uint32_t>(Mode::Off);
    configure(off, 2);
    REQUIRE(runtime().inert.load());
    CHECK_FALSE(io_table_kept());
    configure(Options{}, 2);
    REQUIRE_FALSE(runtime().inert.load());
    CHECK_FALSE(io_table_kept());
    // Looking an fd up without storing anything (nothing classified, no
    // look counted) leaves it so.
    FdTable t;
    CHECK(t.peek(5) == 0);
    CHECK_FALSE(t.lookup_known(5).pipe());
    CHECK_FALSE(io_table_kept());
    // The first entry any table stores (here a pipe made by the process)
    // and closes keep it true for good, whatever the settings become.
    int p[2];
    REQUIRE(::pipe(p) == 0);
    t.set_pipe(p[0], p[1], false);
    CHECK(io_table_kept());
    configure(off, 2);
    REQUIRE(runtime().inert.load());
    CHECK(io_table_kept());
    // An fd of a block past the first (mapped on its first store) marks it too.
    runtime().table_used.store(false);
    t.set_pipe(FdTable::kBlockFds + 7, FdTable::kBlockFds + 8, false);
    CHECK(io_table_kept());
    t.release();
    ::close(p[0]);
    ::close(p[1]);
    configure(Options{}, 2);  // the defaults again, for the tests after this one
}

TEST_CASE("engine: off mode neither looks nor spins, but counts the call", "[engine]") {
    SECTION("without statistics lines, before the real call: nothing is left for after it") {
        PipeFixture p(Mode::Off, 1, at_info());
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Call);
        CHECK_FALSE(plan.obs.spun);
        CHECK(plan.dir == nullptr);
        CHECK(p.reader().calls.load() == 1);
        after_call(plan, 1);  // a no-op now: the call is not counted twice
        CHECK(p.reader().calls.load() == 1);
        CHECK(p.reader().bytes.load() == 0);
    }
    SECTION("with statistics lines, after the real call, with the bytes it moved") {
        Options o;
        std::strcpy(o.stats.s, "stderr");
        PipeFixture p(Mode::Off, 1, o);
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Call);
        CHECK(plan.dir == &p.reader());
        CHECK(p.reader().calls.load() == 0);
        after_call(plan, 1);
        CHECK(p.reader().calls.load() == 1);
        CHECK(p.reader().bytes.load() == 1);
    }
}

TEST_CASE("engine: adaptive counts a call early only outside a measuring epoch", "[engine]") {
    PipeFixture p(Mode::Adaptive, 50);
    char c;
    // A new fd measures first (TrySpin): data already there is answered by
    // the look, and the call is left for after_call(), which needs its bytes.
    REQUIRE(::write(p.fds[1], "x", 1) == 1);
    Plan plan = before_read(p.fds[0], &c, 1);
    REQUIRE(plan.action == Plan::Action::Done);
    CHECK(plan.dir == &p.reader());
    after_call(plan, plan.result);
    CHECK(p.reader().policy.epoch_calls.load() == 1);
    // Not spinning won: its epochs only count calls, before the real call.
    p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    p.reader().policy.exploit_left.store(1);
    plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK_FALSE(plan.obs.spun);
    CHECK(plan.dir == nullptr);
    CHECK(p.reader().policy.epoch_calls.load() == 2);
}

TEST_CASE("engine: adaptive learns from a spun wait that outlasted its budget", "[engine]") {
    PipeFixture p(Mode::Adaptive, 1);
    p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
    for (int i = 0; i < SpinPolicy::kLongWaitLimit; ++i) {
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        REQUIRE(plan.obs.spun);
        plan.t_call -= 1'000'000;  // as if the real read then slept 1 ms
        after_call(plan, 1);
    }
    // Its TrySpin epoch lost: not spinning wins at once.
    CHECK(p.reader().policy.get_phase() == Phase::Plain);
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);  // no more spinning
    CHECK_FALSE(plan.obs.spun);
}

namespace {

std::atomic<int> g_reload_calls{0};
void count_reload() noexcept {
    g_reload_calls.fetch_add(1);
}

// Registers the counting hook. The period is an hour; a test makes it pass
// by moving the next check to the clock's first tick (0 means no period has
// started), so nothing depends on the clock.
struct ReloadFixture {
    explicit ReloadFixture() {
        g_reload_calls = 0;
        set_reload_hook(count_reload);
    }
    ~ReloadFixture() { set_reload_hook(nullptr); }
    static void let_period_pass() { runtime().reload_next_ns.store(1); }
    static void start_afresh() { runtime().reload_next_ns.store(0); }
};

Options with_reload(Options o = {}) {
    o.reload_ms = 3'600'000;
    return o;
}

}  // namespace

TEST_CASE("engine: the reload check runs on a wait that would block, rate-limited",
          "[engine][reload]") {
    ReloadFixture r;
    PipeFixture p(Mode::Fixed, 1, with_reload());
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);  // within the period: no check
    CHECK(g_reload_calls == 0);
    ReloadFixture::let_period_pass();
    plan = before_read(p.fds[0], &c, 1);
    CHECK(g_reload_calls == 1);
    plan = before_read(p.fds[0], &c, 1);  // the next period has not passed
    CHECK(g_reload_calls == 1);
}

TEST_CASE("engine: a process's first chance starts the period without a check",
          "[engine][reload]") {
    // The file was read at start-up: the first wait of a process (or of a
    // forked child of one that never waited) looks at it a period later.
    ReloadFixture r;
    PipeFixture p(Mode::Fixed, 1, with_reload());
    ReloadFixture::start_afresh();
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(g_reload_calls == 0);
    CHECK(runtime().reload_next_ns.load() > 1);
    ReloadFixture::let_period_pass();
    plan = before_read(p.fds[0], &c, 1);
    CHECK(g_reload_calls == 1);
}

TEST_CASE("engine: reads that find data check for a reload once in 16 calls", "[engine][reload]") {
    // A fd whose pipe is always ready never takes the slow path: the check
    // rides on one call in 16 per fd direction (a plain phase never blocks
    // either), at most every reload_ms.
    ReloadFixture r;
    PipeFixture p(Mode::Fixed, 1, with_reload());
    for (int i = 0; i < 32; ++i) {
        ReloadFixture::let_period_pass();
        REQUIRE(::write(p.fds[1], "x", 1) == 1);
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Done);
        after_call(plan, plan.result);
    }
    CHECK(g_reload_calls == 2);
}

TEST_CASE("engine: with spinning off, any call on a pipe may check for a reload",
          "[engine][reload]") {
    ReloadFixture r;
    PipeFixture p(Mode::Off, 1, with_reload(at_info()));
    ReloadFixture::let_period_pass();
    REQUIRE(::write(p.fds[1], "x", 1) == 1);  // no look happens in mode off
    char c;
    before_read(p.fds[0], &c, 1);
    CHECK(g_reload_calls == 1);
}

TEST_CASE("engine: off mode that nobody observes never checks for a reload", "[engine][reload]") {
    ReloadFixture r;
    PipeFixture p(Mode::Off, 1, with_reload());
    ReloadFixture::let_period_pass();
    char c;
    before_read(p.fds[0], &c, 1);
    pollfd pfd{p.fds[0], POLLIN, 0};
    before_poll(&pfd, 1, 1);
    CHECK(g_reload_calls == 0);
}

TEST_CASE("engine: reload_ms 0 never checks", "[engine][reload]") {
    ReloadFixture r;
    Options o = at_info();
    o.reload_ms = 0;
    PipeFixture p(Mode::Off, 1, o);
    ReloadFixture::let_period_pass();
    char c;
    before_read(p.fds[0], &c, 1);
    CHECK(g_reload_calls == 0);
}

TEST_CASE("engine: configure() applies to fds that already exist", "[engine][reload]") {
    PipeFixture p(Mode::Off, 1);
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK_FALSE(plan.obs.spun);
    Options o;
    o.mode_v = static_cast<std::uint32_t>(Mode::Fixed);
    o.spin_us = 1;
    configure(o, 4096);
    plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.obs.spun);
    o.spin_read = 0;  // a direction switched off
    configure(o, 4096);
    plan = before_read(p.fds[0], &c, 1);
    CHECK_FALSE(plan.obs.spun);
}

TEST_CASE("engine: a change of mode restarts what adaptive learnt", "[engine][reload]") {
    PipeFixture p(Mode::Adaptive, 1);
    p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    p.reader().policy.exploit_left.store(10);
    Options o;
    o.mode_v = static_cast<std::uint32_t>(Mode::Adaptive);
    o.spin_us = 1;
    configure(o, 4096);  // nothing changed: kept
    CHECK(p.reader().policy.get_phase() == Phase::Plain);
    o.spin_us = 2;
    configure(o, 4096);
    CHECK(p.reader().policy.get_phase() == Phase::Fresh);
    CHECK(p.reader().policy.exploit_left.load() == 0);
}

TEST_CASE("engine: a fresh fd the prior does not spin for is watched: one look, no spin, timed",
          "[engine][fresh]") {
    PipeFixture p(Mode::Adaptive, 1000000);  // a 1 s ceiling: a spin would be noticed
    FreshPrior::Lane& lane = runtime().prior.lane(Origin::Made, 0);
    lane.score.store(0);
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.action == Plan::Action::Call);
    CHECK_FALSE(plan.obs.spun);
    CHECK(plan.obs.watched);
    CHECK(plan.lane == &lane);
    CHECK(p.reader().spins.load() == 0);
    // The real call returned at once: a spin would have caught it.
    after_call(plan, 1);
    CHECK(lane.score.load() == FreshPrior::kHitGain);
    CHECK(p.reader().waits.load() == 1);
    // A non-blocking fd's EAGAIN is no wait and teaches nothing.
    REQUIRE(::fcntl(p.fds[0], F_SETFL, O_NONBLOCK) == 0);
    plan = before_read(p.fds[0], &c, 1);
    after_call(plan, -1);
    CHECK(lane.score.load() == FreshPrior::kHitGain);
    CHECK(p.reader().waits.load() == 1);
    lane.score.store(0);
}

TEST_CASE("engine: a poll on a fresh pipe is watched like a read, and teaches the prior",
          "[engine][fresh]") {
    PipeFixture p(Mode::Adaptive, 1000000);
    FreshPrior::Lane& lane = runtime().prior.lane(Origin::Made, 0);
    lane.score.store(0);
    sys::PollFd pfd{p.fds[0], sys::kPollIn, 0};
    Plan plan = before_poll(&pfd, 1, 1000);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.obs.watched);
    CHECK_FALSE(plan.obs.spun);
    CHECK(plan.timeout_ms == 1000);  // the caller's own: nothing spent
    after_call(plan, 1);             // ready at once: a spin would have caught it
    CHECK(lane.score.load() == FreshPrior::kHitGain);
    // A set's timeout (0 ready) is no sample. (The prior is put back where
    // the fresh pipe is watched, not spun on: the spin would last the 1 s
    // ceiling.)
    lane.score.store(0);
    plan = before_poll(&pfd, 1, 1000);
    CHECK(plan.obs.watched);
    CHECK_FALSE(plan.obs.spun);
    after_call(plan, 0);
    CHECK(lane.score.load() == 0);
    lane.score.store(0);
}

TEST_CASE("engine: a stream's calls go on the fast lane, and every one is counted",
          "[engine][fast]") {
    // A writer into a pipe with room and a reader that always finds data:
    // adaptive soon stops spinning (Plain), and the fast lane counts most
    // calls without the engine's full path. Every call is in the counters
    // (a snapshot adds what a lane has pending), and the epochs run as
    // the policy counts them.
    PipeFixture p(Mode::Adaptive, 50, at_info());
    constexpr int kPairs = 2000;
    StatsSnapshot before;  // what other tests left in the process's totals
    stats_snapshot(before);
    char c = 'x';
    int full_reads = 0;  // reads the fast lane did not count
    for (int i = 0; i < kPairs; ++i) {
        Plan w = before_write(p.fds[1], &c, 1);
        if (w.action == Plan::Action::Call) {
            const long wrote = ::write(p.fds[1], &c, 1);
            REQUIRE(wrote == 1);
            after_call(w, wrote);
        } else {
            REQUIRE(w.action == Plan::Action::Done);  // the nowait try wrote it
            after_call(w, w.result);
        }
        const std::uint64_t counted = p.reader().calls.load();
        Plan r = before_read(p.fds[0], &c, 1);
        if (r.action == Plan::Action::Call) {
            const long got = ::read(p.fds[0], &c, 1);
            REQUIRE(got == 1);
            after_call(r, got);
        } else {
            REQUIRE(r.action == Plan::Action::Done);
            after_call(r, r.result);
        }
        if (p.reader().calls.load() != counted) ++full_reads;
    }
    auto counted = [&](StatDir d) {
        StatsSnapshot now;
        stats_snapshot(now);
        return now.total(d).calls - before.total(d).calls;
    };
    CHECK(counted(StatDir::Read) == kPairs);
    CHECK(counted(StatDir::Write) == kPairs);
    CHECK(p.reader().policy.get_phase() == Phase::Plain);
    // Most reads never reached the fd's state.
    CHECK(full_reads < kPairs / 4);
    CHECK(p.reader().calls.load() < kPairs);
    // Forgetting the fds (a close) folds what their lanes counted into the
    // process's totals.
    fd_table().forget(p.fds[0]);
    fd_table().forget(p.fds[1]);
    CHECK(counted(StatDir::Read) == kPairs);
    CHECK(counted(StatDir::Write) == kPairs);
}

namespace {

// A pipe in a run of not spinning (Plain, many epochs left), its input ready.
void plain_and_ready(PipeFixture& p) {
    p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::Plain));
    p.reader().policy.exploit_left.store(1000);
    REQUIRE(::write(p.fds[1], "x", 1) == 1);
}

}  // namespace

// A first look that found the set ready would make the plan Done: a Call
// for a ready set is a call made without that look. Each array below has a
// length no other test uses (the fds past the first are -1, which poll
// skips), so that its first call is one the kernel has not read before.
TEST_CASE("engine: a set that will not spin gets the real call alone, once its array was read",
          "[engine][sets]") {
    PipeFixture p(Mode::Adaptive, 50);
    plain_and_ready(p);
    SECTION("poll: the array's first call looks; the next ones do not, and count the call") {
        sys::PollFd set[7] = {{p.fds[0], sys::kPollIn, 0}};
        for (int i = 1; i < 7; ++i) set[i].fd = -1;
        Plan plan = before_poll(set, 7, 1000);
        CHECK(plan.action == Plan::Action::Done);  // the kernel's look: ready
        CHECK(plan.result == 1);
        const std::uint32_t calls = p.reader().policy.epoch_calls.load();
        plan = before_poll(set, 7, 1000);
        CHECK(plan.action == Plan::Action::Call);
        CHECK(plan.timeout_ms == 1000);
        CHECK_FALSE(plan.obs.spun);
        CHECK(p.reader().policy.epoch_calls.load() == calls + 1);  // count_early()
        // Another length at the same address is a new array: looked at first.
        plan = before_poll(set, 6, 1000);
        CHECK(plan.action == Plan::Action::Done);
    }
    SECTION("ppoll: the same") {
        sys::PollFd set[9] = {{p.fds[0], sys::kPollIn, 0}};
        for (int i = 1; i < 9; ++i) set[i].fd = -1;
        CHECK(before_ppoll(set, 9, 1'000'000, nullptr).action == Plan::Action::Done);
        CHECK(before_ppoll(set, 9, 1'000'000, nullptr).action == Plan::Action::Call);
    }
    SECTION("a measuring epoch still looks: its cost counts the waits a look finds") {
        p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::TryPlain));
        sys::PollFd set[11] = {{p.fds[0], sys::kPollIn, 0}};
        for (int i = 1; i < 11; ++i) set[i].fd = -1;
        CHECK(before_poll(set, 11, 1000).action == Plan::Action::Done);
        CHECK(before_poll(set, 11, 1000).action == Plan::Action::Done);
    }
    SECTION("a set without a pipe: no look once its array was read") {
        int sv[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        REQUIRE(::write(sv[1], "x", 1) == 1);
        sys::PollFd set[13] = {{sv[0], sys::kPollIn, 0}};
        for (int i = 1; i < 13; ++i) set[i].fd = -1;
        CHECK(before_poll(set, 13, 1000).action == Plan::Action::Done);
        Plan plan = before_poll(set, 13, 1000);
        CHECK(plan.action == Plan::Action::Call);
        CHECK(plan.dir == nullptr);
        ::close(sv[0]);
        ::close(sv[1]);
    }
    SECTION("epoll and select, which know their pipe before any look") {
        const int ep = ::epoll_create1(EPOLL_CLOEXEC);
        REQUIRE(ep >= 0);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = p.fds[0];
        REQUIRE(::epoll_ctl(ep, EPOLL_CTL_ADD, p.fds[0], &ev) == 0);
        note_epoll_ctl(ep, EPOLL_CTL_ADD, p.fds[0], EPOLLIN);
        epoll_event out{};
        CHECK(before_epoll_wait(ep, &out, 1, -1, nullptr).action == Plan::Action::Call);
        fd_set rfds;
        FD_ZERO(&rfds);
        FD_SET(p.fds[0], &rfds);
        // Select is never Done (the real call fills the sets), and a look
        // that found its set ready counted nothing: a call counted before
        // the real call is one made without that look.
        const std::uint32_t calls = p.reader().policy.epoch_calls.load();
        Plan plan = before_select(p.fds[0] + 1, &rfds, nullptr, nullptr, -1, nullptr);
        CHECK(plan.action == Plan::Action::Call);
        CHECK(p.reader().policy.epoch_calls.load() == calls + 1);
        CHECK(FD_ISSET(p.fds[0], &rfds));
        ::close(ep);
        fd_table().forget(ep);
    }
}

// A call that finds data at its first look is Done (the nowait probe's read
// is the answer): a Call for a pipe holding data is one made without looks.
TEST_CASE("engine: a fd seen non-blocking skips the looks until it is seen blocking again",
          "[engine][nonblock]") {
    PipeFixture p(Mode::Fixed, 50);
    char c;
    auto seen = [&] { return fd_table().lookup(p.fds[0], nullptr).nonblock_seen(); };
    SECTION("a spin that reads O_NONBLOCK marks the fd; the mode is read again in 16 calls") {
        // Set behind the shim's back (as FIONBIO or another process would).
        REQUIRE(::fcntl(p.fds[0], F_SETFL, O_NONBLOCK) == 0);
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Call);  // the kernel's EAGAIN, no spin's
        CHECK_FALSE(plan.obs.spun);
        after_call(plan, -EAGAIN);
        CHECK(seen());
        REQUIRE(::write(p.fds[1], "x", 1) == 1);
        plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Call);  // no look: the data is still there
        after_call(plan, -EAGAIN);
        // Blocking again, behind the shim's back: one of the next 16 calls
        // reads the mode, and looks.
        REQUIRE(::fcntl(p.fds[0], F_SETFL, 0) == 0);
        int calls = 0;
        for (; calls < 16; ++calls) {
            plan = before_read(p.fds[0], &c, 1);
            if (plan.action == Plan::Action::Done) break;
            after_call(plan, -EAGAIN);
        }
        CHECK(calls < 16);
        CHECK(plan.result == 1);
        CHECK_FALSE(seen());
    }
    SECTION("what the program's fcntl and pipe2 say is taken at once") {
        REQUIRE(::fcntl(p.fds[0], F_SETFL, O_NONBLOCK) == 0);
        fd_table().note_nonblock(p.fds[0], true);  // the fcntl hook's
        CHECK(seen());
        REQUIRE(::write(p.fds[1], "x", 1) == 1);
        CHECK(before_read(p.fds[0], &c, 1).action == Plan::Action::Call);
        REQUIRE(::fcntl(p.fds[0], F_SETFL, 0) == 0);
        fd_table().note_nonblock(p.fds[0], false);
        CHECK_FALSE(seen());
        CHECK(before_read(p.fds[0], &c, 1).action == Plan::Action::Done);
        int q[2];
        REQUIRE(::pipe2(q, O_NONBLOCK) == 0);
        note_pipe(q[0], q[1], true);
        CHECK(fd_table().lookup(q[0], nullptr).nonblock_seen());
        CHECK(fd_table().lookup(q[1], nullptr).nonblock_seen());
        for (int fd : q) {
            ::close(fd);
            fd_table().forget(fd);
        }
    }
}

// ---- quiet pipes: new pipes of a process whose new pipes were one-shots ------

namespace {

// A new pipe, as the pipe() wrapper records it (note_pipe), closed as the
// close() wrapper does (note_close).
struct NewPipe {
    int fds[2] = {-1, -1};
    NewPipe() {
        REQUIRE(::pipe(fds) == 0);
        note_pipe(fds[0], fds[1]);
    }
    void close_end(int i) {
        if (fds[i] < 0) return;
        ::close(fds[i]);
        note_close(fds[i]);
        fds[i] = -1;
    }
    ~NewPipe() {
        // A quiet mark stays after a close; the next test's pipes on these
        // numbers replace it.
        close_end(1);
        close_end(0);
    }
    bool quiet() const { return (fd_table().peek(fds[0]) & fdbits::kQuiet) != 0; }
};

// A wait of `wait_ns` on the pipe's read end as the engine sees it: the
// call's look finds it empty, the real call (the caller's) returns after
// wait_ns with a byte. Long waits are waited out on the clock: a wait is at
// least that long however slow the machine.
void one_wait(const NewPipe& p, std::uint64_t wait_ns) {
    char c = 0;
    Plan plan = before_read(p.fds[0], &c, 1);
    const std::uint64_t until = sys::now_ns() + wait_ns;
    while (sys::now_ns() < until) {
    }
    after_call(plan, 1);
}

// A read that finds its answer at once (data, or EOF), as the wrapper makes it.
void read_at_once(const NewPipe& p) {
    char c = 0;
    Plan plan = before_read(p.fds[0], &c, 1);
    const long r = plan.action == Plan::Action::Done ? plan.result : ::read(p.fds[0], &c, 1);
    after_call(plan, r);
}

// A $(...) as its parent sees it: the child's output read (after a wait of
// wait_ns, or, with 0, there at once: a busy host's child often writes
// before its parent reads), the write end closed (the child's exit), the
// EOF read, the read end closed.
void one_shot(NewPipe& p, std::uint64_t wait_ns) {
    if (wait_ns == 0) {
        REQUIRE(::write(p.fds[1], "x", 1) == 1);
        read_at_once(p);
    } else {
        one_wait(p, wait_ns);
    }
    p.close_end(1);
    read_at_once(p);
    p.close_end(0);
}

struct PriorReset {
    ~PriorReset() { runtime().prior.reset(); }
};

void learn_one_shots() {
    for (int i = 0; i < FreshPrior::kScoreMax; ++i) runtime().prior.made_pipe_closed(1);
}

}  // namespace

TEST_CASE("engine: a process whose new pipes are one-shots makes its new pipes quiet",
          "[engine][fresh][quiet]") {
    PipeFixture config(Mode::Adaptive, 50);  // nobody reads the counters
    PriorReset reset;
    // A shell's $(...): each pipe is read once or twice, to its EOF, and
    // closed; whether its reads waited (an idle host: the child starts
    // late) or were answered at once (a busy one) makes no difference.
    for (const std::uint64_t wait_ns : {std::uint64_t{1'000'000}, std::uint64_t{0}}) {
        CAPTURE(wait_ns);
        runtime().prior.reset();
        int first_quiet = 0;
        for (int i = 1; i <= 80 && first_quiet == 0; ++i) {
            NewPipe p;
            if (p.quiet()) {
                first_quiet = i;
                break;
            }
            one_shot(p, wait_ns);
        }
        CAPTURE(first_quiet);
        // Four one-shots, then the first new pipe that is not a sample.
        CHECK(first_quiet >= FreshPrior::kQuietScore + 1);
        CHECK(first_quiet <= 80);
        // A quiet pipe's calls pass through: no look, no wait watched,
        // nothing counted, its state untouched. The samples keep it quiet.
        int quiet = 0, made = 0;
        for (int i = 0; i < 400; ++i) {
            NewPipe p;
            if (!p.quiet()) {
                ++made;  // a sample: tracked as before, and it teaches the prior
                CHECK(fd_table().lookup(p.fds[0], nullptr).can(Dir::Read));
                one_shot(p, wait_ns);
                continue;
            }
            ++quiet;
            const std::uint64_t w = fd_table().peek(p.fds[0]);
            char c = 0;
            Plan plan = before_read(p.fds[0], &c, 1);
            CHECK(plan.action == Plan::Action::Call);
            CHECK(plan.dir == nullptr);
            CHECK_FALSE(plan.obs.watched);
            CHECK_FALSE(plan.obs.spun);
            after_call(plan, 1);
            CHECK(fd_table().peek(p.fds[0]) == w);
        }
        CAPTURE(quiet, made);
        // One in FreshPrior::kQuietSample by the clock's bits: about 25 of 400.
        CHECK(made >= 1);
        CHECK(made <= 100);
        CHECK(runtime().prior.made_one_shot());
    }
}

TEST_CASE("engine: quiet ends once a pipe made here lives on", "[engine][fresh][quiet]") {
    PipeFixture config(Mode::Adaptive, 50);
    PriorReset reset;
    learn_one_shots();
    REQUIRE(runtime().prior.made_one_shot());
    // The first sampled pipe is a ping-pong's: it is read on and on.
    int pipes = 0;
    for (; pipes < 2000 && runtime().prior.made_one_shot(); ++pipes) {
        NewPipe p;
        if (p.quiet()) continue;
        for (std::uint64_t i = 0; i < 2 * FreshPrior::kLongCalls; ++i) {
            REQUIRE(::write(p.fds[1], "x", 1) == 1);
            read_at_once(p);
        }
    }
    CAPTURE(pipes);
    CHECK_FALSE(runtime().prior.made_one_shot());
    NewPipe after;
    CHECK_FALSE(after.quiet());
    // A read end closed after many calls, or none (handed to a child), or a
    // write end, says nothing of one-shots.
    runtime().prior.made_pipe_closed(0);
    runtime().prior.made_pipe_closed(FreshPrior::kOneShotCalls + 1);
    CHECK_FALSE(runtime().prior.made_one_shot());
}

TEST_CASE("engine: no quiet pipes where the counters are read, in fixed mode, or for a ping-pong",
          "[engine][fresh][quiet]") {
    PriorReset reset;
    auto any_quiet = [] {
        for (int i = 0; i < 64; ++i) {
            NewPipe p;
            if (p.quiet()) return true;
        }
        return false;
    };
    {
        PipeFixture config(Mode::Adaptive, 50, at_info());  // the exit report counts every call
        learn_one_shots();
        CHECK_FALSE(any_quiet());
    }
    {
        PipeFixture config(Mode::Fixed, 50);
        learn_one_shots();
        CHECK_FALSE(any_quiet());
    }
    {
        // A new process: nothing learnt yet (a ping-pong's pipes are
        // watched, then spun on, from their first waits).
        PipeFixture config(Mode::Adaptive, 50);
        runtime().prior.reset();
        CHECK_FALSE(any_quiet());
    }
}

TEST_CASE("engine: a write's look asks FIONREAD and credits the room it finds", "[engine][room]") {
    // A write's look never polls the pipe (a poll marks it for epoll and
    // makes every later write wake its readers' queue: engine.cpp,
    // look_for_room()). The room one look proves free lets the next writes
    // go without a look, as long as every write came through a look; a
    // full pipe is spun for.
    PipeFixture p(Mode::Fixed, 1);
    DirState& w = fd_table().state(p.fds[1])->dir[1];
    const long size = ::fcntl(p.fds[1], F_GETPIPE_SZ);
    REQUIRE(size > 0);
    const auto page = static_cast<std::uint32_t>(::sysconf(_SC_PAGESIZE));
    const auto pages = static_cast<std::uint32_t>(size / page);
    char buf[100] = {};
    auto write_one = [&] {
        Plan plan = before_write(p.fds[1], buf, sizeof buf);
        REQUIRE(plan.action == Plan::Action::Call);
        CHECK_FALSE(plan.obs.spun);
        const long wrote = ::write(p.fds[1], buf, sizeof buf);
        REQUIRE(wrote == static_cast<long>(sizeof buf));
        after_call(plan, wrote);
    };
    write_one();  // an empty pipe: all its room but the spare page, at half a page each
    CHECK(w.policy.pipe_pages.load() == pages);
    const std::uint16_t first = room_credit(0, pages, page);
    REQUIRE(first > 2 * sizeof buf);
    CHECK(w.policy.room_credit.load() == first - sizeof buf);
    write_one();  // spent, not looked again
    CHECK(w.policy.room_credit.load() == first - 2 * sizeof buf);
    // A write the credit covers spends it whatever its budget would be
    // (here none, by the fd's hint), so the credit stays true for the
    // writes after it: they need no look either.
    w.policy.hint.store(kHintNever);
    write_one();
    w.policy.hint.store(kHintNone);
    CHECK(w.policy.room_credit.load() == first - 3 * sizeof buf);
    write_one();
    CHECK(w.policy.room_credit.load() == first - 4 * sizeof buf);
    // A call that went without a look (a run of not spinning) voids the
    // credit: the next write looks at the pipe as it is now.
    bump(w.calls);
    write_one();
    CHECK(w.policy.room_credit.load() == room_credit(4 * sizeof buf, pages, page) - sizeof buf);

    // Fill the pipe (not through the engine: as another writer would, so
    // this fd's credit still stands), then a write spins its budget once
    // its credit is void. With it, the write goes to the kernel unlooked
    // (and would wait there: the price of a credit other writers spent).
    fill_pipe(p.fds[1]);
    {
        Plan credited = before_write(p.fds[1], buf, sizeof buf);
        CHECK(credited.action == Plan::Action::Call);
        CHECK_FALSE(credited.obs.spun);
        after_call(credited, -EAGAIN);
    }
    bump(w.calls);
    Plan plan = before_write(p.fds[1], buf, sizeof buf);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.obs.spun);
    CHECK_FALSE(plan.obs.spin_hit);
    after_call(plan, -EAGAIN);
}

TEST_CASE("engine: a pipe grown since its size was asked is not taken for full", "[engine][room]") {
    // The size is asked once per fd; a write's spin that finds the pipe
    // full by that size asks again once it lasts: a pipe grown meanwhile
    // (F_SETPIPE_SZ, here or by its peer) has room, and the spin ends as a
    // hit, not at the end of its budget (1 s here: without the second
    // question this test takes that second and fails).
    PipeFixture p(Mode::Fixed, 1'000'000);
    DirState& w = fd_table().state(p.fds[1])->dir[1];
    char buf[100] = {};
    Plan first = before_write(p.fds[1], buf, sizeof buf);  // asks the size
    REQUIRE(first.action == Plan::Action::Call);
    REQUIRE(::write(p.fds[1], buf, sizeof buf) == static_cast<long>(sizeof buf));
    after_call(first, sizeof buf);
    REQUIRE(w.policy.pipe_pages.load() != 0);
    const long size = ::fcntl(p.fds[1], F_GETPIPE_SZ);
    REQUIRE(size > 0);
    // Fill it to its old size, not through the engine, then grow it.
    fill_pipe(p.fds[1]);
    if (::fcntl(p.fds[1], F_SETPIPE_SZ, 4 * size) < 0) {
        WARN("skipped: F_SETPIPE_SZ refused (" << std::strerror(errno) << ")");
        return;
    }
    bump(w.calls);  // the credit is void: the write looks
    Plan plan = before_write(p.fds[1], buf, sizeof buf);
    CHECK(plan.action == Plan::Action::Call);
    CHECK(plan.obs.spun);
    CHECK(plan.obs.spin_hit);
    CHECK(static_cast<long>(w.policy.pipe_pages.load()) * ::sysconf(_SC_PAGESIZE) == 4 * size);
    after_call(plan, -EAGAIN);
}
