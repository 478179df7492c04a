#!/usr/bin/env bash
# Debian packages that tests use as real peers: sqlite3 (baselines), sshd (SSH tunnel tests),
# miller + zstd (benchmark baselines), buildah/podman/runc/debootstrap (image tests).
set -euo pipefail
need=()
for pair in sqlite3:sqlite3 mlr:miller sshd:openssh-server zstd:zstd curl:curl buildah:buildah podman:podman runc:runc debootstrap:debootstrap; do
  bin=${pair%%:*}; pkg=${pair##*:}
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "ci: installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "ci: not root, cannot install ${need[*]}; tests that need them will skip and say so"
  fi
fi
