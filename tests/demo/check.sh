#!/usr/bin/env bash
# The demo (scripts/demo.sh) tells what to watch before its runs: when Cold
# Room 1's readings announce its alarm and its way back, and when the
# platform's own alarm and recovery follow. This runs the demo with this
# build's binaries and holds the runs to that story: each announced message
# is in the run at the time the story names, and in no other run.
# usage: tests/demo/check.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

timeout 300 bash "$src/scripts/demo.sh" "$build" >"$tmp/out" 2>"$tmp/err" ||
  fail "the demo failed (status $?): $(tail -20 "$tmp/err")"

/usr/bin/python3 - "$tmp/out" <<'PY'
import re, sys

text = open(sys.argv[1], encoding="utf-8").read()
story = re.search(r"^Watch Cold Room 1:.*?(?=\n\n)", text, re.S | re.M)
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
     "the reading's way back", r"^\[RECOVERED[^]]*\] Cold Room 1 .* - reading "),
    (r"platform's alarm and its recovery follow at (\d\d:\d\d)",
     "the platform's alarm", r"^\[ALARM[^]]*\] Cold Room 1 .* - ch1 "),
    (r"platform's alarm and its recovery follow at (\d\d:\d\d)",
     "the platform's recovery", r"^\[RECOVERED[^]]*\] Cold Room 1 .* - ch1 "),
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
print("demo OK: " + story)
PY
