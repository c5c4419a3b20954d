// What the spin needs to know about signal handlers that ran on this thread.
//
// The interpose layer wraps every handler the program installs (sigaction,
// signal, sigset, ...) in a trampoline that bumps t_signal_epoch and notes the
// signal in t_signals_seen before calling the program's handler. A spin that
// sees the epoch move stops: the blocking call it stands in for would have
// been interrupted. Whether the call then fails with EINTR or goes on waiting
// is what the kernel would decide: SA_RESTART of each handler that ran, read
// from the kernel (siginterrupt() changes it behind any wrapper).
#pragma once

#include <cstdint>

namespace pipespin {

extern thread_local std::uint32_t t_signal_epoch [[gnu::tls_model("initial-exec")]];
extern thread_local std::uint64_t t_signals_seen [[gnu::tls_model("initial-exec")]];

// Called by the trampoline, in the signal handler: async-signal-safe.
inline void note_signal(int sig) noexcept {
    t_signals_seen |= 1ull << ((sig - 1) & 63);
    ++t_signal_epoch;
}

// True when every signal in `mask` has SA_RESTART set right now, so that a
// read or write it interrupted would have been restarted.
bool all_restart(std::uint64_t mask) noexcept;

}  // namespace pipespin
