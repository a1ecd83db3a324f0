#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
chmod +x soft-harness
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/device.txt
K=nbody_tiled_f32_b256_tp8_ni4
for r in 1 2; do
  echo "== round $r" >> $OUT/kernel-alone6.log
  ./soft-harness 65536 X.cubin:${K}_p0_m0:u:10 O.cubin:${K}_p0_m0:u:10 Y.cubin:${K}_p0_m0:u:10 O.cubin:${K}_p1_m0:u:10 X.cubin:${K}_p1_m0:u:10 X.cubin:${K}_p0_m1_s3:s:10 O.cubin:${K}_p0_m1_s3:s:10 O.cubin:${K}_p0_m1_s2:u:10 X.cubin:${K}_p0_m1_s2:u:10 >> $OUT/kernel-alone6.log 2>&1
  SORT=1 ./soft-harness 65536 X.cubin:${K}_p0_m0:u:10 O.cubin:${K}_p0_m0:u:10 >> $OUT/kernel-alone6.log 2>&1
done
sed 's/  */ /g' $OUT/kernel-alone6.log
