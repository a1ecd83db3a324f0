#!/usr/bin/env bash
# The command's device tree step (f32, 2^20, dt 1/128) over 8 and 256 steps, three
# rounds, with energies every step (the default here) and with one at the end only:
# `bash steps.sh OUTDIR` beside new/nbody (staged as for before-after.sh). The step is
# the wall time's slope between the two lengths. Writes steps2.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
for theta in 1 0.5; do
for round in 1 2 3; do
  for energy in step end; do
    for t_end in 0.0625 2; do
      d=$(mktemp -d)
      extra=""
      [ $energy = end ] && extra="--energy-every $t_end"
      "$here/new/nbody" run --gravity tree --theta $theta --executor cuda -n 1048576 --dt 0.0078125 --t-end $t_end $extra --out "$d" --quiet --overwrite > "$d.log" 2>&1
      echo "theta $theta round $round energy $energy t_end $t_end rc=$? $(grep 'wall time' "$d.log")" | tee -a "$out/steps2.txt"
      rm -rf "$d" "$d.log"
    done
  done
done
done
