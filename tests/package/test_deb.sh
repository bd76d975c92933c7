#!/usr/bin/env bash
# The Debian package of this build (cpack -G DEB into a temporary
# directory): its control fields (Depends computed from the libraries),
# its files and their modes, full RELRO, the conffile, the maintainer scripts, and
# lintian with no error. Installing it changes the system, so that is
# tests/package/install-deb.sh's job (.ci/run), not this test's.
#   test_deb.sh SOURCE_DIR BUILD_DIR SANITIZED(ON|OFF)
# Exit 77 (skipped) in a sanitizer build: its binaries are not ones to ship.
set -euo pipefail
src=$1 build=$2 sanitized=${3:-OFF}
if [ "$sanitized" = ON ]; then
  echo "skipped: a sanitizer build makes no package (the normal build tests it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps lintian; do
  command -v $tool >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done

out=$(cpack -G DEB -B "$tmp" --config "$build/CPackConfig.cmake" 2>&1) || fail "cpack: $out"
debs=("$tmp"/wsrelay_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack made ${debs[*]}"
deb=${debs[0]}
version=$(sed -n 's/^project(wsrelay VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
case $(basename "$deb") in
wsrelay_"$version"-*_"$(dpkg --print-architecture)".deb) ;;
*) fail "package named $(basename "$deb")" ;;
esac

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = wsrelay ] || fail "Package: $(field Package)"
[[ $(field Version) == "$version"-* ]] || fail "Version: $(field Version)"
depends=$(field Depends)
for lib in libc6 libcurl4 libjson-c5 libyaml-0-2 libesmtp6 libssl3 libpcre2-8-0 libcairo2 adduser; do
  grep -qE "(^|, )$lib( |,|$)" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
# The simulator's HTTP server library is not the relay's: wsrelay-sim is a
# package of its own.
! grep -qE "(^|, )libmicrohttpd" <<<"$depends" || fail "Depends has libmicrohttpd: $depends"

# Files and modes, as dpkg will unpack them (all root:root).
listing=$(dpkg-deb -c "$deb")
has() {
  grep -qE "^$1 root/root +[0-9]+ [0-9-]+ [0-9:]+ \./${2#/}$" <<<"$listing" || fail "no $1 $2 in the package"
}
has -rwxr-xr-x /usr/bin/wsrelay
has -rwxr-xr-x /usr/libexec/wsrelay/wsrelay-net
has -rwxr-xr-x /usr/libexec/wsrelay/wsrelay-chart
has -rw-r--r-- /etc/wsrelay/wsrelay.yaml
has -rw-r--r-- /lib/systemd/system/wsrelay.service
has -rw-r--r-- /lib/systemd/system/wsrelay.timer
has -rw-r--r-- /lib/systemd/system/wsrelay-loop.service
has -rw-r--r-- /usr/share/doc/wsrelay/copyright
has -rw-r--r-- /usr/share/doc/wsrelay/changelog.Debian.gz
has -rw-r--r-- /usr/share/doc/wsrelay/examples/wsrelay.yaml
has -rw-r--r-- /usr/share/wsrelay/templates/email.html
! grep -q ' \./usr/bin/wsrelay-sim$' <<<"$listing" || fail "wsrelay-sim is in the relay's package"
! grep -q ' \./usr/local/' <<<"$listing" || fail "the package has files in /usr/local"
! grep -qv '^[-d]' <<<"$listing" || fail "the package has something else than files and directories"

# Stripped binaries.
dpkg-deb -x "$deb" "$tmp/x"
for bin in usr/bin/wsrelay usr/libexec/wsrelay/wsrelay-net usr/libexec/wsrelay/wsrelay-chart; do
  # Read whole first: with pipefail, grep -q's early exit would make a
  # match look like none.
  sections=$(readelf -S "$tmp/x/$bin")
  grep -q '\.debug_info\|\.symtab' <<<"$sections" && fail "$bin is not stripped"
  # Full RELRO: a GNU_RELRO segment, and every symbol bound at start.
  segments=$(readelf -lW "$tmp/x/$bin")
  grep -q '^ *GNU_RELRO ' <<<"$segments" || fail "$bin has no GNU_RELRO segment"
  dynamic=$(readelf -dW "$tmp/x/$bin")
  grep -qE '\(FLAGS\) +BIND_NOW|\(FLAGS_1\) +Flags: .*\bNOW\b|\(BIND_NOW\)' <<<"$dynamic" ||
    fail "$bin is not linked with BIND_NOW (-z now): $(grep FLAGS <<<"$dynamic")"
done

# The conffile is the example; its header says it is in place already,
# not to copy it where it is.
conf=$tmp/x/etc/wsrelay/wsrelay.yaml
grep -q 'Copy to /etc/wsrelay/wsrelay.yaml' "$conf" && fail "/etc/wsrelay/wsrelay.yaml says to copy it where it is"
grep -q '^# /usr/share/doc/wsrelay/examples/wsrelay.yaml' "$conf" ||
  fail "/etc/wsrelay/wsrelay.yaml does not say where its original is"

# Control: the conffile and the maintainer scripts.
dpkg-deb -e "$deb" "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/wsrelay/wsrelay.yaml ] ||
  fail "conffiles: $(cat "$tmp/control/conffiles")"
for script in postinst prerm postrm; do
  [ "$(stat -c %a "$tmp/control/$script")" = 755 ] || fail "$script is not 0755"
  sh -n "$tmp/control/$script" || fail "$script does not parse"
done
grep -q 'adduser --system' "$tmp/control/postinst" || fail "postinst makes no system user"

# The simulator's package, in a build that has the simulator: the
# simulator and its copyright, nothing of the relay's.
sims=("$tmp"/wsrelay-sim_*.deb)
if [ -f "$build/wsrelay-sim" ]; then
  [ ${#sims[@]} -eq 1 ] && [ -f "${sims[0]}" ] || fail "cpack made no wsrelay-sim package: ${sims[*]}"
  sim=${sims[0]}
  [ "$(dpkg-deb -f "$sim" Package)" = wsrelay-sim ] || fail "Package: $(dpkg-deb -f "$sim" Package)"
  grep -qE "(^|, )libmicrohttpd12( |,|$)" <<<"$(dpkg-deb -f "$sim" Depends)" ||
    fail "wsrelay-sim's Depends lacks libmicrohttpd12: $(dpkg-deb -f "$sim" Depends)"
  files=$(dpkg-deb -c "$sim" | awk '$1 !~ /^d/ { print $NF }' | sort | tr '\n' ' ')
  [ "$files" = "./usr/bin/wsrelay-sim ./usr/share/doc/wsrelay-sim/changelog.Debian.gz ./usr/share/doc/wsrelay-sim/copyright " ] ||
    fail "wsrelay-sim's files: $files"
else
  [ ! -f "${sims[0]}" ] || fail "a wsrelay-sim package without the simulator"
  sim=
fi

# lintian: errors fail; the warnings that remain are known and explained in
# packaging/debian/README.
status=0
lintian --no-cfg --fail-on error "$deb" $sim >"$tmp/lintian" 2>&1 || status=$?
out=$(grep -v '^running with root privileges' "$tmp/lintian" || true)
[ $status -eq 0 ] || fail "lintian (status $status): $out"
! grep -q '^E:' <<<"$out" || fail "lintian: $out"
if [ -n "$out" ]; then echo "lintian:"; echo "$out"; fi
# packaging/debian/README explains each warning left, and no other: its
# "W: " lines are lintian's.
explained=$(grep '^[WI]: ' "$src/packaging/debian/README" | sort || true)
given=$(grep '^[WI]: ' <<<"$out" | sort || true)
[ "$explained" = "$given" ] ||
  fail "packaging/debian/README explains the lintian warnings"$'\n'"$explained"$'\n'"lintian gave"$'\n'"$given"
echo "package OK: $(basename "$deb")${sim:+ and $(basename "$sim")}, Depends: $depends"
