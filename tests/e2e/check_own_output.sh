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
# A refused file is reported on stderr (one warning per process). Without
# the shim the command does the same in each case.
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
import fcntl, os, re, subprocess, sys
case, want, env = sys.argv[1], sys.argv[2], dict(os.environ)
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    env[k] = v
stderr = subprocess.PIPE  # read here: under ulimit -f 0 no file takes it
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
    warned = "yes" if want and re.search(want, (p.stderr or b"").decode()) else "no"
    print("rc=%d out=%s warned=%s" % (p.returncode,
                                       p.stdout.decode().replace("\n", " ").strip(), warned))
except subprocess.TimeoutExpired:
    print("rc=timeout out= warned=no")
PY

run() {  # CASE ULIMIT_F WARNING_RE ENV...
  local case=$1 limit=$2 want=$3
  shift 3
  (ulimit -f "$limit" && python3 "$work/run.py" "$case" "$want" "$@")
}

expect() {  # WHAT RESULT WANT
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

base=(PIPESPIN_CONFIG= PIPESPIN_LOG= PIPESPIN_STATS= PIPESPIN_LOG_FILE=)
for mode in "" off fixed adaptive; do
  if [ -z "$mode" ]; then
    shim=(LD_PRELOAD=)
    what="no shim" warned=no
  else
    shim=(LD_PRELOAD="$lib" PIPESPIN_MODE="$mode")
    what="mode $mode" warned=yes
  fi
  rm -f "$work"/stats.jsonl "$work"/log
  r=$(run fsize 0 "cannot write statistics to .*EFBIG" "${base[@]}" "${shim[@]}" \
    PIPESPIN_STATS="$work/stats.jsonl")
  expect "$what, statistics file refused by ulimit -f 0" "$r" "rc=0 out=1 2 3 warned=$warned"
  r=$(run fsize 0 "cannot write to log_file .*EFBIG" "${base[@]}" "${shim[@]}" PIPESPIN_LOG=info \
    PIPESPIN_LOG_FILE="$work/log")
  expect "$what, log file refused by ulimit -f 0" "$r" "rc=0 out=1 2 3 warned=$warned"
  for case in gone full; do
    r=$(run "$case" unlimited "" "${base[@]}" "${shim[@]}" PIPESPIN_STATS=stderr PIPESPIN_LOG=info)
    expect "$what, statistics and log to a stderr pipe ($case)" "$r" "rc=0 out=1 2 3 warned=no"
  done
  echo "$what: checked"
done
exit $status
