#!/usr/bin/env bash
# Installs, from Debian's packages, whatever pipespin needs that is missing.
# Sourced by setup.sh and test.sh; safe to run again (installs nothing twice).
set -euo pipefail

pipespin_packages=(
  g++ cmake make pkg-config          # build
  libfmt-dev libspdlog-dev catch2    # compiled-in logging, unit tests
  libcli11-dev                       # argument parsing of pipespin and pipespin-bench
  nlohmann-json3-dev                 # JSON in pipespin and pipespin-bench (--json, stats lines)
  python3                            # tests parse JSON and drive e2e cases
  strace                             # tests/e2e: mode off makes no shim's syscalls
  python3-jsonschema                 # tests validate statistics lines (docs/stats.schema.json)
  linux-perf rt-tests                # perf bench sched pipe, hackbench
  gnuplot-nox                        # benchmark charts
  time                               # /usr/bin/time for tools/bench/interpose.sh
  strace                             # tests: the system calls a program makes
  xz-utils zstd perl                 # programs `pipespin-bench coverage` runs
  man-db                             # tests/install renders the manual pages
  strace                             # tests/e2e counts a program's system calls
  clang libclang-rt-dev              # libFuzzer for tools/fuzz.sh (CI runs it)
)

pipespin_install_deps() {
  local missing=()
  for p in "${pipespin_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "pipespin: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  pipespin_install_deps
fi
