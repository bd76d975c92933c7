#!/usr/bin/env bash
# The key lists of man/wsrelay.yaml.5 come from the loader's own table:
# the lines between ".\" BEGIN KEYS" and ".\" END KEYS" are the output of
# `wsrelay keys`, those between ".\" BEGIN RULE KEYS" and ".\" END RULE
# KEYS" that of `wsrelay keys --rules`, each made an mdoc list here.
#   scripts/man-keys.sh build/wsrelay           print the page as this build would have it
#   scripts/man-keys.sh --update build/wsrelay  rewrite man/wsrelay.yaml.5 so
# tests/man/check.sh compares the page with the first form.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
page=$root/man/wsrelay.yaml.5
update=false
if [ "${1:-}" = "--update" ]; then
  update=true
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: scripts/man-keys.sh [--update] PATH/TO/wsrelay" >&2
  exit 2
fi
wsrelay=$1

# `wsrelay keys` output on stdin, an mdoc tag list on stdout: each key as
# ".It Cm KEY Pq TYPE", its help as text lines.
to_mdoc() {
  awk '
function text(s) {
    gsub(/\\/, "\\e", s)
    while (match(s, /`[^`]*`/)) # `word` as quoted text
        s = substr(s, 1, RSTART - 1) "\\(lq" substr(s, RSTART + 1, RLENGTH - 2) "\\(rq" \
            substr(s, RSTART + RLENGTH)
    if (s ~ /^[.\047]/)
        s = "\\&" s
    return s
}
BEGIN { print ".Bl -tag -width Ds" }
/^    / { sub(/^    /, ""); print text($0); next }
{
    key = $0; sub(/ .*/, "", key)
    what = substr($0, length(key) + 2)
    sub(/^\(/, "", what); sub(/\)$/, "", what)
    gsub(/\\/, "\\e", what); gsub(/"/, "\\(dq", what)
    print ".It Cm " key " Pq \"" what "\""
}
END { print ".El" }
'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$wsrelay" keys | to_mdoc >"$tmp/keys"
"$wsrelay" keys --rules | to_mdoc >"$tmp/rules"
# The page with each block replaced; markers that are missing or out of
# order fail.
awk -v keys="$tmp/keys" -v rules="$tmp/rules" '
function emit(file,   line) { while ((getline line < file) > 0) print line; close(file) }
$0 == ".\\\" BEGIN KEYS" { print; emit(keys); skip = 1; seen++; next }
$0 == ".\\\" BEGIN RULE KEYS" { print; emit(rules); skip = 1; seen++; next }
$0 == ".\\\" END KEYS" || $0 == ".\\\" END RULE KEYS" { skip = 0; ended++ }
!skip { print }
END { if (seen != 2 || ended != 2) { print "man-keys: markers missing in the page" > "/dev/stderr"; exit 1 } }
' "$page" >"$tmp/page"
if $update; then
  cat "$tmp/page" >"$page"
else
  cat "$tmp/page"
fi
