// The signal layer's face to start-up, configuration and the wrappers of
// the libc names that install handlers (signals.cpp says what it does with
// handlers).
#pragma once

#include <signal.h>

namespace pipespin::interpose {

// sigaction() as the shim makes it: the program's handler goes behind the
// trampoline while anything can spin (a trampoline handed back means the
// handler behind it), and `old` gets the previous action as the program
// installed it. Returns what sigaction() returns, errno set as libc sets it
// (ENOSYS if the real sigaction cannot be found). Every libc name that
// installs a handler calls it (hooks_signal.cpp).
int wrapped_sigaction(int sig, const struct sigaction* act, struct sigaction* old);

// After every configure (start-up, each live reload): may_spin is
// anything_spins() under the new settings. When it is true, the program's
// handlers are wrapped from the process's first spin on (engine.h,
// set_spin_hook): that spin wraps those installed before, by any means, and
// installs after it are wrapped as they come; a reload while wrapped wraps
// again what raw installs put behind the shim. When it is false, they are
// unwrapped. Async-signal-safe. Until the first spin, no system call here.
void configure_signals(bool may_spin) noexcept;

// For the signal() family (hooks_signal.cpp). True while nothing is wrapped
// (not armed): the hook then calls the next definition of its own name
// (libc's, or another preload's: libjsig interposes signal() and sigset()
// and must keep its say), exactly as without the shim.
bool signals_pass_through() noexcept;
// After such a call: maps a trampoline in `h` (a disarming sweep under
// way) to the program's own handler, and, if a configure armed the shim
// meanwhile, wraps what the call installed. Returns `h` as the program
// should see it.
sighandler_t signals_after_pass_through(int sig, sighandler_t h) noexcept;

}  // namespace pipespin::interpose
