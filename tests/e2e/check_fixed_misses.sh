#!/usr/bin/env bash
# Mode fixed spins on every wait; where the spins mostly miss (a producer
# slower than spin_us), the exit report says so: `cat` reading 80 lines
# written 2 ms apart with a 50 µs budget misses nearly every spin, and its
# exit report at log=info has "mode fixed: N of M spins missed". Adaptive
# mode, which stops spinning there, says nothing of the kind.
#   check_fixed_misses.sh LIB
set -u
lib=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
produce() {
  for i in $(seq 80); do
    echo "$i"
    sleep 0.002
  done
}
status=0
for mode in fixed adaptive; do
  produce | env PIPESPIN_CONFIG= PIPESPIN_STATS= PIPESPIN_MODE=$mode PIPESPIN_SPIN_US=50 \
    PIPESPIN_LOG=info LD_PRELOAD="$lib" cat >/dev/null 2>"$work/err.$mode"
  line=$(grep -E 'exit pid=[0-9]+ read: mode fixed: [0-9]+ of [0-9]+ spins missed' "$work/err.$mode")
  echo "mode $mode: ${line:-no line on missed spins}"
  if [ "$mode" = fixed ] && [ -z "$line" ]; then
    echo "FAIL: mode fixed: the exit report does not say that the spins missed" >&2
    cat "$work/err.$mode" >&2
    status=1
  elif [ "$mode" = adaptive ] && [ -n "$line" ]; then
    echo "FAIL: mode adaptive: a line on fixed mode's missed spins" >&2
    status=1
  fi
done
exit $status
