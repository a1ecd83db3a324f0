#!/usr/bin/env bash
# The device tree's errors on the Plummer sphere and the clustered set at 2^20 against
# f64 direct summation, theta 1 and 0.75, at eps 1/256, 1/1024 and 1/4096:
# `bash clustered-eps.sh OUTDIR` beside new/nbody-tree-bench (staged as for
# before-after.sh). Writes eps.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/tree-out}
for eps in 0.00390625 0.0009765625 0.000244140625; do
  "$here/new/nbody-tree-bench" --executor cuda --device-tree 1048576 --theta 1.0,0.75 --multipole quadrupole --eps $eps 2>&1 | grep "device tree" | tee -a "$out/eps.txt"
done
