#!/usr/bin/env bash
# Runs a command, and every process it starts, under strace and fails if any
# of them made one of the named system calls.
#
#   no_syscall.sh NAME[,NAME...] -- COMMAND [ARGS...]
#
# The command's stdout and stderr are its own (run.sh judges them); strace
# writes only to a file. The shim is preloaded into the command, not into
# strace: LD_PRELOAD is moved onto strace's -E. Exits 77 (skipped, with the
# reason) when strace is missing or may not trace here (no ptrace in a
# container, for one).
set -u
[[ $# -ge 3 && $2 == -- ]] || { echo "usage: no_syscall.sh NAME[,NAME...] -- COMMAND..." >&2; exit 2; }
names=$1
shift 2
if ! command -v strace >/dev/null; then
  echo "SKIP: strace is not installed (tools/deps.sh installs it)" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! env -u LD_PRELOAD strace -f -qq -o "$tmp/probe" -e trace=getpid true 2>"$tmp/probe.err"; then
  echo "SKIP: strace cannot trace here: $(head -1 "$tmp/probe.err")" >&2
  exit 77
fi
preload=()
[[ -n ${LD_PRELOAD:-} ]] && preload=(-E "LD_PRELOAD=$LD_PRELOAD")
env -u LD_PRELOAD strace -f -qq -o "$tmp/trace" -e trace="$names" "${preload[@]}" -- "$@"
status=$?
if [[ -s $tmp/trace ]]; then
  echo "FAIL: the command made system calls it must not ($names):" >&2
  head -20 "$tmp/trace" >&2
  echo "($(wc -l <"$tmp/trace") in all)" >&2
  exit 1
fi
exit $status
