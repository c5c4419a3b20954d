// The trampolines the shim installs in place of the program's signal
// handlers, and the table of the program's handlers behind them.
//
// Contract: the kernel holds pipespin_trampoline_plain for a handler
// installed without SA_SIGINFO, pipespin_trampoline_info for one with it,
// always with the program's own flags, mask and restorer. On a delivery the
// trampoline records the signal for the spin (core/signals.h: the epochs,
// SA_RESTART from g_restart_bits, no system call) and passes control to
// g_plain_handlers[sig] or g_info_handlers[sig] with the registers the kernel
// set up, so that the handler runs as if the kernel had called it.
//
// Stack use (documented in README.md, "Signal handlers"): on x86_64 the
// trampoline is a few instructions of assembly that jump to the handler: it
// pushes nothing, reads only the interrupted rip from the kernel's
// ucontext and writes it only for a thread interrupted inside the gate of
// the shim's own system calls (platform/gate.h), the handler returns
// straight to the kernel's restorer, and the handler finds the stack pointer
// (and rdi, rsi, rdx, rax) exactly where the kernel put them. Elsewhere it is
// C that the compiler usually turns into a tail call (0 bytes at -O2);
// without optimisation, one call frame (typically 16-48 bytes).
//
// The two tables are indexed by signal number (1..64); a slot is written
// before the trampoline that reads it is installed and never cleared, so a
// delivery always finds a handler (see signals.cpp for the races).
#pragma once

#include <signal.h>

#include <atomic>

namespace pipespin::interpose {

constexpr int kSigSlots = 65;

extern std::atomic<void*> g_plain_handlers[kSigSlots] asm("pipespin_plain_handlers");
extern std::atomic<void*> g_info_handlers[kSigSlots] asm("pipespin_info_handlers");

}  // namespace pipespin::interpose

extern "C" {
void pipespin_trampoline_plain(int sig) __attribute__((visibility("hidden")));
void pipespin_trampoline_info(int sig, siginfo_t* info, void* uctx)
    __attribute__((visibility("hidden")));
}
