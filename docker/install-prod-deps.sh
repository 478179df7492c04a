#!/bin/sh
# Runs in the images' build stage, in /app: installs the production dependencies of one workspace (and of the
# workspaces it depends on, which npm links from node_modules/@sluice/* to their folders), then drops from
# node_modules what never runs (type declarations, source maps, TypeScript sources — Node does not run .ts
# under node_modules anyway — and docs).
#
# Usage: install-prod-deps.sh <workspace dir>, e.g. install-prod-deps.sh connectors/source-http-file
set -eu
ws=${1:?usage: install-prod-deps.sh <workspace dir>}
flags="--omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --fetch-retries=2 --workspace=$ws"

# Behind a TLS-intercepting proxy the build passes the host's CA bundle as the build secret `extra_ca_certs`
# (docker/build.sh does when NODE_EXTRA_CA_CERTS or SSL_CERT_FILE is set); it is never stored in the image.
if [ -s /run/secrets/extra_ca_certs ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/extra_ca_certs; fi

# `npm ci` is the norm. It refuses a lock file that lacks entries for other platforms' optional packages
# (e.g. turbo's darwin/windows builds, which some registry mirrors do not serve); then `npm install`, which
# keeps every version the lock file pins, is the fallback, and the reason is printed.
# shellcheck disable=SC2086 # $flags is a list of options, split on purpose
if ! npm ci $flags >/tmp/npm.log 2>&1; then
  echo "install-prod-deps: npm ci refused ($(grep -m1 -E 'error (code|Missing)|ERR' /tmp/npm.log || tail -1 /tmp/npm.log)); using npm install with the lock file" >&2
  # shellcheck disable=SC2086
  npm install --no-save $flags >/tmp/npm.log 2>&1 || { cat /tmp/npm.log >&2; exit 1; }
fi
tail -1 /tmp/npm.log >&2
rm -f /tmp/npm.log

# -P: never follow the workspace symlinks (node_modules/@sluice/* point at the sources).
find -P node_modules -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \
  -o -name '*.md' -o -name '*.markdown' -o -name '*.tsbuildinfo' \) -delete
rm -rf node_modules/@types node_modules/.package-lock.json
du -sh node_modules >&2
