#!/usr/bin/env bash
# One of pipespin-bench's workers (`pipespin-bench worker CASE READS`:
# sparse, wakeup-same, wakeup-spread, wakeup-free; tools/bench/worker.cpp)
# in several arms, side by side: each arm a library and a mode
# (NAME=LIB@MODE; LIB "none" for no preload), run once per round,
# interleaved, in a balanced order (common.sh, bench_order). What a worker prints
# is the reader's CPU (sparse) or run time (wakeup-*) over its READS reads,
# in µs. Per arm: the median with its quartiles, the ratio of the medians
# to the first arm's and the difference per read, each with a 95% interval
# (a bootstrap over the rounds, resampled as wholes, seed 1). These runs
# move by ±20% from one to the next on a VM: use many rounds.
#   usage: [ROUNDS=31] [READS=500] [BUILD=build] tools/bench/scripts/worker_ab.sh CASE NAME=LIB@MODE ...
#   e.g.   ROUNDS=61 tools/bench/scripts/worker_ab.sh sparse off=build/lib/libpipespin.so@off \
#            adaptive=build/lib/libpipespin.so@adaptive
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-31}
reads=${READS:-500}
[ $# -ge 2 ] || { echo "usage: worker_ab.sh CASE NAME=LIB@MODE ..." >&2; exit 2; }
case_=$1
shift
bench=$(bench_built "${BUILD:-build}" bin/pipespin-bench)
bench_clean_env
bench_scratch
bench_arms "" "$@"
run_arm() {  # index -> the worker's figure
  # shellcheck disable=SC2086 # the arm's variables, split on purpose
  env ${envs[$1]} "$bench" worker "$case_" "$reads"
}
bench_interleave "$rounds" ${#names[@]} run_arm > "$work/samples"

echo "\`pipespin-bench worker $case_ $reads\`, $rounds rounds, arms interleaved (in a balanced order: common.sh, bench_order)"
echo
python3 - "$(dirname "$0")" "$work/samples" "$reads" "${names[@]}" <<'PY'
import statistics as st, sys
sys.path.insert(0, sys.argv.pop(1))
from bootstrap import Bootstrap
reads = int(sys.argv[2])
names = sys.argv[3:]
v = {i: [] for i in range(len(names))}
for line in open(sys.argv[1]):
    i, x = line.split()
    v[int(i)].append(float(x))
n = min(len(x) for x in v.values())
interval = Bootstrap(n).interval
def q(x, f):
    x = sorted(x)
    return x[min(len(x) - 1, int(len(x) * f))]
base = v[0][:n]
print(f"| arm | µs, median | quartiles | / {names[0]} | - {names[0]}, µs a read |")
print("|---|--:|--:|--:|--:|")
for i, name in enumerate(names):
    x = v[i][:n]
    ratio = lambda idx: st.median([x[k] for k in idx]) / st.median([base[k] for k in idx])
    diff = lambda idx: (st.median([x[k] for k in idx]) - st.median([base[k] for k in idx])) / reads
    all_ = list(range(n))
    lo, hi = interval(ratio)
    dlo, dhi = interval(diff)
    print(f"| {name} | {st.median(x):.0f} | {q(x, .25):.0f}-{q(x, .75):.0f} "
          f"| {ratio(all_):.3f} [{lo:.3f}, {hi:.3f}] | {diff(all_):+.2f} [{dlo:+.2f}, {dhi:+.2f}] |")
PY
