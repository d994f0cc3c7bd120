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
# shellcheck source=../setup/go-bin.sh
source ../setup/go-bin.sh

want="$(go_bin_stamp build.sh go.mod go.sum ./*.go)"
if go_bin_up_to_date "$want" knative-validate; then
  echo "knative-validate: up to date (.cache/bin/knative-validate)"
  exit 0
fi
version="$(go_module_version knative.dev/serving)"
echo "knative-validate: building against knative.dev/serving $version into .cache/bin (the first build downloads about 40 Go modules; later builds reuse Go's caches)"
start=$(date +%s)
go_bin_begin
go_bin_build knative-validate .
go_bin_finish "$want" knative-validate
echo "knative-validate: built in $(( $(date +%s) - start )) s"
