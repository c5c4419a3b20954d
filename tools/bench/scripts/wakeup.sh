#!/usr/bin/env bash
# What each blocking read's wake-up costs a reader whose writer sends a byte
# every 2 ms (`pipespin-bench worker wakeup-same|wakeup-spread|wakeup-free`,
# tools/bench/worker.cpp; the matrix runs the first two as cases), in each
# placement of the two ends, side by side: no shim, the empty preload, and
# pipespin off, adaptive, and adaptive with spin_read=off. Each round runs every arm once in every
# placement, interleaved; prints per placement and arm the median reader run
# time over the reads (µs, from /proc/thread-self/schedstat), its range, and
# the ratio to no shim. With OTHER_BUILD, two more arms run that build's
# library in modes off and adaptive ("off, other", "adaptive, other"), to
# compare two versions of the shim in one run.
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
for r in $(seq "$rounds"); do
  for where in same spread free; do
    for arm in "${arms[@]}"; do
      # shellcheck disable=SC2046
      out=$(env $(arm_env "$arm") "$bench" worker "wakeup-$where" "$reads")
      echo "$where|$arm|$out" >>"$work/samples"
    done
  done
  echo "round $r/$rounds" >&2
done
echo "wakeup: $reads reads 2 ms apart, $rounds interleaved rounds; reader run time over the reads (µs)"
python3 - "$work/samples" "$reads" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    where, arm, us = line.rstrip("\n").split("|")
    d[(where, arm)].append(float(us))
reads = int(sys.argv[2])
print("| placement | arm | median µs | range | µs per read | / no shim |")
print("|---|---|--:|--:|--:|--:|")
for where in ("same", "spread", "free"):
    base = statistics.median(d[(where, "no shim")])
    for (w, arm), v in d.items():
        if w == where:
            m = statistics.median(v)
            print(f"| {w} | {arm} | {m:.0f} | {min(v):.0f}-{max(v):.0f} | {m / reads:.2f} | {m / base:.2f}x |")
PY
