#!/usr/bin/env bash
# Builds prometheus and promtool into test/prometheus/.cache/bin/ (gitignored) from the Go module
# github.com/prometheus/prometheus (version in go.mod), for the test world's Prometheus room
# (test/harness/prometheus/: its OTLP receiver takes the functions' metrics) and for
# `promtool test rules` over knative/components/monitoring. Built with the tag remove_all_sd (no
# cloud service discovery: the room scrapes nothing, it only receives OTLP) and without
# builtinassets (no web UI build step: the room is used through its HTTP API only). Skips the
# build when the stamp (this script, go.mod, go.sum) matches. See docs/adr/0059.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../setup/progress.sh
source ../setup/progress.sh

bins=(prometheus promtool)
stamp=.cache/bin.stamp
want="$(sha256sum build.sh go.mod go.sum | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && [[ -x .cache/bin/prometheus && -x .cache/bin/promtool ]]; then
  echo "prometheus: up to date (.cache/bin: ${bins[*]})"
  exit 0
fi
version="$(sed -n 's/^\(require \)\{0,1\}[[:space:]]*github.com\/prometheus\/prometheus \(v[^ ]*\).*$/\2/p' go.mod)"
echo "prometheus: building ${bins[*]} from github.com/prometheus/prometheus $version into .cache/bin (the first build downloads about 150 Go modules: several minutes on 2 cores; later builds reuse Go's caches)"
total=$(date +%s)
rm -rf .cache/bin.tmp && mkdir -p .cache/bin .cache/bin.tmp
for b in "${bins[@]}"; do
  start=$(date +%s)
  with_progress "building $b" env GOFLAGS="${GOFLAGS:-} -mod=mod" \
    go build -trimpath -buildvcs=false -tags remove_all_sd -ldflags="-s -w" \
    -o ".cache/bin.tmp/$b" "github.com/prometheus/prometheus/cmd/$b"
  echo "prometheus: built $b in $(( $(date +%s) - start )) s"
done
for b in "${bins[@]}"; do mv ".cache/bin.tmp/$b" ".cache/bin/$b"; done
rmdir .cache/bin.tmp 2>/dev/null || true
echo "$want" >"$stamp"
echo "prometheus: built in $(( $(date +%s) - total )) s"
