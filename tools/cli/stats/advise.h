// pipespin stats --advise: the configuration an A/B experiment's evidence
// supports, per program, as a config file (pipespin.conf(5)) that
// check-config accepts.
//
// From stats --compare's verdicts (compare.h, the family-controlled
// ones) and the treatment arm's wait histograms (docs/stats.md):
//   - wall per call slower in the treatment: [program X] mode = off;
//   - else, spins that missed and whose wait ended within kLateFactor times
//     the budget (the peer answers a little later than spin_us) for at least
//     a quarter of the spins: a larger spin_us, the one that covers 90% of
//     those waits;
//   - else, spins that nearly all hit, 99% of them within a quarter of the
//     budget (the peer answers far sooner): a smaller spin_us, twice that;
//   - nothing where there is no such evidence (a comment says so).
// Each suggestion is preceded by comments stating its evidence.
#pragma once

#include "cli/stats/compare.h"

namespace pipespin::cli {

inline constexpr std::uint64_t kAdviseMinSpins = 50;  // fewer: no budget advice
inline constexpr double kLateFactor = 8;

struct Suggestion {
    std::string key, value;  // "mode", "off"
    std::string evidence;    // one sentence, for the comment
};
struct Advice {
    std::string program;
    const CompareGroup* group = nullptr;  // its verdicts
    std::uint64_t spin_us = 0;            // the treatment's budget, as its lines say
    std::vector<Suggestion> suggestions;  // empty: no change
    std::string note;                     // why nothing, or why no section can be written
};

std::vector<Advice> advise(const LoadedStats& st, const Comparison& cmp);
// Prints the config file (and/or JSON as a.json asks); throws Failure when
// no process ran in an arm.
int advise_stats(const LoadedStats& st, const CompareArgs& a,
                 const std::vector<std::string>& files);

}  // namespace pipespin::cli
