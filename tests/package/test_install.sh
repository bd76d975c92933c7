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
# README's images are where its links point.
grep -o 'docs/images/[^)]*' "$src/README.md" | while read -r img; do
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
