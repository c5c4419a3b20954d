#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install what is missing, build,
# and show pipespin on its built-in demo (a pipe ping-pong measured with and
# without the shim, interleaved).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. tools/deps.sh
pipespin_install_deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo
echo "== demo: 1-byte ping-pong between two processes, with and without pipespin =="
build/bin/pipespin pingpong --rounds 5
