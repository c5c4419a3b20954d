// What the spin needs to know about signal handlers that ran on this thread.
//
// While anything in the process can spin, the interpose layer
// (src/interpose/signals.cpp) installs each of the program's handlers behind
// a trampoline that bumps t_signal_epoch, and t_eintr_epoch for a handler
// without SA_RESTART, then jumps to the program's handler. A spin that sees
// t_signal_epoch move stops: the blocking call it stands in for would have
// been interrupted. Whether the call then fails with EINTR or goes on
// waiting is what the kernel would decide: SA_RESTART of the handler that
// ran, as recorded in g_restart_bits when it was installed.
//
// The names given with asm() are what the x86_64 trampoline (plain
// assembly, see src/interpose/trampoline.cpp) refers to; do not rename them
// on one side only.
#pragma once

#include <atomic>
#include <cstdint>

namespace pipespin {

extern constinit thread_local std::uint32_t t_signal_epoch asm("pipespin_signal_epoch")
    [[gnu::tls_model("initial-exec")]];
// Bumped only for handlers without SA_RESTART (a read or write they
// interrupt fails with EINTR).
extern constinit thread_local std::uint32_t t_eintr_epoch asm("pipespin_eintr_epoch")
    [[gnu::tls_model("initial-exec")]];

// Bit sig - 1 (signals 1..64): the handler the shim installed for sig has
// SA_RESTART. Written when a handler is installed, never on a delivery (the
// trampoline makes no system call).
extern std::atomic<std::uint64_t> g_restart_bits asm("pipespin_restart_bits");

inline bool restarts(int sig) noexcept {
    const unsigned bit = static_cast<unsigned>(sig) - 1u;
    return bit < 64 && ((g_restart_bits.load(std::memory_order_relaxed) >> bit) & 1u) != 0;
}

// What the trampoline does before it jumps to the program's handler, for
// the C trampoline (architectures without the assembly one). Async-signal-
// safe. A handler's own I/O (the self-pipe trick) cannot undo what it
// records: the spin compares epochs, it never clears.
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
