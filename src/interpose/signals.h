// The signal layer's face to start-up and configuration (signals.cpp says
// what it does with handlers).
#pragma once

namespace pipespin::interpose {

// After every configure (start-up, each live reload): may_spin is
// anything_spins() under the new settings. Wraps the program's handlers
// (those installed before, by any means) when it is true, unwraps them when
// it is false. Async-signal-safe. No system call when nothing is or was
// wrapped and nothing can spin.
void configure_signals(bool may_spin) noexcept;

// In a child after fork(): a lock another thread of the parent held is free.
void signals_after_fork() noexcept;

}  // namespace pipespin::interpose
