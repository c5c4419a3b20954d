#!/usr/bin/env bash
# What the shim costs where it must cost (almost) nothing, measured side by
# side: each round runs the case without and with the shim, interleaved;
# medians and the difference are printed as a Markdown table.
#   usage: tools/bench/scripts/overhead.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
rounds=${2:-9}
lib=$(bench_built "$build" lib/libpipespin.so)
bin=$(bench_built "$build" bin/pipespin-overhead)
bench_clean_env
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run_case() {  # name unit N
  local name=$1 unit=$2 n=$3 plain=() shim=()
  for ((r = 0; r < rounds; r++)); do
    if [ "$name" = spawn ]; then
      plain+=("$(PIPESPIN_CHILD_PRELOAD= "$bin" spawn "$n")")
      shim+=("$(PIPESPIN_CHILD_PRELOAD="$lib" "$bin" spawn "$n")")
    else
      plain+=("$("$bin" "$name" "$n")")
      shim+=("$(LD_PRELOAD="$lib" "$bin" "$name" "$n")")
    fi
  done
  local mp ms
  mp=$(printf '%s\n' "${plain[@]}" | median)
  ms=$(printf '%s\n' "${shim[@]}" | median)
  awk -v n="$name" -v u="$unit" -v p="$mp" -v s="$ms" 'BEGIN {
    printf "| %s | %.1f %s | %.1f %s | %+.1f %s | %+.2f%% |\n", n, p, u, s, u, s - p, u, (s - p) / p * 100 }'
}

echo "| case | no shim (median) | shim, default mode (median) | added | added % |"
echo "|---|---|---|---|---|"
run_case file "ns/read" 200000
run_case pipe "ns/write+read" 100000
run_case spawn "µs/process" 300
