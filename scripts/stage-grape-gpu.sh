#!/usr/bin/env bash
# Stages the GRAPE-6 cost comparison for the device machine (which has no Rust) in
# .stage/g6/: the C program capi/examples/grape6_hermite.c linked against a CUDA-enabled
# libnbody_c.a, the grape6_reference example (the library's own BlockHermite on the same
# GPU, writing the initial conditions), and go.sh. Then one device call:
#   carry [".stage/g6"], command "bash .stage/g6/go.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-/usr}
cargo build --release -p nbody-capi --features cuda --lib --example grape6_reference
rm -rf .stage/g6 && mkdir -p .stage/g6
cc -O2 -std=c11 -D_DEFAULT_SOURCE -I capi/include capi/examples/grape6_hermite.c target/release/libnbody_c.a \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -lcuda -o .stage/g6/g6
cp target/release/examples/grape6_reference .stage/g6/
strip .stage/g6/g6 .stage/g6/grape6_reference
git rev-parse --short HEAD > .stage/g6/commit
cat > .stage/g6/go.sh <<'RUN'
#!/usr/bin/env bash
# On the device machine: the library's BlockHermite, then the GRAPE-6 program forces only
# (bench) and with neighbours (bench-nb), both on the device j-memory, three times at
# N = 16,384 and 65,536; the two runs' final states compared; then cuda-mixed.
set -uo pipefail
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
echo "commit: $(cat commit)"
compare() {
  python3 -c '
import sys, numpy as np
a, b = (np.loadtxt(f, skiprows=1) for f in sys.argv[1:3])
print("final states, forces only vs with neighbours: max |difference| %.3e (largest coordinate %.3e)" % (abs(a - b).max(), abs(b).max()))
' "$1" "$2"
}
# The device path with neighbours against the program's own double loop (every nearest
# neighbour and list checked), then the timings.
./grape6_reference 4096 0.125 /tmp/ics-4096.txt cuda > /dev/null
NBODY_GRAPE_EXECUTOR=cuda ./g6 /tmp/ics-4096.txt 0.02 0.0625 0.015625 0.125 | head -1
for n in 16384 65536; do
  for k in 1 2 3; do
    ./grape6_reference $n 0.125 /tmp/ics-$n.txt cuda
    NBODY_GRAPE_EXECUTOR=cuda ./g6 /tmp/ics-$n.txt 0.02 0.0625 0.015625 0.125 bench > /tmp/dev-$n.txt
    head -1 /tmp/dev-$n.txt
    NBODY_GRAPE_EXECUTOR=cuda ./g6 /tmp/ics-$n.txt 0.02 0.0625 0.015625 0.125 bench-nb > /tmp/host-$n.txt
    head -1 /tmp/host-$n.txt
  done
  compare /tmp/dev-$n.txt /tmp/host-$n.txt
  NBODY_GRAPE_EXECUTOR=cuda-mixed ./g6 /tmp/ics-$n.txt 0.02 0.0625 0.015625 0.125 bench > /tmp/mixed-$n.txt
  echo "cuda-mixed: $(head -1 /tmp/mixed-$n.txt)"
  compare /tmp/mixed-$n.txt /tmp/host-$n.txt
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
RUN
chmod +x .stage/g6/go.sh
du -sh .stage/g6
