#!/usr/bin/env bash
# A spin that has not seen its answer by its 8th look gives its CPU away
# once (engine_detail.h, kYieldAt): a peer that needs that very CPU runs at
# once instead of after the whole budget. Counted with strace: python3
# reads 20 bytes that a child writes 20 ms apart, so that every wait
# outlasts a spin's first looks, in mode fixed with a 1 s budget (each
# wait spins until its byte comes):
#   - at least 10 sched_yield calls (the spins yield; without the yield
#     there are none);
#   - at most one per read (one yield per spin, not one every few looks);
#   - in mode off, none at all (the control arm makes the program's own
#     system calls only).
# Counts, not time: a late byte only makes its spin longer.
#   check_spin_yield.sh LIB
set -u
lib=$(realpath "$1")
command -v strace >/dev/null || { echo "SKIP: strace is not installed (apt-get install strace)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
strace -f -qq -o /dev/null true 2>/dev/null || { echo "SKIP: strace cannot trace here (ptrace not allowed?)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one usable CPU (the shim spins only with two)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/slow.py" <<'PY'
import os, sys, time
n = int(sys.argv[1])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    for _ in range(n):
        time.sleep(0.02)
        os.write(w, b"x")
    os._exit(0)
os.close(w)
got = 0
while got < n:
    b = os.read(r, 1)
    if not b:
        break
    got += len(b)
_, status = os.waitpid(pid, 0)
sys.exit(0 if got == n and status == 0 else "wrong byte count")
PY
# The interpreter itself, not a wrapper script (pyenv's shims are bash
# scripts, whose own pipes would spin and yield too).
py=$(python3 -c 'import sys; print(sys.executable)')
reads=20
yields() {  # MODE -> the sched_yield calls of python3 slow.py
  strace -f -qq -e trace=sched_yield -o "$work/trace" \
    env LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE="$1" PIPESPIN_SPIN_US=1000000 \
    "$py" "$work/slow.py" "$reads" || { echo "FAIL: slow.py failed in mode $1"; exit 1; }
  grep -c 'sched_yield(' "$work/trace"
}
fail=0
fixed=$(yields fixed)
off=$(yields off)
echo "sched_yield calls for $reads reads 20 ms apart: fixed $fixed, off $off"
[ "$fixed" -ge $((reads / 2)) ] || { echo "FAIL: fixed mode's spins did not yield"; fail=1; }
[ "$fixed" -le "$reads" ] || { echo "FAIL: more than one yield per spin"; fail=1; }
[ "$off" -eq 0 ] || { echo "FAIL: mode off yielded"; fail=1; }
exit $fail
