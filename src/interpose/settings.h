// Where the shim's settings come from in the host process, and the live
// reload: the config file (PIPESPIN_CONFIG, else /etc/pipespin.conf) and the
// PIPESPIN_* variables, resolved by src/core/config.h.
//
// PIPESPIN_CONFIG unset: /etc/pipespin.conf if it exists (silently none if
// not); set to a path: that file, and a warning if it cannot be used; set
// but empty: no file at all (and no re-checks).
//
// Contract: nothing here allocates. The start-up half runs in the
// constructor; the reload runs inside whichever thread's read/write/poll the
// engine picked (at most every reload_ms), under BusyScope, one thread at a
// time, and never loads the log sink.
#pragma once

#include "core/config.h"
#include "core/options.h"
#include "core/stats.h"

namespace pipespin::interpose {

// Start-up: finds the file, learns the program's names (only if there is a
// file), captures PIPESPIN_*, and resolves. Problems are held until
// report_problems(), since the log level and destination are only known now.
void resolve_startup_options(Options& options, OptionSources& sources) noexcept;
// The one way options become the process's settings, at start-up and on a
// reload: the statistics and the A/B arm (the control arm runs mode off, so
// `options` changes), the log level and destination, then the engine, for
// every fd. Returns the arm.
Arm apply_options(Options& options, const OptionSources& sources) noexcept;
// Writes the problems the last resolution found (warnings).
void report_problems(bool may_load) noexcept;
// Debug: the resolved values and where each came from.
void report_resolved(const Options& options, const OptionSources& sources, bool may_load) noexcept;
// Registers the live re-check with the engine, unless there is no file
// location (PIPESPIN_CONFIG empty) or reload_ms is 0.
void watch_config() noexcept;
// The guard a reload holds while it applies new options: the A/B switch of
// ab_period (stats.cpp) takes it too, so that the two never interleave.
// False: a reload is running (it settles the arm in force itself).
bool try_lock_settings() noexcept;
void unlock_settings() noexcept;
// For the exit report: how many reloads applied a changed file.
unsigned reload_count() noexcept;

// The usable CPUs (sched_getaffinity) the last resolution saw; 1 when no
// resolution needed them yet (mode off for good, no debug lines).
int usable_cpus_seen() noexcept;

}  // namespace pipespin::interpose
