#!/usr/bin/env bash
# What a process start costs with each of several preloaded libraries, in
# counts that do not move with the machine's noise, beside the wall time:
# per posix_spawn+wait of /bin/true, the whole process's instructions
# (callgrind: the loader's relocation and symbol look-ups, the library's
# constructor and destructor) and its minor page faults (rusage of the
# children, so exec's own and the loader's count too), then the wall time
# per process over interleaved rounds (median, and the fastest round: the
# machine's noise only ever adds). "none" (no preload) is always the first
# arm. Each arm runs with PIPESPIN_MODE=off, or MODE; NAME=LIB@MODE sets
# that arm's own (LIB@ none at all: the default settings, no PIPESPIN_*
# variable), NAME=LIB@MODE@VAR=VALUE one more variable.
#   usage: [SPAWNS=200] [ROUNDS=41] [MODE=off] tools/bench/scripts/startcost.sh NAME=LIB[@MODE[@VAR=VALUE]] ...
#   e.g.   tools/bench/scripts/startcost.sh empty=build/lib/libpipespin-empty.so \
#            old=/tmp/base/libpipespin.so new=build/lib/libpipespin.so new-default=build/lib/libpipespin.so@
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || { echo "usage: startcost.sh NAME=LIB[@MODE[@VAR=VALUE]] ..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "startcost.sh needs valgrind (callgrind)" >&2; exit 1; }
bench_clean_env
bench_scratch
BENCH_SCHEDULE=$(bench_schedule "${ROUNDS:-41}" $(($# + 1))) \
python3 - "$work" "${SPAWNS:-200}" "${ROUNDS:-41}" "${MODE:-off}" "$@" <<'PY'
import glob, os, resource, statistics, subprocess, sys, time

work, spawns, rounds, default_mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
arms = [("none", {"PATH": "/usr/bin:/bin"})]
for spec in sys.argv[5:]:
    name, _, rest = spec.partition("=")
    parts = rest.split("@")
    lib = os.path.realpath(parts[0])
    if not os.path.isfile(lib):
        sys.exit(f"missing {parts[0]}")
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": lib}
    mode = parts[1] if len(parts) > 1 else default_mode
    if mode:
        env["PIPESPIN_MODE"] = mode
    for kv in filter(None, parts[2:]):
        k, _, v = kv.partition("=")
        env[k] = v
    arms.append((name, env))

def instructions(k, env):
    out = os.path.join(work, f"cg.{k}")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p", "/bin/true"],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for f in glob.glob(out + ".*"):
        for line in open(f):
            if line.startswith("summary:"):
                return int(line.split()[1])
    return 0

counts = [instructions(k, env) for k, (_, env) in enumerate(arms)]
wall = {name: [] for name, _ in arms}
faults = {name: [] for name, _ in arms}
# The arms' order in each round (common.sh, bench_schedule).
order = [[int(i) for i in line.split()] for line in os.environ["BENCH_SCHEDULE"].splitlines()]
for r in range(rounds):
    for k in range(len(arms)):
        name, env = arms[order[r][k]]
        f0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        t0 = time.perf_counter()
        for _ in range(spawns):
            os.waitpid(os.posix_spawn("/bin/true", ["/bin/true"], env), 0)
        t1 = time.perf_counter()
        wall[name].append((t1 - t0) / spawns * 1e6)
        faults[name].append((resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - f0) / spawns)

base_i, base_f = counts[0], statistics.mean(faults["none"])
base_w, base_m = statistics.median(wall["none"]), min(wall["none"])
print(f"/bin/true, {rounds} interleaved rounds of {spawns} posix_spawn+wait per arm")
print("| arm | instructions (added) | page faults (added) | µs per process (added) | fastest round (added) |")
print("|---|--:|--:|--:|--:|")
for (name, _), n in zip(arms, counts):
    f, w, m = statistics.mean(faults[name]), statistics.median(wall[name]), min(wall[name])
    print(f"| {name} | {n / 1000:.1f}k ({(n - base_i) / 1000:+.1f}k) | {f:.2f} ({f - base_f:+.2f}) "
          f"| {w:.1f} ({w - base_w:+.1f}) | {m:.1f} ({m - base_m:+.1f}) |")
PY
