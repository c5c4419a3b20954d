// The program's signal handlers, and the trampoline in front of them: how
// an install is made (wrapped_sigaction()) and the sweeps that wrap and
// unwrap what the kernel holds. The libc names that install handlers are
// defined in hooks_signal.cpp, on top of wrapped_sigaction().
//
// A spin stands in for a blocking call; when a handler runs meanwhile, the
// spin must learn it (core/signals.h). For that the shim installs each of
// the program's handlers behind a trampoline (trampoline.h), but only while
// something in the process can spin ("armed", engine.h anything_spins()):
// in mode off, with spin_us 0, on one usable CPU or with every spin
// direction off, sigaction() and its relatives pass straight through and
// the kernel holds the program's own handlers. configure_signals(), called
// on every configure (start-up and each live reload), wraps the handlers
// already installed when spinning turns on (read back with sigaction()),
// unwraps them when it turns off, and on every configure while armed wraps
// the handlers the shim did not install: those installed before its
// constructor ran, or by a raw rt_sigaction system call.
//
// Contract:
//   - The kernel holds the program's own flags, mask and restorer; only the
//     handler address differs. The program sees exactly its own handlers and
//     flags through sigaction(oldact), a query, and the return values of
//     signal(), bsd_signal(), sysv_signal(), ssignal() and sigset().
//   - Whether a handler restarts (SA_RESTART) is recorded when it is
//     installed: sigaction, __sigaction, signal, bsd_signal, ssignal,
//     sysv_signal, __sysv_signal, sigset and siginterrupt all install
//     through wrapped_sigaction().
//     The trampoline makes no system call.
//   - What the shim cannot see: a raw rt_sigaction system call (or a libc
//     function that makes one inside libc) after the last configure. A
//     handler installed that way is not wrapped until the next configure
//     (the next live reload), so a spin cannot notice it: the spin runs to
//     its budget (at most spin_us) and the real call then waits as it would
//     have after the signal (it is not interrupted by a signal that came
//     before it). A raw change of SA_RESTART on a handler the shim wrapped is
//     seen at the next configure too. A raw read-back sees the trampoline;
//     handed back to sigaction() it stands for the handler last installed
//     for the signal (of its kind).
//   - Races. A slot of the handler table is written before the trampoline
//     that reads it is installed, and never cleared, so a delivery always
//     finds a handler: a signal that arrives as the program replaces its
//     handler runs the old or the new one (the plain and SA_SIGINFO handlers
//     have separate tables, so a handler always gets the arguments its kind
//     expects). SA_RESETHAND: the kernel resets the action to SIG_DFL as it
//     delivers, the trampoline still runs this delivery's handler; SA_NODEFER
//     lets deliveries nest, and the trampoline keeps no state between
//     them. Installs and the configure sweeps are serialised by a lock that
//     is only ever held with every signal blocked (so a handler can never
//     wait for its own thread), and a sweep checks, by the previous action
//     the kernel returns with each install, that no raw install came between
//     its read and its write (if one did, that one is wrapped or put back).
//   - SIG_DFL, SIG_IGN, SIGKILL, SIGSTOP and the signals glibc keeps for
//     itself pass straight through.
#include "interpose/signals.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/single_threaded.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/engine.h"
#include "core/signals.h"
#include "interpose/real.h"
#include "interpose/trampoline.h"
#include "interpose/vfork.h"
#include "platform/process_lock.h"
#include "platform/sys.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

// Handlers are wrapped (something can spin). Written only by
// configure_signals(), under the lock.
std::atomic<bool> g_armed{false};
// Bit sig - 1: the shim installed a trampoline for sig at some time (maybe
// replaced since, by the program or by SA_RESETHAND): a superset of the
// signals that may hold one.
std::atomic<std::uint64_t> g_wrapped{0};
sys::ProcessLock g_lock;

constexpr std::uint64_t bit_of(int sig) {
    return 1ull << (sig - 1);
}

// Sets or clears sig's bit, writing only if it changes (a write after a
// fork is a copy-on-write fault on the page).
void set_bit(std::atomic<std::uint64_t>& word, int sig, bool on) {
    const std::uint64_t bit = bit_of(sig);
    if (((word.load(std::memory_order_relaxed) & bit) != 0) == on) return;
    if (on)
        word.fetch_or(bit, std::memory_order_relaxed);
    else
        word.fetch_and(~bit, std::memory_order_relaxed);
}

// The signals the shim never wraps: those without handlers, and glibc's
// own (its sigaction refuses them).
bool never_wrapped(int sig) {
    return sig <= 0 || sig >= kSigSlots || sig == SIGKILL || sig == SIGSTOP ||
           (sig >= 32 && sig < SIGRTMIN);
}

// The handler field, whatever the kind (sa_handler and sa_sigaction share it).
void* handler_of(const struct sigaction& sa) {
    return reinterpret_cast<void*>(sa.sa_handler);
}

void set_handler(struct sigaction& sa, void* fn) {
    sa.sa_handler = reinterpret_cast<sighandler_t>(fn);
}

// The kernel calls it (SIG_DFL, SIG_IGN and SIG_ERR are no functions: the
// kernel decides on the value, whatever SA_SIGINFO says).
bool is_function(const struct sigaction& sa) {
    void* h = handler_of(sa);
    return h != reinterpret_cast<void*>(SIG_DFL) && h != reinterpret_cast<void*>(SIG_IGN) &&
           h != reinterpret_cast<void*>(SIG_ERR);
}

void* trampoline_for(int flags) {
    return (flags & SA_SIGINFO) ? reinterpret_cast<void*>(pipespin_trampoline_info)
                                : reinterpret_cast<void*>(pipespin_trampoline_plain);
}

bool is_trampoline(const struct sigaction& sa) {
    void* h = handler_of(sa);
    return h == reinterpret_cast<void*>(pipespin_trampoline_plain) ||
           h == reinterpret_cast<void*>(pipespin_trampoline_info);
}

std::atomic<void*>& slot(int sig, int flags) {
    return (flags & SA_SIGINFO) ? g_info_handlers[sig] : g_plain_handlers[sig];
}

// The table's state for one signal, to put back or to read an old action by.
struct Saved {
    void* plain;
    void* info;
    bool restart;
    static Saved of(int sig) {
        return {g_plain_handlers[sig].load(std::memory_order_relaxed),
                g_info_handlers[sig].load(std::memory_order_relaxed), restarts(sig)};
    }
    void put_back(int sig) const {
        g_plain_handlers[sig].store(plain, std::memory_order_release);
        g_info_handlers[sig].store(info, std::memory_order_release);
        set_restart(sig, restart);
    }
    static void set_restart(int sig, bool on) { set_bit(g_restart_bits, sig, on); }
    // What the program installed, where the kernel shows a trampoline.
    void show_own(struct sigaction& sa) const {
        if (handler_of(sa) == reinterpret_cast<void*>(pipespin_trampoline_plain))
            set_handler(sa, plain);
        else if (handler_of(sa) == reinterpret_cast<void*>(pipespin_trampoline_info))
            set_handler(sa, info);
    }
};

// Before the trampoline for this handler can be delivered to. Written only
// when it changes: a shell installs the same handlers around every fork, and
// each write after a fork is a copy-on-write fault on the page.
void publish(int sig, const struct sigaction& own) {
    std::atomic<void*>& s = slot(sig, own.sa_flags);
    if (s.load(std::memory_order_relaxed) != handler_of(own))
        s.store(handler_of(own), std::memory_order_release);
    Saved::set_restart(sig, (own.sa_flags & SA_RESTART) != 0);
}

// Only ever sets: g_wrapped is a superset, and a bit left over costs a sweep
// one look at the kernel's action, while a shell that puts SIG_DFL in place
// of its handler and back around every fork would write the page each time.
void note_installed(int sig, const struct sigaction& sa) {
    if (is_trampoline(sa)) set_bit(g_wrapped, sig, true);
}

// Serialises installs and sweeps. Held only with every signal blocked on
// the holder's thread, so no handler can run there and wait for it. In a
// process that never started a thread (glibc's __libc_single_threaded: a
// shell, most short-lived processes) blocking the signals is the whole
// of it: nothing else can run the shim's code meanwhile, and the lock's
// getpid and its write (after a fork, a copy-on-write fault on the page) are
// saved.
class Lock {
public:
    Lock() noexcept : locked_(__libc_single_threaded == 0) {
        if (locked_) g_lock.lock();
    }
    ~Lock() {
        if (locked_) g_lock.unlock();
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

private:
    sys::SignalsBlocked blocked_;  // first: taken before the lock, given back after it
    bool locked_;
};

bool same_action(const struct sigaction& a, const struct sigaction& b) {
    return handler_of(a) == handler_of(b) && a.sa_flags == b.sa_flags &&
           std::memcmp(&a.sa_mask, &b.sa_mask, sizeof a.sa_mask) == 0;
}

// What the kernel should hold for sig, given that it holds `cur`: the
// handler behind a trampoline while armed, the program's own otherwise.
// Publishes the handler a trampoline will need. False: `cur` is right.
bool target(int sig, const struct sigaction& cur, struct sigaction& want) {
    want = cur;
    const bool armed = g_armed.load(std::memory_order_relaxed);
    if (armed && is_trampoline(cur)) {
        // Ours already; the flags may have changed behind us (a raw
        // read-modify-write): refresh SA_RESTART.
        Saved::set_restart(sig, (cur.sa_flags & SA_RESTART) != 0);
        return false;
    }
    if (armed && is_function(cur)) {
        publish(sig, cur);
        set_handler(want, trampoline_for(cur.sa_flags));
        return true;
    }
    if (!armed && is_trampoline(cur)) {
        Saved::of(sig).show_own(want);
        return true;
    }
    return false;
}

// Under the lock: makes the kernel's action for sig what target() says.
// Each install returns the action it replaced; if that is not the one read
// before, a raw install came in between, and it is the program's latest
// word: it is installed again (wrapped or not) in place of ours.
void settle(int sig) {
    struct sigaction cur {
    }, want{};
    if (real_sigaction(sig, nullptr, &cur) != 0) return;
    note_installed(sig, cur);  // SA_RESETHAND may have put SIG_DFL in place of ours
    if (!target(sig, cur, want)) return;
    // What the install should replace: the action read, then the one this
    // loop put in place itself.
    struct sigaction expect = cur;
    for (int tries = 0; tries < 16; ++tries) {
        struct sigaction prev {};
        if (real_sigaction(sig, &want, &prev) != 0) return;
        note_installed(sig, want);
        if (same_action(prev, expect)) return;
        // `prev` came in between: the program's latest word, which `want`
        // just replaced. Put it back, wrapped or not.
        expect = want;
        cur = prev;
        if (!target(sig, cur, want)) want = cur;
    }
}

// An install by the program while armed, under the lock. `old` gets the
// previous action as the program installed it.
int install_locked(int sig, const struct sigaction* act, struct sigaction& old) {
    const Saved saved = Saved::of(sig);
    int r;
    if (act != nullptr && is_function(*act) && g_armed.load(std::memory_order_relaxed)) {
        struct sigaction mine = *act;
        set_handler(mine, trampoline_for(act->sa_flags));
        publish(sig, *act);
        r = real_sigaction(sig, &mine, &old);
        if (r != 0) {
            saved.put_back(sig);
            return r;
        }
        note_installed(sig, mine);
    } else {
        r = real_sigaction(sig, act, &old);
        if (r != 0) return r;
        if (act != nullptr) note_installed(sig, *act);
    }
    saved.show_own(old);
    return 0;
}

bool resolve_sigaction() {
    return real_sigaction != nullptr;  // resolved on first use (real.h)
}

// Under the lock: makes the kernel hold what target() says for every
// signal with a handler. Armed: a trampoline stays. Disarmed: every
// trampoline goes, whoever put it there (libc's own code, system() for
// one, saves and restores actions where the shim does not see it).
// Every signal's action is read back from the kernel (settle()): 62
// sigaction calls, 13 µs on a 2-vCPU VM, where /proc/self/status's
// SigCgt, read to pick the signals with a handler, took 22-37 µs at a
// process's first spin (its first read of a /proc/self file).
void sweep_locked() {
    for (int sig = 1; sig < kSigSlots; ++sig)
        if (!never_wrapped(sig)) settle(sig);
    // Disarmed, no trampoline is left (every signal was read, including
    // any a failed install left behind): the next disarm has nothing to do.
    if (!g_armed.load(std::memory_order_relaxed)) g_wrapped.store(0, std::memory_order_relaxed);
}

// Spinning may start: the handlers are wrapped from the first spin on,
// not before. Until then nothing needs a trampoline (only a spin asks
// whether a handler ran), and most processes never spin: a shell's
// fresh pipes are watched, not spun (docs/policy.md, part 0), while it
// installs and resets handlers around every fork (four function installs
// per $(...), each costing two signal-mask system calls while wrapped).
// Written under the lock or by the first configure.
std::atomic<bool> g_arm_at_spin{false};

// The first spin: arm, and wrap what was installed before, by any means
// (it reads every signal's action and takes the lock).
void sweep_before_spin() noexcept {
    set_spin_hook(nullptr);
    if (!resolve_sigaction()) return;
    Lock lock;
    // A concurrent install re-checks g_armed after its call and wraps its
    // handler itself; the sweep wraps the rest.
    if (g_arm_at_spin.exchange(false, std::memory_order_relaxed))
        g_armed.store(true, std::memory_order_seq_cst);
    if (g_armed.load(std::memory_order_relaxed)) sweep_locked();
}

}  // namespace

namespace pipespin::interpose {

int wrapped_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    if (!resolve_sigaction()) {
        errno = ENOSYS;
        return -1;
    }
    if (never_wrapped(sig)) return real_sigaction(sig, act, old);
    // A program that read the kernel's view with a raw system call and now
    // puts it back hands us a trampoline: it means the handler behind it
    // (installed as such, the trampoline would jump to itself).
    struct sigaction mine {};
    if (act != nullptr && is_trampoline(*act)) {
        mine = *act;
        Saved::of(sig).show_own(mine);
        act = &mine;
    }
    if (in_vfork_child()) {
        // The handler table and its bits are the parent's (vfork.h): the
        // child's action goes to the kernel as it is, never behind the
        // trampoline, and nothing is recorded (no lock either: the parent's
        // thread holds none while it waits for the child). A spin in the
        // child may miss its handler, until the exec or exit that ends it.
        // A query still shows the program's own handler, read from the table.
        const int r = real_sigaction(sig, act, old);
        if (r == 0 && old != nullptr) Saved::of(sig).show_own(*old);
        return r;
    }
    if (!g_armed.load(std::memory_order_acquire)) {
        // Nothing can spin: straight through, one system call.
        const int r = real_sigaction(sig, act, old);
        if (r == 0 && old != nullptr) Saved::of(sig).show_own(*old);  // a sweep under way
        // A configure armed the shim during the call: wrap what it installed.
        if (r == 0 && act != nullptr && g_armed.load(std::memory_order_seq_cst)) {
            Lock lock;
            settle(sig);
        }
        return r;
    }
    // A query, or an action that is no function (SIG_DFL, SIG_IGN): nothing
    // to publish, one system call and no lock (shells install these by the
    // dozen around every fork). A sweep racing it sees a raw install, which
    // settle() keeps; a trampoline in `old` means the handler the table holds.
    if (act == nullptr || !is_function(*act)) {
        const int r = real_sigaction(sig, act, old);
        if (r != 0) return r;
        if (act != nullptr) note_installed(sig, *act);
        if (old != nullptr) Saved::of(sig).show_own(*old);
        return 0;
    }
    // Read the caller's struct before the lock (a bad pointer faults here,
    // as in libc, and not with every signal blocked).
    struct sigaction prev {};
    if (act != nullptr && act != &mine) mine = *act;
    int r;
    {
        Lock lock;
        r = install_locked(sig, act != nullptr ? &mine : nullptr, prev);
    }
    if (r == 0 && old != nullptr) *old = prev;
    return r;
}

bool signals_pass_through() noexcept {
    return !g_armed.load(std::memory_order_acquire);
}

sighandler_t signals_after_pass_through(int sig, sighandler_t h) noexcept {
    if (never_wrapped(sig) || h == SIG_ERR) return h;
    struct sigaction tmp {};
    tmp.sa_handler = h;
    Saved::of(sig).show_own(tmp);
    if (!in_vfork_child() && resolve_sigaction() && g_armed.load(std::memory_order_seq_cst)) {
        Lock lock;
        settle(sig);
    }
    return tmp.sa_handler;
}

void configure_signals(bool may_spin) noexcept {
    // Not armed yet and spinning may start: arm at the first spin. Armed
    // already (a live reload): sweep now, for what raw installs put behind
    // the shim (a reload is rare, and reads a file anyway).
    if (may_spin && !g_armed.load(std::memory_order_relaxed)) {
        g_arm_at_spin.store(true, std::memory_order_relaxed);
        set_spin_hook(sweep_before_spin);
        return;
    }
    set_spin_hook(nullptr);
    g_arm_at_spin.store(false, std::memory_order_relaxed);
    // Nothing to wrap or unwrap: no system call (mode off stays plain).
    if (!may_spin && !g_armed.load(std::memory_order_relaxed) &&
        g_wrapped.load(std::memory_order_relaxed) == 0)
        return;
    if (!resolve_sigaction()) return;
    Lock lock;
    g_armed.store(may_spin, std::memory_order_seq_cst);
    sweep_locked();
}

}  // namespace pipespin::interpose
