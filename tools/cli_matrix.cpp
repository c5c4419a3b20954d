// pipespin bench matrix: whole programs, with and without the shim.
//
// Each case is one command line (perf bench, hackbench, shell pipelines, and
// bench-worker's sparse producer) run as a child in the environment of each
// arm (ArmEnvironments in common.h: the same hygiene as bench pingpong).
// Arms run interleaved within a round, rounds one after another, so that a
// noisy neighbour hits every arm alike; only medians are compared.
//
// Each run is measured from outside: wall time from the spawn to the reaping,
// CPU time from wait4's rusage, which covers the child and every descendant
// it waited for (a shell waits for its pipeline's stages, perf and hackbench
// for their workers). The sparse case is the exception: its CPU is the
// consumer's own, which the worker reports, since the point there is what
// waiting costs the side that waits.
//
// A case whose pipe traffic can be done within one thread (the ping-pongs,
// dd | cat) also runs that floor once per round, after its arms (bench-worker
// floor and floor-blocks, no shim): no spin policy makes a run cheaper than
// its floor, which bounds the wall speed-up the case's checks can reach on
// this host (matrix_verdict.h).
//
// The tools (perf, hackbench, gnuplot) come from Debian packages that this
// command never installs: a case whose tool is missing is skipped with a
// note naming the package.
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "common.h"
#include "core/options.h"
#include "matrix_verdict.h"
#include "platform/sys.h"

namespace pipespin::cli {
namespace {
namespace fs = std::filesystem;

constexpr std::uint64_t kDefaultRounds = 5;
constexpr std::string_view kCommand = "bench matrix";

// What a case's own output says that is worth a column; ConsumerCpu replaces
// the measured CPU with the one the sparse worker prints.
enum class Figure { None, PerfUsecsPerOp, HackbenchSeconds, ConsumerCpu };

// The case's pipe traffic within one thread, one operation per `ops`: a
// bench-worker loop that prints the mean µs per operation.
enum class Floor { None, RoundTrips, Blocks };

std::string_view floor_loop(Floor f) {
    return f == Floor::RoundTrips ? "floor" : "floor-blocks";
}

std::string_view floor_about(Floor f) {
    return f == Floor::RoundTrips ? "1-byte round trips over two pipes within one thread"
                                  : "64 KiB blocks written into a pipe and read back within one "
                                    "thread, less as many zero-length write+read pairs (the "
                                    "copies alone)";
}

struct Case {
    std::string id;
    std::vector<std::string> argv;  // argv[0] is a tool name, resolved before the runs
    std::string about;              // what the command line alone does not say
    std::uint64_t ops = 0;          // for CPU µs per operation
    std::string_view op;            // what one operation is
    std::vector<std::string_view> tools;
    Figure figure = Figure::None;
    Floor floor = Floor::None;
};

// The parameters of the issue, and a scaled-down set for smoke tests.
struct Scale {
    std::uint64_t perf_loops, hackbench_loops, stream_loops, dd_blocks, seq_lines, sparse_bytes;
};
constexpr Scale kFull{20'000, 500, 400'000, 40'000, 10'000'000, 500};
constexpr Scale kQuick{2'000, 50, 40'000, 4'000, 1'000'000, 100};

// hackbench's default: each group has 20 senders and 20 receivers (-f).
constexpr std::uint64_t kHackbenchFds = 20;

std::vector<Case> all_cases(const Scale& s) {
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    std::vector<Case> out;
    for (bool threads : {false, true}) {
        Case c{threads ? "perf-threads" : "perf-pipe",
               {"perf", "bench", "sched", "pipe", "-l", n(s.perf_loops)},
               threads ? "ping-pong between two threads" : "ping-pong between two processes",
               s.perf_loops,
               "round trip",
               {"perf"},
               Figure::PerfUsecsPerOp,
               Floor::RoundTrips};
        if (threads) c.argv.emplace_back("-T");
        out.push_back(std::move(c));
    }
    for (std::uint64_t groups : {1, 2, 4})
        out.push_back(
            {fmt::format("hackbench-g{}", groups),
             {"hackbench", "-p", "-g", n(groups), "-l", n(s.hackbench_loops)},
             fmt::format("{} processes in {} group(s) of {} senders x {} receivers",
                         groups * 2 * kHackbenchFds, groups, kHackbenchFds, kHackbenchFds),
             groups * kHackbenchFds * kHackbenchFds * s.hackbench_loops,
             "message",
             {"hackbench"},
             Figure::HackbenchSeconds});
    out.push_back({"hackbench-stream",
                   {"hackbench", "-p", "-g", "1", "-f", "1", "-l", n(s.stream_loops)},
                   "streaming: one sender, one receiver, 100-byte messages",
                   s.stream_loops,
                   "message",
                   {"hackbench"},
                   Figure::HackbenchSeconds});
    out.push_back({"dd-cat",
                   {"sh", "-c",
                    fmt::format("dd if=/dev/zero bs=64k count={} | cat > /dev/null", s.dd_blocks)},
                   "64 KiB blocks through a pipe",
                   s.dd_blocks,
                   "block",
                   {"sh", "dd", "cat"},
                   Figure::None,
                   Floor::Blocks});
    out.push_back({"seq-wc",
                   {"sh", "-c", fmt::format("seq {} | wc -l", s.seq_lines)},
                   "short lines through a pipe",
                   s.seq_lines,
                   "line",
                   {"sh", "seq", "wc"},
                   Figure::None});
    out.push_back({"sparse",
                   {"pipespin", "bench-worker", "sparse", n(s.sparse_bytes)},
                   fmt::format("a producer writes 1 byte every 2 ms for {:g} s, a consumer reads "
                               "them one by one; CPU is the consumer's, from its first read to EOF",
                               static_cast<double>(s.sparse_bytes) * 0.002),
                   s.sparse_bytes,
                   "byte",
                   {},
                   Figure::ConsumerCpu});
    return out;
}

struct MatrixArgs {
    bool quick = false;
    std::uint64_t rounds = kDefaultRounds;
    std::vector<std::string> cases;  // empty: all
    std::optional<std::string> markdown, json, plot;
    std::optional<std::uint32_t> spin_us;  // unset: the shim's default
};

std::vector<std::string> case_ids() {
    std::vector<std::string> ids;
    for (const Case& c : all_cases(kFull)) ids.push_back(c.id);
    return ids;
}

// nullopt: the user asked for --help.
std::optional<MatrixArgs> parse_matrix(ArgCursor& cur) {
    MatrixArgs a;
    while (!cur.done()) {
        if (cur.take_flag("--help") || cur.take_flag("-h")) return std::nullopt;
        if (cur.take_flag("--quick")) {
            a.quick = true;
        } else if (auto v = cur.take_value("--rounds")) {
            a.rounds = parse_count(kCommand, "--rounds", *v, 1, 1000);
        } else if (auto v = cur.take_value("--spin-us")) {
            a.spin_us = parse_flag_value(kCommand, option_spec("spin_us"), *v);
        } else if (auto v = cur.take_value("--markdown")) {
            a.markdown = std::string(*v);
        } else if (auto v = cur.take_value("--json")) {
            a.json = std::string(*v);
        } else if (auto v = cur.take_value("--plot")) {
            a.plot = std::string(*v);
        } else if (auto v = cur.take_value("--cases")) {
            parse_name_list(kCommand, "--cases", "case", *v, case_ids(), a.cases);
        } else {
            cur.fail_unknown();
        }
    }
    for (const auto* file : {&a.markdown, &a.json, &a.plot})
        if (*file && (*file)->empty())
            throw UsageError(fmt::format("{}: an output file name is empty", kCommand));
    return a;
}

// ---- the tools --------------------------------------------------------------

struct ToolPackage {
    std::string_view tool, package;
};
constexpr ToolPackage kPackages[] = {
    {"perf", "linux-perf"}, {"hackbench", "rt-tests"}, {"gnuplot", "gnuplot-nox"},
    {"sh", "dash"},         {"dd", "coreutils"},       {"cat", "coreutils"},
    {"seq", "coreutils"},   {"wc", "coreutils"},
};

std::string_view package_of(std::string_view tool) {
    for (const ToolPackage& t : kPackages)
        if (t.tool == tool) return t.package;
    return "?";
}

// Where a tool is, or why it cannot be used.
struct Located {
    std::optional<std::string> path;
    std::string note;  // why it is missing, or what was used instead of the obvious
};

std::string kernel_release() {
    utsname u{};
    return ::uname(&u) == 0 ? u.release : "?";
}

// Debian's /usr/bin/perf has been a wrapper that runs perf_X.Y for the
// running kernel and, when there is none, prints "WARNING: perf not found for
// kernel X.Y" and fails. Then the newest perf_* beside it is the real one.
Located locate_perf(const std::string& wrapper, const Environment& env) {
    auto works = [&](const std::string& path) {
        Measured m = spawn_measure(path, {"perf", "version"}, env, {true, true});
        return std::make_pair(WIFEXITED(m.wait_status) && WEXITSTATUS(m.wait_status) == 0,
                              m.out + m.err);
    };
    auto [ok, said] = works(wrapper);
    if (ok && said.find("perf not found for kernel") == std::string::npos) return {wrapper, ""};
    if (said.find("perf not found for kernel") == std::string::npos)
        return {std::nullopt, fmt::format("'{} version' failed: {}", wrapper,
                                          printable(said.substr(0, said.find('\n'))))};

    const fs::path dir = fs::path(wrapper).parent_path();
    std::string newest;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with("perf_") && ::access(e.path().c_str(), X_OK) == 0 &&
            (newest.empty() || ::strverscmp(name.c_str(), newest.c_str()) > 0))
            newest = name;
    }
    if (newest.empty() || !works((dir / newest).string()).first)
        return {std::nullopt,
                fmt::format("{} is Debian's wrapper and finds no perf for kernel {}, nor a "
                            "working perf_* beside it",
                            wrapper, kernel_release())};
    return {(dir / newest).string(),
            fmt::format("{} finds no perf for kernel {}; using {}", wrapper, kernel_release(),
                        (dir / newest).string())};
}

Located locate(std::string_view tool, const Environment& env) {
    std::optional<std::string> path = resolve_command(tool);
    if (!path)
        return {std::nullopt,
                fmt::format("{} is not installed (Debian package: {})", tool, package_of(tool))};
    if (tool == "perf") {
        Located perf = locate_perf(*path, env);
        if (!perf.path) perf.note += fmt::format(" (Debian package: {})", package_of(tool));
        return perf;
    }
    return {path, ""};
}

// ---- running ----------------------------------------------------------------

struct Sample {
    double wall_us = 0;
    double cpu_us = 0;
    std::optional<double> figure;  // perf µs/op, hackbench's own time in µs
};

struct ArmResult {
    std::vector<Sample> samples;
    Summary wall, cpu;
    std::optional<Summary> figure;
    double wall_ratio = 0;  // no shim / this arm
    double cpu_ratio = 0;   // this arm / no shim
};

struct CaseRun {
    Case spec;
    std::string path;                   // argv[0] resolved
    std::vector<ArmResult> arms;        // parallel to kArmKinds
    std::vector<double> floor_samples;  // µs per operation, when the case has a floor
    std::optional<Summary> floor;
    std::optional<double> bound;  // speedup_bound() of the medians
};

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

Sample run_once(const CaseRun& run, const ArmKind& arm, const Environment& env) {
    const Case& c = run.spec;
    std::vector<std::string> argv = c.argv;
    // The sparse worker checks that the shim is there exactly when it should be.
    if (c.figure == Figure::ConsumerCpu)
        argv.insert(argv.end() - 1, std::string(expect_shim_flag(arm.mode.has_value())));
    const Measured m =
        spawn_measure(run.path, argv, env, {.null_stdin = true, .capture_stderr = true});
    auto fail = [&](const std::string& why) {
        std::string_view err = m.err;
        if (err.size() > 2000) err = err.substr(err.size() - 2000);
        return Failure(kExitFailure, fmt::format("{}: {} ({}) {}{}{}", kCommand, c.id, arm.name,
                                                 why, err.empty() ? "" : "; its stderr:\n", err));
    };
    if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0)
        throw fail(describe_wait_status(m.wait_status));

    Sample s{m.wall_us, m.cpu_us, std::nullopt};
    switch (c.figure) {
        case Figure::None:
            return s;
        case Figure::PerfUsecsPerOp:
            s.figure = number_by(m.out, "usecs/op", true);
            break;
        case Figure::HackbenchSeconds:
            if ((s.figure = number_by(m.out, "Time:", false))) *s.figure *= 1e6;
            break;
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

std::vector<std::string> floor_argv(const Case& c) {
    return {"pipespin", "bench-worker", std::string(floor_loop(c.floor)),
            std::string(expect_shim_flag(false)), std::to_string(c.ops)};
}

// One floor sample, in µs per operation, run in the no-shim environment.
double run_floor(const std::string& exe, const CaseRun& run, const Environment& env) {
    const Measured m =
        spawn_measure(exe, floor_argv(run.spec), env, {.null_stdin = true, .capture_stderr = true});
    const std::optional<double> us = parse_decimal(m.out);
    if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0 || !us || !(*us > 0))
        throw Failure(
            kExitFailure,
            fmt::format("{}: {} (floor) {}, printed '{}'; its stderr: {}", kCommand, run.spec.id,
                        describe_wait_status(m.wait_status), printable(m.out), printable(m.err)));
    return *us;
}

// The arms' programs must really have (or lack) the shim: a library the
// loader refuses is only a warning on stderr, and a matrix of "shim" arms
// without it would look like a tie. `cat /proc/self/maps` shows what was mapped.
void check_preload(const std::string& cat, const std::string& library,
                   const ArmEnvironments& envs) {
    for (const ArmKind& arm : kArmKinds) {
        Measured m = spawn_measure(cat, {"cat", "/proc/self/maps"}, envs.of(arm), {true, true});
        const bool mapped = m.out.find(library) != std::string::npos;
        if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0 ||
            mapped != arm.mode.has_value())
            throw Failure(kExitSetup, fmt::format("{}: in the '{}' arm, {} is {}mapped into "
                                                  "cat(1); stderr: {}",
                                                  kCommand, arm.name, library, mapped ? "" : "not ",
                                                  printable(m.err)));
    }
}

void summarize_case(CaseRun& run) {
    for (ArmResult& a : run.arms) {
        std::vector<double> wall, cpu, figure;
        for (const Sample& s : a.samples) {
            wall.push_back(s.wall_us);
            cpu.push_back(s.cpu_us);
            if (s.figure) figure.push_back(*s.figure);
        }
        a.wall = summarize(wall);
        a.cpu = summarize(cpu);
        if (!figure.empty()) a.figure = summarize(figure);
    }
    const ArmResult& base = run.arms.front();
    for (ArmResult& a : run.arms) {
        a.wall_ratio = a.wall.median > 0 ? base.wall.median / a.wall.median : 0;
        a.cpu_ratio = base.cpu.median > 0 ? a.cpu.median / base.cpu.median : 0;
    }
    if (!run.floor_samples.empty()) {
        run.floor = summarize(run.floor_samples);
        run.bound = speedup_bound(base.wall.median, run.spec.ops, run.floor->median);
    }
}

// ---- the report -------------------------------------------------------------

std::string seconds_text(double us) {
    if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
    if (us >= 1e3) return fmt::format("{:.1f} ms", us / 1e3);
    return fmt::format("{:.0f} µs", us);
}

std::string ratio_text(double r) {
    return r >= 10 ? fmt::format("{:.1f}x", r) : fmt::format("{:.2f}x", r);
}

std::string per_op_text(double us) {
    return fmt::format("{:.{}f}", us, us >= 100 ? 0 : us >= 1 ? 2 : 3);
}

std::string figure_text(const CaseRun& run, const ArmResult& a) {
    if (!a.figure) return "";
    if (run.spec.figure == Figure::PerfUsecsPerOp)
        return fmt::format("{:.2f} µs/op", a.figure->median);
    return fmt::format("Time: {}", seconds_text(a.figure->median));
}

struct Host {
    std::string date, system, cpu_model, load_before, load_after;
    long online_cpus = 0;
    int usable_cpus = 0;
};

std::string first_line_with(const std::string& path, std::string_view prefix) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(prefix)) return line;
    return "";
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

// One acceptance line.
struct Check {
    std::string what;
    std::string value;
    std::string threshold;
    std::optional<double> bound;  // for a wall speed-up of a case with a floor
    Verdict verdict = Verdict::NotRun;
};

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

const CaseRun* find_run(const std::vector<CaseRun>& runs, std::string_view id) {
    for (const CaseRun& r : runs)
        if (r.spec.id == id) return &r;
    return nullptr;
}

constexpr std::size_t kOff = 1, kFixed = 2, kAdaptive = 3;  // indexes into kArmKinds

std::vector<Check> acceptance(const std::vector<CaseRun>& runs) {
    std::vector<Check> out;
    // bounded: the value is the adaptive wall speed-up, which the case's
    // floor bounds when it has one.
    auto check = [&](std::string_view id, std::string what, bool at_least, double threshold,
                     bool bounded, auto value_of) {
        Check c{fmt::format("`{}`: {}", id, what), "not run",
                fmt::format("{} {:g}", at_least ? "≥" : "≤", threshold), std::nullopt,
                Verdict::NotRun};
        std::optional<double> value;
        if (const CaseRun* r = find_run(runs, id)) {
            value = value_of(*r);
            c.value = fmt::format("{:.3f}", *value);
            if (bounded) c.bound = r->bound;
        }
        c.verdict = verdict(value, at_least, threshold, c.bound);
        out.push_back(std::move(c));
    };
    auto speedup = [](const CaseRun& r) { return r.arms[kAdaptive].wall_ratio; };
    for (std::string_view id : {"perf-pipe", "perf-threads"}) {
        check(id, "adaptive speed-up / fixed speed-up (wall)", true, 0.90, false,
              [](const CaseRun& r) {
                  return r.arms[kAdaptive].wall_ratio / r.arms[kFixed].wall_ratio;
              });
        check(id, "adaptive speed-up, no shim / adaptive (wall)", true, 20, true, speedup);
    }
    for (std::string_view id : {"hackbench-g1", "hackbench-g2", "hackbench-g4", "hackbench-stream"})
        check(id, "no shim / adaptive (wall)", true, 0.97, true, speedup);
    check("dd-cat", "no shim / adaptive (wall)", true, 1.5, true, speedup);
    check("seq-wc", "no shim / adaptive (wall)", true, 1.0, true, speedup);
    check("sparse", "adaptive consumer CPU / no-shim consumer CPU", false, 1.5, false,
          [](const CaseRun& r) { return r.arms[kAdaptive].cpu_ratio; });
    return out;
}

struct Report {
    std::string command;
    Host host;
    std::string library;
    std::uint32_t spin_us = 0;
    bool spin_us_default = true;
    const MatrixArgs* args = nullptr;
    std::vector<CaseRun> runs;
    std::vector<std::string> notes;  // skipped cases, substituted tools
    double elapsed_s = 0;
    std::size_t run_count = 0;
};

std::string duration_text(double s) {
    const auto total = static_cast<long>(std::lround(s));
    return total >= 60 ? fmt::format("{} min {} s", total / 60, total % 60)
                       : fmt::format("{:.1f} s", s);
}

std::string markdown(const Report& rep) {
    const MatrixArgs& a = *rep.args;
    std::string md = "## pipespin bench matrix\n\n";
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
    md += fmt::format(
        "- {} round(s){}, each running every case in the arms no shim, off, fixed, adaptive "
        "(`PIPESPIN_MODE`), in that order; figures are medians\n",
        a.rounds, a.quick ? " with --quick (scaled-down) parameters" : "");
    md +=
        "- wall ratio = no-shim wall / arm wall (above 1: faster); CPU ratio = arm CPU / "
        "no-shim CPU (above 1: more CPU). CPU is user + system of the command and every "
        "process it waited for (wait4), except for `sparse`\n";
    for (const std::string& note : rep.notes) md += fmt::format("- Note: {}\n", note);

    md += "\nCases:\n\n";
    for (const CaseRun& r : rep.runs) {
        std::vector<std::string> shown = r.spec.argv;
        md += fmt::format("- `{}`: `{}`: {}; {} {}s\n", r.spec.id, shell_join(shown), r.spec.about,
                          r.spec.ops, r.spec.op);
    }

    md +=
        "\n| case | arm | median wall | wall ratio | median CPU | CPU ratio | CPU µs/op | "
        "the tool's figure |\n";
    md += "|---|---|--:|--:|--:|--:|--:|--:|\n";
    for (const CaseRun& r : rep.runs) {
        for (std::size_t i = 0; i < r.arms.size(); ++i) {
            const ArmResult& arm = r.arms[i];
            md += fmt::format("| {} | {} | {} | {} | {}{} | {} | {} per {} | {} |\n", r.spec.id,
                              kArmKinds[i].name, seconds_text(arm.wall.median),
                              ratio_text(arm.wall_ratio), seconds_text(arm.cpu.median),
                              r.spec.figure == Figure::ConsumerCpu ? " (consumer)" : "",
                              ratio_text(arm.cpu_ratio),
                              per_op_text(arm.cpu.median / static_cast<double>(r.spec.ops)),
                              r.spec.op, figure_text(r, arm));
        }
    }

    bool any_floor = false;
    for (const CaseRun& r : rep.runs) any_floor = any_floor || r.floor.has_value();
    if (any_floor) {
        md +=
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
    }

    md += "\nAcceptance (adaptive, from the medians above):\n\n";
    if (a.quick || a.rounds < kDefaultRounds)
        md += fmt::format(
            "The thresholds are for the full parameters and at least {} rounds; this run "
            "used {}.\n\n",
            kDefaultRounds, a.quick ? "--quick" : fmt::format("{} round(s)", a.rounds));
    md +=
        "A speed-up whose threshold is above its case's bound is unreachable here: no spin "
        "policy could meet it on this host.\n\n";
    md += "| check | value | threshold | bound on this host | result |\n|---|--:|--:|--:|---|\n";
    for (const Check& c : acceptance(rep.runs))
        md += fmt::format("| {} | {} | {} | {} | {} |\n", c.what, c.value, c.threshold,
                          c.bound ? fmt::format("{:.3f}", *c.bound) : "", verdict_text(c));
    return md;
}

std::string json(const Report& rep) {
    auto samples = [](const ArmResult& a, auto field) {
        std::vector<std::string> v;
        for (const Sample& s : a.samples) v.push_back(fmt::format("{:.1f}", field(s)));
        return fmt::format("[{}]", fmt::join(v, ","));
    };
    std::vector<std::string> cases;
    for (const CaseRun& r : rep.runs) {
        std::vector<std::string> arms;
        for (std::size_t i = 0; i < r.arms.size(); ++i) {
            const ArmResult& a = r.arms[i];
            arms.push_back(fmt::format(
                "{{\"name\":{},\"median_wall_us\":{:.1f},\"median_cpu_us\":{:.1f},"
                "\"wall_ratio\":{:.4f},\"cpu_ratio\":{:.4f},\"cpu_us_per_op\":{:.4f},"
                "\"median_figure\":{},\"wall_us\":{},\"cpu_us\":{}}}",
                json_string(kArmKinds[i].name), a.wall.median, a.cpu.median, a.wall_ratio,
                a.cpu_ratio, a.cpu.median / static_cast<double>(r.spec.ops),
                a.figure ? fmt::format("{:.4f}", a.figure->median) : "null",
                samples(a, [](const Sample& s) { return s.wall_us; }),
                samples(a, [](const Sample& s) { return s.cpu_us; })));
        }
        std::string floor = "null";
        if (r.floor) {
            std::vector<std::string> us;
            for (double v : r.floor_samples) us.push_back(fmt::format("{:.4f}", v));
            floor = fmt::format(
                "{{\"command\":{},\"median_us_per_op\":{:.4f},\"us_per_op\":[{}],"
                "\"bound\":{}}}",
                json_string(shell_join(floor_argv(r.spec))), r.floor->median, fmt::join(us, ","),
                r.bound ? fmt::format("{:.4f}", *r.bound) : "null");
        }
        cases.push_back(fmt::format(
            "{{\"id\":{},\"command\":{},\"ops\":{},\"op\":{},\"cpu\":{},\"arms\":[{}],"
            "\"floor\":{}}}",
            json_string(r.spec.id), json_string(shell_join(r.spec.argv)), r.spec.ops,
            json_string(r.spec.op),
            json_string(r.spec.figure == Figure::ConsumerCpu ? "consumer" : "command tree"),
            fmt::join(arms, ","), floor));
    }
    std::vector<std::string> checks;
    for (const Check& c : acceptance(rep.runs))
        checks.push_back(
            fmt::format("{{\"check\":{},\"value\":{},\"threshold\":{},\"bound\":{},\"result\":{},"
                        "\"pass\":{}}}",
                        json_string(c.what), json_string(c.value), json_string(c.threshold),
                        c.bound ? fmt::format("{:.4f}", *c.bound) : "null",
                        json_string(verdict_name(c.verdict)),
                        c.verdict == Verdict::Pass   ? "true"
                        : c.verdict == Verdict::Fail ? "false"
                                                     : "null"));
    std::vector<std::string> notes;
    for (const std::string& n : rep.notes) notes.push_back(json_string(n));
    return fmt::format(
        "{{\"benchmark\":\"matrix\",\"command\":{},\"date\":{},\"system\":{},\"cpu_model\":{},"
        "\"online_cpus\":{},\"usable_cpus\":{},\"load_before\":{},\"load_after\":{},"
        "\"library\":{},\"spin_us\":{},\"rounds\":{},\"quick\":{},\"elapsed_s\":{:.1f},"
        "\"notes\":[{}],\"cases\":[{}],\"acceptance\":[{}]}}\n",
        json_string(rep.command), json_string(rep.host.date), json_string(rep.host.system),
        json_string(rep.host.cpu_model), rep.host.online_cpus, rep.host.usable_cpus,
        json_string(rep.host.load_before), json_string(rep.host.load_after),
        json_string(rep.library), rep.spin_us, rep.args->rounds, rep.args->quick, rep.elapsed_s,
        fmt::join(notes, ","), fmt::join(cases, ","), fmt::join(checks, ","));
}

// A gnuplot single-quoted string: only the quote itself needs doubling.
std::string gnuplot_string(std::string_view s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

// Grouped bars of the wall ratio per case and arm, on a log scale, drawn by
// gnuplot from a data file and a script in a private temporary directory.
void draw_plot(const Report& rep, const std::string& gnuplot, const std::string& png,
               const Environment& env) {
    std::string tmpl = (fs::temp_directory_path() / "pipespin-plot.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw Failure(kExitFailure, fmt::format("{}: mkdtemp: {}", kCommand, std::strerror(errno)));
    const fs::path dir = tmpl;
    struct Cleanup {
        fs::path dir;
        ~Cleanup() {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } cleanup{dir};

    double lo = 1, hi = 1;
    std::string data = "case";
    for (const ArmKind& arm : kArmKinds) data += fmt::format(" \"{}\"", arm.name);
    data += "\n";
    for (const CaseRun& r : rep.runs) {
        data += r.spec.id;
        for (const ArmResult& a : r.arms) {
            data += fmt::format(" {:.4f}", a.wall_ratio);
            if (a.wall_ratio > 0) {
                lo = std::min(lo, a.wall_ratio);
                hi = std::max(hi, a.wall_ratio);
            }
        }
        data += "\n";
    }
    std::ofstream(dir / "ratios.dat") << data;

    constexpr std::size_t kArms = std::size(kArmKinds);
    std::string script = fmt::format(
        "set terminal pngcairo size 1200,600 noenhanced font 'sans,10'\n"
        "set output {}\n"
        "set title 'pipespin bench matrix: wall-time speed-up per case (no shim / arm), median "
        "of {} round(s){}'\n"
        "set style data histograms\n"
        "set style histogram clustered gap 1\n"
        "set style fill solid 0.85 border -1\n"
        "set logscale y 2\n"
        "set ytics (0.0625, 0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 8, 16, 32, 64, 128)\n"
        "set yrange [{:g}:{:g}]\n"
        "set ylabel 'no-shim wall / arm wall (log scale; above 1 = faster)'\n"
        "set grid ytics\n"
        "set key below center horizontal autotitle columnheader\n"
        "set xtics nomirror rotate by -20\n"
        "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 front\n"
        "data = {}\n"
        "plot for [i=2:{}] data using i:xtic(1), \\\n"
        "     for [i=2:{}] data using ($0 + (i - {:g}) / {:g}):i:(sprintf('%.2f', column(i))) "
        "with labels font ',7' offset 0,0.6 notitle\n",
        gnuplot_string(png), rep.args->rounds, rep.args->quick ? " (--quick)" : "", lo / 1.6,
        hi * 1.6, gnuplot_string((dir / "ratios.dat").string()), kArms + 1, kArms + 1,
        // Bar i of a cluster of kArms with a gap of 1 sits at (i - centre) / (kArms + 1).
        2 + (static_cast<double>(kArms) - 1) / 2, static_cast<double>(kArms) + 1);
    std::ofstream(dir / "matrix.gp") << script;

    std::error_code ec;
    fs::remove(png, ec);  // so that its existence afterwards is gnuplot's doing
    Measured m =
        spawn_measure(gnuplot, {"gnuplot", (dir / "matrix.gp").string()}, env, {true, true});
    if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0 ||
        fs::file_size(png, ec) == 0 || ec)
        throw Failure(kExitFailure,
                      fmt::format("{}: gnuplot {} and did not write {}: {}", kCommand,
                                  describe_wait_status(m.wait_status), png, printable(m.err)));
}

// An output file opened before the runs, so that a bad path fails in a
// second rather than after ten minutes of measuring.
struct Output {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, std::fclose};
    std::string path;
};

Output open_output(const std::optional<std::string>& path) {
    Output o;
    if (!path) return o;
    o.path = *path;
    o.file.reset(std::fopen(path->c_str(), "w"));
    if (!o.file)
        throw Failure(kExitFailure, fmt::format("{}: cannot write {}: {}", kCommand, *path,
                                                std::strerror(errno)));
    return o;
}

void write_output(Output& o, const std::string& text) {
    std::FILE* f = o.file ? o.file.get() : stdout;
    if (std::fputs(text.c_str(), f) < 0 || std::fflush(f) != 0)
        throw Failure(kExitFailure, fmt::format("{}: cannot write {}: {}", kCommand,
                                                o.file ? o.path : "stdout", std::strerror(errno)));
}

}  // namespace

std::optional<std::string> locate_tool(std::string_view tool, std::string* note) {
    Located l = locate(tool, Environment::current());
    if (note != nullptr) *note = l.note;
    return l.path;
}

std::string bench_matrix_usage() {
    return usage_entry(
        "  pipespin bench matrix [--rounds R] [--cases LIST] [--quick] [--spin-us N]\n"
        "                        [--markdown FILE] [--json FILE] [--plot FILE.png]\n",
        fmt::format("Run whole programs in the same four configurations, interleaved round "
                    "after round: perf bench sched pipe (processes, threads), hackbench -p with "
                    "1, 2 and 4 groups and streaming, dd | cat, seq | wc -l, and a sparse "
                    "producer whose consumer's CPU is measured. Reports, as Markdown on stdout "
                    "or in FILE, the median wall and CPU time (of the whole process tree), the "
                    "ratios to no shim, CPU µs per operation, and the acceptance checks; --json "
                    "also writes every sample, --plot draws the wall ratios with gnuplot. The "
                    "perf bench and dd | cat cases also run their floor each round, the same pipe "
                    "traffic within one thread without the shim: no-shim median wall / "
                    "(operations x floor median per operation) bounds the wall speed-up any "
                    "spinning could reach here, and a speed-up check whose threshold is above "
                    "that bound reads \"unreachable here\" where it would read FAIL. "
                    "LIST is comma-separated: {}. --quick scales every case down, for smoke "
                    "tests. Default: {} rounds. Needs perf (Debian package linux-perf), "
                    "hackbench (rt-tests) and for --plot gnuplot (gnuplot-nox); installs "
                    "nothing: a case whose tool is missing is skipped with a note, and the "
                    "exit status is {} when no case can run. Progress goes to stderr.",
                    fmt::join(case_ids(), ", "), kDefaultRounds, kExitSetup));
}

int bench_matrix(ArgCursor& cur) {
    const Args original = cur.rest();
    const std::optional<MatrixArgs> parsed = parse_matrix(cur);
    if (!parsed) {
        std::fputs(full_usage().c_str(), stdout);
        return kExitOk;
    }
    const MatrixArgs& a = *parsed;
    Report rep;
    rep.args = &a;
    rep.command =
        fmt::format("pipespin bench matrix {}",
                    shell_join(std::vector<std::string>(original.begin(), original.end())));
    while (rep.command.back() == ' ') rep.command.pop_back();

    const std::string exe = self_exe();
    rep.library = find_library();
    const ArmEnvironments envs(rep.library, a.spin_us);
    const Environment& plain = envs.of(kArmKinds[0]);
    rep.spin_us = a.spin_us.value_or(Options{}.*option_spec("spin_us").field);
    rep.spin_us_default = !a.spin_us.has_value();

    Output markdown_out = open_output(a.markdown);
    Output json_out = open_output(a.json);
    if (a.plot) {
        const fs::path dir = fs::absolute(*a.plot).parent_path();
        if (::access(dir.c_str(), W_OK) != 0)
            throw Failure(kExitFailure, fmt::format("{}: cannot write {}: {}", kCommand, *a.plot,
                                                    std::strerror(errno)));
    }

    // Find every tool once; a missing one skips its cases, with a note.
    std::map<std::string, Located, std::less<>> tools;
    auto tool = [&](std::string_view name) -> const Located& {
        auto it = tools.find(name);
        if (it == tools.end()) it = tools.emplace(std::string(name), locate(name, plain)).first;
        return it->second;
    };
    auto note = [&](std::string text) {
        fmt::print(stderr, "pipespin: {}: {}\n", kCommand, text);
        rep.notes.push_back(std::move(text));
    };
    for (Case& c : all_cases(a.quick ? kQuick : kFull)) {
        if (!a.cases.empty() && std::find(a.cases.begin(), a.cases.end(), c.id) == a.cases.end())
            continue;
        std::vector<std::string> missing;
        for (std::string_view t : c.tools)
            if (!tool(t).path) missing.push_back(tool(t).note);
        if (!missing.empty()) {
            note(fmt::format("skipping {}: {}", c.id, fmt::join(missing, "; ")));
            continue;
        }
        CaseRun run{};
        run.spec = std::move(c);
        run.arms.resize(std::size(kArmKinds));
        run.path = run.spec.figure == Figure::ConsumerCpu ? exe : *tool(run.spec.argv[0]).path;
        rep.runs.push_back(std::move(run));
    }
    for (auto& [name, located] : tools)
        if (located.path && !located.note.empty()) note(located.note);
    std::optional<std::string> gnuplot;
    if (a.plot) {
        gnuplot = tool("gnuplot").path;
        if (!gnuplot) note(fmt::format("no chart: {}", tool("gnuplot").note));
    }
    if (rep.runs.empty())
        throw Failure(kExitSetup,
                      fmt::format("{}: none of the chosen cases can run here", kCommand));
    if (const Located& cat = tool("cat"); cat.path) check_preload(*cat.path, rep.library, envs);

    rep.host = host_facts();
    std::size_t floors = 0;
    for (const CaseRun& run : rep.runs) floors += run.spec.floor != Floor::None ? 1 : 0;
    const std::size_t total = a.rounds * (rep.runs.size() * std::size(kArmKinds) + floors);
    fmt::print(stderr,
               "pipespin: {}: ({} case(s) x {} arms + {} floor(s)) x {} round(s) = {} runs\n",
               kCommand, rep.runs.size(), std::size(kArmKinds), floors, a.rounds, total);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t round = 0; round < a.rounds; ++round) {
        for (CaseRun& run : rep.runs) {
            for (std::size_t i = 0; i < std::size(kArmKinds); ++i) {
                const Sample s = run_once(run, kArmKinds[i], envs.of(kArmKinds[i]));
                run.arms[i].samples.push_back(s);
                ++rep.run_count;
                fmt::print(stderr, "[{:>{}}/{}] round {}/{} {:<16} {:<8} wall {:>9}  CPU {:>9}\n",
                           rep.run_count, std::to_string(total).size(), total, round + 1, a.rounds,
                           run.spec.id, kArmKinds[i].name, seconds_text(s.wall_us),
                           seconds_text(s.cpu_us));
            }
            if (run.spec.floor == Floor::None) continue;
            const double us = run_floor(exe, run, plain);
            run.floor_samples.push_back(us);
            ++rep.run_count;
            fmt::print(stderr, "[{:>{}}/{}] round {}/{} {:<16} {:<8} {} µs per {}\n", rep.run_count,
                       std::to_string(total).size(), total, round + 1, a.rounds, run.spec.id,
                       "floor", per_op_text(us), run.spec.op);
        }
    }
    rep.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rep.host.load_after = load_average();
    for (CaseRun& run : rep.runs) summarize_case(run);

    write_output(markdown_out, markdown(rep));
    if (json_out.file) write_output(json_out, json(rep));
    if (a.plot && gnuplot) draw_plot(rep, *gnuplot, *a.plot, plain);
    return kExitOk;
}

}  // namespace pipespin::cli
