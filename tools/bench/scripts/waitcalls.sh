#!/usr/bin/env bash
# The system calls a call on a pipe (or a set) costs where it cannot or need
# not wait, with and without the shim, and its time: tools/bench/scripts/waitcalls.c's
# cases (eagain: reads of an empty non-blocking pipe; pollsock: a ping-pong
# over a socketpair, each side poll()ing before it reads, a set without a
# pipe; pollslow: a poll and a read per byte of a pipe written every 100 us,
# which adaptive mode stops spinning on). For each case and arm: the
# process's system calls per operation, all kinds (strace -f -c; the
# program's own are the no-shim arm's), then the median ns per operation
# over interleaved ROUNDS (pollslow's is the writer's pace). Arms NAME=LIB@MODE
# (LIB none: no preload); by default no shim, off, adaptive and fixed of
# BUILD_DIR's library. Needs strace.
# eagain makes N operations, pollsock N/10, pollslow N/100.
#   usage: [ROUNDS=9] [N=100000] tools/bench/scripts/waitcalls.sh [BUILD_DIR] [NAME=LIB@MODE...]
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
[ $# -gt 0 ] && shift
lib=$(bench_built "$build" lib/libpipespin.so)
command -v strace >/dev/null || { echo "missing strace (apt-get install strace)" >&2; exit 1; }
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("no shim=none" "off=$lib@off" "adaptive=$lib@adaptive" "fixed=$lib@fixed")
bench_clean_env
bench_scratch
cc -O2 -o "$work/waitcalls" "$here/waitcalls.c"
bench_arms "" "${specs[@]}"
rounds=${ROUNDS:-9}
n=${N:-100000}

for case in eagain pollsock pollslow; do
  case $case in
    eagain) ops=$n ;;
    pollsock) ops=$((n / 10)) ;;
    pollslow) ops=$((n / 100)) ;;  # 100 us apart
  esac
  echo "## $case ($ops operations)"
  echo "| arm | system calls per operation | ns per operation (median of $rounds) |"
  echo "|---|--:|--:|"
  run_arm() {  # i: one timed run of arm i, its ns per operation
    # shellcheck disable=SC2086
    env ${envs[$1]} "$work/waitcalls" "$case" "$ops" | sed -n 's/^ns_per_op //p'
  }
  times=$(bench_interleave "$rounds" ${#names[@]} run_arm)
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    env -u LD_PRELOAD strace -f -qq -c -o "$work/trace" -E "LD_PRELOAD=" \
      env ${envs[$i]} "$work/waitcalls" "$case" "$ops" >/dev/null
    calls=$(awk '$NF == "total" { print $4 }' "$work/trace")
    med=$(awk -v i="$i" '$1 == i { print $2 }' <<<"$times" | sort -g |
      awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    printf '| %s | %.2f | %.0f |\n' "${names[$i]}" "$(awk -v c="$calls" -v o="$ops" 'BEGIN { print c / o }')" "$med"
  done
  echo
done
