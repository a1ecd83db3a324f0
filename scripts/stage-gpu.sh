#!/usr/bin/env bash
# Builds everything a GPU run needs here (the device machine has no Rust) and stages it
# in .stage/ (git-ignored): the CUDA test binaries (conformance, physics), the nbody
# command built with CUDA, the CUDA benchmark, the leaf-kernel/tree benchmark, run.sh
# (device facts, conformance, bench) and session.sh (everything an issue's GPU checks
# need, in sections). One device call each:
#   carry [".stage"], command "bash .stage/run.sh [bench args]"
#   carry [".stage"], command "bash .stage/session.sh [tests] [cli] [tree] [leapfrog] [python]"
# STAGE_PYTHON=0 leaves out the Python wheel (session.sh python needs it).
set -euo pipefail
cd "$(dirname "$0")/.."
NBODY_COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)"
export NBODY_COMMIT
# One nvcc compilation for the release build and the wheel's (exec-cuda/build.rs).
export NBODY_NVCC_CACHE=${NBODY_NVCC_CACHE:-$PWD/target/nvcc-cache}
rm -rf .stage && mkdir -p .stage
# Count SASS instructions per interaction in the fatbin just built; the crate embeds the
# counts (the launch heuristic and the bench's issue-bound ceiling use them).
cargo build --release -p nbody-cuda
fatbin=$(ls -t target/release/build/nbody-cuda-*/out/gravity.fatbin | head -n 1)
python3 exec-cuda/scripts/sass_per_interaction.py "$fatbin" | sort > exec-cuda/sass-counts.txt
cargo build --release --features cuda,mpi --bin nbody-cuda-bench --bin nbody-tree-bench --bin nbody --bin nbody-mpi-bench \
  --bin nbody-multi-bench
cp target/release/nbody-cuda-bench target/release/nbody-tree-bench target/release/nbody target/release/nbody-mpi-bench \
  target/release/nbody-multi-bench .stage/
cargo test --release -p nbody-cuda --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("conformance", "physics"):
        shutil.copy(m["executable"], ".stage/cuda-" + m["target"]["name"])
'
# The kill-and-resume checks, run against the staged command (gpu-session.sh checkpoint).
cargo test --release --features cuda --test cli_checkpoint --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cli_checkpoint":
        shutil.copy(m["executable"], ".stage/cli-checkpoint")
'
strip .stage/* 2>/dev/null || true
cp exec-cuda/scripts/sass_per_interaction.py scripts/sanitize-gpu.sh scripts/mpi-session.sh scripts/two-gpu-session.sh .stage/
cat > .stage/run.sh <<'RUN'
#!/usr/bin/env bash
# On the device machine: device facts, the conformance suite on the GPU, then the bench;
# stops at the first failure and ends with `N passed, N failed` (gate.sh).
cd "$(dirname "$0")"
. ./gate.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$OUT/device.txt"
echo "commit: $(cat commit)" | tee -a "$OUT/device.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  step "CUDA conformance" bash -c './cuda-conformance --test-threads 4 > "$OUT/conformance.log" 2>&1; rc=$?; grep -E "^mutants |SURVIVED|FAILED|^test result" "$OUT/conformance.log" | tail -n 40; exit $rc'
fi
step "CUDA bench" bash -c './nbody-cuda-bench --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log"' bench "$@"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv | tee -a "$OUT/device.txt"
gate_done
RUN
# The GPU fuzz target, when it has been built (cargo +nightly fuzz build --features cuda
# --sanitizer none cuda_entry_points, in fuzz/): run it with session.sh fuzz.
fuzz_bin=fuzz/target/x86_64-unknown-linux-gnu/release/cuda_entry_points
if [ -x "$fuzz_bin" ]; then cp "$fuzz_bin" .stage/ && strip .stage/cuda_entry_points; fi
cp scripts/gpu-session.sh .stage/session.sh
cp scripts/gate.sh .stage/
# The Python package with CUDA (session.sh python): the wheel built as CI builds it,
# unpacked into pylib/ with pytest for the device's Python (numpy is there already).
if [ "${STAGE_PYTHON:-1}" = 1 ]; then
  wheels=$(mktemp -d)
  python3 -m venv "$wheels/venv"
  "$wheels/venv/bin/pip" wheel -q --no-deps -w "$wheels" ./python
  "$wheels/venv/bin/pip" download -q --only-binary :all: -d "$wheels/deps" pytest
  mkdir -p .stage/pylib
  for w in "$wheels"/nbody-*.whl "$wheels"/deps/*.whl; do
    case "$w" in *numpy*) continue ;; esac
    python3 -m zipfile -e "$w" .stage/pylib/
  done
  cp python/gpu_check.py .stage/
  cp -r python/tests .stage/python-tests
  rm -rf "$wheels"
fi
echo "$NBODY_COMMIT" > .stage/commit
chmod +x .stage/run.sh
ls -la .stage
