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
#   python    the Python package's tests and its GPU-array tests on the GPU (a CUDA
#             wheel staged by scripts/stage-gpu.sh as wheel/, installed into a fresh virtual environment)
# Each check is a step (scripts/gate.sh): the first failure stops the run, and the last
# line is always `N passed, N failed`, the exit status non-zero when anything failed.
cd "$(dirname "$0")"
. ./gate.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
sections=${*:-tests cli tree leapfrog python}
has() { [[ " $sections " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$OUT/device.txt"
echo "commit: $(cat commit)" | tee -a "$OUT/device.txt"
# A test binary, its log in $OUT; prints the mutation table, failures and the result.
tests() {
  local bin=$1 log=$2
  shift 2
  "./$bin" "$@" > "$OUT/$log" 2>&1
  local rc=$?
  grep -E "^mutants |SURVIVED|FAILED|panicked|^test result" "$OUT/$log" | tail -n 40
  return $rc
}
if has tests; then
  step "CUDA conformance (suite, mutants, GPU checks)" tests cuda-conformance conformance.log --test-threads 4
  step "integrator physics on the GPU" tests cuda-physics physics.log --test-threads 4
fi
if has cli; then
  cd "$OUT"
  bin=$OLDPWD/nbody
  step "nbody info" bash -c "'$bin' info 2>&1 | tee cli-info.log"
  step "nbody default run" bash -c "'$bin' --quiet 2>&1 | tee cli-default-run.log | tail -12"
  step "nbody run 2^20 f32" bash -c "'$bin' run --quiet --n 1048576 --t-end 0.015625 --dt 0.00390625 --precision f32 --out big 2>&1 | tail -12"
  step "nbody run hermite figure8" bash -c "'$bin' run --quiet --integrator hermite --ic figure8 --t-end 1 --out fig8 2>&1 | tail -6"
  step "nbody accel" "$bin" accel --sources nbody-out/snapshot-00001.npy --out accel.npy --eps 0.015625 --executor cuda
  step "nbody bench" bash -c "'$bin' bench --sizes 1024,16384,65536 --seconds 0.3 --scalar-max 16384 --out bench 2>&1 | tee cli-bench.log"
  rm -rf big nbody-out/snapshot-*.npy fig8/snapshot-*.npy
  cd - > /dev/null
fi
if has checkpoint; then
  NBODY_BIN="$PWD/nbody" NBODY_CHECKPOINT_N=${CHECKPOINT_N:-16384} \
    NBODY_CHECKPOINT_EXECUTORS=${CHECKPOINT_EXECUTORS:-cuda,cuda-mixed,cuda:0,0} \
    step "killed and resumed runs, bit for bit" tests cli-checkpoint checkpoint.log --test-threads 1 --nocapture
fi
if has tree; then
  step "tree bench, leaf 64" bash -c './nbody-tree-bench --executor cuda --resident 262144 --n 262144 --tree 1048576 --theta 0.5 --leaf 64 2>&1 | tee "$OUT/tree.log"'
  for leaf in 16 32 128; do
    step "tree bench, leaf $leaf" bash -c "./nbody-tree-bench --executor cuda --n 1024 --tree 1048576 --theta 0.5 --leaf $leaf 2>&1 | grep '^tree' | tee -a '$OUT/tree.log'"
  done
fi
if has multi; then
  DEVICES=${DEVICES:-0,0}
  export DEVICES OUT
  step "multi bench, one lane" bash -c './nbody-multi-bench --devices "${DEVICES%%,*}" --sizes 65536,1048576 --reps 9 2>&1 | tee "$OUT/multi-one-lane.log"'
  step "multi bench, every lane" bash -c './nbody-multi-bench --devices "$DEVICES" --sizes 65536,262144,1048576 --reps 5 --predict 2>&1 | tee "$OUT/multi.log"'
  step "multi bench f64" bash -c './nbody-multi-bench --devices "$DEVICES" --sizes 65536,262144 --reps 5 --f64 2>&1 | tail -n 4 | tee -a "$OUT/multi.log"'
  step "nbody run --devices" bash -c 'bin=$PWD/nbody; cd "$OUT" && "$bin" run --quiet --executor cuda --devices "$DEVICES" --n 65536 --t-end 0.0625 --precision f32 --out multi-run 2>&1 | tail -n 12 | tee multi-run.log && rm -f multi-run/snapshot-*.npy'
  step "nbody info (devices)" bash -c './nbody info 2>&1 | tail -n 6 | tee "$OUT/multi-info.log"' 
fi
if has leapfrog; then
  step "device leapfrog share" bash -c './nbody-cuda-bench --sizes 1048576 --f32 --leapfrog 1048576 2>&1 | tee "$OUT/leapfrog.log" | grep -i "leapfrog\|device"' 
fi
if has fuzz; then
  # New inputs go to the first (scratch) folder; the committed corpora are read only.
  corpus=$(mktemp -d)
  fuzz() {
    ./cuda_entry_points -max_total_time="${FUZZ_SECONDS:-540}" -timeout=10 -artifact_prefix="$OUT/" "$corpus" \
      ../fuzz/corpus/entry_points ../fuzz/corpus/cpu_vs_reference > "$OUT/fuzz-cuda.log" 2>&1
    local rc=$?
    grep -E "^Done|panicked|ERROR" "$OUT/fuzz-cuda.log" | head -5
    return $rc
  }
  step "CUDA fuzz target" fuzz
fi
if has python; then
  # The staged CUDA wheel (pylib/, with pytest): the package's tests and the GPU-array
  # tests, whose GPU tests run here, then the GPU checks of gpu_check.py; each fails the run on any failure.
  pytests() { PYTHONPATH=$PWD/pylib python3 -m pytest -q -p no:cacheprovider python-tests/test_nbody.py python-tests/test_gpu_arrays.py 2>&1 | tee "$OUT/pytest.log" | tail -n 15; }
  step "Python tests with the CUDA wheel" pytests
  step "Python on the GPU (device tree, f64 at 1e-13, columns)" bash -c 'python3 gpu_check.py 2>&1 | tee "$OUT/python-gpu.log"'
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv | tee -a "$OUT/device.txt"
gate_done
