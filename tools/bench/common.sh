# Shared by the scripts in tools/bench (sourced, not run).

# The arms set their own preload and settings: none may inherit the
# caller's (an LD_PRELOAD of the shim, a PIPESPIN_MODE or a config path).
bench_clean_env() {
  unset LD_PRELOAD
  local v
  for v in $(env | sed -n 's/^\(PIPESPIN_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
}

# A scratch directory in $work, removed when the script exits.
bench_scratch() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# The full path of what a build made (BUILD_DIR/REL), or the script stops
# saying so: lib=$(bench_built "$build" lib/libpipespin.so).
bench_built() {
  local f
  f=$(realpath "$1/$2" 2>/dev/null) && [ -e "$f" ] || { echo "missing $1/$2: build it first" >&2; exit 1; }
  echo "$f"
}
