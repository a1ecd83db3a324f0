#!/usr/bin/env bash
# NBODY6's regular-force library over libnbody_c: one small archive per code, each
# defining that code's Fortran names (capi/gpunb/<code>.c) over libnbody_c's
# nbody_gpunb_* functions, and NBODY6++GPU's irregular-force names (irr.c over
# nbody_irr_*). Builds libnbody_c too (release; pass --features cuda for the GPU), then
# target/release/libnbody_gpunb_{nbody6pp,amuse,nbody6}.a and libnbody_irr_nbody6pp.a.
#   scripts/build-gpunb.sh [cargo flags]
# Link a code with its archive, then libnbody_c.a (docs/embedding.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NBODY_C_LIB_DIR:-}" ]; then cargo build --release -p nbody-capi "$@"; fi
out=${NBODY_C_LIB_DIR:-$PWD/target/release}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for code in nbody6pp amuse nbody6 irr; do
  # irr.c shares each block out over the code's OpenMP threads (NBODY6++ links with OpenMP).
  openmp=; [ "$code" = irr ] && openmp=-fopenmp
  ${CC:-cc} -O2 -fPIC -Wall -Wextra -Werror $openmp -Icapi/include -Icapi/gpunb -c "capi/gpunb/$code.c" -o "$work/$code.o"
done
for code in nbody6pp amuse nbody6; do
  rm -f "$out/libnbody_gpunb_$code.a"
  ar rcs "$out/libnbody_gpunb_$code.a" "$work/$code.o"
done
rm -f "$out/libnbody_irr_nbody6pp.a"
ar rcs "$out/libnbody_irr_nbody6pp.a" "$work/irr.o"
echo "built $out/libnbody_gpunb_{nbody6pp,amuse,nbody6}.a and libnbody_irr_nbody6pp.a beside libnbody_c.a"
