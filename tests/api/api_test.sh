#!/usr/bin/env bash
# The control API (include/pipespin/pipespin.h) as its users get it: the
# build is installed into a scratch prefix, and programs are built from
# what was installed only (never the source tree), then run without the
# shim and under the installed one in each mode.
#   api_test.sh CASE BUILD_DIR SOURCE_DIR
# Cases:
#   pkgconfig     example.c as C99, with `pkg-config --cflags --libs pipespin`
#   find_package  example.c as C++11, with find_package(pipespin) and
#                 pipespin::api (consumer/CMakeLists.txt)
#   docs_example  the example of docs/api.md, as C99, with pkg-config
# For the first two, example.c checks its own claims (see there), and its
# final counters must equal the statistics line the shim writes at exit.
# Exit 0: pass, 77: skipped (reason on stdout), anything else: fail.
set -uo pipefail

case_name=$1
build=$(realpath "$2")
src=$(realpath "$3")

. "$src/tests/case_lib.sh"
case_setup "${TMPDIR:-/tmp}/pipespin-api"
export PIPESPIN_CONFIG=  # no config file of this machine's

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install failed"; }
lib=$(find "$prefix/lib" -name libpipespin.so | head -1)
[ -n "$lib" ] || fail "no libpipespin.so installed under $prefix/lib"
version=$(sed -n 's/^project(pipespin VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no version in CMakeLists.txt"
# Nothing of the source tree may be found: the header comes from the prefix.
cd "$work"

with_pkgconfig() {
  command -v pkg-config >/dev/null || skip "pkg-config is not installed (tools/deps.sh installs it)"
  PKG_CONFIG_PATH=$prefix/share/pkgconfig pkg-config "$@"
}

# build_c SOURCE OUTPUT: C99, strict, with pkg-config's flags.
build_c() {
  local cflags libs
  cflags=$(with_pkgconfig --cflags pipespin) || fail "pkg-config --cflags pipespin failed"
  libs=$(with_pkgconfig --libs pipespin) || fail "pkg-config --libs pipespin failed"
  [[ $cflags == *"-I$prefix/include"* ]] || fail "pkg-config --cflags gave '$cflags', not the prefix's include"
  [ "$(with_pkgconfig --modversion pipespin)" = "$version" ] || fail "pkg-config --modversion is not $version"
  # shellcheck disable=SC2086
  cc -std=c99 -pedantic -Wall -Wextra -Werror $cflags "$1" -o "$2" $libs -pthread \
    2>"$work/cc.err" || { cat "$work/cc.err" >&2; fail "cc -std=c99 $1 failed"; }
}

# check_run NAME OUT ERR STATUS: the run's status was 0, or fail showing it.
check_run() {
  [ "$4" -eq 0 ] || { cat "$2" "$3" >&2; fail "$1 exited $4"; }
}

# run_example BIN: without the shim, then under it in each mode.
run_example() {
  local bin=$1 name mode
  name=$(basename "$bin")
  env -u LD_PRELOAD "$bin" absent >"$work/absent.out" 2>"$work/absent.err"
  check_run "$name absent" "$work/absent.out" "$work/absent.err" $?
  expect_in "$work/absent.out" "absent: every call reported not present"
  [ "$(nproc)" -ge 2 ] || skip "one usable CPU: the shim never spins there (run on 2 or more)"
  for mode in off fixed adaptive; do
    rm -f "$work/stats.jsonl"
    LD_PRELOAD=$lib PIPESPIN_MODE=$mode PIPESPIN_STATS=$work/stats.jsonl \
      "$bin" "$mode" >"$work/$mode.out" 2>"$work/$mode.err"
    check_run "$name $mode" "$work/$mode.out" "$work/$mode.err" $?
    expect_in "$work/$mode.err" "api_example: pipespin $version, mode $mode"
    same_as_exit_line "$work/$mode.out" "$work/stats.jsonl" "$name" ||
      fail "$name $mode: its last snapshot differs from its statistics line at exit"
    echo "$name $mode: checks passed, snapshot = exit line"
  done
  # Without statistics lines (as `pipespin run` and the package's test run
  # it): the counters it asks for still count every call (a FIFO opened by
  # path is classified on its first call once the program has read them).
  for mode in fixed adaptive; do
    LD_PRELOAD=$lib PIPESPIN_MODE=$mode PIPESPIN_CONFIG= "$bin" "$mode" >"$work/$mode.out" 2>"$work/$mode.err"
    check_run "$name $mode, no statistics" "$work/$mode.out" "$work/$mode.err" $?
    echo "$name $mode, no statistics: checks passed"
  done
}

# same_as_exit_line OUT STATS PROGRAM: every "kind.dir.field=value" line of
# OUT equals the program's exit line in STATS.
same_as_exit_line() {
  python3 - "$@" <<'PY'
import json, sys
out, stats, program = sys.argv[1:4]
lines = [json.loads(l) for l in open(stats)]
exits = [l for l in lines if l["program"] == program and l["event"] == "exit"]
if len(exits) != 1:
    sys.exit(f"expected one exit line of {program} in {stats}, found {len(exits)}")
line = exits[0]
seen = 0
for text in open(out):
    key, value = text.strip().split("=")
    a, b, field = key.split(".")
    got = line["via"][b][field] if a == "via" else line[a][b][field]
    if got != int(value):
        sys.exit(f"{key}: snapshot {value}, statistics line {got}")
    seen += 1
if seen != 2 * 3 * 7 + 7 * 2:
    sys.exit(f"{seen} counters in {out}, expected {2 * 3 * 7 + 7 * 2}")
PY
}

case_pkgconfig() {
  build_c "$src/tests/api/example.c" "$work/api_example"
  run_example "$work/api_example"
}

case_find_package() {
  cmake -S "$src/tests/api/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DEXAMPLE_SOURCE="$src/tests/api/example.c" -DCMAKE_BUILD_TYPE=Release \
    >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; fail "configuring the consumer failed"; }
  expect_in "$work/consumer/CMakeCache.txt" "pipespin_DIR:PATH=$prefix/"
  cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 ||
    { cat "$work/consumer.log" >&2; fail "building the consumer failed"; }
  run_example "$work/consumer/api_example_cxx"
}

case_docs_example() {
  bash "$src/tests/install/snippet.sh" "$src/docs/api.md" api-example >"$work/example.c" ||
    fail "docs/api.md has no snippet 'api-example'"
  build_c "$work/example.c" "$work/docs_example"
  env -u LD_PRELOAD "$work/docs_example" >"$work/plain.out" 2>&1 ||
    { cat "$work/plain.out" >&2; fail "the docs example failed without the shim"; }
  cat "$work/plain.out"
  expect_in "$work/plain.out" "pipespin is not loaded"
  expect_not_in "$work/plain.out" "reads waited"
  LD_PRELOAD=$lib PIPESPIN_MODE=fixed "$work/docs_example" >"$work/shim.out" 2>&1 ||
    { cat "$work/shim.out" >&2; fail "the docs example failed under the shim"; }
  cat "$work/shim.out"
  expect_in "$work/shim.out" "pipespin $version"
  expect_in "$work/shim.out" "reads waited"
}

"case_$case_name"
