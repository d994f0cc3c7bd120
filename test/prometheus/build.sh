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
# shellcheck source=../setup/go-bin.sh
source ../setup/go-bin.sh

bins=(prometheus promtool)
want="$(go_bin_stamp build.sh go.mod go.sum)"
if go_bin_up_to_date "$want" "${bins[@]}"; then
  echo "prometheus: up to date (.cache/bin: ${bins[*]})"
  exit 0
fi
version="$(go_module_version github.com/prometheus/prometheus)"
echo "prometheus: building ${bins[*]} from github.com/prometheus/prometheus $version into .cache/bin (the first build downloads about 150 Go modules: several minutes on 2 cores; later builds reuse Go's caches)"
total=$(date +%s)
go_bin_begin
for b in "${bins[@]}"; do
  start=$(date +%s)
  go_bin_build "$b" -tags remove_all_sd -ldflags="-s -w" "github.com/prometheus/prometheus/cmd/$b"
  echo "prometheus: built $b in $(( $(date +%s) - start )) s"
done
go_bin_finish "$want" "${bins[@]}"
echo "prometheus: built in $(( $(date +%s) - total )) s"
