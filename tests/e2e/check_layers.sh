#!/usr/bin/env bash
# Case layers: the parts of src/ depend on each other in one direction only:
# interpose -> core -> platform.
#  1. Includes: nothing in src/core or src/platform includes a header of
#     src/interpose, and nothing in src/platform includes one of src/core.
#  2. The link: the platform's object code references no symbol that the
#     core defines (nor any of namespace pipespin outside pipespin::sys),
#     so platform code calls nothing of the core, whatever it declares.
#
#   check_layers.sh SRC_DIR NM CORE_LIB PLATFORM_OBJECT...
# CORE_LIB is the core's static library (it holds the platform's objects
# too); PLATFORM_OBJECT arguments may also come as one ';'-separated list.
set -u
src=$1 nm=$2 core_lib=$3
shift 3
objects=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<<"$arg"
  objects+=("${parts[@]}")
done
[[ ${#objects[@]} -gt 0 ]] || { echo "check_layers.sh: no platform objects given" >&2; exit 2; }
status=0

# An include of a header of part $2 (written "part/x.h", maybe with "src/"
# or "../" before it) anywhere in directory $1.
includes_of() {
  grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\.\./)*(src/)?$2/" "$1" \
    --include='*.h' --include='*.hpp' --include='*.c' --include='*.cpp' --include='*.def' \
    --include='*.inc'
}
for pair in core:interpose platform:interpose platform:core; do
  from=${pair%%:*} to=${pair##*:}
  [[ -d $src/$from ]] || { echo "FAIL: no directory $src/$from" >&2; status=1; continue; }
  if bad=$(includes_of "$src/$from" "$to"); then
    echo "FAIL: src/$from includes headers of src/$to:" >&2
    echo "$bad" >&2
    status=1
  else
    echo "src/$from includes nothing of src/$to" >&2
  fi
done

# Symbols: undefined in the platform's objects, defined in the core's.
undefined=$("$nm" --undefined-only "${objects[@]}" 2>/dev/null | awk '$1 == "U" {print $2}' | sort -u)
platform_defined=$("$nm" --defined-only "${objects[@]}" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u)
all_defined=$("$nm" --defined-only "$core_lib" 2>/dev/null | awk 'NF >= 3 && $2 != "U" {print $3}' | sort -u)
[[ -n $all_defined ]] || { echo "FAIL: $nm found no symbols in $core_lib" >&2; exit 1; }
core_defined=$(comm -23 <(echo "$all_defined") <(echo "$platform_defined"))
used=$(comm -12 <(echo "$undefined") <(echo "$core_defined"))
# And by name: anything of pipespin that is not pipespin::sys (a core
# function that happens to be inline, or not in this library) and that the
# platform's objects do not define themselves (its assembly's extern "C"
# names, pipespin_gated_syscall).
foreign=$(comm -23 <(grep . <<<"$undefined") <(echo "$platform_defined") | c++filt |
  grep -E '^pipespin::|^pipespin_' | grep -vE '^pipespin::sys::')
if [[ -n $used || -n $foreign ]]; then
  echo "FAIL: the platform's objects reference symbols of the core:" >&2
  { [[ -n $used ]] && c++filt <<<"$used"; [[ -n $foreign ]] && echo "$foreign"; } | sort -u >&2
  status=1
else
  echo "the platform's objects ($(basename -a "${objects[@]}" | tr '\n' ' '))reference nothing of the core" >&2
fi
exit $status
