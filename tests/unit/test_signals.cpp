// The signal layer's two inputs from the core: whether anything can spin
// (handlers are wrapped only then) and what a delivery records for a spin.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "core/engine.h"
#include "core/engine_detail.h"
#include "core/signals.h"

using namespace pipespin;

namespace {

bool spins_with(Options o, int cpus) {
    configure(o, cpus);
    return anything_spins();
}

Options with_mode(Mode m, std::uint32_t spin_us = 50) {
    Options o;
    o.mode_v = static_cast<std::uint32_t>(m);
    o.spin_us = spin_us;
    return o;
}

}  // namespace

TEST_CASE("signals: handlers are wrapped exactly when some call may spin", "[signals]") {
    CHECK(spins_with(with_mode(Mode::Fixed), 2));
    CHECK(spins_with(with_mode(Mode::Adaptive), 2));
    CHECK_FALSE(spins_with(with_mode(Mode::Off), 2));
    CHECK_FALSE(spins_with(with_mode(Mode::Fixed, 0), 2));
    CHECK_FALSE(spins_with(with_mode(Mode::Adaptive), 1));
    Options o = with_mode(Mode::Fixed);
    o.spin_read = o.spin_write = o.spin_poll = 0;
    CHECK_FALSE(spins_with(o, 2));
    for (auto dir : {&Options::spin_read, &Options::spin_write, &Options::spin_poll}) {
        Options one = o;
        one.*dir = 1;
        CHECK(spins_with(one, 2));
    }
    configure(Options{}, 2);
}

TEST_CASE("signals: a delivery moves the epochs a spin compares, by SA_RESTART", "[signals]") {
    const std::uint64_t saved = g_restart_bits.load();
    g_restart_bits.store(1ull << (SIGALRM - 1));
    const SignalMark before;
    CHECK_FALSE(before.handler_ran());
    note_signal(SIGALRM);  // restarts: the call would go on waiting
    CHECK(before.handler_ran());
    CHECK_FALSE(before.wants_eintr());
    note_signal(SIGUSR1);  // no SA_RESTART: EINTR
    CHECK(before.wants_eintr());
    const SignalMark again;
    note_signal(64);
    CHECK(again.wants_eintr());
    g_restart_bits.store(~0ull);
    const SignalMark all;
    note_signal(64);
    CHECK_FALSE(all.wants_eintr());
    note_signal(0);  // not a signal: never "restarts"
    CHECK(all.wants_eintr());
    g_restart_bits.store(saved);
}

TEST_CASE("signals: a handler before a spin reads the fd's mode is EINTR only on a blocking fd",
          "[signals]") {
    // A handler that runs during the spin's first look, before the spin
    // asks the kernel whether the fd is in non-blocking mode (its second
    // look): a non-blocking fd's call would have returned its EAGAIN at
    // once, with nothing to interrupt. The old spin said Interrupted for
    // both. On a blocking fd the spin looks once more before it says
    // Interrupted: what came with the signal is the call's answer.
    int p[2];
    REQUIRE(::pipe(p) == 0);
    auto spin_once = [&](bool non_blocking, engine::Look second, unsigned& looks) {
        REQUIRE(::fcntl(p[0], F_SETFL, non_blocking ? O_NONBLOCK : 0) == 0);
        const engine::Fd on{p[0], FdInfo{}};
        const SignalMark mark;
        std::uint64_t spent = 0;
        looks = 0;
        return engine::spin(
            mark, 1'000'000'000ull, spent,
            [&](unsigned) {
                if (++looks > 1) return second;
                note_signal(0);  // no SA_RESTART
                return engine::Look::Pending;
            },
            &on);
    };
    unsigned looks = 0;
    CHECK(spin_once(true, engine::Look::Pending, looks) == engine::SpinEnd::NonBlocking);
    CHECK(looks == 1);
    CHECK(spin_once(false, engine::Look::Pending, looks) == engine::SpinEnd::Interrupted);
    CHECK(looks == 2);
    CHECK(spin_once(false, engine::Look::Ready, looks) == engine::SpinEnd::Ready);
    CHECK(spin_once(false, engine::Look::Answer, looks) == engine::SpinEnd::Answer);
    ::close(p[0]);
    ::close(p[1]);
}
