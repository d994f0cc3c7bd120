#!/usr/bin/env bash
# Builds helm into test/helm/.cache/bin/ (gitignored) from the Go module helm.sh/helm/v3 (version
# in go.mod), for the chart tests (test/unit/manifests/chart.test.ts: `helm template` of
# knative/chart/source-watcher-recovery against `kubectl kustomize` of the matching entry point,
# and `helm lint`). Skips the build when the stamp (this script, go.mod, go.sum) matches. See
# docs/adr/0065.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../setup/progress.sh
source ../setup/progress.sh

stamp=.cache/bin.stamp
want="$(sha256sum build.sh go.mod go.sum | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && [[ -x .cache/bin/helm ]]; then
  echo "helm: up to date (.cache/bin/helm)"
  exit 0
fi
version="$(sed -n 's/^\(require \)\{0,1\}[[:space:]]*helm.sh\/helm\/v3 \(v[^ ]*\).*$/\2/p' go.mod)"
echo "helm: building helm from helm.sh/helm/v3 $version into .cache/bin (the first build downloads about 100 Go modules: a few minutes on 2 cores; later builds reuse Go's caches)"
start=$(date +%s)
rm -rf .cache/bin.tmp && mkdir -p .cache/bin .cache/bin.tmp
# The version helm prints (`helm version`) is set the way Helm's own Makefile sets it.
with_progress "building helm" env GOFLAGS="${GOFLAGS:-} -mod=mod" \
  go build -trimpath -buildvcs=false -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  -o .cache/bin.tmp/helm helm.sh/helm/v3/cmd/helm
mv .cache/bin.tmp/helm .cache/bin/helm
rmdir .cache/bin.tmp 2>/dev/null || true
echo "$want" >"$stamp"
echo "helm: built in $(( $(date +%s) - start )) s"
