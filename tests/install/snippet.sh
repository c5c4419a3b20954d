#!/usr/bin/env bash
# snippet.sh README NAME: prints the fenced block that follows the line
# "<!-- snippet: NAME -->" in README, without its fences. Exits 1 when there
# is no such block, so a renamed or deleted snippet fails its test.
set -euo pipefail
awk -v name="$2" '
  $0 == "<!-- snippet: " name " -->" { want = 1; next }
  want == 1 && /^```/ { want = 2; next }
  want == 2 && /^```/ { found = 1; exit }
  want == 2 { print }
  END { exit found ? 0 : 1 }
' "$1"
