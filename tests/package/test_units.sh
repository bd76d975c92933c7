#!/usr/bin/env bash
# The systemd units of packaging/systemd/: `systemd-analyze verify` is clean
# (in a temporary root holding the host's units, these and /usr/bin/wsrelay,
# so that ExecStart= is checked too), `systemd-analyze security` rates each
# service 2.0 or lower, the hardening and user are as the package expects,
# the timer fires every minute to the second and catches up.
#   test_units.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
units=$src/packaging/systemd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (Debian's systemd)"
[ -d /lib/systemd/system ] || fail "/lib/systemd/system is missing"

root=$tmp/root
mkdir -p "$root/lib/systemd" "$root/usr/bin"
cp -a /lib/systemd/system "$root/lib/systemd/"
cp "$units"/wsrelay.service "$units"/wsrelay.timer "$units"/wsrelay-loop.service \
  "$root/lib/systemd/system/"
names=(wsrelay.service wsrelay.timer wsrelay-loop.service)
paths=("${names[@]/#/$root/lib/systemd/system/}")

# Without the binary, verify must complain: it really checks ExecStart=.
if systemd-analyze verify --man=no --root="$root" "${paths[@]}" >/dev/null 2>&1; then
  fail "verify accepted the units without /usr/bin/wsrelay: the check checks nothing"
fi
cp "$build/wsrelay" "$root/usr/bin/wsrelay"
# Documentation=man:wsrelay(1) is checked once the man page is built.
man=--man=no
if [ -f "$build/man/wsrelay.1.gz" ]; then
  mkdir -p "$tmp/man/man1" && cp "$build/man/wsrelay.1.gz" "$tmp/man/man1/"
  export MANPATH=$tmp/man
  man=--man=yes
fi
out=$(systemd-analyze verify "$man" --root="$root" "${paths[@]}" 2>&1) ||
  fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify said: $out"

for unit in wsrelay.service wsrelay-loop.service; do
  out=$(systemd-analyze security --offline=true --root="$root" --threshold=20 \
    "$root/lib/systemd/system/$unit" 2>&1) || fail "$unit: exposure above 2.0: $(tail -1 <<<"$out")"
  score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' <<<"$out")
  [ -n "$score" ] || fail "$unit: no exposure level in: $out"
  awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "$unit: exposure $score > 2.0"
  echo "$unit: exposure $score"
  for line in User=wsrelay Group=wsrelay StateDirectory=wsrelay ProtectSystem=strict \
    ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes CapabilityBoundingSet= \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' SystemCallFilter=@system-service; do
    grep -qxF "$line" "$units/$unit" || fail "$unit: no '$line'"
  done
  grep -q '^ExecStart=/usr/bin/wsrelay -c /etc/wsrelay/wsrelay.yaml run' "$units/$unit" ||
    fail "$unit: ExecStart is not the packaged wsrelay with /etc/wsrelay/wsrelay.yaml"
  grep -q '^#LoadCredential=' "$units/$unit" || fail "$unit: no LoadCredential= example"
  grep -qx 'After=network-online.target time-sync.target' "$units/$unit" ||
    fail "$unit: not ordered after network-online.target and time-sync.target"
done
grep -qx 'Type=oneshot' "$units/wsrelay.service" || fail "wsrelay.service is not oneshot"
grep -qx 'ExecStart=/usr/bin/wsrelay -c /etc/wsrelay/wsrelay.yaml run --loop' \
  "$units/wsrelay-loop.service" || fail "wsrelay-loop.service does not run --loop"

# The timer: when it fires, as systemd reads it.
timer=$units/wsrelay.timer
for line in OnCalendar=minutely AccuracySec=1s Persistent=true WantedBy=timers.target; do
  grep -qxF "$line" "$timer" || fail "wsrelay.timer: no '$line'"
done
next=$(TZ=UTC systemd-analyze calendar --iterations=2 minutely |
  sed -n 's/^ *\(Next elapse\|Iter\. #2\): *//p')
[ "$(wc -l <<<"$next")" -eq 2 ] || fail "systemd-analyze calendar minutely: $next"
gap=$(($(date -d "$(sed -n 2p <<<"$next")" +%s) - $(date -d "$(sed -n 1p <<<"$next")" +%s)))
[ "$gap" -eq 60 ] || fail "minutely fires every $gap s, not 60"
echo "units OK"
