#!/usr/bin/env bash
# Secure execution: a setuid-root copy of rel_secure (linked against
# libpipespin.so, see secure.cpp), run as nobody, ignores PIPESPIN_*.
#
#   secure.sh HELPER
#
# Needs root (to make the setuid copy and to switch to nobody with setpriv)
# and a filesystem for the copy that honours setuid; otherwise it prints why
# and exits 77 (skipped). Nothing outside a temporary directory is changed.
set -u
helper=$1
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
failures=0

[[ $(id -u) == 0 ]] || skip "not root: cannot make a setuid-root copy or switch to another user"
command -v setpriv >/dev/null || skip "no setpriv to run the copy as an unprivileged user"
nobody=$(id -u nobody 2>/dev/null) || skip "no user nobody"
nogroup=$(id -g nobody)
as_nobody=(setpriv --reuid="$nobody" --regid="$nogroup" --clear-groups)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$helper" "$tmp/plain"
cp "$helper" "$tmp/setuid"
chown root:root "$tmp/setuid"
chmod 4755 "$tmp/setuid"

lib=$(ldd "$helper" | sed -n 's/.*libpipespin\.so => \([^ ]*\) .*/\1/p')
[[ -n $lib ]] || { echo "FAIL: $helper is not linked against libpipespin.so" >&2; exit 1; }
"${as_nobody[@]}" test -r "$lib" ||
  skip "nobody cannot read $lib (a parent directory is not searchable)"

env_args=(env -u LD_PRELOAD PIPESPIN_LOG=info PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000)

echo "--- control: the plain copy, run by nobody ---"
"${as_nobody[@]}" "${env_args[@]}" "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
status=$?
cat "$tmp/out" "$tmp/err"
[[ $status == 0 ]] || fail "the plain copy exited with status $status"
grep -q '^at_secure=0 ' "$tmp/out" || fail "the plain copy runs in secure mode"
grep -qE '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: waits=[0-9]+ spins=[1-9]' "$tmp/err" ||
  fail "the plain copy shows no exit report with spins: the control does not show the shim at work"

echo "--- the setuid-root copy, run by nobody ---"
"${as_nobody[@]}" "${env_args[@]}" PIPESPIN_SPIN_US=bogus "$tmp/setuid" >"$tmp/out" 2>"$tmp/err"
status=$?
cat "$tmp/out" "$tmp/err"
[[ $status == 0 ]] || fail "the setuid copy exited with status $status"
if ! grep -q '^at_secure=1 ' "$tmp/out"; then
  [[ $failures == 0 ]] && skip "the setuid copy did not run in secure mode (nosuid filesystem or no_new_privs?)"
fi
if grep -q pipespin "$tmp/err"; then
  fail "in secure-execution mode the shim read PIPESPIN_* (it reported or warned)"
fi

[[ $failures == 0 ]] || exit 1
echo "ok"
