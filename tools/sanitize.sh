#!/usr/bin/env bash
# Sanitizer runs: builds pipespin twice, with -fsanitize=address,undefined
# and with -fsanitize=thread, each in its own build directory, and in each:
#
#   1. runs the unit tests (ctest -L unit): the core, instrumented;
#   2. builds the reliability stress helper (tests/reliability/stress.cpp)
#      with the same sanitizer and runs it for a few seconds (4 pipes, a
#      writer and a reader thread on each, a signal every 100 µs) five
#      times: without the shim; with the sanitized shim in fixed mode (1 s
#      budget); in adaptive mode; in adaptive mode with 1 pipe (with 8
#      busy threads on a small machine the adaptive run-queue gate stops all
#      spinning; with 2 it may spin, if the machine is otherwise quiet); and
#      with a config file rewritten every 20 ms (fixed, adaptive, off) and
#      re-checked every 1 ms, so that live reloads run while the other
#      threads spin and block and signals arrive.
#
# How the shim meets the sanitizer:
#   asan  by LD_PRELOAD, as users run it. A sanitized shared library cannot
#         be preloaded into an unsanitized program (ASan must come first in
#         the initial library list), so the stress helper is built with the
#         sanitizer too and the runtime is named first:
#           LD_PRELOAD="$(gcc -print-file-name=libasan.so):$dir/lib/libpipespin.so"
#         ASan's interceptors (read, write, poll, sigaction, ...) call the
#         shim's, which call libc's.
#   tsan  linked in. Preloaded after libtsan, the instrumented shim is
#         called by TSan's own initialisation (its sigaction goes to the next
#         definition, the shim's) before TSan can run instrumented code, and
#         crashes in __tsan_func_entry. So the shim's sources (the same lists
#         as the pipespin and pipespin_core targets in CMakeLists.txt) are
#         compiled with the sanitizer into the stress executable itself: its
#         read, write, poll, sigaction... are the shim's wrappers, whose
#         dlsym(RTLD_NEXT) finds TSan's interceptors, then libc.
# Either way the run checks that the shim really was there (its exit report,
# with spins in fixed mode).
#
# Any sanitizer report fails the run (halt_on_error, and the logs are
# searched for reports as well); the script exits nonzero on any failure.
# It takes about 5 minutes on 2 cores, most of it compiling.
#
#   tools/sanitize.sh [asan|tsan]...     (default: both)
#
# Environment: PIPESPIN_SANITIZE_DIR (default build-sanitize) holds the
# build directories and logs; STRESS_SECONDS (default 3).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PIPESPIN_SANITIZE_DIR:-$here/build-sanitize}
seconds=${STRESS_SECONDS:-3}
jobs=$(nproc)
kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(asan tsan)

failures=0
fail() { echo "sanitize.sh: FAIL: $*" >&2; failures=$((failures + 1)); }
note() { echo "sanitize.sh: $*"; }

# Sanitizer reports, whatever the exit status says.
has_report() {
  grep -qE '^(==[0-9]+==ERROR: (Address|Leak|Undefined)Sanitizer|.*runtime error: |WARNING: ThreadSanitizer|ThreadSanitizer: |SUMMARY: (Address|Undefined|Thread)Sanitizer)' "$1"
}

# The flags CMakeLists.txt gives everything in libpipespin.so.
SHIM_FLAGS="-fno-exceptions -fno-rtti -fasynchronous-unwind-tables -U_FORTIFY_SOURCE"
# The release the shim reports (pipespin_version()), as CMakeLists.txt defines it.
IFS=. read -r v_major v_minor v_patch < <(sed -n 's/^project(pipespin VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")
SHIM_FLAGS+=" -DPIPESPIN_VERSION_MAJOR=$v_major -DPIPESPIN_VERSION_MINOR=$v_minor -DPIPESPIN_VERSION_PATCH=$v_patch"

# The sources of the pipespin and pipespin_core targets, from CMakeLists.txt.
shim_sources() {
  awk '/^add_library\((pipespin_platform OBJECT|pipespin_core STATIC|pipespin SHARED)/ { on = 1; next }
       on { for (i = 1; i <= NF; ++i) { f = $i; sub(/\)$/, "", f); if (f ~ /\.(cpp|c)$/) print f }
            if ($0 ~ /\)/) on = 0 }' "$here/CMakeLists.txt"
}

run_kind() {
  local kind=$1 flags runtime opts_var opts
  case "$kind" in
    asan)
      # vptr needs RTTI, which the shim is built without.
      flags="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
      runtime=$(gcc -print-file-name=libasan.so)
      opts_var=ASAN_OPTIONS
      opts="halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=66"
      export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
      ;;
    tsan)
      flags="-fsanitize=thread -fno-omit-frame-pointer -g -O1"
      runtime=$(gcc -print-file-name=libtsan.so)
      opts_var=TSAN_OPTIONS
      opts="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
      ;;
    *) echo "sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2; return 2 ;;
  esac
  [[ -f $runtime ]] || { fail "$kind: no sanitizer runtime ($runtime): install the gcc sanitizer libraries"; return; }
  local dir=$out/$kind logs=$out/$kind/logs
  mkdir -p "$logs"
  note "$kind: configuring and building in $dir ($flags)"
  if ! cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESPIN_WERROR=OFF \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >"$logs/configure.log" 2>&1; then
    fail "$kind: cmake configure failed (see $logs/configure.log)"; return
  fi
  if ! cmake --build "$dir" -j"$jobs" --target pipespin pipespin_log unit_tests >"$logs/build.log" 2>&1; then
    tail -30 "$logs/build.log" >&2
    fail "$kind: build failed (see $logs/build.log)"; return
  fi

  note "$kind: unit tests"
  if ! (cd "$dir" && env "$opts_var=$opts" ctest -L unit --output-on-failure -j"$jobs") >"$logs/unit.log" 2>&1; then
    tail -40 "$logs/unit.log" >&2
    fail "$kind: unit tests failed (see $logs/unit.log)"
  elif has_report "$logs/unit.log"; then
    fail "$kind: sanitizer report in the unit tests (see $logs/unit.log)"
  else
    note "$kind: unit tests passed ($(grep -Eo '[0-9]+ tests? passed|tests passed, [0-9]+ tests failed out of [0-9]+' "$logs/unit.log" | tail -1))"
  fi

  note "$kind: building the stress helper"
  local stress=$dir/rel_stress shimmed
  # shellcheck disable=SC2086
  if ! g++ -std=c++20 $flags -pthread -I"$here/tests/reliability" "$here/tests/reliability/stress.cpp" \
      -o "$stress" >"$logs/stress-build.log" 2>&1; then
    cat "$logs/stress-build.log" >&2
    fail "$kind: cannot build the stress helper"; return
  fi
  local preload=()
  if [[ $kind == asan ]]; then
    shimmed=$stress
    preload=("LD_PRELOAD=$runtime:$dir/lib/libpipespin.so")
  else
    shimmed=$dir/rel_stress_linked
    local srcs objs=() src obj
    srcs=$(shim_sources)
    [[ -n $srcs ]] || { fail "$kind: cannot find the shim's sources in CMakeLists.txt"; return; }
    mkdir -p "$dir/linked"
    for src in $srcs; do
      # The program's own start files define the handle this file gives the
      # library (linked without them).
      [[ $src == */dso_handle.c ]] && continue
      # mmap, munmap and mprotect defined in the executable come before
      # TSan's interceptors for every caller, TSan's own start-up included,
      # which calls them before it has mapped its shadow memory: the
      # instrumented wrappers crash there. The stress test needs none of
      # them (they only tell the shim that memory went away).
      [[ $src == */hooks_memory.cpp ]] && continue
      obj=$dir/linked/${src//\//_}.o  # core/stats.cpp and interpose/stats.cpp
      local compile=(g++ -std=c++20 $flags $SHIM_FLAGS)
      # The shim's C parts (cancellation clean-up) are plain C, as in CMake.
      [[ $src == *.c ]] && compile=(gcc $flags -fasynchronous-unwind-tables)
      # shellcheck disable=SC2086
      "${compile[@]}" -I"$here/src" -I"$here/include" -c "$here/$src" -o "$obj" \
        >>"$logs/stress-build.log" 2>&1 || { cat "$logs/stress-build.log" >&2; fail "$kind: cannot compile $src"; return; }
      objs+=("$obj")
    done
    # shellcheck disable=SC2086
    if ! g++ -std=c++20 $flags -pthread -I"$here/tests/reliability" "$here/tests/reliability/stress.cpp" \
        "${objs[@]}" -ldl -o "$shimmed" >>"$logs/stress-build.log" 2>&1; then
      cat "$logs/stress-build.log" >&2
      fail "$kind: cannot link the shim into the stress helper"; return
    fi
  fi
  local config log status
  local conf=$logs/reload.conf rewriter
  for config in noshim fixed adaptive adaptive-1pipe reload; do
    log=$logs/stress-$config.log
    local env_args=(env -u LD_PRELOAD "$opts_var=$opts" REL_CONFIG="$config" PIPESPIN_CONFIG=) prog=$shimmed pipes=4
    rewriter=""
    case "$config" in
      noshim) prog=$stress ;;
      fixed) env_args+=(PIPESPIN_LOG=info PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000 "${preload[@]}") ;;
      adaptive*) env_args+=(PIPESPIN_LOG=info PIPESPIN_MODE=adaptive PIPESPIN_SPIN_US=1000000 "${preload[@]}") ;;
      reload)
        # Live reloads while every thread spins and blocks: the config file
        # turns fixed, adaptive and off in turn (two budgets), re-checked
        # every 1 ms, so configure() runs under the readers' feet, and the
        # signal handlers are wrapped and unwrapped while signals arrive.
        # Statistics lines every second as well: written while reloads
        # re-settle what they report.
        local extra="stats = $logs/reload.stats\nstats_interval = 1\n"
        rm -f "$logs/reload.stats"
        printf "log = info\nreload_ms = 1\nmode = fixed\nspin_us = 1000000\n$extra" >"$conf"
        chmod 644 "$conf"
        env_args+=(PIPESPIN_CONFIG="$conf" "${preload[@]}")
        (
          i=0
          while :; do
            case $((i % 3)) in
              0) m=fixed us=1000000 ;;
              1) m=adaptive us=200 ;;
              2) m=off us=1000000 ;;  # the signal handlers are unwrapped, then wrapped again
            esac
            printf "log = info\nreload_ms = 1\nmode = %s\nspin_us = %s\n$extra" $m $us >"$conf.new"
            chmod 644 "$conf.new"
            mv "$conf.new" "$conf"
            i=$((i + 1))
            sleep 0.02  # pacing only: any interleaving with the readers is fine
          done
        ) &
        rewriter=$!
        ;;
    esac
    [[ $config == adaptive-1pipe ]] && pipes=1
    note "$kind: stress, $config, ${seconds} s"
    timeout 300 "${env_args[@]}" "$prog" "$seconds" "$pipes" >"$log" 2>&1
    status=$?
    if [[ -n $rewriter ]]; then
      kill "$rewriter"
      wait "$rewriter" 2>/dev/null
    fi
    if [[ $status -eq 0 && $config == reload ]] &&
       ! grep -qE '^pipespin\[[^]]*\]: info: exit pid=[0-9]+ settings: .* reloads=[1-9]' "$log"; then
      fail "$kind: stress reload: no reload happened (see $log)"
      continue
    fi
    if [[ $status -ne 0 ]]; then
      tail -60 "$log" >&2
      fail "$kind: stress $config exited with status $status (see $log)"
    elif has_report "$log"; then
      fail "$kind: sanitizer report in stress $config (see $log)"
    elif [[ $config != noshim ]] && ! grep -qE '^pipespin\[[^]]*\]: info: exit pid=[0-9]+ read: ' "$log"; then
      fail "$kind: stress $config: no exit report, the shim was not there (see $log)"
    elif [[ $config == fixed ]] && grep -qE '^pipespin\[[^]]*\]: info: exit pid=[0-9]+ read: waits=[0-9]+ spins=0 ' "$log"; then
      fail "$kind: stress fixed: the shim never spun (see $log)"
    else
      note "$kind: stress $config passed: $(grep -E '^ok:' "$log" | head -1)"
      grep -E '^pipespin\[[^]]*\]: info: exit' "$log" | sed "s/^/sanitize.sh:   /"
      [[ $config == reload ]] &&
        note "$kind: stress reload: $(grep -c . "$logs/reload.stats" 2>/dev/null) statistics lines"
    fi
  done
}

start=$SECONDS
for kind in "${kinds[@]}"; do run_kind "$kind"; done
note "done in $((SECONDS - start)) s; logs in $out/*/logs"
if [[ $failures -ne 0 ]]; then
  echo "sanitize.sh: $failures failure(s)" >&2
  exit 1
fi
note "no sanitizer reports"
