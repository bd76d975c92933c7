#!/usr/bin/env bash
# The demo (scripts/demo.sh) tells what to watch before its runs: when Cold
# Room 1's readings announce its alarm and its way back, that the
# platform's own alarm and recovery join that incident, and how Warehouse
# East's alarm is reminded, escalated, acknowledged and resolved. This runs
# the demo with this build's binaries and holds the runs to that story: each
# announced message is in the run at the time the story names, and in no
# other run; the joined entries page nobody.
# usage: tests/demo/check.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

timeout 300 bash "$src/scripts/demo.sh" "$build" >"$tmp/out" 2>"$tmp/err" ||
  fail "the demo failed (status $?): $(tail -20 "$tmp/err")"

/usr/bin/python3 - "$tmp/out" "$tmp/err" <<'PY'
import re, sys

text = open(sys.argv[1], encoding="utf-8").read()
story = re.search(r"^Watch Cold Room 1:.*?(?=\n### )", text, re.S | re.M)
if not story:
    sys.exit("FAIL: the demo tells no story of Cold Room 1")
story = " ".join(story.group(0).split())

# HH:MM of each run -> the messages' first lines it printed.
runs = {}
for m in re.finditer(r"^### run at \S+ (\d\d:\d\d) UTC\n(.*?)(?=^### |\Z)", text, re.S | re.M):
    runs[m.group(1)] = [l for l in m.group(2).splitlines() if l.startswith("[")]

def expect(what, time, pattern):
    """The run at `time`, and no other, prints a first line matching pattern."""
    where = [t for t, lines in runs.items() if any(re.search(pattern, l) for l in lines)]
    if where != [time]:
        sys.exit(f"FAIL: the story says {what} at {time}; the demo prints it at {where or 'no run'}"
                 f"\n  story: {story}")

clauses = [
    (r"reading of ([0-9.]+) °C is announced at (\d\d:\d\d)",
     "the reading's alarm", r"^\[ALARM[^]]*\] Cold Room 1 .* - reading "),
    (r"way back to ([0-9.]+) °C at (\d\d:\d\d)",
     "the reading's way back", r"^\[RESOLVED[^]]*\] Cold Room 1 .* - reading "),
    (r"Warehouse East: its alarm at (\d\d:\d\d)",
     "Warehouse East's alarm", r"^\[ALARM[^]]*\] Warehouse East .* - ch1 "),
    (r"so at (\d\d:\d\d) the on-call staff get a reminder",
     "the reminder", r"^\[REMINDER 1[^]]*\] Warehouse East .* - ch1 "),
    (r"so at (\d\d:\d\d) the on-call staff get a reminder and the lab manager the escalation",
     "the escalation", r"^\[ESCALATED[^]]*\] Warehouse East .* - ch1 "),
    (r"which everyone told hears at (\d\d:\d\d)",
     "the acknowledgement", r"^\[ACKNOWLEDGED[^]]*\] Warehouse East .* - ch1 "),
    (r"hears at (\d\d:\d\d), with the recovery",
     "the resolution", r"^\[RESOLVED[^]]*\] Warehouse East "),
]
for clause, what, pattern in clauses:
    m = re.search(clause, story)
    if not m:
        sys.exit(f"FAIL: the story does not say when {what} comes: {story}")
    expect(what, m.group(m.lastindex), pattern)
    if m.lastindex == 2:
        # The value the story names is the one the message shows.
        run = re.search(r"^### run at \S+ " + m.group(2) + r" UTC\n(.*?)(?=^### |\Z)", text,
                        re.S | re.M).group(1)
        if f"{m.group(1)}°C" not in run:
            sys.exit(f"FAIL: the story says {m.group(1)} °C for {what}; the run at {m.group(2)} "
                     f"shows:\n{run}")
# The platform's alarm and recovery of Cold Room 1 join its incident: no
# run prints them, and the log says they joined.
if not re.search(r"follow at (\d\d:\d\d) too, joining its incident: nobody is paged twice",
                 story):
    sys.exit(f"FAIL: the story does not say that the platform's entries join: {story}")
for pattern in (r"^\[ALARM[^]]*\] Cold Room 1 .* - ch1 ", r"^\[RECOVERED[^]]*\] Cold Room 1 .* - ch1 "):
    where = [t for t, lines in runs.items() if any(re.search(pattern, l) for l in lines)]
    if where:
        sys.exit(f"FAIL: the platform's entry of Cold Room 1 paged again at {where}")
log = open(sys.argv[2], encoding="utf-8").read()
for key in ("5820D101/1795000520/ch1", "5820D101/1795001120/ch1"):
    if not re.search(re.escape(key) + r" joins incident \d+", log):
        sys.exit(f"FAIL: the log does not say that {key} joined its incident")
print("demo OK: " + story)
PY
