#!/usr/bin/env bash
# Builds helm into test/helm/.cache/bin/ (gitignored) from the Go module helm.sh/helm/v3 (version
# in go.mod), for the chart tests (test/unit/manifests/chart.test.ts: `helm template` of
# knative/chart/source-watcher-recovery against `kubectl kustomize` of the matching entry point,
# and `helm lint`). Skips the build when the stamp (this script, go.mod, go.sum) matches. See
# docs/adr/0065.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../setup/go-bin.sh
source ../setup/go-bin.sh

want="$(go_bin_stamp build.sh go.mod go.sum)"
if go_bin_up_to_date "$want" helm; then
  echo "helm: up to date (.cache/bin/helm)"
  exit 0
fi
version="$(go_module_version helm.sh/helm/v3)"
echo "helm: building helm from helm.sh/helm/v3 $version into .cache/bin (the first build downloads about 100 Go modules: a few minutes on 2 cores; later builds reuse Go's caches)"
start=$(date +%s)
go_bin_begin
# The version helm prints (`helm version`) is set the way Helm's own Makefile sets it.
go_bin_build helm -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  helm.sh/helm/v3/cmd/helm
go_bin_finish "$want" helm
echo "helm: built in $(( $(date +%s) - start )) s"
