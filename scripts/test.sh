#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite.
#   scripts/test.sh             the normal build (build/)
#   scripts/test.sh --sanitize  the same suite under ASan+UBSan (build-asan/)
set -euo pipefail
wsrelay_root=$(cd "$(dirname "$0")/.." && pwd)
. "$wsrelay_root/scripts/deps.sh"

dir=$wsrelay_root/build
args=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=$wsrelay_root/build-asan
  args=(-DWSRELAY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
  # Reports go to files: a leak found when a Criterion worker exits does not
  # fail its test, so every report of every process (tests, wsrelay,
  # wsrelay-sim) is collected and fails the run below.
  reports=$dir/sanitizer-reports
  rm -rf "$reports" && mkdir -p "$reports"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$reports/asan
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan
fi

wsrelay_install_deps
wsrelay_build "$dir" "${args[@]}"
cd "$dir"
status=0
ctest --output-on-failure || status=$?
if [ -n "${reports:-}" ] && [ -n "$(ls -A "$reports")" ]; then
  echo "Sanitizer reports:" >&2
  cat "$reports"/* >&2
  status=1
fi
exit $status
