#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
chmod +x soft-harness
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee $OUT/device.txt
K=nbody_tiled_f32_b256_tp8_ni4; D=nbody_tiled_f64_b256_tp8_ni4
for r in 1 2; do
  echo "== f32 round $r" >> $OUT/kernel-alone2.log
  ./soft-harness 65536 O.cubin:${K}_p0_m0:u:10 O.cubin:${K}_p0_m0_s1:p:16 N.cubin:${K}_p0_m0_s1:p:16 V.cubin:${K}_p0_m0_s1:p:16 V3.cubin:${K}_p0_m0_s1:p:16 V3.cubin:${K}_p0_m0_s1:p:10 O.cubin:${K}_p1_m0:u:10 V.cubin:${K}_p1_m0_s1:p:16 V3.cubin:${K}_p1_m0_s1:p:10 O.cubin:${K}_p0_m1_s1:p:16 V.cubin:${K}_p0_m1_s1:p:16 V3.cubin:${K}_p0_m1_s1:p:10 >> $OUT/kernel-alone2.log 2>&1
  echo "== f64 round $r" >> $OUT/kernel-alone2.log
  ./soft-harness 65536 OD.cubin:${D}_p0_m0:u:16 OD.cubin:${D}_p0_m0_s1:p:16 ND.cubin:${D}_p0_m0_s1:p:16 VD.cubin:${D}_p0_m0_s1:p:16 VD.cubin:${D}_p1_m0_s1:p:16 >> $OUT/kernel-alone2.log 2>&1
done
sed 's/  */ /g' $OUT/kernel-alone2.log
nvidia-smi --query-gpu=clocks.sm --format=csv | tee -a $OUT/device.txt
