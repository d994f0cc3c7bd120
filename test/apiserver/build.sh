#!/usr/bin/env bash
# Builds the test API server (embedded etcd + apiextensions-apiserver) into .cache/bin/.
# Skips the build when the binary is newer than every Go source, go.mod and go.sum.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
bin=.cache/bin/testapiserver
if [[ -x "$bin" ]] && [[ -z "$(find . -path ./.cache -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$bin" -print)" ]]; then
  echo "testapiserver: up to date ($bin)"
  exit 0
fi
mkdir -p .cache/bin
echo "testapiserver: building $bin"
GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -buildvcs=false -ldflags="-s -w" -o "$bin.tmp" .
mv "$bin.tmp" "$bin"
echo "testapiserver: built $bin"
