#!/usr/bin/env bash
# Fuzzes the config parser (tests/fuzz/fuzz_config.cpp): the code the shim
# runs on every config file, in its constructor and on live reloads.
#
#   tools/fuzz.sh [--seconds S] [--runs N]      (default: --seconds 30)
#
# With clang (Debian's clang and libclang-rt-dev, which tools/deps.sh
# installs) it builds a libFuzzer binary with ASan and UBSan and runs it
# until S seconds or N inputs, whichever comes first, from the seeds in
# tests/fuzz/seeds plus preload.conf.example, with tests/fuzz/config.dict.
# Inputs up to 16 KiB (lines up to 1 KiB, so well past every limit the parser
# has; the 64 KiB file limit is the loader's). Leaks are checked (libFuzzer's -detect_leaks), a slow input (> 10 s) is
# a failure. New interesting inputs go to build-fuzz/corpus, reused by the
# next run; a crashing input is saved in build-fuzz/ (crash-*, leak-*,
# timeout-*) and the script exits nonzero.
#
# Without clang it builds tests/fuzz/standalone.cpp with g++ and ASan/UBSan
# instead: a deterministic mutator over the same seeds, N runs (default
# 200000 for --seconds; it has no clock).
#
# Environment: PIPESPIN_FUZZ_DIR (default build-fuzz), PIPESPIN_FUZZ_ENGINE
# (libfuzzer|standalone, default: libfuzzer if clang can build it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PIPESPIN_FUZZ_DIR:-$here/build-fuzz}
seconds=30 runs=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown option '$1' (--seconds S, --runs N)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out/corpus"

# The parser, the option table and the raw syscalls with their gate
# (fuzz_config.cpp stubs out the two cancellation helpers sys.cpp refers to,
# which the parser never reaches).
srcs=(src/core/config.cpp src/core/config_env.cpp src/core/config_file.cpp src/core/config_match.cpp
      src/core/options.cpp src/platform/sys.cpp src/platform/gate.cpp)
seeds=("$here"/tests/fuzz/seeds/* "$here/preload.conf.example")

engine=${PIPESPIN_FUZZ_ENGINE:-}
if [[ -z $engine ]]; then
  engine=standalone
  if command -v clang++ >/dev/null &&
     echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
       clang++ -x c++ -fsanitize=fuzzer - -o "$out/probe" 2>/dev/null; then
    engine=libfuzzer
  fi
fi

cd "$here"
if [[ $engine == libfuzzer ]]; then
  bin=$out/fuzz_config
  echo "fuzz.sh: building $bin (clang++, libFuzzer, ASan+UBSan)"
  flags=(-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  # sys.h marks its libc declarations noplt, a GCC attribute clang ignores.
  clang++ -std=c++20 "${flags[@]}" -Wno-unknown-attributes -fsanitize=fuzzer -Isrc tests/fuzz/fuzz_config.cpp "${srcs[@]}" \
    -o "$bin"
  [[ -x $bin ]] || { echo "fuzz.sh: build failed" >&2; exit 1; }
  mkdir -p "$out/seeds"
  cp "${seeds[@]}" "$out/seeds/"
  args=(-max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048
        -detect_leaks=1 -print_final_stats=1 -dict=tests/fuzz/config.dict
        -artifact_prefix="$out/")
  [[ -n $runs ]] && args+=(-runs="$runs") && args[0]=-max_total_time=0
  echo "fuzz.sh: $bin ${args[*]} $out/corpus $out/seeds"
  set +e
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$bin" "${args[@]}" "$out/corpus" "$out/seeds" \
    >"$out/fuzz.log" 2>&1
  status=$?
  set -e
  grep -E '^(stat::|#[0-9]+ *DONE|Done )' "$out/fuzz.log" || true
  if [[ $status -ne 0 ]]; then
    tail -40 "$out/fuzz.log" >&2
    echo "fuzz.sh: FAIL (status $status; the input is in $out/)" >&2
    exit 1
  fi
  echo "fuzz.sh: ok, $(grep -oE '^stat::number_of_executed_units: [0-9]+' "$out/fuzz.log" | grep -oE '[0-9]+$') inputs, no crash, hang or leak"
else
  bin=$out/fuzz_config_standalone
  [[ -n $runs ]] || runs=200000
  echo "fuzz.sh: building $bin (g++, ASan+UBSan, the standalone mutator)"
  flags=(-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  g++ -std=c++20 "${flags[@]}" -Isrc tests/fuzz/fuzz_config.cpp tests/fuzz/standalone.cpp \
    "${srcs[@]}" -o "$bin"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$bin" "$runs" "${seeds[@]}"
fi
