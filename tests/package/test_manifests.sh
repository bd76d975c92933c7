#!/usr/bin/env bash
# The container and Kubernetes files, checked with what runs here: every
# YAML file of packaging/ is well-formed, the manifests agree with each
# other (check_manifests.py), each shard's configuration as the StatefulSet
# mounts it, with the Secret's values in the environment, passes
# `wsrelay check`, and the Containerfile runs what the units run.
#   test_manifests.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
python=/usr/bin/python3 # Debian's, with python3-yaml (scripts/deps.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$src"/packaging/*.yaml "$src"/packaging/kubernetes/*.yaml "$src"/rules/*.yaml; do
  "$python" -c 'import sys, yaml; list(yaml.safe_load_all(open(sys.argv[1], encoding="utf-8")))' "$f" ||
    fail "$f is not well-formed YAML"
done

"$python" "$src/tests/package/check_manifests.py" "$src/packaging/kubernetes" "$tmp/etc" ||
  fail "the manifests disagree (above)"

shards=("$tmp"/etc/wsrelay-*.yaml)
[ ${#shards[@]} -ge 2 ] || fail "expected at least two shards, found ${#shards[@]}"
for shard in "${shards[@]}"; do
  # env -i: only the Secret's values, as in the pod (and a sanitizer
  # build's report settings).
  mapfile -t vars <"$tmp/etc/env"
  for v in ASAN_OPTIONS UBSAN_OPTIONS; do
    [ -z "${!v:-}" ] || vars+=("$v=${!v}")
  done
  # The file by $WSRELAY_CONFIG, as the StatefulSet sets it (no -c).
  out=$(env -i PATH=/usr/bin:/bin "${vars[@]}" WSRELAY_CONFIG="$shard" "$build/wsrelay" check 2>&1) ||
    fail "wsrelay check $(basename "$shard"): $out"
  grep -q ': OK: ' <<<"$out" || fail "wsrelay check $(basename "$shard") said: $out"
done

cf=$src/packaging/Containerfile
grep -qx 'FROM debian:12-slim' "$cf" || fail "Containerfile: not FROM debian:12-slim"
grep -q 'apt-get install .*/tmp/wsrelay_\*\.deb' <(tr -d '\\\n' <"$cf") ||
  fail "Containerfile: does not install the package with apt-get"
grep -qx 'VOLUME /var/lib/wsrelay' "$cf" || fail "Containerfile: no state volume"
grep -qx 'USER 999:999' "$cf" || fail "Containerfile: not the user wsrelay (999)"
grep -qx 'CMD \["run", "--loop"\]' "$cf" || fail "Containerfile: does not run --loop"
grep -q 'apt-get install .*/tmp/wsrelay_\*\.deb.* fonts-ipaexfont-gothic' <(tr -d '\\\n' <"$cf") ||
  fail "Containerfile: does not install fonts-ipaexfont-gothic (Japanese chart text)"
grep -qx 'ENV WSRELAY_CONFIG=/etc/wsrelay/wsrelay.yaml' "$cf" ||
  fail "Containerfile: no default \$WSRELAY_CONFIG (exec'd commands would not find the config)"
grep -qx 'ENTRYPOINT \["/usr/bin/wsrelay"\]' "$cf" ||
  fail "Containerfile: the entrypoint names a config (it would override \$WSRELAY_CONFIG)"
# The registry placeholder is explained where the image is named.
image=$(sed -n 's/^ *image: *//p' "$src/packaging/kubernetes/statefulset.yaml")
grep -qF "${image%%/*}" "$src/packaging/kubernetes/README.md" ||
  fail "packaging/kubernetes/README.md does not explain the image's registry ${image%%/*}"
grep -q 'runAsUser: 999$' "$src/packaging/kubernetes/statefulset.yaml" ||
  fail "the StatefulSet's uid is not the image's"
echo "manifests OK: ${#shards[@]} shards pass wsrelay check"
