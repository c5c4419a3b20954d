# Shared by the scripts in tools/bench/scripts (sourced, not run).

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

# The arm that runs at place K of round R (from 0) among N arms: a balanced
# order (a Williams design, as the matrix's arm_order(),
# tools/bench/matrix/verdict.h): over N rounds (2N for an odd N) each arm
# runs at each place, and after each other arm, equally often. A run can
# leave the host in a state the next run meets (after one that spun on
# both CPUs, a shell loop's forks were spread over the two CPUs in 16 of
# 16 runs); an order that only rotates keeps each arm's predecessor.
#   bench_order R K N
bench_order() {
  local r=$1 k=$2 n=$3 period row j first
  period=$((n % 2 == 0 ? n : 2 * n))
  row=$((r % period))
  j=$((row < n ? k : n - 1 - k))
  if ((j % 2 == 1)); then first=$(((j + 1) / 2)); else first=$(((n - j / 2) % n)); fi
  echo $(((first + row % n) % n))
}

# The whole order of ROUNDS rounds of N arms (bench_order), one line a
# round of the arms' indexes in the order they run: for the scripts that
# run their rounds in Python (BENCH_SCHEDULE).
#   bench_schedule ROUNDS N
bench_schedule() {
  local rounds=$1 n=$2 r k line
  for ((r = 0; r < rounds; r++)); do
    line=
    for ((k = 0; k < n; k++)); do line+="$(bench_order "$r" "$k" "$n") "; done
    echo "$line"
  done
}

# ROUNDS rounds of N arms, interleaved in a balanced order (bench_order):
# for each run, "i OUTPUT" where OUTPUT is what `FN i` printed; a run that
# fails stops it (and, under set -e, the script).
#   bench_interleave ROUNDS N FN
bench_interleave() {
  local rounds=$1 n=$2 fn=$3 r k i out
  for ((r = 0; r < rounds; r++)); do
    for ((k = 0; k < n; k++)); do
      i=$(bench_order "$r" "$k" "$n")
      out=$("$fn" "$i") || return 1
      echo "$i $out"
    done
  done
}

# The arms NAME=LIB@MODE (LIB "none": no preload; @MODE optional) into the
# arrays names and envs (each arm's environment, as words for env(1)), with
# EXTRA appended to every arm that preloads a library.
#   bench_arms EXTRA SPEC...
bench_arms() {
  local extra=$1 s name rest lib mode
  shift
  names=() envs=()
  for s in "$@"; do
    name=${s%%=*} rest=${s#*=}
    lib=${rest%%@*} mode=
    [ "$rest" != "$lib" ] && mode=${rest#*@}
    if [ "$lib" = none ]; then
      envs+=("PIPESPIN_CONFIG=")
    else
      [ -f "$lib" ] || { echo "missing $lib" >&2; exit 1; }
      envs+=("LD_PRELOAD=$(realpath "$lib") PIPESPIN_CONFIG= ${mode:+PIPESPIN_MODE=$mode} $extra")
    fi
    names+=("$name")
  done
}
