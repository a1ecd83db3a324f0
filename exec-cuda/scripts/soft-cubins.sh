#!/usr/bin/env bash
# Builds a cubin of the f32 (or f64) tiled kernels, Plummer and the soft ones, in the (256,8,4)
# and (256,4,4) configurations, with the reduce kernels of split launches, from a copy of a
# kernels folder (optionally edited by a sed expression), for soft-harness.cpp:
#   exec-cuda/scripts/soft-cubins.sh exec-cuda/kernels shipped.cubin
#   exec-cuda/scripts/soft-cubins.sh exec-cuda/kernels variant.cubin 's/old/new/'
# SOFT_CUBINS_F64=1 builds the f64 kernels of the same configurations instead.
set -euo pipefail
src=$(cd "$1" && pwd); out=$(realpath "$2")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$src"/*.cu "$src"/*.cuh "$src"/args.h "$work"/
cd "$work"
# One file, gravity.cu's kernels by job inlined, so that the edit and the lists below see
# every line.
awk '/^#include "[a-z_]+\.cuh"$/ { f = $2; gsub(/"/, "", f); while ((getline l < f) > 0) print l; close(f); next } { print }' \
  gravity.cu > whole.cu
if [ -n "${3:-}" ]; then sed -i "$3" whole.cu; fi
# Only the kernels timed: the instantiation lists of the file are dropped.
grep -vE '^(TILED_REDUCE_PM|TILED_ALL|TILED_SOFT_LADDER|TILED_REDUCE_SOFT_P|SHUFFLE_ALL|PER_PRECISION|SELF_POTENTIAL|KICK_DRIFT|COLUMNS|PROJECT|HERMITE|TREE_KERNELS)\(' whole.cu > g.cu
cat >> g.cu <<'LIST'
TILED_SOFT_PM(float, float, f32, 256, 8, 4)
TILED_PM(float, float, f32, 256, 8, 4)
TILED_SOFT_PM(float, float, f32, 256, 4, 4)
TILED_PM(float, float, f32, 256, 4, 4)
TILED_REDUCE_PM(float, float, f32)
TILED_REDUCE_SOFT_P(float, float, f32, 0)
TILED_REDUCE_SOFT_P(float, float, f32, 1)
LIST
if [ "${SOFT_CUBINS_F64:-0}" = 1 ]; then sed -i '/^TILED_/s/float, float, f32/double, double, f64/' g.cu; fi
nvcc -cubin -O3 -ftz=true -std=c++14 -gencode arch=compute_90,code=sm_90 -o "$out" g.cu
cuobjdump -res-usage "$out" | grep -A1 tiled | grep -o "Function [^:]*\|REG:[0-9]*" | paste - -
