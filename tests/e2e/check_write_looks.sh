#!/usr/bin/env bash
# A write's look never polls the pipe (engine.cpp, look_for_room()): a poll
# of a pipe marks it for good as one epoll may watch, and every later write
# into it then wakes its readers' queue, which made hackbench's writers 10%
# slower. Counted with strace: python3 sending 2000 records of 100 bytes
# through a pipe to a child that answers each with one byte through
# another (so neither pipe ever holds more than a record, however the
# load delays either end), in mode fixed (every write may look and spin)
# and adaptive; then 200 writes of 8 KiB (over PIPE_BUF, so never
# credited: every one looks) into a pipe a child drains:
#   - no poll, ppoll, select or pselect6 more than without the shim (the
#     program makes none);
#   - in mode fixed, the 4000 small writes looked (FIONREAD) at most once
#     in 16: the room one look proves free is credited to the next writes
#     (without it, every write looks);
#   - the 8 KiB writes looked more than 100 times, so the checks above saw
#     looks and can fail.
# Counts, not time.
#   check_write_looks.sh LIB
set -u
lib=$(realpath "$1")
command -v strace >/dev/null || { echo "SKIP: strace is not installed (apt-get install strace)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
strace -f -qq -o /dev/null true 2>/dev/null || { echo "SKIP: strace cannot trace here (ptrace not allowed?)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/writes.py" <<'PY'
import os, sys
size, count = int(sys.argv[1]), int(sys.argv[2])
pingpong = size <= 4096
r, w = os.pipe()
ar, aw = os.pipe()  # the answers, in a ping-pong
pid = os.fork()
if pid == 0:
    os.close(w)
    os.close(ar)
    got = 0
    while True:
        b = os.read(r, size if pingpong else 65536)
        if not b:
            break
        got += len(b)
        if pingpong and got % size == 0:
            os.write(aw, b"k")
    os._exit(0 if got == size * count else 1)
os.close(r)
os.close(aw)
data = b"x" * size
for i in range(count):
    if os.write(w, data) != size:
        sys.exit("short write")
    if pingpong and os.read(ar, 1) != b"k":
        sys.exit("no answer")
os.close(w)
_, status = os.waitpid(pid, 0)
sys.exit(0 if status == 0 else "reader saw the wrong byte count")
PY
# "polls ioctls" of python3 writes.py SIZE COUNT, with the given environment.
counts() {  # SIZE COUNT ENV...
  local size=$1 count=$2
  shift 2
  env "$@" strace -f -qq -e trace=poll,ppoll,select,pselect6,ioctl -o "$work/trace" \
    python3 "$work/writes.py" "$size" "$count" >/dev/null ||
    { echo "FAIL: writes.py $size $count failed" >&2; exit 1; }
  awk '/^[0-9]* *(p?poll|p?select6?)\(/ { p++ } /^[0-9]* *ioctl\([0-9]*, FIONREAD/ { f++ }
       END { print p + 0, f + 0 }' "$work/trace"
}

status=0
read -r none_polls _ < <(counts 100 2000) || exit 1
for mode in fixed adaptive; do
  read -r polls looks < <(counts 100 2000 LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=$mode) || exit 1
  echo "2000 records of 100 bytes and their answers, $mode: $polls polls ($none_polls without the shim), $looks FIONREAD looks"
  if [ "$polls" -gt "$none_polls" ]; then
    echo "FAIL: the shim polled a pipe the program never polls ($mode: $polls > $none_polls)" >&2
    status=1
  fi
  if [ "$mode" = fixed ] && [ "$looks" -gt $((4000 / 16)) ]; then
    echo "FAIL: writes into pipes with room looked more than once in 16 ($looks > 250)" >&2
    status=1
  fi
done
read -r none_polls _ < <(counts 8192 200) || exit 1
read -r polls looks < <(counts 8192 200 LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=fixed) || exit 1
echo "200 writes of 8 KiB, fixed: $polls polls ($none_polls without the shim), $looks FIONREAD looks"
if [ "$polls" -gt "$none_polls" ]; then
  echo "FAIL: the shim polled a pipe the program never polls (8 KiB writes: $polls > $none_polls)" >&2
  status=1
fi
if [ "$looks" -le 100 ]; then
  echo "FAIL: 8 KiB writes looked only $looks times: the checks above may not see looks at all" >&2
  status=1
fi
exit $status
