#!/usr/bin/env bash
# On the GPU machine, after scripts/stage-gpu.sh: runs the CUDA conformance binary under
# compute-sanitizer's memcheck, racecheck and initcheck. Every kernel family is launched
# by these tests (tiled variants via every_launch_config, jerk, batched, kick/drift via
# the device leapfrog, density maps). Each tool on each check is a step (gate.sh): the
# first error stops it; the last line is `N passed, N failed`.
cd "$(dirname "$0")"
. ./gate.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# Checks that launch every kernel family at small sizes (the tools slow kernels 10-100x).
filter=(cuda::every_launch_config_matches_the_oracle cuda::awkward_sizes cuda::device_leapfrog_matches_the_host_leapfrog
        cuda/f32::jerk_matches_oracle cuda/f64::jerk_matches_oracle cuda/f32::batch_matches_pairwise
        cuda/f64::batch_matches_pairwise cuda/f32::matches_oracle cuda::resident_density_map_matches_deposit
        cuda/f64::density_map_matches_deposit)
sanitize() {
  local tool=$1 test=$2 extra=() one
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  one=$(mktemp)
  "$san" --tool "$tool" "${extra[@]}" --error-exitcode 1 ./cuda-conformance --exact --test-threads 1 "$test" > "$one" 2>&1
  local rc=$?
  cat "$one" >> "$OUT/sanitize-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$one" | tail -1
  grep -E "^test result" "$one" | tail -1 | cut -c1-40
  # A filter that matched nothing ran nothing: that is a failure too.
  grep -qE "^test result: ok\. [1-9]" "$one" || rc=1
  rm -f "$one"
  return $rc
}
for tool in memcheck racecheck initcheck; do
  : > "$OUT/sanitize-$tool.log"
  for test in "${filter[@]}"; do
    step "$tool $test" sanitize "$tool" "$test"
  done
done
gate_done
