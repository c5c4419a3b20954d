# Sourced by the shell case drivers (tests/cli/cli_test.sh,
# tests/install/install_test.sh, tests/e2e/config_case.sh) once they have
# set case_name: what every case needs before it checks anything.
# Exit statuses follow CTest's: 0 pass, 77 skipped (reason on stdout).

# case_setup PREFIX: a clean environment (the caller's preload and
# PIPESPIN_* settings must not change what is checked) and a scratch
# directory $work, named PREFIX.CASE.XXXXXX, removed at exit.
case_setup() {
  unset LD_PRELOAD PIPESPIN_LIBRARY
  for v in $(compgen -e | grep '^PIPESPIN_' || true); do unset "$v"; done
  work=$(mktemp -d "$1.$case_name.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

fail() {
  echo "FAIL ($case_name): $*" >&2
  exit 1
}

skip() {
  echo "SKIP ($case_name): $*"
  exit 77
}

# expect_in FILE TEXT / expect_not_in FILE TEXT: a fixed string is (not) in
# FILE; on failure FILE is shown.
expect_in() {
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "'$2' not found in $(basename "$1")"; }
}
expect_not_in() {
  ! grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "'$2' unexpectedly in $(basename "$1")"; }
}
