#!/usr/bin/env bash
# Runs one reliability helper in one configuration and judges what the shim
# said about it.
#
#   run.sh --config CONFIG --lib LIBPIPESPIN [options] -- COMMAND [ARGS...]
#
# Configurations (REL_CONFIG tells the helper which one it runs in):
#   noshim    no LD_PRELOAD, no PIPESPIN_*: the reference behaviour
#   off       the shim, PIPESPIN_MODE=off: interposed, never spinning (the A/B
#             control arm, which must behave like no shim)
#   fixed     the shim, PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000: a 1 s
#             budget, so that the event under test lands inside a spin
#   adaptive  the shim, PIPESPIN_MODE=adaptive PIPESPIN_SPIN_US=1000000
#   fixed-poll, fixed-fionread
#             fixed with PIPESPIN_PROBE=poll or fionread: the spin looks at
#             the pipe with poll() or ioctl(FIONREAD) instead of RWF_NOWAIT
#   reload    the shim with PIPESPIN_CONFIG naming a scratch file that says
#             mode = off, spin_us = 1000000, reload_ms = 1, log = info, and no
#             PIPESPIN_MODE: the helper rewrites the file to retune the shim
#             while it runs (live reloads)
#
# Options:
#   --env NAME=VALUE  extra environment in the shim configurations (wins over
#                     the configuration's own values)
#   --spun DIR:N      (fixed* only) the helper's own exit report shows at least
#                     N spins for DIR (read, write or poll; read+poll sums
#                     two): proof that the events under test met a spinning
#                     shim, not a blocked syscall
#   --no-waits        (shim configs) the helper's exit report shows waits=0
#                     in both directions: the shim never stood in for a
#                     blocking call in that process
#
# Every helper prints "main-pid N" as its first stdout line, so that its own
# exit report can be told from those of its children. The helper's exit
# status must be 0 (77 means skipped, passed through to CTest). In the shim
# configurations PIPESPIN_LOG=info is set and the helper's exit report must
# be there (the shim was loaded and initialised); no shim warnings or errors
# may appear. Without the shim nothing may mention pipespin.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../support/driver.sh"

config="" lib="" no_waits=0
extra_env=() spun=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --env) extra_env+=("$2"); shift 2 ;;
    --spun) spun+=("$2"); shift 2 ;;
    --no-waits) no_waits=1; shift ;;
    --) shift; break ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 && -n $config ]] || { echo "run.sh: need --config and a command" >&2; exit 2; }

driver_clean_env
shim=1
case "$config" in
  noshim) shim=0 ;;
  off) env_args+=(PIPESPIN_MODE=off) ;;
  fixed) env_args+=(PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000) ;;
  adaptive) env_args+=(PIPESPIN_MODE=adaptive PIPESPIN_SPIN_US=1000000) ;;
  fixed-poll) env_args+=(PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000 PIPESPIN_PROBE=poll) ;;
  fixed-fionread) env_args+=(PIPESPIN_MODE=fixed PIPESPIN_SPIN_US=1000000 PIPESPIN_PROBE=fionread) ;;
  reload) ;;
  *) echo "run.sh: unknown config '$config'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $config == reload ]]; then
  printf 'mode = off\nspin_us = 1000000\nreload_ms = 1\nlog = info\n' >"$tmp/reload.conf"
  chmod 644 "$tmp/reload.conf"
  env_args+=(PIPESPIN_CONFIG="$tmp/reload.conf")
fi
env_args+=(REL_CONFIG="$config")
if [[ $shim == 1 ]]; then
  [[ -f $lib ]] || { echo "run.sh: no library at '$lib'" >&2; exit 2; }
  env_args+=(PIPESPIN_LOG=info "${extra_env[@]}" "LD_PRELOAD=$lib")
fi

start=$EPOCHREALTIME
driver_run "$config" "$@"
end=$EPOCHREALTIME
awk -v a="$start" -v b="$end" 'BEGIN { printf "elapsed %.2f s\n", b - a }' >&2

if [[ $status -eq 77 ]]; then
  echo "SKIPPED (see the helper's reason above)" >&2
  exit 77
fi
driver_check_status helper

main_pid=$(sed -n 's/^main-pid \([0-9][0-9]*\)$/\1/p' "$tmp/out" | head -1)
[[ -n $main_pid ]] || fail "the helper did not print 'main-pid N'"

# "pipespin[PROG:PID]: info: exit pid=P read: waits=W spins=S spin_hits=H spin_us=U ..." (read, write, poll)
field() {  # field DIR NAME: NAME's value in the helper's own DIR report
  grep -E "^pipespin[[][^]]+[]]: info: exit pid=$main_pid $1: " "$tmp/err" | head -1 |
    sed -n "s/.* $2=\([0-9][0-9]*\).*/\1/p"
}

if [[ $shim == 0 ]]; then
  ! grep -qi pipespin "$tmp/err" || fail "stderr mentions pipespin without the shim"
elif [[ -n $main_pid ]]; then
  for dir in read write; do
    [[ -n $(field "$dir" waits) ]] ||
      fail "no $dir exit report for pid $main_pid: the shim did not load or did not initialise"
  done
  if grep -q 'one usable CPU' "$tmp/err"; then
    echo "NOTE: the shim saw one usable CPU and does not spin" >&2
  fi
  if [[ $config == fixed* ]]; then
    for s in "${spun[@]}"; do
      dir=${s%%:*} min=${s#*:} got=0
      for d in ${dir//+/ }; do
        one=$(field "$d" spins)
        [[ -n $one ]] || { got=""; break; }
        got=$((got + one))
      done
      [[ -n $got && $got -ge $min ]] ||
        fail "fixed, 1 s budget: expected >= $min $dir spins in pid $main_pid, got '${got}'"
    done
  fi
  if [[ $no_waits == 1 ]]; then
    for dir in read write; do
      got=$(field "$dir" waits)
      [[ $got == 0 ]] || fail "the shim stood in for $got blocking ${dir}s that were not on pipes"
    done
  fi
  warnings=$(grep -E '^pipespin[[][^]]+[]]: (warning|error|critical): ' "$tmp/err")
  [[ -z $warnings ]] || fail "shim warnings or errors: $warnings"
fi

driver_finish reliability "$config"
