#!/usr/bin/env bash
# Case tailcalls: read, __read_chk and write, and read_tracked and
# write_tracked where they pass the calls the engine looks at, pass every
# call on in tail position (a jmp, never a call and a return), so that
# libc's read and write return straight to the program and nothing of the
# shim runs after the syscall (docs/policy.md, "What it costs"). The only
# calls they may make are to the cheap first step (begin_read, begin_write),
# to __chk_fail, and to resolve_hook (the real function's resolution, once
# per process).
# A local whose address is taken, or work after the real call, turns the
# jump into a call: this looks at the machine code to catch that. read and
# write must also save no register (no push) on any path.
#
#   check_tailcalls.sh OBJDUMP LIB [BUILD_TYPE]
# Skipped (77) unless the build is optimized: -O0 makes no tail calls.
set -u
. "$(dirname "$0")/machine_code.sh"
lib=$2
machine_code_load "$@"
status=0
for fn in read __read_chk write "(anonymous namespace)::read_tracked(" \
          "(anonymous namespace)::write_tracked("; do
  body=$(machine_code_body "$fn")
  if [[ -z $body ]]; then
    echo "FAIL: no function $fn in $lib" >&2
    status=1
    continue
  fi
  bad=$(grep -E '[[:space:]]call' <<<"$body" | grep -vE '<pipespin::begin_(read|write)\(|<__chk_fail|<pipespin::interpose::resolve_hook\(')
  if [[ -n $bad ]]; then
    echo "FAIL: $fn calls where it should jump:" >&2
    echo "$bad" >&2
    status=1
  fi
  # read and write themselves save no register on any path: a call
  # inlined into them (a system call on a cold path is enough) makes the
  # compiler push callee-saved registers in the prologue, for every call
  # (callcost.sh: mode off went from 47 to 79 instructions a pair so).
  if [[ $fn == read || $fn == write ]] && grep -qE '[[:space:]]push' <<<"$body"; then
    echo "FAIL: $fn saves registers (something inlined into it makes a call):" >&2
    grep -E '[[:space:]]push' <<<"$body" >&2
    status=1
  fi
  if ! grep -qE '[[:space:]]jmp[[:space:]]+\*' <<<"$body"; then
    echo "FAIL: $fn never jumps to the real function (no indirect jmp)" >&2
    status=1
  fi
  [[ $status -eq 0 ]] && echo "$fn: every path ends in a jump" >&2
done
exit $status
