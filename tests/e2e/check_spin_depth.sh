#!/usr/bin/env bash
# Case spin_depth: a read's spin loop runs in continue_read() itself, two
# frames below the program's read (read_waiting() in the wrapper, then
# continue_read()): every frame its answer returns through, entered
# before the spin's system calls, cost a spinning round trip about 1.5%
# (tools/bench/scripts/callchain.sh). So continue_read makes the look's
# system call itself (a call of pipespin_gated_syscall, the gate), and
# calls none of the functions the loop or the look could be left in:
# spin(), spin_on_fd(), wait_io(), Looker's call, read_nowait(). The
# compiler's inlining is what keeps them there (src/core/engine.cpp,
# wait_io_inline): this looks at the machine code to catch a change.
#
#   check_spin_depth.sh OBJDUMP LIB [BUILD_TYPE]
# Skipped (77) unless the build is optimized: -O0 inlines nothing.
set -u
. "$(dirname "$0")/machine_code.sh"
lib=$2
machine_code_load "$@"
body=$(machine_code_body "pipespin::continue_read(")
if [[ -z $body ]]; then
  echo "FAIL: no function pipespin::continue_read in $lib" >&2
  exit 1
fi
status=0
calls=$(grep -E '[[:space:]]call' <<<"$body")
if ! grep -q '<pipespin_gated_syscall>' <<<"$calls"; then
  echo "FAIL: continue_read makes no system call through the gate itself" >&2
  status=1
fi
bad=$(grep -E 'engine::spin<|spin_on_fd<|::wait_io\(|Looker::operator\(\)|sys::read_nowait' <<<"$calls")
if [[ -n $bad ]]; then
  echo "FAIL: continue_read leaves its spin or its look to a call:" >&2
  echo "$bad" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "continue_read: the spin loop and its look are inline" >&2
exit $status
