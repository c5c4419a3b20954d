#!/usr/bin/env bash
# Which probe should spin by default? Runs, interleaved, each probe in fixed
# mode (and no shim) on a ping-pong (perf bench sched pipe, µs per round
# trip) and on a streaming pipe (dd | cat, wall seconds), and prints medians
# as a Markdown table.
#   usage: tools/bench/scripts/probes.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
rounds=${2:-7}
lib=$(bench_built "$build" lib/libpipespin.so)
command -v perf >/dev/null || { echo "perf is missing (Debian package linux-perf)" >&2; exit 1; }
bench_clean_env
arms=(none nowait poll fionread)
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
run_arm() {  # arm command...
  local arm=$1; shift
  if [ "$arm" = none ]; then "$@"; else
    LD_PRELOAD=$lib PIPESPIN_MODE=fixed PIPESPIN_PROBE=$arm "$@"; fi
}
declare -A pp dd
for ((r = 0; r < rounds; r++)); do
  for arm in "${arms[@]}"; do
    v=$(run_arm "$arm" perf bench sched pipe -l 20000 | awk '/usecs\/op/ {print $1}')
    pp[$arm]+="$v "
    t0=$(date +%s.%N)
    run_arm "$arm" sh -c 'dd if=/dev/zero bs=64k count=40000 2>/dev/null | cat > /dev/null'
    t1=$(date +%s.%N)
    dd[$arm]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') "
  done
done
echo "| probe | perf bench sched pipe (µs/op, median) | ratio | dd bs=64k \\| cat (s, median) | ratio |"
echo "|---|---|---|---|---|"
base_pp=$(printf '%s\n' ${pp[none]} | median)
base_dd=$(printf '%s\n' ${dd[none]} | median)
for arm in "${arms[@]}"; do
  mp=$(printf '%s\n' ${pp[$arm]} | median)
  md=$(printf '%s\n' ${dd[$arm]} | median)
  awk -v a="$arm" -v mp="$mp" -v md="$md" -v bp="$base_pp" -v bd="$base_dd" 'BEGIN {
    printf "| %s | %.2f | %.2fx | %.3f | %.2fx |\n", (a == "none" ? "no shim" : a), mp, bp / mp, md, bd / md }'
done
