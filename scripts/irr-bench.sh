#!/usr/bin/env bash
# NBODY6++GPU's irregular-force library against ours on this CPU, by hand (upstream is on
# GitHub, not on a package registry): benches/nbody6pp/irr_bench.c linked with upstream's
# irr.avx.cpp (built as its Makefile builds it) and with libnbody_irr_nbody6pp.a, each
# size and thread count run REPS times in turn; then NBODY6++'s CPU program
# (./configure --disable-mpi --disable-gpu --enable-simd=avx) built twice, with its
# irr.avx.o or with our archive in AVX_OBJECTS, on the same Plummer model.
#   UPSTREAM=/path/to/Nbody6PPGPU-beijing scripts/irr-bench.sh OUTDIR [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${UPSTREAM:?set UPSTREAM to an NBODY6++GPU checkout (nbody6ppgpu/Nbody6PPGPU-beijing)}"
out=${1:?OUTDIR}
reps=${2:-5}
mkdir -p "$out"
cargo build --release -p nbody-capi
NBODY_C_LIB_DIR=$PWD/target/release scripts/build-gpunb.sh
lib=$PWD/target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cxxflags="-O3 -fopenmp -I../include -march=x86-64-v3 -fPIC -mcmodel=medium -mavx -D OMP"
g++ ${cxxflags//..\/include/$UPSTREAM/include} -c "$UPSTREAM/src/Main/irr.avx.cpp" -o "$work/irr.avx.o"
cc -O2 -c benches/nbody6pp/irr_bench.c -o "$work/bench.o"
g++ -fopenmp "$work/bench.o" "$work/irr.avx.o" -lm -o "$work/upstream"
cc -fopenmp "$work/bench.o" "$lib/libnbody_irr_nbody6pp.a" "$lib/libnbody_c.a" -lm -lpthread -ldl -o "$work/nbody"
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')) x $(nproc)"
  echo "commit: $(git rev-parse --short HEAD); upstream: $(git -C "$UPSTREAM" rev-parse --short HEAD 2>/dev/null || echo "$UPSTREAM")"
} | tee "$out/cpu.txt"
# N, mean neighbours asked, block size, blocks.
for case in "4096 100 128 2000" "65536 100 256 400"; do
  for threads in 1 2; do
    for rep in $(seq "$reps"); do
      for code in upstream nbody; do
        echo "$code threads $threads: $(OMP_NUM_THREADS=$threads "$work/$code" $case 2>/dev/null)"
      done
    done
  done
done | tee "$out/irr_bench.txt"
# The real program, CPU build.
for code in upstream nbody; do
  cp -r "$UPSTREAM" "$work/n6-$code"
  (cd "$work/n6-$code" && ./configure --disable-mpi --disable-gpu --enable-simd=avx --with-par=b64k > configure.log)
  objects=()
  [ "$code" = nbody ] && objects=(AVX_OBJECTS="reg.avx.o pot.avx.o $lib/libnbody_irr_nbody6pp.a $lib/libnbody_c.a")
  make -C "$work/n6-$code/build" -j2 CXXFLAGS="$cxxflags" "${objects[@]}" > "$work/$code.log" 2>&1 || { tail -20 "$work/$code.log"; exit 1; }
done
ulimit -s unlimited 2>/dev/null || true
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_STACKSIZE=1024M
for n in 4096 16384; do
  for rep in $(seq "$reps"); do
    for code in upstream nbody; do
      run="$work/run-$n-$code"
      mkdir -p "$run"
      sed -e "s/@N@/$n/" -e "s/@T@/0.125/g" benches/nbody6pp/plummer.inp.in > "$run/input"
      start=$(date +%s.%N)
      (cd "$run" && "$work/n6-$code/build/nbody6++.avx" < input > out.txt 2> err.txt)
      end=$(date +%s.%N)
      de=$(grep ADJUST "$run/out.txt" | tail -1 | grep -o 'DE *[-0-9.E+]*' | head -1 | tr -s ' ' | cut -d' ' -f2)
      irr=$(grep "Irr.F" "$run/err.txt" | tail -1)
      echo "$n $code wall $(python3 -c "print(round($end - $start, 2))") s DE $de | $irr"
      cp "$run/out.txt" "$out/n6_${n}_${code}_out.txt"
      cp "$run/err.txt" "$out/n6_${n}_${code}_err.txt"
    done
  done
done | tee "$out/nbody6pp_cpu.txt"
