#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/device.txt
K=nbody_tiled_f32_b256_tp8_ni4
for r in 1 2; do
args=""
for c in Z A B C; do args="$args $c.cubin:${K}_p0_m1_s2:u:10 $c.cubin:${K}_p0_m1_s3:s:10 $c.cubin:${K}_p1_m1_s2:u:16 $c.cubin:${K}_p1_m1_s3:s:16"; done
./soft-harness 65536 Z.cubin:${K}_p0_m0:u:10 $args
done 2>&1 | tee $OUT/ka3.log | sed 's/  */ /g'
