#!/usr/bin/env bash
# On the device machine (staged as .stage/session.sh by scripts/stage-gpu.sh): the GPU
# checks and figures of the open issues, by section; no argument runs them all.
#   tests     CUDA conformance suite and the integrator physics checks on the GPU
#   cli       nbody info / run / accel / bench with the CUDA executor
#   checkpoint  runs killed with SIGKILL and resumed, against uninterrupted ones, bit for
#             bit (tests/cli_checkpoint.rs): the device-resident leapfrog on one GPU and on
#             two lanes of it, the device-resident Hermite (shared and block steps)
#   tree      kernel-only batched rates and the tree code at N = 2^20 against direct
#   leapfrog  the device-resident leapfrog's non-force share of a step at N = 2^20
#   multi     the multi-device executor: one lane against the single-device executor,
#             every lane given in DEVICES (default 0,0: two executors on one GPU), the
#             costs and the model; nbody run --devices
#   fuzz      the cuda_entry_points fuzz target for FUZZ_SECONDS (default 540) from the
#             committed corpora; crashes land in $OUT
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
sections=${*:-tests cli tree leapfrog}
has() { [[ " $sections " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$OUT/device.txt"
echo "commit: $(cat commit)" | tee -a "$OUT/device.txt"
if has tests; then
  ./cuda-conformance --test-threads 4 > "$OUT/conformance.log" 2>&1; echo "conformance exit: $?"
  grep -vE "\.\.\. ok$" "$OUT/conformance.log" | tail -5
  ./cuda-physics --test-threads 4 > "$OUT/physics.log" 2>&1; echo "physics exit: $?"
  grep -vE "\.\.\. ok$" "$OUT/physics.log" | tail -5
fi
if has cli; then
  cd "$OUT"
  "$OLDPWD/nbody" info 2>&1 | tee cli-info.log
  "$OLDPWD/nbody" --quiet 2>&1 | tee cli-default-run.log | tail -12; echo "default run exit: ${PIPESTATUS[0]}"
  "$OLDPWD/nbody" run --quiet --n 1048576 --t-end 0.015625 --dt 0.00390625 --precision f32 --out big 2>&1 | tail -12
  "$OLDPWD/nbody" run --quiet --integrator hermite --ic figure8 --t-end 1 --out fig8 2>&1 | tail -6
  "$OLDPWD/nbody" accel --sources nbody-out/snapshot-00001.npy --out accel.npy --eps 0.015625 --executor cuda 2>&1
  "$OLDPWD/nbody" bench --sizes 1024,16384,65536 --seconds 0.3 --scalar-max 16384 --out bench 2>&1 | tee cli-bench.log
  rm -rf big nbody-out/snapshot-*.npy fig8/snapshot-*.npy
  cd - > /dev/null
fi
if has checkpoint; then
  NBODY_BIN="$PWD/nbody" NBODY_CHECKPOINT_N=${CHECKPOINT_N:-16384} \
    NBODY_CHECKPOINT_EXECUTORS=${CHECKPOINT_EXECUTORS:-cuda,cuda-mixed,cuda:0,0} \
    ./cli-checkpoint --test-threads 1 --nocapture > "$OUT/checkpoint.log" 2>&1
  echo "checkpoint exit: $?"; grep -E "resumed|panicked|test result" "$OUT/checkpoint.log"
fi
if has tree; then
  ./nbody-tree-bench --executor cuda --resident 262144 --n 262144 --tree 1048576 --theta 0.5 --leaf 64 2>&1 | tee "$OUT/tree.log"
  for leaf in 16 32 128; do
    ./nbody-tree-bench --executor cuda --n 1024 --tree 1048576 --theta 0.5 --leaf $leaf 2>&1 | grep "^tree" | tee -a "$OUT/tree.log"
  done
fi
if has multi; then
  DEVICES=${DEVICES:-0,0}
  ./nbody-multi-bench --devices "${DEVICES%%,*}" --sizes 65536,1048576 --reps 9 2>&1 | tee "$OUT/multi-one-lane.log"
  ./nbody-multi-bench --devices "${DEVICES:-0,0}" --sizes 65536,262144,1048576 --reps 5 --predict 2>&1 | tee "$OUT/multi.log"
  ./nbody-multi-bench --devices "${DEVICES:-0,0}" --sizes 65536,262144 --reps 5 --f64 2>&1 | tail -n 4 | tee -a "$OUT/multi.log"
  (cd "$OUT" && "$OLDPWD/nbody" run --quiet --executor cuda --devices "${DEVICES:-0,0}" --n 65536 --t-end 0.0625 \
    --precision f32 --out multi-run 2>&1 | tail -n 12 | tee multi-run.log; rm -f multi-run/snapshot-*.npy)
  ./nbody info 2>&1 | tail -n 6 | tee "$OUT/multi-info.log"
fi
if has leapfrog; then
  ./nbody-cuda-bench --sizes 1048576 --f32 --leapfrog 1048576 2>&1 | tee "$OUT/leapfrog.log" | grep -i "leapfrog\|device"
fi
if has fuzz; then
  # New inputs go to the first (scratch) folder; the committed corpora are read only.
  corpus=$(mktemp -d)
  ./cuda_entry_points -max_total_time="${FUZZ_SECONDS:-540}" -timeout=10 -artifact_prefix="$OUT/" "$corpus" \
    ../fuzz/corpus/entry_points ../fuzz/corpus/cpu_vs_reference > "$OUT/fuzz-cuda.log" 2>&1
  echo "cuda fuzz exit: $?"; grep -E "^Done|panicked|ERROR" "$OUT/fuzz-cuda.log" | head -5
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv | tee -a "$OUT/device.txt"
