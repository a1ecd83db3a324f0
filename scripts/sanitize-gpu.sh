#!/usr/bin/env bash
# On the GPU machine, after scripts/stage-gpu.sh: runs the CUDA conformance binary under
# compute-sanitizer's memcheck, racecheck and initcheck. Every kernel family is launched
# by these tests (tiled variants via every_launch_config, jerk, batched, kick/drift via
# the device leapfrog, density maps). Exit status is non-zero if any tool reports an error.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# Checks that launch every kernel family at small sizes (the tools slow kernels 10-100x).
filter=(cuda::every_launch_config_matches_the_oracle cuda::awkward_sizes cuda::device_leapfrog_matches_the_host_leapfrog
        cuda/f32::jerk_matches_oracle cuda/f64::jerk_matches_oracle cuda/f32::batch_matches_pairwise
        cuda/f64::batch_matches_pairwise cuda/f32::matches_oracle cuda::resident_density_map_matches_deposit
        cuda/f64::density_map_matches_deposit)
status=0
for tool in memcheck racecheck initcheck; do
  echo "== compute-sanitizer --tool $tool"
  extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  : > "$OUT/sanitize-$tool.log"
  for test in "${filter[@]}"; do
    "$san" --tool "$tool" "${extra[@]}" --error-exitcode 1 ./cuda-conformance --exact --test-threads 1 "$test" \
      >> "$OUT/sanitize-$tool.log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$tool.log" | tail -1)
    passed=$(grep -E "^test result" "$OUT/sanitize-$tool.log" | tail -1 | cut -c1-40)
    echo "$tool $test: exit $rc; $summary; $passed"
    [ $rc -ne 0 ] && status=1
  done
done
exit $status
