#!/usr/bin/env bash
# Proves that the repository stands alone (issue 31): a clone of this commit, placed alone in an
# empty temporary directory, runs `npm start` to its summary. It may reuse the machine's Go build
# and module caches and the npm cache (downloads, not results); it gets no node_modules, no
# test/apiserver/.cache, no test/crds/.cache and nothing beside the clone. The clone's own
# toolchain/with-node.cjs installs Node 24 and the npm packages, as for a newcomer.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/swr-fresh-clone.XXXXXX")"
trap 'rm -rf "$work"' EXIT
git clone -q --no-hardlinks "$repo" "$work/source-watcher-recovery"
cd "$work/source-watcher-recovery"
if [[ -n "$(ls -A "$work" | grep -v '^source-watcher-recovery$' || true)" ]]; then
  echo "fresh clone: $work holds more than the clone" >&2
  exit 1
fi
for leftover in node_modules toolchain/node_modules test/apiserver/.cache test/crds/.cache; do
  if [[ -e "$leftover" ]]; then
    echo "fresh clone: $leftover exists in a fresh clone" >&2
    exit 1
  fi
done
echo "fresh clone: $(git rev-parse --short HEAD) in $work (alone), npm start"
start=$(date +%s)
# The machine's Node (whatever it is) starts npm, as a newcomer's would; PATH keeps no toolchain.
PATH="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v "$repo" | paste -sd: -)" \
  npm start </dev/null 2>&1 | tee "$work/start.log"
echo "fresh clone: npm start took $(( $(date +%s) - start )) s"
# The summary's two closing lines: the counts, then the simulated time.
summary="$(grep -E '^[0-9]+ recovered, [0-9]+ SourceWatcherStalled, [0-9]+ pending\.$' "$work/start.log" || true)"
if [[ -z "$summary" ]]; then
  echo "fresh clone: npm start did not end with its summary" >&2
  exit 1
fi
if ! tail -n 1 "$work/start.log" | grep -qE '^simulated [0-9]+:[0-9]{2} in [0-9.]+ s of wall time'; then
  echo "fresh clone: npm start's last line is not its summary: $(tail -n 1 "$work/start.log")" >&2
  exit 1
fi
case "$summary" in
  *" 0 pending.") echo "fresh clone: $summary" ;;
  *) echo "fresh clone: AGs left pending: $summary" >&2; exit 1 ;;
esac
