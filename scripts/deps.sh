#!/usr/bin/env bash
# Installs the Debian 12 packages that building, testing and the demo need,
# if any is missing. As root it runs apt-get; otherwise it prints the exact
# command to run and fails. Sourced by demo.sh and test.sh.

wsrelay_packages=(
  build-essential cmake pkg-config ca-certificates curl
  libcurl4-openssl-dev libjson-c-dev libyaml-dev libesmtp-dev libssl-dev libpcre2-dev
  libcairo2-dev libfontconfig-dev fonts-dejavu-core fonts-ipaexfont-gothic
  libcriterion-dev libmicrohttpd-dev
  python3-aiosmtpd dovecot-imapd openssl clang-format mandoc
  dpkg-dev lintian python3-yaml
)

wsrelay_install_deps() {
  local missing=() pkg
  for pkg in "${wsrelay_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "wsrelay needs these Debian packages; as root, run:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    return 1
  fi
  echo "Installing: ${missing[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Configures and builds into $1 with the extra CMake arguments that follow.
wsrelay_build() {
  local dir=$1
  shift
  cmake -S "$wsrelay_root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWSRELAY_WERROR=ON "$@" >/dev/null &&
    cmake --build "$dir" -j"$(nproc)"
}
