# Sourced by cli_test.sh: the cases of the reports (run --summary, the
# shim's warnings under run, stats --compare's family, stats --advise,
# empty input, the JSON documents and their schemas, check-config's "did
# you mean"). They use cli_test.sh's helpers and variables.
# shellcheck shell=bash

# run --summary: the program's output and status untouched, one table on
# stderr (or one JSON document), whatever way the program ends.
summary_cmd='seq 100000 | sort | uniq -c | wc -l'
case_run_summary() {
  sh -c "$summary_cmd" >"$work/plain.out"
  expect_status 0 "$pipespin" run --summary -- sh -c "$summary_cmd"
  cmp "$work/plain.out" "$work/out" || fail "the program's output changed"
  [ "$(grep -c '^ pipespin summary for ' "$work/err")" = 1 ] || { cat "$work/err"; fail "not one table"; }
  expect_in "$work/err" "pipespin summary for sh -c '$summary_cmd' (exited with status 0, "
  grep -qE '^  program +procs +calls +waits +spins +hit % +avoided +spin ms +asleep ms$' "$work/err" ||
    { cat "$work/err"; fail "no header"; }
  for p in sh seq sort uniq wc total; do
    grep -qE "^  $p +[1-9][0-9]* +[0-9]+ +[0-9]+ +[0-9]+ +(-|[0-9.]+%) +[0-9]+ +[0-9.]+ +[0-9.]+$" "$work/err" ||
      { cat "$work/err"; fail "no row for $p"; }
  done
  # The same as JSON, after the program's output; --export-json alone keeps stdout the program's.
  expect_status 0 "$pipespin" run -s --json -- sh -c "$summary_cmd"
  head -1 "$work/out" | cmp - "$work/plain.out" || fail "the program's output is not first"
  tail -1 "$work/out" >"$work/summary.json"
  expect_not_in "$work/err" "pipespin summary for"
  expect_status 0 "$pipespin" run -s --export-json "$work/export.json" -- sh -c "$summary_cmd"
  cmp "$work/plain.out" "$work/out" || fail "--export-json changed the program's output"
  expect_in "$work/err" "pipespin summary for"
  python3 - "$work/summary.json" "$work/export.json" <<'PY2' || fail "bad run --summary --json"
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    assert d["command"] == ["sh", "-c", "seq 100000 | sort | uniq -c | wc -l"], d["command"]
    assert d["exit"] == {"status": 0, "signal": None, "signal_name": None}, d["exit"]
    p = {x["program"]: x for x in d["programs"]}
    assert set(p) >= {"sh", "seq", "sort", "uniq", "wc"}, list(p)
    assert d["total"]["processes"] == sum(x["processes"] for x in d["programs"]), d["total"]
    assert d["total"]["calls"] == sum(x["calls"] for x in d["programs"]), d["total"]
PY2
  # A statistics file the user named gets the lines, and only the run's are read.
  echo '{"not": "a line"}' >"$work/mine.jsonl"
  PIPESPIN_STATS="$work/mine.jsonl" expect_status 0 "$pipespin" run -s --json -- sh -c 'echo x | cat'
  [ "$(grep -c '"event":"exit"' "$work/mine.jsonl")" -ge 2 ] || fail "the user's file has not the lines"
  python3 - "$work/out" <<'PY2' || fail "the user's file"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.loads(lines[-1])
assert d["lines"] >= 2 and {x["program"] for x in d["programs"]} >= {"cat"}, d
PY2
  expect_status 2 "$pipespin" run --json -- true
  expect_in "$work/err" "go with --summary or --print-config"
  expect_status 127 "$pipespin" run -s -- /nonexistent/cmd
  expect_in "$work/err" "cannot execute '/nonexistent/cmd'"
}

case_run_summary_failing() {
  expect_status 3 "$pipespin" run --summary -- sh -c 'echo out; echo err >&2; exit 3'
  [ "$(cat "$work/out")" = out ] || fail "stdout: $(cat "$work/out")"
  head -1 "$work/err" | grep -qx err || fail "the program's stderr is not first"
  expect_in "$work/err" "(exited with status 3, "
  [ "$(grep -c '^ pipespin summary for ' "$work/err")" = 1 ] || fail "not one table"
}

case_run_summary_signal() {
  # A child killed by a signal: said, and pipespin dies of the same signal
  # (a shell sees 128+15), without a core file.
  mkdir "$work/tmp"
  ( cd "$work" && TMPDIR="$work/tmp" "$pipespin" run --summary -- sh -c 'echo x | cat; kill -TERM $$' >"$work/out" 2>"$work/err" )
  local got=$?
  [ -z "$(ls -A "$work/tmp")" ] || fail "the private statistics file was left behind: $(ls -A "$work/tmp")"
  [ "$got" = 143 ] || { cat "$work/err"; fail "exit $got, expected 143 (SIGTERM)"; }
  expect_in "$work/out" "x"
  expect_in "$work/err" "(killed by signal 15 (Terminated), "
  expect_in "$work/err" "pipespin: sh was killed by signal 15 (Terminated)"
  [ "$(grep -c '^ pipespin summary for ' "$work/err")" = 1 ] || fail "not one table"
  expect_in "$work/err" "  cat "
  "$pipespin" run -s --json -- sh -c 'kill -KILL $$' >"$work/out" 2>"$work/err"
  got=$?
  [ "$got" = 137 ] || fail "exit $got, expected 137 (SIGKILL)"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["exit"]=={"status":None,"signal":9,"signal_name":"SIGKILL"}, d' "$work/out" ||
    fail "the JSON's exit"
  ! ls "$work"/core* >/dev/null 2>&1 || fail "a core file"
}

# A bad PIPESPIN_ value is said once for the whole tree: by run, which
# checked it, and by no process of the tree.
case_run_warns_once() {
  PIPESPIN_MODE=bogus expect_status 0 "$pipespin" run -- sh -c 'seq 10 | xargs -n1 echo'
  [ "$(wc -l <"$work/out")" = 10 ] || fail "the program's output"
  [ "$(grep -c "PIPESPIN_MODE: bad value 'bogus'" "$work/err")" = 1 ] ||
    { cat "$work/err"; fail "not one warning"; }
  expect_in "$work/err" "pipespin: warning: PIPESPIN_MODE: bad value 'bogus'"
  [ "$(wc -l <"$work/err")" = 1 ] || { cat "$work/err"; fail "other lines"; }
  # A process that changes the value warns again: the marker no longer matches.
  PIPESPIN_MODE=bogus expect_status 0 "$pipespin" run -- sh -c 'PIPESPIN_MODE=worse /bin/true'
  [ "$(grep -c "PIPESPIN_MODE: bad value 'worse'" "$work/err")" = 1 ] || { cat "$work/err"; fail "no warning for a new value"; }
  # Without run, each process says it (capped per process), naming itself.
  PIPESPIN_MODE=bogus LD_PRELOAD="$library" sh -c 'seq 3 | cat' >"$work/out" 2>"$work/err"
  [ "$(grep -c "PIPESPIN_MODE: bad value 'bogus'" "$work/err")" -ge 3 ] || { cat "$work/err"; fail "per process"; }
  grep -qE "^pipespin\[seq:[0-9]+\]: warning: PIPESPIN_MODE: bad value 'bogus'" "$work/err" ||
    { cat "$work/err"; fail "a line does not name its program and pid"; }
}

ab_lines="$(dirname "$0")/ab_lines.py"

# An A/A experiment (a treatment that never spins, four programs, noisy):
# with one primary line and the family of the others controlled, every line
# reads "no significant difference". Each of these seeds gave a "faster"
# line when every line had its own 95% interval.
case_stats_aa() {
  for seed in 2 4 11; do
    python3 "$ab_lines" aa "$seed" >"$work/aa.jsonl" || fail "could not write the lines"
    python3 "$validate" "$work/aa.jsonl" >/dev/null || fail "the test's own lines are not valid"
    expect_status 0 "$pipespin" stats --compare --json "$work/aa.jsonl"
    python3 - "$work/out" <<'PY2' || fail "seed $seed: a verdict in an A/A experiment"
import json, sys
d = json.load(open(sys.argv[1]))
lines = [(g["program"], k, m) for g in d["groups"] for k, m in g["measures"].items()]
assert sum(m["primary"] for _, _, m in lines) == 1, "not one primary line"
p = [(g, k) for g, k, m in lines if m["primary"]][0]
assert p == ("(all)", "wall_per_call_us") and d["primary"]["program"] == "(all)", p
tested = [m for _, _, m in lines if m["verdict"] is not None]
assert d["compare"]["family_lines"] == len(tested) - 1, d["compare"]
for g, k, m in lines:
    assert m["verdict"] in (None, "no significant difference"), (g, k, m)
    if m["verdict"] is not None and not m["primary"]:
        assert abs(m["confidence"] - (1 - 0.05 / d["compare"]["family_lines"])) < 1e-4, m
PY2
    expect_status 0 "$pipespin" stats --compare "$work/aa.jsonl"
    ! grep -E '(faster|slower)( \(primary\))?$' "$work/out" || fail "seed $seed: a verdict line"
    expect_in "$work/out" "Verdict (wall per call (µs), (all)): no significant difference"
  done
}

# stats --advise on an experiment whose answer is known: mode = off for the
# program that got slower, nothing for the one with no difference, a larger
# spin_us where spins missed by a little, a smaller one where they all hit
# early; the file passes check-config.
case_stats_advise() {
  python3 "$ab_lines" advise 1 >"$work/adv.jsonl" || fail "could not write the lines"
  python3 "$validate" "$work/adv.jsonl" >/dev/null || fail "the test's own lines are not valid"
  expect_status 0 "$pipespin" stats --advise "$work/adv.jsonl"
  cp "$work/out" "$work/adv.conf"
  chmod 644 "$work/adv.conf"
  python3 - "$work/adv.conf" <<'PY2' || { cat "$work/adv.conf"; fail "the advice"; }
import re, sys
text = open(sys.argv[1]).read()
sections = {}
current = None
for line in text.splitlines():
    assert len(line) <= 79, line
    m = re.match(r"^\[program (.+)\]$", line)
    if m:
        current = m.group(1)
        sections[current] = {}
    elif line and not line.startswith("#"):
        k, v = [x.strip() for x in line.split("=")]
        sections[current][k] = v
assert sections == {"slow": {"mode": "off"}, "late": {"spin_us": "500"},
                    "early": {"spin_us": "10"}}, sections
# Each suggestion's evidence is the comment just above its section.
assert re.search(r"# mode = off: the treatment was slower.*\n\[program slow\]", text, re.S)
assert re.search(r"# slow: wall per call: control/treatment 0\.[0-9]+, [0-9.]+% interval .*slower", text, re.S)
assert re.search(r"# same: .*no significant difference.*\n# no evidence for a change\n", text, re.S)
joined = re.sub(r"\n# ", " ", text)  # the comments' sentences, unwrapped
assert "missed spin_us=50" in joined and "spins hit, 99% of them" in joined, joined
PY2
  expect_status 0 "$pipespin" check-config "$work/adv.conf"
  [ ! -s "$work/err" ] || fail "check-config: $(cat "$work/err")"
  expect_status 0 "$pipespin" check-config --program slow "$work/adv.conf"
  grep -qE "^mode +off +$work/adv.conf:[0-9]+$" "$work/out" || fail "slow: not mode off"
  expect_status 0 "$pipespin" check-config --program same "$work/adv.conf"
  grep -qE '^mode +adaptive +default$' "$work/out" || fail "same: changed"
  grep -qE '^spin_us +50 +default$' "$work/out" || fail "same: changed"
  # The same as JSON, the file included.
  expect_status 0 "$pipespin" stats --advise --json "$work/adv.jsonl"
  python3 - "$work/out" "$work/adv.conf" <<'PY2' || fail "stats --advise --json"
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["program"]: x for x in d["programs"]}
assert p["slow"]["verdict"] == "slower" and p["slow"]["suggestions"][0]["key"] == "mode", p["slow"]
assert p["same"]["suggestions"] == [] and p["same"]["verdict"] == "no significant difference"
assert d["config"] == open(sys.argv[2]).read()
PY2
  expect_status 2 "$pipespin" stats --advise --compare "$work/adv.jsonl"
}

# Empty or unusable input is an error with a hint.
case_stats_empty() {
  : >"$work/empty.jsonl"
  expect_status 1 "$pipespin" stats "$work/empty.jsonl"
  expect_in "$work/err" "no statistics line in"
  expect_in "$work/err" "hint: "
  echo 'not json' >"$work/bad.jsonl"
  for mode in "" --compare --advise --json; do
    expect_status 1 "$pipespin" stats $mode "$work/bad.jsonl"
    expect_in "$work/err" "no statistics line in $work/bad.jsonl (1 line read, first problem: $work/bad.jsonl:1:"
    [ ! -s "$work/out" ] || fail "stats $mode printed a report of nothing"
  done
  # Lines, but none in an arm: nothing to compare or advise from.
  stats_line 10 100 0 exit none cat 1 1 >"$work/none.jsonl"
  expect_status 1 "$pipespin" stats --compare "$work/none.jsonl"
  expect_in "$work/err" "ran in an A/B arm"
  expect_in "$work/err" "hint: run the programs with PIPESPIN_AB=50"
  expect_status 1 "$pipespin" stats --advise "$work/none.jsonl"
  expect_in "$work/err" "no evidence to advise from"
}

# Every reporting command takes --json (the document on stdout) and
# --export-json FILE (the same document in FILE), and each document is
# valid against its schema in docs/.
case_json_schemas() {
  local v="$(dirname "$0")/validate_json.py"
  python3 "$ab_lines" advise 1 >"$work/adv.jsonl"
  printf 'spin_us = 70\n' >"$work/c.conf"
  chmod 644 "$work/c.conf"
  # check_json SCHEMA STATUS COMMAND... (the word @J where the flag goes)
  check_json() {
    local schema=$1 status=$2 w
    shift 2
    local json=() export=()
    for w in "$@"; do
      if [ "$w" = @J ]; then json+=(--json); export+=(--export-json "$work/exported.json")
      else json+=("$w"); export+=("$w"); fi
    done
    expect_status "$status" "${json[@]}"
    python3 "$v" "$schema" "$work/out" || fail "'${json[*]}' is not valid against $schema"
    cp "$work/out" "$work/printed.json"
    expect_status "$status" "${export[@]}"
    python3 "$v" "$schema" "$work/exported.json" || fail "'${export[*]}' is not valid"
  }
  check_json stats-report.schema.json 0 "$pipespin" stats @J "$work/adv.jsonl"
  cmp "$work/printed.json" "$work/exported.json" || fail "stats: --json and --export-json differ"
  grep -q '^program ' "$work/out" || fail "stats --export-json: no table on stdout"
  check_json stats-compare.schema.json 0 "$pipespin" stats --compare @J "$work/adv.jsonl"
  check_json stats-advise.schema.json 0 "$pipespin" stats --advise @J "$work/adv.jsonl"
  check_json config.schema.json 0 "$pipespin" check-config @J "$work/c.conf"
  PIPESPIN_CONFIG="$work/c.conf" check_json config.schema.json 0 "$pipespin" run --print-config @J -- cat
  check_json ab.schema.json 0 "$pipespin" ab -n 2 --warmup 0 @J -- true
  check_json pingpong.schema.json 0 "$pipespin" pingpong --iterations 200 --rounds 1 @J
  expect_status 0 "$pipespin" run --summary --json -- sh -c 'echo x | cat >/dev/null'
  python3 "$v" run-summary.schema.json "$work/out" || fail "run --summary --json"
  expect_status 3 "$pipespin" run -s --export-json "$work/run.json" -- sh -c 'exit 3'
  python3 "$v" run-summary.schema.json "$work/run.json" || fail "run --summary --export-json"
  # The shim's own lines keep their schema (docs/stats.schema.json).
  python3 "$validate" "$work/adv.jsonl" >/dev/null || fail "stats lines"
  # A file that cannot be written is an error.
  expect_status 1 "$pipespin" stats --export-json "$work/no/such/dir.json" "$work/adv.jsonl"
  expect_in "$work/err" "cannot write --export-json"
}

# An unknown key gets the nearest known one.
case_check_config_suggest() {
  printf '%s\n' 'spin-us = 70' 'mdoe = fixed' 'frobnicate = 1' >"$work/typo.conf"
  chmod 644 "$work/typo.conf"
  expect_status 1 "$pipespin" check-config "$work/typo.conf"
  expect_in "$work/err" "$work/typo.conf:1: unknown key 'spin-us'; ignored; did you mean 'spin_us'?"
  expect_in "$work/err" "$work/typo.conf:2: unknown key 'mdoe'; ignored; did you mean 'mode'?"
  expect_in "$work/err" "$work/typo.conf:3: unknown key 'frobnicate'; ignored"
  expect_not_in "$work/err" "'frobnicate'; ignored; did you mean"
  expect_status 1 "$pipespin" check-config --json "$work/typo.conf"
  python3 - "$work/out" <<'PY2' || fail "the problems in --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["problem_count"] == 3 and "did you mean 'spin_us'?" in d["problems"][0], d["problems"]
PY2
}
