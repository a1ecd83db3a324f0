#!/usr/bin/env bash
# The same at theta 1 for Plummer spheres of seeds 1 to 4 (nbody-tree-bench's is seed
# 2): `bash force-time-by-seed.sh OUTDIR` beside new/nbody. Writes seeds.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
for seed in 1 2 3 4; do
  for t_end in 0.0625 2; do
    d=$(mktemp -d)
    "$here/new/nbody" run --gravity tree --theta 1 --executor cuda -n 1048576 --seed $seed --dt 0.0078125 --t-end $t_end --out "$d" --quiet --overwrite > "$d.log" 2>&1
    echo "seed $seed t_end $t_end rc=$? $(grep -E 'wall time|forces ' "$d.log" | tr -s ' ' | tr '\n' ';')" | tee -a "$out/seeds.txt"
    rm -rf "$d" "$d.log"
  done
done
