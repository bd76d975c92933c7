#!/usr/bin/env bash
# Installs the Debian package on this machine with apt-get, checks what the
# postinst made, runs `wsrelay check` as the user wsrelay, and purges it
# (and the same for the simulator's package wsrelay-sim, when it is beside).
# It changes the system (a user, /etc/wsrelay, /var/lib/wsrelay), so only
# CI runs it (.ci/run, as root), never ctest.
#   tests/package/install-deb.sh PATH/wsrelay_VERSION-REV_ARCH.deb
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
[ $# -eq 1 ] && [ -f "$1" ] || fail "usage: $0 PATH/wsrelay_*.deb"
[ "$(id -u)" -eq 0 ] || fail "run as root: it installs and purges the package"
if dpkg-query -W -f='${Status}' wsrelay 2>/dev/null | grep -q 'ok installed'; then
  fail "wsrelay is already installed here; this check would purge it"
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
deb_dir=$(cd "$(dirname "$1")" && pwd)
deb=$(basename "$1")
tmp=$(mktemp -d)
installed=0
cleanup() {
  rm -rf "$tmp"
  if [ $installed -eq 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq wsrelay wsrelay-sim >/dev/null 2>&1 ||
      DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq wsrelay >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# mode owner group path
expect() {
  local got
  got=$(stat -c '%a %U %G' "$4" 2>/dev/null) || fail "$4 is missing"
  [ "$got" = "$1 $2 $3" ] || fail "$4 is $got, not $1 $2 $3"
}

(cd "$deb_dir" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$deb" >/dev/null) ||
  fail "apt-get install ./$deb"
installed=1

IFS=: read -r _ _ uid gid _ home shell < <(getent passwd wsrelay) || fail "no user wsrelay"
[ "$uid" -lt 1000 ] || fail "wsrelay is not a system user (uid $uid)"
[ "$(getent group wsrelay | cut -d: -f3)" = "$gid" ] || fail "wsrelay's group is not wsrelay"
[ "$home" = /var/lib/wsrelay ] || fail "wsrelay's home is $home"
[ "$shell" = /usr/sbin/nologin ] || fail "wsrelay's shell is $shell"
expect 750 root wsrelay /etc/wsrelay
expect 640 root wsrelay /etc/wsrelay/wsrelay.yaml
expect 700 wsrelay wsrelay /var/lib/wsrelay
expect 750 wsrelay wsrelay /var/log/wsrelay
dpkg-query -W -f='${Conffiles}' wsrelay | grep -q '^ /etc/wsrelay/wsrelay.yaml ' ||
  fail "/etc/wsrelay/wsrelay.yaml is not a conffile"
cmp -s /etc/wsrelay/wsrelay.yaml /usr/share/doc/wsrelay/examples/wsrelay.yaml ||
  fail "the conffile is not the example"
runuser -u wsrelay -- test -r /etc/wsrelay/wsrelay.yaml || fail "wsrelay cannot read its config"
runuser -u wsrelay -- test -w /var/lib/wsrelay || fail "wsrelay cannot write its state directory"
runuser -u nobody -- test -r /etc/wsrelay/wsrelay.yaml && fail "others can read the config"

# The example config with its secrets filled in, in a copy as the
# administrator would make it (secret files 0600, the user's own).
etc=$tmp/etc
install -d -m 0750 -o root -g wsrelay "$tmp" "$etc"
install -m 0640 -o root -g wsrelay /etc/wsrelay/wsrelay.yaml "$etc/wsrelay.yaml"
for f in tokyo.key tokyo.pass smtp.pass; do
  printf 'not-a-real-%s\n' "$f" | install -m 0600 -o wsrelay -g wsrelay /dev/stdin "$etc/$f"
done
printf 'https://hooks.example.org/not-real\n' |
  install -m 0600 -o wsrelay -g wsrelay /dev/stdin "$etc/ops-hook.url"
out=$(runuser -u wsrelay -- env OSAKA_API_KEY=k OSAKA_LOGIN_PASS=p OPS_HOOK_TOKEN=t \
  wsrelay -c "$etc/wsrelay.yaml" check 2>&1) || fail "wsrelay check as wsrelay: $out"
grep -q ': OK: 2 accounts, 3 receivers' <<<"$out" || fail "wsrelay check said: $out"
[ "$(command -v wsrelay)" = /usr/bin/wsrelay ] || fail "wsrelay is $(command -v wsrelay)"
wsrelay --version | grep -q '^wsrelay [0-9]' || fail "wsrelay --version (via wsrelay-net)"

# The helpers and the man pages are installed (read whole first: grep -q
# on a pipe would stop reading, and pipefail would take the writer's
# SIGPIPE for a failure); man finds the pages where it is installed.
files=$(dpkg -L wsrelay)
for f in /usr/libexec/wsrelay/wsrelay-net /usr/libexec/wsrelay/wsrelay-chart \
  /usr/share/man/man1/wsrelay.1.gz /usr/share/man/man5/wsrelay.yaml.5.gz; do
  grep -qx "$f" <<<"$files" || fail "$f is not in the package"
  [ -f "$f" ] || fail "$f was not installed"
done
man=--man=no
if command -v man >/dev/null; then
  man -w wsrelay >/dev/null || fail "man -w wsrelay"
  man -w 5 wsrelay.yaml >/dev/null || fail "man -w 5 wsrelay.yaml"
  man=--man=yes
fi
# The units, now with the real /usr/bin/wsrelay.
out=$(systemd-analyze verify "$man" /lib/systemd/system/wsrelay.service \
  /lib/systemd/system/wsrelay.timer /lib/systemd/system/wsrelay-loop.service 2>&1) ||
  fail "systemd-analyze verify: $out"

# The simulator is a package of its own (wsrelay-sim, beside this one when
# built): not installed with the relay; installed alone, it runs.
[ ! -e /usr/bin/wsrelay-sim ] || fail "installing wsrelay installed /usr/bin/wsrelay-sim"
sims=("$deb_dir"/wsrelay-sim_*.deb)
if [ -f "${sims[0]}" ]; then
  (cd "$deb_dir" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$(basename "${sims[0]}")" >/dev/null) ||
    fail "apt-get install ./$(basename "${sims[0]}")"
  out=$(wsrelay-sim --help 2>&1) || fail "wsrelay-sim --help: $out"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq wsrelay-sim >/dev/null || fail "apt-get purge wsrelay-sim"
  [ ! -e /usr/bin/wsrelay-sim ] || fail "/usr/bin/wsrelay-sim is still there after purge"
  dpkg-query -W -f='${Status}' wsrelay 2>/dev/null | grep -q 'ok installed' ||
    fail "purging wsrelay-sim removed wsrelay"
fi

# Purge: the state, the config and the overrides go; the user stays.
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq wsrelay >/dev/null || fail "apt-get purge"
installed=0
for gone in /usr/bin/wsrelay /usr/libexec/wsrelay /etc/wsrelay /var/lib/wsrelay /var/log/wsrelay; do
  [ ! -e "$gone" ] || fail "$gone is still there after purge"
done
! dpkg-statoverride --list | grep -q /etc/wsrelay || fail "statoverrides left after purge"
echo "install-deb OK: $deb installed, checked and purged"
