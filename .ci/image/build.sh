#!/usr/bin/env bash
# Builds the image from the Dockerfile, without a Docker daemon and without a public registry
# (docs/adr/0035-image-built-in-ci.md):
#   1. a Node base image made here: Debian bookworm from Debian packages (mmdebstrap) plus the
#      Node and npm that toolchain/ installed from the npm registry (docs/adr/0034-node-24.md);
#   2. `podman build` of the unchanged Dockerfile with NODE_IMAGE set to that base.
# Needs root, podman, runc and mmdebstrap (.ci/image/ensure-tools.sh installs them), and
# toolchain/node_modules (npm ci --prefix toolchain). Prints the image's name and size.
#
#   bash .ci/image/build.sh [IMAGE]     # IMAGE defaults to localhost/source-watcher-recovery:ci
set -euo pipefail
cd "$(dirname "$0")/../.."
podman_() { bash .ci/image/podman.sh "$@"; }

image="${1:-localhost/source-watcher-recovery:ci}"
arch="$(node -p 'process.arch')"
node_pkg="toolchain/node_modules/node-linux-${arch}"
node_version="$(node -p "require('./${node_pkg}/package.json').version")"
npm_version="$(node -p "require('./toolchain/node_modules/npm/package.json').version")"
if [[ "$("$node_pkg/bin/node" --version)" != "v$node_version" ]]; then
  echo "build.sh: $node_pkg/bin/node is not Node $node_version: run npm ci --prefix toolchain" >&2
  exit 1
fi
base="localhost/swr-node-base:${node_version}-npm${npm_version}-bookworm"
work=".cache/image"
mkdir -p "$work"
# The registry is reached through whatever TLS setup this machine has: when it trusts an extra CA
# (NODE_EXTRA_CA_CERTS, or npm's cafile: a proxy that re-signs TLS), the base trusts the same file,
# so that the Dockerfile's `npm ci` steps reach the registry. Without one, the base has no extra CA.
host_ca="${NODE_EXTRA_CA_CERTS:-}"
if [[ -z "$host_ca" ]]; then host_ca="$(npm config get cafile 2>/dev/null || true)"; fi
ca_hooks=()
ca_env=()
if [[ -n "$host_ca" && -f "$host_ca" ]]; then
  cp "$host_ca" "$work/build-host-ca.crt"
  ca_hooks=(--customize-hook="install -D -m 0644 $work/build-host-ca.crt \"\$1/usr/local/etc/build-host-ca.crt\"")
  ca_env=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/etc/build-host-ca.crt')
  base="${base}-hostca-$(sha256sum "$work/build-host-ca.crt" | cut -c1-12)"
fi

if podman_ image exists "$base"; then
  echo "base $base: cached"
else
  start=$(date +%s)
  # essential: the Essential:yes packages (dash for RUN, coreutils), no apt; libstdc++6 and libatomic1 for node.
  # The Node binary and npm are copied in, as the official image has them under /usr/local.
  mmdebstrap --variant=essential --include=libstdc++6,libatomic1 \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="install -D -m 0755 $node_pkg/bin/node \"\$1/usr/local/bin/node\"" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\"" \
    --customize-hook="cp -a toolchain/node_modules/npm \"\$1/usr/local/lib/node_modules/npm\"" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\"" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
    "${ca_hooks[@]}" \
    --customize-hook="chroot \"\$1\" /usr/local/bin/node --version" \
    bookworm "$work/base.tar" >"$work/mmdebstrap.log" 2>&1 || {
    tail -30 "$work/mmdebstrap.log" >&2
    exit 1
  }
  podman_ import --quiet --change 'CMD ["node"]' "${ca_env[@]}" "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
  echo "base $base: made in $(($(date +%s) - start)) s"
fi

start=$(date +%s)
podman_ build --network=host \
  --build-arg "NODE_IMAGE=$base" -t "$image" -f Dockerfile . >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  exit 1
}
echo "image $image: built in $(($(date +%s) - start)) s"
podman_ image inspect --format '{{.Size}}' "$image" |
  awk -v i="$image" '{ printf "image %s: %d bytes (%.1f MiB)\n", i, $1, $1 / 1048576 }'
