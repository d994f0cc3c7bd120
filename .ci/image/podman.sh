#!/usr/bin/env bash
# podman as it runs on this kind of machine (rootful, no systemd, cgroup v1 with an empty v2
# mount, no CAP_SYS_RESOURCE; docs/adr/0035-image-built-in-ci.md). Used by build.sh and the image
# smoke test (test/image/) for every podman call:
#
#   bash .ci/image/podman.sh <podman arguments>
#
# - --cgroup-manager=cgroupfs: no systemd to delegate cgroups to.
# - --runtime=runc: crun 1.8.1 refuses the hybrid cgroup layout ("cgroups in hybrid mode not
#   supported, drop all controllers from cgroupv2").
# - --ulimit on run/create/build: podman asks for RLIMIT_NOFILE 1048576 and a large RLIMIT_NPROC
#   by default, and runc cannot raise them here ("error setting rlimit type 7: operation not
#   permitted"). Ask for the shell's hard limit of files (at most 65536) and 4096 processes.
set -euo pipefail
nofile="$(ulimit -Hn)"
if [[ "$nofile" == unlimited || "$nofile" -gt 65536 ]]; then nofile=65536; fi
args=("$@")
if [[ ${#args[@]} -gt 0 && "${args[0]}" =~ ^(run|create|build)$ ]]; then
  args=("${args[0]}" --ulimit "nofile=${nofile}:${nofile}" --ulimit "nproc=4096:4096" "${args[@]:1}")
fi
exec podman --cgroup-manager=cgroupfs --runtime=runc "${args[@]}"
