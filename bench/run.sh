#!/usr/bin/env bash
# Builds wsrelay and the simulator as scripts/test.sh does (into build/),
# and the benchmark's helpers wsrelay-rusage and wsrelay-jsonfloor; then
# measures them on 127.0.0.1 and prints the tables that docs/PERFORMANCE.md
# reports.
# Scenarios, configurations, states and logs go to a temporary directory
# (mktemp -d; set TMPDIR to choose its file system), removed at the end
# unless something failed.
#   bench/run.sh                     everything, each measurement 5 times
#   bench/run.sh --repeat 3          fewer repetitions
#   bench/run.sh --only parallel     one benchmark: parallel, size, quiet, outbox or config
#   bench/run.sh --warm-hours 24     the size benchmark after a simulated day
#   bench/run.sh --signals           accounts with signals (readings every run)
set -euo pipefail
wsrelay_root=$(cd "$(dirname "$0")/.." && pwd)
. "$wsrelay_root/scripts/deps.sh"
wsrelay_install_deps
wsrelay_build "$wsrelay_root/build" >/dev/null
cmake --build "$wsrelay_root/build" --target wsrelay-rusage wsrelay-jsonfloor >/dev/null

work=$(mktemp -d)
status=0
python3 "$wsrelay_root/bench/bench.py" --build "$wsrelay_root/build" --work "$work" "$@" ||
  status=$?
if [ $status -eq 0 ]; then
  rm -rf "$work"
else
  echo "bench: the scenarios, configurations, states and logs are kept in $work" >&2
fi
exit $status
