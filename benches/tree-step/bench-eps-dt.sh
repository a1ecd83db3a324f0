#!/usr/bin/env bash
# Where the command's step differs from the bench's: the bench over 256 steps, and the
# command with the bench's eps (1/256) and dt (1/256): `bash bench-eps-dt.sh OUTDIR`
# beside new/ (staged as for before-after.sh). Writes steps3.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
"$here/new/nbody-tree-bench" --executor cuda --device-tree 1048576 --theta 1 --multipole quadrupole --steps 256 --no-direct 2>&1 | grep leapfrog | tee -a "$out/steps3.txt"
for round in 1 2; do
  for t_end in 0.0625 1; do
    d=$(mktemp -d)
    "$here/new/nbody" run --gravity tree --theta 1 --executor cuda -n 1048576 --eps 0.00390625 --dt 0.00390625 --t-end $t_end --out "$d" --quiet --overwrite > "$d.log" 2>&1
    echo "eps and dt 1/256 round $round t_end $t_end rc=$? $(grep 'wall time' "$d.log" | tail -n 1)" | tee -a "$out/steps3.txt"
    rm -rf "$d" "$d.log"
  done
done
