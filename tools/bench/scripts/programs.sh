#!/usr/bin/env bash
# Whole programs users run, with and without the shim, side by side: a C
# compile whose cc1 streams into as through a pipe (gcc -pipe), a parallel
# make of a small C project, Python's multiprocessing pool, git log into a
# pipe, tar into gzip, find into xargs grep, a sort pipeline, and a shell
# loop that runs a command per file ($(...) around an exec). Each arm is a
# library and a mode (NAME=LIB@MODE; LIB "none" for no preload); the
# default arms are no shim, the empty preload (a one-symbol library the
# build makes), mode off and adaptive. Every round runs every case in every
# arm, interleaved (in a balanced order: common.sh, bench_order). Per case: the
# no-shim median wall time, each arm's wall ratio (no shim / arm: below 1
# is slower) with a 95% bootstrap interval over whole rounds, and its CPU
# ratio (arm / no shim: user+sys of the command and its children).
#   usage: [ROUNDS=11] [CASES=gcc-pipe,make-c,...] tools/bench/scripts/programs.sh [BUILD_DIR] [NAME=LIB@MODE...]
#   e.g.   tools/bench/scripts/programs.sh build
#          tools/bench/scripts/programs.sh build new=build/lib/libpipespin.so@adaptive \
#            old=/tmp/old/lib/libpipespin.so@adaptive
set -euo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
[ $# -gt 0 ] && shift
lib=$(bench_built "$build" lib/libpipespin.so)
empty=$(bench_built "$build" lib/libpipespin-empty.so)
for tool in gcc make python3 git tar gzip xargs grep sort; do
  command -v "$tool" >/dev/null || { echo "programs.sh needs $tool" >&2; exit 1; }
done
[ -d /usr/include/linux ] || { echo "programs.sh reads /usr/include/linux (linux-libc-dev)" >&2; exit 1; }
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || true)
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("no shim=none" "empty preload=$empty@" "off=$lib@off" "adaptive=$lib@adaptive")
bench_clean_env
bench_scratch
BENCH_SCHEDULE=$(bench_schedule "${ROUNDS:-11}" ${#specs[@]}) \
python3 - "$work" "${ROUNDS:-11}" "${CASES:-}" "$repo" "${specs[@]}" <<'PY'
import os, random, resource, statistics as st, subprocess, sys, time

work, rounds, only, repo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
arms = []
for spec in sys.argv[5:]:
    name, _, rest = spec.partition("=")
    path, _, mode = rest.partition("@")
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "LC_ALL": "C", "PIPESPIN_CONFIG": ""}
    if path != "none":
        if not os.path.isfile(path):
            sys.exit(f"missing {path}")
        env["LD_PRELOAD"] = os.path.realpath(path)
        if mode:
            env["PIPESPIN_MODE"] = mode
    arms.append((name, env))

# The inputs, made once: a C file of many small functions, a small project.
src = os.path.join(work, "big.c")
with open(src, "w") as f:
    for i in range(500):
        f.write(f"int f{i}(int x) {{ int s = 0; for (int k = 0; k < x; ++k) s += k * {i} ^ (s >> 3); "
                f"return s + {i}; }}\n")
proj = os.path.join(work, "proj")
os.mkdir(proj)
for i in range(24):
    with open(os.path.join(proj, f"u{i}.c"), "w") as f:
        f.write("#include <stdio.h>\n#include <string.h>\n")
        for j in range(40):
            f.write(f"int u{i}_{j}(const char* s) {{ return (int)strlen(s) * {j} + {i}; }}\n")
with open(os.path.join(proj, "Makefile"), "w") as f:
    objs = " ".join(f"u{i}.o" for i in range(24))
    f.write(f"all: {objs}\n%.o: %.c\n\tgcc -pipe -O1 -c $< -o $@\n")

cases = [
    ("gcc-pipe", f"gcc -pipe -O1 -c {src} -o {work}/big.o",
     "one compile of 500 functions: cc1 writes its assembly into a pipe that as reads"),
    ("make-c", f"make -s -B -j2 -C {proj}",
     "make -j2 of 24 small C files (gcc -pipe), the jobserver a pipe"),
    ("py-pool", "python3 -c 'import multiprocessing as m; p = m.Pool(2); "
                "s = sum(p.map(abs, range(20000), chunksize=1)); p.close(); p.join()'",
     "multiprocessing.Pool(2).map of 20000 one-item tasks: pipes to and from the workers"),
    ("tar-gzip", "tar cf - -C /usr/include linux c++ x86_64-linux-gnu | gzip -1 | wc -c",
     "tar of three directories of /usr/include (22 MB) into gzip into wc"),
    ("find-xargs", "find /usr/include -name '*.h' -print0 | xargs -0 -n 20 grep -l define | wc -l",
     "find into xargs running grep per 20 headers"),
    ("sort", "seq 1000000 | sort -r | sort -n | uniq | wc -l", "a four-stage sort pipeline"),
    ("sh-per-file", "for f in /usr/include/linux/*.h; do n=$(wc -l < \"$f\"); echo \"$n $f\"; done "
                    "| sort -n | tail -1",
     "a shell loop running wc in $(...) per header of /usr/include/linux"),
]
if repo:
    cases.insert(3, ("git-log", f"git -C {repo} log -p -n 1000 --no-color | wc -c",
                     "git log -p of this project's last 1000 commits into wc"))
if only:
    want = only.split(",")
    unknown = [w for w in want if w not in [c[0] for c in cases]]
    if unknown:
        sys.exit(f"unknown case(s): {', '.join(unknown)}")
    cases = [c for c in cases if c[0] in want]

def run(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(["sh", "-c", cmd], env=env, cwd=work, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{cmd}: exit {r.returncode}: {r.stderr.decode(errors='replace')[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

wall = {(c[0], a[0]): [] for c in cases for a in arms}
cpu = {(c[0], a[0]): [] for c in cases for a in arms}
# The arms' order in each round (common.sh, bench_schedule).
order = [[int(i) for i in line.split()] for line in os.environ["BENCH_SCHEDULE"].splitlines()]
for r in range(rounds):
    for cid, cmd, _ in cases:
        for k in range(len(arms)):
            name, env = arms[order[r][k]]
            w, c = run(cmd, env)
            wall[(cid, name)].append(w)
            cpu[(cid, name)].append(c)

random.seed(1)
def interval(base, arm):  # no shim / arm over resampled rounds (paired), 95%
    n = len(base)
    rs = []
    for _ in range(2000):
        pick = [random.randrange(n) for _ in range(n)]
        rs.append(st.median(base[i] for i in pick) / st.median(arm[i] for i in pick))
    rs.sort()
    return rs[50], rs[1949]

print(f"{rounds} rounds, every case in every arm, interleaved (in a balanced order: common.sh, bench_order).")
print("Wall ratio: no shim's median / the arm's (below 1: slower), 95% bootstrap interval over rounds;")
print("CPU ratio: the arm's median user+sys / no shim's.")
print()
for cid, cmd, what in cases:
    print(f"- `{cid}`: {what}: `{cmd}`")
print()
base = arms[0][0]
print("| case | " + f"{base} (median) | " + " | ".join(f"{n} wall | {n} CPU" for n, _ in arms[1:]) + " |")
print("|---|--:|" + "--:|--:|" * (len(arms) - 1))
for cid, _, _ in cases:
    b = wall[(cid, base)]
    cells = [f"{st.median(b):.3f} s"]
    for name, _ in arms[1:]:
        a = wall[(cid, name)]
        lo, hi = interval(b, a)
        c0 = st.median(cpu[(cid, base)])
        cr = st.median(cpu[(cid, name)]) / c0 if c0 > 0 else float("nan")
        cells.append(f"{st.median(b) / st.median(a):.3f} [{lo:.3f}, {hi:.3f}]")
        cells.append(f"{cr:.3f}")
    print(f"| {cid} | " + " | ".join(cells) + " |")
PY
