#!/usr/bin/env bash
# The shim's own output (statistics lines, log messages) never kills or holds
# the host: `sh -c 'seq 3 | cat'` prints 1 2 3 and exits 0 under the shim in
# modes off, fixed and adaptive, when
#   - the statistics file is refused by RLIMIT_FSIZE (`ulimit -f 0`, as
#     sandboxes set it): a write past it raises SIGXFSZ, which kills;
#   - the log file (log = info, log_file) is refused the same way;
#   - statistics and log lines go to a stderr that is a pipe whose reader is
#     gone: a write there raises SIGPIPE, which kills;
#   - they go to a stderr that is a full pipe nobody reads: a write there
#     blocks for ever (each line may wait 100 ms for room, then is dropped).
# Each refused destination is reported (one warning per process, where a
# warning can go). Without the shim the command does the same in each case.
#   check_own_output.sh LIB
set -u
lib=$1
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}

# Runs `sh -c 'seq 3 | cat'` with stderr as CASE says, in the environment
# given, under a 60 s timeout; prints "rc=N out=..." on one line.
cat >"$work/run.py" <<'PY'
import fcntl, os, subprocess, sys
case, env = sys.argv[1], dict(os.environ)
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    env[k] = v
err_log = open(os.environ["WORK"] + "/stderr." + case, "wb")
stderr, keep = err_log, None
if case in ("gone", "full"):
    r, w = os.pipe()
    if case == "gone":
        os.close(r)
    else:
        fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
        try:
            while True:
                os.write(w, b"x" * 4096)
        except BlockingIOError:
            pass
        fcntl.fcntl(w, fcntl.F_SETFL, 0)
        keep = r  # never read
    stderr = w
try:
    p = subprocess.run(["sh", "-c", "seq 3 | cat"], env=env, stdout=subprocess.PIPE,
                       stderr=stderr, timeout=60)
    print("rc=%d out=%s" % (p.returncode, p.stdout.decode().replace("\n", " ").strip()))
except subprocess.TimeoutExpired:
    print("rc=timeout out=")
PY

run() {  # CASE [ulimit-f] ENV...
  local case=$1 limit=$2
  shift 2
  (ulimit -f "$limit" && WORK=$work python3 "$work/run.py" "$case" "$@")
}

expect_ok() {  # WHAT RESULT
  [ "$2" = "rc=0 out=1 2 3" ] || fail "$1: got '$2', want 'rc=0 out=1 2 3'"
}

base=(PIPESPIN_CONFIG= PIPESPIN_LOG= PIPESPIN_STATS= PIPESPIN_LOG_FILE=)
for mode in "" off fixed adaptive; do
  if [ -z "$mode" ]; then
    shim=(LD_PRELOAD=)
    what="no shim"
  else
    shim=(LD_PRELOAD="$lib" PIPESPIN_MODE="$mode")
    what="mode $mode"
  fi
  rm -f "$work"/stats.jsonl "$work"/log
  r=$(run fsize 0 "${base[@]}" "${shim[@]}" PIPESPIN_STATS="$work/stats.jsonl")
  expect_ok "$what, statistics file refused by ulimit -f 0" "$r"
  if [ -n "$mode" ] && ! grep -q "cannot write statistics to .*EFBIG" "$work/stderr.fsize"; then
    fail "$what: no warning that the statistics file was refused"
    cat "$work/stderr.fsize" >&2
  fi
  r=$(run fsize 0 "${base[@]}" "${shim[@]}" PIPESPIN_LOG=info PIPESPIN_LOG_FILE="$work/log")
  expect_ok "$what, log file refused by ulimit -f 0" "$r"
  if [ -n "$mode" ] && ! grep -q "cannot write to log_file .*EFBIG" "$work/stderr.fsize"; then
    fail "$what: no warning that the log file was refused"
    cat "$work/stderr.fsize" >&2
  fi
  for case in gone full; do
    r=$(run "$case" unlimited "${base[@]}" "${shim[@]}" PIPESPIN_STATS=stderr PIPESPIN_LOG=info)
    expect_ok "$what, statistics and log to a stderr pipe ($case)" "$r"
  done
  echo "$what: checked"
done
exit $status
