#!/usr/bin/env bash
# A shell command (a process tree: a loop of $(...), a make, a pipeline) in
# several arms, side by side: each arm a library and a mode (NAME=LIB@MODE;
# LIB "none" for no preload), run once per round with bash -c, interleaved,
# in a balanced order (common.sh, bench_order). Per arm: the median wall time and
# the CPU time of the whole tree (user + system, from wait4), each as a
# ratio to the first arm's (wall: first / arm, below 1 is slower; CPU: arm /
# first) with a 95% interval (a bootstrap over the rounds, resampled as
# wholes, seed 1), and the median voluntary context switches (the tree's
# placement: a parent and child on one CPU switch more often than on two).
# The tree's standard output is thrown away (stderr is kept).
# The matrix compares the modes of one library; this compares libraries.
#   usage: [ROUNDS=21] tools/bench/scripts/tree_ab.sh COMMAND NAME=LIB@MODE ...
#   e.g.   tools/bench/scripts/tree_ab.sh 'for i in $(seq 2000); do x=$(echo $i); done' \
#            off=build/lib/libpipespin.so@off adaptive=build/lib/libpipespin.so@adaptive \
#            old=/tmp/old/libpipespin.so@adaptive
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-21}
[ $# -ge 2 ] || { echo "usage: tree_ab.sh COMMAND NAME=LIB@MODE ..." >&2; exit 2; }
cmd=$1
shift
bench_clean_env
bench_scratch
bench_arms "" "$@"
run_arm() {  # index -> "wall_s cpu_s voluntary_switches"
  # shellcheck disable=SC2086 # the arm's variables, split on purpose
  python3 -c '
import os, sys, time
# The tree writes its output to /dev/null: this stdout is the samples.
out = os.dup(1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
t = time.perf_counter()
pid = os.spawnvp(os.P_NOWAIT, sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
os.dup2(out, 1)
if status != 0:
    sys.exit("the command failed")
print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_nvcsw)
' env ${envs[$1]} bash -c "$cmd"
}
bench_interleave "$rounds" ${#names[@]} run_arm > "$work/samples"

echo "\`bash -c '$cmd'\`, $rounds rounds, arms interleaved (in a balanced order: common.sh, bench_order)"
echo
python3 - "$(dirname "$0")" "$work/samples" "${names[@]}" <<'PY'
import statistics as st, sys
sys.path.insert(0, sys.argv.pop(1))
from bootstrap import Bootstrap
names = sys.argv[2:]
v = {i: [] for i in range(len(names))}
for line in open(sys.argv[1]):
    i, w, c, s = line.split()
    v[int(i)].append((float(w), float(c), float(s)))
n = min(len(x) for x in v.values())
interval = Bootstrap(n).interval
base = v[0][:n]
print(f"| arm | wall, median | {names[0]} / arm (wall) | CPU, median | arm / {names[0]} (CPU) | voluntary switches |")
print("|---|--:|--:|--:|--:|--:|")
for i, name in enumerate(names):
    x = v[i][:n]
    med = lambda rows, idx, k: st.median([rows[j][k] for j in idx])
    wall = lambda idx: med(base, idx, 0) / med(x, idx, 0)
    cpu = lambda idx: med(x, idx, 1) / med(base, idx, 1)
    all_ = list(range(n))
    wl, wh = interval(wall)
    cl, ch = interval(cpu)
    print(f"| {name} | {med(x, all_, 0) * 1e3:.1f} ms | {wall(all_):.3f} [{wl:.3f}, {wh:.3f}] "
          f"| {med(x, all_, 1) * 1e3:.1f} ms | {cpu(all_):.3f} [{cl:.3f}, {ch:.3f}] | {med(x, all_, 2):.0f} |")
PY
