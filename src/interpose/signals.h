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

}  // namespace pipespin::interpose
