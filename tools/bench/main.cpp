// pipespin-bench: the lab's benchmarks (bench.h). Never installed: it runs
// from the build tree, where it finds build/lib/libpipespin.so and the
// empty preload beside it.
#include <string>

#include "bench/bench.h"

#ifndef PIPESPIN_VERSION
#error "PIPESPIN_VERSION must be defined by the build (tools/bench/CMakeLists.txt)"
#endif

namespace pipespin::bench {
namespace {

constexpr Example kMatrixExamples[] = {
    {"build/bin/pipespin-bench matrix --rounds 15 --markdown matrix.md --json matrix.json",
     "The full matrix, as docs/benchmarks.md quotes it (about an hour on 2 CPUs)."},
    {"build/bin/pipespin-bench matrix --quick --rounds 3 --cases seq-wc,xargs",
     "Two cases, scaled down: a smoke test of a change."},
};
constexpr Example kCoverageExamples[] = {
    {"build/bin/pipespin-bench coverage --markdown coverage.md",
     "Every program of the list, 5 rounds, shim in mode fixed."},
    {"build/bin/pipespin-bench coverage --programs cat,sed,gzip --gap-us 2000",
     "Three programs, with a 2 ms pause that makes every read wait on a busy host."},
};

constexpr Command kCommands[] = {
    {"matrix", "whole programs in five configurations, with acceptance checks",
     "matrix [--rounds R] [--cases LIST] [--quick] [--spin-us N] [--markdown FILE] "
     "[--json FILE] [--plot FILE]",
     define_matrix, kMatrixExamples},
    {"coverage", "does the shim reach the waits of real programs?",
     "coverage [--programs LIST] [--rounds R] [--quick] [--mode MODE] [--gap-us US] "
     "[--markdown FILE]",
     define_coverage, kCoverageExamples},
    {"worker", "the loops the benchmarks re-execute once per sample",
     "worker LOOP [OPTIONS] N\n"
     "worker relay|feed [OPTIONS] ARG -- PROG [ARGS...]\nworker fork-twin",
     define_worker},
};

std::string footer() {
    return "The lab of pipespin: built and tested with it, never installed. Run it from\n"
           "the build tree (build/bin), where it finds the library it measures.\n"
           "Current figures and the commands that make them: docs/benchmarks.md.\n";
}

}  // namespace
}  // namespace pipespin::bench

int main(int argc, char** argv) {
    using namespace pipespin::bench;
    static const Program program{kBenchProgram, PIPESPIN_VERSION,
                                 "the benchmarks of libpipespin.so", kCommands, footer};
    return run_program(program, argc, argv);
}
