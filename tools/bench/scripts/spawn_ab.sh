#!/usr/bin/env bash
# What a process start costs with each of several preloaded libraries, side
# by side: `pipespin-bench worker spawn N` (posix_spawn + wait of /bin/true,
# µs per process) without a preload and with each LIB (PIPESPIN_MODE=off,
# or MODE; LIB@MODE sets that arm's own), interleaved round after round
# in a balanced order (common.sh, bench_order; as pipespin-bench matrix
# does). Prints per arm the median, what it adds to no shim, and the
# range. LOOP="fork 5000" times `worker fork 5000` instead (fork + _exit
# + wait, µs per fork: what a forked child costs).
#   usage: [LOOP="spawn|fork N"] [MODE=off|fixed|adaptive] tools/bench/scripts/spawn_ab.sh BUILD_DIR ROUNDS NAME=LIB[@MODE] ...
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:?usage: spawn_ab.sh BUILD_DIR ROUNDS NAME=LIB...}
rounds=${2:?rounds}
read -r -a loop <<<"${LOOP:-spawn 1000}"
shift 2
[ $# -ge 1 ] || { echo "name at least one NAME=LIB" >&2; exit 2; }
bench=$(bench_built "$build" bin/pipespin-bench)
lib_of() { local l=${1#*=}; echo "${l%@*}"; }
mode_of() { local l=${1#*=}; [ "$l" != "${l%@*}" ] && echo "${l##*@}" || echo "${MODE:-off}"; }
for v in "$@"; do [ -f "$(lib_of "$v")" ] || { echo "missing $(lib_of "$v")" >&2; exit 1; }; done
bench_clean_env
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
arms=(none "$@")
for r in $(seq 0 $((rounds - 1))); do
  for k in "${!arms[@]}"; do
    v=${arms[$(bench_order "$r" "$k" "${#arms[@]}")]}
    if [ "$v" = none ]; then
      echo "none $("$bench" worker "${loop[@]}" | tail -1)" >>"$samples"
    else
      echo "${v%%=*} $(env LD_PRELOAD="$(lib_of "$v")" PIPESPIN_MODE="$(mode_of "$v")" "$bench" worker "${loop[@]}" | tail -1)" >>"$samples"
    fi
  done
  echo "round $((r + 1))/$rounds" >&2
done
python3 - "$samples" "${loop[0]}" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, us = line.split()
    d[name].append(float(us))
base = statistics.median(d["none"])
print(f"| arm | µs per {'fork' if sys.argv[2] == 'fork' else 'process'} | added | range |")
print("|---|--:|--:|--:|")
for name, v in d.items():
    m = statistics.median(v)
    print(f"| {name} | {m:.1f} | {m - base:+.1f} | {min(v):.0f}-{max(v):.0f} |")
PY
