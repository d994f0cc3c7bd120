# Sourced by the build scripts of the Go tools the tests run (test/helm/build.sh,
# test/prometheus/build.sh, test/knative-validate/build.sh), from the folder of the Go module
# being built: the stamp that skips an up-to-date build, the module's version in go.mod, and the
# build into .cache/bin (gitignored) through .cache/bin.tmp, so an interrupted build leaves no
# half-written binary. The build step's output goes through progress.sh's with_progress.

# shellcheck source=./progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"

# go_bin_stamp FILE... → the stamp of the build's inputs (this file is always one of them)
go_bin_stamp() {
  sha256sum "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}

# go_bin_up_to_date STAMP BIN... → true when the last build's stamp is STAMP and every BIN is there
go_bin_up_to_date() {
  local want="$1" b
  shift
  [[ -f .cache/bin.stamp && "$(cat .cache/bin.stamp)" == "$want" ]] || return 1
  for b in "$@"; do [[ -x ".cache/bin/$b" ]] || return 1; done
}

# go_module_version MODULE → its version as go.mod requires it
go_module_version() {
  sed -n "s|^\(require \)\{0,1\}[[:space:]]*$1 \(v[^ ]*\).*\$|\2|p" go.mod
}

go_bin_begin() {
  rm -rf .cache/bin.tmp && mkdir -p .cache/bin .cache/bin.tmp
}

# go_bin_build BIN [GO BUILD FLAGS...] PACKAGE → .cache/bin.tmp/BIN
go_bin_build() {
  local bin="$1"
  shift
  with_progress "building $bin" env GOFLAGS="${GOFLAGS:-} -mod=mod" \
    go build -trimpath -buildvcs=false -o ".cache/bin.tmp/$bin" "$@"
}

# go_bin_finish STAMP BIN... → the binaries in .cache/bin, the stamp written
go_bin_finish() {
  local want="$1" b
  shift
  for b in "$@"; do mv ".cache/bin.tmp/$b" ".cache/bin/$b"; done
  rmdir .cache/bin.tmp 2>/dev/null || true
  echo "$want" >.cache/bin.stamp
}
