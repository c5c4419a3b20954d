// What a program tells the shim through include/pipespin/pipespin.h: per-fd
// hints and the per-thread switch, in the spin decision (SpinPolicy), in the
// fd table (kept by dups, dropped at close), in the core's control API
// (core/control.cpp) and in the engine; and the counters snapshot.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <memory>
#include <thread>

#include "core/control.h"
#include "core/engine.h"
#include "core/fd_table.h"
#include "owned_table.h"
#include "core/policy.h"
#include "pipe_fixture.h"
#include "pipespin/pipespin.h"

using namespace pipespin;

namespace {

constexpr std::uint64_t kUs = 1000;

std::uint64_t g_now = 0;
std::uint64_t fake_now() noexcept {
    return g_now;
}

struct Decision {
    PolicyState s;
    WakeEstimate wake;
    FreshPrior prior;
    PolicyParams p{Mode::Adaptive, 50 * kUs, 2, false};
    std::uint64_t budget() {
        return SpinPolicy::budget_ns(s, p, wake, prior.lane(Origin::Made, 0));
    }
};

using test::PipeFixture;

}  // namespace

TEST_CASE("hints: the decision's precedence", "[hints][policy]") {
    Decision d;
    for (Mode mode : {Mode::Fixed, Mode::Adaptive}) {
        d.p.mode = mode;
        d.s.hint.store(kHintNever);
        CHECK(d.budget() == 0);
        d.s.hint.store(200 * kUs);  // above spin_us: the hint replaces it
        CHECK(d.budget() == 200 * kUs);
        d.s.hint.store(kHintNone);
        CHECK(d.budget() == (mode == Mode::Fixed ? 50 * kUs : SpinPolicy::kWatchOnly));
    }
    SECTION("a hinted budget whatever the fd learnt") {
        d.s.hint.store(7 * kUs);
        for (Phase ph :
             {Phase::Fresh, Phase::TrySpin, Phase::TryPlain, Phase::Spin, Phase::Plain}) {
            d.s.phase.store(static_cast<std::uint8_t>(ph));
            CHECK(d.budget() == 7 * kUs);
        }
        d.s.long_waits.store(SpinPolicy::kLongWaitLimit);
        CHECK(d.budget() == 7 * kUs);
    }
    SECTION("no hint makes spin what may not: off, spin_us 0, one CPU, a thread switched off") {
        d.s.hint.store(7 * kUs);
        PolicyParams p = d.p;
        d.p.mode = Mode::Off;
        CHECK(d.budget() == 0);
        d.p = p;
        d.p.max_spin_ns = 0;
        CHECK(d.budget() == 0);
        d.p = p;
        d.p.usable_cpus = 1;
        CHECK(d.budget() == 0);
        d.p = p;
        d.p.thread_off = true;
        CHECK(d.budget() == 0);
        d.s.hint.store(kHintNone);
        d.p.mode = Mode::Fixed;
        CHECK(d.budget() == 0);  // the thread switch alone, in fixed mode too
    }
}

TEST_CASE("hints: a hinted fd needs no free CPU, and the policy does not learn on it",
          "[hints][policy]") {
    Decision d;
    CHECK(SpinPolicy::needs_free_cpu(d.s, d.p));
    d.p.mode = Mode::Fixed;
    CHECK_FALSE(SpinPolicy::needs_free_cpu(d.s, d.p));
    d.p.mode = Mode::Adaptive;
    d.s.hint.store(kHintNever);
    CHECK_FALSE(SpinPolicy::needs_free_cpu(d.s, d.p));

    // Neither counting nor epochs nor the fresh-fd prior.
    g_now = 1'000'000;
    CHECK(SpinPolicy::count_early(d.s, d.p, fake_now));
    for (int i = 0; i < 200; ++i) SpinPolicy::on_call(d.s, d.p, 1, fake_now);
    WaitObservation o;
    o.spun = true;
    o.spin_ns = 1000 * kUs;
    o.budget_ns = kUs;
    SpinPolicy::on_wait(d.s, d.p, d.wake, o, &d.prior.lane(Origin::Made, 0));
    CHECK(d.s.epoch_calls.load() == 0);
    CHECK(d.s.get_phase() == Phase::Fresh);
    CHECK(d.s.fresh_waits.load() == 0);
    CHECK(d.s.long_waits.load() == 0);
}

TEST_CASE("hints: set_hint restarts the learning; reset, copy_from and relearn",
          "[hints][policy]") {
    PolicyState s;
    s.phase.store(static_cast<std::uint8_t>(Phase::Spin));
    s.epoch_calls.store(9);
    s.set_hint(kHintNever);
    CHECK(s.hint.load() == kHintNever);
    CHECK(s.get_phase() == Phase::Fresh);
    CHECK(s.epoch_calls.load() == 0);
    s.epoch_calls.store(3);
    s.set_hint(kHintNever);  // no change: what was learnt since stays
    CHECK(s.epoch_calls.load() == 3);

    s.relearn();  // new settings: the program's word stays
    CHECK(s.epoch_calls.load() == 0);
    CHECK(s.hint.load() == kHintNever);

    PolicyState dup;
    dup.copy_from(s);
    CHECK(dup.hint.load() == kHintNever);

    s.reset();  // a close
    CHECK(s.hint.load() == kHintNone);
}

TEST_CASE("hints: kept by a dup, dropped at close, never inherited by the number",
          "[hints][fd_table]") {
    OwnedTable owned = make_table();
    FdTable& t = *owned;
    t.set_pipe(3, 4);
    t.state(3)->dir[0].policy.set_hint(kHintNever);
    t.state(4)->dir[1].policy.set_hint(9 * kUs);

    t.set_dup(3, 10);  // dup, dup2, dup3, F_DUPFD
    CHECK(t.state(10)->dir[0].policy.hint.load() == kHintNever);
    t.set_dup(4, 3);  // dup2 over a hinted fd: it is what the source is now
    CHECK(t.state(3)->dir[0].policy.hint.load() == kHintNone);
    CHECK(t.state(3)->dir[1].policy.hint.load() == 9 * kUs);

    t.forget(10);  // close: nothing on the number reaches the hint any more
    CHECK_FALSE(t.lookup(10, nullptr).pipe());
    // The next file on the number, classified on first use, starts unhinted.
    FdInfo info = t.lookup(
        10, [](int) noexcept { return fdbits::kKnown | fdbits::kPipe | fdbits::kReadable; });
    REQUIRE(info.pipe());
    CHECK(info.state->dir[0].policy.hint.load() == kHintNone);

    t.state(3)->dir[1].policy.set_hint(kHintNever);
    t.forget_range(0, 100);  // close_range, closefrom
    CHECK_FALSE(t.lookup(3, nullptr).pipe());
    t.set_pipe(5, 3);  // a new pipe on the number
    CHECK(t.state(3)->dir[1].policy.hint.load() == kHintNone);
}

TEST_CASE("hints: control_fd_hint checks its arguments and what the fd is", "[hints][control]") {
    PipeFixture p(Mode::Fixed);
    CHECK(control_fd_hint(p.fds[0], 0, 5) == -EINVAL);
    CHECK(control_fd_hint(p.fds[0], 4, 5) == -EINVAL);
    CHECK(control_fd_hint(p.fds[0], PIPESPIN_READ, -2) == -EINVAL);
    CHECK(control_fd_hint(p.fds[0], PIPESPIN_READ, PIPESPIN_HINT_MAX_US + 1) == -EINVAL);
    CHECK(control_fd_hint(-1, PIPESPIN_READ, 5) == -EBADF);
    const int file = ::open("/proc/self/stat", O_RDONLY);
    REQUIRE(file >= 0);
    CHECK(control_fd_hint(file, PIPESPIN_READ, 5) == -ENOTSUP);
    ::close(file);
    CHECK(control_fd_hint(file, PIPESPIN_READ, 5) == -EBADF);

    CHECK(control_fd_hint(p.fds[0], PIPESPIN_READ, 5) == 0);
    CHECK(p.reader().policy.hint.load() == 5 * kUs);
    CHECK(fd_table().state(p.fds[0])->dir[1].policy.hint.load() == kHintNone);
    CHECK(control_fd_hint(p.fds[0], PIPESPIN_BOTH, PIPESPIN_HINT_NEVER) == 0);
    CHECK(p.reader().policy.hint.load() == kHintNever);
    CHECK(fd_table().state(p.fds[0])->dir[1].policy.hint.load() == kHintNever);
    CHECK(control_fd_hint(p.fds[0], PIPESPIN_BOTH, PIPESPIN_HINT_MAX_US) == 0);
    CHECK(p.reader().policy.hint.load() == kHintMaxNs);
    CHECK(control_fd_hint(p.fds[0], PIPESPIN_BOTH, PIPESPIN_HINT_POLICY) == 0);
    CHECK(p.reader().policy.hint.load() == kHintNone);
}

TEST_CASE("hints: a pipe the table has not seen is classified by the hint, in any mode",
          "[hints][control]") {
    for (Mode mode : {Mode::Off, Mode::Adaptive}) {
        PipeFixture unused(mode);
        int fds[2];
        // Made behind the table's back, as an inherited pipe is.
        REQUIRE(::syscall(SYS_pipe2, fds, 0) == 0);
        fd_table().forget(fds[0]);
        REQUIRE((fd_table().peek(fds[0]) & fdbits::kKnown) == 0);
        CHECK(control_fd_hint(fds[0], PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0);
        const FdInfo info = fd_table().lookup(fds[0], nullptr);
        REQUIRE(info.pipe());
        CHECK(info.origin() == Origin::Inherited);
        CHECK(info.state->dir[0].policy.hint.load() == kHintNever);
        for (int fd : fds) {
            ::close(fd);
            fd_table().forget(fd);
        }

        // A stale class (the number was a regular file when the table last
        // looked, and was closed where the table did not see it, as glibc
        // closes its own fds): the kernel's word wins.
        const int file = ::open("/proc/self/stat", O_RDONLY);
        REQUIRE(file >= 0);
        REQUIRE_FALSE(fd_table().lookup(file, classify_fd).pipe());
        REQUIRE((fd_table().peek(file) & fdbits::kKnown) != 0);
        ::close(file);
        REQUIRE(::syscall(SYS_pipe2, fds, 0) == 0);
        REQUIRE(fds[0] == file);
        CHECK(control_fd_hint(fds[0], PIPESPIN_READ, 3) == 0);
        CHECK(fd_table().lookup(fds[0], nullptr).state->dir[0].policy.hint.load() == 3 * kUs);
        for (int fd : fds) {
            ::close(fd);
            fd_table().forget(fd);
        }
    }
}

TEST_CASE("hints: the engine spins as the hint says", "[hints][engine]") {
    char c;
    SECTION("never: no look, no spin, in fixed mode") {
        PipeFixture p(Mode::Fixed, 1000);
        REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, PIPESPIN_HINT_NEVER) == 0);
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.action == Plan::Action::Call);
        CHECK_FALSE(plan.obs.spun);
        CHECK(p.reader().waits.load() == 0);
        CHECK(p.reader().calls.load() == 1);  // counted all the same
        // A poll for input on it does not spin either.
        pollfd pfd{p.fds[0], POLLIN, 0};
        plan = before_poll(&pfd, 1, 5);
        CHECK_FALSE(plan.obs.spun);
    }
    SECTION("a budget: that budget, in adaptive mode with no CPU free for the peer") {
        PipeFixture p(Mode::Adaptive, 50, {}, 2);
        runtime().run_queue.over_looks.store(RunQueueGate::kConfirmLooks);
        runtime().run_queue.next_ns.store(UINT64_MAX);  // no new look at the run queue
        REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, 3) == 0);
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.obs.spun);
        CHECK(plan.obs.budget_ns == 3 * kUs);
        after_call(plan, -EAGAIN);
        // Unhinted, the same fd, set to spin, is refused by the gate.
        REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, PIPESPIN_HINT_POLICY) == 0);
        p.reader().policy.phase.store(static_cast<std::uint8_t>(Phase::TrySpin));
        plan = before_read(p.fds[0], &c, 1);
        CHECK_FALSE(plan.obs.spun);
        runtime().run_queue.over_looks.store(0);
        runtime().run_queue.next_ns.store(0);
    }
    SECTION("mode off: a budget hint neither looks nor spins") {
        PipeFixture p(Mode::Off);
        REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, 100) == 0);
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK_FALSE(plan.obs.spun);
        CHECK(p.reader().waits.load() == 0);
    }
    SECTION("a live reload keeps the hint") {
        PipeFixture p(Mode::Fixed);
        REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, 2) == 0);
        Options o;
        o.mode_v = static_cast<std::uint32_t>(Mode::Adaptive);
        configure(o, 4096);  // a change of mode restarts what was learnt
        CHECK(p.reader().policy.hint.load() == 2 * kUs);
        Plan plan = before_read(p.fds[0], &c, 1);
        CHECK(plan.obs.budget_ns == 2 * kUs);
        after_call(plan, -EAGAIN);
    }
}

TEST_CASE("hints: a thread switched off never spins, and others do", "[hints][engine]") {
    PipeFixture p(Mode::Fixed, 1);
    char c;
    CHECK(control_thread_spin(2) == -EINVAL);
    CHECK(control_thread_spin(0) == 1);
    CHECK(runtime().params().thread_off);
    REQUIRE(control_fd_hint(p.fds[0], PIPESPIN_READ, 5) == 0);  // not even a hinted fd
    Plan plan = before_read(p.fds[0], &c, 1);
    CHECK_FALSE(plan.obs.spun);
    CHECK(p.reader().waits.load() == 0);
    bool other_thread_spun = false;
    std::thread([&] {
        Plan q = before_read(p.fds[0], &c, 1);
        other_thread_spun = q.obs.spun;
        after_call(q, -EAGAIN);
    }).join();
    CHECK(other_thread_spun);
    CHECK(control_thread_spin(1) == 0);
    CHECK_FALSE(runtime().params().thread_off);
    plan = before_read(p.fds[0], &c, 1);
    CHECK(plan.obs.spun);
    after_call(plan, -EAGAIN);
}

TEST_CASE("stats: the snapshot is the statistics line's counters, versioned by size",
          "[hints][control]") {
    PipeFixture p(Mode::Fixed, 1);
    REQUIRE(::write(p.fds[1], "abc", 3) == 3);
    char buf[8];
    Plan plan = before_read(p.fds[0], buf, sizeof buf);
    after_call(plan, plan.result);
    StatsSnapshot snap;
    stats_snapshot(snap);

    pipespin_stats s;
    std::memset(&s, 0, sizeof s);
    s.size = sizeof s;
    REQUIRE(control_get_stats(&s) == 0);
    CHECK(s.size == sizeof s);
    CHECK(s.reserved == 0);
    for (int k = 0; k < kStatKinds; ++k) {
        for (int d = 0; d < kStatDirs; ++d) {
            CHECK(s.c[k][d].calls == snap.c[k][d].calls);
            CHECK(s.c[k][d].bytes == snap.c[k][d].bytes);
            CHECK(s.c[k][d].waits == snap.c[k][d].waits);
            CHECK(s.c[k][d].spins == snap.c[k][d].spins);
        }
    }
    CHECK(s.c[PIPESPIN_KIND_PIPE][PIPESPIN_STAT_READ].calls >= 1);

    SECTION("an older, shorter struct: only what it has is written") {
        unsigned char raw[sizeof(pipespin_stats) + 16];
        std::memset(raw, 0xab, sizeof raw);
        const std::uint32_t older = 8 + sizeof(pipespin_counters);
        std::memcpy(raw, &older, sizeof older);
        REQUIRE(control_get_stats(reinterpret_cast<pipespin_stats*>(raw)) == 0);
        std::uint32_t size;
        std::memcpy(&size, raw, sizeof size);
        CHECK(size == older);
        for (std::size_t i = older; i < sizeof raw; ++i) CHECK(raw[i] == 0xab);
    }
    SECTION("a newer, longer struct: told how much was filled") {
        unsigned char raw[sizeof(pipespin_stats) + 16] = {};
        const std::uint32_t newer = sizeof raw;
        std::memcpy(raw, &newer, sizeof newer);
        REQUIRE(control_get_stats(reinterpret_cast<pipespin_stats*>(raw)) == 0);
        std::uint32_t size;
        std::memcpy(&size, raw, sizeof size);
        CHECK(size == sizeof(pipespin_stats));
    }
    SECTION("no struct, or one too short for its own size") {
        CHECK(control_get_stats(nullptr) == -EINVAL);
        s.size = 4;
        CHECK(control_get_stats(&s) == -EINVAL);
    }
}
