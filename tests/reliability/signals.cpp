// Case signals: a SIGALRM handler runs while read (empty pipe), write (full
// pipe) or poll(-1) spins under the shim. The call must end as the blocking
// syscall would have:
//   - no SA_RESTART (sigaction without it, SA_SIGINFO, signal() +
//     siginterrupt(sig, 1) in either order): read and write fail with EINTR;
//   - SA_RESTART (sigaction flag, SA_SIGINFO | SA_RESTART, plain signal(),
//     which has BSD semantics in glibc, and SA_RESTART | SA_RESETHAND, whose
//     handler the kernel resets to SIG_DFL as it delivers the signal but
//     still restarts the call): read and write go on waiting and
//     complete when the peer delivers data or room, which it does only after
//     the handler ran (the handler writes to a "go" pipe the peer waits on);
//   - poll(-1), poll(60 s) and ppoll(NULL) fail with EINTR whatever
//     SA_RESTART says (ppoll is not interposed: a control); also poll(-1)
//     on an array of 1000 entries (the same empty pipe): a signal that
//     arrives while the kernel walks the array makes even the spin's
//     zero-timeout probe fail with EINTR, so a spin that takes such a probe
//     for "ready" (and then blocks in the real poll) fails in almost every
//     trial, not only now and then (the fixed-poll and fixed-fionread
//     configurations catch the read/write form of that mistake only on a
//     loaded machine).
// 100 trials per variant, each with a one-shot 2 ms ITIMER_REAL.
//
//   signals read|write|poll
//   signals reload-read|reload-write   (run.sh config reload)
//     The same across live reloads (the shim wraps handlers only while
//     something can spin). The config file (PIPESPIN_CONFIG, mode off
//     at start, reload_ms 1) is rewritten between phases, as an editor
//     would. For each variant, and for handlers installed by a raw
//     rt_sigaction system call (with and without SA_RESTART), which the shim
//     cannot see being installed: the handler is installed in mode off; the
//     file turns to adaptive, then (next round) fixed (1 s budget); 50
//     trials; the file turns back to off; 50 trials. After each reload the
//     helper waits, with poll(1 ms) calls on an empty pipe (each one gives the
//     shim a chance to look at the file; the pipe has a 1 ms read hint, so
//     that each poll spins where the mode lets it: the shim wraps handlers
//     from a process's first spin on), until the kernel holds what the
//     mode asks for: a trampoline in front of the handler while something
//     can spin, the program's own handler in off (read back with a raw
//     rt_sigaction; the program's own view, through sigaction(), must always
//     show its handler and its SA_RESTART). A shim that wraps only what it
//     sees installed fails the raw variants (the spin misses the handler and
//     needs the backstop); one that wraps in every mode never shows the
//     program's own handler in off.
//   signals reload-jump                (run.sh config reload)
//     A handler that siglongjmps out of the program's calls while the shim
//     reloads the file: the shim must go on reloading (reload_jump_case).
//   signals early                      (rel_signals_early)
//     The handler (no SA_RESTART) was installed by a raw rt_sigaction system
//     call in the constructor of a library the helper links
//     (signals_early_lib.cpp), which runs before the shim's: read trials.
//
// How a naive spin fails: a spin that does not notice the handler keeps
// spinning to the end of its 1 s budget and then blocks in the real call,
// where nothing wakes it: the call is not interrupted by the signal that
// arrived during it. The helper re-arms a 100 ms backstop timer from the
// handler while the call is in progress (so a naive shim does not hang) and
// counts the signals a call took to end: 1 when the first signal ends it,
// about 11 on a naive shim. A trial may legitimately need the backstop when
// the helper was preempted for 2 ms between arming the timer and entering
// the call (the same race exists without the shim): at most 3 such trials
// of 100 are tolerated. A shim that turns every handler into EINTR fails
// the SA_RESTART variants (the read returns -1 instead of the data).
//
// The peer reads the go pipe with a raw syscall (start_peer in rel.h).
#include <setjmp.h>
#include <sys/time.h>

#include <string_view>
#include <thread>

#include "pipespin/pipespin.h"
#include "rel.h"

using namespace rel;

namespace {

constexpr int kTrials = 100;

enum class Install {
    Early,              // installed before main, by signals_early_lib.cpp
    Raw,                // a raw rt_sigaction system call, no flags
    RawRestart,         // a raw rt_sigaction system call, SA_RESTART
    Signal,             // signal(): BSD semantics, SA_RESTART
    Restart,            // sigaction, SA_RESTART
    SiginfoRestart,     // sigaction, SA_SIGINFO | SA_RESTART
    Sigaction,          // sigaction, no flags
    Siginfo,            // sigaction, SA_SIGINFO
    Siginterrupt,       // signal(), then siginterrupt(sig, 1)
    SiginterruptFirst,  // siginterrupt(sig, 1), then signal()
    RestartOnce,        // sigaction, SA_RESTART | SA_RESETHAND (re-installed each trial)
};

struct Variant {
    const char* name;
    Install how;
    bool restarts;
};

constexpr Variant kVariants[] = {
    {"signal", Install::Signal, true},
    {"sigaction+SA_RESTART", Install::Restart, true},
    {"sigaction+SA_SIGINFO+SA_RESTART", Install::SiginfoRestart, true},
    {"sigaction", Install::Sigaction, false},
    {"sigaction+SA_SIGINFO", Install::Siginfo, false},
    {"signal+siginterrupt", Install::Siginterrupt, false},
    {"siginterrupt+signal", Install::SiginterruptFirst, false},
    {"sigaction+SA_RESTART+SA_RESETHAND", Install::RestartOnce, true},
};
// Only where a configure comes after the install (reload, early).
constexpr Variant kRawVariants[] = {
    {"raw rt_sigaction", Install::Raw, false},
    {"raw rt_sigaction+SA_RESTART", Install::RawRestart, true},
};
constexpr Variant kEarly = {"raw rt_sigaction before the shim's constructor", Install::Early,
                            false};

volatile sig_atomic_t g_sigs = 0;  // handler runs in this trial

// The restart variants have a peer (g_go_w), the others a backstop.
void on_alarm() {
    const int saved = errno;
    g_sigs = g_sigs + 1;
    go_or_backstop();
    errno = saved;
}

void handler(int) {
    on_alarm();
}
void handler_info(int, siginfo_t* si, void*) {
    if (si == nullptr || si->si_signo != SIGALRM) _exit(4);
    on_alarm();
}

void install_raw(bool restart) {
    // glibc's restorer, from the action it just installed (SIG_DFL).
    KernelAction k = kernel_action(SIGALRM);
    CHECK(k.flags & kSaRestorer);
    k.handler = reinterpret_cast<void*>(handler);
    k.flags = kSaRestorer | (restart ? SA_RESTART : 0);
    k.mask = 0;
    CHECK_EQ(syscall(SYS_rt_sigaction, SIGALRM, &k, nullptr, 8), 0);
}

// The handler a variant installs.
void* own_handler(const Variant& v) {
    return v.how == Install::SiginfoRestart || v.how == Install::Siginfo
               ? reinterpret_cast<void*>(handler_info)
               : reinterpret_cast<void*>(handler);
}

void install_variant(const Variant& v) {
    if (v.how == Install::Early) return;  // done before main
    // A clean slate: default action, the siginterrupt() bit cleared.
    install(SIGALRM, SIG_DFL, 0);
    CHECK_EQ(siginterrupt_(SIGALRM, 0), 0);
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    switch (v.how) {
        case Install::Early:
            break;
        case Install::Raw:
        case Install::RawRestart:
            install_raw(v.how == Install::RawRestart);
            break;
        case Install::Signal:
            CHECK(signal(SIGALRM, handler) != SIG_ERR);
            break;
        case Install::Restart:
        case Install::Sigaction:
        case Install::RestartOnce:
            sa.sa_handler = handler;
            sa.sa_flags = v.how == Install::Restart       ? SA_RESTART
                          : v.how == Install::RestartOnce ? SA_RESTART | SA_RESETHAND
                                                          : 0;
            CHECK_EQ(sigaction(SIGALRM, &sa, nullptr), 0);
            break;
        case Install::SiginfoRestart:
        case Install::Siginfo:
            sa.sa_sigaction = handler_info;
            sa.sa_flags = SA_SIGINFO | (v.how == Install::SiginfoRestart ? SA_RESTART : 0);
            CHECK_EQ(sigaction(SIGALRM, &sa, nullptr), 0);
            break;
        case Install::Siginterrupt:
            CHECK(signal(SIGALRM, handler) != SIG_ERR);
            CHECK_EQ(siginterrupt_(SIGALRM, 1), 0);
            break;
        case Install::SiginterruptFirst:
            CHECK_EQ(siginterrupt_(SIGALRM, 1), 0);
            CHECK(signal(SIGALRM, handler) != SIG_ERR);
            break;
    }
}

// The peer of the restart variants: once the handler ran, it delivers data
// (read) or room (write).
std::thread start_delivering_peer(Wait op, int go_r, int p_r, int p_w) {
    return start_peer(go_r, [op, p_r, p_w](char) {
        if (op == Wait::Read) {
            CHECK_EQ(write(p_w, "d", 1), 1);
        } else {
            static char buf[kPipeSize];
            CHECK_EQ(read_full(p_r, buf, sizeof buf), sizeof buf);
        }
    });
}

// kTrials trials of op with v's handler, installed first (or already there:
// `installed`). The handler stays.
void run_variant(Wait op, const Variant& v, bool installed = false, int trials = kTrials) {
    PROGRESS("%s, handler by %s: %d trials", wait_name(op), v.name, trials);
    int p[2], go[2];
    make_pipe(p);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, kPipeSize), kPipeSize);
    const bool is_poll = op != Wait::Read && op != Wait::Write;
    const bool expect_eintr = is_poll || !v.restarts;
    std::thread peer_thread;
    if (!expect_eintr) {
        make_pipe(go);
        g_go_w = go[1];
        peer_thread = start_delivering_peer(op, go[0], p[0], p[1]);
    } else {
        g_go_w = -1;
    }
    if (!installed) install_variant(v);

    static char full[kPipeSize];
    int late = 0;
    for (int t = 0; t < trials; ++t) {
        if (op == Wait::Write) write_full(p[1], full, sizeof full);  // now the pipe is full
        if (v.how == Install::RestartOnce) install_variant(v);       // the kernel reset it
        char c = 0;
        g_sigs = 0;
        g_sent = 0;
        g_in_call = 1;
        arm_alarm_us(kTimerUs);
        errno = 0;
        const long r = make_call(op, p[0], p[1], &c, 1);
        const int e = errno;
        const int sigs = g_sigs;
        g_in_call = 0;
        arm_alarm_us(0);
        if (expect_eintr) {
            if (r != -1 || e != EINTR) {
                std::fprintf(stderr, "trial %d: %s returned %ld (errno %d) after %d signal(s)\n", t,
                             wait_name(op), r, e, sigs);
                fail(__FILE__, __LINE__, "the call fails with EINTR", e);
            }
            CHECK(sigs >= 1);
            if (sigs > 1) {
                std::fprintf(stderr, "trial %d: ended only by signal %d (backstop)\n", t, sigs);
                ++late;
                if (late > kMaxLate)
                    fail(__FILE__, __LINE__,
                         "the first signal during the call interrupts it (more than 3 trials "
                         "needed the backstop)",
                         0);
            }
            if (op == Wait::Write) {
                // Nothing of the interrupted write went in; empty the pipe again.
                CHECK_EQ(queued(p[0]), kPipeSize);
                CHECK_EQ(read_full(p[0], full, sizeof full), sizeof full);
            }
            CHECK_EQ(queued(p[0]), 0);
        } else {
            if (r != 1) {
                std::fprintf(stderr, "trial %d: %s returned %ld (errno %d) after %d signal(s)\n", t,
                             wait_name(op), r, e, sigs);
                fail(__FILE__, __LINE__, "the call is restarted and completes", e);
            }
            // The peer delivers only after the handler ran.
            CHECK(sigs >= 1);
            if (op == Wait::Read) {
                CHECK_EQ(c, 'd');
            } else {
                char back = 0;  // the peer took the full pipe's bytes; ours is the one left
                CHECK_EQ(read(p[0], &back, 1), 1);
                CHECK_EQ(back, 'w');
            }
            CHECK_EQ(queued(p[0]), 0);
        }
    }
    if (peer_thread.joinable()) {
        send_byte(g_go_w, 'q');
        peer_thread.join();
        close(go[0]);
        close(go[1]);
        g_go_w = -1;
    }
    if (!installed) install(SIGALRM, SIG_IGN, 0);
    close(p[0]);
    close(p[1]);
    PROGRESS("  ok (%d trial(s) needed the backstop)", late);
}

// ---- reload ------------------------------------------------------------------

constexpr int kReloadTrials = 50;

// Rewrites the config file (a new file renamed over it, as editors do).
void retune(const char* path, const char* mode, unsigned spin_us = 1000000) {
    char tmp[4096], text[256];
    std::snprintf(tmp, sizeof tmp, "%s.new", path);
    const int n = std::snprintf(text, sizeof text,
                                "mode = %s\nspin_us = %u\nreload_ms = 1\nlog = info\n", mode,
                                spin_us);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, text, static_cast<size_t>(n)), n);
    CHECK_EQ(close(fd), 0);
    CHECK_EQ(rename(tmp, path), 0);
}

// Whether the kernel holds a trampoline of the shim's for SIGALRM, rather
// than the program's handler `own` (or SIG_DFL, after SA_RESETHAND).
bool wrapped(void* own) {
    void* h = kernel_action(SIGALRM).handler;
    return h != own && h != reinterpret_cast<void*>(SIG_DFL);
}

// Gives the shim chances to look at the file (poll(1 ms) on an empty pipe
// runs its periodic work in every mode) until the kernel holds what `mode`
// asks for. The shim looks at most every reload_ms on a coarse clock: once
// reload_ms and two ticks have passed after the rename, every further wait
// may look; after 20 more, the reload must have happened.
void await_reload(int empty_r, void* own, bool want_wrapped, const char* mode) {
    timespec res{};
    CHECK_EQ(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
    const std::uint64_t tick = static_cast<std::uint64_t>(res.tv_sec) * 1000000000ull +
                               static_cast<std::uint64_t>(res.tv_nsec);
    const std::uint64_t until = now_ns() + 1000000ull + 2 * tick;
    int after = 0;
    while (wrapped(own) != want_wrapped) {
        if (now_ns() >= until && ++after > 20) {
            std::fprintf(stderr, "after the reload to %s the kernel holds handler %p (own %p)\n",
                         mode, kernel_action(SIGALRM).handler, own);
            fail(__FILE__, __LINE__,
                 want_wrapped ? "the handler is wrapped while something can spin"
                              : "the program's own handler is installed in mode off",
                 0);
        }
        pollfd pfd{empty_r, POLLIN, 0};
        CHECK_EQ(poll(&pfd, 1, 1), 0);
    }
}

// The program's own view: its handler, its SA_RESTART.
void check_view(const Variant& v) {
    struct sigaction sa {};
    CHECK_EQ(sigaction(SIGALRM, nullptr, &sa), 0);
    if (sa.sa_handler == SIG_DFL && v.how == Install::RestartOnce) return;  // reset by a delivery
    CHECK(reinterpret_cast<void*>(sa.sa_handler) == own_handler(v));
    CHECK_EQ((sa.sa_flags & SA_RESTART) != 0, v.restarts);
}

int usable_cpus() {
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    return CPU_COUNT(&set);
}

// What the reload cases start from: the config file run.sh made
// (PIPESPIN_CONFIG), and a pipe nobody writes whose waits spin where the
// mode lets them (a 1 ms hint: the first spin wraps the handlers). status
// is nonzero where the case cannot run: the helper's exit status.
struct ReloadSetup {
    const char* path = nullptr;
    int empty[2] = {-1, -1};
    int status = 0;
};

ReloadSetup reload_setup() {
    ReloadSetup r;
    r.path = std::getenv("PIPESPIN_CONFIG");
    const char* rel = std::getenv("REL_CONFIG");
    if (r.path == nullptr || r.path[0] == '\0' || rel == nullptr ||
        std::strcmp(rel, "reload") != 0) {
        std::fprintf(stderr, "signals reload-*: run it with run.sh --config reload\n");
        r.status = 2;
    } else if (usable_cpus() < 2) {
        std::printf("SKIP: one usable CPU: the shim never spins, so it never wraps a handler\n");
        r.status = 77;
    } else {
        make_pipe(r.empty);
        CHECK_EQ(pipespin_fd_hint(r.empty[0], PIPESPIN_READ, 1000), 0);
    }
    return r;
}

int reload_case(Wait op) {
    const ReloadSetup setup = reload_setup();
    if (setup.status != 0) return setup.status;
    const char* path = setup.path;
    const int* empty = setup.empty;
    auto phases = [&](const Variant& v, const char* mode) {
        PROGRESS("installed in mode off, then %s", mode);
        install_variant(v);
        check_view(v);
        retune(path, mode);
        await_reload(empty[0], own_handler(v), true, mode);
        check_view(v);
        run_variant(op, v, true, kReloadTrials);
        PROGRESS("back to off");
        retune(path, "off");
        await_reload(empty[0], own_handler(v), false, "off");
        check_view(v);
        run_variant(op, v, true, kReloadTrials);
        install(SIGALRM, SIG_IGN, 0);
    };
    for (const char* mode : {"adaptive", "fixed"}) {
        for (const Variant& v : kVariants) phases(v, mode);
        for (const Variant& v : kRawVariants) phases(v, mode);
    }
    return 0;
}

// ---- reload, left by siglongjmp ---------------------------------------------

sigjmp_buf g_jump;
volatile sig_atomic_t g_jump_armed = 0;

void jump_handler(int) {
    if (g_jump_armed) siglongjmp(g_jump, 1);
}
void quiet_handler(int) {}

// A program whose SIGALRM handler siglongjmps out of whatever it
// interrupted, every 250 µs, while its poll calls give the shim its
// chances to reload a config file rewritten every 2 ms (mode off, a new
// spin_us: every reload reads and applies the file, and logs a line).
// Jumps land in the shim's reload and in its log line, which are in the
// program's call. Then the shim must still reload: the file turns to
// fixed, where the kernel must come to hold a trampoline in front of the
// handler, then back to off. A shim that a jump leaves with its settings
// locked never reloads again; one that a jump leaves with the thread's
// re-entry guard set passes all its calls through, and never reloads
// either.
int reload_jump_case() {
    const ReloadSetup setup = reload_setup();
    if (setup.status != 0) return setup.status;
    const char* path = setup.path;
    const int* empty = setup.empty;
    sigset_t alarm_set;
    sigemptyset(&alarm_set);
    sigaddset(&alarm_set, SIGALRM);
    install(SIGALRM, jump_handler, 0);
    constexpr std::uint64_t kStormNs = 400'000'000;
    constexpr unsigned kMinRewrites = 150;
    itimerval every{{0, 250}, {0, 250}};
    CHECK_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);
    volatile int jumps = 0;
    volatile unsigned rewrites = 0;
    volatile std::uint64_t rewritten_ns = 0;
    const std::uint64_t end = now_ns() + kStormNs;
    if (sigsetjmp(g_jump, 1) != 0) jumps = jumps + 1;  // the mask saved: SIGALRM let through
    while (now_ns() < end || rewrites < kMinRewrites) {
        // A new file once the shim may have read the last one (reload_ms 1;
        // the polls between give it its chances). No jump out of the
        // rewrite (stdio, a half-written file).
        if (now_ns() - rewritten_ns >= 2'000'000) {
            CHECK_EQ(sigprocmask(SIG_BLOCK, &alarm_set, nullptr), 0);
            g_jump_armed = 0;
            rewrites = rewrites + 1;
            retune(path, "off", 1000 + rewrites % 1000);
            rewritten_ns = now_ns();
            g_jump_armed = 1;
            CHECK_EQ(sigprocmask(SIG_UNBLOCK, &alarm_set, nullptr), 0);
        }
        pollfd pfd{empty[0], POLLIN, 0};
        poll(&pfd, 1, 1);
    }
    g_jump_armed = 0;
    itimerval stop{};
    CHECK_EQ(setitimer(ITIMER_REAL, &stop, nullptr), 0);
    install(SIGALRM, quiet_handler, 0);
    PROGRESS("%d jumps out of poll over %u rewrites of the file", static_cast<int>(jumps),
             static_cast<unsigned>(rewrites));
    void* own = reinterpret_cast<void*>(quiet_handler);
    retune(path, "fixed");
    await_reload(empty[0], own, true, "fixed");
    retune(path, "off");
    await_reload(empty[0], own, false, "off");
    return 0;
}

}  // namespace

#ifdef REL_EARLY
// signals_early_lib.cpp: its constructor's handler calls this.
extern "C" void (*rel_early_hook)(int);
extern "C" const char* rel_early_error;
#endif

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view what = argv[1];
    if (what == "reload-read") return reload_case(Wait::Read);
    if (what == "reload-write") return reload_case(Wait::Write);
    if (what == "reload-jump") return reload_jump_case();
#ifdef REL_EARLY
    if (what == "early") {
        if (rel_early_error != nullptr) fail(__FILE__, __LINE__, rel_early_error, 0);
        rel_early_hook = handler;
        CHECK(kernel_action(SIGALRM).handler != reinterpret_cast<void*>(SIG_DFL));
        run_variant(Wait::Read, kEarly, true);
        return 0;
    }
#endif
    if (what == "read" || what == "write") {
        const Wait op = what == "read" ? Wait::Read : Wait::Write;
        for (const Variant& v : kVariants) run_variant(op, v);
    } else if (what == "poll") {
        for (const Variant& v : kVariants) {
            // SA_RESETHAND leaves SIG_DFL for the backstop, which would kill
            // the helper in a trial that needs it; restarting is what that
            // variant is about, and poll never restarts.
            if (v.how != Install::RestartOnce) run_variant(Wait::Poll, v);
        }
        run_variant(Wait::PollMany, kVariants[0]);
        run_variant(Wait::PollMany, kVariants[3]);
        for (const Variant& v : {kVariants[1], kVariants[3]}) {
            run_variant(Wait::PollTimeout, v);
            run_variant(Wait::Ppoll, v);
        }
    } else {
        std::fprintf(stderr, "usage: signals read|write|poll|reload-read|reload-write|reload-jump|early\n");
        return 2;
    }
    return 0;
}
