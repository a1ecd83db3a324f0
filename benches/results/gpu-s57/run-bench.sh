#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")"
for f in *.xz; do xz -d -T0 -f "$f"; done
chmod +x nbody nbody-s56
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee $OUT/device.txt
cat commit | tee -a $OUT/device.txt
python3 check.py make 16384
for s in each one; do
  e=""; [ $s = one ] && e="--eps 0.0078125"
  ./nbody accel --sources $s.npy --out ref-$s.npy --executor reference --softening spline $e --precision f64 > /dev/null
  for b in nbody nbody-s56; do
    ./$b accel --sources $s.npy --out $b-$s.npy --executor cuda --softening spline $e --precision f32 | tee -a $OUT/check.log
    python3 check.py cmp ref-$s.npy $b-$s.npy | tee -a $OUT/check.log
  done
  cmp nbody-$s.npy nbody-s56-$s.npy && echo "$s: ptxas 12.9 build and 11.8 build give the same bytes" | tee -a $OUT/check.log
done
for r in 1 2 3; do
  echo "== round $r" >> $OUT/bench.log
  ./nbody bench --sizes 65536 --kernels 65536 --out /tmp/bo-$r 2>&1 | grep -E "^ *65536 [a-z-]+ +cuda|cuda f(32|64) [a-z-]+:" >> $OUT/bench.log
done
grep "Plummer pair rate" $OUT/bench.log | sort | uniq -c
nvidia-smi --query-gpu=clocks.sm --format=csv | tee -a $OUT/device.txt
