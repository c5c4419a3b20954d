#!/usr/bin/env bash
# perf bench sched pipe in several arms, side by side: each arm a library
# and a mode (NAME=LIB@MODE; LIB "none" for no preload), run once per round,
# interleaved, in a balanced order (common.sh, bench_order). Per arm: the median
# of perf's own usecs/op with its quartiles and maximum (a ping-pong's time
# here is bimodal: both ends on one CPU or one each), the median voluntary
# context switches of the run (/usr/bin/time: perf and its two workers), and
# the ratio of the first arm's median usecs/op to each arm's, the median of
# each arm's usecs/op over the first arm's in the same round (the host's drift
# cancels out of it) with a 95% bootstrap interval, and how many
# runs slept through more than 1% of their round trips (vol. switches above
# LOOPS/100) with the median of those runs and of the others: in a spinning
# arm those are the runs whose pair spent a stretch on one CPU, where a spin
# cannot help (docs/policy.md, known limits). Then each run placed as the
# matrix places it, by its involuntary context switches per round trip
# (on one CPU the woken end preempts its writer: at least 0.75, co-located;
# at most 0.1, spread; between, mixed), and per placement each arm's runs
# and median usecs/op with its ratio to the first arm's median there.
# What is compared is the loop perf times, not the process start around it.
#   usage: [ROUNDS=40] [LOOPS=20000] tools/bench/scripts/perf_ab.sh NAME=LIB@MODE ... [-- PERF_ARGS...]
#   e.g.   tools/bench/scripts/perf_ab.sh fixed=build/lib/libpipespin.so@fixed \
#            adaptive=build/lib/libpipespin.so@adaptive old=/tmp/old/libpipespin.so@adaptive
#          (add `-- -T` for the two-thread variant)
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-40}
loops=${LOOPS:-20000}
specs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do specs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")
[ ${#specs[@]} -gt 0 ] || { echo "usage: perf_ab.sh NAME=LIB@MODE ... [-- PERF_ARGS...]" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf_ab.sh needs perf (apt-get install linux-perf)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }
bench_clean_env
bench_scratch

bench_arms "" "${specs[@]}"
run_arm() {  # index -> "usecs_per_op voluntary_switches involuntary_switches"
  local out us vcs ics
  # shellcheck disable=SC2086 # the arm's variables, split on purpose
  out=$( { /usr/bin/time -f "TIME %w %c" env ${envs[$1]} perf bench sched pipe -l "$loops" "${extra[@]}"; } 2>&1 )
  us=$(awk '/usecs\/op/{print $1}' <<<"$out")
  vcs=$(awk '/^TIME/{print $2}' <<<"$out")
  ics=$(awk '/^TIME/{print $3}' <<<"$out")
  [ -n "$us" ] || { echo "arm ${names[$1]}: perf printed no usecs/op: $out" >&2; exit 1; }
  echo "$us $vcs $ics"
}
bench_interleave "$rounds" ${#names[@]} run_arm > "$work/samples"

echo "\`perf bench sched pipe -l $loops ${extra[*]}\`, $rounds rounds, arms interleaved (in a balanced order: common.sh, bench_order)"
echo
python3 - "$work/samples" "$loops" "$(dirname "$0")" "${names[@]}" <<'PY'
import statistics as st, sys
sys.path.insert(0, sys.argv[3])
from bootstrap import Bootstrap
loops = int(sys.argv[2])
names = sys.argv[4:]
us = {i: [] for i in range(len(names))}
vcs = {i: [] for i in range(len(names))}
ics = {i: [] for i in range(len(names))}
for line in open(sys.argv[1]):
    i, u, v, c = line.split()
    us[int(i)].append(float(u))
    vcs[int(i)].append(int(v))
    ics[int(i)].append(int(c))
# Each arm's usecs/op over the first arm's in the same round: the host's
# drift (this VM's spin floor moves between ~1.3 and ~2.4 us with the hour)
# cancels out of a ratio taken within one round.
pairs = {i: [a / b for a, b in zip(us[i], us[0])] for i in range(len(names))}
boot = Bootstrap(len(us[0]))
def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * f))]
first = st.median(us[0])
def med(v):
    return f"{st.median(v):.3f}" if v else "-"
print("| arm | usecs/op median | quartiles | max | vol. switches (median) | first arm / this "
      "| this / first arm, per round [95%] | runs sleeping > 1% | their median | the others' median |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for i, name in enumerate(names):
    m = st.median(us[i])
    slept = [u for u, v in zip(us[i], vcs[i]) if v > loops / 100]
    rest = [u for u, v in zip(us[i], vcs[i]) if v <= loops / 100]
    lo, hi = boot.interval(lambda idx: st.median(pairs[i][k] for k in idx))
    print(f"| {name} | {m:.3f} | {q(us[i], .25):.2f}-{q(us[i], .75):.2f} | {max(us[i]):.2f} "
          f"| {st.median(vcs[i]):.0f} | {first / m:.3f} "
          f"| {st.median(pairs[i]):.3f} [{lo:.3f}, {hi:.3f}] | {len(slept)} of {len(us[i])} "
          f"| {med(slept)} | {med(rest)} |")
def place(c):
    return "co-located" if c >= 0.75 * loops else "spread" if c <= 0.1 * loops else "mixed"
print()
print("Per placement (involuntary switches per round trip): runs, median usecs/op, / first arm's there")
print()
print("| placement | " + " | ".join(names) + " |")
print("|---|" + "--:|" * len(names))
for where in ("co-located", "spread", "mixed"):
    cells, base = [], None
    for i in range(len(names)):
        v = [u for u, c in zip(us[i], ics[i]) if place(c) == where]
        m = st.median(v) if v else None
        if i == 0:
            base = m
        ratio = f", {m / base:.3f}" if m is not None and base else ""
        cells.append(f"{len(v)}: {m:.2f}{ratio}" if v else "0")
    print(f"| {where} | " + " | ".join(cells) + " |")
PY
