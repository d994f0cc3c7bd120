#!/usr/bin/env bash
# The tools .ci/image/build.sh and the image smoke test need (docs/adr/0058): mmdebstrap (Debian's
# libraries, unpacked), skopeo (the OCI archive into podman's storage), a strip for the arm64 Node
# binary (binutils-aarch64-linux-gnu, unless llvm-strip is there), podman with runc (crun cannot
# run here: .ci/image/podman.sh) for the smoke test. From the Debian archive with apt, as root;
# nothing is installed when all are present.
set -euo pipefail
missing=()
for tool in podman runc mmdebstrap skopeo; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ! command -v aarch64-linux-gnu-strip >/dev/null 2>&1 && ! command -v llvm-strip >/dev/null 2>&1; then
  missing+=(binutils-aarch64-linux-gnu)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "ensure-tools.sh: ${missing[*]} missing; installing them needs root (apt-get)" >&2
  exit 1
fi
echo "installing ${missing[*]} from the Debian archive" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" debian-archive-keyring >&2
