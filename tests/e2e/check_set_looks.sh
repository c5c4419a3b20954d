#!/usr/bin/env bash
# A poll on a set that holds no pipe costs no system call of the shim's once
# the kernel has read its array (engine_sets.cpp, poll_array_read()): the
# shim's first look, a zero-timeout poll before the real one, is made only
# where a spin may follow. Counted with strace, against the same program
# without the shim: python3 polling one end of a socketpair 300 times with a
# 1 ms timeout (select.poll keeps its array), default adaptive mode:
#   - at most 1 poll or ppoll more than without the shim (the array's first
#     call, which the kernel validates first);
#   - select (its sets found readable by the kernel, one rt_sigprocmask
#     probe each, where the thread has not passed them before): at most two
#     system calls more (python's first select runs at another stack depth
#     than the rest), with a pipe the shim knows below the socket;
#   - the same with the set's length changing on every call (the other end
#     registered and unregistered in turn), a new array to the shim, which
#     looks first every time (so the check above can fail: here it must).
# Counts, not time.
#   check_set_looks.sh LIB
set -u
lib=$(realpath "$1")
command -v strace >/dev/null || { echo "SKIP: strace is not installed (apt-get install strace)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/polls.py" <<'PY'
import os, select, socket, sys
if sys.argv[1] == "select":  # a pipe the shim knows (from pipe()), below the socket
    r, w = os.pipe()
    a, b = socket.socketpair()
    for i in range(300):
        if select.select([a], [], [], 0.001)[0]:
            sys.exit("ready")
    print("ok")
    sys.exit(0)
a, b = socket.socketpair()
p = select.poll()
p.register(a, select.POLLIN)
for i in range(300):
    if sys.argv[1] == "fresh":  # nothing comes to b either; the set's length changes
        p.register(b, select.POLLIN) if i % 2 else p.unregister(b) if i else None
    if p.poll(1) and sys.argv[1] == "kept":
        sys.exit("ready")
print("ok")
PY

# poll and ppoll calls (select, pselect6 and the shim's probes, an
# rt_sigprocmask with an invalid `how`, for ARG select) of python3 polls.py
# ARG, with the given environment.
polls() {  # ARG ENV...
  local arg=$1
  shift
  env "$@" strace -f -qq -e trace=poll,ppoll,select,pselect6,rt_sigprocmask -o "$work/trace" \
    python3 "$work/polls.py" "$arg" >/dev/null ||
    { echo "FAIL: polls.py $arg failed" >&2; exit 1; }
  awk '/^[0-9]* *((p?poll|p?select6?)\(|rt_sigprocmask\(0xffffffff)/ { n++ } END { print n + 0 }' \
    "$work/trace"
}

shim=(LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=adaptive)
status=0
none=$(polls kept) || exit 1
kept=$(polls kept "${shim[@]}") || exit 1
echo "300 polls of a socket, one array: $none poll calls without the shim, $kept adaptive"
if [ "$kept" -gt $((none + 1)) ]; then
  echo "FAIL: the shim looked at a set without a pipe whose array the kernel had read ($kept > $none + 1)" >&2
  status=1
fi
none=$(polls select) || exit 1
kept=$(polls select "${shim[@]}") || exit 1
echo "300 selects of a socket, a known pipe below it: $none calls without the shim, $kept adaptive"
if [ "$kept" -gt $((none + 2)) ]; then
  echo "FAIL: the shim asked the kernel about a select's sets more than twice ($kept > $none + 2)" >&2
  status=1
fi
none=$(polls fresh) || exit 1
fresh=$(polls fresh "${shim[@]}") || exit 1
echo "300 polls of a socket, the set's length changing: $none poll calls without the shim, $fresh adaptive"
if [ "$fresh" -lt $((2 * none)) ]; then
  echo "FAIL: fewer than one look per call where the kernel had not read the array ($fresh < 2 x $none): the check above cannot fail" >&2
  status=1
fi
exit $status
