#!/usr/bin/env bash
# The tools' layers, as check_layers.sh checks src/'s: the installed
# command line (tools/cli) is built on nothing of the lab (tools/bench) or
# of the generator of its manual pages (tools/gendoc); they are built on it.
#  1. Includes: nothing in tools/cli includes a header of tools/bench or
#     tools/gendoc, and the lab and the generator include nothing of each
#     other.
#  2. The link: the installed executable defines and references no symbol of
#     the lab's namespace (pipespin::bench) or the generator's.
#
#   check_tool_layers.sh TOOLS_DIR NM PIPESPIN_EXECUTABLE
set -u
tools=$1 nm=$2 exe=$3
status=0

# An include of a header of part $2 ("bench/x.h", maybe with "tools/" or
# "../" before it) anywhere in directory $1.
includes_of() {
  grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\.\./)*(tools/)?$2/" "$1" \
    --include='*.h' --include='*.hpp' --include='*.c' --include='*.cpp' --include='*.def' \
    --include='*.inc'
}
for pair in cli:bench cli:gendoc bench:gendoc gendoc:bench; do
  from=${pair%%:*} to=${pair##*:}
  [[ -d $tools/$from ]] || { echo "FAIL: no directory $tools/$from" >&2; status=1; continue; }
  if bad=$(includes_of "$tools/$from" "$to"); then
    echo "FAIL: tools/$from includes headers of tools/$to:" >&2
    echo "$bad" >&2
    status=1
  else
    echo "tools/$from includes nothing of tools/$to" >&2
  fi
done

symbols=$("$nm" -C "$exe" 2>/dev/null) || { echo "FAIL: $nm cannot read $exe" >&2; exit 1; }
[[ -n $symbols ]] || { echo "FAIL: $nm found no symbols in $exe" >&2; exit 1; }
if bad=$(grep -E 'pipespin::(bench|gendoc)::' <<<"$symbols"); then
  echo "FAIL: $(basename "$exe") holds code of the lab or the generator:" >&2
  echo "$bad" | head -20 >&2
  status=1
else
  echo "$(basename "$exe") holds nothing of pipespin::bench or pipespin::gendoc" >&2
fi
exit $status
