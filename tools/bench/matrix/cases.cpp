// matrix's case catalogue: what each case runs, at which scale, and
// what it needs before it runs: perf bench and hackbench for ping-pong and
// fan-out, pipelines (dd | cat, seq | wc), a sparse producer and a sparse
// reader pinned per placement, the
// short-lived pipes and processes of shells and make, a Python ping-pong
// whose placement matters, and the shim's start-up footprint.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/bench.h"
#include "bench/matrix/matrix.h"
#include "cli/util/spawn.h"
#include "cli/worker.h"

namespace pipespin::bench::matrix {
namespace fs = std::filesystem;

const Scale kFull{.perf_loops = 20'000,
                  .hackbench_loops = 500,
                  .stream_loops = 400'000,
                  .dd_blocks = 40'000,
                  .seq_lines = 10'000'000,
                  .sparse_bytes = 500,
                  .shell_loops = 2'000,
                  .make_dirs = 16,
                  .make_recipes = 100,
                  .spawns = 600,
                  .forks = 5'000,
                  .py_round_trips = 10'000,
                  .wakeup_reads = 500};
const Scale kQuick{.perf_loops = 2'000,
                   .hackbench_loops = 50,
                   .stream_loops = 40'000,
                   .dd_blocks = 4'000,
                   .seq_lines = 1'000'000,
                   .sparse_bytes = 100,
                   .shell_loops = 50,
                   .make_dirs = 4,
                   .make_recipes = 10,
                   .spawns = 20,
                   .forks = 100,
                   .py_round_trips = 500,
                   .wakeup_reads = 100};

namespace {

// hackbench's default: each group has 20 senders and 20 receivers (-f).
constexpr std::uint64_t kHackbenchFds = 20;
// make-j's jobs: `make -j4`, a typical parallel build on a small host.
constexpr int kMakeJobs = 4;

// The Python ping-pong: a forked child echoes each byte of one
// os.pipe into another; N round trips after N/10 of warm-up, timed by the
// parent. Every N/100th round trip both sides note the CPU they run on
// (sched_getcpu through ctypes: no syscall, from the vDSO or rseq; else
// /proc/thread-self/stat field 39), the parent before its write, the child
// after its read, so that each pair of notes is of one moment of one round
// trip. It prints "µs-per-round-trip same total": how many of the `total`
// pairs found both on one CPU.
constexpr std::string_view kPyPingpong = R"(import os, sys, time
n = int(sys.argv[1])
warm, every = n // 10, max(1, n // 100)
try:
    import ctypes
    cpu = ctypes.CDLL(None).sched_getcpu
except (ImportError, OSError, AttributeError):
    def cpu():
        with open('/proc/thread-self/stat', 'rb') as f:
            return int(f.read().rsplit(b')', 1)[1].split()[36])
a_r, a_w = os.pipe()
b_r, b_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(a_w)
    os.close(b_r)
    seen, i = [], -warm
    while True:
        c = os.read(a_r, 1)
        if not c:
            break
        if i >= 0 and i % every == 0:
            seen.append(cpu())
        os.write(b_w, c)
        i += 1
    os.write(b_w, ' '.join(map(str, seen)).encode())
    os._exit(0)
os.close(a_r)
os.close(b_w)
for _ in range(warm):
    os.write(a_w, b'x')
    os.read(b_r, 1)
mine = []
t0 = time.perf_counter()
for i in range(n):
    if i % every == 0:
        mine.append(cpu())
    os.write(a_w, b'x')
    os.read(b_r, 1)
t1 = time.perf_counter()
os.close(a_w)
rest = b''
while True:
    d = os.read(b_r, 65536)
    if not d:
        break
    rest += d
_, status = os.waitpid(pid, 0)
theirs = [int(x) for x in rest.split()]
if status != 0 or len(theirs) != len(mine):
    sys.exit('py-pingpong: the peer ended with status %d and sent %d CPU samples for %d'
             % (status, len(theirs), len(mine)))
print('%.4f %d %d' % ((t1 - t0) / n * 1e6, sum(a == b for a, b in zip(mine, theirs)), len(mine)))
)";

std::string_view floor_loop(Floor f) {
    return f == Floor::RoundTrips ? "floor" : "floor-blocks";
}

std::string words(std::string_view prefix, std::uint64_t from, std::uint64_t to) {
    std::string out;
    for (std::uint64_t i = from; i <= to; ++i) out += fmt::format(" {}{}", prefix, i);
    return out;
}

// make-j's tree: a top Makefile that runs one sub-make per directory, each
// with `recipes` phony targets whose recipe is `true` (make runs it without a
// shell: one fork and exec per recipe). All share the top make's jobserver.
std::vector<CaseFile> makefiles(std::uint64_t dirs, std::uint64_t recipes) {
    std::vector<CaseFile> out{
        {"Makefile", fmt::format("SUBDIRS :={}\n.PHONY: all $(SUBDIRS)\nall: $(SUBDIRS)\n"
                                 "$(SUBDIRS):\n\t+@$(MAKE) -s -C $@\n",
                                 words("d", 1, dirs))}};
    const std::string sub = fmt::format("T :={}\n.PHONY: all $(T)\nall: $(T)\n$(T):\n\t@true\n",
                                        words("t", 1, recipes));
    for (std::uint64_t d = 1; d <= dirs; ++d) out.push_back({fmt::format("d{}/Makefile", d), sub});
    return out;
}

}  // namespace

std::vector<Case> all_cases(const Scale& s) {
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    std::vector<Case> out;
    for (bool threads : {false, true}) {
        Case c{
            .id = threads ? "perf-threads" : "perf-pipe",
            .argv = {"perf", "bench", "sched", "pipe", "-l", n(s.perf_loops)},
            .about = threads ? "ping-pong between two threads" : "ping-pong between two processes",
            .ops = s.perf_loops,
            .op = "round trip",
            .tools = {"perf"},
            .figure = Figure::PerfUsecsPerOp,
            .floor = Floor::RoundTrips,
            // Runs split in two, in every arm, and the scheduler picks per
            // run. Both ends on one CPU: the woken end preempts the writer
            // before its read blocks, 0.83-0.87 involuntary switches per
            // round trip (and 1.13-1.18 voluntary) in every arm, a spin
            // hitting nothing there. On two CPUs: 0.001-0.085 involuntary
            // (time-slice preemptions by other work, more the slower the
            // run), and voluntary 2.0 without a spin but 0.002-1.96 with
            // fixed or adaptive, as their spins hit or miss: the voluntary
            // switches cannot place the runs of every arm alike.
            // `perf bench sched pipe -l 2000` (and -T) under `taskset -c 0`
            // and free, in all five arms, Linux 6.18, 2 CPUs: of 100 runs
            // with a compiler busy on one CPU, 88 at 0.826-0.871, 10 at
            // 0.003-0.085, 2 at 0.58 (25 µs per round trip against 6: they
            // moved); of 80 before, 12 spread runs of no shim and off at
            // 0.001-0.002, one at 0.71 (17 µs); a matrix's runs at 0.20-0.29
            // (30 µs against 60 on two CPUs), which count as mixed.
            .switch_marks = {.colocated_at = 0.75, .spread_at = 0.1, .involuntary = true}};
        if (threads) c.argv.emplace_back("-T");
        out.push_back(std::move(c));
    }
    for (std::uint64_t groups : {1, 2, 4})
        out.push_back(
            {.id = fmt::format("hackbench-g{}", groups),
             .argv = {"hackbench", "-p", "-g", n(groups), "-l", n(s.hackbench_loops)},
             .about = fmt::format("{} processes in {} group(s) of {} senders x {} receivers",
                                  groups * 2 * kHackbenchFds, groups, kHackbenchFds, kHackbenchFds),
             .ops = groups * kHackbenchFds * kHackbenchFds * s.hackbench_loops,
             .op = "message",
             .tools = {"hackbench"},
             .figure = Figure::HackbenchSeconds});
    out.push_back({.id = "hackbench-stream",
                   .argv = {"hackbench", "-p", "-g", "1", "-f", "1", "-l", n(s.stream_loops)},
                   .about = "streaming: one sender, one receiver, 100-byte messages",
                   .ops = s.stream_loops,
                   .op = "message",
                   .tools = {"hackbench"},
                   .figure = Figure::HackbenchSeconds});
    out.push_back(
        {.id = "dd-cat",
         .argv = {"sh", "-c",
                  fmt::format("dd if=/dev/zero bs=64k count={} | cat > /dev/null", s.dd_blocks)},
         .about = "64 KiB blocks through a pipe",
         .ops = s.dd_blocks,
         .op = "block",
         .tools = {"sh", "dd", "cat"},
         .floor = Floor::Blocks});
    out.push_back({.id = "seq-wc",
                   .argv = {"sh", "-c", fmt::format("seq {} | wc -l", s.seq_lines)},
                   .about = "short lines through a pipe",
                   .ops = s.seq_lines,
                   .op = "line",
                   .tools = {"sh", "seq", "wc"}});
    out.push_back({.id = "sparse",
                   .argv = {std::string(kBenchProgram), "worker", "sparse", n(s.sparse_bytes)},
                   .about = fmt::format("a producer writes 1 byte every 2 ms for {:g} s, a "
                                        "consumer reads them one by one; CPU is the consumer's, "
                                        "from its first read to EOF",
                                        static_cast<double>(s.sparse_bytes) * 0.002),
                   .ops = s.sparse_bytes,
                   .op = "byte",
                   .figure = Figure::ConsumerCpu,
                   .worker = true});
    // A reader that never spins (its writer answers 2 ms later) in each
    // placement of its two ends: what each blocking read's wake-up costs
    // it, which the shim must leave alone. Two cases rather than one with
    // both placements: a case is one command line that each arm runs once
    // a round, one sample with one figure, and the placements are two
    // measurements with checks of their own; as cases they interleave all
    // arms within each round like the others, the report gives each its
    // rows, and `--cases` takes either. wakeup.sh adds the unpinned one.
    for (std::string_view where : {"same", "spread"}) {
        const bool same = where == "same";
        out.push_back(
            {.id = fmt::format("wakeup-{}", where),
             .argv = {std::string(kBenchProgram), "worker", fmt::format("wakeup-{}", where),
                      n(s.wakeup_reads)},
             .about = fmt::format(
                 "a writer sends 1 byte every 2 ms for {:g} s, a reader reads them one by one, "
                 "{}; CPU is the reader's run time over its reads "
                 "(/proc/thread-self/schedstat)",
                 static_cast<double>(s.wakeup_reads) * 0.002,
                 same ? "both pinned to one CPU" : "each pinned to a CPU of its own"),
             .ops = s.wakeup_reads,
             .op = "read",
             .figure = Figure::ConsumerCpu,
             .worker = true,
             .cpus = same ? 1 : 2});
    }
    out.push_back(
        {.id = "cmdsubst",
         .argv = {"bash", "-c",
                  fmt::format("for i in $(seq {}); do x=$(echo $i); done", s.shell_loops)},
         .about = "command substitution: a fork and a fresh pipe per iteration, read once",
         .ops = s.shell_loops,
         .op = "substitution",
         .tools = {"bash", "seq"},
         // Runs split in two, with or without the shim: 3.9-4.0 voluntary
         // switches per substitution and the faster (`taskset -c 0`, both
         // processes on one CPU, gives 3.9), or 3.0 and up to a third
         // slower (the child on the other CPU); a few between. The
         // scheduler picks per run: no shim took the second in 1 run of 15
         // of one matrix and 13 of 15 of another.
         .switch_marks = {.colocated_at = 3.75, .spread_at = 3.25}});
    // Two at a time (-P2), as a parallel xargs runs: its children's exits
    // and starts overlap, and each child's pipe-less start is all there is.
    out.push_back({.id = "xargs",
                   .argv = {"sh", "-c",
                            fmt::format("seq {} | xargs -n1 -P2 true", s.shell_loops / 2)},
                   .about = "a process started per line, two at a time",
                   .ops = s.shell_loops / 2,
                   .op = "process",
                   .tools = {"sh", "seq", "xargs", "true"}});
    out.push_back(
        {.id = "make-j",
         .argv = {"make", fmt::format("-j{}", kMakeJobs), "-s", "-C", std::string(kCaseDir)},
         .about = fmt::format("a recursive make: {} sub-makes of {} phony targets whose recipe "
                              "is `true`, sharing the jobserver (a pipe); the makefiles are "
                              "generated into a temporary directory",
                              s.make_dirs, s.make_recipes),
         .ops = s.make_dirs * s.make_recipes,
         .op = "recipe",
         .tools = {"make", "true"},
         .files = makefiles(s.make_dirs, s.make_recipes)});
    out.push_back({.id = "spawn",
                   .argv = {std::string(kBenchProgram), "worker", "spawn", n(s.spawns)},
                   .about = "posix_spawn and wait of /bin/true, one after another, each "
                            "alternating with one without any preload; the figure is the "
                            "median of what the arm's spawn took over its pair's, µs per process",
                   .ops = s.spawns,
                   .op = "process",
                   .figure = Figure::AddedUsPerOp,
                   .worker = true});
    out.push_back({.id = "fork",
                   .argv = {std::string(kBenchProgram), "worker", "fork", n(s.forks)},
                   .about = "fork, _exit and wait, one after another, each alternating with one "
                            "in a twin of the worker started without any preload; the figure is "
                            "the median of what the arm's fork took over its pair's, µs per fork",
                   .ops = s.forks,
                   .op = "fork",
                   .figure = Figure::AddedUsPerOp,
                   .worker = true});
    out.push_back(
        {.id = "py-pingpong",
         .argv = {"python3", "-c", std::string(kPyPingpong), n(s.py_round_trips)},
         .about = "Python os.pipe ping-pong between a process and its fork, 1 byte each way; the "
                  "figure is the script's µs per round trip, and both ends note their CPU every "
                  "1/100 of the run, which gives the placement",
         .ops = s.py_round_trips,
         .op = "round trip",
         .tools = {"python3"},
         .figure = Figure::PlacedUsPerOp,
         .shown = fmt::format("python3 -c SCRIPT {} (SCRIPT: kPyPingpong in "
                              "tools/bench/matrix/cases.cpp; the JSON has it in full)",
                              s.py_round_trips)});
    out.push_back({.id = "footprint",
                   .argv = {"sleep", "1"},
                   .about = "the VmRSS of `sleep 1` once it sleeps (/proc/PID/status; then it is "
                            "killed), and the bss of libpipespin.so",
                   .ops = 1,
                   .op = "process",
                   .tools = {"sleep"},
                   .figure = Figure::RssKib});
    return out;
}

std::vector<std::string> case_ids() {
    std::vector<std::string> ids;
    for (const Case& c : all_cases(kFull)) ids.push_back(c.id);
    return ids;
}

std::string_view floor_about(Floor f) {
    return f == Floor::RoundTrips ? "1-byte round trips over two pipes within one thread"
                                  : "64 KiB blocks written into a pipe and read back within one "
                                    "thread, less as many zero-length write+read pairs (the "
                                    "copies alone)";
}

std::vector<std::string> floor_argv(const Case& c) {
    return {std::string(kBenchProgram), "worker", std::string(floor_loop(c.floor)),
            std::string(cli::worker::expect_shim_flag(false)), std::to_string(c.ops)};
}

bool times_runs(const Case& c) {
    return c.figure != Figure::RssKib;
}

void prepare_case(Case& c, const std::string& workdir, const std::string& tool,
                  const Environment& env) {
    if (c.files.empty()) return;
    const fs::path dir = fs::path(workdir) / c.id;
    for (const CaseFile& f : c.files) {
        fs::create_directories((dir / f.path).parent_path());
        std::ofstream out(dir / f.path);
        if (!(out << f.text).flush())
            throw Failure(kExitFailure,
                          fmt::format("{}: cannot write {}", kCommand, (dir / f.path).string()));
    }
    std::replace(c.argv.begin(), c.argv.end(), std::string(kCaseDir), dir.string());
    if (c.argv[0] != "make") return;
    // GNU make 4.4 and later default to a named FIFO for the jobserver; the
    // case measures the anonymous pipe, which they offer on request and
    // which older makes always use.
    const Measured m =
        spawn_measure(tool, {"make", "--jobserver-style=pipe", "--version"}, env, {true, true});
    if (exited_ok(m.wait_status)) c.argv.insert(c.argv.begin() + 1, "--jobserver-style=pipe");
}

}  // namespace pipespin::bench::matrix
