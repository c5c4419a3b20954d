# Sourced by the drivers that run one helper program in one configuration
# and judge it (tests/e2e/run_case.sh, tests/reliability/run.sh). A check
# that fails is counted, not fatal, so that one run reports every check that
# failed; driver_finish turns the count into the exit status.

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# env_args: the start of an `env` command line that drops the caller's
# LD_PRELOAD and PIPESPIN_* settings (they must not change what is checked).
driver_clean_env() {
  env_args=(-u LD_PRELOAD)
  for v in $(compgen -e | grep '^PIPESPIN_'); do env_args+=(-u "$v"); done
}

# driver_run CONFIG COMMAND...: runs COMMAND under "${env_args[@]}", its
# stdout in $tmp/out and stderr in $tmp/err, both shown on stderr; sets
# $status to its exit status.
driver_run() {
  local config=$1
  shift
  echo "config $config: env ${env_args[*]} $*" >&2
  env "${env_args[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
  echo "--- stdout ---" >&2; cat "$tmp/out" >&2
  echo "--- stderr ---" >&2; cat "$tmp/err" >&2
  echo "--------------" >&2
}

# driver_check_status WHAT: WHAT (the command, the helper) exited with 0.
driver_check_status() {
  if [[ $status -ne 0 ]]; then
    if [[ $status -gt 128 ]]; then fail "$1 killed by signal $((status - 128))"
    else fail "$1 exited with status $status"; fi
  fi
}

# driver_finish SUITE CONFIG: exits 1 if a check failed, else 0.
driver_finish() {
  if [[ $failures -ne 0 ]]; then
    echo "$1: $failures check(s) failed in config $2" >&2
    exit 1
  fi
  exit 0
}
