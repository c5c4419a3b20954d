// Finding the programs the subcommands run (perf, hackbench, gnuplot, make,
// python3, the coreutils...) on PATH, and saying which Debian package a
// missing one comes from. pipespin installs nothing: a subcommand that lacks
// a tool skips what needs it, or fails, naming the package.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/util/environment.h"

namespace pipespin::cli {

// What execvp would run for `cmd`: cmd itself when it contains '/', else the
// first executable match on PATH (or on confstr(_CS_PATH) when PATH is unset).
std::optional<std::string> resolve_command(std::string_view cmd);

// The Debian package a tool comes from, for "not installed" notes; "?" for
// a tool no subcommand runs.
std::string_view package_of(std::string_view tool);

// Where a tool is, or why it cannot be used.
struct Located {
    std::optional<std::string> path;
    std::string note;  // why it is missing, or what was used instead of the obvious
};
// `tool` on PATH. Debian's perf wrapper is looked through: when it finds no
// perf for the running kernel, the newest working perf_* beside it is used
// (and said in the note). `env` is the environment `perf version` is tried in.
Located locate_tool(std::string_view tool, const Environment& env);

}  // namespace pipespin::cli
