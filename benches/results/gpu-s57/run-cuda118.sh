#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee $OUT/device.txt
K=nbody_tiled_f32_b256_tp8_ni4
for r in 1 2; do
./soft-harness 65536 old118.cubin:${K}_p0_m0:u:10 old118.cubin:${K}_p0_m1_s2:u:10 new118.cubin:${K}_p0_m1_s2:u:10 old118.cubin:${K}_p0_m1_s2:w:10 new118.cubin:${K}_p0_m1_s2:w:10 old118.cubin:${K}_p0_m1_s3:s:10 new118.cubin:${K}_p0_m1_s3:s:10 old118.cubin:${K}_p1_m1_s3:s:10 new118.cubin:${K}_p1_m1_s3:s:10 2>&1 | tee -a $OUT/ka118.log | sed 's/  */ /g'
done
