#!/usr/bin/env bash
# The device tree's `nbody run` step against nbody-tree-bench's step at 2^20, f32 and f64,
# theta 1 and 0.5, 8 and 128 steps, with the binaries of two commits: copy this script
# beside old/ and new/ (each holding a release `nbody` built with --features cuda; new/
# also nbody-tree-bench), carry them to the GPU machine and run
# `BUILDS="old new" bash before-after.sh OUTDIR` there. Writes steps.txt and runs.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee "$out/device.txt"
export OMP_NUM_THREADS=16
for prec in f32 f64; do
for theta in 1 0.5; do
  for build in ${BUILDS:-old new}; do
    for t_end in 0.0625 1; do
      d=$(mktemp -d)
      s=$(date +%s.%N)
      "$here/$build/nbody" run --gravity tree --theta $theta --precision $prec --executor cuda -n 1048576 --dt 0.0078125 --t-end $t_end --out "$d" --quiet --overwrite > "$d.log" 2>&1
      rc=$?
      { echo "== $prec $build theta $theta t_end $t_end"; cat "$d.log"; } >> "$out/runs.txt"
      e=$(date +%s.%N)
      echo "$prec $build theta $theta t_end $t_end rc=$rc wall $(python3 -c "print(round($e - $s, 3))") s" | tee -a "$out/steps.txt"
      rm -rf "$d" "$d.log"
    done
  done
done
done
for theta in 1 0.5; do
  "$here/new/nbody-tree-bench" --executor cuda --device-tree 1048576 --theta $theta --multipole quadrupole --steps 30 --no-direct 2>&1 | grep leapfrog | tee -a "$out/steps.txt"
done
