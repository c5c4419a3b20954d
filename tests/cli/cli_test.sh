#!/usr/bin/env bash
# CLI tests for pipespin and the lab's pipespin-bench, one case per CTest test:
#   cli_test.sh CASE PIPESPIN PIPESPIN_BENCH LIBRARY CXX VERSION
# Exit 0: pass, 77: skipped (reason on stdout), anything else: fail.
set -uo pipefail

case_name=$1
pipespin=$2
bench=$3
library=$(realpath "$4")
cxx=$5
version=$6

. "$(dirname "$0")/../case_lib.sh"
case_setup "$PWD/cli"
# expect_status WANT CMD...: runs CMD, stdout to $work/out, stderr to $work/err.
expect_status() {
  local want=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "--- stdout:" >&2; cat "$work/out" >&2
    echo "--- stderr:" >&2; cat "$work/err" >&2
    fail "'$*' exited $got, expected $want"
  fi
}

# The commands a user runs, and the lab's, which pipespin must not offer.
user_commands="run check-config stats ab pingpong"
lab_commands="bench matrix coverage worker bench-worker gen-docs"

case_help() {
  for flag in --help -h help; do
    expect_status 0 "$pipespin" "$flag"
    for var in PIPESPIN_MODE PIPESPIN_SPIN_US PIPESPIN_LOG PIPESPIN_CONFIG PIPESPIN_LIBRARY; do
      expect_in "$work/out" "$var="
    done
    for c in $user_commands; do grep -qE "^  $c  " "$work/out" || fail "$flag does not list $c"; done
    expect_in "$work/out" "off|fixed|adaptive"
    [ ! -s "$work/err" ] || fail "$flag wrote to stderr"
    # One screen.
    [ "$(wc -l <"$work/out")" -le 40 ] || fail "$flag is $(wc -l <"$work/out") lines, more than 40"
  done
  # Neither the lab nor the hidden worker is advertised.
  for c in $lab_commands pingpong-worker; do expect_not_in "$work/out" "$c"; done
  # Each command's --help is its own: its usage and options, no other command's.
  for c in $user_commands; do
    for flag in --help -h; do
      expect_status 0 "$pipespin" "$c" "$flag"
      head -1 "$work/out" | grep -qE "^Usage: pipespin $c( |\$)" || fail "$c $flag does not start with its usage"
      if grep -E '^(Usage:)? +pipespin [a-z]' "$work/out" | grep -vE "pipespin $c( |\$)"; then
        fail "$c $flag shows another command's usage"
      fi
      expect_not_in "$work/out" "Commands:"
      [ ! -s "$work/err" ] || fail "$c $flag wrote to stderr"
    done
    expect_status 0 "$pipespin" help "$c"
    head -1 "$work/out" | grep -qE "^Usage: pipespin $c( |\$)" || fail "help $c does not show $c's usage"
  done
  expect_status 0 "$pipespin" run --help
  expect_in "$work/out" "PIPESPIN_MODE"
  expect_in "$work/out" "--spin-us 0..1000000 µs (default: 50)"
  expect_not_in "$work/out" "--iterations"
  expect_status 0 "$pipespin" pingpong --help
  expect_in "$work/out" "--iterations N (default: 20000)"
  expect_not_in "$work/out" "--print-config"
  # A bare pipespin: a few lines of usage on stderr, and a usage error.
  expect_status 2 "$pipespin"
  [ ! -s "$work/out" ] || fail "a bare pipespin wrote to stdout"
  [ "$(wc -l <"$work/err")" -le 5 ] || fail "a bare pipespin printed $(wc -l <"$work/err") lines"
  expect_in "$work/err" "Usage: pipespin COMMAND"
  # The lab's commands are pipespin-bench's, with their own --help.
  expect_status 0 "$bench" --help
  for c in matrix coverage worker; do grep -qE "^  $c  " "$work/out" || fail "pipespin-bench --help does not list $c"; done
  for c in matrix coverage worker; do
    expect_status 0 "$bench" "$c" --help
    head -1 "$work/out" | grep -qE "^Usage: pipespin-bench $c( |\$)" || fail "pipespin-bench $c --help"
  done
  expect_status 0 "$bench" worker pingpong --help
  expect_in "$work/out" "--threads"
}

case_version() {
  expect_status 0 "$pipespin" --version
  [ "$(cat "$work/out")" = "pipespin $version" ] || fail "got '$(cat "$work/out")'"
}

case_usage_errors() {
  expect_status 2 "$pipespin"
  expect_status 2 "$pipespin" frobnicate
  expect_in "$work/err" "unknown command 'frobnicate'"
  expect_status 2 "$pipespin" --frobnicate
  expect_in "$work/err" "unknown option '--frobnicate'"
  # The lab's commands are not pipespin's.
  for c in $lab_commands; do
    expect_status 2 "$pipespin" "$c"
    expect_in "$work/err" "unknown command '$c'"
  done
  expect_status 2 "$pipespin" run --frobnicate -- true
  expect_in "$work/err" "--frobnicate"
  expect_status 2 "$pipespin" run
  expect_in "$work/err" "missing CMD"
  expect_status 2 "$pipespin" run --mode
  expect_in "$work/err" "--mode"
  expect_in "$work/err" "missing"
  expect_status 2 "$pipespin" run --mode bogus -- true
  expect_in "$work/err" "--mode"
  expect_in "$work/err" "'bogus'"
  expect_in "$work/err" "off|fixed|adaptive"
  expect_status 2 "$pipespin" run --spin-us=5000000 -- true
  expect_in "$work/err" "--spin-us"
  expect_in "$work/err" "0..1000000"
  expect_status 2 "$pipespin" run --probe= -- true
  expect_in "$work/err" "--probe needs a value"
  expect_status 2 "$pipespin" pingpong --iterations 0
  expect_status 2 "$pipespin" pingpong --rounds x
  expect_status 2 "$pipespin" pingpong --spin-us -1
  expect_status 2 "$pipespin" pingpong extra
  expect_status 2 "$bench"
  expect_status 2 "$bench" nosuch
  expect_status 2 "$bench" matrix --rounds 0
  expect_status 2 "$bench" matrix --cases nosuch
  expect_in "$work/err" "unknown case 'nosuch'"
  expect_in "$work/err" "seq-wc"
  expect_status 2 "$bench" matrix --cases ,
  expect_status 2 "$bench" matrix --markdown
  expect_status 2 "$bench" matrix --spin-us x
  expect_status 2 "$bench" worker
  expect_status 2 "$bench" worker nosuch 10
  [ ! -s "$work/out" ] || fail "usage errors wrote to stdout"
}

case_run_preload() {
  # With and without the "--" separator.
  for sep in -- ""; do
    expect_status 0 "$pipespin" run $sep sh -c 'echo "$LD_PRELOAD"'
    got=$(cat "$work/out")
    case $got in
      /*/libpipespin.so) ;;
      *) fail "LD_PRELOAD='$got', expected an absolute path to libpipespin.so" ;;
    esac
    [ -f "$got" ] || fail "$got does not exist"
    [ "$(realpath "$got")" = "$library" ] || fail "$got is not the built $library"
  done
  # Arguments after CMD belong to CMD, even ones that look like our flags.
  expect_status 0 "$pipespin" run echo --mode bogus
  [ "$(cat "$work/out")" = "--mode bogus" ] || fail "CMD arguments were not passed as is"
}

case_run_keeps_preload() {
  # ld.so complains on stderr about the missing entries and goes on.
  LD_PRELOAD="/nonexistent/liba.so /nonexistent/libb.so" \
    expect_status 0 "$pipespin" run -- sh -c 'echo "$LD_PRELOAD"'
  [ "$(cat "$work/out")" = "$library:/nonexistent/liba.so:/nonexistent/libb.so" ] ||
    fail "LD_PRELOAD='$(cat "$work/out")'"
}

case_run_no_duplicate() {
  LD_PRELOAD="/nonexistent/liba.so:$library" \
    expect_status 0 "$pipespin" run -- sh -c 'echo "$LD_PRELOAD"'
  [ "$(cat "$work/out")" = "/nonexistent/liba.so:$library" ] ||
    fail "LD_PRELOAD='$(cat "$work/out")'"
  # Nested runs do not stack copies either.
  expect_status 0 "$pipespin" run -- "$pipespin" run -- sh -c 'echo "$LD_PRELOAD"'
  [ "$(cat "$work/out")" = "$library" ] || fail "nested: LD_PRELOAD='$(cat "$work/out")'"
}

case_run_sets_env() {
  expect_status 0 "$pipespin" run --mode off --spin-us=10 --probe POLL --log error -- \
    sh -c 'echo "$PIPESPIN_MODE $PIPESPIN_SPIN_US $PIPESPIN_PROBE $PIPESPIN_LOG"'
  [ "$(cat "$work/out")" = "off 10 poll error" ] || fail "got '$(cat "$work/out")'"
  # Unset flags leave the user's variables alone; set ones override them.
  PIPESPIN_PROBE=fionread PIPESPIN_MODE=fixed \
    expect_status 0 "$pipespin" run --mode off -- sh -c 'echo "$PIPESPIN_MODE $PIPESPIN_PROBE"'
  [ "$(cat "$work/out")" = "off fionread" ] || fail "got '$(cat "$work/out")'"
}

case_run_exit_status() {
  expect_status 7 "$pipespin" run -- sh -c 'exit 7'
  expect_status 127 "$pipespin" run -- /nonexistent/command
  expect_in "$work/err" "cannot execute"
  expect_status 127 "$pipespin" run -- no-such-command-pipespin-test
  printf 'not executable\n' >"$work/noexec"
  chmod 644 "$work/noexec"
  expect_status 126 "$pipespin" run -- "$work/noexec"
}

case_run_library_env() {
  PIPESPIN_LIBRARY=/nonexistent/libpipespin.so expect_status 125 "$pipespin" run -- true
  expect_in "$work/err" "PIPESPIN_LIBRARY"
  ln -s "$library" "$work/libpipespin.so"
  PIPESPIN_LIBRARY="$work/libpipespin.so" \
    expect_status 0 "$pipespin" run -- sh -c 'echo "$LD_PRELOAD"'
  [ "$(cat "$work/out")" = "$library" ] || fail "got '$(cat "$work/out")'"
  # Without PIPESPIN_LIBRARY a copy of pipespin finds nothing beside it.
  mkdir -p "$work/bin"
  cp "$pipespin" "$work/bin/pipespin"
  # (Unless this build's install libdir happens to hold a copy: then it is found.)
  "$work/bin/pipespin" run -- true >"$work/out" 2>"$work/err"
  got=$?
  if [ "$got" -ne 0 ]; then
    [ "$got" -eq 125 ] || fail "copied pipespin exited $got, expected 125"
    expect_in "$work/err" "cannot find libpipespin.so"
  fi
}

case_static_warning() {
  printf 'int main() { return 0; }\n' >"$work/prog.cpp"
  if ! "$cxx" -static -o "$work/static_prog" "$work/prog.cpp" 2>"$work/cc.err"; then
    cat "$work/cc.err"
    skip "cannot link a static program here"
  fi
  expect_status 0 "$pipespin" run -- "$work/static_prog"
  expect_in "$work/err" "pipespin: warning:"
  expect_in "$work/err" "statically linked"
  # Found through PATH the way execvp finds it.
  PATH="$work:$PATH" expect_status 0 "$pipespin" run -- static_prog
  expect_in "$work/err" "statically linked"
  # Dynamic programs and scripts get no warning.
  expect_status 0 "$pipespin" run -- sh -c true
  expect_not_in "$work/err" "warning"
  printf '#!/bin/sh\nexit 0\n' >"$work/script"
  chmod 755 "$work/script"
  expect_status 0 "$pipespin" run -- "$work/script"
  expect_not_in "$work/err" "warning"
}

case_setuid_warning() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to make a program setuid to another user"
  cp "$(type -P true)" "$work/suid_true" || fail "cannot copy true(1)"
  chown 65534 "$work/suid_true" && chmod u+s "$work/suid_true" || skip "cannot chown/chmod here"
  expect_status 0 "$pipespin" run -- "$work/suid_true"
  if grep -qF "setuid" "$work/err"; then
    return 0
  fi
  # A nosuid mount makes the bit meaningless, and pipespin says nothing then.
  findmnt -no OPTIONS -T "$work" 2>/dev/null | grep -qw nosuid && skip "$work is on a nosuid mount"
  cat "$work/err" >&2
  fail "no setuid warning"
}

bench_names() {
  for name in "no shim" "off" "fixed" "adaptive" "floor"; do expect_in "$work/out" "$name"; done
}

case_pingpong() {
  expect_status 0 "$pipespin" pingpong --iterations 200 --rounds 1
  bench_names
  expect_in "$work/out" "processes"
}

case_pingpong_threads() {
  expect_status 0 "$pipespin" pingpong --threads --iterations 200 --rounds 2 --spin-us 20
  bench_names
  expect_in "$work/out" "threads"
  expect_in "$work/out" "spin_us=20"
}

case_pingpong_json() {
  expect_status 0 "$pipespin" pingpong --json --iterations 200 --rounds 3
  command -v python3 >/dev/null || skip "python3 is needed to parse the JSON"
  python3 - "$work/out" <<'EOF' || fail "bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "pingpong" and d["peers"] == "processes", d
assert d["iterations"] == 200 and d["rounds"] == 3, d
names = [c["name"] for c in d["configurations"]]
assert names == ["no shim", "off", "fixed", "adaptive"], names
for c in d["configurations"] + [d["floor"]]:
    assert len(c["samples_us"]) == 3, c
    assert c["min_us"] <= c["median_us"] <= c["max_us"], c
    assert c["min_us"] > 0 and c["ratio"] > 0, c
EOF
}

case_pingpong_env_hygiene() {
  # The workers check whether the shim is loaded against their configuration,
  # so this passes only if pingpong strips the inherited LD_PRELOAD copy and
  # ignores the bogus inherited mode.
  LD_PRELOAD="$library" PIPESPIN_MODE=bogus PIPESPIN_LOG=debug \
    expect_status 0 "$pipespin" pingpong --iterations 100 --rounds 1
  bench_names
  # The pingpong process itself runs shimmed here and may warn once about the
  # bogus mode; its workers must not have seen it.
  [ "$(grep -c PIPESPIN_MODE "$work/err")" -le 1 ] || { cat "$work/err" >&2; fail "workers saw PIPESPIN_MODE"; }
  # The same from inside `pipespin run`.
  expect_status 0 "$pipespin" run --mode off -- "$pipespin" pingpong --iterations 100 --rounds 1
  bench_names
}

case_worker() {
  # The worker's stdout is one number and nothing else, with or without the shim.
  for args in "pingpong 100" "pingpong --threads 100" "floor 100" "floor-blocks 100" "sparse 5" \
              "spawn 5" "fork 20" "wakeup-same 5" "wakeup-spread 5" "wakeup-free 5"; do
    # spawn and fork print a difference of two spawns or forks: either sign.
    expect_status 0 "$bench" worker $args
    grep -qxE -- '-?[0-9]+\.[0-9]+' "$work/out" || fail "worker $args printed '$(cat "$work/out")'"
    LD_PRELOAD="$library" PIPESPIN_LOG=info expect_status 0 "$bench" worker $args
    grep -qxE -- '-?[0-9]+\.[0-9]+' "$work/out" || fail "shimmed worker $args printed '$(cat "$work/out")'"
  done
  # spawn pairs each spawn in its own environment with one without the
  # preload: of 20 pairs (and 2 of warm-up), 22 children and the worker
  # itself have the shim, each appending its statistics line at exit.
  rm -f "$work/spawn.stats"
  LD_PRELOAD="$library" PIPESPIN_STATS="$work/spawn.stats" expect_status 0 "$bench" worker spawn 20
  [ "$(wc -l < "$work/spawn.stats")" -eq 23 ] ||
    fail "worker spawn 20: $(wc -l < "$work/spawn.stats") shimmed processes, not 23"
  # fork's forks are made by two twins of the worker, one in its environment
  # and one without the preload: the worker, its shimmed twin and that
  # twin's 22 forked children (they _exit: each writes its line) have the
  # shim; the other twin and its children none.
  rm -f "$work/fork.stats"
  LD_PRELOAD="$library" PIPESPIN_STATS="$work/fork.stats" expect_status 0 "$bench" worker fork 20
  [ "$(wc -l < "$work/fork.stats")" -eq 24 ] ||
    fail "worker fork 20: $(wc -l < "$work/fork.stats") shimmed processes, not 24"
  expect_status 2 "$bench" worker fork-twin extra
  # pipespin's own worker has pingpong's loops, and only those.
  expect_status 0 "$pipespin" pingpong-worker pingpong --expect-no-shim 100
  grep -qxE -- '[0-9]+\.[0-9]+' "$work/out" || fail "pingpong-worker printed '$(cat "$work/out")'"
  expect_status 2 "$pipespin" pingpong-worker sparse 5
  expect_status 1 "$bench" worker pingpong --expect-shim 100
  expect_in "$work/err" "not loaded"
  LD_PRELOAD="$library" expect_status 1 "$bench" worker floor --expect-no-shim 100
  LD_PRELOAD="$library" expect_status 1 "$bench" worker floor-blocks --expect-no-shim 100
  LD_PRELOAD="$library" expect_status 1 "$bench" worker spawn --expect-no-shim 5
  expect_status 1 "$bench" worker fork --expect-shim 5
  [ ! -s "$work/out" ] || fail "a failing worker wrote to stdout"
  # wakeup's reader pins itself (and its writer to the same CPU, or to
  # another); its run time over the reads is positive. One usable CPU
  # cannot spread them.
  expect_status 0 "$bench" worker wakeup-same --expect-no-shim 5
  grep -qxE '[0-9]+\.[0-9]+' "$work/out" && [ "$(cat "$work/out")" != 0.0000 ] ||
    fail "worker wakeup-same printed '$(cat "$work/out")'"
  command -v taskset >/dev/null || return 0
  taskset -c 0 "$bench" worker wakeup-spread 5 >"$work/out" 2>"$work/err" && fail "wakeup-spread on one CPU"
  expect_in "$work/err" "wakeup-spread needs two usable CPUs"
}

# matrix: structure only. Every case runs with --quick parameters and one
# round; cases whose tool is missing here are skipped by the matrix itself.
matrix_cases="perf-pipe perf-threads hackbench-g1 hackbench-g2 hackbench-g4 hackbench-stream dd-cat seq-wc sparse wakeup-same wakeup-spread cmdsubst xargs make-j spawn fork py-pingpong"
matrix_arms=("no shim" "empty preload" off fixed adaptive)

case_matrix() {
  expect_status 0 "$bench" matrix --quick --rounds 1 --spin-us 20 \
    --markdown "$work/m.md" --json "$work/m.json" --plot "$work/m.gp"
  [ ! -s "$work/out" ] || fail "--markdown FILE also wrote to stdout"
  md=$work/m.md
  expect_in "$md" "## pipespin-bench matrix"
  expect_in "$md" "Command: \`pipespin-bench matrix --quick --rounds 1 --spin-us 20 --markdown"
  expect_in "$md" "spin_us 20"
  expect_in "$md" "Empty preload: $(dirname "$library")/libpipespin-empty.so"
  expect_in "$md" "| case | arm | median wall | wall ratio | median CPU | CPU ratio | CPU µs/op | vol. cs/op | invol. cs/op |"
  expect_in "$md" "Acceptance"
  expect_in "$md" "| check | value | 95% interval | threshold | bound on this host | result |"
  # One round has nothing to resample: no interval, so nothing unresolved.
  expect_in "$md" "The 95% interval is how far the value moves"
  expect_not_in "$md" "(interval includes the threshold)"
  # One row per arm of each case that ran, and a note for each that did not.
  for c in $matrix_cases; do
    if grep -qF "skipping $c:" "$md"; then
      expect_in "$work/err" "skipping $c:"
      continue
    fi
    for arm in "${matrix_arms[@]}"; do expect_in "$md" "| $c | $arm | "; done
  done
  # The cases that need only coreutils and pipespin always run.
  for c in dd-cat seq-wc sparse spawn fork; do expect_in "$md" "| $c | adaptive | "; done
  expect_in "$md" "(consumer)"
  expect_in "$md" "| spawn (µs per process over one without preload) | "
  expect_in "$md" "| fork (µs per fork over one without preload) | "
  # spawn's figure is a paired difference: a sign on every arm, no shim's too.
  grep -qE '^\| spawn \(µs per process over one without preload\) \| [+-][0-9]+\.[0-9] \|( [+-][0-9]+\.[0-9] \([+-][0-9]+\.[0-9]\) \|)+$' "$md" ||
    { cat "$md" >&2; fail "spawn's row of paired differences"; }
  expect_in "$md" "| footprint (VmRSS, KiB) | "
  # The wake-ups side by side, per placement: µs per read per arm.
  for c in wakeup-same wakeup-spread; do
    grep -qF "| $c | adaptive | " "$md" || continue
    grep -qE "^\| $c( \| [0-9.]+){5} \| [+-][0-9]+\.[0-9]{3} \|\$" "$md" || { cat "$md" >&2; fail "no wake-up row for $c"; }
  done
  # The floors: a row with a positive bound for each case that has one and
  # ran, that bound again in its speed-up check, and none for the others.
  floors=0
  for c in perf-pipe perf-threads dd-cat; do
    grep -qF "| $c | adaptive | " "$md" || continue
    floors=$((floors + 1))
    grep -qE "^\| $c \| \`pipespin-bench worker floor(-blocks)? --expect-no-shim [0-9]+\`: .* \| [0-9.]+ µs per [a-z ]+ \| [0-9.]*[1-9][0-9.]*x \|\$" "$md" ||
      { cat "$md" >&2; fail "no floor row with a positive bound for $c"; }
    grep -qE "^\| \`$c\`: [a-z ,/-]*no shim / adaptive \(wall\) \| [0-9.]+ \|  \| ≥ [0-9.]+ \| [0-9.]*[1-9][0-9.]* \| (PASS|FAIL|unreachable here \(bound [0-9.]+\)) \|\$" "$md" ||
      { cat "$md" >&2; fail "no bound in the speed-up check of $c"; }
  done
  [ "$(grep -c '^| [a-z0-9-]* | `pipespin-bench worker floor' "$md")" -eq "$floors" ] || { cat "$md" >&2; fail "floor rows"; }
  expect_in "$md" "| \`seq-wc\`: no shim / adaptive (wall) | "
  grep -qE '^\| `seq-wc`: no shim / adaptive \(wall\) \| [0-9.]+ \|  \| ≥ 1 \|  \| (PASS|FAIL) \|$' "$md" ||
    { cat "$md" >&2; fail "seq-wc has a bound"; }
  # Progress: one line per run and floor on stderr (the footprint has no row
  # in the table of times, but runs in every arm).
  ran=$(( $(grep -c '^| [a-z0-9-]* | adaptive | ' "$md") + $(grep -c '^| footprint (VmRSS' "$md") ))
  [ "$(grep -c '^\[ *[0-9]*/[0-9]*\] round 1/1 ' "$work/err")" -eq $(( ran * 5 + floors )) ] ||
    { cat "$work/err" >&2; fail "progress lines"; }
  command -v python3 >/dev/null || return 0
  python3 - "$work/m.json" "$(size -A "$library" 2>/dev/null)" <<'EOF2' || fail "bad JSON"
import json, re, statistics, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "matrix" and d["rounds"] == 1 and d["quick"] is True, d
assert d["spin_us"] == 20, d
arms = ["no shim", "empty preload", "off", "fixed", "adaptive"]
assert d["arms"] == arms and d["empty_library"].endswith("/libpipespin-empty.so"), d
ids = [c["id"] for c in d["cases"]]
assert {"dd-cat", "seq-wc", "sparse", "spawn", "fork", "footprint"} <= set(ids), ids
for c in d["cases"]:
    assert [a["name"] for a in c["arms"]] == arms, c
    assert c["ops"] > 0, c
    for a in c["arms"]:
        assert len(a["wall_us"]) == 1 and len(a["cpu_us"]) == 1, a
        assert len(a["vol_cs"]) == 1 and len(a["invol_cs"]) == 1 and len(a["figure"]) == 1, a
        assert a["median_wall_us"] > 0 and a["cpu_us_per_op"] >= 0, a
        # Context switches per operation are the medians over the operations.
        assert a["vol_cs"][0] >= 0 and abs(a["vol_cs_per_op"] - a["median_vol_cs"] / c["ops"]) < 1e-5, a
        assert abs(a["invol_cs_per_op"] - a["median_invol_cs"] / c["ops"]) < 1e-5, a
        if c["id"] in ("spawn", "fork", "py-pingpong", "footprint", "perf-pipe", "hackbench-g1"):
            assert a["figure"][0] == a["median_figure"], (c["id"], a)
            # spawn's and fork's figures are differences of two (no shim's near 0, either sign).
            assert c["id"] in ("spawn", "fork") or a["median_figure"] > 0, (c["id"], a)
# sparse's producer sleeps before each byte it writes: at least one voluntary
# context switch each, counted for the worker that reaped it.
sparse = [c for c in d["cases"] if c["id"] == "sparse"][0]
assert all(a["median_vol_cs"] >= sparse["ops"] for a in sparse["arms"]), sparse
# wakeup's CPU is its reader's run time over the reads, which wait: less
# than the wall.
for c in d["cases"]:
    if c["id"] in ("wakeup-same", "wakeup-spread"):
        assert c["cpu"] == "consumer" and c["command"].endswith(f"worker {c['id']} {c['ops']}"), c
        for a in c["arms"]:
            assert 0 < a["median_cpu_us"] < a["median_wall_us"], a
    else:
        assert c["cpu"] == ("consumer" if c["id"] == "sparse" else "command tree"), c
# The footprint's bss is what size(1) says (when binutils is there).
sizes = dict(re.findall(r"^(\.t?bss)\s+(\d+)", sys.argv[2], re.M))
if sizes:
    assert d["bss_bytes"] == sum(map(int, sizes.values())), (d["bss_bytes"], sizes)
print("bss:", d["bss_bytes"], "size(1):", sizes or "not run")
# py-pingpong: each round in exactly one placement group, by its no-shim run's
# CPU samples; each group's medians are of its own rounds.
for c in d["cases"]:
    if c["id"] != "py-pingpong":
        assert c["groups"] == [], c
        continue
    base = c["arms"][0]
    for a in c["arms"]:
        assert all(0 <= s <= t and t > 0 for s, t in zip(a["same_cpu"], a["cpu_samples"])), a
    share = base["same_cpu"][0] / base["cpu_samples"][0]
    where = "co-located" if share >= 0.8 else "spread" if share <= 0.2 else "mixed"
    placements = [g for g in c["groups"] if not g["name"].startswith("no shim")]
    assert [(g["name"], g["rounds"]) for g in placements] == [(where, [0])], c["groups"]
    slow = [g for g in c["groups"] if g["name"].startswith("no shim")]
    assert [g["rounds"] for g in slow] == ([[0]] if base["figure"][0] >= 15 else []), c["groups"]
    for g in c["groups"]:
        for a in c["arms"]:
            want = statistics.median(a["figure"][r] for r in g["rounds"])
            assert abs(g["median"][a["name"]] - want) < 1e-3, (g, a)
assert any(c["check"].startswith("`sparse`") for c in d["acceptance"]), d["acceptance"]
# Each floor's bound is the no-shim wall per operation over the floor per
# operation; only the ping-pongs and dd | cat have one.
bounds = {}
for c in d["cases"]:
    f = c["floor"]
    if c["id"] not in ("perf-pipe", "perf-threads", "dd-cat"):
        assert f is None, c
        continue
    assert len(f["us_per_op"]) == 1 and f["median_us_per_op"] == f["us_per_op"][0] > 0, f
    want = c["arms"][0]["median_wall_us"] / c["ops"] / f["median_us_per_op"]
    assert f["bound"] > 0 and abs(f["bound"] / want - 1) < 1e-3, (c["id"], f["bound"], want)
    bounds[c["id"]] = f["bound"]
assert "dd-cat" in bounds, bounds
# The runs of cmdsubst and of the perf ping-pongs are placed by their
# context switches per operation, voluntary (cmdsubst) or involuntary
# (perf), at the marks of cases.cpp; per placement, each arm's runs and
# their medians.
placed_cases = {"cmdsubst": ("vol_cs", 3.75, 3.25), "perf-pipe": ("invol_cs", 0.75, 0.1),
                "perf-threads": ("invol_cs", 0.75, 0.1)}
for c in d["cases"]:
    if c["id"] not in placed_cases:
        assert c["placements"] is None and not any("placement" in a for a in c["arms"]), c
        continue
    field, co, sp = placed_cases[c["id"]]
    pl = c["placements"]
    assert (pl["switches"], pl["colocated_at"], pl["spread_at"]) == \
        ({"vol_cs": "voluntary", "invol_cs": "involuntary"}[field], co, sp), pl
    for a in c["arms"]:
        assert a["placement"] == ["co-located" if v >= co * c["ops"] else "spread" if v <= sp * c["ops"] else "mixed"
                                  for v in a[field]], (c["id"], a)
        for where in ("co-located", "spread", "mixed"):
            runs = [i for i, p in enumerate(a["placement"]) if p == where]
            got = pl[where][a["name"]]
            assert got["runs"] == len(runs), (got, runs)
            if not runs:
                assert got["median_wall_us"] is None and got["median_figure"] is None, got
                continue
            assert abs(got["median_wall_us"] - statistics.median(a["wall_us"][i] for i in runs)) < 0.1, got
            if c["id"] == "cmdsubst":
                assert got["median_figure"] is None, got
            else:
                assert abs(got["median_figure"] - statistics.median(a["figure"][i] for i in runs)) < 1e-3, got
# A check has its case's bound when it is a wall speed-up against no shim,
# and its verdict follows from value, threshold and bound.
seen = set()
cases = {c["id"]: c for c in d["cases"]}
short_lived = ("hackbench-g1", "hackbench-g2", "hackbench-g4", "hackbench-stream", "cmdsubst", "xargs",
               "make-j")
for chk in d["acceptance"]:
    case = chk["check"].split("`")[1]
    speedup = chk["check"].endswith("no shim / adaptive (wall)")
    placed = re.fullmatch(r"`[a-z-]+`: (co-located|spread) runs \(([a-z ]+) (\d+)(?:, ([a-z ]+) (\d+))? of (\d+)\): "
                          r"(?:([a-z ]+) / ([a-z ]+) \(wall\)|([a-z]+) µs per round trip \(the tool's\) / floor)",
                          chk["check"])
    if placed and case in cases:
        # A placement's check compares the runs each arm had in it: wall
        # against wall (num / den, counted in that order), or an arm's
        # perf µs per round trip against the floor of every round.
        c = cases[case]
        arm = {a["name"]: a for a in c["arms"]}
        where = placed.group(1)
        values = lambda name, field: [w for w, p in zip(arm[name][field], arm[name]["placement"]) if p == where]
        if placed.group(7):
            assert case in placed_cases and placed.group(4), chk
            assert (placed.group(2), placed.group(4)) == (placed.group(7), placed.group(8)), chk
            num, den = values(placed.group(7), "wall_us"), values(placed.group(8), "wall_us")
        else:
            assert case in ("perf-pipe", "perf-threads") and not placed.group(4), chk
            assert placed.group(2) == placed.group(9), chk
            num, den = values(placed.group(9), "figure"), c["floor"]["us_per_op"]
        shown = [int(placed.group(3))] + ([int(placed.group(5))] if placed.group(4) else [])
        assert shown == [len(num), len(den)][:len(shown)] and int(placed.group(6)) == 1, chk
        assert chk["bound"] is None, chk
        if min(len(num), len(den)) < 3:
            assert chk["value"] == "fewer than 3 runs" and chk["result"] == "not run", chk
        else:
            assert abs(float(chk["value"]) - statistics.median(num) / statistics.median(den)) < 2e-3, chk
    elif case in short_lived and case in cases:
        # The bound of a short-lived case is the empty preload's ratio; the
        # shim's own share is the arm's ratio over it.
        ratio = {a["name"]: a["wall_ratio"] for a in cases[case]["arms"]}
        m = re.fullmatch(r"`[a-z0-9-]+`: (no shim|empty preload) / (off|adaptive) \(wall\)(, the shim's own share)?",
                         chk["check"])
        assert m and bool(m.group(3)) == (m.group(1) == "empty preload"), chk
        if m.group(1) == "no shim":
            assert abs(chk["bound"] - ratio["empty preload"]) < 2e-4, (chk, ratio)
        else:
            assert chk["bound"] is None, chk
            assert abs(float(chk["value"]) - ratio[m.group(2)] / ratio["empty preload"]) < 2e-3, (chk, ratio)
    elif case == "fork" and case in cases and chk["check"].endswith("off - no shim"):
        # A fork's bound is what the empty preload adds to it.
        fig = {a["name"]: a["median_figure"] for a in cases[case]["arms"]}
        assert abs(chk["bound"] - (fig["empty preload"] - fig["no shim"])) < 2e-3, (chk, fig)
    else:
        assert chk["bound"] == (bounds.get(case) if speedup else None), chk
    # One round: nothing to resample.
    assert chk["interval"] is None and chk["resolved"] is None, chk
    if chk["value"] in ("not run", "fewer than 3 runs"):
        assert chk["result"] == "not run" and chk["pass"] is None, chk
        continue
    v, (op, t), b = float(chk["value"]), chk["threshold"].split()[:2], chk["bound"]
    t = float(t)
    if abs(v - t) < 2e-3 or (b is not None and abs(b - t) < 2e-3):
        continue  # too close to call from the rounded figures
    met = v >= t if op == "≥" else v <= t
    beyond = b is not None and (b < t if op == "≥" else b > t)
    want = "PASS" if met else "unreachable" if beyond else "FAIL"
    assert chk["result"] == want, (chk, want)
    assert chk["pass"] == ({"PASS": True, "FAIL": False}.get(want)), chk
    seen.add(want)
    # The start-up checks: what an arm adds to no shim, against an allowance
    # from the empty preload's (spawn) or a fixed one.
    m = re.fullmatch(r"`(spawn|fork)`: µs added per (?:process|fork), (\w+) - no shim", chk["check"])
    if m:
        c = cases[m.group(1)]
        fig = {a["name"]: a["median_figure"] for a in c["arms"]}
        assert abs(v - (fig[m.group(2)] - fig["no shim"])) < 2e-3, (chk, fig)
        if m.group(1) == "spawn":
            assert abs(t - max(1.5 * (fig["empty preload"] - fig["no shim"]), 10)) < 0.01, (chk, fig)
    m = re.fullmatch(r"`(wakeup-same|wakeup-spread)`: reader CPU µs per read, adaptive - off", chk["check"])
    if m:
        cpu = {a["name"]: a["median_cpu_us"] for a in cases[m.group(1)]["arms"]}
        assert abs(v - (cpu["adaptive"] - cpu["off"]) / cases[m.group(1)]["ops"]) < 2e-3, (chk, cpu)
    if chk["check"] == "`sparse`: adaptive consumer CPU / empty preload's, the shim's own share":
        cpu = {a["name"]: a["median_cpu_us"] for a in cases["sparse"]["arms"]}
        assert abs(v - cpu["adaptive"] / cpu["empty preload"]) < 2e-3, (chk, cpu)
    if chk["check"] == "`fork`: µs added per fork, off - empty preload, the shim's own share":
        fig = {a["name"]: a["median_figure"] for a in cases["fork"]["arms"]}
        assert abs(v - (fig["off"] - fig["empty preload"])) < 2e-3, (chk, fig)
print("verdicts seen:", sorted(seen))
EOF2
  # The Markdown says the same as the JSON.
  PYTHONPATH="$(dirname "$0")" python3 - "$work/m.json" "$md" <<'EOF3' || fail "Markdown and JSON disagree"
import json, re, sys
d = json.load(open(sys.argv[1]))
from matrix_table import acceptance_rows
rows = acceptance_rows(sys.argv[2])
close = lambda text, x, tol: abs(float(text) - x) <= tol
for chk in d["acceptance"]:
    value, interval, threshold, bound, result = rows[chk["check"]]
    assert (value, threshold) == (chk["value"], chk["threshold"]), (rows[chk["check"]], chk)
    b, ci = chk["bound"], chk["interval"]
    assert (bound == "") if b is None else close(bound, b, 1.5e-3), (bound, chk)
    if ci is None:
        assert interval == "", (interval, chk)
    else:
        m = re.fullmatch(r"\[(-?[0-9.]+), (-?[0-9.]+)\]", interval)
        assert m and close(m.group(1), ci[0], 1.5e-3) and close(m.group(2), ci[1], 1.5e-3), (interval, chk)
    unresolved = " (interval includes the threshold)"
    assert result.endswith(unresolved) == (chk["resolved"] is False), (result, chk)
    result = result.removesuffix(unresolved)
    if chk["result"] == "unreachable":
        m = re.fullmatch(r"unreachable here \(bound ([0-9.]+)\)", result)
        assert m and close(m.group(1), b, 0.011), (result, chk)
    else:
        assert result == chk["result"], (result, chk)
EOF3
  # The chart: its script, rendered as a table, has the report's ratios, and
  # run by gnuplot it draws the PNG it names.
  command -v gnuplot >/dev/null || { expect_not_in "$work/err" "no chart"; return 0; }
  python3 "$(dirname "$0")/check_chart.py" matrix "$work/m.gp" "$work/m.json" || fail "the chart is not the report"
  (cd "$work" && gnuplot m.gp) || fail "gnuplot m.gp"
  [ "$(head -c 8 "$work/m.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] || fail "not a PNG"
  # --plot FILE.png: gnuplot runs, and writes it.
  expect_status 0 "$bench" matrix --quick --rounds 1 --cases fork --plot "$work/f.png"
  [ "$(head -c 8 "$work/f.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] || fail "not a PNG"
}

# Three rounds: each check whose value is a statistic of the rounds has a 95%
# interval from resamples of them, in the JSON and the Markdown; a result says
# when its interval holds the threshold.
case_matrix_intervals() {
  command -v python3 >/dev/null || skip "python3 is not installed"
  expect_status 0 "$bench" matrix --quick --rounds 3 --cases seq-wc,sparse,fork,xargs \
    --markdown "$work/m.md" --json "$work/m.json"
  expect_in "$work/m.md" "| check | value | 95% interval | threshold | bound on this host | result |"
  PYTHONPATH="$(dirname "$0")" python3 - "$work/m.json" "$work/m.md" <<'EOF4' || fail "intervals"
import json, re, statistics, sys
d = json.load(open(sys.argv[1]))
from matrix_table import acceptance_rows
rows = acceptance_rows(sys.argv[2])
cases = {c["id"]: {a["name"]: a for a in c["arms"]} for c in d["cases"]}
assert set(cases) == {"seq-wc", "sparse", "fork", "xargs"}, cases.keys()
with_interval, unresolved, widths = 0, 0, []
for chk in d["acceptance"]:
    case = chk["check"].split("`")[1]
    ci = chk["interval"]
    if case not in cases:
        assert chk["value"] == "not run" and ci is None and chk["resolved"] is None, chk
        continue
    # Every check of these cases is a statistic of the rounds.
    assert ci is not None and len(ci) == 2 and ci[0] <= ci[1], chk
    with_interval += 1
    widths.append(ci[1] - ci[0])
    v = float(chk["value"])
    # Three rounds: the resamples that hold each round once (6 of 27) give
    # the value itself, so the interval cannot leave it out. The value is
    # rounded to 3 decimals, the interval to 4: 5.5e-4 apart at most, and a
    # float's last bit (0.871 against 0.8715 - 5e-4 failed once).
    assert ci[0] - 6e-4 <= v <= ci[1] + 6e-4, chk
    op, t = chk["threshold"].split()[:2]
    t = float(t)
    if min(abs(t - ci[0]), abs(t - ci[1])) > 2e-4:
        assert chk["resolved"] == (not ci[0] <= t <= ci[1]), chk
    unresolved += chk["resolved"] is False
    # A ratio of medians of the rounds stays within the ratios of their extremes.
    m = re.fullmatch(r"`[a-z-]+`: no shim / (\w+) \(wall\)", chk["check"])
    if m:
        base, arm = cases[case]["no shim"]["wall_us"], cases[case][m.group(1)]["wall_us"]
        assert min(base) / max(arm) - 1e-4 <= ci[0] and ci[1] <= max(base) / min(arm) + 1e-4, (chk, base, arm)
        want = statistics.median(base) / statistics.median(arm)
        assert abs(v - want) < 1e-3, (chk, want)
    cells = rows[chk["check"]]
    m = re.fullmatch(r"\[(-?[0-9.]+), (-?[0-9.]+)\]", cells[1])
    assert m and abs(float(m.group(1)) - ci[0]) < 1.5e-3 and abs(float(m.group(2)) - ci[1]) < 1.5e-3, cells
    assert cells[4].endswith("(interval includes the threshold)") == (chk["resolved"] is False), cells
    assert cells[4].split(" ")[0] in ("PASS", "FAIL", "unreachable"), cells
# seq-wc 1, sparse 2, fork 2, xargs 4.
assert with_interval == 9, with_interval
assert any(w > 0 for w in widths), widths
print("checks with an interval:", with_interval, "unresolved:", unresolved)
EOF4
}

# A PATH with only what the pipelines need: perf, hackbench and gnuplot are
# reported missing, with their Debian packages, and nothing is installed.
case_matrix_missing() {
  mkdir "$work/bin"
  for t in sh dd cat seq wc; do
    p=$(type -P "$t") || skip "$t is not installed"
    ln -s "$p" "$work/bin/$t"
  done
  PATH="$work/bin" expect_status 0 "$bench" matrix --quick --rounds 1 \
    --cases perf-pipe,hackbench-g1,seq-wc --plot "$work/m.png"
  expect_in "$work/err" "skipping perf-pipe: perf is not installed (Debian package: linux-perf)"
  expect_in "$work/err" "skipping hackbench-g1: hackbench is not installed (Debian package: rt-tests)"
  expect_in "$work/err" "no chart: gnuplot is not installed (Debian package: gnuplot-nox)"
  expect_in "$work/out" "skipping perf-pipe"
  expect_in "$work/out" "| seq-wc | adaptive | "
  expect_in "$work/out" "| \`perf-pipe\`: adaptive speed-up / fixed speed-up (wall) | not run |"
  [ ! -e "$work/m.png" ] || fail "a chart without gnuplot"
  # The script of a chart needs no gnuplot.
  PATH="$work/bin" expect_status 0 "$bench" matrix --quick --rounds 1 --cases seq-wc \
    --plot "$work/m.gp"
  expect_in "$work/m.gp" "set output '$work/m.png'"
  # A library without libpipespin-empty.so beside it: no empty preload arm.
  mkdir "$work/lib"
  cp "$library" "$work/lib/"
  PIPESPIN_LIBRARY="$work/lib/libpipespin.so" PATH="$work/bin" expect_status 0 "$bench" \
    matrix --quick --rounds 1 --cases seq-wc
  expect_in "$work/err" "no 'empty preload' arm: libpipespin-empty.so is not beside $work/lib/libpipespin.so"
  expect_in "$work/out" "| seq-wc | adaptive | "
  expect_not_in "$work/out" "| seq-wc | empty preload | "
  # Nothing that can run: 125, as for any other set-up problem.
  PATH="$work/bin" expect_status 125 "$bench" matrix --quick --rounds 1 \
    --cases perf-pipe,hackbench-stream
  expect_in "$work/err" "none of the chosen cases can run"
  expect_in "$work/err" "linux-perf"
  # One usable CPU: no spread placement, the case skipped with a note.
  command -v taskset >/dev/null || return 0
  expect_status 0 taskset -c 0 "$bench" matrix --quick --rounds 1 --cases wakeup-same,wakeup-spread
  expect_in "$work/err" "skipping wakeup-spread: it needs 2 usable CPUs, this process has 1"
  expect_in "$work/out" "| wakeup-same | adaptive | "
  expect_not_in "$work/out" "| wakeup-spread | adaptive | "
}

# Debian's perf wrapper without a perf for the running kernel: the matrix
# uses the newest perf_* beside it and says so.
case_matrix_perf_wrapper() {
  real=$(type -P perf) || skip "perf is not installed"
  "$real" version >/dev/null 2>&1 || skip "perf does not run here"
  mkdir "$work/bin"
  printf '#!/bin/sh\necho "WARNING: perf not found for kernel 0.0" >&2\nexit 2\n' >"$work/bin/perf"
  printf '#!/bin/sh\nexec %s "$@"\n' "$real" >"$work/bin/perf_5.10"
  printf '#!/bin/sh\nexec %s "$@"\n' "$real" >"$work/bin/perf_5.9"
  chmod 755 "$work/bin/perf" "$work/bin/perf_5.10" "$work/bin/perf_5.9"
  PATH="$work/bin:$PATH" expect_status 0 "$bench" matrix --quick --rounds 1 --cases perf-pipe
  expect_in "$work/err" "finds no perf for kernel"
  expect_in "$work/err" "using $work/bin/perf_5.10"
  expect_in "$work/out" "| perf-pipe | adaptive | "
  # Only the wrapper: the case is skipped, naming the package.
  rm "$work/bin/perf_5.10" "$work/bin/perf_5.9"
  PATH="$work/bin:$PATH" expect_status 125 "$bench" matrix --quick --rounds 1 --cases perf-pipe
  expect_in "$work/err" "linux-perf"
}

# coverage on a short list, through a PATH that holds cat and sed, a static
# program named wc and no gzip: engaged and identical where it ran, "not
# shimmable", "missing"; with --mode off nothing engages and it says so.
# A 2 ms pause after each answer makes every read wait, however busy the host.
case_coverage() {
  printf 'int main() { return 0; }\n' >"$work/prog.cpp"
  mkdir "$work/bin"
  if ! "$cxx" -static -o "$work/bin/wc" "$work/prog.cpp" 2>"$work/cc.err"; then
    cat "$work/cc.err"
    skip "cannot link a static program here"
  fi
  for tool in cat sed; do ln -s "$(type -P $tool)" "$work/bin/$tool"; done
  local args=(coverage --quick --rounds 2 --gap-us 2000 --programs cat,sed,wc,gzip)
  PATH="$work/bin" expect_status 0 "$bench" "${args[@]}" --markdown "$work/cov.md"
  cat "$work/out"
  cmp -s "$work/out" "$work/cov.md" || fail "--markdown FILE differs from stdout"
  expect_in "$work/out" 'Produced by `pipespin-bench coverage --quick --rounds 2 --gap-us 2000 --programs cat,sed,wc,gzip --markdown'
  grep -E '^\| cat \| `cat` \| relay[^|]*\| dynamic \| yes: [0-9]+ spins \(io [0-9]+\) \| identical \|' "$work/out" ||
    fail "cat: not dynamic, engaged through read and identical"
  grep -E '^\| sed \| .*\| dynamic \| yes: [0-9]+ spins \([^)]*stdio [0-9]+[^)]*\) \| identical \|' "$work/out" ||
    fail "sed: not engaged through stdio"
  grep -E '^\| wc \| .*\| not shimmable: [^|]*statically linked' "$work/out" || fail "wc: not 'not shimmable'"
  grep -E '^\| gzip \| .*\| missing \(Debian package gzip\) \|' "$work/out" || fail "gzip: not 'missing'"
  # The verdict comes from the shim's counters: with mode off it never spins.
  PATH="$work/bin" expect_status 1 "$bench" "${args[@]}" --mode off
  grep -E '^\| cat \| .*\| NO \([1-9][0-9]* processes, 0 waits\) \| identical \|' "$work/out" ||
    { cat "$work/out"; fail "cat engaged with mode off"; }
  expect_in "$work/err" "did not engage the shim"
  expect_status 2 "$bench" coverage --programs cat,frobnicate
  expect_in "$work/err" "unknown program 'frobnicate'"
}

validate="$(dirname "$0")/../e2e/validate_stats.py"

# A stats line as the shim writes it: PID START SEQ EVENT ARM PROGRAM WAITS HITS [VIA]
# (VIA: the members of its "via" object, from via_members).
stats_line() {
  local c='"calls":10,"waits":'$7',"spins":'$7',"spin_hits":'$8',"spin_misses":0,"spin_ns":1000000,"sleep_ns":0,"bytes":100'
  local z='"calls":0,"waits":0,"spins":0,"spin_hits":0,"spin_misses":0,"spin_ns":0,"sleep_ns":0,"bytes":0'
  local via=
  [ $# -ge 9 ] && via=',"via":{'$9'}'
  echo '{"v":1,"pid":'$1',"ppid":1,"program":"'$6'","event":"'$4'","arm":"'$5'","seq":'$3',"start_us":'$2',"wall_us":1000000,"sleeps_avoided":'$8',"config":{"mode":"adaptive"},"pipe":{"read":{'$c'},"write":{'$z'},"poll":{'$z'}},"fifo":{"read":{'$z'},"write":{'$z'},"poll":{'$z'}}'$via'}'
}
# via_members SPINS HITS x 7, in the shim's order: io poll stdio vector select epoll splice.
via_members() {
  local out= sep= f
  for f in io poll stdio vector select epoll splice; do
    out+=$sep'"'$f'":{"spins":'$1',"spin_hits":'$2'}'
    sep=,
    shift 2
  done
  echo "$out"
}

case_stats() {
  {
    stats_line 10 100 0 interval treatment srv 5 4   # superseded by seq 1
    stats_line 10 100 1 exit treatment srv 8 6
    stats_line 10 200 0 exit treatment cat 2 2       # the same pid after an exec
    stats_line 11 100 0 exit control srv 0 0
    stats_line 12 100 0 interval treatment srv 1 1   # still running
    echo 'not json'
  } >"$work/a.jsonl"
  # The lines as written (version 1) are valid against the schema.
  grep -v 'not json' "$work/a.jsonl" >"$work/valid.jsonl"
  python3 "$validate" "$work/valid.jsonl" || fail "a version 1 line is not valid against the schema"
  expect_status 0 "$pipespin" stats "$work/a.jsonl"
  expect_in "$work/err" "skipped 1 of 6 lines"
  grep -qE '^srv +treatment +2 +2\.00 +20 +9 +9 +77\.8 +7 ' "$work/out" || { cat "$work/out"; fail "srv treatment row"; }
  grep -qE '^srv +control +1 ' "$work/out" || fail "srv control row"
  grep -qE '^cat +treatment +1 ' "$work/out" || fail "cat row"
  expect_in "$work/out" "4 processes from 6 lines; 1 still running"
  expect_status 0 "$pipespin" stats --json "$work/a.jsonl"
  python3 - "$work/out" <<'PY' || fail "bad stats --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["lines"] == 6 and d["bad_lines"] == 1 and d["processes"] == 4, d
g = {(x["program"], x["arm"]): x for x in d["groups"]}
t = g[("srv", "treatment")]
assert t["processes"] == 2 and t["running"] == 1, t
assert t["counters"]["pipe"]["read"]["waits"] == 9 and t["counters"]["total"]["spin_hits"] == 7, t
assert t["sleeps_avoided"] == 7
assert {a["arm"] for a in d["arms"]} == {"control", "treatment"}
PY
  expect_status 2 "$pipespin" stats
  expect_in "$work/err" "missing FILE"
  expect_status 1 "$pipespin" stats "$work/nonexistent"
  expect_in "$work/err" "cannot read"
}

# Mode fixed's missed spins, per program, arm and direction, by the rule of
# the shim's exit report: 64 spins or more of the group's processes in mode
# fixed, fewer than half of them hits. The lines' answers are known: slow
# (fixed: 180 of 200 read spins missed, its write spins through a FIFO 100
# of 100), two (two processes of 40 read spins, 70 missed together) and
# edge (64 spins, 31 hits) are flagged; quick (fixed, mostly hits), adapt
# (adaptive, mostly misses), few (fixed, 63 spins, none hit), half (fixed,
# 64 spins, 32 hits) and the control arm are not.
case_stats_fixed_misses() {
  python3 - "$work" <<'PY' || fail "could not write the lines"
import json, sys
work = sys.argv[1]
dirs = ("read", "write", "poll")
def counters(spins=0, hits=0):
    return {"calls": spins, "waits": spins, "spins": spins, "spin_hits": hits,
            "spin_misses": spins - hits, "spin_ns": 1000 * spins, "sleep_ns": 0, "bytes": spins}
pid = [100]
def line(program, mode, arm="none", pipe=None, fifo=None):
    pid[0] += 1
    d = {"v": 1, "pid": pid[0], "ppid": 1, "program": program, "event": "exit", "arm": arm,
         "seq": 0, "start_us": 100, "wall_us": 1000, "sleeps_avoided": 0,
         "config": {"mode": mode, "spin_us": 50}}
    for kind, given in (("pipe", pipe or {}), ("fifo", fifo or {})):
        d[kind] = {x: counters(*given.get(x, (0, 0))) for x in dirs}
    d["sleeps_avoided"] = sum(d[k][x]["spin_hits"] for k in ("pipe", "fifo") for x in dirs)
    return json.dumps(d)
with open(f"{work}/f.jsonl", "w") as f:
    for l in [line("slow", "fixed", pipe={"read": (120, 20)}, fifo={"write": (100, 0)}),
              line("slow", "fixed", pipe={"read": (80, 0)}),
              line("two", "fixed", pipe={"read": (40, 0)}),
              line("two", "fixed", pipe={"read": (40, 10)}),
              line("edge", "fixed", pipe={"poll": (64, 31)}),
              line("quick", "fixed", pipe={"read": (200, 150), "write": (100, 60)}),
              line("adapt", "adaptive", pipe={"read": (200, 10)}),
              line("few", "fixed", pipe={"read": (63, 0)}),
              line("half", "fixed", pipe={"read": (64, 32)}),
              # The control arm runs mode off whatever config.mode says: no spins.
              line("ctl", "fixed", arm="control")]:
        print(l, file=f)
PY
  python3 "$validate" "$work/f.jsonl" || fail "the lines are not valid against the schema"
  local tail='the peer answers later than spin_us, or shares this CPU; adaptive mode would have stopped spinning'
  expect_status 0 "$pipespin" stats "$work/f.jsonl"
  sed -n '/^Mode fixed where its spins mostly missed (64 or more spins in a direction, fewer than half hits):$/,/^$/p' \
    "$work/out" | sed '1d;/^$/d' >"$work/flags.txt"
  {
    echo "edge             none      poll: mode fixed: 33 of 64 spins missed (51%): $tail"
    echo "slow             none      read: mode fixed: 180 of 200 spins missed (90%): $tail"
    echo "slow             none      write: mode fixed: 100 of 100 spins missed (100%): $tail"
    echo "two              none      read: mode fixed: 70 of 80 spins missed (87%): $tail"
  } >"$work/want.txt"
  diff "$work/want.txt" "$work/flags.txt" || { cat "$work/out"; fail "the groups flagged"; }
  # None flagged: no section.
  grep -E '"program": "(quick|adapt|few|half)"' "$work/f.jsonl" >"$work/none.jsonl"
  [ "$(wc -l <"$work/none.jsonl")" = 4 ] || fail "grep the unflagged lines"
  expect_status 0 "$pipespin" stats "$work/none.jsonl"
  expect_not_in "$work/out" "ode fixed"
  expect_status 0 "$pipespin" stats --json "$work/f.jsonl"
  python3 "$(dirname "$0")/validate_json.py" stats-report.schema.json "$work/out" ||
    fail "stats --json is not valid against its schema"
  python3 - "$work/out" "$tail" <<'PY' || fail "mode fixed's missed spins in stats --json"
import json, sys
d, tail = json.load(open(sys.argv[1])), sys.argv[2]
got = {g["program"]: [(m["direction"], m["spins"], m["spin_hits"], m["missed"], m["percent"])
                      for m in g["fixed_misses"]] for g in d["groups"]}
want = {"slow": [("read", 200, 20, 180, 90), ("write", 100, 0, 100, 100)],
        "two": [("read", 80, 10, 70, 87)], "edge": [("poll", 64, 31, 33, 51)],
        "quick": [], "adapt": [], "few": [], "half": [], "ctl": []}
assert got == want, got
for g in d["groups"]:
    for m in g["fixed_misses"]:
        assert m["text"] == f"mode fixed: {m['missed']} of {m['spins']} spins missed ({m['percent']}%): {tail}", m
# Per arm, over all its programs in mode fixed: quick's, few's and half's
# spins count there too (200+80+200+63+64 read spins, 20+10+150+32 hits).
arms = {a["arm"]: [(m["direction"], m["spins"], m["spin_hits"]) for m in a["fixed_misses"]]
        for a in d["arms"]}
assert arms == {"none": [("read", 607, 212), ("write", 200, 60), ("poll", 64, 31)],
                "control": []}, arms
PY
  # The shim's own lines say what its exit report says, in the same words:
  # cat reading 80 lines written 2 ms apart, mode fixed, a 50 µs budget
  # (as e2e.fixed_misses).
  for i in $(seq 80); do
    echo "$i"
    sleep 0.002
  done | env PIPESPIN_CONFIG= PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=50 PIPESPIN_LOG=info \
    PIPESPIN_STATS="$work/live.jsonl" LD_PRELOAD="$library" cat >/dev/null 2>"$work/live.err"
  report=$(sed -n 's/^.*exit pid=[0-9]* read: \(mode fixed: .*\)$/\1/p' "$work/live.err")
  [ -n "$report" ] || { cat "$work/live.err"; fail "no exit report of cat's missed spins"; }
  expect_status 0 "$pipespin" stats "$work/live.jsonl"
  grep -qxF "cat              none      read: $report" "$work/out" ||
    { cat "$work/live.err" "$work/out"; fail "stats does not say what the exit report says"; }
}

case_stats_via() {
  {
    stats_line 20 100 0 interval none hb 100 100 "$(via_members 100 100 0 0 0 0 0 0 0 0 0 0 0 0)"  # superseded
    stats_line 20 100 1 exit none hb 32 21 "$(via_members 6 5 3 1 2 2 1 0 4 3 7 2 9 8)"
    stats_line 21 100 0 exit none hb 18 6 "$(via_members 10 4 0 0 5 1 0 0 0 0 1 1 2 0)"
    stats_line 22 100 0 exit none idle 0 0 "$(via_members 0 0 0 0 0 0 0 0 0 0 0 0 0 0)"
    stats_line 23 100 0 exit none cat 3 3 "$(via_members 0 0 0 0 3 3 0 0 0 0 0 0 0 0)"
  } >"$work/v.jsonl"
  python3 "$validate" "$work/v.jsonl" || fail "a version 1 line is not valid against the schema"
  expect_status 0 "$pipespin" stats --json "$work/v.jsonl"
  python3 - "$work/out" <<'PY' || fail "bad via in stats --json"
import json, sys
d = json.load(open(sys.argv[1]))
families = ["io", "poll", "stdio", "vector", "select", "epoll", "splice"]
def via(pairs):
    return {f: {"spins": s, "spin_hits": h} for f, (s, h) in zip(families, pairs)}
want = via([(16, 9), (3, 1), (7, 3), (1, 0), (4, 3), (8, 3), (11, 8)])
g = {x["program"]: x for x in d["groups"]}
assert g["hb"]["via"] == want, g["hb"]["via"]
assert g["idle"]["via"] == via([(0, 0)] * 7), g["idle"]["via"]
for v in [g["hb"]["via"], g["idle"]["via"]]:
    assert list(v) == families, list(v)  # every family, in the shim's order
total = via([(16, 9), (3, 1), (10, 6), (1, 0), (4, 3), (8, 3), (11, 8)])
assert [a["via"] for a in d["arms"]] == [total], d["arms"]
PY
  # The table: one line below it for each group that spun, under one header.
  expect_status 0 "$pipespin" stats "$work/v.jsonl"
  sed -n '/^Spins by hook family, spins\/hits (a hit: /,/^$/p' "$work/out" >"$work/via.txt"
  grep -qxE 'hb +none +io=16/9 poll=3/1 stdio=7/3 vector=1/0 select=4/3 epoll=8/3 splice=11/8' "$work/via.txt" ||
    { cat "$work/out"; fail "no spins-by-hook line for hb"; }
  grep -qxE 'cat +none +io=0/0 poll=0/0 stdio=3/3 vector=0/0 select=0/0 epoll=0/0 splice=0/0' "$work/via.txt" ||
    { cat "$work/out"; fail "no spins-by-hook line for cat"; }
  [ "$(grep -c '=' "$work/via.txt")" = 2 ] || { cat "$work/out"; fail "a spins-by-hook line for a group without spins"; }
  [ "$(grep -c '^Spins by hook family' "$work/out")" = 1 ] || { cat "$work/out"; fail "not one header"; }
  # No spins anywhere: no section.
  grep '"idle"' "$work/v.jsonl" >"$work/idle.jsonl"
  expect_status 0 "$pipespin" stats "$work/idle.jsonl"
  expect_not_in "$work/out" "by hook"
  expect_status 0 "$pipespin" stats --help
  tr -s ' \n' ' ' <"$work/out" | grep -qF 'line of spins/hits per hook family (io, poll, stdio, vector, select, epoll, splice)' ||
    { cat "$work/out"; fail "--help does not describe the spins by hook family"; }
}

case_stats_from_shim() {
  # Lines the shim itself wrote, read back.
  PIPESPIN_STATS="$work/s.jsonl" PIPESPIN_AB=50 PIPESPIN_AB_SEED=3 LD_PRELOAD="$library" \
    sh -c 'seq 1000 | cat >/dev/null; true'
  python3 "$validate" "$work/s.jsonl" || fail "the shim's lines are not valid against the schema"
  expect_status 0 "$pipespin" stats --json "$work/s.jsonl"
  python3 - "$work/out" <<'PY' || fail "stats of the shim's lines"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bad_lines"] == 0 and d["processes"] >= 3, d
assert {x["program"] for x in d["groups"]} >= {"sh", "seq", "cat"}, d["groups"]
assert {x["arm"] for x in d["groups"]} <= {"control", "treatment"}, d["groups"]
PY
  # cat closes its stderr at exit (close_stdout): with PIPESPIN_STATS=stderr
  # its line is written just before, once, with the spins per hook family.
  echo hi | PIPESPIN_STATS=stderr LD_PRELOAD="$library" cat >/dev/null 2>"$work/cat.err"
  [ "$(grep -c '"event":"exit"' "$work/cat.err")" = 1 ] ||
    { cat "$work/cat.err"; fail "cat's exit line on stderr: not exactly one"; }
  grep -q '"via":{"io":{"spins":[0-9]*,"spin_hits":[0-9]*},"poll":' "$work/cat.err" ||
    fail "no via object in the line"
}

# stats --compare on lines whose figures are known: the verdicts, the
# samples from switchback periods, the warnings, a version 1 file.
case_stats_compare() {
  python3 - "$work" <<'PY' || fail "could not write the lines"
import json, sys
work = sys.argv[1]
def counters(calls=0, nbytes=0, hist=None):
    c = {"calls": calls, "waits": 0, "spins": 0, "spin_hits": 0, "spin_misses": 0, "spin_ns": 0,
         "sleep_ns": 0, "bytes": nbytes}
    if hist is not None:
        ns, log2 = hist
        c["wait_ns"] = {"hit": 0, "miss": 0, "plain": ns}
        c["wait_log2"] = {"hit": [], "miss": [], "plain": log2}
    return c
def line(v, pid, program, arm, wall_us, calls, seq=0, event="exit", start=100, period=0,
         ru=None, hist=None):
    d = {"v": v, "pid": pid, "ppid": 1, "program": program, "event": event, "arm": arm,
         "seq": seq, "start_us": start, "wall_us": wall_us}
    if v == 2:
        d["rusage"] = ru or {"utime_us": 0, "stime_us": 0, "nvcsw": 0, "nivcsw": 0, "maxrss_kb": 1}
    d["sleeps_avoided"] = 0
    d["config"] = {"mode": "fixed", "ab": 50, "ab_period": period}
    h0 = (0, []) if v == 2 else None
    d["pipe"] = {"read": counters(calls, calls, hist if hist else h0),
                 "write": counters(hist=h0), "poll": counters(hist=h0)}
    d["fifo"] = {k: counters(hist=h0) for k in ("read", "write", "poll")}
    d["via"] = {f: {"spins": 0, "spin_hits": 0} for f in
                ("io", "poll", "stdio", "vector", "select", "epoll", "splice")}
    return json.dumps(d)
with open(f"{work}/v1.jsonl", "w") as f:
    # Version 1: wall per call only. srv: control 200 µs per call, the
    # treatment 100 (each sample a little different); idle: the same in both.
    for i in range(6):
        print(line(1, 10 + i, "srv", "control", 200_000 + 1000 * i, 1000), file=f)
        print(line(1, 20 + i, "srv", "treatment", 100_000 + 1000 * i, 1000), file=f)
        print(line(1, 30 + i, "idle", "control", 100_000 + 1000 * i, 1000), file=f)
        print(line(1, 40 + i, "idle", "treatment", 100_500 + 1000 * i, 1000), file=f)
    print(line(1, 50, "few", "control", 1000, 10), file=f)
    print(line(1, 51, "few", "treatment", 1000, 10), file=f)
    print(line(1, 52, "sh", "control", 1000, 0), file=f)  # no call on a pipe: no sample
with open(f"{work}/v2.jsonl", "w") as f:
    # One switchback process: 12 periods alternating from control, each
    # 1 s and 1000 more reads; the control's waits take 64 µs, the
    # treatment's 2 µs; the lines carry cumulative counters and per-line
    # usage. The first period is written as two lines (a stats_interval
    # line inside it): one period. After the last switch, 5 ms and one read
    # until the exit: a partial period, left out.
    pieces = [("control", 400_000, 400, 400), ("control", 600_000, 600, 600)]
    for seq in range(1, 12):
        arm = "control" if seq % 2 == 0 else "treatment"
        pieces.append((arm, 1_000_000 if arm == "control" else 500_000 + 1000 * seq, 1000, 1000))
    pieces.append(("control", 5_000, 1, 1))
    calls = wall = waits_c = waits_t = 0
    for seq, (arm, dwall, dcalls, dwaits) in enumerate(pieces):
        calls += dcalls
        wall += dwall
        if arm == "control":
            waits_c += dwaits
        else:
            waits_t += dwaits
        log2 = [0] * 20
        log2[2] = waits_t
        log2[7] = waits_c
        while log2 and log2[-1] == 0:
            log2.pop()
        ru = {"utime_us": dcalls, "stime_us": dcalls,
              "nvcsw": dcalls if arm == "control" else dcalls // 100, "nivcsw": 0, "maxrss_kb": 100}
        print(line(2, 7, "daemon", arm, wall, calls, seq=seq,
                   event="exit" if seq == len(pieces) - 1 else "interval", period=1, ru=ru,
                   hist=(64_000 * waits_c + 2_000 * waits_t, log2)), file=f)
    # A process whose second line is missing: its third period is not attributable.
    for seq in (0, 2):
        print(line(2, 8, "gappy", "control", 1_000_000 * (seq + 1), 10 * (seq + 1), seq=seq,
                   event="interval", period=1), file=f)
PY
  python3 "$validate" "$work/v1.jsonl" "$work/v2.jsonl" || fail "the test's own lines are not valid"

  expect_status 0 "$pipespin" stats --compare --json "$work/v1.jsonl"
  expect_in "$work/err" "few: 1 control and 1 treatment samples, too few to decide (at least 5 per arm)"
  python3 - "$work/out" <<'PY' || fail "stats --compare --json on version 1 lines"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["compare"]["resamples"] == 10000 and d["compare"]["confidence"] == 0.95, d["compare"]
assert d["compare"]["margin"] == 0.05 and d["compare"]["min_samples"] == 5, d["compare"]
g = {x["program"]: x for x in d["groups"]}
assert set(g) == {"srv", "idle", "few", "(all)"}, list(g)
w = g["srv"]["measures"]["wall_per_call_us"]
assert g["srv"]["samples"] == {"control": 6, "treatment": 6} and g["srv"]["processes"] == 12, g["srv"]
assert w["control"]["median"] == 202.5 and w["treatment"]["median"] == 102.5, w
assert w["verdict"] == "faster" and w["ci_low"] > 1.05 and abs(w["ratio"] - 202.5 / 102.5) < 1e-4, w
# Version 1 lines carry no waits and no usage: those measures have no samples.
for key in ("blocked_per_wait_us", "cpu_per_mib_ms", "switches_per_call"):
    m = g["srv"]["measures"][key]
    assert m["control"]["samples"] == 0 and m["verdict"] is None, (key, m)
assert g["idle"]["measures"]["wall_per_call_us"]["verdict"] == "no significant difference", g["idle"]
assert g["few"]["too_few"] and g["few"]["measures"]["wall_per_call_us"]["verdict"] is None, g["few"]
# Overall: each program's figures relative to its own control median.
a = g["(all)"]["measures"]["wall_per_call_us"]
assert g["(all)"]["relative"] and not g["srv"]["relative"], g["(all)"]
assert a["control"]["median"] == 1 and a["control"]["samples"] == 13 and a["treatment"]["samples"] == 13, a
PY
  expect_status 0 "$pipespin" stats --compare "$work/v1.jsonl"
  grep -qE '^  wall per call \(µs\) +202\.5 +102\.5 +1\.976  \[[0-9.]+, [0-9.]+\] +faster$' "$work/out" ||
    { cat "$work/out"; fail "srv: no 'faster' row"; }
  expect_in "$work/out" "few: 1 control and 1 treatment samples (2 processes)"
  grep -qE '^  wall per call \(µs\) .* too few samples \(1 and 1\)$' "$work/out" || fail "few: no 'too few'"
  # A margin of 100%: a ratio of 2 is no longer beyond it.
  expect_status 0 "$pipespin" stats --compare --margin 100 --program srv "$work/v1.jsonl"
  grep -qE '^  wall per call .* no significant difference( \(primary\))?$' "$work/out" || fail "--margin 100"
  expect_not_in "$work/out" "idle"

  expect_status 0 "$pipespin" stats --compare --json "$work/v2.jsonl"
  expect_in "$work/err" "1 switchback period(s) left out: a line of their process is missing"
  python3 - "$work/out" <<'PY' || fail "stats --compare --json on switchback lines"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["periods_lost"] == 1, d
g = {x["program"]: x for x in d["groups"]}
s = g["daemon"]
assert s["samples"] == {"control": 6, "treatment": 6} and s["periods"] == 12 and s["processes"] == 0, s
assert s["partial_periods"] == 1 and g["(all)"]["partial_periods"] == 1, s
m = s["measures"]
assert m["blocked_per_wait_us"]["control"]["median"] == 64 and m["blocked_per_wait_us"]["treatment"]["median"] == 2, m
assert m["blocked_per_wait_us"]["verdict"] == "faster", m
assert m["wall_per_call_us"]["control"]["median"] == 1000, m
assert m["wall_per_call_us"]["verdict"] == "faster", m
assert m["switches_per_call"]["control"]["median"] == 1 and m["switches_per_call"]["treatment"]["median"] == 0.01, m
assert m["cpu_per_mib_ms"]["verdict"] == "no significant difference", m
c = s["waits"]["control"]["plain"]
assert c["log2"][7] == 6000 and c["ns"] == 6000 * 64000 and len(c["log2"]) == 20, c
assert s["waits"]["treatment"]["plain"]["log2"][2] == 6000, s["waits"]["treatment"]
assert g["gappy"]["periods"] == 1, g["gappy"]  # the first line's period only
PY
  expect_status 0 "$pipespin" stats --compare "$work/v2.jsonl"
  expect_in "$work/out" \
    "daemon: 6 control and 6 treatment samples (0 processes, 12 switchback periods; 1 partial period left out)"
  # The table shows a switchback process under its own arm.
  expect_status 0 "$pipespin" stats "$work/v2.jsonl"
  grep -qE '^daemon +switchback +1 ' "$work/out" || { cat "$work/out"; fail "no switchback row"; }

  expect_status 2 "$pipespin" stats --plot "$work/x.png" "$work/v1.jsonl"
  expect_in "$work/err" "--plot goes with --compare"
  expect_status 2 "$pipespin" stats --compare --margin 101 "$work/v1.jsonl"
  # Nothing to compare is an error, with a hint.
  expect_status 1 "$pipespin" stats --compare --program nothing "$work/v1.jsonl"
  expect_in "$work/err" "no process of 'nothing' ran in an A/B arm"
  expect_in "$work/err" "hint: "
  expect_status 1 "$pipespin" stats --compare --program nothing --plot "$work/x.png" "$work/v1.jsonl"
  expect_in "$work/err" "ran in an A/B arm"
  [ ! -e "$work/x.png" ] || fail "a plot of nothing"
}

# ab_period in the user's environment (or config) must not switch the runs
# of `pipespin ab` between arms: each run is in the arm ab puts it in.
case_ab_no_switchback() {
  # A run of 1.5 s whose cat reads a pipe all along: with a 1 s period, the
  # cat of its treatment run would end in the control arm and say so.
  printf '#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo x; sleep 0.1; done | cat >/dev/null\n' \
    >"$work/slow.sh"
  chmod 755 "$work/slow.sh"
  PIPESPIN_AB_PERIOD=1 expect_status 0 "$pipespin" ab -n 2 --warmup 0 -- "$work/slow.sh"
  expect_not_in "$work/out" "reported another arm"
  expect_in "$work/out" "verdict: "
}

case_ab() {
  expect_status 0 "$pipespin" ab -n 3 --warmup 0 --json -- sh -c 'exit 0'
  python3 - "$work/out" <<'PY' || fail "bad ab --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] in ("faster", "slower", "no significant difference"), d
assert d["ci_low"] <= d["ratio"] <= d["ci_high"], d
assert d["runs_per_arm"] == 3 and d["resamples"] == 10000 and d["confidence"] == 0.95, d
assert (d["ci_low"] > 1) == (d["verdict"] == "faster") and (d["ci_high"] < 1) == (d["verdict"] == "slower"), d
for name in ("control", "treatment"):
    a = d["arms"][name]
    assert len(a["wall_ms"]) == 3 and len(a["user_ms"]) == 3 and len(a["sys_ms"]) == 3, a
    assert a["min_wall_ms"] <= a["q1_wall_ms"] <= a["median_wall_ms"] <= a["q3_wall_ms"] <= a["max_wall_ms"], a
    assert a["shim_median"]["processes"] == 1 and a["runs_without_stats"] == 0, a
    # Context switches per run, from wait4: the median of the runs'.
    assert len(a["vol_cs"]) == 3 and len(a["invol_cs"]) == 3, a
    assert a["median_vol_cs"] == sorted(a["vol_cs"])[1] and a["median_invol_cs"] == sorted(a["invol_cs"])[1], a
    assert a["vol_cs_per_call"] is None, a  # sh -c 'exit 0' makes no call the shim sees
# A bound is null where it is unbounded: a resample whose treatment median is
# 0 switches (`sh -c 'exit 0'` makes 0 or 1) gives an infinite ratio, which JSON
# cannot hold.
lo, r, hi = d["vol_cs_ci_low"], d["vol_cs_ratio"], d["vol_cs_ci_high"]
assert r is None or ((lo is None or lo <= r) and (hi is None or r <= hi)), d
assert d["arms"]["control"]["shim_median"]["spins"] == 0
assert d["command"] == ["sh", "-c", "exit 0"]
PY
  # The same seed, the same interval from the same samples: deterministic.
  expect_status 0 "$pipespin" ab -n 2 --warmup 0 -- true
  for text in "control (mode off" "treatment (mode=adaptive" "Time (mean ± σ):" \
              "Range (min … max):" "95% CI [" "verdict: " "Shim (median per run): 1 processes" \
              "Context switches (median per run): " "voluntary context switches, ratio of medians: "; do
    expect_in "$work/out" "$text"
  done
  # hyperfine's "N times faster" only where the verdict says so.
  if grep -q "verdict: no significant difference" "$work/out"; then
    expect_not_in "$work/out" "times faster"
    expect_in "$work/out" "treatment and control: no significant difference (ratio of means "
  else
    expect_in "$work/out" "times faster than"
  fi
  # Context switches per call where the shim sees calls: cat reading a pipe.
  expect_status 0 "$pipespin" ab -n 2 --warmup 0 -- sh -c 'echo x | cat'
  grep -qE '^  Context switches \(median per run\): [0-9]+ voluntary \([0-9.]+ per call\), [0-9]+ involuntary$' "$work/out" ||
    { cat "$work/out"; fail "no context switches per call"; }
  # The user's configuration is the treatment; the arm is the command's.
  PIPESPIN_MODE=fixed PIPESPIN_AB=0 expect_status 0 "$pipespin" ab -n 2 --warmup 0 -- true
  expect_in "$work/out" "treatment (mode=fixed"
  if command -v gnuplot >/dev/null; then
    expect_status 0 "$pipespin" ab -n 2 --warmup 0 --plot "$work/ab.png" -- true
    [ "$(head -c 4 "$work/ab.png" | tail -c 3)" = PNG ] || fail "--plot wrote no PNG"
  fi
  expect_status 1 "$pipespin" ab -n 2 -- false
  expect_in "$work/err" "exited with status 1 in the control arm"
  expect_status 2 "$pipespin" ab -n 1 -- true
  expect_status 2 "$pipespin" ab
  expect_in "$work/err" "missing CMD"
  expect_status 127 "$pipespin" ab -- /nonexistent/cmd
}

# An ab --plot chart GP uses a log axis exactly when the arms' medians in
# the JSON report OUT differ more than 5x.
log_axis_follows() {
  python3 - "$1" "$2" <<'PY2' || fail "the axis does not follow the arms' spread ($2)"
import json, sys
d = json.load(open(sys.argv[1]))
c, t = (d["arms"][a]["median_wall_ms"] for a in ("control", "treatment"))
log = "set logscale y" in open(sys.argv[2]).read()
assert log == (max(c / t, t / c) > 5), (c, t, log)
PY2
}

# ab --plot draws one box per arm over that arm's runs, as the report has
# them: the chart's script rendered as a table (check_chart.py) against the
# JSON of the same run. The control arm sleeps 30 ms more, so that the arms
# do not overlap and their boxes must not either.
case_ab_plot() {
  command -v gnuplot >/dev/null || skip "gnuplot is not installed (Debian package gnuplot-nox)"
  expect_status 0 "$pipespin" ab -n 6 --warmup 0 --json --plot "$work/ab.gp" -- \
    sh -c '[ "$PIPESPIN_AB" = 100 ] || sleep 0.03'
  expect_in "$work/ab.gp" "set output '$work/ab.png'"
  python3 "$(dirname "$0")/check_chart.py" ab "$work/ab.gp" "$work/out" || fail "the chart is not the report"
  (cd "$work" && gnuplot ab.gp) || fail "gnuplot ab.gp"
  [ "$(head -c 4 "$work/ab.png" | tail -c 3)" = PNG ] || fail "ab.gp drew no PNG"
  # The axis is logarithmic exactly when the medians differ more than 5x
  # (here: 30 ms of sleep against a few ms of sh, however loaded the host).
  log_axis_follows "$work/out" "$work/ab.gp"
  expect_status 0 "$pipespin" ab -n 2 --warmup 0 --json --plot "$work/same.gp" -- true
  log_axis_follows "$work/out" "$work/same.gp"
}

# ---- check-config and run --print-config --------------------------------------

case_check_config() {
  printf '%s\n' '# ok' '[global]' 'spin_us = 70' '[program cat sort]' 'mode = fixed' >"$work/good.conf"
  chmod 644 "$work/good.conf"
  expect_status 0 "$pipespin" check-config "$work/good.conf"
  [ ! -s "$work/err" ] || fail "a clean file gave messages"
  grep -qE "^spin_us +70 +$work/good.conf:3$" "$work/out" || fail "spin_us and its line"
  grep -qE '^mode +adaptive +default$' "$work/out" || fail "mode without --program"
  grep -qE '^reload_ms +1000 +default$' "$work/out" || fail "a default"
  expect_status 0 "$pipespin" check-config --program sort "$work/good.conf"
  grep -qE "^mode +fixed +$work/good.conf:5$" "$work/out" || fail "mode for sort"
  expect_in "$work/out" "program: sort"
  expect_status 0 "$pipespin" check-config --program=/bin/cat "$work/good.conf"
  grep -qE "^mode +fixed +$work/good.conf:5$" "$work/out" || fail "mode for /bin/cat"
  # The environment is not the file's business.
  PIPESPIN_SPIN_US=5 expect_status 0 "$pipespin" check-config "$work/good.conf"
  grep -qE "^spin_us +70 " "$work/out" || fail "check-config read the environment"
}

case_check_config_errors() {
  printf '%s\n' 'spin_us = 70' 'spin_us = lots' 'nope = 1' '[program]' >"$work/bad.conf"
  chmod 644 "$work/bad.conf"
  expect_status 1 "$pipespin" check-config "$work/bad.conf"
  expect_in "$work/err" "pipespin: $work/bad.conf:2: spin_us: bad value 'lots' (expected a whole number 0..1000000); using 70"
  expect_in "$work/err" "pipespin: $work/bad.conf:3: unknown key 'nope'; ignored"
  expect_in "$work/err" "pipespin: $work/bad.conf:4: section [program] needs a NAME"
  expect_in "$work/err" "pipespin: 3 problems"
  grep -qE "^spin_us +70 +$work/bad.conf:1$" "$work/out" || fail "the table is still printed"
  expect_status 1 "$pipespin" check-config "$work/none.conf"
  expect_in "$work/err" "none.conf: no such file"
  chmod 666 "$work/bad.conf"
  expect_status 1 "$pipespin" check-config "$work/bad.conf"
  expect_in "$work/err" "refused: writable by everybody"
  expect_status 2 "$pipespin" check-config
  expect_in "$work/err" "missing FILE"
  expect_status 2 "$pipespin" check-config a b
  expect_status 2 "$pipespin" check-config --program
  expect_status 2 "$pipespin" check-config --frobnicate x
}

case_check_config_example() {
  # preload.conf.example is what the table generates, to the byte.
  local src
  src=$(cd "$(dirname "$0")/../.." && pwd)
  expect_status 0 "$pipespin" check-config --example
  diff -u "$src/preload.conf.example" "$work/out" >&2 ||
    fail "preload.conf.example is stale: regenerate it with 'pipespin check-config --example'"
  expect_status 0 "$pipespin" check-config "$src/preload.conf.example"
  [ ! -s "$work/err" ] || fail "the example has problems"
}

case_run_print_config() {
  printf '%s\n' 'spin_us = 70' '[program cat]' 'mode = fixed' 'probe = poll' >"$work/r.conf"
  chmod 644 "$work/r.conf"
  PIPESPIN_CONFIG="$work/r.conf" PIPESPIN_PROBE=fionread \
    expect_status 0 "$pipespin" run --print-config --spin-us 9 -- cat /nonexistent
  expect_in "$work/out" "config:  $work/r.conf"
  expect_in "$work/out" "program: cat"
  grep -qE "^mode +fixed +$work/r.conf:3$" "$work/out" || fail "mode from [program cat]"
  grep -qE '^spin_us +9 +PIPESPIN_SPIN_US$' "$work/out" || fail "the flag beats the file"
  grep -qE '^probe +fionread +PIPESPIN_PROBE$' "$work/out" || fail "the environment beats the file"
  # Nothing ran: cat would have failed on /nonexistent.
  [ ! -s "$work/err" ] || fail "stderr: $(cat "$work/err")"
  # A script runs as its interpreter.
  printf '#!/bin/sh\necho hi\n' >"$work/script"
  chmod 755 "$work/script"
  printf '%s\n' '[program sh dash]' 'mode = off' >"$work/s.conf"
  chmod 644 "$work/s.conf"
  PIPESPIN_CONFIG="$work/s.conf" expect_status 0 "$pipespin" run --print-config "$work/script"
  grep -qE "^mode +off +$work/s.conf:2$" "$work/out" || fail "a script is matched by its interpreter"
  # Problems: exit status 1, warnings on stderr.
  printf 'mode = sideways\n' >"$work/s.conf"
  PIPESPIN_CONFIG="$work/s.conf" expect_status 1 "$pipespin" run --print-config -- true
  expect_in "$work/err" "$work/s.conf:1: mode: bad value 'sideways'"
  # No file at all.
  PIPESPIN_CONFIG= expect_status 0 "$pipespin" run --print-config -- true
  expect_in "$work/out" "config:  none"
}

. "$(dirname "$0")/report_cases.sh"

declare -F "case_$case_name" >/dev/null || fail "no such case"
"case_$case_name"
echo "PASS ($case_name)"
