#!/usr/bin/env bash
# Whether a missed spin's run delay tells a peer on this thread's CPU from a
# peer on its own CPU that wakes slowly (tools/bench/scripts/rundelay.c; no shim
# involved: it measures the signal, not pipespin). Three placements, run in
# turn ROUNDS times: both ends on CPU 0 and both spinning (each answer comes
# a whole spin of the peer's late), the ends on CPUs 0 and 1 with the peer
# blocking and a short budget (so that its wake-ups outlast the spin), and
# both on CPU 0 with the peer blocking (a direct switch).
#   usage: tools/bench/scripts/rundelay.sh [ROUNDS] [ROUND_TRIPS] [BUDGET_US] [SHORT_BUDGET_US]
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds=${1:-3}
trips=${2:-2000}
budget=${3:-50}
short=${4:-5}
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs two usable CPUs" >&2; exit 1; }
[ -r /proc/thread-self/schedstat ] || { echo "no /proc/thread-self/schedstat (CONFIG_SCHED_INFO)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bench_scratch
cc -O2 -Wall -o "$work/rundelay" "$here/rundelay.c"
for _ in $(seq "$rounds"); do
  "$work/rundelay" 0 0 1 "$trips" "$budget"
  "$work/rundelay" 0 1 0 "$trips" "$short"
  "$work/rundelay" 0 0 0 "$trips" "$budget"
done
