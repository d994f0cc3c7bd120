#!/usr/bin/env bash
# Generates the CRDs of Flux's kustomize-controller (Kustomization, kustomize.toolkit.fluxcd.io/v1)
# and helm-controller (HelmRelease, helm.toolkit.fluxcd.io/v2) with controller-gen from their API
# modules (github.com/fluxcd/kustomize-controller/api and github.com/fluxcd/helm-controller/api at
# the versions in this folder's go.mod), as upstream generates its own YAML, into
# test/crds/.cache/flux-toolkit/ (gitignored). test/setup/install-crds.ts serves them with the
# other upstream CRDs, so docs/install.md's Flux Kustomization and HelmRelease examples are checked
# against the real schemas (test/integration/manifests-dry-run.test.ts). Only the served versions
# the examples use are generated (v1 and v2). The modules need Go 1.27, which the Go module proxy
# serves as a toolchain (as for test/crds/ag-v2.3). Skips the work when the stamp matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../../setup/progress.sh
source ../../setup/progress.sh
export GOTOOLCHAIN=go1.27.3
export GOFLAGS="${GOFLAGS:-} -mod=mod"

out=../.cache/flux-toolkit
stamp=../.cache/flux-toolkit.stamp
want="$(sha256sum generate.sh go.mod go.sum | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && compgen -G "$out/*.yaml" >/dev/null; then
  echo "Flux kustomize/helm-controller CRDs: up to date ($out)"
  exit 0
fi

start=$(date +%s)
rm -rf "$out.tmp" && mkdir -p "$out.tmp" ../.cache/flux-toolkit-bin
echo "Flux kustomize/helm-controller CRDs: building controller-gen (Go $GOTOOLCHAIN)"
with_progress "building controller-gen (flux-toolkit module)" \
  go build -trimpath -o ../.cache/flux-toolkit-bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
with_progress "controller-gen (flux-toolkit)" ../.cache/flux-toolkit-bin/controller-gen \
  crd paths=github.com/fluxcd/kustomize-controller/api/v1 \
  paths=github.com/fluxcd/helm-controller/api/v2 output:crd:dir="$out.tmp"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$want" >"$stamp"
echo "Flux kustomize/helm-controller CRDs: $(ls "$out" | wc -l) file(s) in $out in $(( $(date +%s) - start )) s"
