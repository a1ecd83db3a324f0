# Sourced by every device script: `step NAME COMMAND...` runs one check, counts it, and
# on a failure stops the script; `gate_end` (also run on any exit) prints the one line
# `N passed, N failed` and exits non-zero when anything failed or did not run to the end.
# A pipeline fails with its first failing command (pipefail), in the script and in a step
# written `step NAME bash -c '...'`: a child bash does not inherit the option, so step
# passes it on.
set -uo pipefail
GATE_PASSED=0
GATE_FAILED=0
GATE_DONE=0
step() {
  local name=$1
  shift
  if [ "${1:-}" = bash ] && [ "${2:-}" = -c ]; then set -- bash -o pipefail "${@:2}"; fi
  echo "== $name"
  if "$@"; then
    GATE_PASSED=$((GATE_PASSED + 1))
  else
    local rc=$?
    GATE_FAILED=$((GATE_FAILED + 1))
    echo "FAILED: $name (exit $rc); stopping"
    exit 1
  fi
}
gate_end() {
  local rc=$?
  trap - EXIT
  # A script that died outside a step (a missing file, an unset variable) failed too.
  if [ "$GATE_DONE" != 1 ] && [ "$GATE_FAILED" -eq 0 ]; then GATE_FAILED=1; fi
  echo "$GATE_PASSED passed, $GATE_FAILED failed"
  if [ "$GATE_FAILED" -ne 0 ] || [ "$rc" -ne 0 ]; then exit 1; fi
  exit 0
}
trap gate_end EXIT
# The last line of a script that ran every step: `gate_done`.
gate_done() { GATE_DONE=1; }
