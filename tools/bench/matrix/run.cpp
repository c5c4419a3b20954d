// matrix: running one sample of a case in one arm and measuring it.
//
// Each run is measured from outside: wall time from the spawn to the reaping,
// CPU time and context switches from wait4's rusage, which covers the child
// and every descendant it waited for (a shell waits for its pipeline's
// stages, perf and hackbench for their workers). The sparse case is the
// exception for CPU: its CPU is the consumer's own, which the worker reports,
// since the point there is what waiting costs the side that waits.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bench/bench.h"
#include "bench/matrix/matrix.h"
#include "cli/util/spawn.h"
#include "cli/util/text.h"
#include "cli/worker.h"
#include "platform/sys.h"

namespace pipespin::bench::matrix {

namespace {

// The number on the line that holds `label`, just before it (perf's
// "35.9 usecs/op") or just after it (hackbench's "Time: 1.02").
std::optional<double> number_by(std::string_view out, std::string_view label, bool before) {
    const std::size_t at = out.find(label);
    if (at == std::string_view::npos) return std::nullopt;
    std::size_t begin = out.rfind('\n', at);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    std::size_t end = out.find('\n', at);
    if (end == std::string_view::npos) end = out.size();
    std::string_view text = before ? out.substr(begin, at - begin)
                                   : out.substr(at + label.size(), end - at - label.size());
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    return parse_decimal(text);
}

// "µs same total" from py-pingpong, into the sample; false if it is not that.
bool parse_placed(std::string_view out, Sample& s) {
    std::istringstream in{std::string(out)};
    double us = 0;
    int same = -1, total = -1;
    std::string rest;
    if (!(in >> us >> same >> total) || (in >> rest) || !(us > 0) ||
        !classify_placement(same, total))
        return false;
    s.figure = us;
    s.same_cpu = same;
    s.cpu_samples = total;
    return true;
}

std::string proc_text(int pid, std::string_view file) {
    std::ifstream in(fmt::format("/proc/{}/{}", pid, file));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Whether the process sits in its sleep: /proc/PID/syscall names the call
// it is blocked in (readable for our own child), else its state is S.
bool asleep(int pid) {
    const std::string sc = proc_text(pid, "syscall");
    long nr = -1;
    if (std::sscanf(sc.c_str(), "%ld", &nr) == 1) {
#ifdef SYS_nanosleep
        if (nr == SYS_nanosleep) return true;
#endif
        return nr == SYS_clock_nanosleep;
    }
    if (!sc.empty()) return false;  // "running", or another call
    const std::string stat = proc_text(pid, "stat");
    const std::size_t paren = stat.rfind(')');
    return paren != std::string::npos && stat.compare(paren, 3, ") S") == 0;
}

std::optional<double> vm_rss_kib(int pid) {
    std::istringstream in(proc_text(pid, "status"));
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("VmRSS:") || !line.ends_with(" kB")) continue;
        const std::size_t digits = line.find_first_not_of(" \t", 6);
        return parse_decimal(line.substr(digits, line.size() - 3 - digits));
    }
    return std::nullopt;
}

// The footprint: `sleep 1` in the arm's environment, its VmRSS read once it
// sleeps (all its start-up done), then killed. Wall and CPU are its start-up.
Sample measure_rss(const CaseRun& run, const ArmKind& arm, const Environment& env) {
    Child child(run.path, run.spec.argv, env, {.null_stdin = true, .capture_stderr = true});
    std::optional<double> kib;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!kib && std::chrono::steady_clock::now() < give_up) {
        if (asleep(child.pid())) {
            kib = vm_rss_kib(child.pid());
            break;
        }
        const timespec pause{0, 200'000};
        ::nanosleep(&pause, nullptr);
    }
    ::kill(child.pid(), SIGKILL);
    const Measured m = child.wait();
    if (!kib || !(*kib > 0))
        throw Failure(kExitFailure,
                      fmt::format("{}: {} ({}): no VmRSS of a sleeping {} ({}); its stderr: {}",
                                  kCommand, run.spec.id, arm.name, shell_join(run.spec.argv),
                                  describe_wait_status(m.wait_status), printable(m.err)));
    return {.wall_us = m.wall_us,
            .cpu_us = m.cpu_us,
            .vol_cs = static_cast<double>(m.vol_cs),
            .invol_cs = static_cast<double>(m.invol_cs),
            .figure = kib};
}

std::string first_line_with(const std::string& path, std::string_view prefix) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(prefix)) return line;
    return "";
}

}  // namespace

bool Report::runs_arm(std::size_t arm) const {
    return std::find(arms.begin(), arms.end(), arm) != arms.end();
}

Sample run_once(const CaseRun& run, const ArmKind& arm, const Environment& env) {
    const Case& c = run.spec;
    if (c.figure == Figure::RssKib) return measure_rss(run, arm, env);
    std::vector<std::string> argv = c.argv;
    // A worker checks that the shim is there exactly when it should be.
    if (c.worker)
        argv.insert(argv.end() - 1,
                    std::string(cli::worker::expect_shim_flag(arm.mode.has_value())));
    const Measured m =
        spawn_measure(run.path, argv, env, {.null_stdin = true, .capture_stderr = true});
    auto fail = [&](const std::string& why) {
        std::string_view err = m.err;
        if (err.size() > 2000) err = err.substr(err.size() - 2000);
        return Failure(kExitFailure, fmt::format("{}: {} ({}) {}{}{}", kCommand, c.id, arm.name,
                                                 why, err.empty() ? "" : "; its stderr:\n", err));
    };
    if (!exited_ok(m.wait_status)) throw fail(describe_wait_status(m.wait_status));

    Sample s{.wall_us = m.wall_us,
             .cpu_us = m.cpu_us,
             .vol_cs = static_cast<double>(m.vol_cs),
             .invol_cs = static_cast<double>(m.invol_cs)};
    switch (c.figure) {
        case Figure::None:
        case Figure::RssKib:
            return s;
        case Figure::PerfUsecsPerOp:
            s.figure = number_by(m.out, "usecs/op", true);
            break;
        case Figure::HackbenchSeconds:
            if ((s.figure = number_by(m.out, "Time:", false))) *s.figure *= 1e6;
            break;
        case Figure::AddedUsPerOp:
            s.figure = parse_decimal(m.out);
            break;
        case Figure::PlacedUsPerOp:
            if (!parse_placed(m.out, s))
                throw fail(fmt::format("printed '{}', not 'µs same total'", printable(m.out)));
            return s;
        case Figure::ConsumerCpu:
            if (std::optional<double> cpu = parse_decimal(m.out); cpu && *cpu >= 0)
                s.cpu_us = *cpu;
            else
                throw fail(
                    fmt::format("printed '{}', not the consumer's CPU µs", printable(m.out)));
            return s;
    }
    if (!s.figure) throw fail(fmt::format("printed '{}' without its figure", printable(m.out)));
    return s;
}

double run_floor(const std::string& exe, const CaseRun& run, const Environment& env) {
    const Measured m =
        spawn_measure(exe, floor_argv(run.spec), env, {.null_stdin = true, .capture_stderr = true});
    const std::optional<double> us = parse_decimal(m.out);
    if (!exited_ok(m.wait_status) || !us || !(*us > 0))
        throw Failure(
            kExitFailure,
            fmt::format("{}: {} (floor) {}, printed '{}'; its stderr: {}", kCommand, run.spec.id,
                        describe_wait_status(m.wait_status), printable(m.out), printable(m.err)));
    return *us;
}

// The arms' programs must really have (or lack) the shim: a library the
// loader refuses is only a warning on stderr, and a matrix of "shim" arms
// without it would look like a tie. `cat /proc/self/maps` shows what was
// mapped; the empty preload arm must map its library and not the shim.
void check_preload(const std::string& cat, const Report& rep, const ArmEnvironments& envs) {
    for (std::size_t i : rep.arms) {
        const ArmKind& arm = kArms[i];
        Measured m = spawn_measure(cat, {"cat", "/proc/self/maps"}, envs.of(arm), {true, true});
        auto mapped = [&](const std::optional<std::string>& lib) {
            return lib && m.out.find(*lib) != std::string::npos;
        };
        const bool shim = mapped(rep.library), empty = mapped(rep.empty_library);
        if (!exited_ok(m.wait_status) || shim != arm.mode.has_value() || empty != arm.empty_preload)
            throw Failure(kExitSetup,
                          fmt::format("{}: in the '{}' arm, cat(1) maps {}{}; stderr: {}", kCommand,
                                      arm.name, shim ? rep.library : "no shim",
                                      empty ? " and " + *rep.empty_library : "", printable(m.err)));
    }
}

void summarize_case(CaseRun& run, const std::vector<std::size_t>& arms) {
    auto summary_of = [](const std::vector<Sample>& samples, auto field) {
        std::vector<double> v;
        for (const Sample& s : samples) v.push_back(field(s));
        return summarize(v);
    };
    for (std::size_t i : arms) {
        ArmResult& a = run.arms[i];
        a.wall = summary_of(a.samples, [](const Sample& s) { return s.wall_us; });
        a.cpu = summary_of(a.samples, [](const Sample& s) { return s.cpu_us; });
        a.vol_cs = summary_of(a.samples, [](const Sample& s) { return s.vol_cs; });
        a.invol_cs = summary_of(a.samples, [](const Sample& s) { return s.invol_cs; });
        if (!a.samples.empty() && a.samples.front().figure)
            a.figure = summary_of(a.samples, [](const Sample& s) { return *s.figure; });
    }
    const ArmResult& base = run.arms[kNoShim];
    const std::vector<std::size_t> every = rounds_of(run);
    for (std::size_t i : arms) {
        ArmResult& a = run.arms[i];
        a.wall_ratio = wall_ratio_at(run, i, every);
        a.cpu_ratio = cpu_ratio_at(run, i, every);
    }
    if (!run.floor_samples.empty()) {
        run.floor = summarize(run.floor_samples);
        run.bound = speedup_bound(base.wall.median, run.spec.ops, run.floor->median);
    }
    if (run.spec.figure != Figure::PlacedUsPerOp) return;

    // Rounds by the placement their no-shim run saw (what the scheduler
    // does for plain pipes at that moment), then those whose no-shim round
    // trip was slow: per group, each arm's median over the group's rounds.
    auto group = [&](std::string name, auto in_group) {
        RoundGroup g{std::move(name), {}, {}};
        for (std::size_t r = 0; r < base.samples.size(); ++r)
            if (in_group(base.samples[r])) g.rounds.push_back(r);
        if (g.rounds.empty()) return;
        for (std::size_t i : arms) {
            std::vector<double> v;
            for (std::size_t r : g.rounds) v.push_back(*run.arms[i].samples[r].figure);
            g.median[i] = summarize(v).median;
        }
        run.groups.push_back(std::move(g));
    };
    for (Placement p : {Placement::CoLocated, Placement::Spread, Placement::Mixed})
        group(std::string(placement_name(p)),
              [p](const Sample& s) { return classify_placement(s.same_cpu, s.cpu_samples) == p; });
    group(fmt::format("no shim ≥ {:g} µs", kSlowRoundTripUs),
          [](const Sample& s) { return *s.figure >= kSlowRoundTripUs; });
}

std::vector<double> column(const ArmResult& a, double Sample::*field) {
    std::vector<double> v;
    v.reserve(a.samples.size());
    for (const Sample& s : a.samples) v.push_back(s.*field);
    return v;
}

std::vector<double> figures(const ArmResult& a) {
    std::vector<double> v;
    v.reserve(a.samples.size());
    for (const Sample& s : a.samples) v.push_back(s.figure.value_or(0));
    return v;
}

std::vector<double> switches(const CaseRun& run, std::size_t arm) {
    return column(run.arms[arm],
                  run.spec.switch_marks.involuntary ? &Sample::invol_cs : &Sample::vol_cs);
}

Placement placement_of(const CaseRun& run, const Sample& s) {
    const SwitchMarks& m = run.spec.switch_marks;
    return placement_by_switches(m.involuntary ? s.invol_cs : s.vol_cs, run.spec.ops, m);
}

std::vector<double> walls_placed(const CaseRun& run, std::size_t arm, Placement p) {
    if (!run.spec.switch_marks.on()) return {};
    return placed_values(column(run.arms[arm], &Sample::wall_us), switches(run, arm), run.spec.ops,
                         run.spec.switch_marks, p);
}

std::vector<double> figures_placed(const CaseRun& run, std::size_t arm, Placement p) {
    if (!run.spec.switch_marks.on()) return {};
    return placed_values(figures(run.arms[arm]), switches(run, arm), run.spec.ops,
                         run.spec.switch_marks, p);
}

std::vector<std::size_t> rounds_of(const CaseRun& run) {
    return all_rounds(run.arms[kNoShim].samples.size());
}

double wall_ratio_at(const CaseRun& run, std::size_t arm, Picks picks) {
    return median_ratio(column(run.arms[kNoShim], &Sample::wall_us),
                        column(run.arms[arm], &Sample::wall_us), picks);
}

double cpu_ratio_at(const CaseRun& run, std::size_t arm, Picks picks) {
    return median_ratio(column(run.arms[arm], &Sample::cpu_us),
                        column(run.arms[kNoShim], &Sample::cpu_us), picks);
}

std::string load_average() {
    std::istringstream fields(first_line_with("/proc/loadavg", ""));
    std::string one, five, fifteen;
    fields >> one >> five >> fifteen;
    return fmt::format("{} {} {}", one, five, fifteen);
}

Host host_facts() {
    Host h;
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    h.date = date;
    utsname u{};
    if (::uname(&u) == 0) h.system = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
    std::string model = first_line_with("/proc/cpuinfo", "model name");
    if (std::size_t colon = model.find(':'); colon != std::string::npos)
        h.cpu_model = model.substr(model.find_first_not_of(' ', colon + 1));
    h.online_cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    h.usable_cpus = sys::usable_cpus();
    h.load_before = load_average();
    return h;
}

}  // namespace pipespin::bench::matrix
