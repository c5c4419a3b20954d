// The process's statistics lines and its A/B arm, inside the host.
//
// A line (core/stats.h renders it; docs/stats.md is its contract) is
// appended to PIPESPIN_STATS when the process exits (the shim's destructor,
// or _exit/_Exit), just before it execs (the exec family), every
// stats_interval seconds, and at each A/B switch of ab_period (both from the
// engine's StatsTick). Each is one write(2) of less than PIPE_BUF with
// O_APPEND, so concurrent processes never interleave within a line, and
// carries getrusage() since the previous line (read only then). A forked
// child starts from zero counters and its own start time, and keeps its
// parent's arm and switchback schedule; a vfork child (or any child made
// without fork's handlers) writes nothing, since the counters it sees are
// its parent's.
//
// Contract: nothing here allocates or takes a lock; the write path uses raw
// syscalls only and is async-signal-safe (an exec or _exit may come from a
// signal handler). A line that cannot be written is reported at once, once
// per process, where the shim's messages go (report.h), also with raw
// writes only.
#pragma once

#include "core/options.h"
#include "core/stats.h"

namespace pipespin::interpose {

// In a child after fork(): its own pid and start time, if lines are on.
void stats_after_fork() noexcept;

// After every resolution of the options (start-up, a live reload, an A/B
// switch): keeps a copy of the resolved configuration for the lines,
// settles the process's arm (settle_arm: drawn once, kept across reloads;
// with ab_period, the arm of the period now: arm_at) and applies it to
// `options` (apply_arm: control = mode off). `ab_configured`: some source
// set `ab`. Then the destination, the interval and the switch schedule.
// Returns the arm in force.
Arm stats_resolve(Options& options, bool ab_configured) noexcept;

// Writes one line now (no-op without PIPESPIN_STATS, or in a process whose
// counters are not its own).
void stats_write(StatsEvent event) noexcept;
// The final line, once: the destructor and _exit/_Exit.
void stats_exit() noexcept;
// Statistics lines are on.
bool stats_enabled() noexcept;
// The lines go to the process's stderr (PIPESPIN_STATS=stderr).
bool stats_to_stderr() noexcept;
// The program is about to close its stderr (before_stderr_closes() in
// real.h), after which a warning about the exit line would reach nobody
// (without a log_file): the destination is tried now, as the exit line
// will open it (a file is created, as that line would create it), and
// reported now if it cannot be used.
void stats_before_stderr_closes() noexcept;

}  // namespace pipespin::interpose
