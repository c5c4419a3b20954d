#!/usr/bin/env bash
# The system calls a program that takes many signals makes, under strace:
#
#   signal_syscalls.sh CONFIG LIBPIPESPIN SIGALRM_HELPER
#
# Runs the helper (tests/e2e/sigalrm.cpp, 10000 SIGALRMs) without the shim
# and with it in CONFIG (off, fixed or adaptive), each under
# `strace -f -e trace=rt_sigaction`, and compares the counts of
# rt_sigaction calls. The shim records SA_RESTART when a handler is
# installed: a delivery costs no system call of its own. In off (the A/B
# control arm) the shim's sigaction passes straight through: the counts must
# be equal. In the spinning modes the shim may read the installed actions
# back at start-up (one per signal that has a handler then: none here), so
# at most 64 more are allowed; a call per delivery would be 10000 more.
# Exit 0: pass, 77: skipped (strace missing or ptrace not allowed; the
# reason on stdout), anything else: fail.
set -uo pipefail

config=$1
lib=$2
helper=$3
case_name=signal_syscalls.$config
. "$(dirname "$0")/../case_lib.sh"
case_setup "${TMPDIR:-/tmp}/pipespin-sigsys"

signals=10000
command -v strace >/dev/null || skip "no strace (tools/deps.sh installs it)"
strace -f -qq -o /dev/null true 2>"$work/probe" ||
  skip "strace cannot trace here (ptrace not allowed?): $(head -1 "$work/probe")"

case "$config" in
  off) mode_env=(-E PIPESPIN_MODE=off) ;;
  fixed) mode_env=(-E PIPESPIN_MODE=fixed -E PIPESPIN_SPIN_US=1000) ;;
  adaptive) mode_env=(-E PIPESPIN_MODE=adaptive) ;;
  *) fail "unknown config '$config'" ;;
esac

# count NAME [strace -E options]: rt_sigaction calls of the helper.
count() {
  local name=$1
  shift
  strace -f -qq -e trace=rt_sigaction -e signal=none -o "$work/$name.trace" "$@" \
    "$helper" "$signals" >"$work/$name.out" 2>"$work/$name.err" ||
    { cat "$work/$name.err" >&2; fail "the helper failed ($name)"; }
  grep -q "^sigalrm: $signals signals$" "$work/$name.out" || fail "the helper's output ($name)"
  grep -c 'rt_sigaction(' "$work/$name.trace"
}

plain=$(count noshim)
shim=$(count "$config" -E LD_PRELOAD="$lib" -E PIPESPIN_CONFIG= "${mode_env[@]}")
echo "rt_sigaction calls for $signals SIGALRMs: no shim $plain, $config $shim"
if [[ $config == off ]]; then
  [[ $shim -eq $plain ]] || { cat "$work/$config.trace" | sort | uniq -c | sort -rn | head >&2; fail "off makes $shim rt_sigaction calls, no shim $plain"; }
else
  [[ $shim -le $((plain + 64)) ]] ||
    { cat "$work/$config.trace" | sort | uniq -c | sort -rn | head >&2; fail "$config makes $shim rt_sigaction calls, no shim $plain"; }
fi
echo "ok ($case_name)"
