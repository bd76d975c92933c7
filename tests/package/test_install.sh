#!/usr/bin/env bash
# `cmake --install` into a DESTDIR, with the prefix /usr as the package uses
# and the system component: every file where cmake/Install.cmake says, with
# its mode, and the installed front runs the installed wsrelay-net (found
# relative to itself, since the build's own prefix holds none).
#   test_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
d=$tmp/root

DESTDIR=$d cmake --install "$build" --prefix /usr >/dev/null
DESTDIR=$d cmake --install "$build" --prefix /usr --component system >/dev/null

# mode path: what must be there. Directories and regular files alike.
expect() {
  local mode=$1 path=$2 got
  got=$(stat -c %a "$d$path" 2>/dev/null) || fail "$path is missing"
  [ "$got" = "$mode" ] || fail "$path has mode $got, not $mode"
}
expect 755 /usr/bin/wsrelay
[ ! -f "$build/wsrelay-sim" ] || expect 755 /usr/bin/wsrelay-sim
expect 755 /usr/libexec/wsrelay/wsrelay-net
expect 755 /usr/libexec/wsrelay/wsrelay-chart
for t in "$src"/templates/*; do
  expect 644 "/usr/share/wsrelay/templates/$(basename "$t")"
done
expect 644 /usr/share/doc/wsrelay/README.md
for doc in "$src"/docs/*.md; do
  expect 644 "/usr/share/doc/wsrelay/docs/$(basename "$doc")"
done
# The images of README.md and docs/*.md are where their links point
# (docs/HOW-IT-WORKS.md shows the chart of an alarm mail).
imgs=$(cat "$src/README.md" "$src"/docs/*.md | grep -oE '(docs/)?images/[^)]*\.png' | sort -u |
  sed 's,^images/,docs/images/,')
[ -n "$imgs" ] || fail "no image linked from README.md or docs/*.md"
for img in $imgs; do
  expect 644 "/usr/share/doc/wsrelay/$img"
done
ex=/usr/share/doc/wsrelay/examples
expect 644 $ex/wsrelay.yaml
for r in "$src"/rules/*; do
  expect 644 "$ex/rules.d/$(basename "$r")"
done
for u in wsrelay.service wsrelay.timer wsrelay-loop.service; do
  expect 644 "$ex/systemd/$u"
  expect 644 "/lib/systemd/system/$u"
  cmp -s "$src/packaging/systemd/$u" "$d/lib/systemd/system/$u" || fail "$u differs from the source"
done
expect 644 $ex/cron/wsrelay
# The package's conffile, before its postinst makes it root:wsrelay 0640.
expect 644 /etc/wsrelay/wsrelay.yaml
expect 644 /usr/share/doc/wsrelay/copyright
expect 644 /usr/share/doc/wsrelay/changelog.Debian.gz
zcat "$d/usr/share/doc/wsrelay/changelog.Debian.gz" | head -1 |
  grep -q "^wsrelay ($(sed -n 's/^project(wsrelay VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")-" ||
  fail "changelog.Debian.gz is not of the project's version"
for page in wsrelay.1 wsrelay.yaml.5; do
  if [ -f "$src/man/$page" ]; then
    expect 644 "/usr/share/man/man${page##*.}/$page.gz"
  fi
done

# Nothing the plain install has no business with.
unexpected=$(cd "$d" && find . -type f | grep -v -e '^\./usr/bin/' -e '^\./usr/libexec/wsrelay/' \
  -e '^\./usr/share/wsrelay/' -e '^\./usr/share/doc/wsrelay/' -e '^\./usr/share/man/' \
  -e '^\./etc/wsrelay/wsrelay\.yaml$' -e '^\./lib/systemd/system/wsrelay' || true)
[ -z "$unexpected" ] || fail "unexpected files: $unexpected"

# The cron file runs wsrelay as its user once a minute.
grep -qx '\* \* \* \* \* wsrelay wsrelay -c /etc/wsrelay/wsrelay.yaml run.*' \
  "$src/packaging/cron/wsrelay" || fail "the cron file does not run wsrelay as wsrelay"
# Its command, run as cron runs it (the file's SHELL), with a wsrelay that
# writes a line of each level and fails, and a logger that writes down what
# it is given: each line reaches syslog with its own priority and without a
# second "wsrelay: ", and the failure is logged with its exit status, which
# the job keeps.
shell=$(sed -n 's/^SHELL=//p' "$src/packaging/cron/wsrelay")
job=$(sed -n 's/^\* \* \* \* \* wsrelay //p' "$src/packaging/cron/wsrelay")
mkdir -p "$tmp/stub"
cat >"$tmp/stub/wsrelay" <<'SH'
#!/bin/sh
printf 'wsrelay: debug: one\nwsrelay: info: two\nwsrelay: warning: three\n' >&2
printf 'wsrelay: error: four\nwsrelay: /etc/x: plain\n' >&2
echo "to standard output"
exit 3
SH
cat >"$tmp/stub/logger" <<'SH'
#!/bin/sh
{
  echo "args: $*"
  case " $* " in *" --prio-prefix "*) sed 's/^/line: /' ;; esac
} >>"$LOGGED"
SH
chmod +x "$tmp/stub/wsrelay" "$tmp/stub/logger"
status=0
out=$(env -i PATH="$tmp/stub:/usr/bin:/bin" LOGGED="$tmp/logged" "$shell" -c "$job") || status=$?
[ $status -eq 3 ] || fail "the cron job ended with status $status, not wsrelay's 3"
[ "$out" = "to standard output" ] || fail "the cron job's standard output: $out"
want="args: -t wsrelay --prio-prefix -p daemon.info
line: <31>one
line: <30>two
line: <28>three
line: <27>four
line: <27>/etc/x: plain"
for _ in $(seq 100); do
  [ "$(grep -c . "$tmp/logged" 2>/dev/null)" -ge 7 ] && break
  sleep 0.1 # the hang guard of the logger behind the pipe, which ends after the job
done
logged=$(cat "$tmp/logged" 2>/dev/null || true)
grep -qxF -- "args: -t wsrelay -p daemon.err run ended with exit status 3" <<<"$logged" ||
  fail "the cron job did not log its exit status: $logged"
[ "$(grep -v 'exit status' <<<"$logged")" = "$want" ] || fail "the cron job logged: $logged"

# The front, away from the build directory, finds its own wsrelay-net.
out=$("$d/usr/bin/wsrelay" --version 2>&1) || fail "installed wsrelay --version: $out"
grep -q '^wsrelay [0-9]' <<<"$out" || fail "installed wsrelay --version said: $out"
mv "$d/usr/libexec/wsrelay/wsrelay-net" "$tmp/"
if out=$("$d/usr/bin/wsrelay" --version 2>&1); then
  [ -x /usr/local/libexec/wsrelay/wsrelay-net ] || [ -x /usr/libexec/wsrelay/wsrelay-net ] ||
    fail "wsrelay --version ran without any wsrelay-net: $out"
else
  grep -q 'cannot run .*wsrelay-net' <<<"$out" || fail "without wsrelay-net: $out"
fi
echo "install OK"
