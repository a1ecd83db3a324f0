#!/usr/bin/env bash
# On the device: NBODY6++GPU on its own GPU library and on libnbody_c, each size in turn
# (upstream first, then nbody), to the same time; everything under $OUT/n6pp.
#   bash .stage/n6pp/go.sh [SIZES] [T_END] [EXECUTOR]     (default 65536,262144 0.0625 cuda)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sizes=${1:-65536,262144}
t_end=${2:-0.0625}
executor=${3:-cuda}
out=${OUT:-/tmp/out}/n6pp
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_STACKSIZE=4096M
{
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc); OMP_NUM_THREADS=$OMP_NUM_THREADS"
} | tee "$out/device.txt"
for n in ${sizes//,/ }; do
  for code in upstream nbody; do
    run="$out/$n/$code"
    mkdir -p "$run"
    sed -e "s/@N@/$n/" -e "s/@T@/$t_end/g" "$here/plummer.inp.in" > "$run/input"
    start=$(date +%s.%N)
    (cd "$run" && NBODY_GPUNB_EXECUTOR=$executor "$here/nbody6pp-$code" < input > out.txt 2> err.txt)
    rc=$?
    end=$(date +%s.%N)
    echo "$n $code rc=$rc wall $(echo "$end - $start" | bc) s" | tee -a "$out/times.txt"
    # Big files stay behind; the text comes back.
    find "$run" -type f -size +20M -delete
  done
done
