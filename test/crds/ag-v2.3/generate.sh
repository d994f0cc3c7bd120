#!/usr/bin/env bash
# Generates the ArtifactGenerator CRD of source-watcher v2.3 (github.com/fluxcd/source-watcher/api/v2
# at the version in this folder's go.mod) with controller-gen, as test/crds/generate.sh does for
# v2.1, into test/crds/.cache/ag-v2.3/ (gitignored). The test world serves it instead of the v2.1
# one when SWR_AG_SCHEMA=v2.3 (test/setup/install-crds.ts); .ci/run runs the integration and e2e
# projects once more that way (docs/adr/0066). Its own module: one go.mod holds one version of the
# API module. The module needs Go 1.27, which the Go module proxy serves as a toolchain.
# Skips the work when the stamp (this script's and the module files' checksums) matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../../setup/progress.sh
source ../../setup/progress.sh
export GOTOOLCHAIN=go1.27.3
export GOFLAGS="${GOFLAGS:-} -mod=mod"

out=../.cache/ag-v2.3
stamp=../.cache/ag-v2.3.stamp
want="$(sha256sum generate.sh go.mod go.sum | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && compgen -G "$out/*.yaml" >/dev/null; then
  echo "source-watcher v2.3 AG CRD: up to date ($out)"
  exit 0
fi

start=$(date +%s)
rm -rf "$out.tmp" && mkdir -p "$out.tmp" ../.cache/ag-v2.3-bin
echo "source-watcher v2.3 AG CRD: building controller-gen (Go $GOTOOLCHAIN)"
with_progress "building controller-gen (v2.3 module)" \
  go build -trimpath -o ../.cache/ag-v2.3-bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
with_progress "controller-gen (v2.3)" ../.cache/ag-v2.3-bin/controller-gen \
  crd paths=github.com/fluxcd/source-watcher/api/v2/v1beta1 output:crd:dir="$out.tmp"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$want" >"$stamp"
echo "source-watcher v2.3 AG CRD: $(ls "$out" | wc -l) file(s) in $out in $(( $(date +%s) - start )) s"
