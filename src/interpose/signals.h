// The signal layer's face to start-up and configuration (signals.cpp says
// what it does with handlers).
#pragma once

namespace pipespin::interpose {

// After every configure (start-up, each live reload): may_spin is
// anything_spins() under the new settings. When it is true, the program's
// handlers are wrapped from the process's first spin on (engine.h,
// set_spin_hook): that spin wraps those installed before, by any means, and
// installs after it are wrapped as they come; a reload while wrapped wraps
// again what raw installs put behind the shim. When it is false, they are
// unwrapped. Async-signal-safe. Until the first spin, no system call here.
void configure_signals(bool may_spin) noexcept;

}  // namespace pipespin::interpose
