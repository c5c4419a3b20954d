#include "cli/stats/compare.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/json_writer.h"
#include "cli/util/plot.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"

namespace pipespin::cli {

namespace {

constexpr int kControl = 0, kTreatment = 1;
constexpr const char* kAll = "(all)";

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
    all.program = kAll;
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

struct Result {
    std::vector<double> values[2];
    std::optional<RatioTest> test;  // nullopt: too few samples
    double median(int arm) const { return summarize(values[arm]).median; }
};

// A measure's values in both arms. For (all), each program's values are
// divided by the median of its own control arm before they are pooled:
// programs whose figures differ by orders of magnitude (µs per call of a
// ping-pong, ms of a batch job) and whose arms hold different numbers of
// their processes would otherwise compare the mix, not the treatment.
Result evaluate(const Group& g, const Measure& m, const CompareArgs& a) {
    Result r;
    auto values = [&](const Group& of, int arm, double scale) {
        for (const Sample& s : of.samples[arm])
            if (const std::optional<double> v = m.of(s)) r.values[arm].push_back(*v / scale);
    };
    if (g.parts.empty()) {
        for (int arm : {kControl, kTreatment}) values(g, arm, 1);
    } else {
        for (const Group* part : g.parts) {
            Result own;
            for (const Sample& s : part->samples[kControl])
                if (const std::optional<double> v = m.of(s)) own.values[kControl].push_back(*v);
            const double scale = own.values[kControl].empty() ? 0 : own.median(kControl);
            if (!(scale > 0)) continue;  // no control figure to relate to
            for (int arm : {kControl, kTreatment}) values(*part, arm, scale);
        }
    }
    if (r.values[kControl].size() >= kCompareMinSamples &&
        r.values[kTreatment].size() >= kCompareMinSamples)
        r.test = bootstrap_ratio(r.values[kControl], r.values[kTreatment], a.seed, a.margin);
    return r;
}

std::string number_json(double v) {
    return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null";
}

std::string figure(double v) {
    if (!std::isfinite(v)) return "-";
    return std::abs(v) >= 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.4g}", v);
}

std::string samples_text(const Group& g) {
    std::string from = fmt::format("{} process{}", g.processes, g.processes == 1 ? "" : "es");
    if (g.periods > 0)
        from += fmt::format(", {} switchback period{}", g.periods, g.periods == 1 ? "" : "s");
    if (g.partial > 0)
        from += fmt::format("; {} partial period{} left out", g.partial, g.partial == 1 ? "" : "s");
    return fmt::format("{} control and {} treatment samples ({})", g.samples[kControl].size(),
                       g.samples[kTreatment].size(), from);
}

void warn_too_few(const Group& g) {
    const std::size_t c = g.samples[kControl].size(), t = g.samples[kTreatment].size();
    if (c >= kCompareMinSamples && t >= kCompareMinSamples) return;
    fmt::print(stderr,
               "pipespin: warning: stats --compare: {}: {} control and {} treatment samples, too "
               "few to decide (at least {} per arm)\n",
               printable(g.program), c, t, kCompareMinSamples);
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
Chart waits_chart(const Group& g, const Result& wall, const CompareArgs& a) {
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

std::string group_json(const Group& g, const CompareArgs& a) {
    JsonObject measures;
    for (const Measure& m : kMeasures) {
        const Result r = evaluate(g, m, a);
        auto arm = [&](int i) {
            return JsonObject()
                .num("samples", r.values[i].size())
                .raw("median", r.values[i].empty() ? "null" : number_json(r.median(i)))
                .text();
        };
        JsonObject measure;
        measure.raw("control", arm(kControl)).raw("treatment", arm(kTreatment));
        if (r.test)
            measure.raw("ratio", number_json(r.test->ratio))
                .raw("ci_low", number_json(r.test->ci_low))
                .raw("ci_high", number_json(r.test->ci_high))
                .str("verdict", r.test->verdict);
        else
            measure.raw("ratio", "null")
                .raw("ci_low", "null")
                .raw("ci_high", "null")
                .raw("verdict", "null");
        measures.raw(m.key, measure.text());
    }
    return JsonObject()
        .str("program", g.program)
        .raw("samples", JsonObject()
                            .num("control", g.samples[kControl].size())
                            .num("treatment", g.samples[kTreatment].size())
                            .text())
        .num("processes", g.processes)
        .num("periods", g.periods)
        .num("partial_periods", g.partial)
        .num("relative", !g.parts.empty())
        .num("too_few", g.samples[kControl].size() < kCompareMinSamples ||
                            g.samples[kTreatment].size() < kCompareMinSamples)
        .raw("measures", measures.text())
        .raw("waits", JsonObject()
                          .raw("control", waits_json(g.waits[kControl]))
                          .raw("treatment", waits_json(g.waits[kTreatment]))
                          .text())
        .text();
}

void print_group(const Group& g, const CompareArgs& a) {
    fmt::print("{}: {}\n", printable(g.program), samples_text(g));
    if (!g.parts.empty())
        fmt::print("  (each program's figures relative to the median of its control arm)\n");
    fmt::print("  {:<27} {:>14} {:>16} {:>9}  {:<20} {}\n", "measure (median per sample)",
               "control", "treatment", "ratio", "95% interval", "verdict");
    for (const Measure& m : kMeasures) {
        const Result r = evaluate(g, m, a);
        const std::string c = r.values[kControl].empty() ? "-" : figure(r.median(kControl));
        const std::string t = r.values[kTreatment].empty() ? "-" : figure(r.median(kTreatment));
        if (r.test)
            fmt::print("  {:<27} {:>14} {:>16} {:>9.3f}  {:<20} {}\n", m.label, c, t, r.test->ratio,
                       fmt::format("[{:.3f}, {:.3f}]", r.test->ci_low, r.test->ci_high),
                       r.test->verdict);
        else
            fmt::print("  {:<27} {:>14} {:>16} {:>9}  {:<20} too few samples ({} and {})\n",
                       m.label, c, t, "-", "", r.values[kControl].size(),
                       r.values[kTreatment].size());
    }
    fmt::print("\n");
}

}  // namespace

int compare_stats(const LoadedStats& st, const CompareArgs& a) {
    const std::vector<Group> groups = collect(st, a);
    for (const Group& g : groups) warn_too_few(g);
    if (st.periods_lost > 0)
        fmt::print(stderr,
                   "pipespin: warning: stats --compare: {} switchback period(s) left out: a line "
                   "of their process is missing\n",
                   st.periods_lost);
    if (a.plot) {
        if (groups.empty())
            throw Failure(kExitFailure, "stats: --plot: no sample of either arm to draw");
        const Group& g = groups.back();  // the one program, or (all)
        write_chart("stats", waits_chart(g, evaluate(g, kMeasures[0], a), a), *a.plot,
                    gnuplot_for("stats", *a.plot), Environment::current());
    }
    if (a.json) {
        std::vector<std::string> gs;
        for (const Group& g : groups) gs.push_back(group_json(g, a));
        fmt::print("{}\n", JsonObject()
                               .raw("compare", JsonObject()
                                                   .num("confidence", kBootstrapConfidence)
                                                   .num("resamples", kBootstrapResamples)
                                                   .num("seed", a.seed)
                                                   .num("margin", a.margin)
                                                   .num("min_samples", kCompareMinSamples)
                                                   .text())
                               .num("lines", st.lines)
                               .num("bad_lines", st.bad_lines)
                               .num("periods_lost", st.periods_lost)
                               .raw("groups", json_array(gs))
                               .text());
        return kExitOk;
    }
    fmt::print(
        "Control (mode off) against treatment: each process, or each period of a switchback "
        "process, is one sample.\nRatio of the medians (control / treatment: above 1, the "
        "treatment's figure is lower), 95% percentile bootstrap interval ({} resamples, seed "
        "{});\nfaster or slower only when the whole interval lies beyond {:g} (or 1/{:g}).\n\n",
        kBootstrapResamples, a.seed, 1 + a.margin, 1 + a.margin);
    if (groups.empty()) {
        fmt::print("No process ran in an A/B arm (lines with \"arm\" control or treatment).\n");
        return kExitOk;
    }
    for (const Group& g : groups) print_group(g, a);
    return kExitOk;
}

}  // namespace pipespin::cli
