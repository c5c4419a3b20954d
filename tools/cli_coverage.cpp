// pipespin coverage: does the shim reach the waits of real programs?
//
// Each program of a list runs on a pipe, with and without the shim, rounds
// interleaved: filters as a relay (a ping-pong through the program: it is the
// consumer of one pipe and the producer of another; bench-worker relay),
// the rest as the consumer of a paced producer (bench-worker feed), and the
// benchmarks that make their own pipes as they are. The worker never has the
// shim; only the program does. For each program the report says whether it
// is dynamically linked (a static one is "not shimmable": the loader does
// not preload into it), whether the shim engaged by its own counters (spins
// in the program's processes, and through which hooks), whether the output
// was identical in every run of both arms, and the speedup of the median
// wall time. Programs that are not installed are reported as missing.
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "common.h"
#include "core/options.h"
#include "core/stats.h"
#include "platform/sys.h"
#include "stats_lines.h"

namespace pipespin::cli {
namespace {
namespace fs = std::filesystem;

constexpr std::string_view kCommand = "coverage";
constexpr std::uint64_t kDefaultRounds = 5;

enum class Role { Relay, Feed, Own };
enum class Input { None, Text, Gzip, Xz, Zstd, Tar };

struct Program {
    std::string id;
    std::vector<std::string> argv;  // argv[0] is resolved on PATH
    Role role;
    Input input = Input::None;
    std::string_view package;  // Debian package, for "missing"
    std::uint64_t gap_us = 0;  // feed: the producer's pause; 0: by input
};

struct Scale {
    std::uint64_t relay_lines, text_lines, perf_loops, hackbench_loops;
};
constexpr Scale kFull{2000, 100'000, 20'000, 200};
constexpr Scale kQuick{200, 5'000, 2'000, 20};
// The paced producer: this many bytes every this many µs. The consumer
// finds the pipe empty between chunks, for less than a spin budget. A
// decompressor does more work per byte: it gets them 5 times slower, or it
// would never wait.
constexpr std::uint64_t kChunk = 1024, kGapUs = 20, kCompressedGapUs = 100;

std::vector<Program> all_programs(const Scale& s) {
    const std::string n = std::to_string(s.perf_loops);
    return {
        {"cat", {"cat"}, Role::Relay, Input::None, "coreutils"},
        {"wc", {"wc", "-l"}, Role::Feed, Input::Text, "coreutils"},
        {"grep", {"grep", "--line-buffered", "line"}, Role::Relay, Input::None, "grep"},
        {"sed", {"sed", "-u", "s/line/LINE/"}, Role::Relay, Input::None, "sed"},
        {"sort", {"sort", "-r"}, Role::Feed, Input::Text, "coreutils"},
        // mawk reads ahead to fill its buffer unless -W interactive.
        {"awk", {"awk", "-W", "interactive", "{ print $2 }"}, Role::Relay, Input::None, "mawk"},
        {"gzip", {"gzip", "-dc"}, Role::Feed, Input::Gzip, "gzip"},
        // xz decodes some 20 MB/s here: slower still, or it never waits.
        {"xz", {"xz", "-dc"}, Role::Feed, Input::Xz, "xz-utils", 500},
        {"zstd", {"zstd", "-dcq"}, Role::Feed, Input::Zstd, "zstd"},
        {"tar", {"tar", "-xOf", "-"}, Role::Feed, Input::Tar, "tar"},
        {"python3",
         {"python3", "-u", "-c", "import sys; [sys.stdout.write(l) for l in sys.stdin]"},
         Role::Relay,
         Input::None,
         "python3"},
        {"perl", {"perl", "-ne", "$| = 1; print"}, Role::Relay, Input::None, "perl"},
        {"bash-read",
         {"bash", "-c", "while IFS= read -r l; do printf '%s\\n' \"$l\"; done"},
         Role::Relay,
         Input::None,
         "bash"},
        {"perf-pipe",
         {"perf", "bench", "sched", "pipe", "-l", n},
         Role::Own,
         Input::None,
         "linux-perf"},
        {"hackbench",
         {"hackbench", "-p", "-g", "1", "-f", "5", "-l", std::to_string(s.hackbench_loops)},
         Role::Own,
         Input::None,
         "rt-tests"},
    };
}

std::vector<std::string> program_ids() {
    std::vector<std::string> ids;
    for (const Program& p : all_programs(kFull)) ids.push_back(p.id);
    return ids;
}

struct CoverageArgs {
    bool help = false, quick = false;
    std::uint64_t rounds = kDefaultRounds;
    std::vector<std::string> programs;  // empty: all
    std::optional<std::string> markdown;
    std::optional<std::uint64_t> gap_us;  // unset: kGapUs (feed), none (relay)
    // fixed: "engaged" then says whether the hooks reach the waits, not what
    // the adaptive policy thinks of this host's load at the moment.
    Mode mode = Mode::Fixed;
};

CoverageArgs parse(ArgCursor& cur) {
    CoverageArgs a;
    while (!cur.done()) {
        if (cur.take_flag("--help") || cur.take_flag("-h")) {
            a.help = true;
            return a;
        }
        if (cur.take_flag("--quick")) {
            a.quick = true;
        } else if (auto v = cur.take_value("--rounds")) {
            a.rounds = parse_count(kCommand, "--rounds", *v, 1, 1000);
        } else if (auto v = cur.take_value("--gap-us")) {
            a.gap_us = parse_count(kCommand, "--gap-us", *v, 0, 1'000'000);
        } else if (auto v = cur.take_value("--mode")) {
            a.mode = static_cast<Mode>(parse_flag_value(kCommand, option_spec(OptionId::Mode), *v));
        } else if (auto v = cur.take_value("--markdown")) {
            if (v->empty()) throw UsageError("coverage: --markdown needs a file name");
            a.markdown = std::string(*v);
        } else if (auto v = cur.take_value("--programs")) {
            parse_name_list(kCommand, "--programs", "program", *v, program_ids(), a.programs);
        } else {
            cur.fail_unknown();
        }
    }
    return a;
}

// ---- what the shim says about a run ------------------------------------------

struct ShimCounters {
    int processes = 0;  // process images that wrote a statistics line
    std::uint64_t waits = 0, spins = 0, spin_hits = 0;
    std::map<std::string, std::uint64_t> spins_by_hook;  // "stdio" -> spins
    void add(const ShimCounters& o) {
        processes += o.processes;
        waits += o.waits;
        spins += o.spins;
        spin_hits += o.spin_hits;
        for (const auto& [hook, n] : o.spins_by_hook) spins_by_hook[hook] += n;
    }
};

// The one place that reads the shim's own account of a run: the statistics
// lines its processes appended to PIPESPIN_STATS (one file per run), the
// last line of each process image (stats_lines.h), with the spins per hook
// family from their "via" objects.
ShimCounters read_shim_counters(const fs::path& stats_file) {
    ShimCounters c;
    std::error_code ec;
    if (!fs::exists(stats_file, ec)) return c;  // no process of the program wrote one
    const LoadedStats loaded = load_stats({stats_file.string()});
    if (loaded.bad_lines > 0)
        throw Failure(kExitFailure,
                      fmt::format("coverage: the shim's statistics: {}", loaded.first_problem));
    for (const ProcessRecord& r : loaded.records) {
        ++c.processes;
        const Counters t = r.counters.total();
        c.waits += t.waits;
        c.spins += t.spins;
        c.spin_hits += t.spin_hits;
        for (int h = 0; h < kViaCount; ++h)
            c.spins_by_hook[std::string(via_name(static_cast<Via>(h)))] += r.counters.via[h].spins;
    }
    return c;
}

// ---- inputs -------------------------------------------------------------------

struct Inputs {
    fs::path dir;
    std::map<Input, fs::path> files;
    std::map<Input, std::string> problems;  // why an input could not be made
    ~Inputs() {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
    }
};

void make_inputs(Inputs& in, const Scale& s, const Environment& env) {
    char tmpl[] = "/tmp/pipespin-coverage.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr)
        throw Failure(kExitFailure, fmt::format("coverage: mkdtemp: {}", std::strerror(errno)));
    in.dir = tmpl;
    const fs::path text = in.dir / "text.txt";
    {
        std::ofstream out(text);
        // Half of each line is noise, so that compressed input is not tiny.
        std::uint64_t x = 0x9e3779b97f4a7c15ull;
        for (std::uint64_t i = 0; i < s.text_lines; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out << fmt::format("line {:06d} {:016x}\n", i, x);
        }
    }
    in.files[Input::Text] = text;
    auto compress = [&](Input kind, std::string_view tool, std::vector<std::string> argv,
                        std::string_view ext) {
        const std::optional<std::string> path = resolve_command(tool);
        if (!path) return;  // the program itself is reported missing
        const fs::path target = in.dir / fmt::format("text.{}", ext);
        Measured m = spawn_measure(*path, argv, env, {.null_stdin = true, .capture_stderr = true});
        if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0) {
            in.problems[kind] =
                fmt::format("'{}' {}", shell_join(argv), describe_wait_status(m.wait_status));
            return;
        }
        if (kind != Input::Tar) std::ofstream(target, std::ios::binary) << m.out;
        in.files[kind] = kind == Input::Tar ? in.dir / "text.tar" : target;
    };
    compress(Input::Gzip, "gzip", {"gzip", "-c", text.string()}, "gz");
    compress(Input::Xz, "xz", {"xz", "-c", text.string()}, "xz");
    compress(Input::Zstd, "zstd", {"zstd", "-qc", text.string()}, "zst");
    compress(Input::Tar, "tar",
             {"tar", "-cf", (in.dir / "text.tar").string(), "-C", in.dir.string(), "text.txt"},
             "tar");
}

// ---- running ------------------------------------------------------------------

struct Sample {
    double wall_us = 0;
    std::string output;  // a hash of what the program wrote (digits masked for Own)
    ShimCounters shim;
};

struct Row {
    Program spec;
    std::string path;
    std::string status;  // "dynamic", or why it did not run
    bool ran = false;
    std::vector<Sample> arms[2];  // [0] no shim, [1] shim
};

// Timings differ from run to run: compare the text with every number
// (digits, with any '.' between them) replaced by '#' and every run of
// blanks by one (numbers are right-aligned).
std::string masked(std::string_view out) {
    std::string m;
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    for (std::size_t i = 0; i < out.size();) {
        if (out[i] == ' ') {
            while (i < out.size() && out[i] == ' ') ++i;
            m += ' ';
            continue;
        }
        if (!digit(out[i])) {
            m += out[i++];
            continue;
        }
        while (i < out.size() &&
               (digit(out[i]) || (out[i] == '.' && i + 1 < out.size() && digit(out[i + 1]))))
            ++i;
        m += '#';
    }
    return m;
}

Sample run_once(const Row& row, bool shim, const std::string& exe, const std::string& library,
                const Inputs& inputs, const Scale& scale, const CoverageArgs& args,
                const Environment& plain, const Environment& shimmed) {
    const Program& p = row.spec;
    std::vector<std::string> argv;
    std::string path;
    const Environment* env = &plain;
    if (p.role == Role::Own) {
        argv = p.argv;
        path = row.path;
        if (shim) env = &shimmed;
    } else {
        argv = {"pipespin", "bench-worker", p.role == Role::Relay ? "relay" : "feed"};
        if (shim) argv.insert(argv.end(), {"--preload", library});
        if (p.role == Role::Relay) {
            if (args.gap_us) argv.insert(argv.end(), {"--gap-us", std::to_string(*args.gap_us)});
            argv.push_back(std::to_string(scale.relay_lines));
        } else {
            const std::uint64_t gap = p.gap_us != 0            ? p.gap_us
                                      : p.input == Input::Text ? kGapUs
                                                               : kCompressedGapUs;
            argv.insert(argv.end(), {"--chunk", std::to_string(kChunk), "--gap-us",
                                     std::to_string(args.gap_us.value_or(gap)),
                                     inputs.files.at(p.input).string()});
        }
        argv.emplace_back("--");
        argv.push_back(row.path);
        argv.insert(argv.end(), p.argv.begin() + 1, p.argv.end());
        path = exe;
        if (shim) env = &shimmed;  // the worker drops the shim from itself: see below
    }
    // The shim's statistics lines for this run alone.
    static std::uint64_t run_number = 0;
    const fs::path stats_file = inputs.dir / fmt::format("stats-{}.jsonl", run_number++);
    Environment run_env = *env;
    if (shim) run_env.set("PIPESPIN_STATS", stats_file.string());
    const Measured m =
        spawn_measure(path, argv, run_env, {.null_stdin = true, .capture_stderr = true});
    if (!WIFEXITED(m.wait_status) || WEXITSTATUS(m.wait_status) != 0) {
        std::string_view err = m.err;
        if (err.size() > 2000) err = err.substr(err.size() - 2000);
        throw Failure(kExitFailure, fmt::format("coverage: {} ({}) {}; stderr:\n{}", p.id,
                                                shim ? "shim" : "no shim",
                                                describe_wait_status(m.wait_status), err));
    }
    Sample s;
    if (shim) {
        s.shim = read_shim_counters(stats_file);
        std::error_code ec;
        fs::remove(stats_file, ec);
    }
    if (p.role == Role::Own) {
        s.wall_us = m.wall_us;
        s.output = masked(m.out);
    } else {
        // "WALL_US HASH BYTES"
        const std::size_t sp = m.out.find(' ');
        const std::optional<double> wall =
            parse_decimal(std::string_view(m.out).substr(0, sp == std::string::npos ? 0 : sp));
        if (!wall)
            throw Failure(kExitFailure, fmt::format("coverage: {}: the worker printed '{}'", p.id,
                                                    printable(m.out)));
        s.wall_us = *wall;
        s.output = m.out.substr(sp + 1);
    }
    return s;
}

// ---- the report -----------------------------------------------------------------

std::string role_text(Role r) {
    switch (r) {
        case Role::Relay:
            return "relay: consumer and producer";
        case Role::Feed:
            return "consumer of a paced producer";
        case Role::Own:
            return "its own pipes";
    }
    return "";
}

struct Verdict {
    std::string engaged, output, no_shim, shim, speedup;
    bool ok = true;  // engaged and identical (or did not run)
};

std::string ms_text(double us) {
    return us >= 1e6 ? fmt::format("{:.2f} s", us / 1e6) : fmt::format("{:.1f} ms", us / 1e3);
}

Verdict judge(const Row& row) {
    Verdict v;
    if (!row.ran) return v;
    ShimCounters total;
    for (const Sample& s : row.arms[1]) total.add(s.shim);
    std::vector<std::string> hooks;
    for (const auto& [hook, n] : total.spins_by_hook)
        if (n > 0) hooks.push_back(fmt::format("{} {}", hook, n));
    const bool engaged = total.spins > 0;
    v.engaged = engaged ? fmt::format("yes: {} spins ({})", total.spins, fmt::join(hooks, ", "))
                        : fmt::format("NO ({} processes, {} waits)", total.processes, total.waits);
    bool same = true;
    const std::string& first = row.arms[0].front().output;
    for (const auto& arm : row.arms)
        for (const Sample& s : arm) same = same && s.output == first;
    v.output = same ? (row.spec.role == Role::Own ? "identical (timings masked)" : "identical")
                    : "DIFFERENT";
    std::vector<double> walls[2];
    for (int a = 0; a < 2; ++a)
        for (const Sample& s : row.arms[a]) walls[a].push_back(s.wall_us);
    const double base = summarize(walls[0]).median, with = summarize(walls[1]).median;
    v.no_shim = ms_text(base);
    v.shim = ms_text(with);
    v.speedup = with > 0 ? fmt::format("{:.2f}x", base / with) : "?";
    v.ok = engaged && same;
    return v;
}

// A table cell: '|' would end it.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += '\\';
        out += c == '\n' ? ' ' : c;
    }
    return out;
}

std::string markdown(const std::vector<Row>& rows, const std::string& command,
                     const CoverageArgs& a, const std::string& library) {
    utsname u{};
    ::uname(&u);
    std::string out = fmt::format(
        "Produced by `{}` ({} rounds, no shim and shim interleaved; shim mode {}; library "
        "{}; kernel {}, {} usable CPUs).\n\n",
        command, a.rounds, name_of(a.mode), library, u.release, sys::usable_cpus());
    out +=
        "| program | command | role | linked | engaged (spins, by hook) | output | no shim | "
        "shim | speedup |\n|---|---|---|---|---|---|---:|---:|---:|\n";
    for (const Row& r : rows) {
        const Verdict v = judge(r);
        out += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.spec.id,
                           cell(shell_join(r.spec.argv)), role_text(r.spec.role), cell(r.status),
                           v.engaged, v.output, v.no_shim, v.shim, v.speedup);
    }
    return out;
}

int coverage(const CoverageArgs& a, Args raw) {
    const Scale& scale = a.quick ? kQuick : kFull;
    const std::string exe = self_exe();
    const std::string library = find_library();
    const ArmEnvironments envs(library, std::nullopt);
    const Environment plain = envs.of(kArmKinds[0]);
    // Own programs: the shim in LD_PRELOAD; relay and feed: the worker gets
    // the plain environment plus PIPESPIN_MODE (and, per run, PIPESPIN_STATS),
    // which it hands on to the program with --preload (it never preloads
    // itself).
    Environment own_shim = envs.of(kArmKinds[3]);
    own_shim.set("PIPESPIN_MODE", name_of(a.mode));
    Environment worker_shim = plain;
    worker_shim.set("PIPESPIN_MODE", *own_shim.get("PIPESPIN_MODE"));

    std::vector<Row> rows;
    for (const Program& p : all_programs(scale)) {
        if (!a.programs.empty() &&
            std::find(a.programs.begin(), a.programs.end(), p.id) == a.programs.end())
            continue;
        Row r{p, "", "", false, {}};
        std::string note;
        std::optional<std::string> path =
            p.argv[0] == "perf" ? locate_tool("perf", &note) : resolve_command(p.argv[0]);
        if (!path) {
            r.status = fmt::format("missing (Debian package {})", p.package);
        } else if (std::vector<std::string> why = preload_obstacles(*path); !why.empty()) {
            r.path = *path;
            r.status = fmt::format("not shimmable: {}", fmt::join(why, "; "));
        } else {
            r.path = *path;
            r.status = "dynamic";
            r.ran = true;
        }
        rows.push_back(std::move(r));
    }

    Inputs inputs;
    make_inputs(inputs, scale, plain);
    for (Row& r : rows) {
        if (r.ran && r.spec.input != Input::None && !inputs.files.contains(r.spec.input)) {
            r.ran = false;
            r.status = fmt::format("no input: {}", inputs.problems[r.spec.input]);
        }
    }
    const bool progress = ::isatty(STDERR_FILENO);
    for (std::uint64_t round = 0; round < a.rounds; ++round) {
        for (Row& r : rows) {
            if (!r.ran) continue;
            if (progress)
                fmt::print(stderr, "\rround {}/{} {:<12}", round + 1, a.rounds, r.spec.id);
            for (int arm = 0; arm < 2; ++arm)
                r.arms[arm].push_back(run_once(r, arm == 1, exe, library, inputs, scale, a, plain,
                                               r.spec.role == Role::Own ? own_shim : worker_shim));
        }
    }
    if (progress) fmt::print(stderr, "\r{:40}\r", "");

    std::vector<std::string> words{"pipespin", "coverage"};
    for (char* w : raw) words.emplace_back(w);
    const std::string table = markdown(rows, shell_join(words), a, library);
    if (a.markdown) {
        std::ofstream out(*a.markdown);
        out << table;
        if (!out)
            throw Failure(kExitFailure, fmt::format("coverage: cannot write {}", *a.markdown));
    }
    std::fputs(table.c_str(), stdout);
    int failed = 0;
    for (const Row& r : rows) failed += judge(r).ok ? 0 : 1;
    if (failed > 0)
        fmt::print(stderr,
                   "pipespin: coverage: {} program(s) did not engage the shim or gave "
                   "different output\n",
                   failed);
    return failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

std::string coverage_usage() {
    return usage_entry(
        "  pipespin coverage [--programs LIST] [--rounds R] [--quick] [--mode MODE]\n"
        "                    [--gap-us US] [--markdown FILE]\n",
        fmt::format("Run real programs on pipes, with and without the shim, rounds interleaved: "
                    "filters as a relay (a ping-pong of lines through the program), the others "
                    "as the consumer of a paced producer ({} bytes every {} µs, every {} µs for "
                    "compressed input, 500 µs for xz), the "
                    "benchmarks on their own pipes. --gap-us sets the producer's pause, and "
                    "makes the relay pause as long after each answer (by default it answers at "
                    "once): on a busy host, where the two sides may share a CPU and never "
                    "wait, a pause of a few ms makes every read wait. Reports, as a Markdown table "
                    "on stdout "
                    "(and in FILE), for each program: dynamically linked or not (static: not "
                    "shimmable), whether the shim engaged by its own counters (spins, by "
                    "hook family), whether the output was identical in every run, and the "
                    "speedup of the median wall time. LIST is comma-separated: {}. Programs "
                    "not installed are reported as missing. --mode sets the shim's mode "
                    "(default fixed, so that 'engaged' shows whether the hooks reach the "
                    "waits; adaptive may rightly decline to spin on a busy host). --quick scales "
                    "the runs down. Default: {} rounds. Exit "
                    "status {} when a program that ran did not engage the shim or gave "
                    "different output.",
                    kChunk, kGapUs, kCompressedGapUs, fmt::join(program_ids(), ", "),
                    kDefaultRounds, kExitFailure));
}

int coverage_main(Args args) {
    ArgCursor cur("coverage", args);
    const CoverageArgs a = parse(cur);
    if (a.help) {
        std::fputs(full_usage().c_str(), stdout);
        return kExitOk;
    }
    return coverage(a, args);
}

}  // namespace pipespin::cli
