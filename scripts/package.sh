#!/usr/bin/env bash
# Builds the Debian package from a fresh Release build configured for /usr,
# with Debian's hardening flags (dpkg-buildflags), and runs lintian on it.
#   scripts/package.sh [OUTDIR]    writes OUTDIR/wsrelay_VERSION-REV_ARCH.deb
#                                  and the simulator's wsrelay-sim_….deb
#                                  (default: build-package/)
# Install it with `apt install ./build-package/wsrelay_*.deb` (README,
# "Install on a server"; docs/OPERATIONS.md in detail); packaging/Containerfile builds an image from it.
set -euo pipefail
wsrelay_root=$(cd "$(dirname "$0")/.." && pwd)
. "$wsrelay_root/scripts/deps.sh"
out=$(mkdir -p "${1:-$wsrelay_root/build-package}" && cd "${1:-$wsrelay_root/build-package}" && pwd)
dir=$out/build

wsrelay_install_deps
rm -rf "$dir" "$out"/wsrelay_*.deb "$out"/wsrelay-sim_*.deb "$out/_CPack_Packages"
# All of Debian's hardening, bindnow included (CMakeLists.txt links with
# -z now in any case).
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
eval "$(dpkg-buildflags --export=sh)"
export CFLAGS="$CFLAGS $CPPFLAGS"
# The packages' files only (the simulator has its own; the tests are not),
# and `cpack` not rebuilding everything first.
cmake -S "$wsrelay_root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
targets=(wsrelay wsrelay-net wsrelay-chart wsrelay-sim)
# Not grep -q: it would stop reading, and pipefail would take cmake's
# SIGPIPE for "no such target".
if cmake --build "$dir" --target help | grep '\.\.\. wsrelay-man$' >/dev/null; then
  targets+=(wsrelay-man)
fi
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"
cpack -G DEB -B "$out" --config "$dir/CPackConfig.cmake" >/dev/null
deb=$(ls "$out"/wsrelay_*.deb)
sim=$(ls "$out"/wsrelay-sim_*.deb)
echo "$deb"
echo "$sim"
# No error (the warnings left are explained in packaging/debian/README).
status=0
lintian --no-cfg --fail-on error "$deb" "$sim" >"$dir/lintian.txt" 2>&1 || status=$?
grep -v '^running with root privileges' "$dir/lintian.txt" || true
exit $status
