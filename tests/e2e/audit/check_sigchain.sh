#!/usr/bin/env bash
# Another preload that interposes signal() and sigset() (the JDK's libjsig
# does, to chain the JVM's handlers), loaded after the shim
# (LD_PRELOAD="libpipespin.so:PEER", the order `pipespin run` gives when
# LD_PRELOAD already names it), sees the program's calls as it does without
# the shim, in every mode: the shim's signal() family calls the next
# definition of its own name while no handler is wrapped (before a first
# spin; always in mode off). It rebuilt them on sigaction, and the peer's
# signal() never ran (the third audit: libjsig's deprecation warning
# missing from a child's stderr, in mode off too).
#   check_sigchain.sh LIB PEER PROGRAM
set -u
lib=$1 peer=$2 prog=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
run() {  # NAME PRELOAD [VAR=VALUE...]
  local name=$1 preload=$2
  shift 2
  env -u LD_PRELOAD PIPESPIN_CONFIG= "$@" LD_PRELOAD="$preload" "$prog" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc -ne 0 ] || [ "$(cat "$work/out")" != "sigchain: ok" ]; then
    echo "FAIL: $name: exit $rc, stdout '$(cat "$work/out")'" >&2
    status=1
  fi
  for call in signal sigset; do
    if ! grep -qx "peer: $call" "$work/err"; then
      echo "FAIL: $name: the peer preload's $call() did not run (stderr: $(tr '\n' '|' <"$work/err"))" >&2
      status=1
    fi
  done
}
run "no shim" "$peer"
for mode in off adaptive fixed; do
  run "mode $mode" "$lib:$peer" PIPESPIN_MODE=$mode
done
[ $status -eq 0 ] && echo "check_sigchain: the peer saw signal() and sigset() in every mode"
exit $status
