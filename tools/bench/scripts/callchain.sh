#!/usr/bin/env bash
# What one more function frame between a program's read() and the spin's
# system call costs a spinning ping-pong: the spin floor (callchain.c, the
# floor of spinfloor.c) built with 0 and FRAMES frames around each look
# and around the spin loop, run side by side by perf_ab.sh (perf bench
# sched pipe, interleaved, per-round ratios to the bare floor). On the
# project's VM a frame around the loop, which the answer returns through
# after the spin's system calls, cost about 1.5% of a round trip, and a
# frame around each look nothing (why was not measured: no hardware
# counters there); the shim's read runs its spin loop two frames below the
# program's call for that reason (src/core/engine.cpp, wait_io_inline).
#   usage: [FRAMES=4] [ROUNDS=21] [LOOPS=1000000] tools/bench/scripts/callchain.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"
frames=${FRAMES:-4}
here=$(cd "$(dirname "$0")" && pwd)
command -v cc >/dev/null || { echo "missing cc (apt-get install gcc)" >&2; exit 1; }
case $frames in [1-8]) ;; *) echo "FRAMES must be 1 to 8" >&2; exit 2 ;; esac
bench_scratch
build() {  # name look_frames loop_frames
  cc -O2 -Wall -shared -fPIC -DLOOK_FRAMES="$2" -DLOOP_FRAMES="$3" -o "$work/$1.so" \
    "$here/callchain.c" -ldl
}
build floor 0 0
build look "$frames" 0
build loop 0 "$frames"
build both "$frames" "$frames"
echo "callchain.c: FRAMES=$frames frames around each look (look), around the spin loop (loop), both"
ROUNDS=${ROUNDS:-21} LOOPS=${LOOPS:-1000000} "$here/perf_ab.sh" floor="$work/floor.so@off" \
  look="$work/look.so@off" loop="$work/loop.so@off" both="$work/both.so@off"
