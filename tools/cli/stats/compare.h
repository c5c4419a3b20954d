// pipespin stats --compare: did the treatment help on this host? Control
// against treatment from the statistics lines, per program and overall.
//
// Each process image of an A/B test is one sample, and so is each period of
// a switchback process (ab_period; lines.h, Period). Per sample: wall
// time per call, time blocked per wait (from the wait histograms), CPU time
// per MiB moved and context switches per call. Per measure and group: the
// ratio of the arms' medians (control / treatment) with its bootstrap
// interval and a verdict in `pipespin ab`'s words (statistics.h).
//
// Verdicts that do not cry wolf: one line is the experiment's, the primary
// (wall per call of the whole experiment: the (all) group, or the one
// program), tested at 95%. Every other line with a verdict (each program's
// wall per call, every other measure) belongs to one family whose
// intervals are widened to 1 - 0.05/m for its m lines (Bonferroni), so
// that an A/A experiment reads "no significant difference" on every line
// in 95% of experiments, however many programs and measures it has.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/stats/lines.h"
#include "cli/util/json.h"
#include "cli/util/statistics.h"

namespace pipespin::cli {

struct CompareArgs {
    std::uint64_t seed = 1;
    // A verdict of faster or slower needs the whole interval beyond 1 + margin.
    double margin = 0.05;
    JsonOutput json;
    std::optional<std::string> program;  // only this program's samples
    std::optional<std::string> plot;     // FILE.png (drawn) or FILE.gp (the script)
};

// Fewer samples than this in an arm: no verdict, a warning.
inline constexpr std::size_t kCompareMinSamples = 5;
// The family's error rate: the chance that an experiment without an effect
// shows a verdict on any line.
inline constexpr double kFamilyAlpha = 1 - kBootstrapConfidence;

inline constexpr int kControl = 0, kTreatment = 1;
inline constexpr const char* kAllPrograms = "(all)";

struct MeasureResult {
    const char* key;    // JSON: "wall_per_call_us"
    const char* label;  // text: "wall per call (µs)"
    std::vector<double> values[2];
    std::optional<RatioTest> test;  // nullopt: too few samples
    bool primary = false;           // the experiment's verdict
    double confidence = 0;          // of the interval, when tested
    double median(int arm) const { return summarize(values[arm]).median; }
};

struct CompareGroup {
    std::string program;
    bool relative = false;  // (all): each program relative to its control median
    std::size_t samples[2] = {};
    std::size_t processes = 0, periods = 0;
    std::size_t partial = 0;              // periods left out: shorter than half of ab_period
    WaitHist waits[2][kWaitEnds];         // summed over the arm's samples
    std::vector<MeasureResult> measures;  // kMeasures' order; [0] wall per call
    bool too_few() const {
        return samples[kControl] < kCompareMinSamples || samples[kTreatment] < kCompareMinSamples;
    }
};

struct Comparison {
    std::vector<CompareGroup> groups;  // per program (by name), then (all) when several
    std::size_t family = 0;            // lines tested besides the primary
    double family_confidence = kBootstrapConfidence;
    // The primary line's group (null: no group); its measures[0] is the line.
    const CompareGroup* primary() const { return groups.empty() ? nullptr : &groups.back(); }
};

// The verdicts, without printing anything.
Comparison compare(const LoadedStats& st, const CompareArgs& a);
// Prints the comparison (text and/or JSON as a.json asks) and draws the
// plot. Throws Failure when no process ran in an arm.
int compare_stats(const LoadedStats& st, const CompareArgs& a);

}  // namespace pipespin::cli
