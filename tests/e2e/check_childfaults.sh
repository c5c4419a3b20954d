#!/usr/bin/env bash
# A forked child that only calls _exit takes about as many page faults with
# the shim as without it (in mode off and adaptive): the libc functions a
# child calls through the shim are looked up in the parent, before its
# first fork (the fork hook), not in each child, where the look-up read
# libc's symbol tables afresh: 8 faults more per child (25 against 17).
# Counts, not time: the same in any run on a host, up to a fault or so.
# Then the parent's side (below).
#   check_childfaults.sh HELPER LIB
set -u
helper=$1 lib=$2
none=$(env -u LD_PRELOAD "$helper" 300) || { echo "FAIL: the helper failed without the shim" >&2; exit 1; }
status=0
for mode in off adaptive; do
  with=$(LD_PRELOAD="$lib" PIPESPIN_MODE=$mode PIPESPIN_CONFIG= "$helper" 300) ||
    { echo "FAIL: the helper failed with the shim (mode $mode)" >&2; exit 1; }
  echo "page faults per forked child: $none without the shim, $with with it (mode $mode)"
  if ! awk -v a="$with" -v b="$none" 'BEGIN { exit !(a <= b + 3) }'; then
    echo "FAIL: the shim adds more than 3 page faults to a forked child that calls _exit (mode $mode)" >&2
    status=1
  fi
done
# The parent of a $(...)-like loop: a pipe, a fork, the child writing into
# it, the parent reading it to EOF. The shim writes the fd table's first page
# after each fork (the close of the write end: one copy-on-write fault), and
# nothing else: errno, on libc's TLS page, is put back without a store when
# it did not change (it was one fault more per iteration, 3.0 against 2.0).
pnone=$(env -u LD_PRELOAD "$helper" 300 parent) || { echo "FAIL: the parent case failed without the shim" >&2; exit 1; }
for mode in off adaptive; do
  with=$(LD_PRELOAD="$lib" PIPESPIN_MODE=$mode PIPESPIN_CONFIG= "$helper" 300 parent) ||
    { echo "FAIL: the parent case failed with the shim (mode $mode)" >&2; exit 1; }
  echo "a forking parent's page faults per iteration: $pnone without the shim, $with with it (mode $mode)"
  if ! awk -v a="$with" -v b="$pnone" 'BEGIN { exit !(a <= b + 1.5) }'; then
    echo "FAIL: the shim adds more than 1.5 page faults per fork to a parent reading its child's pipe (mode $mode)" >&2
    status=1
  fi
done
exit $status
