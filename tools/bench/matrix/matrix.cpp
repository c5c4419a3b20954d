// pipespin-bench matrix: whole programs, with and without the shim.
//
// Each case (cases.cpp) is one command line run as a child in the
// environment of each arm (ArmEnvironments in cli/util/environment.h: the
// same hygiene as pipespin pingpong), and measured from outside (run.cpp).
// Arms run interleaved within a round, in a balanced order (arm_order():
// each arm at each place, and after each other arm, equally often), rounds
// one after another, so that a noisy neighbour, and whatever the run
// before leaves behind, hits every arm alike; only medians are compared
// (report.cpp).
//
// A case whose pipe traffic can be done within one thread (the ping-pongs,
// dd | cat) also runs that floor once per round, after its arms (worker
// floor and floor-blocks, no shim): no spin policy makes a run cheaper than
// its floor, which bounds the wall speed-up the case's checks can reach on
// this host (verdict.h).
//
// The tools (perf, hackbench, python3, make, gnuplot) come from Debian
// packages that this command never installs: a case whose tool is missing
// is skipped with a note naming the package. The empty preload arm needs
// libpipespin-empty.so beside the library (the build tree has it; packages
// do not install it): without it the arm is skipped with a note.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "bench/bench.h"
#include "bench/matrix/matrix.h"
#include "cli/util/args.h"
#include "cli/util/library.h"
#include "cli/util/preload_check.h"
#include "cli/util/temp_dir.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"
#include "core/options.h"
#include "platform/sys.h"

namespace pipespin::bench {
namespace {
namespace fs = std::filesystem;
using namespace matrix;

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

// The progress line of one sample.
std::string sample_text(const CaseRun& run, const Sample& s) {
    if (!times_runs(run.spec)) return fmt::format("VmRSS {:.0f} KiB", *s.figure);
    return fmt::format("wall {:>9}  CPU {:>9}  cs {:.0f}+{:.0f}", seconds_text(s.wall_us),
                       seconds_text(s.cpu_us), s.vol_cs, s.invol_cs);
}

int run_matrix(const MatrixArgs& a, Args words) {
    Report rep;
    rep.args = &a;
    rep.command = fmt::format("{} {} {}", kBenchProgram, kCommand,
                              shell_join(std::vector<std::string>(words.begin(), words.end())));
    while (rep.command.back() == ' ') rep.command.pop_back();

    const std::string exe = self_exe();
    rep.library = find_library();
    rep.empty_library = empty_library_beside(rep.library);
    const ArmEnvironments envs(rep.library, a.spin_us, rep.empty_library);
    const Environment& plain = envs.of(kArms[kNoShim]);
    rep.spin_us = a.spin_us.value_or(Options{}.spin_us);
    rep.spin_us_default = !a.spin_us.has_value();

    Output markdown_out = open_output(a.markdown);
    Output json_out = open_output(a.json);
    if (a.plot) {
        const fs::path dir = fs::absolute(*a.plot).parent_path();
        if (::access(dir.c_str(), W_OK) != 0)
            throw Failure(kExitFailure, fmt::format("{}: cannot write {}: {}", kCommand, *a.plot,
                                                    std::strerror(errno)));
    }

    auto note = [&](std::string text) {
        fmt::print(stderr, "{}: {}: {}\n", kBenchProgram, kCommand, text);
        rep.notes.push_back(std::move(text));
    };
    for (std::size_t i = 0; i < kArmCount; ++i) {
        if (kArms[i].empty_preload && !rep.empty_library) {
            note(
                fmt::format("no '{}' arm: {} is not beside {} (the build tree has it; packages "
                            "do not install it)",
                            kArms[i].name, kEmptyLibraryName, rep.library));
            continue;
        }
        rep.arms.push_back(i);
    }

    // Find every tool once; a missing one skips its cases, with a note.
    std::map<std::string, Located, std::less<>> tools;
    auto tool = [&](std::string_view name) -> const Located& {
        auto it = tools.find(name);
        if (it == tools.end())
            it = tools.emplace(std::string(name), locate_tool(name, plain)).first;
        return it->second;
    };
    std::optional<TempDir> workdir;
    for (Case& c : all_cases(a.quick ? kQuick : kFull)) {
        if (!a.cases.empty() && std::find(a.cases.begin(), a.cases.end(), c.id) == a.cases.end())
            continue;
        std::vector<std::string> missing;
        if (sys::usable_cpus() < c.cpus)
            missing.push_back(fmt::format("it needs {} usable CPUs, this process has {}", c.cpus,
                                          sys::usable_cpus()));
        for (std::string_view t : c.tools)
            if (!tool(t).path) missing.push_back(tool(t).note);
        if (!missing.empty()) {
            note(fmt::format("skipping {}: {}", c.id, fmt::join(missing, "; ")));
            continue;
        }
        CaseRun run{};
        run.path = c.worker ? exe : *tool(c.argv[0]).path;
        if (!c.files.empty()) {
            if (!workdir) workdir.emplace("pipespin-matrix");
            prepare_case(c, workdir->path(), run.path, plain);
        }
        run.spec = std::move(c);
        rep.runs.push_back(std::move(run));
    }
    for (auto& [name, located] : tools)
        if (located.path && !located.note.empty()) note(located.note);
    std::optional<std::string> gnuplot;
    if (a.plot && !chart_is_script(*a.plot)) {
        gnuplot = tool("gnuplot").path;
        if (!gnuplot) note(fmt::format("no chart: {}", tool("gnuplot").note));
    }
    if (rep.runs.empty())
        throw Failure(kExitSetup,
                      fmt::format("{}: none of the chosen cases can run here", kCommand));
    if (const Located& cat = tool("cat"); cat.path) check_preload(*cat.path, rep, envs);
    for (const CaseRun& run : rep.runs)
        if (run.spec.figure == Figure::RssKib) rep.bss_bytes = elf_bss_bytes(rep.library);

    rep.host = host_facts();
    std::size_t floors = 0;
    for (const CaseRun& run : rep.runs) floors += run.spec.floor != Floor::None ? 1 : 0;
    const std::size_t total = a.rounds * (rep.runs.size() * rep.arms.size() + floors);
    fmt::print(stderr, "{}: {}: ({} case(s) x {} arms + {} floor(s)) x {} round(s) = {} runs\n",
               kBenchProgram, kCommand, rep.runs.size(), rep.arms.size(), floors, a.rounds, total);
    const int width = static_cast<int>(std::to_string(total).size());
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t round = 0; round < a.rounds; ++round) {
        for (CaseRun& run : rep.runs) {
            for (std::size_t k = 0; k < rep.arms.size(); ++k) {
                const std::size_t i = rep.arms[arm_order(round, k, rep.arms.size())];
                const Sample s = run_once(run, kArms[i], envs.of(kArms[i]));
                run.arms[i].samples.push_back(s);
                ++rep.run_count;
                fmt::print(stderr, "[{:>{}}/{}] round {}/{} {:<16} {:<13} {}\n", rep.run_count,
                           width, total, round + 1, a.rounds, run.spec.id, kArms[i].name,
                           sample_text(run, s));
            }
            if (run.spec.floor == Floor::None) continue;
            const double us = run_floor(exe, run, plain);
            run.floor_samples.push_back(us);
            ++rep.run_count;
            fmt::print(stderr, "[{:>{}}/{}] round {}/{} {:<16} {:<13} {} µs per {}\n",
                       rep.run_count, width, total, round + 1, a.rounds, run.spec.id, "floor",
                       per_op_text(us), run.spec.op);
        }
    }
    rep.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rep.host.load_after = load_average();
    for (CaseRun& run : rep.runs) summarize_case(run, rep.arms);

    write_output(markdown_out, markdown(rep));
    if (json_out.file) write_output(json_out, json(rep));
    if (a.plot && (gnuplot || chart_is_script(*a.plot)))
        write_chart(kCommand, matrix_chart(rep), *a.plot, gnuplot, plain);
    return kExitOk;
}

}  // namespace

Action define_matrix(CLI::App& app) {
    auto a = std::make_shared<MatrixArgs>();
    app.description(fmt::format(
        "Run whole programs in five configurations, interleaved round after round: no "
        "shim, an empty preload ({}, a library with one symbol, found beside the library; "
        "without it that arm is skipped), and the shim in modes off, fixed and adaptive.\n"
        "The cases: perf bench sched pipe (processes, threads; each run placed by its "
        "involuntary context switches: its two ends on one CPU, on two, or mixed, and the "
        "arms compared within the first two, where spinning cannot help and where it can), "
        "hackbench -p with 1, 2 and "
        "4 groups and streaming, dd | cat, seq | wc -l, a sparse producer whose consumer's "
        "CPU is measured, a reader of a byte every 2 ms with both ends pinned to one CPU "
        "(wakeup-same) or to two (wakeup-spread), its run time per read measured, bash "
        "command substitution (each run placed by its voluntary "
        "context switches: on one CPU, on two, or mixed; the arms are compared within the "
        "first two too), xargs -P2, a recursive make -j4 sharing its jobserver pipe, posix_spawn "
        "of /bin/true (each paired with one without any preload), fork (each paired with one "
        "in a twin without any preload), a Python os.pipe ping-pong whose two ends note the "
        "CPU they run on (each round is grouped by the placement its no-shim run saw: "
        "co-located, spread or mixed), and the footprint (VmRSS of a sleeping `sleep 1` per "
        "arm, and the library's bss).\n"
        "Reports, as Markdown on stdout or in FILE, the median wall and CPU time and "
        "voluntary and involuntary context switches (of the whole process tree, from wait4), "
        "the ratios to no shim, per-operation figures, what each arm adds to process start "
        "and fork, the placements, and the acceptance checks. The perf bench and dd | cat "
        "cases also run their floor each round, the same pipe traffic within one thread "
        "without the shim: no-shim median wall / (operations x floor median per operation) "
        "bounds the wall speed-up any spinning could reach here, and a speed-up check whose "
        "threshold is above that bound reads \"unreachable here\" where it would read FAIL. "
        "A check whose value is a statistic of the rounds (a ratio of medians, a difference "
        "in µs) also shows its 95% interval, a bootstrap over the rounds resampled as wholes "
        "(seed 1, so a report is reproducible): where it includes the threshold, the result "
        "adds \"(interval includes the threshold)\", a verdict this run cannot settle.\n"
        "Needs perf (Debian package linux-perf), hackbench (rt-tests), python3, make and for "
        "a PNG gnuplot (gnuplot-nox); installs nothing: a case whose tool is missing is "
        "skipped with a note, and the exit status is {} when no case can run. Progress goes "
        "to stderr.",
        kEmptyLibraryName, kExitSetup));
    add_rounds_options(app, a->quick, a->rounds);
    add_name_list(app, "--cases", "case", case_ids(), a->cases,
                  fmt::format("the cases to run (default: all): {}", fmt::join(case_ids(), ", ")));
    add_setting(app, option_spec(OptionId::SpinUs), a->spin_us,
                "the shim's spin_us in every shim arm");
    add_file(app, "--markdown", a->markdown, "write the report here, not to stdout");
    add_file(app, "--json", a->json, "also write every sample and figure as JSON");
    add_file(app, "--plot", a->plot,
             "draw the wall ratios with gnuplot as a PNG (a FILE ending in .gp gets the "
             "gnuplot script instead, data included, which draws the PNG of the same name)");
    return [a](Args words) { return run_matrix(*a, words); };
}

}  // namespace pipespin::bench
