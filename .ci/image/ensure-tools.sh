#!/usr/bin/env bash
# The tools .ci/image/build.sh and the image smoke test need: podman (with conmon), runc (crun
# cannot run here: .ci/image/podman.sh), mmdebstrap for the local base. From Debian's archive
# with apt, as root; nothing is installed when all are present.
set -euo pipefail
missing=()
for tool in podman runc mmdebstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
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
apt-get install -y -qq --no-install-recommends podman runc mmdebstrap debian-archive-keyring >&2
