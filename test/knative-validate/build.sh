#!/usr/bin/env bash
# Builds knative-validate into test/knative-validate/.cache/bin/ (gitignored) from this folder's Go
# module: Knative Serving's own SetDefaults and Validate (knative.dev/serving at the version in
# go.mod) run on the Services of YAML, as Serving's webhooks run them on a create in a default
# install (test/unit/manifests/knative-webhook.test.ts runs it on every render of knative/ and of
# the chart). v0.50.0, not v0.51.0: the Go module proxy refuses v0.51.0's knative.dev/pkg and
# knative.dev/networking (docs/adr/0066). Skips the build when the stamp (this script and the
# module's files) matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../setup/progress.sh
source ../setup/progress.sh

stamp=.cache/bin.stamp
want="$(sha256sum build.sh go.mod go.sum ./*.go | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && [[ -x .cache/bin/knative-validate ]]; then
  echo "knative-validate: up to date (.cache/bin/knative-validate)"
  exit 0
fi
version="$(sed -n 's/^\(require \)\{0,1\}[[:space:]]*knative.dev\/serving \(v[^ ]*\).*$/\2/p' go.mod)"
echo "knative-validate: building against knative.dev/serving $version into .cache/bin (the first build downloads about 40 Go modules; later builds reuse Go's caches)"
start=$(date +%s)
rm -rf .cache/bin.tmp && mkdir -p .cache/bin .cache/bin.tmp
with_progress "building knative-validate" env GOFLAGS="${GOFLAGS:-} -mod=mod" \
  go build -trimpath -buildvcs=false -o .cache/bin.tmp/knative-validate .
mv .cache/bin.tmp/knative-validate .cache/bin/knative-validate
rmdir .cache/bin.tmp 2>/dev/null || true
echo "$want" >"$stamp"
echo "knative-validate: built in $(( $(date +%s) - start )) s"
