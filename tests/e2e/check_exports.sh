#!/usr/bin/env bash
# Case exports: a library of ours exports exactly the names it declares, and
# nothing else: no C++ symbols, nothing of the fmt and spdlog copies built
# into it.
#
#   check_exports.sh NM LIB --hooks HOOKS_DEF        the PIPESPIN_HOOK lines
#   check_exports.sh NM LIB --version-script MAP     the names under global:
set -u
nm=$1 lib=$2 kind=$3 list=$4

case "$kind" in
  --hooks)
    want=$(sed -nE 's/^PIPESPIN_HOOK\([^,]+,[[:space:]]*([A-Za-z0-9_]+)[[:space:]]*,.*/\1/p' "$list") ;;
  --version-script)
    want=$(sed -nE 's/^[[:space:]]*global:(.*)/\1/p' "$list" | tr ';' '\n' | tr -d ' \t' | grep .) ;;
  *) echo "check_exports.sh: unknown list kind '$kind'" >&2; exit 2 ;;
esac
want=$(sort <<<"$want")
[[ -n $want ]] || { echo "FAIL: could not read the declared names from $list" >&2; exit 1; }
got=$("$nm" -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort)

echo "declared in $list: $(tr '\n' ' ' <<<"$want")" >&2
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
