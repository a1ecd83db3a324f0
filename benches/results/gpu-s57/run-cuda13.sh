#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
nvcc --version | tail -1 | tee $OUT/device.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee -a $OUT/device.txt
./soft-cubins.sh kold O.cubin > $OUT/old-regs.txt 2>&1 &
./soft-cubins.sh knew N.cubin > $OUT/new-regs.txt 2>&1 &
wait
cat $OUT/old-regs.txt $OUT/new-regs.txt
cuobjdump -sass N.cubin | grep -c VIMNMX3
K=nbody_tiled_f32_b256_tp8_ni4
for r in 1 2; do
./soft-harness 65536 O.cubin:${K}_p0_m0:u:10 O.cubin:${K}_p0_m1_s2:u:10 N.cubin:${K}_p0_m1_s2:u:10 O.cubin:${K}_p0_m1_s2:w:10 N.cubin:${K}_p0_m1_s2:w:10 O.cubin:${K}_p0_m1_s3:s:10 N.cubin:${K}_p0_m1_s3:s:10 O.cubin:${K}_p1_m1_s3:s:10 N.cubin:${K}_p1_m1_s3:s:10 2>&1 | tee -a $OUT/ka.log | sed 's/  */ /g'
done
cp O.cubin N.cubin $OUT/
