#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
xz -d -T0 -f cuda-conformance.xz; chmod +x cuda-conformance
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee $OUT/device.txt
./cuda-conformance --test-threads 4 > $OUT/conformance.log 2>&1; echo "conformance exit $?"
grep -E "FAILED|failed|panicked|test result" $OUT/conformance.log | tail -8
