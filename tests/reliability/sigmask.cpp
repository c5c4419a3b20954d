// Case sigmask: the "unblock only while waiting" idiom. The thread blocks
// SIGUSR1 and waits on an empty pipe with pselect, ppoll, epoll_pwait or
// epoll_pwait2 whose mask unblocks it, with a short timeout, in a loop, while
// another process sends SIGUSR1 at random times. The kernel guarantees: if
// the handler runs because of the call's mask, the call fails with EINTR (it
// applies the mask on entry and restores it on return, atomically; a signal
// that arrives after the call decided to return stays pending). A program
// that checks its flag only on EINTR relies on it.
//
//   sigmask pselect|ppoll|epoll_pwait|epoll_pwait2
//
// The bookkeeping: SIGUSR1 is blocked in the only thread except while the
// call's mask is in force, so the handler can run only inside a call. Each
// call clears the flag first, then reads it after the call: a set flag with a
// result other than -1/EINTR is a violation (the handler ran, the call said
// it timed out); an EINTR without the flag is one too (an EINTR no signal
// caused). Both must be 0. The storm must end some calls with EINTR and let
// others time out, or the case proves nothing: the helper says so and fails.
//
// How a shim fails it: one that installs the call's mask in user space for
// its spin and leaves it there around the real call (or restores it only
// after) lets a signal be handled after the real call returned 0; one that
// spins under the thread's own mask with looks that do not report signals
// (epoll's zero-timeout wait) never lets the handler run during the spin.
//
// The timeouts: 100 µs for the calls that take a timespec (20000 calls, the
// signals 0-200 µs apart); epoll_pwait counts in ms, so 1 ms, 3000 calls,
// signals 0-2 ms apart. run.sh's fixed configuration spins for the whole
// timeout (the budget is larger), so every call that is not interrupted at
// once spins and then makes the real call with what is left.
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/select.h>

#include <string_view>

#include "rel.h"

using namespace rel;

namespace {

enum class Call { Pselect, Ppoll, EpollPwait, EpollPwait2 };

struct Mode {
    const char* name;
    Call call;
    long timeout_us;
    int calls;
};

constexpr Mode kModes[] = {
    {"pselect", Call::Pselect, 100, 20000},
    {"ppoll", Call::Ppoll, 100, 20000},
    {"epoll_pwait", Call::EpollPwait, 1000, 3000},
    {"epoll_pwait2", Call::EpollPwait2, 100, 20000},
};

// Each outcome must be seen at least this often for the case to count.
constexpr int kMinEach = 50;

volatile sig_atomic_t g_ran = 0;

void on_usr1(int) {
    g_ran = 1;
}

// The sender: SIGUSR1 to `target` at uniformly random intervals in
// [0, 2 * mean_us], until *stop.
[[noreturn]] void send_storm(pid_t target, long mean_us, const std::atomic<int>* stop) {
    prctl(PR_SET_TIMERSLACK, 1ul);  // sleeps as short as asked
    Rng rng(static_cast<std::uint64_t>(getpid()));
    while (stop->load(std::memory_order_relaxed) == 0) {
        const long us = static_cast<long>(rng.in(0, static_cast<std::uint64_t>(2 * mean_us)));
        timespec ts{0, us * 1000};
        nanosleep(&ts, nullptr);
        if (kill(target, SIGUSR1) != 0) _exit(errno == ESRCH ? 0 : 1);
    }
    _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    const Mode* mode = nullptr;
    for (const Mode& m : kModes)
        if (argc == 2 && std::string_view(argv[1]) == m.name) mode = &m;
    if (mode == nullptr) {
        std::fprintf(stderr, "usage: sigmask pselect|ppoll|epoll_pwait|epoll_pwait2\n");
        return 2;
    }

    install(SIGUSR1, on_usr1, 0);
    block_signal(SIGUSR1, true);
    sigset_t wait_mask;  // the thread's mask without SIGUSR1
    CHECK_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &wait_mask), 0);
    CHECK_EQ(sigdelset(&wait_mask, SIGUSR1), 0);

    int p[2];
    make_pipe(p);  // never written: every wait times out unless interrupted
    const int ep = epoll_watching(p[0]);

    auto* stop = static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>),
                                                     PROT_READ | PROT_WRITE,
                                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    CHECK(stop != MAP_FAILED);
    new (stop) std::atomic<int>(0);
    const pid_t me = getpid();
    const pid_t sender = fork_child();
    if (sender == 0) send_storm(me, mode->timeout_us, stop);

    const timespec ts{0, mode->timeout_us * 1000};
    int eintr = 0, timeouts = 0, late = 0, spurious = 0;
    for (int i = 0; i < mode->calls; ++i) {
        fd_set r;
        FD_ZERO(&r);
        FD_SET(p[0], &r);
        pollfd pfd{p[0], POLLIN, 0};
        epoll_event out{};
        g_ran = 0;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        int got = -2;
        switch (mode->call) {
            case Call::Pselect:
                got = pselect(p[0] + 1, &r, nullptr, nullptr, &ts, &wait_mask);
                break;
            case Call::Ppoll:
                got = ppoll(&pfd, 1, &ts, &wait_mask);
                break;
            case Call::EpollPwait:
                got =
                    epoll_pwait(ep, &out, 1, static_cast<int>(mode->timeout_us / 1000), &wait_mask);
                break;
            case Call::EpollPwait2:
                got = epoll_pwait2(ep, &out, 1, &ts, &wait_mask);
                break;
        }
        const int err = errno;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        const bool ran = g_ran != 0;
        if (got == -1 && err == EINTR) {
            ++(ran ? eintr : spurious);
        } else if (got == 0) {
            ++(ran ? late : timeouts);
        } else {
            fail(__FILE__, __LINE__, "the wait on an empty pipe returned neither 0 nor EINTR", err);
        }
    }
    stop->store(1);
    wait_ok(sender);

    PROGRESS(
        "sigmask %s (%s): %d calls, %ld us timeout: %d EINTR with the handler, %d timeouts; "
        "violations: %d handled without EINTR, %d EINTR without a handler",
        mode->name, config_name(), mode->calls, mode->timeout_us, eintr, timeouts, late, spurious);
    if (late != 0 || spurious != 0) {
        std::fprintf(stderr, "FAIL: the kernel's guarantee (handler ran <=> EINTR) broke\n");
        return 1;
    }
    if (eintr < kMinEach || timeouts < kMinEach) {
        std::fprintf(stderr,
                     "FAIL: the storm did not cover both outcomes (at least %d of each): the "
                     "case proves nothing\n",
                     kMinEach);
        return 1;
    }
    return 0;
}
