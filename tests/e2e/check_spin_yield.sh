#!/usr/bin/env bash
# A spin that has not seen its answer by its 8th look gives its CPU away
# (engine_detail.h, kYieldAt), and again at its 16th, 32nd, 64th... look
# (yields_at()): a peer that needs that very CPU runs at once instead of
# after the whole budget, even where the scheduler refused the first
# yield. Counted with strace: python3 reads 20 bytes that a child writes
# 20 ms apart, so that every wait outlasts a spin's first looks, in mode
# fixed with a 1 s budget (each wait spins until its byte comes):
#   - at least 10 sched_yield calls (the spins yield; without the yield
#     there are none), and more than one per read (each wait lasts
#     hundreds of looks, even under strace: a spin that yielded only once
#     would leave a refused yield its last);
#   - at most log2(looks) per read, the looks being the spins' preadv2
#     calls (a yield at each doubling of a spin's looks, not one every few
#     looks: that would be thousands);
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
yields() {  # MODE -> "sched_yield calls, preadv2 calls" of python3 slow.py
  strace -f -qq -e trace=sched_yield,preadv2 -o "$work/trace" \
    env LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE="$1" PIPESPIN_SPIN_US=1000000 \
    "$py" "$work/slow.py" "$reads" || { echo "FAIL: slow.py failed in mode $1"; exit 1; }
  echo "$(grep -c 'sched_yield(' "$work/trace") $(grep -c 'preadv2(' "$work/trace")"
}
fail=0
read -r fixed looks <<<"$(yields fixed)"
read -r off _ <<<"$(yields off)"
# floor(log2(looks)): no spin had more looks than all of them together.
log2=0
for ((l = looks; l > 1; l /= 2)); do log2=$((log2 + 1)); done
echo "sched_yield calls for $reads reads 20 ms apart: fixed $fixed (in $looks looks), off $off"
[ "$fixed" -ge $((reads / 2)) ] || { echo "FAIL: fixed mode's spins did not yield"; fail=1; }
[ "$fixed" -gt "$reads" ] || { echo "FAIL: one yield per spin, not one per doubling of its looks"; fail=1; }
[ "$fixed" -le $((reads * log2)) ] || { echo "FAIL: more than log2($looks) = $log2 yields per spin"; fail=1; }
[ "$off" -eq 0 ] || { echo "FAIL: mode off yielded"; fail=1; }
exit $fail
