#!/usr/bin/env bash
# Case exports: a library of ours exports exactly the names it declares, and
# nothing else: no C++ symbols, nothing of the fmt and spdlog copies built
# into it.
#
#   check_exports.sh NM LIB LIST...   the union of every LIST, each one of
#     --hooks HOOKS_DEF           the PIPESPIN_HOOK lines (libc's names)
#     --documented API_MD         the names between "<!-- exports -->" and
#                                 "<!-- /exports -->" (the control API)
#     --version-script MAP        the names under global:
set -u
nm=$1 lib=$2
shift 2

want=""
while [ $# -ge 2 ]; do
  kind=$1 list=$2
  shift 2
  case "$kind" in
    --hooks)
      # Through the preprocessor: a hook may be under #if (vfork: x86_64 only).
      names=$({ cpp -P "$list" 2>/dev/null || cat "$list"; } |
              sed -nE 's/^PIPESPIN_HOOK\([^,]+,[[:space:]]*([A-Za-z0-9_]+)[[:space:]]*,.*/\1/p') ;;
    --documented)
      names=$(sed -n '/^<!-- exports -->$/,/^<!-- \/exports -->$/p' "$list" |
              grep -oE '\bpipespin_[a-z0-9_]+_v[0-9]+\b' | sort -u) ;;
    --version-script)
      names=$(sed -nE 's/^[[:space:]]*global:(.*)/\1/p' "$list" | tr ';' '\n' | tr -d ' \t' | grep .) ;;
    *) echo "check_exports.sh: unknown list kind '$kind'" >&2; exit 2 ;;
  esac
  [[ -n $names ]] || { echo "FAIL: could not read the declared names ($kind) from $list" >&2; exit 1; }
  want+="$names"$'\n'
done
[ $# -eq 0 ] || { echo "check_exports.sh: a list kind without its file" >&2; exit 2; }
want=$(grep . <<<"$want" | sort)
[[ -n $want ]] || { echo "FAIL: no declared names" >&2; exit 1; }
got=$("$nm" -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort)

echo "declared: $(tr '\n' ' ' <<<"$want")" >&2
echo "exported by $lib: $(tr '\n' ' ' <<<"$got")" >&2
status=0
if grep -E '^_Z|fmt|spdlog' <<<"$got" >&2; then
  echo "FAIL: the lines above are C++ or fmt/spdlog symbols exported by $lib" >&2
  status=1
fi
if ! diff -u <(echo "$want") <(echo "$got") >&2; then
  echo "FAIL: exported symbols (+) differ from the declared ones (-)" >&2
  status=1
fi
exit $status
