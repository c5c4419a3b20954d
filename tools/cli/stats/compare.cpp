#include "cli/stats/compare.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/plot.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"

namespace pipespin::cli {

namespace {

// One sample: a process image or a switchback period.
struct Sample {
    std::uint64_t wall_us = 0;
    Counters total;
    WaitHist waits[kWaitEnds];
    bool has_waits = false;  // a version 2 line: the histograms are there
    bool has_rusage = false;
    Rusage rusage;
};

// What each measure makes of a sample; nullopt where the sample cannot say
// (no calls, a version 1 line, no waits).
struct Measure {
    const char* key;    // JSON
    const char* label;  // text
    std::optional<double> (*of)(const Sample&);
};

std::optional<double> wall_per_call(const Sample& s) {
    if (s.total.calls == 0) return std::nullopt;
    return static_cast<double>(s.wall_us) / static_cast<double>(s.total.calls);
}

std::optional<double> blocked_per_wait(const Sample& s) {
    std::uint64_t n = 0, ns = 0;
    for (const WaitHist& w : s.waits) {
        n += w.count();
        ns += w.ns;
    }
    if (!s.has_waits || n == 0) return std::nullopt;
    return static_cast<double>(ns) / 1000.0 / static_cast<double>(n);
}

std::optional<double> cpu_per_mib(const Sample& s) {
    if (!s.has_rusage || s.total.bytes == 0) return std::nullopt;
    const double cpu_ms = static_cast<double>(s.rusage.utime_us + s.rusage.stime_us) / 1000.0;
    return cpu_ms / (static_cast<double>(s.total.bytes) / (1 << 20));
}

std::optional<double> switches_per_call(const Sample& s) {
    if (!s.has_rusage || s.total.calls == 0) return std::nullopt;
    return static_cast<double>(s.rusage.nvcsw + s.rusage.nivcsw) /
           static_cast<double>(s.total.calls);
}

constexpr Measure kMeasures[] = {
    {"wall_per_call_us", "wall per call (µs)", wall_per_call},
    {"blocked_per_wait_us", "blocked per wait (µs)", blocked_per_wait},
    {"cpu_per_mib_ms", "CPU per MiB moved (ms)", cpu_per_mib},
    {"switches_per_call", "context switches per call", switches_per_call},
};

struct Group {
    std::string program;
    // (all): the groups of the programs, whose samples it pools (evaluate).
    std::vector<const Group*> parts;
    std::vector<Sample> samples[2];
    std::size_t processes = 0, periods = 0;
    std::size_t partial = 0;       // periods left out: shorter than half of ab_period
    WaitHist waits[2][kWaitEnds];  // summed over the arm's samples
    void add(int arm, const Sample& s, bool period) {
        samples[arm].push_back(s);
        (period ? periods : processes) += 1;
        for (int e = 0; e < kWaitEnds; ++e) waits[arm][e] += s.waits[e];
    }
};

Sample sample_of(const StatsSnapshot& counters, std::uint64_t wall_us, int version, bool has_rusage,
                 const Rusage& rusage) {
    Sample s;
    s.wall_us = wall_us;
    s.total = counters.total();
    total_waits(counters, s.waits);
    s.has_waits = version >= 2;
    s.has_rusage = has_rusage;
    s.rusage = rusage;
    return s;
}

int arm_index(std::string_view arm) {
    return arm == "control" ? kControl : arm == "treatment" ? kTreatment : -1;
}

// Per program (sorted by name), then (all).
std::vector<Group> collect(const LoadedStats& st, const CompareArgs& a) {
    std::map<std::string, Group> by_program;
    Group all;
    all.program = kAllPrograms;
    auto add = [&](const std::string& program, std::string_view arm, const Sample& s, bool period,
                   bool partial = false) {
        // A process without a call on a pipe (a shell that only execs) has
        // nothing to compare: every measure is per call, wait or MiB.
        const int i = arm_index(arm);
        if (i < 0 || s.total.calls == 0 || (a.program && program != *a.program)) return;
        Group& g = by_program[program];
        g.program = program;
        if (partial) {
            ++g.partial;
            ++all.partial;
            return;
        }
        g.add(i, s, period);
        all.add(i, s, period);
    };
    for (const ProcessRecord& r : st.records)
        if (!r.switchback())
            add(r.program, r.arm,
                sample_of(r.counters, r.wall_us, r.version, r.has_rusage, r.rusage), false);
    for (const Period& p : st.periods)
        add(p.program, p.arm, sample_of(p.counters, p.wall_us, 2, p.has_rusage, p.rusage), true,
            p.partial());
    std::vector<Group> out;
    for (auto& [name, g] : by_program) out.push_back(std::move(g));
    if (out.size() > 1) {
        out.reserve(out.size() + 1);  // `parts` point into `out`
        for (const Group& g : out) all.parts.push_back(&g);
        out.push_back(std::move(all));
    }
    return out;
}

// A measure's values in both arms. For (all), each program's values are
// divided by the median of its own control arm before they are pooled:
// programs whose figures differ by orders of magnitude (µs per call of a
// ping-pong, ms of a batch job) and whose arms hold different numbers of
// their processes would otherwise compare the mix, not the treatment.
void evaluate(const Group& g, const Measure& m, MeasureResult& r) {
    auto values = [&](const Group& of, int arm, double scale) {
        for (const Sample& s : of.samples[arm])
            if (const std::optional<double> v = m.of(s)) r.values[arm].push_back(*v / scale);
    };
    if (g.parts.empty()) {
        for (int arm : {kControl, kTreatment}) values(g, arm, 1);
        return;
    }
    for (const Group* part : g.parts) {
        std::vector<double> own;
        for (const Sample& s : part->samples[kControl])
            if (const std::optional<double> v = m.of(s)) own.push_back(*v);
        const double scale = own.empty() ? 0 : summarize(own).median;
        if (!(scale > 0)) continue;  // no control figure to relate to
        for (int arm : {kControl, kTreatment}) values(*part, arm, scale);
    }
}

bool testable(const MeasureResult& r) {
    return r.values[kControl].size() >= kCompareMinSamples &&
           r.values[kTreatment].size() >= kCompareMinSamples;
}

// ---- the plot -----------------------------------------------------------------

// Where a bucket starts, for the axis: "<1µs", "1µs", ..., "≥268ms".
std::string bucket_label(int b) {
    if (b == 0) return "<1µs";
    const double ns = std::ldexp(1.0, b + 9);
    const std::string at = ns < 1e6   ? fmt::format("{:.0f}µs", ns / 1e3)
                           : ns < 1e7 ? fmt::format("{:.1f}ms", ns / 1e6)
                                      : fmt::format("{:.0f}ms", ns / 1e6);
    return b == kWaitBuckets - 1 ? "≥" + at : at;
}

// The share of an arm's waits in each bucket (all ends together), in %.
std::vector<double> shares(const WaitHist (&w)[kWaitEnds]) {
    std::vector<double> out(kWaitBuckets, 0);
    std::uint64_t total = 0;
    for (const WaitHist& h : w) total += h.count();
    for (int b = 0; b < kWaitBuckets; ++b) {
        std::uint64_t n = 0;
        for (const WaitHist& h : w) n += h.n[b];
        out[b] = total == 0 ? 0 : 100.0 * static_cast<double>(n) / static_cast<double>(total);
    }
    return out;
}

// The chart: the data inline, so that FILE.gp alone redraws it (and a test
// renders it as a table to compare with the --json figures).
Chart waits_chart(const CompareGroup& g, const MeasureResult& wall, const CompareArgs& a) {
    std::uint64_t n[2] = {};
    for (int arm : {kControl, kTreatment})
        for (const WaitHist& h : g.waits[arm]) n[arm] += h.count();
    const std::vector<double> c = shares(g.waits[kControl]), t = shares(g.waits[kTreatment]);
    std::string rows = "# bucket control_pct treatment_pct from\n";
    for (int b = 0; b < kWaitBuckets; ++b)
        rows += fmt::format("{} {:.6f} {:.6f} \"{}\"\n", b, c[b], t[b], bucket_label(b));
    const std::string verdict =
        wall.test ? fmt::format("wall per call {:.3f} [{:.3f}, {:.3f}]: {}", wall.test->ratio,
                                wall.test->ci_low, wall.test->ci_high, wall.test->verdict)
                  : std::string("too few samples for a verdict");
    return {
        .width = 1000,
        .data = gnuplot_datablock("waits", rows),
        .title =
            fmt::format("pipespin stats --compare: {}: waits by duration; {}{}", g.program, verdict,
                        a.margin > 0 ? fmt::format(" (margin {:g}%)", a.margin * 100) : ""),
        .commands = fmt::format(
            "set ylabel 'share of the arm''s waits (%)'\n"
            "set xlabel 'wait duration (log2 buckets, from)'\n"
            "set xrange [-0.6:{}]\n"
            "set yrange [0:*]\n"
            "set xtics rotate by -45\n"
            "set grid ytics\n"
            "set style fill solid 0.5 border -1\n"
            "set boxwidth 0.4\n"
            "plot $waits using ($1-0.2):2:xtic(4) with boxes lc rgb '#4060c0' title {}, \\\n"
            "     $waits using ($1+0.2):3 with boxes lc rgb '#c04040' title {}\n",
            kWaitBuckets - 0.4, gnuplot_string(fmt::format("control ({} waits)", n[kControl])),
            gnuplot_string(fmt::format("treatment ({} waits)", n[kTreatment]))),
    };
}

// ---- output -------------------------------------------------------------------

std::string figure(double v) {
    if (!std::isfinite(v)) return "-";
    return std::abs(v) >= 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.4g}", v);
}

std::string samples_text(const CompareGroup& g) {
    std::string from = fmt::format("{} process{}", g.processes, g.processes == 1 ? "" : "es");
    if (g.periods > 0)
        from += fmt::format(", {} switchback period{}", g.periods, g.periods == 1 ? "" : "s");
    if (g.partial > 0)
        from += fmt::format("; {} partial period{} left out", g.partial, g.partial == 1 ? "" : "s");
    return fmt::format("{} control and {} treatment samples ({})", g.samples[kControl],
                       g.samples[kTreatment], from);
}

void warn_too_few(const CompareGroup& g) {
    if (!g.too_few()) return;
    fmt::print(stderr,
               "pipespin: warning: stats --compare: {}: {} control and {} treatment samples, too "
               "few to decide (at least {} per arm)\n",
               printable(g.program), g.samples[kControl], g.samples[kTreatment],
               kCompareMinSamples);
}

Json number_json(double v) {
    return std::isfinite(v) ? Json(std::stod(fmt::format("{:.6g}", v))) : Json(nullptr);
}

Json group_json(const CompareGroup& g) {
    Json measures = Json::object();
    for (const MeasureResult& r : g.measures) {
        auto arm = [&](int i) {
            return Json{{"samples", r.values[i].size()},
                        {"median", r.values[i].empty() ? Json(nullptr) : number_json(r.median(i))}};
        };
        Json m = {{"control", arm(kControl)}, {"treatment", arm(kTreatment)}};
        m["primary"] = r.primary;
        m["confidence"] = r.test ? number_json(r.confidence) : Json(nullptr);
        m["ratio"] = r.test ? number_json(r.test->ratio) : Json(nullptr);
        m["ci_low"] = r.test ? number_json(r.test->ci_low) : Json(nullptr);
        m["ci_high"] = r.test ? number_json(r.test->ci_high) : Json(nullptr);
        m["verdict"] = r.test ? Json(r.test->verdict) : Json(nullptr);
        measures[r.key] = std::move(m);
    }
    Json out;
    out["program"] = g.program;
    out["samples"] = {{"control", g.samples[kControl]}, {"treatment", g.samples[kTreatment]}};
    out["processes"] = g.processes;
    out["periods"] = g.periods;
    out["partial_periods"] = g.partial;
    out["relative"] = g.relative;
    out["too_few"] = g.too_few();
    out["measures"] = std::move(measures);
    out["waits"] = {{"control", waits_json(g.waits[kControl])},
                    {"treatment", waits_json(g.waits[kTreatment])}};
    return out;
}

void print_group(const CompareGroup& g) {
    fmt::print("{}: {}\n", printable(g.program), samples_text(g));
    if (g.relative)
        fmt::print("  (each program's figures relative to the median of its control arm)\n");
    fmt::print("  {:<27} {:>14} {:>16} {:>9}  {:<20} {}\n", "measure (median per sample)",
               "control", "treatment", "ratio", "interval", "verdict");
    for (const MeasureResult& r : g.measures) {
        const std::string c = r.values[kControl].empty() ? "-" : figure(r.median(kControl));
        const std::string t = r.values[kTreatment].empty() ? "-" : figure(r.median(kTreatment));
        if (r.test)
            fmt::print("  {:<27} {:>14} {:>16} {:>9.3f}  {:<20} {}{}\n", r.label, c, t,
                       r.test->ratio,
                       fmt::format("[{:.3f}, {:.3f}]", r.test->ci_low, r.test->ci_high),
                       r.test->verdict, r.primary ? " (primary)" : "");
        else
            fmt::print("  {:<27} {:>14} {:>16} {:>9}  {:<20} too few samples ({} and {})\n",
                       r.label, c, t, "-", "", r.values[kControl].size(),
                       r.values[kTreatment].size());
    }
    fmt::print("\n");
}

std::string percent_text(double confidence) {
    return fmt::format("{:.4g}%", confidence * 100);
}

}  // namespace

Comparison compare(const LoadedStats& st, const CompareArgs& a) {
    const std::vector<Group> groups = collect(st, a);
    Comparison out;
    for (const Group& g : groups) {
        CompareGroup c;
        c.program = g.program;
        c.relative = !g.parts.empty();
        c.processes = g.processes;
        c.periods = g.periods;
        c.partial = g.partial;
        for (int arm : {kControl, kTreatment}) {
            c.samples[arm] = g.samples[arm].size();
            for (int e = 0; e < kWaitEnds; ++e) c.waits[arm][e] = g.waits[arm][e];
        }
        for (const Measure& m : kMeasures) {
            MeasureResult r{m.key, m.label, {}, std::nullopt};
            evaluate(g, m, r);
            c.measures.push_back(std::move(r));
        }
        out.groups.push_back(std::move(c));
    }
    if (out.groups.empty()) return out;
    // The primary line: wall per call of the last group, (all) or the one program.
    MeasureResult& primary = out.groups.back().measures.front();
    primary.primary = true;
    for (const CompareGroup& g : out.groups)
        for (const MeasureResult& r : g.measures) out.family += !r.primary && testable(r);
    out.family_confidence =
        out.family > 0 ? 1 - kFamilyAlpha / static_cast<double>(out.family) : kBootstrapConfidence;
    for (CompareGroup& g : out.groups)
        for (MeasureResult& r : g.measures) {
            if (!testable(r)) continue;
            r.confidence = r.primary ? kBootstrapConfidence : out.family_confidence;
            r.test = bootstrap_ratio(r.values[kControl], r.values[kTreatment], a.seed, a.margin,
                                     r.confidence);
        }
    return out;
}

int compare_stats(const LoadedStats& st, const CompareArgs& a) {
    const Comparison cmp = compare(st, a);
    for (const CompareGroup& g : cmp.groups) warn_too_few(g);
    if (st.periods_lost > 0)
        fmt::print(stderr,
                   "pipespin: warning: stats --compare: {} switchback period(s) left out: a line "
                   "of their process is missing\n",
                   st.periods_lost);
    if (cmp.groups.empty())
        throw Failure(kExitFailure,
                      fmt::format("stats --compare: no process{} ran in an A/B arm (lines with "
                                  "\"arm\" control or treatment); hint: run the programs with "
                                  "PIPESPIN_AB=50 (or ab = 50 in the config file) and "
                                  "PIPESPIN_STATS set",
                                  a.program ? fmt::format(" of '{}'", printable(*a.program)) : ""));
    const CompareGroup& last = *cmp.primary();
    if (a.plot)
        write_chart("stats", waits_chart(last, last.measures.front(), a), *a.plot,
                    gnuplot_for("stats", *a.plot), Environment::current());
    const MeasureResult& primary = last.measures.front();
    Json doc;
    doc["compare"] = {{"confidence", kBootstrapConfidence},
                      {"resamples", kBootstrapResamples},
                      {"seed", a.seed},
                      {"margin", a.margin},
                      {"min_samples", kCompareMinSamples},
                      {"family_lines", cmp.family},
                      {"family_confidence", number_json(cmp.family_confidence)}};
    doc["primary"] = {{"program", last.program},
                      {"measure", primary.key},
                      {"verdict", primary.test ? Json(primary.test->verdict) : Json(nullptr)}};
    doc["lines"] = st.lines;
    doc["bad_lines"] = st.bad_lines;
    doc["periods_lost"] = st.periods_lost;
    doc["groups"] = Json::array();
    for (const CompareGroup& g : cmp.groups) doc["groups"].push_back(group_json(g));
    if (!emit_json("stats", a.json, doc)) return kExitOk;
    fmt::print(
        "Control (mode off) against treatment: each process, or each period of a switchback "
        "process, is one sample.\nRatio of the medians (control / treatment: above 1, the "
        "treatment's figure is lower), percentile bootstrap interval ({} resamples, seed "
        "{});\nfaster or slower only when the whole interval lies beyond {:g} (or 1/{:g}).\n"
        "The primary line ({} of {}) is the experiment's verdict, at {}; the other {} line{} "
        "with a verdict are one family, each at {} (Bonferroni), so that all of them read no "
        "significant difference in 95% of experiments without an effect.\n\n",
        kBootstrapResamples, a.seed, 1 + a.margin, 1 + a.margin, primary.label,
        printable(last.program), percent_text(kBootstrapConfidence), cmp.family,
        cmp.family == 1 ? "" : "s", percent_text(cmp.family_confidence));
    for (const CompareGroup& g : cmp.groups) print_group(g);
    fmt::print("Verdict ({}, {}): {}\n", primary.label, printable(last.program),
               primary.test ? primary.test->verdict : "too few samples to decide");
    return kExitOk;
}

}  // namespace pipespin::cli
