#!/usr/bin/env bash
# On a machine with two or more GPUs (staged by scripts/stage-gpu.sh): the scaling run of
# the two-GPU issue. Device topology and peer access, each device checked against the
# f64 oracle, the multi-device executor against one GPU in the same run (host-slice
# call, resident force, resident leapfrog step with the exchange; f32 at 2^16, 2^18,
# 2^20 and f64 at 2^18) beside the model, then MPI: one rank per GPU against one rank.
# Each run is a step (gate.sh): the first failure stops it; the last line is
# `N passed, N failed`.
cd "$(dirname "$0")"
. ./gate.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
G=$(nvidia-smi -L | wc -l)
ALL=$(seq -s, 0 $((G - 1)))
export OUT G ALL
step "topology" bash -c '{
  echo "commit: $(cat commit)"
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,pci.bus_id --format=csv
  nvidia-smi topo -m
  ./nbody info | tail -n 8
} 2>&1 | tee "$OUT/topology.txt"'
for d in $(seq 0 $((G - 1))); do
  step "device $d against the oracle" bash -c "./nbody-multi-bench --devices $d --sizes 65536 --reps 3 2>&1 | tail -n 2 | tee -a '$OUT/each-device.log'"
done
step "every device, f32" bash -c './nbody-multi-bench --devices "$ALL" --sizes 65536,262144,1048576 --reps 5 --predict 2>&1 | tee "$OUT/multi-f32.log"'
step "every device, f64" bash -c './nbody-multi-bench --devices "$ALL" --sizes 262144 --reps 5 --f64 2>&1 | tail -n 3 | tee "$OUT/multi-f64.log"'
for p in 1 "$G"; do
  step "MPI, $p ranks on CUDA" bash -c "mpirun --oversubscribe -n $p ./nbody-mpi-bench --executor cuda --sizes 1048576 --reps 5 --costs 2>&1 | tee -a '$OUT/mpi-cuda.log'"
done
step "nbody run --devices all" bash -c 'bin=$PWD/nbody; cd "$OUT" && "$bin" run --quiet --executor cuda --devices all --n 262144 --t-end 0.015625 \
  --precision f32 --out run-all 2>&1 | tail -n 12 | tee run-devices-all.log && rm -f run-all/snapshot-*.npy'
gate_done
