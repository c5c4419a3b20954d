#!/usr/bin/env bash
# Runs one e2e case in one configuration and judges it.
#
#   run_case.sh --config CONFIG --lib LIBPIPESPIN [options] -- COMMAND [ARGS...]
#
# Configurations:
#   noshim          no LD_PRELOAD at all: the reference behaviour
#   off             the shim loaded, PIPESPIN_MODE=off (interposes, never spins)
#   fixed           the shim, PIPESPIN_MODE=fixed, default probe (nowait)
#   fixed-poll      ... with PIPESPIN_PROBE=poll
#   fixed-fionread  ... with PIPESPIN_PROBE=fionread
#   adaptive        the shim, PIPESPIN_MODE=adaptive (the default mode; it may
#                   rightly decide not to spin, so --engaged does not apply)
#   shim            the shim with no PIPESPIN_MODE/PROBE set (use --env)
#
# Options:
#   --expect FILE       stdout must equal FILE (the same file for every config,
#                       so the output is also compared across configurations)
#   --expect-text TEXT  stdout must equal TEXT plus a newline
#   --env NAME=VALUE    extra environment for the shim configurations
#   --engaged           (configs that must spin) every process whose exit
#                       report shows read or poll calls on pipes must have
#                       spun in them (a forked child counts only its own
#                       calls: a writer-only child is not held to it)
#   --no-report         the command's processes may end without an exit report
#                       (they _exit or close stderr)
#   --spun-via FAMILY   (configs that must spin) the exit reports' "spins by
#                       hook" line shows spins through FAMILY (stdio, vector,
#                       select, epoll, splice, poll, io) in some process
#   --no-spin-via FAMILY (shim configs) and no spin at all through FAMILY
#   --imports SYM,...   the command's binary must import these symbols
#   --log LEVEL         PIPESPIN_LOG in the shim configurations (default info)
#   --stderr-has RE     (shim configs) some stderr line matches RE (grep -E)
#   --stderr-order A B  (shim configs) a stderr line matching A comes before
#                       the first line matching B
#   --expect-warning VAR VALUE USED
#                       exactly one shim warning names VAR, the bad VALUE and
#                       "using USED"; repeatable. Any other shim warning fails.
#
# The helper's exit status must be 0. In shim configurations PIPESPIN_LOG is
# info (or --log), and the shim's stderr must show: its exit report (proof that it was
# loaded and initialised), no warnings or errors (unless expected), and in
# mode off no spins at all. Without the shim nothing may mention pipespin.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../support/driver.sh"

config="" lib="" expect_file="" expect_text="" engaged=0 report=1 imports=""
order_a="" order_b="" log=info stderr_has=()
extra_env=() spun_via=() no_spin_via=() warn_var=() warn_value=() warn_used=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --expect) expect_file=$2; shift 2 ;;
    --expect-text) expect_text=$2; shift 2 ;;
    --env) extra_env+=("$2"); shift 2 ;;
    --engaged) engaged=1; shift ;;
    --no-report) report=0; shift ;;
    --imports) imports=$2; shift 2 ;;
    --spun-via) spun_via+=("$2"); shift 2 ;;
    --no-spin-via) no_spin_via+=("$2"); shift 2 ;;
    --log) log=$2; shift 2 ;;
    --stderr-has) stderr_has+=("$2"); shift 2 ;;
    --stderr-order) order_a=$2; order_b=$3; shift 3 ;;
    --expect-warning) warn_var+=("$2"); warn_value+=("$3"); warn_used+=("$4"); shift 4 ;;
    --) shift; break ;;
    *) echo "run_case.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 && -n $config ]] || { echo "run_case.sh: need --config and a command" >&2; exit 2; }

# The environment: nothing inherited from the caller's PIPESPIN_* or LD_PRELOAD,
# and no config file (not even the host's /etc/pipespin.conf) unless --env sets one.
driver_clean_env
env_args+=(PIPESPIN_CONFIG=)
shim=1 spins_expected=0
case "$config" in
  noshim) shim=0 ;;
  off) env_args+=(PIPESPIN_MODE=off) ;;
  fixed) env_args+=(PIPESPIN_MODE=fixed); spins_expected=1 ;;
  fixed-poll) env_args+=(PIPESPIN_MODE=fixed PIPESPIN_PROBE=poll); spins_expected=1 ;;
  fixed-fionread) env_args+=(PIPESPIN_MODE=fixed PIPESPIN_PROBE=fionread); spins_expected=1 ;;
  adaptive) env_args+=(PIPESPIN_MODE=adaptive) ;;
  shim) ;;
  *) echo "run_case.sh: unknown config '$config'" >&2; exit 2 ;;
esac
if [[ $shim == 1 ]]; then
  [[ -f $lib ]] || { echo "run_case.sh: no library at '$lib'" >&2; exit 2; }
  env_args+=("PIPESPIN_LOG=$log" "${extra_env[@]}" "LD_PRELOAD=$lib")
fi

if [[ -n $imports ]]; then
  undefined=$("${NM:-nm}" -D --undefined-only "$1" | awk '{print $2}' | sed 's/@.*//')
  for sym in ${imports//,/ }; do
    grep -qx -- "$sym" <<<"$undefined" || fail "$1 does not import $sym (the case would not test it)"
  done
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
driver_run "$config" "$@"
driver_check_status command

if [[ -n $expect_file ]]; then
  diff -u "$expect_file" "$tmp/out" >&2 || fail "stdout differs from $expect_file"
elif [[ -n $expect_text ]]; then
  diff -u <(printf '%s\n' "$expect_text") "$tmp/out" >&2 || fail "stdout is not '$expect_text'"
fi

shim_lines=$(grep -E '^pipespin[[][^]]+[]]: ' "$tmp/err")
if [[ $shim == 0 ]]; then
  ! grep -qi pipespin "$tmp/err" || fail "stderr mentions pipespin without the shim"
else
  # Exit reports: "pipespin[PROG:PID]: info: exit pid=P read: waits=W spins=S spin_hits=H spin_us=U ..." (and write:, poll:).
  reports=$(grep -E '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ (read|write|poll): ' <<<"$shim_lines")
  if [[ $report == 1 && -z $reports ]]; then
    fail "no exit report on stderr: the shim did not load or did not initialise"
  fi
  if grep -q 'one usable CPU' <<<"$shim_lines"; then
    echo "NOTE: the shim saw one usable CPU and does not spin" >&2
  fi
  if [[ $config == off ]]; then
    spinning=$(grep -vE ' spins=0 ' <<<"$reports")
    [[ -z $spinning ]] || fail "mode off spun: $spinning"
  fi
  if [[ $engaged == 1 && $spins_expected == 1 ]]; then
    read_reports=$(grep ' read: ' <<<"$reports")
    [[ -n $read_reports ]] || fail "no read exit report to prove the shim engaged"
    # A process waits on its empty pipes in read or in poll (the waits are
    # counted where they happen): its read and poll spins together, in the
    # processes that made such calls at all.
    idle=$(grep -E ' (read|poll): ' <<<"$reports" |
      sed -E 's/^.* pid=([0-9]+) [a-z]+: .* spins=([0-9]+) .* calls=([0-9]+)$/\1 \2 \3/' |
      awk '{ s[$1] += $2; c[$1] += $3 } END { for (p in s) if (c[p] > 0 && s[p] == 0) print "pid " p }')
    [[ -z $idle ]] || fail "the shim did not spin in a process that waited on empty pipes: $idle"
  fi
  # "pipespin[PROG:PID]: info: exit pid=P spins by hook: io=S/H poll=S/H stdio=S/H ...":
  # the spins through one family, summed over the processes.
  via_spins() {
    grep -E '^pipespin[[][^]]+[]]: info: exit pid=[0-9]+ spins by hook:' <<<"$shim_lines" |
      grep -oE " $1=[0-9]+" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }'
  }
  if [[ $spins_expected == 1 ]]; then
    for f in "${spun_via[@]}"; do
      (($(via_spins "$f") > 0)) || fail "no spin through the $f hooks (exit reports: none counted)"
    done
  fi
  for f in "${no_spin_via[@]}"; do
    n=$(via_spins "$f")
    ((n == 0)) || fail "$n spin(s) through the $f hooks, where none may spin"
  done
  for re in "${stderr_has[@]}"; do
    grep -qE -- "$re" "$tmp/err" || fail "no stderr line matches '$re'"
  done
  if [[ -n $order_a ]]; then
    first_a=$(grep -n -m1 -E -- "$order_a" "$tmp/err" | cut -d: -f1)
    first_b=$(grep -n -m1 -E -- "$order_b" "$tmp/err" | cut -d: -f1)
    if [[ -z $first_a || -z $first_b ]]; then fail "stderr lacks '$order_a' or '$order_b'"
    elif ((first_a > first_b)); then fail "'$order_b' came before '$order_a' on stderr"; fi
  fi
  warnings=$(grep -E '^pipespin[[][^]]+[]]: (warning|error|critical): ' <<<"$shim_lines")
  for i in "${!warn_var[@]}"; do
    mine=$(grep -F -- "${warn_var[$i]}" <<<"$warnings")
    count=$(grep -c . <<<"$mine")
    if [[ $count -ne 1 ]]; then
      fail "expected one warning naming ${warn_var[$i]}, got $count"
    else
      grep -qF -- "'${warn_value[$i]}'" <<<"$mine" || fail "warning does not show the bad value '${warn_value[$i]}': $mine"
      grep -qE -- "using ${warn_used[$i]}([^[:alnum:]_]|\$)" <<<"$mine" || fail "warning does not name the value used (${warn_used[$i]}): $mine"
    fi
  done
  expected_warnings=${#warn_var[@]}
  got_warnings=$(grep -c . <<<"$warnings")
  [[ $got_warnings -eq $expected_warnings ]] ||
    fail "expected $expected_warnings shim warning/error lines, got $got_warnings"
fi

driver_finish e2e "$config"
