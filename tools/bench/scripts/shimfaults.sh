#!/usr/bin/env bash
# The page faults a workload's processes take in the shim, per library and
# mode: every minor fault of the command and its children is recorded
# (perf record -e minor-faults -c 1 -d), and counted as the shim's when the
# instruction that faulted is in the library (its code, or its code writing
# its data: the fd table, counters) or the address is in the library's file
# mapping (the loader relocating it). Printed per arm: all faults, the
# shim's, the processes (pids) that ran, the shim's faults per process, and
# the shim's faults by function (the ten largest), each the mean of RUNS
# runs (default 5), arms interleaved. Counts, not times: they do not move
# with the machine's noise, only with where ASLR puts the library against
# the 64 KiB windows the kernel maps code by: a forked child runs at its
# parent's addresses, so a whole run's children take a code fault more or
# less together (one function's, in every child), and one run of an arm
# can differ from the next by a fault per process; the mean of a few runs
# evens that out. An arm without a shim library ("none", or a library of
# another name, such as the empty preload) counts only its total.
#   usage: [RUNS=5] tools/bench/scripts/shimfaults.sh NAME=LIB@MODE ... -- CMD ARGS...
#   e.g.   tools/bench/scripts/shimfaults.sh off=build/lib/libpipespin.so@off \
#            adaptive=build/lib/libpipespin.so@adaptive old=/tmp/old/libpipespin.so@adaptive \
#            -- sh -c 'seq 500 | xargs -n1 true'
set -euo pipefail
. "$(dirname "$0")/common.sh"
specs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do specs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#specs[@]} -gt 0 ] && [ $# -gt 0 ] || { echo "usage: shimfaults.sh NAME=LIB@MODE ... -- CMD ARGS..." >&2; exit 2; }
command -v perf >/dev/null || { echo "shimfaults.sh needs perf (apt-get install linux-perf)" >&2; exit 1; }
bench_clean_env
bench_scratch
bench_arms "" "${specs[@]}"
runs=${RUNS:-5}
for ((r = 0; r < runs; r++)); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086 # the arm's variables, split on purpose
    env ${envs[$i]} perf record -q -c 1 -e minor-faults -d -o "$work/$i.data" -- "$@" >/dev/null 2>"$work/$i.err" ||
      { echo "arm ${names[$i]}: $*: failed: $(tail -3 "$work/$i.err")" >&2; exit 1; }
    perf script -i "$work/$i.data" -F pid,addr,ip,sym,dso 2>/dev/null > "$work/$i.$r.txt"
  done
done
echo "\`$*\`: minor faults (perf record -e minor-faults -c 1 -d), all and the shim's (code or data of libpipespin.so), mean of $runs runs"
echo
python3 - "$work" "$runs" "${names[@]}" <<'PY'
import collections, re, sys
work, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
# pid addr [addr's symbol] (addr's map) ip ip's symbol (ip's map)
line = re.compile(r"\s*(\d+)\s+[0-9a-f]+\s+.*?\s*\(([/\[][^)]*)\)\s+[0-9a-f]+\s+(.*?)\s+\(([/\[][^)]*)\)\s*$")
print("| arm | faults | the shim's | processes | the shim's per process | the shim's, by function |")
print("|---|--:|--:|--:|--:|---|")
for i, name in enumerate(names):
    total = shim = procs = 0
    by = collections.Counter()
    for r in range(runs):
        pids = set()
        for text in open(f"{work}/{i}.{r}.txt"):
            m = line.match(text)
            if not m:
                continue
            pid, addr_map, sym, ip_map = m.groups()
            total += 1
            pids.add(pid)
            if "libpipespin.so" in ip_map or "libpipespin.so" in addr_map:
                shim += 1
                by[sym if "libpipespin.so" in ip_map else "(loader: " + sym + ")"] += 1
        procs += len(pids)
    top = ", ".join(f"{s} {n / runs:.0f}" for s, n in by.most_common(10))
    per = f"{shim / procs:.2f}" if procs else "-"
    print(f"| {name} | {total / runs:.0f} | {shim / runs:.0f} | {procs / runs:.0f} | {per} | {top} |")
PY
