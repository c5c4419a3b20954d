#!/usr/bin/env bash
# What each blocking read's wake-up costs a reader whose writer sends a byte
# every 2 ms (`pipespin-bench worker wakeup-same|wakeup-spread|wakeup-free`,
# tools/bench/worker.cpp; the matrix runs the first two as cases), in each
# placement of the two ends, side by side: no shim, the empty preload, and
# pipespin off, adaptive, and adaptive with spin_read=off. Each round runs every arm once in every
# placement, interleaved in a balanced order (common.sh, bench_order);
# prints per placement and arm the median reader run time over the reads
# (µs, from /proc/thread-self/schedstat), its range, and the ratio to no
# shim; then per placement what adaptive adds to off, µs a read, as the
# median of the rounds' own differences (a round's two runs are minutes
# closer than the medians' runs: the host's drift cancels) with a 95%
# bootstrap interval over the rounds (seed 1). With OTHER_BUILD, two more
# arms run that build's library in modes off and adaptive ("off, other",
# "adaptive, other"), to compare two versions of the shim in one run.
#   usage: tools/bench/scripts/wakeup.sh [BUILD_DIR] [ROUNDS] [READS] [OTHER_BUILD]
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
rounds=${2:-9}
reads=${3:-500}
other=${4:-}
lib=$(bench_built "$build" lib/libpipespin.so)
empty=$(bench_built "$build" lib/libpipespin-empty.so)
[ -n "$other" ] && other_lib=$(bench_built "$other" lib/libpipespin.so)
bench=$(bench_built "$build" bin/pipespin-bench)
[ "$(nproc)" -ge 2 ] || { echo "one usable CPU: nothing spins, nothing to compare" >&2; exit 1; }
bench_scratch
bench_clean_env
arms=("no shim" "empty preload" "off" "adaptive" "adaptive spin_read=off")
[ -n "$other" ] && arms+=("off, other" "adaptive, other")
arm_env() {
  case $1 in
    "no shim") echo "PIPESPIN_NONE=1" ;;
    "empty preload") echo "LD_PRELOAD=$empty" ;;
    off) echo "LD_PRELOAD=$lib PIPESPIN_MODE=off" ;;
    adaptive) echo "LD_PRELOAD=$lib PIPESPIN_MODE=adaptive" ;;
    "off, other") echo "LD_PRELOAD=$other_lib PIPESPIN_MODE=off" ;;
    "adaptive, other") echo "LD_PRELOAD=$other_lib PIPESPIN_MODE=adaptive" ;;
    *) echo "LD_PRELOAD=$lib PIPESPIN_MODE=adaptive PIPESPIN_SPIN_READ=off" ;;
  esac
}
for ((r = 0; r < rounds; r++)); do
  for where in same spread free; do
    for ((k = 0; k < ${#arms[@]}; k++)); do
      arm=${arms[$(bench_order "$r" "$k" "${#arms[@]}")]}
      # shellcheck disable=SC2046
      out=$(env $(arm_env "$arm") "$bench" worker "wakeup-$where" "$reads")
      echo "$r|$where|$arm|$out" >>"$work/samples"
    done
  done
  echo "round $((r + 1))/$rounds" >&2
done
echo "wakeup: $reads reads 2 ms apart, $rounds interleaved rounds; reader run time over the reads (µs)"
python3 - "$work/samples" "$(dirname "$0")" "$reads" "${arms[@]}" <<'PY'
import collections, statistics, sys
sys.path.insert(0, sys.argv[2])
from bootstrap import Bootstrap
d = collections.defaultdict(list)
by_round = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, where, arm, us = line.rstrip("\n").split("|")
    d[(where, arm)].append(float(us))
    by_round[(where, r)][arm] = float(us)
reads = int(sys.argv[3])
order = sys.argv[4:]
print("| placement | arm | median µs | range | µs per read | / no shim |")
print("|---|---|--:|--:|--:|--:|")
for where in ("same", "spread", "free"):
    base = statistics.median(d[(where, "no shim")])
    for (w, arm), v in sorted(d.items(), key=lambda kv: order.index(kv[0][1])):
        if w == where:
            m = statistics.median(v)
            print(f"| {w} | {arm} | {m:.0f} | {min(v):.0f}-{max(v):.0f} | {m / reads:.2f} | {m / base:.2f}x |")
def interval(x):
    if len(x) < 2:
        return "-"
    lo, hi = Bootstrap(len(x)).interval(lambda idx: statistics.median(x[k] for k in idx))
    return f"[{lo:+.2f}, {hi:+.2f}]"
print()
print("What adaptive adds to off, µs a read: the median of the rounds' differences")
print()
print("| placement | pair | adaptive - off | 95% interval | rounds |")
print("|---|---|--:|--:|--:|")
pairs = [("adaptive", "off")]
if d.get(("same", "adaptive, other")):
    pairs.append(("adaptive, other", "off, other"))
for where in ("same", "spread", "free"):
    for a, o in pairs:
        x = [(v[a] - v[o]) / reads for (w, _), v in sorted(by_round.items()) if w == where and a in v and o in v]
        if x:
            print(f"| {where} | {a} - {o} | {statistics.median(x):+.2f} | {interval(x)} | {len(x)} |")
PY
