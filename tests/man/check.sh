#!/usr/bin/env bash
# The man pages against the build they document:
#   - `mandoc -T lint -W warning` finds nothing in man/wsrelay.1 and
#     man/wsrelay.yaml.5;
#   - every command of `wsrelay --help` has its entry in wsrelay(1)'s
#     COMMANDS, and every option that help or a command's own help
#     (`wsrelay COMMAND --help`) names appears in the page;
#   - every key of `wsrelay keys` and `wsrelay keys --rules` has its entry
#     in wsrelay.yaml(5), and the page's key lists are what
#     scripts/man-keys.sh makes of this build's (type, default and help
#     word for word).
# usage: tests/man/check.sh PATH/TO/wsrelay
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wsrelay=${1:?usage: tests/man/check.sh PATH/TO/wsrelay}
man1=$root/man/wsrelay.1
man5=$root/man/wsrelay.yaml.5
failed=0
fail() {
  echo "FAIL: $*" >&2
  failed=1
}

if ! command -v mandoc >/dev/null; then
  echo "FAIL: mandoc is not installed (scripts/deps.sh installs it)" >&2
  exit 1
fi

lint=$(mandoc -T lint -W warning "$man1" "$man5" 2>&1)
[ $? -eq 0 ] && [ -z "$lint" ] || fail "mandoc -T lint -W warning:"$'\n'"$lint"

help=$("$wsrelay" --help) || fail "wsrelay --help failed"
commands=$(printf '%s\n' "$help" | sed -n '/^Commands:/,/^Options:/p' | grep -E '^  [a-z]' |
  awk '{ print $1 }')
[ -n "$commands" ] || fail "no command found in wsrelay --help"
# The COMMANDS section of the source: an entry is ".It Ic NAME" or, in an
# .It Xo block, ".Ic NAME" on a line of its own.
section=$(sed -n '/^\.Sh COMMANDS/,/^\.Sh /p' "$man1")
for c in $commands; do
  # Here-strings, not pipes: grep -q stops reading at its first match,
  # and pipefail would take the writer's SIGPIPE for a failure.
  grep -qE "^\.(It )?Ic $c( |\$)" <<<"$section" ||
    fail "wsrelay.1: command '$c' (wsrelay --help) has no entry in COMMANDS"
done
rendered=$(mandoc -T ascii "$man1" | col -b)
# The options of wsrelay --help and of every `wsrelay COMMAND --help`.
helps=$help
for c in $commands; do
  helps+=$'\n'$("$wsrelay" "$c" --help) || fail "wsrelay $c --help failed"
done
options=$(printf '%s\n' "$helps" | grep -oE '(^|[][ (|,])--?[a-z][a-z-]*' | sed 's/^[][ (|,]*//' |
  sort -u)
for o in $options; do
  grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" <<<"$rendered" ||
    fail "wsrelay.1: option '$o' (wsrelay --help) appears nowhere in the page"
done

for flag in "" --rules; do
  keys=$("$wsrelay" keys $flag | grep -v '^ ' | awk '{ print $1 }')
  [ -n "$keys" ] || fail "no key found in wsrelay keys $flag"
  for k in $keys; do
    grep -qF ".It Cm $k Pq " "$man5" ||
      fail "wsrelay.yaml.5: key '$k' (wsrelay keys $flag) has no entry"
  done
done
if ! diff=$("$root/scripts/man-keys.sh" "$wsrelay" | diff -u "$man5" -); then
  fail "wsrelay.yaml.5's key lists differ from this build's (run scripts/man-keys.sh --update $wsrelay):"$'\n'"$diff"
fi

if [ $failed -ne 0 ]; then
  exit 1
fi
echo "man pages: lint clean, $(printf '%s\n' $commands | wc -l) commands, $(printf '%s\n' $options | wc -l) options, every key"
