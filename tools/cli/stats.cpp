// pipespin stats: what the shim did, from the lines processes appended to
// PIPESPIN_STATS, per program and A/B arm.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/stats/compare.h"
#include "cli/stats/lines.h"
#include "cli/util/args.h"
#include "cli/util/json_writer.h"
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

std::string group_json(const StatsGroup& g) {
    WaitHist waits[kWaitEnds];
    total_waits(g.counters, waits);
    return fmt::format(
        "{{\"program\":{},\"arm\":{},\"processes\":{},\"running\":{},\"wall_us\":{},"
        "\"sleeps_avoided\":{},\"counters\":{},\"via\":{},\"rusage\":{},\"waits\":{}}}",
        json_string(g.program), json_string(g.arm), g.processes, g.running, g.wall_us,
        g.counters.total().spin_hits, snapshot_json(g.counters), via_json(g.counters),
        rusage_json(g.rusage), waits_json(waits));
}

}  // namespace

std::string stats_usage() {
    return usage_entry(
        "  pipespin stats [--json] FILE...\n"
        "  pipespin stats --compare [--program NAME] [--margin PCT] [--seed S] [--json]\n"
        "                 [--plot OUT.png|OUT.gp] FILE...\n",
        "Aggregate the statistics lines that processes appended to PIPESPIN_STATS files, per "
        "program and A/B arm: processes, their wall time (s), calls the shim examined, waits "
        "(calls that found the pipe not ready), spins, the share of spins that found the pipe "
        "ready (hit %) and so avoided a sleep, time spinning and asleep after a missed spin "
        "(ms), and MiB moved. Below the table, each group that spun gets a line of spins/hits "
        "per hook family (io, poll, stdio, vector, select, epoll, splice): which hooks the "
        "spins came through. Only the last line of each process counts (interval lines are "
        "cumulative); a switchback process (ab_period) counts under the arm 'switchback'. "
        "--json prints the same as one object, with a \"via\" object, the resource usage and "
        "the wait histograms per group. --compare: control against treatment, per program and "
        "overall, each process (or each period of a switchback process) one sample: wall time "
        "per call, time blocked per wait, CPU per MiB moved and context switches per call, each "
        "as the ratio of the arms' medians (control/treatment) with a 95% bootstrap interval "
        "(10000 resamples, seed S, default 1) and a verdict in the words of pipespin ab: "
        "faster or slower only when the whole interval lies beyond 1 + PCT/100 (default 5) or "
        "its inverse, else no significant difference; fewer than 5 samples in an arm: no "
        "verdict, and a warning. --plot draws the wait-time distributions of both arms "
        "(gnuplot; of NAME, or of all programs): OUT.gp writes the script, data included.");
}

int stats_main(Args args) {
    ArgCursor cur("stats", args);
    bool json = false, compare = false, compare_only = false;
    CompareArgs ca;
    while (cur.at_flag()) {
        if (cur.take_flag("--json")) {
            json = true;
        } else if (cur.take_flag("--compare")) {
            compare = true;
        } else if (auto v = cur.take_value("--seed")) {
            ca.seed = parse_count("stats", "--seed", *v, 0, ~0ull);
            compare_only = true;
        } else if (auto v = cur.take_value("--margin")) {
            ca.margin = static_cast<double>(parse_count("stats", "--margin", *v, 0, 100)) / 100;
            compare_only = true;
        } else if (auto v = cur.take_value("--program")) {
            ca.program = std::string(*v);
            compare_only = true;
        } else if (auto v = cur.take_value("--plot")) {
            ca.plot = std::string(*v);
            compare_only = true;
        } else {
            cur.fail_unknown();
        }
    }
    cur.take_separator();
    std::vector<std::string> files;
    while (!cur.done()) files.emplace_back(cur.take_word());
    if (files.empty()) throw UsageError("stats: missing FILE");
    if (compare_only && !compare)
        throw UsageError("stats: --seed, --margin, --program and --plot go with --compare");

    const LoadedStats st = load_stats(files);
    if (st.bad_lines > 0)
        fmt::print(stderr,
                   "pipespin: warning: stats: skipped {} of {} lines that are not "
                   "statistics lines (first: {})\n",
                   st.bad_lines, st.lines, printable(st.first_problem));
    if (compare) {
        ca.json = json;
        return compare_stats(st, ca);
    }
    const std::vector<StatsGroup> groups = group_stats(st.records);
    std::vector<std::string> arms;
    for (const ProcessRecord& r : st.records)
        if (std::find(arms.begin(), arms.end(), r.arm) == arms.end()) arms.push_back(r.arm);
    std::sort(arms.begin(), arms.end());

    if (json) {
        std::vector<std::string> gs, ts;
        for (const StatsGroup& g : groups) gs.push_back(group_json(g));
        for (const std::string& arm : arms) ts.push_back(group_json(total_of(st.records, arm)));
        fmt::print(
            "{{\"lines\":{},\"bad_lines\":{},\"processes\":{},\"groups\":[{}],"
            "\"arms\":[{}]}}\n",
            st.lines, st.bad_lines, st.records.size(), fmt::join(gs, ","), fmt::join(ts, ","));
        return kExitOk;
    }
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
    std::size_t running = 0;
    for (const StatsGroup& g : groups) running += g.running;
    fmt::print("\n{} processes from {} lines", st.records.size(), st.lines);
    if (running > 0) fmt::print("; {} still running at their last line (interval)", running);
    fmt::print(".\n");
    return kExitOk;
}

}  // namespace pipespin::cli
