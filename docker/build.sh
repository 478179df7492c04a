#!/usr/bin/env bash
# Builds the connector images and tags each one three ways under a registry prefix:
#   <registry>/<connector>:dev  :<VERSION> (connectors/<connector>/VERSION)  :<git short sha>
# (the sha tag gets a `-dirty` suffix when the image's inputs have uncommitted changes).
#
# Usage: docker/build.sh [options] [connector ...]      (default: all three)
#   --engine buildah|docker|podman   default: docker when a Docker engine answers, else buildah, else podman
#   --registry PREFIX                default: $SLUICE_REGISTRY or ghcr.io/sluice-dev
#   --local-base                     make the base images locally (docker/base/build-base.sh, cached) and build
#                                    on them: for machines that cannot pull from Docker Hub (needs root + buildah)
#   --node-image IMAGE               build stage image (default node:24-bookworm-slim)
#   --base-image IMAGE               runtime stage image (default debian:bookworm-slim)
#   --push                           push every tag after building
#   --no-cache                       rebuild every layer
# Prints progress on stderr; on stdout one line per image: `built <image> <bytes> <seconds> <tag> <tag> <tag>`.
#
# Connectors: source-http-file, materialize-sqlserver, materialize-sqlite.
set -euo pipefail

# buildah re-reads CONTAINERS_CONF from other working directories: make it absolute.
if [ -n "${CONTAINERS_CONF:-}" ]; then CONTAINERS_CONF=$(readlink -f "$CONTAINERS_CONF"); export CONTAINERS_CONF; fi
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
all=(source-http-file materialize-sqlserver materialize-sqlite)

engine=""
registry=${SLUICE_REGISTRY:-ghcr.io/sluice-dev}
local_base=0
node_image=""
base_image=""
push=0
no_cache=0
names=()

die() { echo "build.sh: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=${2:?--engine needs a value}; shift 2 ;;
    --registry) registry=${2:?--registry needs a value}; shift 2 ;;
    --local-base) local_base=1; shift ;;
    --node-image) node_image=${2:?--node-image needs a value}; shift 2 ;;
    --base-image) base_image=${2:?--base-image needs a value}; shift 2 ;;
    --push) push=1; shift ;;
    --no-cache) no_cache=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) names+=("$1"); shift ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for n in "${names[@]}"; do
  [ -f "docker/$n/Dockerfile" ] || die "unknown connector '$n': expected one of ${all[*]}"
  [ -f "connectors/$n/VERSION" ] || die "connectors/$n/VERSION is missing (it holds the image's major version, e.g. v1)"
done
registry=${registry%/}

if [ -z "$engine" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker
  elif command -v buildah >/dev/null; then engine=buildah
  elif command -v podman >/dev/null; then engine=podman
  else die "no container engine: install docker, or buildah/podman"; fi
fi
case "$engine" in docker|buildah|podman) ;; *) die "--engine must be buildah, docker or podman, not '$engine'" ;; esac
command -v "$engine" >/dev/null || die "$engine is not installed"

if [ "$local_base" = 1 ]; then
  [ "$engine" != docker ] || die "--local-base makes the base images with buildah; build with --engine buildah or podman"
  mapfile -t bases < <(docker/base/build-base.sh)
  base_image=${base_image:-${bases[0]}}
  node_image=${node_image:-${bases[1]}}
fi

sha=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
build_args=(--build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)")
[ -z "$node_image" ] || build_args+=(--build-arg "NODE_IMAGE=$node_image")
[ -z "$base_image" ] || build_args+=(--build-arg "BASE_IMAGE=$base_image")

# Behind a TLS-intercepting proxy npm needs the host's CA bundle: passed as a build secret, never stored.
ca=""
for f in "${NODE_EXTRA_CA_CERTS:-}" "${SSL_CERT_FILE:-}"; do
  if [ -n "$f" ] && [ -s "$f" ]; then ca=$f; break; fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$ca" ]; then ca="$tmp/no-extra-ca.pem"; : >"$ca"; fi
secret=(--secret "id=extra_ca_certs,src=$ca")

case "$engine" in
  docker)
    export DOCKER_BUILDKIT=1
    build=(docker build "${secret[@]}")
    [ "$no_cache" = 0 ] || build+=(--no-cache)
    size_of() { docker image inspect --format '{{.Size}}' "$1"; } ;;
  buildah|podman)
    # --layers caches each step (npm install is redone only when a package.json or the lock file changes);
    # --pull=false pulls a base image only when it is missing (and never for localhost/ names we made).
    if [ "$engine" = buildah ]; then build=(buildah bud); else build=(podman build); fi
    build+=(--layers --force-rm --pull=false --format docker "${secret[@]}")
    [ "$no_cache" = 0 ] || build+=(--no-cache)
    size_of() { "$engine" inspect --type image --format '{{.Size}}' "$1" 2>/dev/null || podman image inspect --format '{{.Size}}' "$1"; } ;;
esac

for n in "${names[@]}"; do
  version=$(tr -d '[:space:]' <"connectors/$n/VERSION")
  [[ "$version" =~ ^v[0-9]+$ ]] || die "connectors/$n/VERSION holds '$version'; expected v<major>, e.g. v1"
  inputs=(package.json package-lock.json runtime docker/install-prod-deps.sh docker/write-entrypoint.js "docker/$n" "connectors/$n")
  case "$n" in materialize-sql*) inputs+=(connectors/materialize-sql) ;; esac
  tag_sha=$sha
  if [ -n "$(git status --porcelain -- "${inputs[@]}" 2>/dev/null)" ]; then tag_sha="$sha-dirty"; fi
  image="$registry/$n"
  tags=("$image:dev" "$image:$version" "$image:$tag_sha")
  tag_args=()
  for t in "${tags[@]}"; do tag_args+=(-t "$t"); done
  echo "build.sh: building $image ($engine; tags dev, $version, $tag_sha)" >&2
  start=$(date +%s.%N)
  "${build[@]}" "${build_args[@]}" --build-arg "VERSION=$version" -f "docker/$n/Dockerfile" "${tag_args[@]}" . >&2
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  bytes=$(size_of "$image:dev")
  echo "build.sh: $image: ${tags[*]##*:} — $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') — ${secs}s" >&2
  if [ "$push" = 1 ]; then
    for t in "${tags[@]}"; do
      case "$engine" in docker) docker push "$t" >&2 ;; *) "$engine" push "$t" >&2 ;; esac
    done
  fi
  echo "built $image $bytes $secs ${tags[*]##*:}"
done
