#!/usr/bin/env bash
# The command's device tree runs (f32, 2^20, dt 1/128, theta 1 and 0.5, 8 and 256 steps)
# with the summary's forces line (their GPU seconds beside the wall time): `bash
# force-time.sh OUTDIR` beside new/nbody (staged as for before-after.sh). Writes
# profile.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
for theta in 1 0.5; do
  for t_end in 0.0625 2; do
    d=$(mktemp -d)
    "$here/new/nbody" run --gravity tree --theta $theta --executor cuda -n 1048576 --dt 0.0078125 --t-end $t_end --out "$d" --quiet --overwrite > "$d.log" 2>&1
    echo "theta $theta t_end $t_end rc=$? $(grep -E 'wall time|forces ' "$d.log" | tr -s ' ' | tr '\n' ';')" | tee -a "$out/profile.txt"
    rm -rf "$d" "$d.log"
  done
done
