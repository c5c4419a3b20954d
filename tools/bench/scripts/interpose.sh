#!/usr/bin/env bash
# What interposing read and write costs a workload where every call is
# followed by a switch to another process (hackbench: 40-160 processes on a
# few CPUs), measured side by side: no shim, the least possible wrapper
# (tools/bench/scripts/minshim.c: a tail call to libc's read/write), and pipespin in
# modes off and adaptive; with OTHER_BUILD set to another build directory,
# that build's library too, in adaptive mode or OTHER_MODE (to compare two
# versions of the shim in one run). Each round runs every arm once,
# interleaved in a balanced order (common.sh, bench_order); medians of wall and CPU (user+sys of the
# command and its children), ratios to no shim, and a 95% bootstrap
# interval of the wall ratio are printed as a Markdown table.
#   usage: [OTHER_BUILD=DIR [OTHER_MODE=off|fixed|adaptive]] tools/bench/scripts/interpose.sh [BUILD_DIR] [ROUNDS] [-- CMD ARGS...]
#   default CMD: hackbench -p -g 2 -l 500 (Debian's rt-tests)
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
rounds=${2:-15}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
cmd=("$@")
[ ${#cmd[@]} -gt 0 ] || cmd=(hackbench -p -g 2 -l 500)
lib=$(bench_built "$build" lib/libpipespin.so)
other_lib=""
[ -n "${OTHER_BUILD:-}" ] && other_lib=$(bench_built "$OTHER_BUILD" lib/libpipespin.so)
command -v "${cmd[0]}" >/dev/null || { echo "missing ${cmd[0]} (hackbench: apt-get install rt-tests)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bench_scratch
cc -O2 -shared -fPIC -o "$work/minshim.so" "$here/minshim.c" -ldl
bench_clean_env

arms=("no shim" "minimal wrapper" "pipespin off" "pipespin adaptive")
other_mode=${OTHER_MODE:-adaptive}
[ -n "$other_lib" ] && arms+=("other build, $other_mode")
run_arm() {  # index -> "wall_s cpu_s"
  local pre=() t0 t1 times
  case $1 in
    1) pre=(LD_PRELOAD="$work/minshim.so") ;;
    2) pre=(LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=off) ;;
    3) pre=(LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=adaptive) ;;
    4) pre=(LD_PRELOAD="$other_lib" PIPESPIN_CONFIG= PIPESPIN_MODE="$other_mode") ;;
  esac
  t0=$(date +%s%N)
  times=$( { /usr/bin/time -f "%U %S" env "${pre[@]}" "${cmd[@]}" >/dev/null; } 2>&1 | tail -1)
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000 )) $times"
}
bench_interleave "$rounds" ${#arms[@]} run_arm > "$work/samples"

echo "Command: \`${cmd[*]}\`, $rounds rounds, arms interleaved (in a balanced order: common.sh, bench_order); library $lib${other_lib:+, other build $other_lib}"
echo
python3 - "$work/samples" "${arms[@]}" <<'PY'
import random, statistics as st, sys
names = sys.argv[2:]
wall = {i: [] for i in range(len(names))}
cpu = {i: [] for i in range(len(names))}
for line in open(sys.argv[1]):
    i, us, user, system = line.split()
    wall[int(i)].append(int(us) / 1e6)
    cpu[int(i)].append(float(user) + float(system))
random.seed(1)
def interval(a, b):  # ratio of medians median(a) / median(b), 95% bootstrap
    r = sorted(st.median(random.choices(a, k=len(a))) / st.median(random.choices(b, k=len(b)))
               for _ in range(2000))
    return r[50], r[1949]
w0, c0 = st.median(wall[0]), st.median(cpu[0])
print("| arm | median wall | wall ratio (95% interval) | median CPU | CPU ratio |")
print("|---|--:|--:|--:|--:|")
for i, n in enumerate(names):
    lo, hi = interval(wall[0], wall[i])
    print(f"| {n} | {st.median(wall[i]):.3f} s | {w0 / st.median(wall[i]):.3f} ({lo:.3f}-{hi:.3f}) "
          f"| {st.median(cpu[i]):.3f} s | " + (f"{st.median(cpu[i]) / c0:.3f}" if c0 > 0 else "n/a") + " |")
print()
print("wall ratio = no-shim median / arm median (below 1: slower); CPU ratio = arm / no shim.")
PY
