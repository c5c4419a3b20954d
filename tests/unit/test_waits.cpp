// The engine's wait histograms (how long waits lasted, by how they ended)
// and the statistics tick, against real pipes. No timing: a long real call
// is simulated by moving the plan's start back, as if the call had slept.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "core/engine.h"
#include "pipe_fixture.h"
#include "platform/sys.h"

using namespace pipespin;

namespace {

using test::PipeFixture;

Options with_stats() {
    Options o;
    std::strcpy(o.stats.s, "stderr");
    return o;
}

// The process's histogram for pipe reads (the counters are process-wide and
// cumulative: tests compare before and after).
WaitHist reads(WaitEnd e) {
    StatsSnapshot s;
    stats_snapshot(s);
    return s.wait[static_cast<int>(StatKind::Pipe)][static_cast<int>(StatDir::Read)]
                 [static_cast<int>(e)];
}

// The real call "slept" 0.75 ms: the middle of its histogram bucket
// [2^19, 2^20) ns, so that a spin and a call preempted on a busy machine
// (tens of µs more) still land in it; 1 ms sat 48.6 µs below the bucket's end.
constexpr std::uint64_t kSlept = 750'000;

// A read of fd's empty pipe whose spin misses and whose real call then
// "sleeps" kSlept, through after_call().
Plan missed_read(int fd) {
    char c;
    Plan plan = before_read(fd, &c, 1);
    REQUIRE(plan.obs.spun);
    REQUIRE_FALSE(plan.obs.spin_hit);
    plan.t_call -= kSlept;
    after_call(plan, 1);
    return plan;
}

}  // namespace

TEST_CASE("waits: a spin that missed is a miss, lasting the spin and the sleep", "[waits]") {
    PipeFixture p(Mode::Fixed, 1, with_stats());
    const WaitHist before = reads(WaitEnd::Miss);
    const std::uint64_t hits = reads(WaitEnd::Hit).count();
    const Plan plan = missed_read(p.fds[0]);
    const WaitHist after = reads(WaitEnd::Miss);
    CHECK(after.count() == before.count() + 1);
    CHECK(after.n[wait_bucket(kSlept)] >= before.n[wait_bucket(kSlept)] + 1);
    CHECK(after.ns - before.ns >= kSlept + plan.obs.spin_ns);
    CHECK(reads(WaitEnd::Hit).count() == hits);
    CHECK(p.reader().spins.load() - p.reader().spin_hits.load() == 1);  // the same wait
}

TEST_CASE("waits: with statistics lines on, a call made without a look is timed", "[waits]") {
    SECTION("mode off (the control arm): a call that lasted past the floor is a plain wait") {
        PipeFixture p(Mode::Off, 1, with_stats());
        const WaitHist before = reads(WaitEnd::Plain);
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        REQUIRE(plan.dir == &p.reader());
        CHECK(plan.timed == Plan::Timed::Unlooked);
        CHECK_FALSE(plan.obs.spun);
        plan.t_call -= kSlept;
        after_call(plan, 1);
        WaitHist after = reads(WaitEnd::Plain);
        CHECK(after.count() == before.count() + 1);
        CHECK(after.n[wait_bucket(kSlept)] == before.n[wait_bucket(kSlept)] + 1);
        CHECK(after.ns - before.ns >= kSlept);
        CHECK(p.reader().waits.load() == 0);  // `waits` stays the looked-at waits

        // A write is not timed: one that lasts is mostly one that woke its reader.
        plan = before_write(p.fds[1], "x", 1);
        CHECK(plan.dir == &fd_table().state(p.fds[1])->dir[1]);
        CHECK(plan.timed == Plan::Timed::No);
        after_call(plan, 1);

        // What the program gets as an error (a non-blocking fd's EAGAIN) is no wait.
        plan = before_read(p.fds[0], &c, 1);
        REQUIRE(plan.timed == Plan::Timed::Unlooked);
        plan.t_call -= kSlept;
        after_call(plan, -EAGAIN);
        CHECK(reads(WaitEnd::Plain).count() == after.count());
    }
    SECTION("without statistics lines nothing is timed: the call is counted before it") {
        PipeFixture p(Mode::Off, 1);
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.dir == nullptr);
        CHECK(plan.timed == Plan::Timed::No);
    }
    SECTION("a fd that spins is not timed before its look") {
        PipeFixture p(Mode::Fixed, 1, with_stats());
        REQUIRE(::write(p.fds[1], "x", 1) == 1);
        char c;
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Done);  // the look was the answer: no wait
        CHECK(plan.timed == Plan::Timed::No);
    }
}

TEST_CASE("waits: a watched wait is a plain wait, however short", "[waits][fresh]") {
    PipeFixture p(Mode::Adaptive, 1000000, with_stats());
    FreshPrior::Lane& lane = runtime().prior.lane(Origin::Made, 0);
    lane.score.store(0);
    const std::uint64_t before = reads(WaitEnd::Plain).count();
    char c;
    Plan plan = before_read(p.fds[0], &c, 1);
    REQUIRE(plan.obs.watched);
    after_call(plan, 1);
    CHECK(reads(WaitEnd::Plain).count() == before + 1);
    lane.score.store(0);
}

// Only statistics lines read the histograms; without them a wait writes
// nothing process-wide (a forking parent would copy the page per child).
TEST_CASE("waits: without statistics lines the histograms are left alone", "[waits]") {
    PipeFixture p(Mode::Fixed, 1);
    const std::uint64_t before = reads(WaitEnd::Miss).count();
    missed_read(p.fds[0]);
    CHECK(reads(WaitEnd::Miss).count() == before);
    CHECK(p.reader().spins.load() - p.reader().spin_hits.load() == 1);  // the wait was counted
}

namespace {

std::atomic<int> g_ticks{0};
std::uint64_t count_tick(std::uint64_t now) noexcept {
    g_ticks.fetch_add(1);
    return now + 3'600'000'000'000ull;  // the next one in an hour
}

}  // namespace

TEST_CASE("engine: the statistics tick also runs from calls that will not spin", "[engine][tick]") {
    PipeFixture p(Mode::Adaptive, 50);
    char buf[256] = {};
    REQUIRE(::write(p.fds[1], buf, sizeof buf) == static_cast<long>(sizeof buf));
    // A reader that never waits: after a few calls, not spinning wins and
    // its calls take no slow path at all.
    for (int i = 0; i < 64 && p.reader().policy.get_phase() != Phase::Plain; ++i) {
        Plan plan = before_read(p.fds[0], buf, 1);
        after_call(plan,
                   plan.action == Plan::Action::Done ? plan.result : ::read(p.fds[0], buf, 1));
    }
    REQUIRE(p.reader().policy.get_phase() == Phase::Plain);
    g_ticks = 0;
    set_stats_tick(count_tick, 0);  // due now
    for (int i = 0; i < 32; ++i) {
        Plan plan = before_read(p.fds[0], buf, 1);
        CHECK_FALSE(plan.obs.spun);
        CHECK(::read(p.fds[0], buf, 1) == 1);
        after_call(plan, 1);
    }
    // Once (one call in 16 looks; the tick put its next deadline an hour away).
    CHECK(g_ticks.load() == 1);
    CHECK(runtime().stats_next_ns.load() > sys::coarse_ns() + 3'000'000'000'000ull);
    set_stats_tick(nullptr, 0);
}

namespace {

// A tick that switches the process to the control arm, as ab_period does.
std::uint64_t switch_off_tick(std::uint64_t now) noexcept {
    g_ticks.fetch_add(1);
    Options o;
    o.mode_v = static_cast<std::uint32_t>(Mode::Off);
    configure(o, 4096);
    return now + 3'600'000'000'000ull;
}

}  // namespace

TEST_CASE("engine: a wait whose slow path switched to the control arm does not spin",
          "[engine][tick]") {
    PipeFixture p(Mode::Fixed, 1000);
    char c;
    REQUIRE(::write(p.fds[1], "x", 1) == 1);
    Plan plan = before_read(p.fds[0], &c, 1);  // one call: the next is not the 16th
    REQUIRE(plan.action == Plan::Action::Done);
    after_call(plan, plan.result);
    g_ticks = 0;
    set_stats_tick(switch_off_tick, 0);
    const std::uint64_t spins = p.reader().spins.load();
    plan = before_read(p.fds[0], &c, 1);  // empty: the slow path, where the tick runs
    CHECK(g_ticks.load() == 1);
    CHECK(runtime().mode.load() == Mode::Off);
    CHECK_FALSE(plan.obs.spun);
    CHECK(p.reader().spins.load() == spins);
    CHECK(plan.timed == Plan::Timed::Pending);  // a wait a look saw: timed, a plain wait
    set_stats_tick(nullptr, 0);
}

TEST_CASE("engine: a timed read gives the statistics tick its chance", "[engine][tick]") {
    PipeFixture p(Mode::Off, 1, with_stats());
    char c;
    REQUIRE(::write(p.fds[1], "xx", 2) == 2);
    Plan plan = before_read(p.fds[0], &c, 1);  // the 1st call: not the 16th next
    after_call(plan, ::read(p.fds[0], &c, 1));
    g_ticks = 0;
    set_stats_tick(count_tick, 0);  // due now
    plan = before_read(p.fds[0], &c, 1);
    REQUIRE(plan.timed == Plan::Timed::Unlooked);
    CHECK(g_ticks.load() == 0);  // not before the call: it is not the 16th
    after_call(plan, ::read(p.fds[0], &c, 1));
    CHECK(g_ticks.load() == 1);
    set_stats_tick(nullptr, 0);
}
