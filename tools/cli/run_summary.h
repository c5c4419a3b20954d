// pipespin run --summary: run CMD as a child (not by exec), with every
// process of its tree writing a statistics line, and after it exits print
// one table of what the shim did, per program, on stderr (the spirit of
// perf stat and strace -c), or the same as one JSON document.
//
// The lines go to PIPESPIN_STATS when the user named a plain file there
// (only what the run appends is read), else to a private temporary file
// (with a warning when that replaces "stderr" or a %p pattern). CMD's
// stdin, stdout and stderr are its own, and so is the exit status: a CMD
// killed by a signal is reported, and pipespin then dies of the same
// signal (without a core dump of its own), as a shell's `wait` shows it.
// While CMD runs, pipespin ignores SIGINT and SIGQUIT (the terminal sends
// them to CMD too) and passes SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 on.
#pragma once

#include <string>
#include <vector>

#include "cli/util/command.h"
#include "cli/util/json.h"

namespace pipespin::cli {

// Runs cmd (null-terminated, as execvp takes it) with the environment
// already set up but for PIPESPIN_STATS, which it sets, then calls
// `ready` (the last change to the environment), and returns (or
// re-raises) CMD's status.
int run_with_summary(Args cmd, const JsonOutput& json, void (*ready)());

}  // namespace pipespin::cli
