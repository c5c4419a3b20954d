// What the spin needs to know about signal handlers that ran on this thread.
//
// The interpose layer wraps every handler the program installs (sigaction,
// signal, sigset, ...) in a trampoline that bumps t_signal_epoch and notes the
// signal in t_signals_seen before calling the program's handler. A spin that
// sees the epoch move stops: the blocking call it stands in for would have
// been interrupted. Whether the call then fails with EINTR or goes on waiting
// is what the kernel would decide: SA_RESTART of each handler that ran.
#pragma once

#include <cstdint>

namespace pipespin {

extern constinit thread_local std::uint32_t t_signal_epoch [[gnu::tls_model("initial-exec")]];
// Bumped only for handlers without SA_RESTART (a read or write they
// interrupt fails with EINTR).
extern constinit thread_local std::uint32_t t_eintr_epoch [[gnu::tls_model("initial-exec")]];

// SA_RESTART of the handler now installed for sig, read from the kernel
// (siginterrupt() changes it behind any wrapper). Async-signal-safe.
bool restarts(int sig) noexcept;

// Called by the trampoline, in the signal handler, before the program's
// handler: async-signal-safe. A handler's own I/O (the self-pipe trick)
// cannot undo what it records: the spin compares epochs, it never clears.
inline void note_signal(int sig) noexcept {
    if (!restarts(sig)) ++t_eintr_epoch;
    ++t_signal_epoch;
}

// Both epochs as a spin saw them before its first look.
struct SignalMark {
    std::uint32_t any = t_signal_epoch;
    std::uint32_t eintr = t_eintr_epoch;
    bool handler_ran() const noexcept { return t_signal_epoch != any; }
    bool wants_eintr() const noexcept { return t_eintr_epoch != eintr; }
};

}  // namespace pipespin
