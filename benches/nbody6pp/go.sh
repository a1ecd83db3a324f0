#!/usr/bin/env bash
# On the device: NBODY6++GPU on its own GPU library and on libnbody_c (each backend of
# EXECUTORS), each size in turn, to the same time; everything in $OUT as N_CODE_FILE.
#   bash .stage/n6pp/go.sh [SIZES] [T_END] [EXECUTORS]   (default 65536,262144 0.0625 cuda,cuda-mixed)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sizes=${1:-65536,262144}
t_end=${2:-0.0625}
executors=${3:-cuda,cuda-mixed}
out=${OUT:-/tmp/out}
mkdir -p "$out"
scratch=$(mktemp -d)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ulimit -s unlimited 2>/dev/null || ulimit -s 4000000
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_STACKSIZE=4096M
{
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc); OMP_NUM_THREADS=$OMP_NUM_THREADS"
} | tee "$out/device.txt"
for n in ${sizes//,/ }; do
  for code in upstream ${executors//,/ }; do
    run="$scratch/$n/$code"
    mkdir -p "$run"
    sed -e "s/@N@/$n/" -e "s/@T@/$t_end/g" "$here/plummer.inp.in" > "$run/input"
    program=nbody6pp-nbody
    [ "$code" = upstream ] && program=nbody6pp-upstream
    start=$(date +%s.%N)
    (cd "$run" && NBODY_GPUNB_EXECUTOR=$code "$here/$program" < input > out.txt 2> err.txt)
    rc=$?
    end=$(date +%s.%N)
    echo "$n $code rc=$rc wall $(python3 -c "print(round($end - $start, 2))") s" | tee -a "$out/times.txt"
    # The text comes back, flat (the rest stays behind).
    for f in out.txt err.txt first_regf.txt; do [ -f "$run/$f" ] && cp "$run/$f" "$out/${n}_${code}_$f"; done
  done
done
