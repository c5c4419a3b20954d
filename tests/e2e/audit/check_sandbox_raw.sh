#!/usr/bin/env bash
# A privileged process that installs a seccomp filter with
# syscall(SYS_seccomp) and no no_new_privs (the case the prctl hook cannot
# see) runs as without the shim, in every mode: the shim's syscall() stub
# (x86_64) steps aside before the filter. Skipped (77) where the test runs
# without CAP_SYS_ADMIN (the program says so) or on another architecture.
#   check_sandbox_raw.sh LIB PROGRAM
set -u
lib=$1 prog=$2
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: syscall() is hooked on x86_64 only"; exit 77; }
out=$(env -u LD_PRELOAD "$prog" raw 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
  echo "$out"
  exit 77
fi
[ $rc -eq 0 ] && [ "$out" = "sandbox: ok" ] || { echo "FAIL: without the shim: exit $rc: $out" >&2; exit 1; }
status=0
for mode in off adaptive fixed; do
  out=$(env -u LD_PRELOAD PIPESPIN_CONFIG= PIPESPIN_MODE=$mode PIPESPIN_STATS=stderr PIPESPIN_LOG=info \
    LD_PRELOAD="$lib" "$prog" raw 2>/dev/null)
  rc=$?
  if [ $rc -ne 0 ] || [ "$out" != "sandbox: ok" ]; then
    echo "FAIL: mode $mode: exit $rc (a signal: $((rc > 128 ? rc - 128 : 0))), stdout '$out'" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "check_sandbox_raw: a filter installed with syscall(SYS_seccomp) killed nothing, every mode"
exit $status
