#!/usr/bin/env bash
# The first fread of a stream on a pipe, before glibc has given the stream a
# buffer, waits (and spins) as any other: sort, whose first fread asks for
# its whole input, fed 20 lines 10 ms apart, in mode fixed with a 3 ms
# budget, spins through the stdio hooks (its exit report: stdio=N/M with
# N > 0), and sorts as it does without the shim. A fread that went whole to
# libc would wait inside it, unseen: 0 spins.
#   check_fread_fresh.sh LIB
set -u
lib=$1
command -v sort >/dev/null || { echo "SKIP: sort is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
produce() {
  for i in $(seq 20 -1 1); do
    echo "$i"
    sleep 0.01
  done
}
want=$(seq 1 20 | tr '\n' ' ')
plain=$(produce | env -u LD_PRELOAD sort -n | tr '\n' ' ')
[ "$plain" = "$want" ] || { echo "FAIL: sort without the shim printed '$plain'" >&2; exit 1; }
got=$(produce | env PIPESPIN_CONFIG= PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=3000 PIPESPIN_LOG=info \
  PIPESPIN_STATS= LD_PRELOAD="$lib" sort -n 2>"$work/err" | tr '\n' ' ')
status=0
if [ "$got" != "$want" ]; then
  echo "FAIL: sort under the shim printed '$got', want '$want'" >&2
  status=1
fi
spins=$(sed -n 's/.*spins by hook:.* stdio=\([0-9]*\)\/[0-9]*.*/\1/p' "$work/err" | head -1)
echo "sort's stdio spins: ${spins:-none}"
if [ -z "$spins" ] || [ "$spins" -eq 0 ]; then
  echo "FAIL: sort's first fread did not spin (its exit report: stdio=${spins:-missing})" >&2
  cat "$work/err" >&2
  status=1
fi
exit $status
