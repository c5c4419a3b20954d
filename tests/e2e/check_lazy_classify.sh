#!/usr/bin/env bash
# The shim classifies a fd it did not make (one fstat) only on the fd's third
# call, unless statistics lines count every call (Runtime::classify_looks): a
# file a program reads to its end in two reads (grep, cat, a compiler) costs
# no system call of the shim's, while a pipe read many times still is
# classified (and may spin). Counted with strace, against the same command
# without the shim, so that the program's own fstat calls cancel out:
#   - grep -c over 20 files (a read and the read of EOF each), stdout written
#     20 times: at most 1 fstat more than without the shim (stdout's);
#   - wc -l of a pipe that seq fills (many reads): exactly 1 more (the pipe);
#   - the same grep with statistics lines on: at least 20 more (every file is
#     classified on its first read, as the shim did before it counted looks):
#     the check above can fail.
# Counts, not time.
#   check_lazy_classify.sh LIB
set -u
lib=$1
command -v strace >/dev/null || { echo "SKIP: strace is not installed (apt-get install strace)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=()
for i in $(seq 20); do
  seq $((i * 100)) > "$work/f$i"
  files+=("$work/f$i")
done

# fstat calls of CMD (every process), with the given environment; stdin is
# the caller's. In $(...): the caller exits on its failure.
fstats() {  # ENV... -- CMD...
  local pre=()
  while [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  env "${pre[@]}" strace -f -qq -e trace=fstat -o "$work/trace" "$@" >/dev/null ||
    { echo "FAIL: $* failed" >&2; exit 1; }
  awk '/^[0-9]* *fstat\(/ { n++ } END { print n + 0 }' "$work/trace"
}

shim=(LD_PRELOAD="$lib" PIPESPIN_CONFIG= PIPESPIN_MODE=adaptive)
status=0
none=$(fstats -- grep -c . "${files[@]}" </dev/null) || exit 1
lazy=$(fstats "${shim[@]}" -- grep -c . "${files[@]}" </dev/null) || exit 1
eager=$(fstats "${shim[@]}" PIPESPIN_STATS="$work/stats" -- grep -c . "${files[@]}" </dev/null) || exit 1
echo "grep -c over 20 files, fstat calls: $none without the shim, $lazy adaptive, $eager adaptive with statistics"
if [ $((lazy - none)) -gt 1 ]; then
  echo "FAIL: the shim classified files read once (more than stdout's fstat)" >&2
  status=1
fi
if [ $((eager - none)) -lt 20 ]; then
  echo "FAIL: with statistics every file read is classified at its first read ($eager - $none < 20)" >&2
  status=1
fi
pnone=$(seq 200000 | fstats -u LD_PRELOAD -- wc -l) || exit 1
plazy=$(seq 200000 | fstats "${shim[@]}" -- wc -l) || exit 1
echo "wc -l of a pipe, fstat calls: $pnone without the shim, $plazy adaptive"
if [ $((plazy - pnone)) -ne 1 ]; then
  echo "FAIL: the pipe wc reads many times was not classified exactly once" >&2
  status=1
fi
exit $status
