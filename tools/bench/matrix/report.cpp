// matrix: the two renderings of a report, Markdown (for people and docs/benchmarks.md) and JSON
// (every sample, for machines). Both are drawn from the same Report and the same checks, so they
// cannot disagree (tests/cli compares them anyway).
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "bench/matrix/matrix.h"
#include "cli/util/json.h"
#include "cli/util/text.h"

namespace pipespin::bench::matrix {
namespace {

std::string ratio_text(double r) {
    return r >= 10 ? fmt::format("{:.1f}x", r) : fmt::format("{:.2f}x", r);
}

std::string figure_text(const CaseRun& run, const ArmResult& a) {
    if (!a.figure) return "";
    switch (run.spec.figure) {
        case Figure::PerfUsecsPerOp:
            return fmt::format("{:.2f} µs/op", a.figure->median);
        case Figure::HackbenchSeconds:
            return fmt::format("Time: {}", seconds_text(a.figure->median));
        case Figure::PlacedUsPerOp:
            return fmt::format("{} µs per {}", per_op_text(a.figure->median), run.spec.op);
        case Figure::AddedUsPerOp:
            return fmt::format("{:+.1f} µs per {} over none", a.figure->median, run.spec.op);
        case Figure::RssKib:
            return fmt::format("VmRSS {:.0f} KiB", a.figure->median);
        case Figure::None:
        case Figure::ConsumerCpu:
            break;
    }
    return "";
}

std::string duration_text(double s) {
    const auto total = static_cast<long>(std::lround(s));
    return total >= 60 ? fmt::format("{} min {} s", total / 60, total % 60)
                       : fmt::format("{:.1f} s", s);
}

std::string shown_command(const Case& c) {
    return c.shown.empty() ? shell_join(c.argv) : c.shown;
}

std::string arm_names(const Report& rep) {
    std::vector<std::string_view> names;
    for (std::size_t i : rep.arms) names.push_back(kArms[i].name);
    return fmt::format("{}", fmt::join(names, ", "));
}

std::string header(const Report& rep) {
    const MatrixArgs& a = *rep.args;
    std::string md = "## pipespin-bench matrix\n\n";
    md += fmt::format("Command: `{}`\n\n", rep.command);
    md += fmt::format("- Date: {}; {} runs took {}\n", rep.host.date, rep.run_count,
                      duration_text(rep.elapsed_s));
    md += fmt::format(
        "- Host: {}, {}, {} CPUs online, {} usable; load average {} before, {} "
        "after (1, 5, 15 min; hackbench's own processes count in it)\n",
        rep.host.system, rep.host.cpu_model.empty() ? "?" : rep.host.cpu_model,
        rep.host.online_cpus, rep.host.usable_cpus, rep.host.load_before, rep.host.load_after);
    md += fmt::format("- Library: {}; spin_us {}{}\n", rep.library, rep.spin_us,
                      rep.spin_us_default ? " (the default)" : "");
    if (rep.empty_library)
        md += fmt::format("- Empty preload: {} (one symbol; what any preload costs)\n",
                          *rep.empty_library);
    md += fmt::format(
        "- {} round(s){}, each running every case in the arms {} (`PIPESPIN_MODE` for the "
        "shim's), in a balanced order (over {} rounds each arm runs at each place, and "
        "after each other arm, equally often); figures are medians\n",
        a.rounds, a.quick ? " with --quick (scaled-down) parameters" : "", arm_names(rep),
        order_period(rep.arms.size()));
    md +=
        "- wall ratio = no-shim wall / arm wall (above 1: faster); CPU ratio = arm CPU / "
        "no-shim CPU (above 1: more CPU). CPU is user + system of the command and every "
        "process it waited for (wait4), except for `sparse`; so are the voluntary and "
        "involuntary context switches (cs), per operation\n";
    for (const std::string& note : rep.notes) md += fmt::format("- Note: {}\n", note);

    md += "\nCases:\n\n";
    for (const CaseRun& r : rep.runs)
        md +=
            fmt::format("- `{}`: `{}`: {}; {} {}{}\n", r.spec.id, shown_command(r.spec),
                        r.spec.about, r.spec.ops, r.spec.op, r.spec.op.ends_with('s') ? "es" : "s");
    return md;
}

std::string runs_table(const Report& rep) {
    std::string md =
        "\n| case | arm | median wall | wall ratio | median CPU | CPU ratio | CPU µs/op | "
        "vol. cs/op | invol. cs/op | the tool's figure |\n";
    md += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for (const CaseRun& r : rep.runs) {
        if (!times_runs(r.spec)) continue;
        const auto ops = static_cast<double>(r.spec.ops);
        for (std::size_t i : rep.arms) {
            const ArmResult& arm = r.arms[i];
            md += fmt::format("| {} | {} | {} | {} | {}{} | {} | {} per {} | {} | {} | {} |\n",
                              r.spec.id, kArms[i].name, seconds_text(arm.wall.median),
                              ratio_text(arm.wall_ratio), seconds_text(arm.cpu.median),
                              r.spec.figure == Figure::ConsumerCpu ? " (consumer)" : "",
                              ratio_text(arm.cpu_ratio), per_op_text(arm.cpu.median / ops),
                              r.spec.op, per_op_text(arm.vol_cs.median / ops),
                              per_op_text(arm.invol_cs.median / ops), figure_text(r, arm));
        }
    }
    return md;
}

std::string floors_table(const Report& rep) {
    bool any_floor = false;
    for (const CaseRun& r : rep.runs) any_floor = any_floor || r.floor.has_value();
    if (!any_floor) return "";
    std::string md =
        "\nFloors: the case's pipe traffic within one thread, without the shim, run once per "
        "round after the case's arms. No spin policy makes a run cheaper than its floor, so "
        "bound = no-shim median wall / (operations x floor median per operation) is the "
        "largest wall ratio any arm could reach here; it is taken from the wall time, as the "
        "checks are (for perf, not its own µs/op), and errs high by the start-up in that "
        "wall.\n\n";
    md += "| case | floor | median floor per op | bound on this host |\n|---|---|--:|--:|\n";
    for (const CaseRun& r : rep.runs)
        if (r.floor)
            md += fmt::format("| {} | `{}`: {} | {} µs per {} | {} |\n", r.spec.id,
                              shell_join(floor_argv(r.spec)), floor_about(r.spec.floor),
                              per_op_text(r.floor->median), r.spec.op,
                              r.bound ? ratio_text(*r.bound) : "?");
    return md;
}

// What starting a process, forking one and mapping the library cost per
// arm, and how much of it any preload costs (the empty preload's column).
std::string startup_tables(const Report& rep) {
    std::string md;
    std::string head = "| case |", rule = "|---|";
    for (std::size_t i : rep.arms) {
        head += fmt::format(" {} |", kArms[i].name);
        rule += "--:|";
    }
    std::string rows;
    for (const CaseRun& r : rep.runs) {
        if (r.spec.figure != Figure::AddedUsPerOp) continue;
        rows += fmt::format("| {} (µs per {} over one without preload) |", r.spec.id, r.spec.op);
        for (std::size_t i : rep.arms) {
            const std::string fig = fmt::format("{:+.1f}", r.arms[i].figure->median);
            rows += i == kNoShim ? fmt::format(" {} |", fig)
                                 : fmt::format(" {} ({:+.1f}) |", fig, *added(rep, r, i));
        }
        rows += "\n";
    }
    if (!rows.empty())
        md += fmt::format(
            "\nStart-up and fork: what the workers' own operations took over the same one without "
            "any preload, medians, and in brackets what the arm adds to no shim. `spawn`'s worker "
            "interleaves each spawn in its arm's environment with one without any preload, "
            "`fork`'s each fork with one in a twin of itself started without any preload, and "
            "each gives the median of the differences; no shim's own (both halves alike) is "
            "what the method's order leaves, and the brackets subtract it.\n\n{}\n{}\n{}",
            head, rule, rows);
    if (const CaseRun* r = find_run(rep, "footprint")) {
        md += fmt::format(
            "\nFootprint: `{}` in each arm, its VmRSS (/proc/PID/status) read once it sleeps, "
            "median KiB, and in brackets what the arm adds to no shim",
            shell_join(r->spec.argv));
        if (rep.bss_bytes)
            md += fmt::format(
                "; bss of {} (its allocated NOBITS sections, what `size` calls "
                "bss): {} KiB",
                rep.library, *rep.bss_bytes / 1024);
        md += fmt::format(".\n\n{}\n{}\n| footprint (VmRSS, KiB) |", head, rule);
        for (std::size_t i : rep.arms)
            md += i == kNoShim ? fmt::format(" {:.0f} |", r->arms[i].figure->median)
                               : fmt::format(" {:.0f} ({:+.0f}) |", r->arms[i].figure->median,
                                             *added(rep, *r, i));
        md += "\n";
    }
    return md;
}

std::string placement_letter(const Sample& s) {
    const std::optional<Placement> p = classify_placement(s.same_cpu, s.cpu_samples);
    return p ? std::string(placement_name(*p)) : "?";
}

// py-pingpong round by round: each run's µs per round trip and where its two
// ends ran, then the rounds grouped by what their no-shim run saw.
std::string placement_tables(const Report& rep) {
    const CaseRun* r = find_run(rep, "py-pingpong");
    if (!r) return "";
    std::string md = fmt::format(
        "\nPlacement (`py-pingpong`): each run's µs per round trip and where its two ends ran, "
        "from CPU samples both took at the same round trips: co-located when at least {}% "
        "of the pairs were on one CPU, spread when at most {}% were, else mixed. A round "
        "belongs to the placement its no-shim run saw.\n\n| round |",
        kPlacementPercent, 100 - kPlacementPercent);
    std::string rule = "|--:|";
    for (std::size_t i : rep.arms) {
        md += fmt::format(" {} |", kArms[i].name);
        rule += "--:|";
    }
    md += "\n" + rule + "\n";
    for (std::size_t round = 0; round < r->arms[kNoShim].samples.size(); ++round) {
        md += fmt::format("| {} |", round + 1);
        for (std::size_t i : rep.arms) {
            const Sample& s = r->arms[i].samples[round];
            md += fmt::format(" {} {} ({}/{}) |", per_op_text(*s.figure), placement_letter(s),
                              s.same_cpu, s.cpu_samples);
        }
        md += "\n";
    }
    md += "\n| rounds | count |";
    std::string group_rule = "|---|--:|";
    for (std::size_t i : rep.arms) {
        md += fmt::format(" {} |", kArms[i].name);
        group_rule += "--:|";
    }
    md += " no shim / adaptive |\n" + group_rule + "--:|\n";
    for (const RoundGroup& g : r->groups) {
        md += fmt::format("| {} | {} |", g.name, g.rounds.size());
        for (std::size_t i : rep.arms) md += fmt::format(" {} |", per_op_text(g.median[i]));
        md += fmt::format(" {} |\n", ratio_text(g.median[kNoShim] / g.median[kAdaptive]));
    }
    return md;
}

// Where a placed case's figure (perf's µs per round trip) is worth a
// median per placement beside the wall time.
bool places_figure(const Case& c) {
    return c.switch_marks.on() && c.figure == Figure::PerfUsecsPerOp;
}

// The cases whose runs are placed by their context switches
// (Case::switch_marks): per placement, each arm's runs and their median
// wall time (and figure).
std::string switch_placement_tables(const Report& rep) {
    std::string md;
    for (const CaseRun& r : rep.runs) {
        if (!r.spec.switch_marks.on()) continue;
        const SwitchMarks& m = r.spec.switch_marks;
        md += fmt::format(
            "\nPlacement (`{}`): a run with at least {:g} {} context switches per {} ran "
            "on one CPU (co-located), one with at most {:g} on two (spread), one between moved "
            "during the run (mixed). Each arm's runs in each, and their median wall time{}:\n\n"
            "| placement |",
            r.spec.id, m.colocated_at, m.counter(), r.spec.op, m.spread_at,
            places_figure(r.spec) ? fmt::format(" and µs per {} (the tool's)", r.spec.op) : "");
        std::string rule = "|---|";
        for (std::size_t i : rep.arms) {
            md += fmt::format(" {} |", kArms[i].name);
            rule += "--:|";
        }
        md += "\n" + rule + "\n";
        for (Placement p : {Placement::CoLocated, Placement::Spread, Placement::Mixed}) {
            md += fmt::format("| {} |", placement_name(p));
            for (std::size_t i : rep.arms) {
                const std::vector<double> w = walls_placed(r, i, p);
                std::string cell =
                    w.empty() ? "0"
                              : fmt::format("{}: {}", w.size(), seconds_text(summarize(w).median));
                if (!w.empty() && places_figure(r.spec))
                    cell +=
                        fmt::format(", {}", per_op_text(summarize(figures_placed(r, i, p)).median));
                md += fmt::format(" {} |", cell);
            }
            md += "\n";
        }
    }
    return md;
}

// The wakeup cases side by side: the reader's CPU per read in each
// placement and arm.
std::string wakeup_table(const Report& rep) {
    std::string rows;
    for (std::string_view id : {"wakeup-same", "wakeup-spread"}) {
        const CaseRun* r = find_run(rep, id);
        if (!r) continue;
        const auto ops = static_cast<double>(r->spec.ops);
        rows += fmt::format("| {} |", id);
        for (std::size_t i : rep.arms)
            rows += fmt::format(" {} |", per_op_text(r->arms[i].cpu.median / ops));
        rows += rep.runs_arm(kOff)
                    ? fmt::format(" {:+.3f} |\n",
                                  (r->arms[kAdaptive].cpu.median - r->arms[kOff].cpu.median) / ops)
                    : " |\n";
    }
    if (rows.empty()) return "";
    std::string md =
        "\nWake-ups: a reader of a byte every 2 ms, its run time per read (µs, medians), with "
        "both ends on one CPU (`wakeup-same`) and on two (`wakeup-spread`):\n\n| case |";
    std::string rule = "|---|";
    for (std::size_t i : rep.arms) {
        md += fmt::format(" {} |", kArms[i].name);
        rule += "--:|";
    }
    return md + " adaptive - off |\n" + rule + "--:|\n" + rows;
}

std::string acceptance_table(const Report& rep) {
    const MatrixArgs& a = *rep.args;
    std::string md = "\nAcceptance (from the medians above):\n\n";
    if (a.quick || a.rounds < kDefaultRounds)
        md += fmt::format(
            "The thresholds are for the full parameters and at least {} rounds (15 for "
            "`dd-cat` and `hackbench-stream`, 9 for `py-pingpong`; a check within one "
            "placement needs {} runs of each side in it); this run used {}.\n\n",
            kDefaultRounds, kMinPlacedRuns,
            a.quick ? "--quick" : fmt::format("{} round(s)", a.rounds));
    md +=
        "A speed-up whose threshold is above its case's bound is unreachable here: no spin "
        "policy could meet it on this host. For the hackbench cases, `cmdsubst`, `xargs` and "
        "`make-j` the bound is the empty preload's ratio: no preloaded library could; the line "
        "after each says what the shim adds to that empty preload. For `fork` the bound is the "
        "least a fork can cost more, what the empty preload adds, and the line after it the "
        "shim's own share (off - empty preload). The runs of `cmdsubst` and the perf "
        "ping-pongs are also compared within each placement (above): the arms' runs there need "
        "not be the same rounds, so that interval resamples each arm's runs on its own; a "
        "ping-pong's µs per round trip there is perf's own (its wall time holds its start-up), "
        "against the floor's median over every round.\n\n";
    md +=
        "| check | value | 95% interval | threshold | bound on this host | result "
        "|\n|---|--:|--:|--:|--:|---|\n";
    for (const Check& c : acceptance(rep))
        md += fmt::format(
            "| {} | {} | {} | {} | {} | {} |\n", c.what, c.value,
            c.interval ? fmt::format("[{:.3f}, {:.3f}]", c.interval->low, c.interval->high) : "",
            c.threshold, c.bound ? fmt::format("{:.3f}", *c.bound) : "", verdict_text(c));
    md += fmt::format(
        "\nThe verdicts are the medians'. The 95% interval is how far the value moves when the "
        "rounds are drawn again: a percentile bootstrap, the rounds resampled as wholes with "
        "every arm's run in them ({} resamples, seed {}), the value recomputed from each. Where "
        "it includes the threshold, the result says \"{}\": this run cannot tell a pass from a "
        "fail, and the same code may read the other way next time; more rounds narrow it. With "
        "few rounds (under 10 or so) it is narrower than the truth. None for a single round, "
        "for `spawn` (its allowance is measured in the same rounds) and for the bss.\n",
        kBootstrapResamples, kIntervalSeed, kUnresolved);
    return md;
}

template <typename Field>
Json sample_list(const ArmResult& a, Field field) {
    Json v = Json::array();
    for (const Sample& s : a.samples) v.push_back(field(s));
    return v;
}

// One figure of every sample, with `digits` decimals: [a,b,...].
Json sample_figures(const ArmResult& a, double Sample::*field, int digits) {
    std::vector<double> v;
    for (const Sample& s : a.samples) v.push_back(s.*field);
    return json_numbers(v, digits);
}

Json arm_json(const CaseRun& r, std::size_t i) {
    const ArmResult& a = r.arms[i];
    const auto ops = static_cast<double>(r.spec.ops);
    Json o = {{"name", kArms[i].name},
              {"median_wall_us", json_number(a.wall.median, 1)},
              {"median_cpu_us", json_number(a.cpu.median, 1)},
              {"wall_ratio", json_number(a.wall_ratio, 4)},
              {"cpu_ratio", json_number(a.cpu_ratio, 4)},
              {"cpu_us_per_op", json_number(a.cpu.median / ops, 4)},
              {"median_vol_cs", json_number(a.vol_cs.median, 1)},
              {"median_invol_cs", json_number(a.invol_cs.median, 1)},
              {"vol_cs_per_op", json_number(a.vol_cs.median / ops, 6)},
              {"invol_cs_per_op", json_number(a.invol_cs.median / ops, 6)},
              {"median_figure",
               json_number(a.figure ? std::optional(a.figure->median) : std::nullopt, 4)},
              {"wall_us", sample_figures(a, &Sample::wall_us, 1)},
              {"cpu_us", sample_figures(a, &Sample::cpu_us, 1)},
              {"vol_cs", sample_figures(a, &Sample::vol_cs, 1)},
              {"invol_cs", sample_figures(a, &Sample::invol_cs, 1)},
              {"figure", sample_list(a, [](const Sample& s) { return json_number(s.figure, 4); })}};
    if (r.spec.switch_marks.on())
        o["placement"] = sample_list(
            a, [&](const Sample& s) { return Json(placement_name(placement_of(r, s))); });
    if (r.spec.figure == Figure::PlacedUsPerOp) {
        o["same_cpu"] = sample_list(a, [](const Sample& s) { return Json(s.same_cpu); });
        o["cpu_samples"] = sample_list(a, [](const Sample& s) { return Json(s.cpu_samples); });
    }
    return o;
}

Json case_json(const Report& rep, const CaseRun& r) {
    Json arms = Json::array();
    for (std::size_t i : rep.arms) arms.push_back(arm_json(r, i));
    Json floor = nullptr;
    if (r.floor)
        floor = {{"command", shell_join(floor_argv(r.spec))},
                 {"median_us_per_op", json_number(r.floor->median, 4)},
                 {"us_per_op", json_numbers(r.floor_samples, 4)},
                 {"bound", json_number(r.bound, 4)}};
    Json groups = Json::array();
    for (const RoundGroup& g : r.groups) {
        Json medians = Json::object();
        for (std::size_t i : rep.arms)
            medians[std::string(kArms[i].name)] = json_number(g.median[i], 4);
        groups.push_back({{"name", g.name}, {"rounds", g.rounds}, {"median", std::move(medians)}});
    }
    // Per placement (Case::switch_marks), each arm's runs and their medians:
    // the Markdown's placement table.
    Json placements = nullptr;
    if (r.spec.switch_marks.on()) {
        const SwitchMarks& m = r.spec.switch_marks;
        placements = {{"switches", m.counter()},
                      {"colocated_at", m.colocated_at},
                      {"spread_at", m.spread_at}};
        for (Placement p : {Placement::CoLocated, Placement::Spread, Placement::Mixed}) {
            Json per_arm = Json::object();
            for (std::size_t i : rep.arms) {
                const std::vector<double> w = walls_placed(r, i, p), f = figures_placed(r, i, p);
                per_arm[std::string(kArms[i].name)] = {
                    {"runs", w.size()},
                    {"median_wall_us",
                     json_number(w.empty() ? std::nullopt : std::optional(summarize(w).median), 1)},
                    {"median_figure", json_number(w.empty() || !places_figure(r.spec)
                                                      ? std::nullopt
                                                      : std::optional(summarize(f).median),
                                                  4)}};
            }
            placements[std::string(placement_name(p))] = std::move(per_arm);
        }
    }
    return {{"id", r.spec.id},
            {"command", shell_join(r.spec.argv)},
            {"ops", r.spec.ops},
            {"op", r.spec.op},
            {"cpu", r.spec.figure == Figure::ConsumerCpu ? "consumer" : "command tree"},
            {"arms", std::move(arms)},
            {"floor", std::move(floor)},
            {"groups", std::move(groups)},
            {"placements", std::move(placements)}};
}

Json check_json(const Check& c) {
    return {{"check", c.what},
            {"value", c.value},
            {"threshold", c.threshold},
            {"bound", json_number(c.bound, 4)},
            {"interval", c.interval ? json_numbers(std::array{c.interval->low, c.interval->high}, 4)
                                    : Json(nullptr)},
            {"resolved", c.resolved ? Json(*c.resolved) : Json(nullptr)},
            {"result", verdict_name(c.verdict)},
            {"pass", c.verdict == Verdict::Pass   ? Json(true)
                     : c.verdict == Verdict::Fail ? Json(false)
                                                  : Json(nullptr)}};
}

}  // namespace

std::string seconds_text(double us) {
    if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
    if (us >= 1e3) return fmt::format("{:.1f} ms", us / 1e3);
    return fmt::format("{:.0f} µs", us);
}

std::string per_op_text(double us) {
    return fmt::format("{:.{}f}", us, us >= 100 ? 0 : us >= 1 ? 2 : 3);
}

std::string markdown(const Report& rep) {
    return header(rep) + runs_table(rep) + floors_table(rep) + startup_tables(rep) +
           placement_tables(rep) + switch_placement_tables(rep) + wakeup_table(rep) +
           acceptance_table(rep);
}

std::string json(const Report& rep) {
    Json cases = Json::array(), checks = Json::array(), arms = Json::array();
    for (const CaseRun& r : rep.runs) cases.push_back(case_json(rep, r));
    for (const Check& c : acceptance(rep)) checks.push_back(check_json(c));
    for (std::size_t i : rep.arms) arms.push_back(kArms[i].name);
    const Json doc = {
        {"benchmark", "matrix"},
        {"command", rep.command},
        {"date", rep.host.date},
        {"system", rep.host.system},
        {"cpu_model", rep.host.cpu_model},
        {"online_cpus", rep.host.online_cpus},
        {"usable_cpus", rep.host.usable_cpus},
        {"load_before", rep.host.load_before},
        {"load_after", rep.host.load_after},
        {"library", rep.library},
        {"empty_library", rep.empty_library ? Json(*rep.empty_library) : Json(nullptr)},
        {"bss_bytes", rep.bss_bytes ? Json(*rep.bss_bytes) : Json(nullptr)},
        {"spin_us", rep.spin_us},
        {"rounds", rep.args->rounds},
        {"quick", rep.args->quick},
        {"elapsed_s", json_number(rep.elapsed_s, 1)},
        {"arms", std::move(arms)},
        {"notes", rep.notes},
        {"cases", std::move(cases)},
        {"acceptance", std::move(checks)}};
    return json_text(doc) + "\n";
}

}  // namespace pipespin::bench::matrix
