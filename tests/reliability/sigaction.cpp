// Case sigaction: the program sees its own handlers, never the shim's
// trampoline, through sigaction()'s oldact, a query (act == NULL), and the
// return values of signal(), bsd_signal(), ssignal(), sysv_signal() and
// sigset(), and through glibc's __sigaction:
//   - h1 then h2 with sigaction, for each pair of plain and SA_SIGINFO
//     handlers: oldact gives back h1 with the SA_SIGINFO flag it had, its
//     other flags (SA_RESTART, SA_NODEFER, SA_ONSTACK) and its mask;
//   - SIG_IGN and SIG_DFL round trip, to and from handlers;
//   - signal(): returns the previous handler, whoever installed it;
//   - SA_RESETHAND: the handler runs once, the second signal meets SIG_DFL
//     (SIGURG, ignored by default), and a query then reports SIG_DFL;
//   - the handlers actually run, with the siginfo the kernel gave;
//   - an action read back by a raw rt_sigaction (the kernel's view: the
//     shim's trampoline where it wraps), SIG_IGN for a while, and the action
//     put back with sigaction(): the program's handler runs again (not a
//     trampoline that calls itself).
//
// How a naive shim fails: a shim that wraps handlers to notice signals
// during a spin and hands the kernel's view back reports its trampoline
// (and SA_SIGINFO) instead of h1, so a program that saves and later restores
// a handler ends up installing the trampoline as its own handler.
#include <poll.h>
#include <sched.h>
#include <signal.h>

#include "pipespin/pipespin.h"
#include "rel.h"

// glibc exports them; its header declares them only for some feature
// macros, or not at all.
extern "C" sighandler_t bsd_signal(int, sighandler_t);
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*);

using namespace rel;

namespace {

volatile sig_atomic_t g_ran[8];
volatile sig_atomic_t g_info_ok = 1;

void h1(int) {
    g_ran[1] = g_ran[1] + 1;
}
void h2(int) {
    g_ran[2] = g_ran[2] + 1;
}
void i1(int sig, siginfo_t* si, void*) {
    g_ran[3] = g_ran[3] + 1;
    if (si == nullptr || si->si_signo != sig || si->si_code != SI_TKILL || si->si_pid != getpid())
        g_info_ok = 0;
}
void i2(int sig, siginfo_t* si, void*) {
    g_ran[4] = g_ran[4] + 1;
    if (si == nullptr || si->si_signo != sig) g_info_ok = 0;
}
void once(int) {
    g_ran[5] = g_ran[5] + 1;
}

using Handler = void (*)(int);
using Action = void (*)(int, siginfo_t*, void*);

struct sigaction plain(Handler h, int flags) {
    struct sigaction sa {};
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    return sa;
}

struct sigaction info(Action a, int flags) {
    struct sigaction sa {};
    sa.sa_sigaction = a;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    return sa;
}

// The kernel adds SA_RESTORER (glibc's restorer); the program never set it.
constexpr int kRestorer = 0x04000000;
int user_flags(const struct sigaction& sa) {
    return sa.sa_flags & ~kRestorer;
}

void expect_same(const struct sigaction& got, const struct sigaction& want, int line) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "line %d: oldact has handler %p flags %#x, expected handler %p flags %#x", line,
                  reinterpret_cast<void*>(got.sa_handler), user_flags(got),
                  reinterpret_cast<void*>(want.sa_handler), user_flags(want));
    if (got.sa_handler != want.sa_handler || user_flags(got) != user_flags(want))
        fail(__FILE__, __LINE__, what, 0);
    for (int s = 1; s < NSIG; ++s) {
        if (s == 32 || s == 33) continue;  // glibc's own
        if (sigismember(&got.sa_mask, s) != sigismember(&want.sa_mask, s)) {
            std::snprintf(what, sizeof what, "line %d: oldact's mask differs at signal %d", line,
                          s);
            fail(__FILE__, __LINE__, what, 0);
        }
    }
}

void fire(int sig) {
    CHECK_EQ(raise(sig), 0);
}

// h_a then h_b: oldact is h_a, exactly; both run when installed.
void pair(const struct sigaction& a, const struct sigaction& b, int ran_a, int ran_b, int line) {
    const int sig = SIGUSR1;
    struct sigaction old {};
    CHECK_EQ(sigaction(sig, &a, nullptr), 0);
    g_ran[ran_a] = 0;
    fire(sig);
    CHECK_EQ(g_ran[ran_a], 1);
    CHECK_EQ(sigaction(sig, &b, &old), 0);
    expect_same(old, a, line);
    g_ran[ran_b] = 0;
    fire(sig);
    CHECK_EQ(g_ran[ran_b], 1);
    CHECK_EQ(sigaction(sig, nullptr, &old), 0);  // a query
    expect_same(old, b, line);
}

// The shim wraps handlers from a process's first spin on
// (docs/intercepted.md, "Signal handlers"): one poll on an empty pipe with
// a read hint spins where the configuration lets anything spin, so that
// every check below meets the wrapped path there. True when handlers are
// then wrapped: fixed and adaptive, with two usable CPUs (with one, nothing
// spins).
bool spin_once() {
    int p[2];
    make_pipe(p);
    const int hinted = pipespin_fd_hint(p[0], PIPESPIN_READ, 1000);
    pollfd pfd{p[0], POLLIN, 0};
    CHECK_EQ(poll(&pfd, 1, 2), 0);
    close(p[0]);
    close(p[1]);
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    const bool spins = config() == Config::Fixed || config() == Config::Adaptive;
    if (spins) CHECK_EQ(hinted, 0);
    return spins && CPU_COUNT(&set) >= 2;
}

}  // namespace

int main() {
    announce_main_pid();
    const int sig = SIGUSR1;
    const bool wraps = spin_once();

    PROGRESS("sigaction: plain/SA_SIGINFO handler pairs");
    struct sigaction p1 = plain(h1, SA_RESTART), p2 = plain(h2, SA_NODEFER);
    struct sigaction s1 = info(i1, SA_RESTART), s2 = info(i2, SA_ONSTACK);
    sigaddset(&p2.sa_mask, SIGUSR2);
    sigaddset(&s1.sa_mask, SIGTERM);
    pair(p1, p2, 1, 2, __LINE__);
    pair(s1, s2, 3, 4, __LINE__);
    pair(p1, s1, 1, 3, __LINE__);
    pair(s2, p2, 4, 2, __LINE__);
    CHECK(g_info_ok);

    PROGRESS("sigaction: SIG_IGN and SIG_DFL round trip");
    {
        struct sigaction ign = plain(SIG_IGN, 0), dfl = plain(SIG_DFL, 0), old{};
        CHECK_EQ(sigaction(sig, &p1, nullptr), 0);
        CHECK_EQ(sigaction(sig, &ign, &old), 0);
        expect_same(old, p1, __LINE__);
        fire(sig);  // ignored
        CHECK_EQ(sigaction(sig, &s2, &old), 0);
        expect_same(old, ign, __LINE__);
        CHECK_EQ(sigaction(sig, &dfl, &old), 0);
        expect_same(old, s2, __LINE__);
        CHECK_EQ(sigaction(sig, &ign, &old), 0);
        expect_same(old, dfl, __LINE__);
        CHECK_EQ(sigaction(sig, &dfl, &old), 0);
        expect_same(old, ign, __LINE__);
    }

    PROGRESS("signal() and friends return the previous handler");
    {
        CHECK(signal(sig, h1) == SIG_DFL);
        CHECK(signal(sig, h2) == h1);
        g_ran[2] = 0;
        fire(sig);
        CHECK_EQ(g_ran[2], 1);
        CHECK(signal(sig, SIG_IGN) == h2);
        CHECK(signal(sig, SIG_DFL) == SIG_IGN);
        // Installed by sigaction, replaced by signal(), and back.
        CHECK_EQ(sigaction(sig, &s1, nullptr), 0);
        CHECK(signal(sig, h1) == reinterpret_cast<Handler>(reinterpret_cast<void*>(i1)));
        struct sigaction old {};
        CHECK_EQ(sigaction(sig, &p2, &old), 0);
        CHECK(old.sa_handler == h1);
        CHECK(!(old.sa_flags & SA_SIGINFO));
        CHECK(bsd_signal(sig, h2) == h2);
        CHECK(ssignal(sig, h1) == h2);
        CHECK(ssignal(sig, h2) == h1);
        struct sigaction via = plain(h1, SA_RESTART);
        CHECK_EQ(__sigaction(sig, &via, &old), 0);
        CHECK(old.sa_handler == h2);
        CHECK_EQ(__sigaction(sig, nullptr, &old), 0);
        expect_same(old, via, __LINE__);
        CHECK(signal(sig, h2) == h1);
        CHECK(sysv_signal(sig, h1) == h2);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        CHECK(sigset(sig, h2) == h1);
        CHECK(sigset(sig, SIG_HOLD) == h2);
        CHECK(sigset(sig, SIG_DFL) == SIG_HOLD);
#pragma GCC diagnostic pop
        CHECK(signal(sig, SIG_DFL) == SIG_DFL);
    }

    PROGRESS("an action read back by a raw system call, and put back with sigaction()");
    for (bool siginfo : {false, true}) {
        struct sigaction sa = siginfo ? s1 : p1;
        CHECK_EQ(sigaction(sig, &sa, nullptr), 0);
        const KernelAction k = kernel_action(sig);
        // The kernel holds a trampoline exactly where something spun.
        CHECK_EQ(k.handler != reinterpret_cast<void*>(sa.sa_handler), wraps);
        const struct sigaction ign = plain(SIG_IGN, 0);
        CHECK_EQ(sigaction(sig, &ign, nullptr), 0);
        struct sigaction back {};
        back.sa_handler = reinterpret_cast<Handler>(k.handler);
        back.sa_flags = static_cast<int>(k.flags);
        sigemptyset(&back.sa_mask);
        std::memcpy(&back.sa_mask, &k.mask, sizeof k.mask);
        CHECK_EQ(sigaction(sig, &back, nullptr), 0);
        const int ran = siginfo ? 3 : 1;
        g_ran[ran] = 0;
        fire(sig);
        CHECK_EQ(g_ran[ran], 1);
        struct sigaction old {};
        CHECK_EQ(sigaction(sig, nullptr, &old), 0);
        expect_same(old, sa, __LINE__);
    }

    PROGRESS("SA_RESETHAND: the handler fires once, then SIG_DFL is reported");
    for (bool siginfo : {false, true}) {
        const int usig = SIGURG;  // default action: ignore
        struct sigaction sa = plain(once, SA_RESETHAND);
        if (siginfo)
            sa = info(reinterpret_cast<Action>(reinterpret_cast<void*>(once)), SA_RESETHAND);
        g_ran[5] = 0;
        CHECK_EQ(sigaction(usig, &sa, nullptr), 0);
        struct sigaction old {};
        CHECK_EQ(sigaction(usig, nullptr, &old), 0);
        CHECK(old.sa_handler == once);
        fire(usig);
        fire(usig);
        CHECK_EQ(g_ran[5], 1);
        CHECK_EQ(sigaction(usig, nullptr, &old), 0);
        CHECK(old.sa_handler == SIG_DFL);
        // And installing something else now reports SIG_DFL as the old one.
        CHECK(signal(usig, h1) == SIG_DFL);
        CHECK(signal(usig, SIG_DFL) == h1);
    }
    PROGRESS("ok");
    return 0;
}
