// pipespin-bench coverage: does the shim reach the waits of real programs?
//
// Each program of a list runs on a pipe, with and without the shim, rounds
// interleaved: filters as a relay (a ping-pong through the program: it is the
// consumer of one pipe and the producer of another; worker relay),
// the rest as the consumer of a paced producer (worker feed), and the
// benchmarks that make their own pipes as they are. The worker never has the
// shim; only the program does. For each program the report says whether it
// is dynamically linked (a static one is "not shimmable": the loader does
// not preload into it), whether the shim engaged by its own counters (spins
// in the program's processes, and through which hooks), whether the output
// was identical in every run of both arms, and the speedup of the median
// wall time. Programs that are not installed are reported as missing.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench.h"
#include "bench/coverage/coverage.h"
#include "cli/stats/lines.h"
#include "cli/util/args.h"
#include "cli/util/library.h"
#include "cli/util/preload_check.h"
#include "cli/util/spawn.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"
#include "core/stats.h"

namespace pipespin::bench {
namespace coverage {

namespace {
namespace fs = std::filesystem;

// ---- what the shim says about a run ------------------------------------------

// The one place that reads the shim's own account of a run: the statistics
// lines its processes appended to PIPESPIN_STATS (one file per run), the
// last line of each process image (cli/stats/lines.h), with the spins per hook
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

// ---- running ------------------------------------------------------------------

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
        argv = {std::string(kBenchProgram), "worker", p.role == Role::Relay ? "relay" : "feed"};
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
    if (!exited_ok(m.wait_status)) {
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

int run_all(const CoverageArgs& a, Args raw) {
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
        const std::optional<std::string> path = locate_tool(p.argv[0], Environment::current()).path;
        if (!path) {
            r.status = fmt::format("missing (Debian package {})", package_of(p.argv[0]));
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

    std::vector<std::string> words{std::string(kBenchProgram), std::string(kCommand)};
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
    for (const Row& r : rows) failed += row_ok(r) ? 0 : 1;
    if (failed > 0)
        fmt::print(stderr,
                   "{}: coverage: {} program(s) did not engage the shim or gave "
                   "different output\n",
                   kBenchProgram, failed);
    return failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace
}  // namespace coverage

using namespace coverage;

Action define_coverage(CLI::App& app) {
    auto a = std::make_shared<CoverageArgs>();
    app.description(fmt::format(
        "Run real programs on pipes, with and without the shim, rounds interleaved: filters as "
        "a relay (a ping-pong of lines through the program), the others as the consumer of a "
        "paced producer ({} bytes every {} µs, every {} µs for compressed input, 500 µs for "
        "xz), the benchmarks on their own pipes.\n"
        "Reports, as a Markdown table on stdout (and in FILE), for each program: dynamically "
        "linked or not (static: not shimmable), whether the shim engaged by its own counters "
        "(spins, by hook family), whether the output was identical in every run, and the "
        "speedup of the median wall time. Programs not installed are reported as missing. "
        "Exit status {} when a program that ran did not engage the shim or gave different "
        "output.",
        kChunk, kGapUs, kCompressedGapUs, kExitFailure));
    add_name_list(
        app, "--programs", "program", program_ids(), a->programs,
        fmt::format("the programs to run (default: all): {}", fmt::join(program_ids(), ", ")));
    add_rounds_options(app, a->quick, a->rounds);
    app.add_option_function<std::string>(
           "--mode",
           [a](const std::string& text) {
               a->mode =
                   static_cast<Mode>(parse_flag_value(kCommand, option_spec(OptionId::Mode), text));
           },
           "the shim's mode: fixed, so that 'engaged' shows whether the hooks reach the waits "
           "(adaptive may rightly decline to spin on a busy host)")
        ->type_name(std::string(value_hint(option_spec(OptionId::Mode))))
        ->default_str(std::string(name_of(Mode::Fixed)));
    app.add_option_function<std::string>(
           "--gap-us",
           [a](const std::string& text) {
               a->gap_us = parse_count(kCommand, "--gap-us", text, 0, 1'000'000);
           },
           "the producer's pause, and the relay's after each answer (by default it answers at "
           "once): on a busy host, where the two sides may share a CPU and never wait, a pause "
           "of a few ms makes every read wait")
        ->type_name("US");
    add_file(app, "--markdown", a->markdown, "also write the table to FILE");
    return [a](Args words) { return run_all(*a, words); };
}

}  // namespace pipespin::bench
