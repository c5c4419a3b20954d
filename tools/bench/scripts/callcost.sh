#!/usr/bin/env bash
# What the shim's code costs a read or write on a pipe that does not wait,
# in user-space instructions (valgrind's callgrind: exact, not noisy),
# without and with the shim: a 100-byte write and read on one pipe
# (tools/bench/scripts/callcost.c), run for ROUNDS and 2 x ROUNDS pairs, so that the
# difference leaves out start-up. Prints instructions per write+read pair
# for no shim, the empty preload, and pipespin in modes off, fixed and
# adaptive (adaptive soon stops spinning on a pipe that never waits: its
# calls are those of a run of not spinning). Needs valgrind
# (apt-get install valgrind; not a build dependency).
#   usage: tools/bench/scripts/callcost.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
rounds=${2:-10000}
lib=$(bench_built "$build" lib/libpipespin.so)
empty=$(bench_built "$build" lib/libpipespin-empty.so)
command -v valgrind >/dev/null || { echo "missing valgrind (apt-get install valgrind)" >&2; exit 1; }
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bench_scratch
cc -O2 -o "$work/callcost" "$here/callcost.c"
bench_clean_env

instructions() {  # PRELOAD MODE PAIRS: instructions of the whole run
  local out="$work/cg.out"
  rm -f "$out"
  env ${1:+LD_PRELOAD=$1} ${2:+PIPESPIN_MODE=$2} \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$work/callcost" "$3" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

echo "| arm | instructions per write+read pair | added to no shim |"
echo "|---|--:|--:|"
base=""
for arm in "no shim" "empty preload" off fixed adaptive; do
  case $arm in
    "no shim") pre="" mode="" ;;
    "empty preload") pre=$empty mode="" ;;
    *) pre=$lib mode=$arm ;;
  esac
  a=$(instructions "$pre" "$mode" "$rounds")
  b=$(instructions "$pre" "$mode" $((2 * rounds)))
  per=$(awk -v a="$a" -v b="$b" -v n="$rounds" 'BEGIN { printf "%.1f", (b - a) / n }')
  [ -z "$base" ] && base=$per
  awk -v arm="$arm" -v per="$per" -v base="$base" \
    'BEGIN { printf "| %s | %.1f | %+.1f |\n", arm, per, per - base }'
done
