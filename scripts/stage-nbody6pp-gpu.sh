#!/usr/bin/env bash
# Stages NBODY6++GPU against its own GPU library and against libnbody_c for the device
# machine (which has no Rust and no Fortran compiler) in .stage/n6pp: a measurement, not
# part of CI (NBODY6++GPU is on GitHub, not on a package registry).
#   UPSTREAM=/path/to/Nbody6PPGPU-beijing scripts/stage-nbody6pp-gpu.sh
#   then carry [".stage/n6pp"], command "bash .stage/n6pp/go.sh SIZES T_END"
# Both programs come from one configure (--disable-mpi --enable-simd=avx --with-par=b256k,
# CUDA 11.8 here, sm_90) and differ in the link line only: upstream's gpunb.velocity.o and
# gpupot.gpu.o, or CUDA_OBJECTS naming libnbody_gpunb_nbody6pp.a and libnbody_c.a (-lcuda
# added). Both link the CUDA runtime statically (the device has another CUDA version) and
# wrap gpunb_regf_ with benches/nbody6pp/first_regf.c to write the first regular block.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${UPSTREAM:?set UPSTREAM to an NBODY6++GPU checkout (nbody6ppgpu/Nbody6PPGPU-beijing)}"
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-/usr}
cargo build --release -p nbody-capi --features cuda --lib
NBODY_C_LIB_DIR=$PWD/target/release scripts/build-gpunb.sh
lib=$PWD/target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cudart" && ln -s /usr/lib/x86_64-linux-gnu/libcudart_static.a "$work/cudart/libcudart.a"
cc -O2 -c benches/nbody6pp/first_regf.c -o "$work/first_regf.o"
stage=.stage/n6pp
rm -rf "$stage" && mkdir -p "$stage/lib"
for code in upstream nbody; do
  cp -r "$UPSTREAM" "$work/$code"
  (cd "$work/$code" && ./configure --disable-mpi --enable-simd=avx --with-par=b256k --with-cuda=/usr > configure.log)
  flags=(CXXFLAGS="-O3 -fopenmp -I../include -march=x86-64-v3 -fPIC -mcmodel=medium -mavx -D OMP"
    CUFLAGS="-O3 -I ../extra_inc/cuda -arch=sm_90")
  link="-o \$(RESULT) -L$work/cudart -static-libgfortran -Wl,--wrap=gpunb_regf_ $work/first_regf.o"
  if [ "$code" = nbody ]; then
    flags+=(CUDA_OBJECTS="$lib/libnbody_gpunb_nbody6pp.a $lib/libnbody_c.a" LDFLAGS="$link -Wl,--no-as-needed -lcuda")
  else
    flags+=(LDFLAGS="$link")
  fi
  make -C "$work/$code/build" -j2 "${flags[@]}" > "$work/$code.log" 2>&1 || { tail -20 "$work/$code.log"; exit 1; }
  cp "$work/$code/build/nbody6++.avx.gpu" "$stage/nbody6pp-$code"
done
strip "$stage"/nbody6pp-*
# Runtime libraries the device image may lack (found first through LD_LIBRARY_PATH).
for l in libgomp.so.1 libquadmath.so.0; do cp "$(gcc -print-file-name=$l)" "$stage/lib/" 2>/dev/null || cp "/usr/lib/x86_64-linux-gnu/$l" "$stage/lib/"; done
cp benches/nbody6pp/plummer.inp.in benches/nbody6pp/go.sh "$stage/"
echo "staged $stage ($(du -sh "$stage" | cut -f1)) from $(git -C "$UPSTREAM" rev-parse --short HEAD 2>/dev/null || echo "$UPSTREAM")"
