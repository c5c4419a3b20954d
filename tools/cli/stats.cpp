// pipespin stats: what the shim did, from the lines processes appended to
// PIPESPIN_STATS, per program and A/B arm.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/stats/advise.h"
#include "cli/stats/compare.h"
#include "cli/stats/lines.h"
#include "cli/util/args.h"
#include "cli/util/json.h"
#include "cli/util/text.h"

namespace pipespin::cli {
namespace {

std::string percent(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? "-" : fmt::format("{:.1f}", 100.0 * static_cast<double>(part) / whole);
}

void print_row(const StatsGroup& g) {
    const Counters t = g.counters.total();
    fmt::print(
        "{:<16} {:<9} {:>6} {:>8.2f} {:>10} {:>9} {:>9} {:>6} {:>9} {:>9.1f} {:>9.1f} {:>9.2f}\n",
        printable(g.program).substr(0, 16), g.arm, g.processes,
        static_cast<double>(g.wall_us) / 1e6, t.calls, t.waits, t.spins,
        percent(t.spin_hits, t.spins), t.spin_hits, static_cast<double>(t.spin_ns) / 1e6,
        static_cast<double>(t.sleep_ns) / 1e6, static_cast<double>(t.bytes) / (1 << 20));
}

// The spins per hook family, in the shim's own words (its PIPESPIN_LOG=info
// exit report): "io=S/H poll=S/H ...". Empty when the group never spun.
std::string via_text(const StatsGroup& g) {
    std::uint64_t spins = 0;
    for (const ViaCount& v : g.counters.via) spins += v.spins;
    if (spins == 0) return {};
    std::string out;
    for (int h = 0; h < kViaCount; ++h)
        out += fmt::format("{}{}={}/{}", h ? " " : "", via_name(static_cast<Via>(h)),
                           g.counters.via[h].spins, g.counters.via[h].spin_hits);
    return out;
}

Json group_json(const StatsGroup& g) {
    WaitHist waits[kWaitEnds];
    total_waits(g.counters, waits);
    return {{"program", g.program},
            {"arm", g.arm},
            {"processes", g.processes},
            {"running", g.running},
            {"wall_us", g.wall_us},
            {"sleeps_avoided", g.counters.total().spin_hits},
            {"counters", snapshot_json(g.counters)},
            {"via", via_json(g.counters)},
            {"rusage", rusage_json(g.rusage)},
            {"waits", waits_json(waits)},
            {"fixed_misses", fixed_misses_json(g)}};
}

enum class StatsMode { Table, Compare, Advise };

int stats_run(const std::vector<std::string>& files, StatsMode mode, const CompareArgs& ca) {
    const LoadedStats st = load_stats(files);
    if (st.bad_lines > 0)
        fmt::print(stderr,
                   "pipespin: warning: stats: skipped {} of {} lines that are not "
                   "statistics lines (first: {})\n",
                   st.bad_lines, st.lines, printable(st.first_problem));
    if (st.records.empty())
        throw Failure(kExitFailure,
                      fmt::format("stats: no statistics line in {} ({} line{} read{}); hint: "
                                  "processes write them where PIPESPIN_STATS says, e.g. "
                                  "`pipespin run --stats FILE -- CMD`",
                                  shell_join(files), st.lines, st.lines == 1 ? "" : "s",
                                  st.lines > 0 ? fmt::format(", first problem: {}",
                                                             printable(st.first_problem))
                                               : ""));
    if (mode == StatsMode::Compare) return compare_stats(st, ca);
    if (mode == StatsMode::Advise) return advise_stats(st, ca, files);
    const std::vector<StatsGroup> groups = group_stats(st.records);
    std::vector<std::string> arms;
    for (const ProcessRecord& r : st.records)
        if (std::find(arms.begin(), arms.end(), r.arm) == arms.end()) arms.push_back(r.arm);
    std::sort(arms.begin(), arms.end());

    Json doc = {{"lines", st.lines},
                {"bad_lines", st.bad_lines},
                {"processes", st.records.size()},
                {"groups", Json::array()},
                {"arms", Json::array()}};
    for (const StatsGroup& g : groups) doc["groups"].push_back(group_json(g));
    for (const std::string& arm : arms)
        doc["arms"].push_back(group_json(total_of(st.records, arm)));
    if (!emit_json("stats", ca.json, doc)) return kExitOk;
    fmt::print("{:<16} {:<9} {:>6} {:>8} {:>10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9}\n",
               "program", "arm", "procs", "wall s", "calls", "waits", "spins", "hit %", "avoided",
               "spin ms", "sleep ms", "MiB");
    for (const StatsGroup& g : groups) print_row(g);
    if (groups.size() > 1) {
        fmt::print("\n");
        for (const std::string& arm : arms) print_row(total_of(st.records, arm));
    }
    bool via_header = false;
    for (const StatsGroup& g : groups) {
        const std::string via = via_text(g);
        if (via.empty()) continue;
        if (!via_header)
            fmt::print(
                "\nSpins by hook family, spins/hits (a hit: the pipe became ready "
                "during the spin, a sleep avoided):\n");
        via_header = true;
        fmt::print("{:<16} {:<9} {}\n", printable(g.program).substr(0, 16), g.arm, via);
    }
    // Where mode fixed spun for nothing, in the words of the shim's exit
    // report (PIPESPIN_LOG=info), which a user running many programs never
    // reads.
    bool fixed_header = false;
    for (const StatsGroup& g : groups) {
        for (const FixedMisses& m : fixed_misses(g)) {
            if (!fixed_header)
                fmt::print(
                    "\nMode fixed where its spins mostly missed ({} or more spins in a "
                    "direction, fewer than half hits):\n",
                    kFixedMissSpins);
            fixed_header = true;
            fmt::print("{:<16} {:<9} {}: {}\n", printable(g.program).substr(0, 16), g.arm,
                       dir_name(m.dir), fixed_misses_text(m));
        }
    }
    std::size_t running = 0;
    for (const StatsGroup& g : groups) running += g.running;
    fmt::print("\n{} processes from {} lines", st.records.size(), st.lines);
    if (running > 0) fmt::print("; {} still running at their last line (interval)", running);
    fmt::print(".\n");
    return kExitOk;
}

}  // namespace

Action define_stats(CLI::App& app) {
    struct Values {
        bool compare = false, advise = false;
        CompareArgs ca;
        std::vector<std::string> files;
        std::vector<const CLI::Option*> compare_only;
    };
    auto v = std::make_shared<Values>();
    app.description(fmt::format(
        "Aggregate the statistics lines that processes appended to PIPESPIN_STATS files, per "
        "program and A/B arm: processes, their wall time (s), calls the shim examined, waits "
        "(calls that found the pipe not ready), spins, the share of spins that found the pipe "
        "ready (hit %) and so avoided a sleep, time spinning and asleep after a missed spin "
        "(ms), and MiB moved. Below the table, each group that spun gets a line of spins/hits "
        "per hook family (io, poll, stdio, vector, select, epoll, splice): which hooks the "
        "spins came through. Each group whose processes ran in mode fixed and whose spins in a "
        "direction mostly missed ({} or more, fewer than half hits: the rule of the shim's exit "
        "report) gets a line saying so: the peer answers later than spin_us or shares the CPU, "
        "and adaptive mode would have stopped spinning. Only the last line of each process "
        "counts (interval lines are cumulative); a switchback process (ab_period) counts under "
        "the arm 'switchback'. "
        "Files without a statistics line are an error.\n"
        "--compare: control against treatment, per program and overall, each process (or "
        "each period of a switchback process) one sample: wall time per call, time blocked "
        "per wait, CPU per MiB moved and context switches per call, each as the ratio of the "
        "arms' medians (control/treatment) with a bootstrap interval (10000 resamples) "
        "and a verdict in the words of pipespin ab: faster or slower only when the whole "
        "interval lies beyond 1 + PCT/100 or its inverse, else no significant difference; "
        "fewer than 5 samples in an arm: no verdict, and a warning. The primary line, wall "
        "per call of all programs together (or of the one program), is the experiment's "
        "verdict, at 95%; the other lines are one family, each interval widened to "
        "1 - 0.05/m for its m lines, so that an experiment without an effect shows no "
        "verdict on any line 95% of the time.\n"
        "--advise: the config file the evidence supports, per program: mode = off where the "
        "treatment was slower, a larger or smaller spin_us where the treatment's wait "
        "histograms say the peer answers later or sooner than the budget, nothing without "
        "evidence; each suggestion says its evidence in a comment (pipespin check-config "
        "accepts the file).",
        kFixedMissSpins));
    add_json_options(app, v->ca.json,
                     "the report (with --compare its verdicts, with --advise the suggestions "
                     "and the file; else the table with a \"via\" object, the resource usage, "
                     "the wait histograms and mode fixed's missed spins per group)");
    app.add_flag("--compare", v->compare, "compare the control arm with the treatment arm");
    app.add_flag("--advise", v->advise,
                 "print the config file that the comparison's evidence supports");
    v->compare_only.push_back(add_count(app, "--seed", v->ca.seed, 0, ~0ull,
                                        "the bootstrap's seed (with --compare, --advise)", "S"));
    CLI::Option* margin =
        app.add_option("--margin",
                       "how far beyond 1 a ratio must be to count (with --compare, --advise)")
            ->type_name("PCT")
            ->default_str("5");
    margin->each([v](const std::string& text) {
        v->ca.margin = static_cast<double>(parse_count("stats", "--margin", text, 0, 100)) / 100;
    });
    v->compare_only.push_back(margin);
    v->compare_only.push_back(app.add_option_function<std::string>(
                                     "--program",
                                     [v](const std::string& name) { v->ca.program = name; },
                                     "this program only (with --compare, --advise)")
                                  ->type_name("NAME"));
    const CLI::Option* plot = add_file(
        app, "--plot", v->ca.plot,
        "draw the wait-time distributions of both arms (with --compare; of NAME, or of all "
        "programs) as a PNG with gnuplot; OUT.gp writes the script instead, data included",
        "OUT.png|OUT.gp");
    app.add_option("FILE", v->files, "a file of statistics lines")->type_name("FILE");
    return [v, plot](Args) {
        if (v->files.empty()) throw UsageError("stats: missing FILE");
        if (v->compare && v->advise) throw UsageError("stats: --compare or --advise, not both");
        for (const CLI::Option* o : v->compare_only)
            if (o->count() > 0 && !v->compare && !v->advise)
                throw UsageError(
                    "stats: --seed, --margin and --program go with --compare or --advise");
        if (plot->count() > 0 && !v->compare) throw UsageError("stats: --plot goes with --compare");
        const StatsMode mode = v->compare  ? StatsMode::Compare
                               : v->advise ? StatsMode::Advise
                                           : StatsMode::Table;
        return stats_run(v->files, mode, v->ca);
    };
}

}  // namespace pipespin::cli
