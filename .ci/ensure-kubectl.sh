#!/usr/bin/env bash
# The manifest tests render knative/ with `kubectl kustomize`. Machines of this kind ship kubectl;
# where one does not, install kustomize from the Go module proxy and put a `kubectl` shim that
# only knows `kubectl kustomize DIR` in front of PATH. Prints the directory to add to PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v kubectl >/dev/null 2>&1; then
  exit 0
fi
bin="$PWD/.cache/bin"
mkdir -p "$bin"
if [[ ! -x "$bin/kustomize" ]]; then
  echo "kubectl not found: installing kustomize v5.7.1 from the Go module proxy" >&2
  GOBIN="$bin" GOFLAGS=-mod=mod go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1 >&2
fi
cat > "$bin/kubectl" <<'SHIM'
#!/usr/bin/env bash
# A stand-in for kubectl that only renders kustomizations.
if [[ "${1:-}" == "kustomize" ]]; then
  shift
  exec "$(dirname "$0")/kustomize" build "$@"
fi
echo "kubectl shim: only 'kubectl kustomize DIR' is available here" >&2
exit 1
SHIM
chmod +x "$bin/kubectl"
echo "$bin"
