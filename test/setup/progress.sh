# Sourced by test/apiserver/build.sh, test/crds/generate.sh and test/setup/go-bin.sh (the Go
# tools' builds): runs a long build step with its output in a log file and prints one progress
# line every PROGRESS_EVERY seconds (what is being built, the elapsed time, how many Go modules it
# has downloaded so far) instead of a screen of `go: downloading` lines. On failure the step's log
# tail is printed and its exit status returned.
# Set SWR_BUILD_VERBOSE=1 to see the step's own output as it comes.

PROGRESS_EVERY="${PROGRESS_EVERY:-30}"

# elapsed SECONDS → "4m05s"
elapsed_text() {
  printf '%dm%02ds' $(( $1 / 60 )) $(( $1 % 60 ))
}

# with_progress LABEL COMMAND [ARGS...]
with_progress() {
  local label="$1"
  shift
  if [[ "${SWR_BUILD_VERBOSE:-}" == 1 ]]; then
    "$@"
    return
  fi
  local log start pid status downloaded
  log="$(mktemp "${TMPDIR:-/tmp}/swr-build.XXXXXX")"
  start=$(date +%s)
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq "$PROGRESS_EVERY"); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      downloaded=$(grep -c '^go: downloading' "$log" || true)
      echo "  ... $label: $(elapsed_text $(( $(date +%s) - start ))) so far (${downloaded} Go modules downloaded)"
    fi
  done
  status=0
  wait "$pid" || status=$?
  if [[ $status != 0 ]]; then
    echo "$label failed (exit $status) after $(elapsed_text $(( $(date +%s) - start ))); the last lines of its output:" >&2
    tail -n 40 "$log" >&2
  fi
  rm -f "$log"
  return "$status"
}
