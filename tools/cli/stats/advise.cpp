#include "cli/stats/advise.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/text.h"
#include "core/options.h"

namespace pipespin::cli {
namespace {

// Bucket b's edges in µs (docs/stats.md: bucket 0 below 2^10 ns, bucket b
// from 2^(b+9) ns up to 2^(b+10) ns).
double bucket_low_us(int b) {
    return b == 0 ? 0 : std::ldexp(1.0, b + 9) / 1000;
}
double bucket_high_us(int b) {
    return std::ldexp(1.0, b + 10) / 1000;
}

// A budget a person would write: 1, 2, 5 times a power of ten, at least `us`.
std::uint64_t round_up_nice(double us) {
    for (double p = 1;; p *= 10)
        for (double m : {1.0, 2.0, 5.0})
            if (m * p >= us) return static_cast<std::uint64_t>(m * p);
}

// The most common spin_us among the program's treatment lines.
std::uint64_t treatment_budget(const LoadedStats& st, const std::string& program) {
    std::map<std::uint64_t, std::size_t> seen;
    for (const ProcessRecord& r : st.records)
        if (r.program == program && (r.arm == "treatment" || r.switchback())) ++seen[r.spin_us];
    std::uint64_t best = 0;
    std::size_t n = 0;
    for (const auto& [us, count] : seen)
        if (count > n) best = us, n = count;
    return best;
}

// The smallest upper bucket edge (µs) under which `share` of `h`'s waits in
// buckets [from, to] end.
double quantile_edge(const WaitHist& h, int from, int to, double share) {
    std::uint64_t total = 0;
    for (int b = from; b <= to; ++b) total += h.n[b];
    std::uint64_t seen = 0;
    for (int b = from; b <= to; ++b) {
        seen += h.n[b];
        if (static_cast<double>(seen) >= share * static_cast<double>(total))
            return bucket_high_us(b);
    }
    return bucket_high_us(to);
}

std::string verdict_text(const CompareGroup& g) {
    const MeasureResult& w = g.measures.front();
    if (!w.test)
        return fmt::format("wall per call: too few samples ({} control, {} treatment; at least {})",
                           w.values[kControl].size(), w.values[kTreatment].size(),
                           kCompareMinSamples);
    return fmt::format(
        "wall per call: control/treatment {:.3f}, {:.4g}% interval [{:.3f}, {:.3f}]: {} ({} "
        "control, {} treatment samples)",
        w.test->ratio, w.confidence * 100, w.test->ci_low, w.test->ci_high, w.test->verdict,
        w.values[kControl].size(), w.values[kTreatment].size());
}

// A name a [program] section can hold as it is: no blank, no glob.
bool plain_name(std::string_view name) {
    return !name.empty() && name.find_first_of(" \t*?[]#=\\") == std::string_view::npos &&
           printable(name) == name;
}

void budget_advice(Advice& a, const CompareGroup& g) {
    WaitHist hit, miss;
    hit = g.waits[kTreatment][static_cast<int>(WaitEnd::Hit)];
    miss = g.waits[kTreatment][static_cast<int>(WaitEnd::Miss)];
    const std::uint64_t spins = hit.count() + miss.count();
    if (a.spin_us == 0 || spins < kAdviseMinSpins) return;
    const OptionSpec& spec = option_spec(OptionId::SpinUs);
    const double budget = static_cast<double>(a.spin_us);
    // Late: misses whose wait ended within kLateFactor budgets.
    int last_late = -1;
    std::uint64_t late = 0;
    for (int b = 0; b < kWaitBuckets; ++b)
        if (bucket_low_us(b) >= budget * 0.5 && bucket_high_us(b) <= budget * kLateFactor)
            late += miss.n[b], last_late = b;
    if (last_late >= 0 && static_cast<double>(late) >= 0.25 * static_cast<double>(spins)) {
        int first = 0;
        while (first < last_late && bucket_low_us(first) < budget * 0.5) ++first;
        const std::uint64_t to = std::min<std::uint64_t>(
            round_up_nice(quantile_edge(miss, first, last_late, 0.9)), spec.max);
        if (to > a.spin_us) {
            a.suggestions.push_back(
                {"spin_us", std::to_string(to),
                 fmt::format("the peer answers later than the budget: {} of {} spins ({:.0f}%) "
                             "missed spin_us={} and their wait ended within {:g} µs; 90% of "
                             "those by {:g} µs",
                             late, spins, 100.0 * static_cast<double>(late) / spins, a.spin_us,
                             budget * kLateFactor, quantile_edge(miss, first, last_late, 0.9))});
            return;
        }
    }
    // Early: nearly every spin hit, 99% well inside the budget.
    if (static_cast<double>(miss.count()) > 0.05 * static_cast<double>(spins)) return;
    const double p99 = quantile_edge(hit, 0, kWaitBuckets - 1, 0.99);
    if (p99 * 4 > budget) return;
    const std::uint64_t to = std::max<std::uint64_t>(round_up_nice(2 * p99), spec.min + 1);
    if (to >= a.spin_us) return;
    a.suggestions.push_back(
        {"spin_us", std::to_string(to),
         fmt::format("the peer answers sooner than the budget: {} of {} spins hit, 99% of them "
                     "within {:g} µs, under a quarter of spin_us={}",
                     hit.count(), spins, p99, a.spin_us)});
}

std::string comment(std::string_view text) {
    return comment_lines(text, 2);
}

}  // namespace

std::vector<Advice> advise(const LoadedStats& st, const Comparison& cmp) {
    std::vector<Advice> out;
    for (const CompareGroup& g : cmp.groups) {
        if (g.relative) continue;  // (all): the programs say it
        Advice a;
        a.program = g.program;
        a.group = &g;
        a.spin_us = treatment_budget(st, g.program);
        const MeasureResult& wall = g.measures.front();
        if (wall.test && wall.test->verdict == kSlower)
            a.suggestions.push_back(
                {"mode", "off",
                 "the treatment was slower: spinning costs this program more than it saves"});
        else
            budget_advice(a, g);
        if (a.suggestions.empty())
            a.note = "no evidence for a change";
        else if (!plain_name(g.program)) {
            a.note = "no section: the name holds a blank or a glob character";
            a.suggestions.clear();
        }
        out.push_back(std::move(a));
    }
    return out;
}

int advise_stats(const LoadedStats& st, const CompareArgs& args,
                 const std::vector<std::string>& files) {
    const Comparison cmp = compare(st, args);
    if (cmp.groups.empty())
        throw Failure(kExitFailure,
                      "stats --advise: no process ran in an A/B arm (lines with \"arm\" control "
                      "or treatment), so there is no evidence to advise from; hint: run the "
                      "programs with PIPESPIN_AB=50 and PIPESPIN_STATS set");
    const std::vector<Advice> advice = advise(st, cmp);
    std::string text = comment(fmt::format("pipespin stats --advise {}", shell_join(files)));
    text += comment(fmt::format(
        "From {} statistics lines: the verdicts of stats --compare (seed {}, margin {:g}%), "
        "whose lines other than the experiment's own are a family at {:.4g}% each, and the "
        "treatment arm's wait histograms. Each section follows from the evidence in the "
        "comments above it. Check the file with `pipespin check-config FILE` before merging "
        "it into /etc/pipespin.conf.",
        st.lines, args.seed, args.margin * 100, cmp.family_confidence * 100));
    const CompareGroup& last = *cmp.primary();
    text += comment(fmt::format("The experiment ({}): {}",
                                last.relative ? "all programs" : printable(last.program),
                                verdict_text(last)));
    Json programs = Json::array();
    for (const Advice& a : advice) {
        text += "\n" + comment(fmt::format("{}: {}", printable(a.program), verdict_text(*a.group)));
        Json suggestions = Json::array();
        for (const Suggestion& s : a.suggestions) {
            text += comment(fmt::format("{} = {}: {}", s.key, s.value, s.evidence));
            suggestions.push_back({{"key", s.key}, {"value", s.value}, {"evidence", s.evidence}});
        }
        if (!a.note.empty()) text += comment(a.note);
        if (!a.suggestions.empty()) {
            text += fmt::format("[program {}]\n", a.program);
            for (const Suggestion& s : a.suggestions)
                text += fmt::format("{} = {}\n", s.key, s.value);
        }
        const MeasureResult& w = a.group->measures.front();
        programs.push_back({{"program", a.program},
                            {"verdict", w.test ? Json(w.test->verdict) : Json(nullptr)},
                            {"ratio", w.test ? Json(w.test->ratio) : Json(nullptr)},
                            {"ci_low", w.test ? Json(w.test->ci_low) : Json(nullptr)},
                            {"ci_high", w.test ? Json(w.test->ci_high) : Json(nullptr)},
                            {"confidence", w.test ? Json(w.confidence) : Json(nullptr)},
                            {"spin_us", a.spin_us},
                            {"suggestions", std::move(suggestions)},
                            {"note", a.note}});
    }
    Json doc = {{"lines", st.lines},
                {"family_confidence", cmp.family_confidence},
                {"programs", std::move(programs)},
                {"config", text}};
    if (emit_json("stats", args.json, doc)) fmt::print("{}", text);
    return kExitOk;
}

}  // namespace pipespin::cli
