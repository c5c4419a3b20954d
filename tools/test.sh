#!/usr/bin/env bash
# Builds pipespin and runs every test (unit, end-to-end, CLI). Installs what
# is missing first, so it works on a fresh Debian 12 machine; CI runs this.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. tools/deps.sh
pipespin_install_deps
build=${PIPESPIN_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 300
