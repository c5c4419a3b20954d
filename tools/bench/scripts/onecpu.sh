#!/usr/bin/env bash
# Both ends of a ping-pong on one CPU, where the shim believes it has two
# (tools/bench/scripts/onecpu.c: the processes pin themselves after start), in
# several arms side by side: each arm a library and a mode (NAME=LIB@MODE;
# LIB "none" for no preload), run once per round, interleaved in a balanced
# order (common.sh, bench_order). Per arm: the median µs per round trip with its
# quartiles and maximum, the ratio of the first arm's median to it, and, from
# the shim's statistics (PIPESPIN_STATS), the median spins per run and the
# median ms spent spinning, over both processes. STATS=0 leaves the
# statistics off (they count every call, which mode off otherwise does not:
# engine.h, Runtime::inert), and the spin columns empty.
#   usage: [ROUNDS=15] [TRIPS=2000] [STATS=1] tools/bench/scripts/onecpu.sh NAME=LIB@MODE ...
#   e.g.   tools/bench/scripts/onecpu.sh none=none adaptive=build/lib/libpipespin.so@adaptive \
#            old=/tmp/old/libpipespin.so@adaptive fixed=build/lib/libpipespin.so@fixed
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-15}
trips=${TRIPS:-2000}
[ $# -gt 0 ] || { echo "usage: onecpu.sh NAME=LIB@MODE ..." >&2; exit 2; }
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs two usable CPUs (the shim spins only with two)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bench_clean_env
bench_scratch
stats_env=
[ "${STATS:-1}" = 0 ] || stats_env="PIPESPIN_STATS=$work/stats.json"
cc -O2 -Wall -o "$work/onecpu" "$here/onecpu.c"
bench_arms "$stats_env" "$@"
run_arm() {  # index -> "us_per_round_trip spins spin_ms"
  local us
  rm -f "$work/stats.json"
  # shellcheck disable=SC2086 # the arm's variables, split on purpose
  us=$(env ${envs[$1]} "$work/onecpu" "$trips" 0)
  python3 - "$work/stats.json" "$us" <<'PY'
import json, os, sys
spins = ns = 0
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        d = json.loads(line)
        for way in ("read", "write"):
            c = d.get("pipe", {}).get(way, {})
            spins += c.get("spins", 0)
            ns += c.get("spin_ns", 0)
print(sys.argv[2], spins, ns / 1e6)
PY
}
bench_interleave "$rounds" ${#names[@]} run_arm > "$work/samples"

echo "tools/bench/scripts/onecpu.c: $trips round trips, both processes pinned to CPU 0 after start; $rounds rounds, arms interleaved"
echo
python3 - "$work/samples" "${names[@]}" <<'PY'
import statistics as st, sys
names = sys.argv[2:]
rows = {i: [] for i in range(len(names))}
for line in open(sys.argv[1]):
    i, us, spins, ms = line.split()
    rows[int(i)].append((float(us), int(spins), float(ms)))
def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * f))]
first = st.median(r[0] for r in rows[0])
print("| arm | µs per round trip, median | quartiles | max | first arm / this | spins per run (median) | ms spinning per run (median) |")
print("|---|--:|--:|--:|--:|--:|--:|")
for i, name in enumerate(names):
    us = [r[0] for r in rows[i]]
    m = st.median(us)
    print(f"| {name} | {m:.2f} | {q(us, .25):.2f}-{q(us, .75):.2f} | {max(us):.2f} | {first / m:.3f} "
          f"| {st.median(r[1] for r in rows[i]):.0f} | {st.median(r[2] for r in rows[i]):.2f} |")
PY
