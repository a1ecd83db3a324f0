#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
for f in *.xz; do [ -e "$f" ] && xz -d -T0 -f "$f"; done
chmod +x nbody nbody-base cuda-conformance soft-harness
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee $OUT/device.txt
cat commit | tee -a $OUT/device.txt
./cuda-conformance --test-threads 4 > $OUT/conformance.log 2>&1; echo "conformance exit $?"
grep -E "FAILED|failed|panicked|test result" $OUT/conformance.log | tail -8
for r in 1 2 3 4; do
  for b in nbody-base nbody; do
    echo "== round $r $b" >> $OUT/bench.log
    ./$b bench --sizes 65536 --kernels 65536 --out /tmp/bo-$b 2>&1 | grep -E "^ *65536 [a-z-]+ +cuda|cuda f(32|64) [a-z-]+:" >> $OUT/bench.log
  done
done
awk '/== round/{b=$4} /Plummer pair rate/{gsub(":","",$3); f[b" "$2" "$3]=f[b" "$2" "$3]" "$4} END{for (k in f) print k, f[k]}' $OUT/bench.log | sort
awk '/== round/{b=$4} /cuda +f(32|64)/{k=b" "$2" "$4; v[k]=v[k]" "$5} END{for (k in v) print k, v[k]}' $OUT/bench.log | sort
nvidia-smi --query-gpu=clocks.sm --format=csv | tee -a $OUT/device.txt
K=nbody_tiled_f32_b256_tp8_ni4
./soft-harness 65536 Z.cubin:${K}_p0_m0:u:10 Z.cubin:${K}_p0_m1_s2:u:10 A.cubin:${K}_p0_m1_s2:u:10 Z.cubin:${K}_p0_m1_s3:s:10 A.cubin:${K}_p0_m1_s3:s:10 2>&1 | tee $OUT/ka4.log | sed 's/  */ /g'
