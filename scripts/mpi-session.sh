#!/usr/bin/env bash
# On the device machine (staged by scripts/stage-gpu.sh as .stage/mpi-session.sh): the
# MPI figures of the distributed-executor issue. CPU executor per rank, 1 to 16 ranks,
# strong scaling at N = 2^15 and 2^17 and weak scaling at 16,384 per rank, with MPI
# costs and the model beside each point; then one rank with the CUDA executor against
# the CUDA executor alone at N = 2^20; then the 256-GPU prediction.
# Each run is a step (gate.sh): the first failure stops it; the last line is
# `N passed, N failed`.
cd "$(dirname "$0")"
. ./gate.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
  echo "commit: $(cat commit)"
  command -v mpirun; mpirun --version | head -n 1
  ldd ./nbody-mpi-bench | grep -E "mpi|not found"
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
} 2>&1 | tee "$OUT/mpi-machine.txt"
run() { mpirun --oversubscribe --bind-to core --map-by core -n "$@"; }
export OUT REPS=${REPS:-3}
export -f run
for p in ${RANKS:-1 2 4 8 16}; do
  step "$p ranks, CPU" bash -c "run $p ./nbody-mpi-bench --costs --sizes 32768,131072 --weak 16384 --reps \$REPS --alone \
    --json \"\$OUT/mpi-cpu.jsonl\" 2>&1 | tee -a \"\$OUT/mpi-cpu.log\""
done
if [ "${CUDA:-1}" = 1 ]; then
  step "1 rank, CUDA" bash -c 'run 1 ./nbody-mpi-bench --executor cuda --sizes 1048576 --reps 5 --alone 2>&1 | tee "$OUT/mpi-cuda.log"'
fi
step "256-GPU prediction" bash -c './nbody-mpi-bench --predict 2>&1 | tee "$OUT/mpi-predict.log"'
step "nbody info under 4 ranks" bash -c 'run 4 ./nbody info 2>&1 | tail -n 3 | tee "$OUT/mpi-info.log"'
gate_done
