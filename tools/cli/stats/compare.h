// pipespin stats --compare: did the treatment help on this host? Control
// against treatment from the statistics lines, per program and overall.
//
// Each process image of an A/B test is one sample, and so is each period of
// a switchback process (ab_period; lines.h, Period). Per sample: wall
// time per call, time blocked per wait (from the wait histograms), CPU time
// per MiB moved and context switches per call. Per measure and group: the
// ratio of the arms' medians (control / treatment) with its bootstrap
// interval and a verdict in `pipespin ab`'s words (ab_stats.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/stats/lines.h"

namespace pipespin::cli {

struct CompareArgs {
    std::uint64_t seed = 1;
    // A verdict of faster or slower needs the whole interval beyond 1 + margin.
    double margin = 0.05;
    bool json = false;
    std::optional<std::string> program;  // only this program's samples
    std::optional<std::string> plot;     // FILE.png (drawn) or FILE.gp (the script)
};

// Fewer samples than this in an arm: no verdict, a warning.
inline constexpr std::size_t kCompareMinSamples = 5;

// Prints the comparison (text, or one JSON object) and draws the plot.
int compare_stats(const LoadedStats& st, const CompareArgs& a);

}  // namespace pipespin::cli
