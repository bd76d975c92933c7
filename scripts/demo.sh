#!/usr/bin/env bash
# Installs what is missing, builds, and shows wsrelay at work: the bundled
# simulator plays a lab's platform account while wsrelay runs every ten
# (simulated) minutes and prints what on-call staff would receive.
#   scripts/demo.sh              installs, builds into build/, runs the demo
#   scripts/demo.sh BUILD_DIR    runs it with the binaries of BUILD_DIR as
#                                they are (tests/demo/check.sh)
set -euo pipefail
wsrelay_root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
  . "$wsrelay_root/scripts/deps.sh"
  wsrelay_install_deps
  wsrelay_build "$wsrelay_root/build" >/dev/null
  bin=$wsrelay_root/build
else
  bin=$(cd "$1" && pwd)
fi

work=$(mktemp -d)
kept=$bin/demo # the alarm mail with its chart, kept after the demo
sim_pid=
smtp_pid=
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  [ -n "$smtp_pid" ] && kill "$smtp_pid" 2>/dev/null && wait "$smtp_pid" 2>/dev/null
  rm -rf "$work"
  return 0
}
trap cleanup EXIT

"$bin/wsrelay-sim" --scenario "$wsrelay_root/tests/sim/scenarios/demo.json" \
  --port 0 --port-file "$work/port" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "the simulator did not start:" >&2; cat "$work/sim.log" >&2; exit 1; }
port=$(cat "$work/port")

# A mail server on 127.0.0.1 that keeps every message it accepts in
# $work/mail (Debian's python3-aiosmtpd, hence /usr/bin/python3), for the email receiver below.
mkdir -p "$work/mail"
/usr/bin/python3 - "$work/mail" "$work/smtp-port" >"$work/smtp.log" 2>&1 <<'PY' &
import os, signal, socket, sys, time
from aiosmtpd.controller import Controller
class Keep:
    async def handle_DATA(self, server, session, envelope):
        n = len(os.listdir(sys.argv[1]))
        with open(os.path.join(sys.argv[1], "%03d.eml" % n), "wb") as f:
            f.write(envelope.original_content)
        return "250 OK"
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
c = Controller(Keep(), hostname="127.0.0.1", port=port)
c.start()
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(port))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
signal.sigwait({signal.SIGTERM, signal.SIGINT})
c.stop()
PY
smtp_pid=$!
for _ in $(seq 100); do [ -s "$work/smtp-port" ] && break; sleep 0.1; done
[ -s "$work/smtp-port" ] || { echo "the mail server did not start:" >&2; cat "$work/smtp.log" >&2; exit 1; }
smtp_port=$(cat "$work/smtp-port")

cat >"$work/wsrelay.yaml" <<YAML
state_file: $work/state.json
catch_up: 1h
accounts:
  - name: demo-lab
    base_url: http://127.0.0.1:$port
    api_key: DEMO-API-KEY-0000000000000000000000000000000
    login_id: demo0001
    login_pass: demo-pass
    # Cold rooms keep 2 to 8 °C: a reading beyond that is announced at once
    # (an early warning), before the platform's alert log shows the alarm.
    limits:
      - {serial: "5820*", channel: 1, lower: 2, upper: 8}
receivers:
  - name: on-call
    file: {path: "-"}
  # The lab manager, told when an alarm is still not acknowledged after
  # 20 minutes (the rule below).
  - name: lab-manager
    file: {path: "-"}
  # The same messages as the email, Slack and Teams receivers render them,
  # kept in files for the end of the demo.
  - name: as-email-subject
    file: {path: $work/email-subject.txt, template: $wsrelay_root/templates/email-subject.txt}
  - name: as-email
    file: {path: $work/email.txt, template: $wsrelay_root/templates/email.txt}
  - name: as-slack
    file: {path: $work/slack.json, template: $wsrelay_root/templates/slack.json}
  - name: as-teams
    file: {path: $work/teams.json, template: $wsrelay_root/templates/teams.json}
  # A real mail, with the chart of an alarm's channel inline.
  - name: mail
    email:
      host: 127.0.0.1
      port: $smtp_port
      starttls: "off"
      from: "wsrelay demo <relay@example.org>"
      to: "On call <oncall@example.org>"
rules: $work/rules.yaml
YAML
chmod 0600 "$work/wsrelay.yaml" # it holds the demo's credentials

# Three rules: alarms are critical, repeated every 20 minutes while nobody
# acknowledges them and escalated to the lab manager after 20; sensor
# errors are critical; everything else goes the same way without a label.
# See RULE FILES in wsrelay.yaml(5) and INCIDENTS in wsrelay(1).
every="[on-call, as-email-subject, as-email, as-slack, as-teams, mail]"
cat >"$work/rules.yaml" <<YAML
- name: cold-chain-alarm
  match: {event: alarm}
  receivers: $every
  severity: critical
  repeat: 20m
  escalate:
    - {after: 20m, receivers: [lab-manager]}
- name: cold-chain-critical
  match: {event: sensor-error}
  receivers: $every
  severity: critical
- name: everything-else
  receivers: $every
YAML

start=1795000000
echo "The simulator plays a lab's account on 127.0.0.1:$port; wsrelay runs every"
echo "10 simulated minutes. Log lines go to stderr, notifications to stdout."
# The story of Cold Room 1, as the runs below tell it (tests/demo/check.sh
# holds the runs to it): Cold Room 1 is a remote unit, so wsrelay looks at
# its alert log in the run that sees a signal (docs/HOW-IT-WORKS.md, Signals
# and early warnings); here the platform logs the alarm a little after the upload, so
# that look finds nothing and the alarm comes with the next run.
echo "Watch Cold Room 1: its reading of 9.4 °C is announced at 11:16 from the"
echo "current readings, before the platform logs it; its way back to 7.6 °C at"
echo "11:26, also from the readings, and the platform's alarm and its recovery"
echo "follow at 11:26 too, joining its incident: nobody is paged twice."
echo
echo "Then watch Warehouse East: its alarm at 11:36 opens an incident that"
echo "nobody acknowledges, so at 11:56 the on-call staff get a reminder and the"
echo "lab manager the escalation; after that run the night shift acknowledges it"
echo "(wsrelay ack), which everyone told hears at 12:06, with the recovery and"
echo "its record."
for step in 0 600 1200 1800 2400 3000 3600; do
  now=$((start + step))
  curl -fsS -X POST -d "{\"now\":$now}" "http://127.0.0.1:$port/_sim/clock" >/dev/null
  echo
  echo "### run at $(date -u -d "@$now" '+%Y-%m-%d %H:%M UTC')"
  "$bin/wsrelay" -c "$work/wsrelay.yaml" run --now "$now" || echo "(exit status $?)"
  if [ "$step" = 3000 ]; then
    echo
    echo "### wsrelay incidents, then the night shift acknowledges Warehouse East's alarm"
    "$bin/wsrelay" -c "$work/wsrelay.yaml" incidents --now "$now"
    id=$("$bin/wsrelay" -c "$work/wsrelay.yaml" incidents --json --now "$now" |
      python3 -c 'import json, sys; print(next(i["id"] for i in json.load(sys.stdin) if i["key"] == "5820D102/ch1"))')
    "$bin/wsrelay" -c "$work/wsrelay.yaml" ack "$id" --by "night shift" \
      --note "door shut, heater on" --now "$((now + 60))"
  fi
  if [ "$step" = 0 ]; then
    echo
    echo "### the same message as an email (text part; the HTML part goes beside it)"
    echo "Subject: $(cat "$work/email-subject.txt")"
    echo
    cat "$work/email.txt"
    echo "### ... as a Slack message (Block Kit payload)"
    python3 -m json.tool --no-ensure-ascii "$work/slack.json"
    echo "### ... as a Microsoft Teams message (Adaptive Card)"
    python3 -m json.tool --no-ensure-ascii "$work/teams.json"
  fi
done
# The first mail that carries a chart: kept, with the chart alone beside it.
rm -rf "$kept" && mkdir -p "$kept"
python3 - "$work/mail" "$kept" <<'PY'
import email, os, sys
from email import policy
for name in sorted(os.listdir(sys.argv[1])):
    raw = open(os.path.join(sys.argv[1], name), "rb").read()
    msg = email.message_from_bytes(raw, policy=policy.default)
    png = next((p for p in msg.walk() if p.get_content_type() == "image/png"), None)
    if png is None:
        continue
    open(os.path.join(sys.argv[2], "alarm-mail.eml"), "wb").write(raw)
    open(os.path.join(sys.argv[2], "alarm-chart.png"), "wb").write(png.get_content())
    print("\n### an alarm mail with its chart: %s" % os.path.join(sys.argv[2], "alarm-mail.eml"))
    print("Subject: %s" % msg["subject"])
    print("(open it in a mail program; the chart alone is %s)" %
          os.path.join(sys.argv[2], "alarm-chart.png"))
    break
else:
    print("\n(no mail carried a chart)")
PY
echo
echo "### wsrelay incidents --all: what is still open, and what ended"
"$bin/wsrelay" -c "$work/wsrelay.yaml" incidents --all --now "$now"
echo
echo "### wsrelay status: is everything covered?"
"$bin/wsrelay" -c "$work/wsrelay.yaml" status --now "$now" || echo "(exit status $?)"
echo
echo "Done: every alert above was sent once; the state is in $work/state.json (removed now)."
