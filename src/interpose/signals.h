// The signal layer's face to start-up and configuration (signals.cpp says
// what it does with handlers).
#pragma once

namespace pipespin::interpose {

// After every configure (start-up, each live reload): may_spin is
// anything_spins() under the new settings. When it is true, the program's
// handlers are wrapped as they are installed, and those installed before
// (by any means) are wrapped now, or, at start-up, just before the first
// spin (engine.h, set_spin_hook); when it is false, they are unwrapped.
// Async-signal-safe. At start-up, no system call here.
void configure_signals(bool may_spin) noexcept;

}  // namespace pipespin::interpose
