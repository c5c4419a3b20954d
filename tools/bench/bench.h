// pipespin-bench, the lab: the benchmark matrix, the coverage runs and the
// worker they start, built and tested with the rest but never installed
// (what a user installs is tools/cli's `pipespin`). Its command table is in
// main.cpp; adding a command is its file here, its define_NAME() below and
// one row there.
//
// The lab is built on the command line's utilities (tools/cli/util) and the
// pingpong loops (tools/cli/worker.h); tools/cli includes nothing of the
// lab (tests/e2e/check_tool_layers.sh).
#pragma once

#include <utility>
#include <vector>

#include "cli/util/command.h"

namespace pipespin::bench {

using namespace pipespin::cli;

Action define_matrix(CLI::App& app);    // matrix/matrix.cpp
Action define_coverage(CLI::App& app);  // coverage/coverage.cpp
Action define_worker(CLI::App& app);    // worker.cpp
// relay and feed: the loops of coverage, commands of the worker
// (coverage/worker.cpp).
std::vector<std::pair<const CLI::App*, Action>> define_coverage_loops(CLI::App& worker);

// The name the lab's reports and workers run under.
inline constexpr std::string_view kBenchProgram = "pipespin-bench";

}  // namespace pipespin::bench
