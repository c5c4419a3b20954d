// bench matrix: the acceptance checks, each a threshold the shim is held to,
// applied to ratios (or differences) of medians measured in the same run.
// The arithmetic of a verdict is matrix_verdict.h's; what is compared with
// what is here.
#include <fmt/format.h>

#include "matrix.h"

namespace pipespin::cli::matrix {

std::string_view verdict_name(Verdict v) {
    switch (v) {
        case Verdict::NotRun:
            return "not run";
        case Verdict::Pass:
            return "PASS";
        case Verdict::Fail:
            return "FAIL";
        case Verdict::Unreachable:
            return "unreachable";
    }
    return "?";
}

std::string verdict_text(const Check& c) {
    if (c.verdict == Verdict::Unreachable)
        return fmt::format("unreachable here (bound {:.2f})", *c.bound);
    return std::string(verdict_name(c.verdict));
}

const CaseRun* find_run(const Report& rep, std::string_view id) {
    for (const CaseRun& r : rep.runs)
        if (r.spec.id == id) return &r;
    return nullptr;
}

std::optional<double> added(const Report& rep, const CaseRun& r, std::size_t arm) {
    if (!rep.runs_arm(arm) || !r.arms[arm].figure || !r.arms[kNoShim].figure) return std::nullopt;
    return r.arms[arm].figure->median - r.arms[kNoShim].figure->median;
}

namespace {

class Checks {
public:
    explicit Checks(const Report& rep) : rep_(rep) {}

    // A check of case `id`: value_of(run) gives its value (nullopt: an arm
    // it needs did not run); bounded: the value is a wall speed-up against
    // no shim, which the case's floor bounds when it has one.
    template <typename ValueOf>
    void add(std::string_view id, std::string_view what, bool at_least, double threshold,
             ValueOf value_of, bool bounded = false, std::string threshold_note = "") {
        add_bounded(id, what, at_least, threshold, value_of,
                    [&](const CaseRun& r) { return bounded ? r.bound : std::nullopt; },
                    std::move(threshold_note));
    }

    // The same with the bound from bound_of(run) (nullopt: none known).
    template <typename ValueOf, typename BoundOf>
    void add_bounded(std::string_view id, std::string_view what, bool at_least, double threshold,
                     ValueOf value_of, BoundOf bound_of, std::string threshold_note = "") {
        Check c{
            .what = fmt::format("`{}`: {}", id, what),
            .threshold = fmt::format("{} {:g}{}", at_least ? "≥" : "≤", threshold, threshold_note)};
        std::optional<double> value;
        if (const CaseRun* r = find_run(rep_, id)) {
            value = value_of(*r);
            if (value) c.value = fmt::format("{:.3f}", *value);
            c.bound = bound_of(*r);
        }
        c.verdict = verdict(value, at_least, threshold, c.bound);
        out_.push_back(std::move(c));
    }

    // no shim / arm (wall) >= threshold, the check named with `prefix` and `suffix`.
    void wall_ratio(std::string_view id, std::size_t arm, double threshold, bool bounded,
                    std::string_view prefix = "", std::string_view suffix = "") {
        wall_ratio_bounded(
            id, arm, threshold,
            [bounded](const CaseRun& r) { return bounded ? r.bound : std::nullopt; }, prefix,
            suffix);
    }

    // The same with the bound from bound_of(run).
    template <typename BoundOf>
    void wall_ratio_bounded(std::string_view id, std::size_t arm, double threshold,
                            BoundOf bound_of, std::string_view prefix = "",
                            std::string_view suffix = "") {
        add_bounded(
            id, fmt::format("{}no shim / {} (wall){}", prefix, kArms[arm].name, suffix), true,
            threshold,
            [&](const CaseRun& r) -> std::optional<double> {
                return rep_.runs_arm(arm) ? std::optional(r.arms[arm].wall_ratio) : std::nullopt;
            },
            bound_of);
    }

    std::vector<Check> take() { return std::move(out_); }

private:
    const Report& rep_;
    std::vector<Check> out_;
};

}  // namespace

std::vector<Check> acceptance(const Report& rep) {
    Checks k(rep);
    for (std::string_view id : {"perf-pipe", "perf-threads"}) {
        k.add(id, "adaptive speed-up / fixed speed-up (wall)", true, 0.90, [](const CaseRun& r) {
            return std::optional(r.arms[kAdaptive].wall_ratio / r.arms[kFixed].wall_ratio);
        });
        k.wall_ratio(id, kAdaptive, 20, true, "adaptive speed-up, ");
    }
    // A spin that pays saves the wake-up, which the voluntary
    // context switches count.
    k.add("perf-pipe", "adaptive / no shim, voluntary context switches per round trip", false, 0.1,
          [](const CaseRun& r) -> std::optional<double> {
              const double base = r.arms[kNoShim].vol_cs.median;
              if (!(base > 0)) return std::nullopt;
              return r.arms[kAdaptive].vol_cs.median / base;
          });
    for (std::string_view id : {"hackbench-g1", "hackbench-g2", "hackbench-g4", "hackbench-stream"})
        k.wall_ratio(id, kAdaptive, 0.97, true);
    k.wall_ratio("dd-cat", kAdaptive, 1.5, true);
    k.wall_ratio("dd-cat", kAdaptive, 0.97, false, "", ", never slower");
    k.wall_ratio("seq-wc", kAdaptive, 1.0, false);
    k.add("sparse", "adaptive consumer CPU / no-shim consumer CPU", false, 1.5,
          [](const CaseRun& r) { return std::optional(r.arms[kAdaptive].cpu_ratio); });
    // A few ms of CPU over 500 reads: an empty preload moves it by a third
    // on some runs. The shim's own share beside it, against the same 1.5.
    k.add("sparse", "adaptive consumer CPU / empty preload's, the shim's own share", false, 1.5,
          [&](const CaseRun& r) -> std::optional<double> {
              if (!rep.runs_arm(kEmpty) || !(r.arms[kEmpty].cpu.median > 0)) return std::nullopt;
              return r.arms[kAdaptive].cpu.median / r.arms[kEmpty].cpu.median;
          });

    // Short-lived pipes and processes. No preloaded library does better
    // than the empty one (one symbol, no constructor): its wall ratio in the
    // same run bounds what any could reach. The shim's own share, measured
    // against that empty preload, is held to the same threshold beside it,
    // so that a host where every preload costs more than the threshold
    // allows still says whether the shim adds to it.
    auto empty_ratio = [&](const CaseRun& r) -> std::optional<double> {
        if (!rep.runs_arm(kEmpty) || !(r.arms[kEmpty].wall_ratio > 0)) return std::nullopt;
        return r.arms[kEmpty].wall_ratio;
    };
    for (std::string_view id : {"cmdsubst", "xargs", "make-j"}) {
        for (const auto& [arm, threshold] : {std::pair{kAdaptive, 0.97}, std::pair{kOff, 0.98}}) {
            const std::size_t a = arm;
            k.wall_ratio_bounded(id, a, threshold, empty_ratio);
            k.add(id, fmt::format("empty preload / {} (wall), the shim's own share", kArms[a].name),
                  true, threshold, [&](const CaseRun& r) -> std::optional<double> {
                      const std::optional<double> e = empty_ratio(r);
                      if (!e || !rep.runs_arm(a)) return std::nullopt;
                      return r.arms[a].wall_ratio / *e;
                  });
        }
    }
    const CaseRun* spawn = find_run(rep, "spawn");
    const std::optional<double> empty_added =
        spawn ? added(rep, *spawn, kEmpty) : std::optional<double>();
    for (std::size_t arm : {kOff, kAdaptive}) {
        const double allowance = spawn_allowance_us(empty_added.value_or(0));
        k.add(
            "spawn", fmt::format("µs added per process, {} - no shim", kArms[arm].name), false,
            allowance,
            [&](const CaseRun& r) {
                return empty_added ? added(rep, r, arm) : std::optional<double>();
            },
            false,
            empty_added ? fmt::format(" (max of 1.5 x the empty preload's {:+.1f}, {:g})",
                                      *empty_added, kSpawnSlackUs)
                        : "");
    }
    // A fork costs at least what the empty preload adds to it (its
    // mappings are copied and torn down too): that is the bound, and the
    // shim's own share, off - empty preload, is held to the same 3 µs.
    auto empty_added_of = [&](const CaseRun& r) { return added(rep, r, kEmpty); };
    k.add_bounded("fork", "µs added per fork, off - no shim", false, 3,
                  [&](const CaseRun& r) { return added(rep, r, kOff); }, empty_added_of);
    k.add("fork", "µs added per fork, off - empty preload, the shim's own share", false, 3,
          [&](const CaseRun& r) -> std::optional<double> {
              const std::optional<double> off = added(rep, r, kOff), empty = empty_added_of(r);
              if (!off || !empty) return std::nullopt;
              return *off - *empty;
          });
    k.add("footprint", "bss of libpipespin.so (KiB)", false, 1024,
          [&](const CaseRun&) -> std::optional<double> {
              if (!rep.bss_bytes) return std::nullopt;
              return static_cast<double>(*rep.bss_bytes) / 1024;
          });
    for (std::size_t arm : {kOff, kAdaptive})
        k.add("footprint", fmt::format("KiB of VmRSS added to `sleep 1`, {}", kArms[arm].name),
              false, 256, [&](const CaseRun& r) { return added(rep, r, arm); });

    // py-pingpong: per placement of the no-shim run, and where it was slow.
    const CaseRun* py = find_run(rep, "py-pingpong");
    const std::string slow = fmt::format("no shim ≥ {:g} µs", kSlowRoundTripUs);
    auto group_ratio = [&](const RoundGroup& g) {
        return std::optional(g.median[kAdaptive] > 0 ? g.median[kNoShim] / g.median[kAdaptive]
                                                     : 0.0);
    };
    auto group_check = [&](const RoundGroup* g, std::string_view name, double threshold) {
        const std::string what =
            fmt::format("rounds {}: no shim / adaptive (µs per round trip)",
                        g ? fmt::format("{} ({} of {})", g->name, g->rounds.size(),
                                        py->arms[kNoShim].samples.size())
                          : std::string(name));
        k.add("py-pingpong", what, true, threshold,
              [&](const CaseRun&) { return g ? group_ratio(*g) : std::optional<double>(); });
    };
    bool any_placement = false;
    if (py)
        for (const RoundGroup& g : py->groups)
            if (g.name != slow) {
                group_check(&g, "", 0.97);
                any_placement = true;
            }
    if (!any_placement) group_check(nullptr, "in each placement", 0.97);
    const RoundGroup* slow_group = nullptr;
    if (py)
        for (const RoundGroup& g : py->groups)
            if (g.name == slow) slow_group = &g;
    group_check(slow_group, "where " + slow, 3);
    return k.take();
}

}  // namespace pipespin::cli::matrix
