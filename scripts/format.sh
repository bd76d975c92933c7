#!/usr/bin/env bash
# The C sources' layout is .clang-format's (docs/CONVENTIONS.md).
#   scripts/format.sh          rewrite every file that differs
#   scripts/format.sh --check  list the files that differ and fail; changes nothing
# Every .c and .h under src/, tests/ and bench/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
format=${CLANG_FORMAT:-clang-format}
mapfile -d '' files < <(cd "$root" && find src tests bench -name '*.[ch]' -print0 | sort -z)
cd "$root"
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    "$format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "${#files[@]} files formatted as .clang-format says"
else
  "$format" -i "${files[@]}"
fi
