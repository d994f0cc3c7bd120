#!/usr/bin/env bash
# Builds the test control plane into .cache/bin/: testapiserver (embedded etcd, PKI, start-up
# order) and the upstream kube-apiserver and kube-controller-manager (k8s.io/kubernetes v1.37.2)
# it runs. Skips the build when every binary is newer than every Go source, go.mod and go.sum.
# The first build compiles most of Kubernetes: see docs/adr/0030-real-kube-apiserver.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=../setup/progress.sh
source ../setup/progress.sh
bins=(testapiserver kube-apiserver kube-controller-manager)
up_to_date=1
for b in "${bins[@]}"; do
  if [[ ! -x ".cache/bin/$b" ]] || [[ -n "$(find . -path ./.cache -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer ".cache/bin/$b" -print)" ]]; then
    up_to_date=0
  fi
done
if [[ $up_to_date == 1 ]]; then
  echo "testapiserver: up to date (.cache/bin: ${bins[*]})"
  exit 0
fi
mkdir -p .cache/bin .cache/bin.tmp
echo "testapiserver: building ${bins[*]} into .cache/bin (the first build downloads about 190 Go modules and compiles most of Kubernetes: about 8 minutes on 2 cores; later builds reuse Go's caches)"
total=$(date +%s)
# One piece at a time, biggest first, each timed: later pieces reuse the build cache, so their
# time is what they add.
for pkg in ./cmd/kube-apiserver ./cmd/kube-controller-manager .; do
  start=$(date +%s)
  echo "testapiserver: building $pkg"
  with_progress "building $pkg" env GOFLAGS="${GOFLAGS:-} -mod=mod" \
    go build -trimpath -buildvcs=false -ldflags="-s -w" -o .cache/bin.tmp/ "$pkg"
  echo "testapiserver: built $pkg in $(( $(date +%s) - start )) s"
done
for b in "${bins[@]}"; do mv ".cache/bin.tmp/$b" ".cache/bin/$b"; done
rmdir .cache/bin.tmp 2>/dev/null || true
echo "testapiserver: built in $(( $(date +%s) - total )) s"
