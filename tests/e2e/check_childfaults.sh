#!/usr/bin/env bash
# What a fork costs in page faults with the shim (modes off and adaptive)
# against without it. Counts, not time: the same in any run on a host, up to
# a fault or so.
#  - A forked child that only calls _exit: at most 3 more. The libc functions
#    a child calls through the shim are looked up in the parent, before its
#    first fork (the fork hook), not in each child, where the look-up read
#    libc's symbol tables afresh: 8 faults more per child (25 against 17).
#  - The parent of a $(...)-like loop (a pipe, a fork, the child writing into
#    it, the parent reading it to EOF): at most 0.5 more per iteration, on
#    an idle host and beside two busy loops. Once the first pipes were read
#    to EOF and closed within a few calls, adaptive makes the new pipes
#    quiet (fdbits::kQuiet): nothing about them is written after pipe(), so
#    the parent writes no page of the shim's after a fork but when the
#    mark's 4 ms tick moves on, and for the one pipe in 16 it still watches
#    (2.2 against 2.0 here; it was 3.0 to 3.9 when every pipe was tracked:
#    the close of the write end wrote the table's first page after each
#    fork, a copy-on-write fault, and the shim's deeper frames in a watched
#    read reached a stack page the program's own do not in about half the
#    runs, by where ASLR starts the stack). errno, on libc's TLS page, is put
#    back without a store when it did not change. The fewest of 12 runs.
#  - A process's first use of the shim's pages (its first read the shim
#    looks at; its first fast lane), in a forked child of a parent that never
#    used them, against one whose parent did (the helper's read and lane
#    cases print the difference): at most 1.5 faults more in adaptive mode
#    than in mode off. A page the shim read before it wrote it was two
#    faults in such a child (the zero page, then the write) where one will
#    do: the fd table's first page (2.00 in the read case before), the
#    lanes' page; and the shim's getauxval, bound lazily in each child (7
#    faults: 13-15 in the lane case against mode off's 5, which is libc's
#    pipe looked up in the child). What is left in the read case is the
#    table's mark of its first use, on the engine's page (1.00).
#   check_childfaults.sh HELPER LIB
set -u
helper=$1 lib=$2
status=0

# fewest RUNS ENV...: the helper's least figure over RUNS runs (the helper's
# arguments in $args).
fewest() {
  local runs=$1 least="" v i
  shift
  for ((i = 0; i < runs; i++)); do
    v=$(env "$@" "$helper" 300 $args) || return 1
    least=$(awk -v a="$v" -v b="$least" 'BEGIN { print (b == "" || a < b) ? a : b }')
  done
  echo "$least"
}

# compare WHAT LIMIT RUNS [parent]: the helper's figure (the fewest of RUNS
# runs) without the shim and with it in each mode; fail where the shim adds
# more than LIMIT.
compare() {
  local what=$1 limit=$2 runs=$3 none with mode
  args=${4:-}
  none=$(fewest "$runs" -u LD_PRELOAD) ||
    { echo "FAIL: the helper failed without the shim ($what)" >&2; exit 1; }
  for mode in off adaptive; do
    with=$(fewest "$runs" LD_PRELOAD="$lib" PIPESPIN_MODE=$mode PIPESPIN_CONFIG=) ||
      { echo "FAIL: the helper failed with the shim ($what, mode $mode)" >&2; exit 1; }
    echo "page faults $what: $none without the shim, $with with it (mode $mode)"
    if ! awk -v a="$with" -v b="$none" -v l="$limit" 'BEGIN { exit !(a <= b + l) }'; then
      echo "FAIL: the shim adds more than $limit page faults $what (mode $mode)" >&2
      status=1
    fi
  done
}

# first WHAT: the helper's first-use case WHAT, adaptive against off.
first() {
  local what=$1 off adaptive
  args=$what
  off=$(fewest 3 LD_PRELOAD="$lib" PIPESPIN_MODE=off PIPESPIN_CONFIG=) ||
    { echo "FAIL: the helper failed ($what, mode off)" >&2; exit 1; }
  adaptive=$(fewest 3 LD_PRELOAD="$lib" PIPESPIN_MODE=adaptive PIPESPIN_CONFIG=) ||
    { echo "FAIL: the helper failed ($what, mode adaptive)" >&2; exit 1; }
  echo "page faults of a first use ($what), fresh pages against shared ones: $off in mode off, $adaptive in adaptive"
  if ! awk -v a="$adaptive" -v b="$off" 'BEGIN { exit !(a <= b + 1.5) }'; then
    echo "FAIL: a first use ($what) costs more than 1.5 page faults more in adaptive mode than in off" >&2
    status=1
  fi
}

compare "per forked child that calls _exit" 3 1
first read
first lane
compare "per iteration to a forking parent that reads its child's pipe" 0.5 12 parent
# The same beside two busy loops: there the child has often written before
# its parent reads, and the pipes must still be judged one-shots (quiet
# pipes are decided by what the pipes do, not by how long their waits took).
busy=()
for i in 1 2; do
  (while :; do :; done) &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT
compare "per iteration to a forking parent that reads its child's pipe, beside two busy loops" \
  0.5 12 parent
exit $status
