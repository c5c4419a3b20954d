// pipespin ab: is the shim's effect on a command real? An A/B test.
//
// Both arms run the command with the shim preloaded; the control arm is
// PIPESPIN_AB=0 (every process in the control arm: mode off, interposed but
// never spinning), the treatment arm PIPESPIN_AB=100 (the configuration as
// the user has it: PIPESPIN_* variables and --config), so the comparison
// isolates the spin. Runs alternate control/treatment, in ABBA order so
// that neither arm always goes first. Each run's wall, user and system time
// come from wait4() over the whole process tree; the shim's counters from
// the statistics lines the tree's processes write to a private file.
//
// The test: the ratio of the arms' median wall times (control/treatment:
// above 1, the treatment is faster) and its 95% percentile bootstrap
// interval (seeded, so a report can be reproduced). A verdict of faster or
// slower only when the interval excludes 1. The same ratio and interval for
// CPU time and for voluntary context switches (from the same rusage: the
// waits that slept, which a spin that pays saves), beside the time.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/stats/lines.h"
#include "cli/util/args.h"
#include "cli/util/environment.h"
#include "cli/util/json.h"
#include "cli/util/library.h"
#include "cli/util/plot.h"
#include "cli/util/preload_check.h"
#include "cli/util/spawn.h"
#include "cli/util/statistics.h"
#include "cli/util/temp_dir.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"

namespace pipespin::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCommand = "ab";

struct AbArgs {
    std::uint64_t runs = 10;
    std::uint64_t warmup = 1;
    std::uint64_t seed = 1;
    std::optional<std::string> config;
    JsonOutput json;
    std::optional<std::string> plot;
    std::vector<std::string> command;
};

struct RunStats {  // the shim's view of one run (its whole process tree)
    std::size_t processes = 0;
    std::size_t wrong_arm = 0;
    Counters total;
    std::string mode;  // the resolved mode of the first process (treatment description)
    std::string spin_us, probe;
};

struct ArmRuns {
    std::string name;  // "control", "treatment"
    std::vector<double> wall_ms, user_ms, sys_ms;
    std::vector<double> vol_cs, invol_cs;  // context switches of the run's process tree
    std::vector<RunStats> shim;
};

struct Moments {
    double mean = 0, sigma = 0;
};
Moments moments(const std::vector<double>& v) {
    Moments m;
    if (v.empty()) return m;
    for (double x : v) m.mean += x;
    m.mean /= static_cast<double>(v.size());
    if (v.size() > 1) {
        double ss = 0;
        for (double x : v) ss += (x - m.mean) * (x - m.mean);
        m.sigma = std::sqrt(ss / static_cast<double>(v.size() - 1));
    }
    return m;
}

double median(std::vector<double> v) {
    return summarize(v).median;
}

RunStats read_run_stats(const fs::path& file, std::string_view arm) {
    RunStats rs;
    std::ifstream in(file, std::ios::binary);
    if (!in) return rs;  // no process wrote a line
    std::stringstream ss;
    ss << in.rdbuf();
    LoadedStats st;
    add_stats_text(st, ss.str(), file.string());
    rs.processes = st.records.size();
    for (const ProcessRecord& r : st.records) {
        rs.total += r.counters.total();
        if (r.arm != arm) ++rs.wrong_arm;
    }
    // The resolved configuration, from the first line of the run.
    if (!st.records.empty()) {
        const ProcessRecord& first = st.records.front();
        rs.mode = first.mode;
        rs.spin_us = std::to_string(first.spin_us);
        rs.probe = first.probe;
    }
    return rs;
}

// A ratio of counts may divide by zero (a run without one context switch):
// JSON null (json_fixed) and a dash then, not inf or nan.
std::string ratio_or_dash(double r) {
    return std::isfinite(r) ? fmt::format("{:.3f}", r) : "-";
}

std::string fmt_ms(double ms) {
    return ms >= 10000 ? fmt::format("{:.2f} s", ms / 1000) : fmt::format("{:.1f} ms", ms);
}

// Medians over the runs of an arm's shim counters.
struct ShimMedians {
    double processes, calls, waits, spins, hits, spin_ms, sleep_ms;
    std::size_t runs_without = 0, wrong_arm = 0;
    // Voluntary context switches per call the shim saw, the median over the
    // runs that made calls (nullopt: none did).
    std::optional<double> vol_cs_per_call;
};
ShimMedians shim_medians(const ArmRuns& arm) {
    auto med = [&](auto get) {
        std::vector<double> v;
        for (const RunStats& r : arm.shim) v.push_back(get(r));
        return median(v);
    };
    ShimMedians m{};
    m.processes = med([](const RunStats& r) { return double(r.processes); });
    m.calls = med([](const RunStats& r) { return double(r.total.calls); });
    m.waits = med([](const RunStats& r) { return double(r.total.waits); });
    m.spins = med([](const RunStats& r) { return double(r.total.spins); });
    m.hits = med([](const RunStats& r) { return double(r.total.spin_hits); });
    m.spin_ms = med([](const RunStats& r) { return r.total.spin_ns / 1e6; });
    m.sleep_ms = med([](const RunStats& r) { return r.total.sleep_ns / 1e6; });
    std::vector<double> per_call;
    for (std::size_t i = 0; i < arm.shim.size(); ++i) {
        const RunStats& r = arm.shim[i];
        m.runs_without += r.processes == 0;
        m.wrong_arm += r.wrong_arm;
        if (r.total.calls > 0 && i < arm.vol_cs.size())
            per_call.push_back(arm.vol_cs[i] / static_cast<double>(r.total.calls));
    }
    if (!per_call.empty()) m.vol_cs_per_call = median(per_call);
    return m;
}

std::string describe_arm(const ArmRuns& arm) {
    if (arm.name == "control") return "control (mode off: interposed, never spinning)";
    for (const RunStats& r : arm.shim)
        if (!r.mode.empty())
            return fmt::format("treatment (mode={} spin_us={} probe={})", r.mode, r.spin_us,
                               r.probe);
    return "treatment";
}

void print_arm(const ArmRuns& arm) {
    const Moments w = moments(arm.wall_ms);
    const Summary s = summarize(arm.wall_ms);
    fmt::print("{}\n", describe_arm(arm));
    fmt::print("  Time (mean ± σ):   {:>10} ± {:>9}    [User: {}, System: {}]\n", fmt_ms(w.mean),
               fmt_ms(w.sigma), fmt_ms(moments(arm.user_ms).mean),
               fmt_ms(moments(arm.sys_ms).mean));
    fmt::print("  Range (min … max): {:>10} … {:>9}    median {}, {} runs\n", fmt_ms(s.min),
               fmt_ms(s.max), fmt_ms(s.median), arm.wall_ms.size());
    const ShimMedians m = shim_medians(arm);
    fmt::print("  Context switches (median per run): {:.0f} voluntary{}, {:.0f} involuntary\n",
               median(arm.vol_cs),
               m.vol_cs_per_call ? fmt::format(" ({:.3f} per call)", *m.vol_cs_per_call) : "",
               median(arm.invol_cs));
    fmt::print(
        "  Shim (median per run): {:.0f} processes, {:.0f} calls, {:.0f} waits, {:.0f} "
        "spins",
        m.processes, m.calls, m.waits, m.spins);
    if (m.spins > 0)
        fmt::print(
            " ({:.1f}% hits: {:.0f} sleeps avoided), {:.1f} ms spinning, {:.1f} ms asleep "
            "after a miss",
            100 * m.hits / m.spins, m.hits, m.spin_ms, m.sleep_ms);
    fmt::print("\n");
    if (m.runs_without > 0)
        fmt::print(
            "  note: in {} run(s) no process wrote statistics: the shim was not loaded "
            "(a static or setuid program?)\n",
            m.runs_without);
    if (m.wrong_arm > 0)
        fmt::print("  warning: {} process(es) reported another arm than '{}'\n", m.wrong_arm,
                   arm.name);
    fmt::print("\n");
}

Json arm_json(const ArmRuns& arm) {
    const Moments w = moments(arm.wall_ms);
    const Summary s = summarize(arm.wall_ms);
    const ShimMedians m = shim_medians(arm);
    return {{"median_wall_ms", json_number(s.median, 4)},
            {"mean_wall_ms", json_number(w.mean, 4)},
            {"sigma_wall_ms", json_number(w.sigma, 4)},
            {"min_wall_ms", json_number(s.min, 4)},
            {"max_wall_ms", json_number(s.max, 4)},
            {"q1_wall_ms", json_number(s.q1, 4)},
            {"q3_wall_ms", json_number(s.q3, 4)},
            {"median_user_ms", json_number(median(arm.user_ms), 4)},
            {"median_sys_ms", json_number(median(arm.sys_ms), 4)},
            {"wall_ms", json_numbers(arm.wall_ms, 4)},
            {"user_ms", json_numbers(arm.user_ms, 4)},
            {"sys_ms", json_numbers(arm.sys_ms, 4)},
            {"median_vol_cs", median(arm.vol_cs)},
            {"median_invol_cs", median(arm.invol_cs)},
            {"vol_cs_per_call", json_number(m.vol_cs_per_call, 6)},
            {"vol_cs", arm.vol_cs},
            {"invol_cs", arm.invol_cs},
            {"shim_median",
             {{"processes", m.processes},
              {"calls", m.calls},
              {"waits", m.waits},
              {"spins", m.spins},
              {"spin_hits", m.hits},
              {"spin_ms", json_number(m.spin_ms, 4)},
              {"sleep_ms", json_number(m.sleep_ms, 4)}}},
            {"runs_without_stats", m.runs_without},
            {"description", describe_arm(arm)}};
}

// Arms whose medians differ more than this get a log axis: on a linear one
// the faster arm's box would be a line.
constexpr double kLogAxisSpread = 5;

// The runs of both arms: per arm a box from its quartiles (summarize(), the
// figures --json prints) with whiskers to its min and max, a line at its
// median, and each run as a point beside it; one arm per x position.
Chart ab_chart(const ArmRuns (&arms)[2], const RatioTest& t, const AbArgs& a) {
    std::string boxes, runs;
    const double m0 = summarize(arms[0].wall_ms).median, m1 = summarize(arms[1].wall_ms).median;
    const bool log_axis = m0 > 0 && m1 > 0 && std::max(m0 / m1, m1 / m0) > kLogAxisSpread;
    for (int i = 0; i < 2; ++i) {
        const Summary s = summarize(arms[i].wall_ms);
        boxes += fmt::format("{} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f} \"{}\"\n", i + 1, s.q1, s.min,
                             s.max, s.q3, s.median, i == 0 ? "control (mode off)" : "treatment");
        for (std::size_t r = 0; r < arms[i].wall_ms.size(); ++r)
            runs += fmt::format("{} {:.4f}\n",
                                // a deterministic spread of the points beside the box
                                i + 1 + 0.32 + (static_cast<double>(r % 7) - 3) * 0.02,
                                arms[i].wall_ms[r]);
    }
    return {
        .data = gnuplot_datablock("boxes", "# x q1 min max q3 median label\n" + boxes) +
                gnuplot_datablock("runs", "# x wall_ms\n" + runs),
        .title = fmt::format(
            "pipespin ab: {} ({} runs per arm) ratio {:.3f}, 95% CI [{:.3f}, {:.3f}]: {}",
            shell_join(a.command).substr(0, 60), arms[0].wall_ms.size(), t.ratio, t.ci_low,
            t.ci_high, t.verdict),
        .commands = std::string(log_axis ? "set logscale y\n"
                                           "set ylabel 'wall time per run (ms, log scale)'\n"
                                         : "set ylabel 'wall time per run (ms)'\n") +
                    "set xrange [0.4:2.8]\n"
                    "set offsets 0, 0, graph 0.05, 0\n"
                    "set grid ytics\n"
                    "set style fill solid 0.25 border -1\n"
                    "set boxwidth 0.4 absolute\n"
                    "unset key\n"
                    "plot $boxes using 1:2:3:4:5:xtic(7) with candlesticks whiskerbars 0.5 "
                    "lc rgb '#4060c0' title 'quartiles, min and max', \\\n"
                    "     $boxes using 1:6:6:6:6 with candlesticks lt -1 lw 2 title 'median', \\\n"
                    "     $runs using 1:2 with points pt 7 ps 0.8 lc rgb '#c04040' title 'runs'\n",
    };
}

int ab_run(const AbArgs& a) {
    const std::string library = find_library();
    const std::optional<std::string> path = resolve_command(a.command[0]);
    if (!path)
        throw Failure(kExitNotFound, fmt::format("ab: '{}' not found", printable(a.command[0])));
    if (::access(path->c_str(), X_OK) != 0)
        throw Failure(
            errno == ENOENT ? kExitNotFound : kExitCannotRun,
            fmt::format("ab: cannot execute '{}': {}", printable(*path), std::strerror(errno)));
    for (const std::string& why : preload_obstacles(*path))
        fmt::print(stderr, "pipespin: warning: {} {}; the shim cannot load into it\n",
                   printable(*path), why);

    // The user's environment, with the shim in front of LD_PRELOAD; what
    // this command controls (the arm, where the statistics go) is its own.
    Environment base = Environment::current();
    for (std::string_view name :
         {"PIPESPIN_AB", "PIPESPIN_AB_SEED", "PIPESPIN_STATS", "PIPESPIN_STATS_INTERVAL"})
        base.unset(name);
    base.set_preload(
        preload_with(preload_without_shim(base.get("LD_PRELOAD").value_or("")), library));
    if (a.config) base.set("PIPESPIN_CONFIG", fs::absolute(*a.config).string());

    // gnuplot first: a missing one is better said before the runs than after.
    const std::optional<std::string> gnuplot =
        a.plot ? gnuplot_for(kCommand, *a.plot) : std::nullopt;

    const TempDir tmp("pipespin-ab");
    ArmRuns arms[2];
    arms[0].name = "control";
    arms[1].name = "treatment";
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    const std::uint64_t total = 2 * (a.runs + a.warmup);
    std::uint64_t done = 0;
    if (!a.json.print || tty)
        fmt::print(stderr, "pipespin ab: {}: {} runs per arm ({} warm-up), interleaved\n",
                   shell_join(a.command), a.runs, a.warmup);

    auto run_one = [&](int arm, bool measured, std::uint64_t index) {
        const fs::path stats =
            fs::path(tmp.path()) / fmt::format("{}-{}.jsonl", arms[arm].name, index);
        Environment env = base;
        env.set("PIPESPIN_AB", arm == 0 ? "0" : "100");
        env.set("PIPESPIN_AB_PERIOD", "0");  // one arm per run, whatever a config file says
        env.set("PIPESPIN_STATS", stats.string());
        if (tty)
            fmt::print(stderr, "\r  {} run {}/{} ({}{})   ", measured ? "measuring" : "warming up",
                       done + 1, total, arms[arm].name, measured ? "" : ", not counted");
        Measured m = spawn_measure(*path, a.command, env, {true, true});
        ++done;
        if (!exited_ok(m.wait_status)) {
            if (tty) fmt::print(stderr, "\n");
            throw Failure(kExitFailure,
                          fmt::format("ab: {} {} in the {} arm; its stderr:\n{}",
                                      shell_join(a.command), describe_wait_status(m.wait_status),
                                      arms[arm].name, m.err.substr(0, 4000)));
        }
        if (!measured) return;
        arms[arm].wall_ms.push_back(m.wall_us / 1000);
        arms[arm].user_ms.push_back(m.user_us / 1000);
        arms[arm].sys_ms.push_back(m.sys_us / 1000);
        arms[arm].vol_cs.push_back(static_cast<double>(m.vol_cs));
        arms[arm].invol_cs.push_back(static_cast<double>(m.invol_cs));
        arms[arm].shim.push_back(read_run_stats(stats, arms[arm].name));
    };
    // ABBA: control first in even rounds, treatment first in odd ones.
    for (std::uint64_t w = 0; w < a.warmup; ++w)
        for (int arm : {0, 1}) run_one(arm, false, 1000000 + w);
    for (std::uint64_t r = 0; r < a.runs; ++r) {
        const int first = static_cast<int>(r % 2);
        run_one(first, true, r);
        run_one(1 - first, true, r);
    }
    if (tty) fmt::print(stderr, "\r{:60}\r", "");

    const RatioTest t = bootstrap_ratio(arms[0].wall_ms, arms[1].wall_ms, a.seed);
    const RatioTest cpu_t = [&] {
        std::vector<double> c, tr;
        for (std::size_t i = 0; i < arms[0].user_ms.size(); ++i)
            c.push_back(arms[0].user_ms[i] + arms[0].sys_ms[i]);
        for (std::size_t i = 0; i < arms[1].user_ms.size(); ++i)
            tr.push_back(arms[1].user_ms[i] + arms[1].sys_ms[i]);
        return bootstrap_ratio(c, tr, a.seed);
    }();
    const RatioTest cs_t = bootstrap_ratio(arms[0].vol_cs, arms[1].vol_cs, a.seed);
    if (a.plot)
        write_chart(kCommand, ab_chart(arms, t, a), *a.plot, gnuplot, Environment::current());

    // hyperfine's "N.NN ± 0.0N times faster": ratio of means, error propagated.
    const Moments mc = moments(arms[0].wall_ms), mt = moments(arms[1].wall_ms);
    const bool treatment_faster = mc.mean >= mt.mean;
    const double mean_ratio = treatment_faster ? mc.mean / mt.mean : mt.mean / mc.mean;
    const double mean_sigma =
        mean_ratio * std::sqrt(std::pow(mc.sigma / mc.mean, 2) + std::pow(mt.sigma / mt.mean, 2));

    Json doc = {{"command", a.command},
                {"runs_per_arm", a.runs},
                {"warmup", a.warmup},
                {"ratio", json_number(t.ratio, 6)},
                {"ci_low", json_number(t.ci_low, 6)},
                {"ci_high", json_number(t.ci_high, 6)},
                {"confidence", kBootstrapConfidence},
                {"resamples", kBootstrapResamples},
                {"seed", a.seed},
                {"verdict", t.verdict},
                {"mean_ratio", json_number(treatment_faster ? mean_ratio : 1 / mean_ratio, 6)},
                {"mean_ratio_sigma", json_number(mean_sigma, 6)},
                {"cpu_ratio", json_number(cpu_t.ratio, 6)},
                {"cpu_ci_low", json_number(cpu_t.ci_low, 6)},
                {"cpu_ci_high", json_number(cpu_t.ci_high, 6)},
                {"vol_cs_ratio", json_number(cs_t.ratio, 6)},
                {"vol_cs_ci_low", json_number(cs_t.ci_low, 6)},
                {"vol_cs_ci_high", json_number(cs_t.ci_high, 6)},
                {"arms", {{"control", arm_json(arms[0])}, {"treatment", arm_json(arms[1])}}}};
    if (!emit_json(kCommand, a.json, doc)) return kExitOk;
    fmt::print("Benchmark: {}\n\n", shell_join(a.command));
    for (const ArmRuns& arm : arms) print_arm(arm);
    fmt::print("Summary\n");
    // hyperfine's line only where the verdict backs it: "1.02 ± 0.05 times
    // faster" above "no significant difference" reads as a result.
    if (t.verdict == kNoDifference)
        fmt::print(
            "  treatment and control: no significant difference (ratio of means {:.2f} "
            "± {:.2f})\n",
            treatment_faster ? mean_ratio : 1 / mean_ratio, mean_sigma);
    else
        fmt::print("  {} ran\n    {:.2f} times faster than {} (ratio of medians)\n",
                   t.verdict == kFaster ? "treatment" : "control",
                   t.verdict == kFaster ? t.ratio : 1 / t.ratio,
                   t.verdict == kFaster ? "control" : "treatment");
    fmt::print("  wall, ratio of medians (control / treatment): {:.3f}, 95% CI [{:.3f}, {:.3f}]\n",
               t.ratio, t.ci_low, t.ci_high);
    fmt::print("  CPU (user+sys), ratio of medians: {:.3f}, 95% CI [{:.3f}, {:.3f}]\n", cpu_t.ratio,
               cpu_t.ci_low, cpu_t.ci_high);
    fmt::print("  voluntary context switches, ratio of medians: {}, 95% CI [{}, {}]\n",
               ratio_or_dash(cs_t.ratio), ratio_or_dash(cs_t.ci_low), ratio_or_dash(cs_t.ci_high));
    fmt::print("  (percentile bootstrap, {} resamples, seed {}; above 1 = treatment lower)\n",
               kBootstrapResamples, a.seed);
    if (t.verdict == kNoDifference)
        fmt::print("  verdict: no significant difference (the interval includes 1)\n");
    else
        fmt::print(
            "  verdict: {} (the treatment's median wall time is {:.1f}% {}; the interval "
            "excludes 1)\n",
            t.verdict, std::abs(1 / t.ratio - 1) * 100, t.ratio > 1 ? "lower" : "higher");
    return kExitOk;
}

}  // namespace

Action define_ab(CLI::App& app) {
    auto a = std::make_shared<AbArgs>();
    app.description(
        "A/B test of the shim on CMD: N runs per arm after W warm-up runs, control and "
        "treatment alternating (ABBA). Both arms preload the shim; the control arm is "
        "PIPESPIN_AB=0 (mode off: interposed, never spinning), the treatment PIPESPIN_AB=100 "
        "(the configuration you have: PIPESPIN_* variables, and FILE as PIPESPIN_CONFIG). "
        "Fails if CMD fails in any run.\n"
        "Reports wall, user and system time of the whole process tree (mean ± σ, range, "
        "median), the shim's counters, the ratio of median wall times (control/treatment, "
        "above 1 = treatment faster) with a 95% bootstrap interval (10000 resamples), and a "
        "verdict: faster or slower only when the interval excludes 1, else no significant "
        "difference; the same ratio and interval for CPU time and for voluntary context "
        "switches, which are reported per run and per call the shim saw (a ratio or bound "
        "that is infinite, where a median is 0 switches, prints as - and as null in JSON).");
    add_count(app, "-n,--runs", a->runs, 2, 100000, "measured runs per arm");
    add_count(app, "--warmup", a->warmup, 0, 1000, "runs per arm before those, not counted", "W");
    add_file(app, "--config", a->config, "the treatment's config file (PIPESPIN_CONFIG)");
    add_count(app, "--seed", a->seed, 0, ~0ull, "the bootstrap's seed", "S");
    add_json_options(app, a->json, "the runs, their figures and the verdict");
    add_file(app, "--plot", a->plot,
             "draw the runs of both arms as a PNG (gnuplot): a box per arm (quartiles, whiskers "
             "to min and max, a line at the median) with every run as a point, on a log axis "
             "when the arms' medians differ more than 5x; a FILE ending in .gp gets the "
             "gnuplot script instead, data included");
    app.add_option("CMD", a->command, "the command and its arguments");
    app.positionals_at_end();
    return [a](Args) {
        if (a->command.empty()) throw UsageError("ab: missing CMD");
        if (a->config && ::access(a->config->c_str(), R_OK) != 0)
            throw UsageError(fmt::format("ab: cannot read --config '{}': {}", printable(*a->config),
                                         std::strerror(errno)));
        return ab_run(*a);
    };
}

}  // namespace pipespin::cli
