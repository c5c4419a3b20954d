#!/usr/bin/env bash
# End-to-end cases for the config file, one per CTest test:
#
#   config_case.sh CASE LIBPIPESPIN PINGPONG RETUNE
#
# Each case writes its config files into a scratch directory, runs programs
# under LD_PRELOAD with PIPESPIN_CONFIG naming them, and judges what the
# shim said (its debug lines show the resolved values and their sources; its
# exit report the counters and the final settings). Exit 0: pass, 77:
# skipped (the reason on stdout), anything else: fail.
set -uo pipefail

case_name=$1
lib=$2
pingpong=$3
retune=$4

. "$(dirname "$0")/../case_lib.sh"
case_setup "${TMPDIR:-/tmp}/pipespin-config"
chmod 755 "$work"

fail() {
  echo "FAIL ($case_name): $*" >&2
  echo "--- stdout:" >&2; cat "$work/out" >&2 2>/dev/null
  echo "--- stderr:" >&2; cat "$work/err" >&2 2>/dev/null
  exit 1
}
# conf NAME: stdin into $work/NAME, mode 0644.
conf() {
  cat >"$work/$1"
  chmod 644 "$work/$1"
}
# shim ENV... -- CMD...: runs CMD with the shim, stdout/stderr to $work/out, err.
shim() {
  local env_args=(LD_PRELOAD="$lib")
  while [[ $1 != -- ]]; do env_args+=("$1"); shift; done
  shift
  env "${env_args[@]}" "$@" >"$work/out" 2>"$work/err"
  local status=$?
  [[ $status -eq 0 ]] || fail "'$*' exited with status $status"
}
has() { grep -qE -- "$1" "$work/err" || fail "no stderr line matches '$1'"; }
hasnt() { ! grep -qE -- "$1" "$work/err" || fail "a stderr line matches '$1'"; }
count() { grep -cE -- "$1" "$work/err"; }

cpus=$(nproc)

case_pipeline() {
  # One file, one pipeline: each stage gets its own budget.
  conf p.conf <<'EOF'
[global]
spin_us = 33
[program seq]
spin_us = 111
[program wc]
spin_us = 222
mode = fixed
EOF
  shim PIPESPIN_CONFIG="$work/p.conf" PIPESPIN_LOG=debug -- sh -c 'seq 20000 | cat | wc -l'
  [[ $(cat "$work/out") == 20000 ]] || fail "the pipeline's output changed"
  has "^pipespin[[][^]]+[]]: debug: config $work/p.conf, program seq: mode=adaptive spin_us=111\(line 4\) "
  has "^pipespin[[][^]]+[]]: debug: config $work/p.conf, program cat: mode=adaptive spin_us=33\(line 2\) "
  has "^pipespin[[][^]]+[]]: debug: config $work/p.conf, program wc: mode=fixed\(line 7\) spin_us=222\(line 6\) "
  # The shell that runs them: [global] only. (/bin/sh is dash on Debian:
  # the executable's name, with argv[0] beside it when it differs.)
  local sh_name
  sh_name=$(basename "$(readlink -f "$(command -v sh)")")
  has "^pipespin[[][^]]+[]]: debug: config $work/p.conf, program $sh_name( \(argv\[0\] sh\))?: mode=adaptive spin_us=33\(line 2\) "
  hasnt '^pipespin[[][^]]+[]]: (warning|error)'
}

case_env_wins() {
  conf e.conf <<'EOF'
spin_us = 33
[program e2e_*]
spin_us = 44
EOF
  shim PIPESPIN_CONFIG="$work/e.conf" PIPESPIN_LOG=debug PIPESPIN_SPIN_US=55 -- "$pingpong" 200
  has "program e2e_pingpong: mode=adaptive spin_us=55\(env\) "
  # pingpong forks: the child keeps its parent's settings.
  [[ $(count '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ settings: mode=adaptive spin_us=55 ') -eq 2 ]] ||
    fail "both processes must run with the environment's spin_us"
}

case_bad_lines() {
  # Bad lines: one warning each, with file:line, the text and what was used;
  # the good lines still apply and the program runs unharmed.
  printf '%s\n' '[global]' 'spin_us = 70' 'spin_us = lots' 'frobnicate = 1' '[nonsense]' \
    'mode = off' '[global]' 'mode = sometimes' 'probe = poll' >"$work/b.conf"
  printf 'junk\001\000here\n' >>"$work/b.conf"
  chmod 644 "$work/b.conf"
  shim PIPESPIN_CONFIG="$work/b.conf" PIPESPIN_LOG=debug -- "$pingpong" 500
  grep -q '^pingpong: messages=500 ' "$work/out" || fail "pingpong's output"
  local f="$work/b.conf"
  # One warning each (pingpong forks after the constructor: one process warned).
  [[ $(count "^pipespin[[][^]]+[]]: warning: $f:3: spin_us: bad value 'lots' \(expected a whole number 0..1000000\); using 70$") -eq 1 ]] ||
    fail "the bad value warning"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $f:4: unknown key 'frobnicate'; ignored$") -eq 1 ]] || fail "unknown key"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $f:5: unknown section '\[nonsense\]'") -eq 1 ]] || fail "bad section"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $f:8: mode: bad value 'sometimes' .*; using adaptive$") -eq 1 ]] || fail "bad mode"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $f:10: binary data \(a control byte at column 5\): 'junk\\\\x01\\\\x00here'; ignored$") -eq 1 ]] ||
    fail "binary data"
  [[ $(count '^pipespin[[][^]]+[]]: warning: ') -eq 5 ]] || fail "expected exactly 5 warnings"
  has "mode=adaptive spin_us=70\(line 2\) probe=poll\(line 9\) "
}

case_refused() {
  conf w.conf <<<'spin_us = 99'
  chmod 666 "$work/w.conf"
  shim PIPESPIN_CONFIG="$work/w.conf" PIPESPIN_LOG=debug -- "$pingpong" 100
  has "^pipespin[[][^]]+[]]: warning: $work/w.conf: refused: writable by everybody \(mode 0666\); file ignored, using the defaults and the environment$"
  has ' spin_us=50 '
  # The settings lines (not the exit report's counters, whose spin_us is
  # time spent spinning: 99 µs of it failed this once).
  hasnt 'mode=[a-z]+ spin_us=99'
  # Not owned by root or the user: only testable as root (chown).
  if [[ $(id -u) -eq 0 ]]; then
    chmod 644 "$work/w.conf"
    chown 65534 "$work/w.conf"
    shim PIPESPIN_CONFIG="$work/w.conf" -- "$pingpong" 100
    has "^pipespin[[][^]]+[]]: warning: $work/w.conf: refused: owned by uid 65534, neither root nor the running user \(uid 0\)"
  fi
}

case_missing() {
  shim PIPESPIN_CONFIG="$work/none.conf" PIPESPIN_LOG=debug -- "$pingpong" 100
  has "^pipespin[[][^]]+[]]: warning: $work/none.conf: no such file; file ignored"
  # Empty: no file at all, not even /etc/pipespin.conf, and nothing to say.
  shim PIPESPIN_CONFIG= PIPESPIN_LOG=debug -- "$pingpong" 100
  hasnt '^pipespin[[][^]]+[]]: warning'
  has '^pipespin[[][^]]+[]]: debug: config none: mode=adaptive '
  # Too large: refused whole.
  head -c 70000 /dev/zero | tr '\0' '#' >"$work/big.conf"
  chmod 644 "$work/big.conf"
  shim PIPESPIN_CONFIG="$work/big.conf" -- "$pingpong" 100
  has "^pipespin[[][^]]+[]]: warning: $work/big.conf: too large \(70000 bytes, at most 65536\); file ignored"
}

case_log_file() {
  conf l.conf <<EOF
log = info
log_file = $work/shim.log
spin_us = bogus
EOF
  shim PIPESPIN_CONFIG="$work/l.conf" -- "$pingpong" 200
  [[ ! -s $work/err ]] || fail "the shim wrote to stderr with a log_file"
  [[ -f $work/shim.log ]] || fail "no log file"
  [[ $(stat -c %a "$work/shim.log") == 600 ]] || fail "the log file's mode is $(stat -c %a "$work/shim.log")"
  grep -qE "^pipespin[[][^]]+[]]: warning: $work/l.conf:3: spin_us: bad value 'bogus'" "$work/shim.log" ||
    fail "the warning is not in the log file"
  [[ $(grep -cE '^pipespin[[][^]]+[]]: info: exit pid=[0-9]* read: ' "$work/shim.log") -eq 2 ]] ||
    fail "both processes' exit reports belong in the log file"
  # Appended, never through a symlink: a link there sends messages to stderr.
  ln -s "$work/elsewhere" "$work/link.log"
  shim PIPESPIN_LOG=info PIPESPIN_LOG_FILE="$work/link.log" -- "$pingpong" 200
  [[ ! -e $work/elsewhere ]] || fail "the log went through a symlink"
  has "^pipespin[[][^]]+[]]: warning: cannot use log_file '$work/link.log' \(ELOOP\); messages go to stderr$"
  has '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: '
}

# Every line names its program and pid: "pipespin[PROG:PID]: LEVEL: TEXT".
case_log_prefix() {
  shim PIPESPIN_MODE=bogus PIPESPIN_LOG=info -- "$pingpong" 200
  # One start-up warning (the helper forks after it), two exit reports.
  [[ $(count "^pipespin\[e2e_pingpong:[0-9]+\]: warning: PIPESPIN_MODE: bad value 'bogus'") -eq 1 ]] ||
    fail "not one warning naming its program"
  local pids
  pids=$(grep -oE '^pipespin\[e2e_pingpong:[0-9]+\]: info: exit pid=[0-9]+ read' "$work/err" |
    sed -E 's/^pipespin\[e2e_pingpong:([0-9]+)\]: info: exit pid=([0-9]+) read/\1 \2/')
  [[ $(wc -l <<<"$pids") -eq 2 ]] || fail "not two exit reports"
  while read -r a b; do [[ $a == "$b" ]] || fail "the prefix's pid $a is not the process's $b"; done <<<"$pids"
  [[ $(cut -d' ' -f1 <<<"$pids" | sort -u | wc -l) -eq 2 ]] || fail "both processes gave one pid"
}

# Under systemd, stderr is the journal's stream when JOURNAL_STREAM names
# its device and inode: each line then starts with its priority.
case_journal() {
  : >"$work/err"
  local stream
  stream=$(stat -c '%d:%i' "$work/err")
  LD_PRELOAD="$lib" JOURNAL_STREAM="$stream" PIPESPIN_MODE=bogus PIPESPIN_LOG=info \
    "$pingpong" 200 >"$work/out" 2>>"$work/err" || fail "the program failed"
  [[ $(count "^<4>pipespin\[e2e_pingpong:[0-9]+\]: warning: PIPESPIN_MODE: bad value 'bogus'") -eq 1 ]] ||
    fail "warnings do not begin with <4>"
  [[ $(count '^<6>pipespin\[e2e_pingpong:[0-9]+\]: info: exit pid=[0-9]+ read: ') -eq 2 ]] ||
    fail "info lines do not begin with <6>"
  hasnt '^pipespin'
  # Another file's device and inode (the variable inherited by a program
  # whose stderr is not the journal): no prefix.
  : >"$work/other"
  shim JOURNAL_STREAM="$(stat -c '%d:%i' "$work/other")" PIPESPIN_MODE=bogus -- "$pingpong" 200
  hasnt '^<'
  has "^pipespin\[e2e_pingpong:[0-9]+\]: warning: PIPESPIN_MODE"
}

# log_file=syslog:PATH: each message is one datagram on the syslog socket
# PATH (a socket this test owns), as syslog(3) writes it; nothing on stderr.
case_syslog() {
  python3 - "$lib" "$pingpong" "$work" <<'PY2' || fail "syslog"
import os, re, socket, subprocess, sys
lib, pingpong, work = sys.argv[1:]
path = os.path.join(work, "log.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
env = dict(os.environ, LD_PRELOAD=lib, PIPESPIN_LOG_FILE="syslog:" + path,
           PIPESPIN_MODE="bogus", PIPESPIN_LOG="info")
p = subprocess.run([pingpong, "200"], env=env, capture_output=True, text=True, timeout=60)
assert p.returncode == 0, p
assert p.stderr == "", p.stderr
s.settimeout(1)
got = []
try:
    while True:
        got.append(s.recv(65536).decode())
except socket.timeout:
    pass
head = r"^<(\d+)>[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d pipespin\[(\d+)\]: e2e_pingpong: "
warn = [m for m in (re.match(head + r"warning: PIPESPIN_MODE: bad value 'bogus'", d) for d in got) if m]
info = [m for m in (re.match(head + r"info: exit pid=(\d+) read: ", d) for d in got) if m]
assert len(warn) == 1 and all(m.group(1) == "12" for m in warn), got  # user.warning
assert len(info) == 2 and all(m.group(1) == "14" and m.group(2) == m.group(3) for m in info), got
assert all("\n" not in d for d in got), got
# No such socket: the lines go to stderr, with one warning saying so.
env["PIPESPIN_LOG_FILE"] = "syslog:" + os.path.join(work, "none.sock")
p = subprocess.run([pingpong, "200"], env=env, capture_output=True, text=True, timeout=60)
assert p.returncode == 0, p
assert len(re.findall(r"(?m)^pipespin\[e2e_pingpong:\d+\]: warning: cannot send to the syslog socket", p.stderr)) == 1, p.stderr
assert len(re.findall(r"(?m)^pipespin\[e2e_pingpong:\d+\]: warning: PIPESPIN_MODE", p.stderr)) == 1, p.stderr
assert len(re.findall(r"(?m)^pipespin\[e2e_pingpong:\d+\]: info: exit pid=\d+ read: ", p.stderr)) == 2, p.stderr
PY2
}

# log_dest PATH WHY: PATH as log_file is refused: the program finishes (a
# hang is a failure, not a timeout of the suite), its start-up warning and
# both processes' exit reports are on stderr, with one warning saying why.
log_dest() {
  local path=$1 why=$2 status
  timeout 30 env LD_PRELOAD="$lib" PIPESPIN_LOG=info PIPESPIN_SPIN_US=bogus \
    PIPESPIN_LOG_FILE="$path" "$pingpong" 200 >"$work/out" 2>"$work/err"
  status=$?
  [[ $status -ne 124 ]] || fail "log_file $path: the program hung"
  [[ $status -eq 0 ]] || fail "log_file $path: the program exited with status $status"
  [[ $(count "^pipespin[[][^]]+[]]: warning: cannot use log_file '$path' \($why\); messages go to stderr$") -eq 1 ]] ||
    fail "log_file $path: expected one warning saying '$why'"
  has "^pipespin[[][^]]+[]]: warning: PIPESPIN_SPIN_US: bad value 'bogus'"
  [[ $(count '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: ') -eq 2 ]] ||
    fail "log_file $path: both exit reports belong on stderr"
}

case_log_dest() {
  # Only a regular file (or a terminal) is a log file, and the open never
  # blocks: a FIFO nobody reads hung every message (an open for writing
  # waits for a reader).
  mkfifo "$work/fifo"
  log_dest "$work/fifo" "not a regular file or a terminal"
  # A FIFO somebody reads is refused too, before it is opened: its reader
  # sees no writer come and go.
  mkfifo "$work/read.fifo"
  cat "$work/read.fifo" >"$work/fifo.got" &
  local reader=$!
  log_dest "$work/read.fifo" "not a regular file or a terminal"
  exec 3>"$work/read.fifo"  # let the reader end
  exec 3>&-
  wait "$reader"
  [[ ! -s $work/fifo.got ]] || fail "messages went into a FIFO"
  mkdir "$work/dir"
  log_dest "$work/dir" "not a regular file or a terminal"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/sock"
  log_dest "$work/sock" "not a regular file or a terminal"
  log_dest /dev/null "not a regular file or a terminal"
  # A terminal is a log file: the messages appear on it, none on stderr.
  python3 - "$lib" "$pingpong" >"$work/tty.out" 2>"$work/err" <<'PY' || fail "log_file on a terminal"
import os, pty, subprocess, sys
master, slave = pty.openpty()
env = {k: v for k, v in os.environ.items() if not k.startswith("PIPESPIN_")}
env.update(LD_PRELOAD=sys.argv[1], PIPESPIN_LOG="info", PIPESPIN_LOG_FILE=os.ttyname(slave))
p = subprocess.run([sys.argv[2], "200"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=30)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode(errors="replace"))
sys.stderr.write(p.stderr.decode(errors="replace"))
sys.exit(p.returncode)
PY
  [[ $(grep -cE '^pipespin[[][^]]+[]]: info: exit pid=[0-9]* read: ' "$work/tty.out") -eq 2 ]] ||
    fail "the exit reports belong on the terminal: $(cat "$work/tty.out")"
  hasnt pipespin
}

case_relative() {
  # In a file owned by root, stats and log_file must be absolute paths: a
  # setuid program (or any user's) would resolve a relative one in its own
  # working directory.
  [[ $(id -u) -eq 0 ]] || skip "a file owned by root can only be made as root"
  conf rel.conf <<'EOF'
log_file = rel.log
stats = rel.jsonl
log = info
EOF
  mkdir "$work/cwd"
  (cd "$work/cwd" && shim PIPESPIN_CONFIG="$work/rel.conf" -- "$pingpong" 200) || exit 1
  [[ -z $(ls -A "$work/cwd") ]] || fail "a relative path was used: $(ls -A "$work/cwd")"
  local why="refused in a file owned by root \(each process would resolve it in its own working directory\)"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $work/rel.conf:1: log_file: relative path 'rel.log' $why; using 'stderr'$") -eq 1 ]] ||
    fail "the relative log_file warning"
  [[ $(count "^pipespin[[][^]]+[]]: warning: $work/rel.conf:2: stats: relative path 'rel.jsonl' $why; using ''$") -eq 1 ]] ||
    fail "the relative stats warning"
  [[ $(count '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: ') -eq 2 ]] || fail "the exit reports on stderr"
}

# retune FROM TO: mode FROM -> TO while the program runs.
retune() {
  local from=$1 to=$2
  [[ $cpus -ge 2 ]] || skip "one CPU: the shim never spins here"
  conf r.conf <<EOF
mode = $from
spin_us = 500
reload_ms = 1
EOF
  conf r.next <<EOF
# the retuned file
mode = $to
spin_us = 500
reload_ms = 1
EOF
  # The environment still wins over the retuned file.
  shim PIPESPIN_CONFIG="$work/r.conf" PIPESPIN_LOG=info PIPESPIN_SPIN_US=300 -- \
    "$retune" "$work/r.conf" "$work/r.next" 1 2000
  [[ $(cat "$work/out") == "retune: ok" ]] || fail "the helper's output"
  [[ $(count "^pipespin[[][^]]+[]]: info: pid [0-9]+ reloaded $work/r.conf: mode=$to spin_us=300$") -eq 1 ]] ||
    fail "expected one reload to mode=$to"
  has "^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ settings: mode=$to spin_us=300 reloads=1$"
  hasnt '^pipespin[[][^]]+[]]: (warning|error)'
  # The counters: waits and spins are only counted where a spin was allowed.
  grep -E '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: ' "$work/err"
}

case_retune_fixed() {
  retune off fixed
  # Fixed spins on every wait of the pipes made before the change.
  grep -qE '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: waits=[1-9][0-9]* spins=[1-9]' "$work/err" ||
    fail "no spins after the switch to fixed"
}

case_retune_adaptive() {
  # Adaptive may rightly decide not to spin on a busy machine (the run-queue
  # gate), so its counters are reported, not required; the settings are.
  retune off adaptive
  grep -qE '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ read: waits=[0-9]+ spins=[1-9]' "$work/err" ||
    echo "NOTE: adaptive did not spin after the switch (a busy machine?)"
}

case_retune_emptied() {
  # The file replaced by an empty one: back to the defaults and the environment.
  conf g.conf <<'EOF'
mode = off
reload_ms = 1
EOF
  : >"$work/empty"
  chmod 644 "$work/empty"
  shim PIPESPIN_CONFIG="$work/g.conf" PIPESPIN_LOG=info PIPESPIN_RELOAD_MS=1 -- \
    "$retune" "$work/g.conf" "$work/empty" 1 200
  has "^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ settings: mode=adaptive spin_us=50 reloads=1$"
}

"case_$case_name"
echo "ok ($case_name)"
