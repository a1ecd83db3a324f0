#!/usr/bin/env bash
# Builds everything a GPU run needs here (the device machine has no Rust) and stages it
# in .stage/ (git-ignored): the CUDA test binaries (conformance, physics), the nbody
# command built with CUDA, the CUDA benchmark, the leaf-kernel/tree benchmark, run.sh
# (device facts, conformance, bench) and session.sh (everything an issue's GPU checks
# need, in sections). One device call each:
#   carry [".stage"], command "bash .stage/run.sh [bench args]"
#   carry [".stage"], command "bash .stage/session.sh [tests] [cli] [tree] [leapfrog]"
set -euo pipefail
cd "$(dirname "$0")/.."
NBODY_COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)"
export NBODY_COMMIT
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
# On the device machine: device facts, the conformance suite on the GPU, then the bench.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$OUT/device.txt"
echo "commit: $(cat commit)" | tee -a "$OUT/device.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ./cuda-conformance --test-threads 4 2>&1 | tee "$OUT/conformance.log" | grep -vE "\.\.\. ok$"
  echo "conformance exit: ${PIPESTATUS[0]}"
fi
./nbody-cuda-bench --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv | tee -a "$OUT/device.txt"
RUN
# The GPU fuzz target, when it has been built (cargo +nightly fuzz build --features cuda
# --sanitizer none cuda_entry_points, in fuzz/): run it with session.sh fuzz.
fuzz_bin=fuzz/target/x86_64-unknown-linux-gnu/release/cuda_entry_points
if [ -x "$fuzz_bin" ]; then cp "$fuzz_bin" .stage/ && strip .stage/cuda_entry_points; fi
cp scripts/gpu-session.sh .stage/session.sh
echo "$NBODY_COMMIT" > .stage/commit
chmod +x .stage/run.sh
ls -la .stage
