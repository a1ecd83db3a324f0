#!/usr/bin/env bash
# NBODY6++ on libnbody_c, unchanged: takes AMUSE's NBODY6++ (the amuse-nbody6xx 2024.6.0
# sdist from PyPI), builds its standalone GPU program (`make gpu`, nbody6.gpu) with our
# library in place of its gpunb.gpu.o and gpupot.gpu.o (the CUDAOBJECTS line only, no
# source edits) and its CPU program (`make standard`), runs both on the same input (a
# Plummer model NBODY6++ generates itself from its seed, in its own input format) and
# compares them with scripts/nbody6_compare.py: the same initial energy, the same first
# KS regularizations, energy errors of the same order, the same Lagrangian radii early on.
# The library's backend is NBODY6_CHECK_EXECUTOR (default cpu: CI has no GPU). The sdist
# that cannot be downloaded fails the check: CI never passes by skipping it.
#   scripts/nbody6-check.sh [N] [T_END]      (default 2000 4)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
t_end=${2:-4}
version=2024.6.0
url=https://files.pythonhosted.org/packages/75/d1/ec002d8ac3d245b4ae9b1747299543115d65c674bb4cedd28eed11fa8552/amuse_nbody6xx-$version.tar.gz
sha256=a65a20392771a70f05fedd7b9f56d6c562968b26cdea7dfa1cce643c9b5b537e
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib=${NBODY_C_LIB_DIR:-$PWD/target/release}
NBODY_C_LIB_DIR=${NBODY_C_LIB_DIR:-} bash scripts/build-gpunb.sh
sdist="$work/amuse_nbody6xx-$version.tar.gz"
# Python's urllib (python3 is there wherever CI runs), three tries.
fetch() {
  python3 - "$url" "$sdist" <<'PY'
import sys, time, urllib.request
for attempt in range(3):
    try:
        urllib.request.urlretrieve(sys.argv[1], sys.argv[2])
        break
    except OSError as e:
        print(f"download failed ({e}); {'retrying' if attempt < 2 else 'giving up'}", file=sys.stderr)
        time.sleep(5)
else:
    sys.exit(1)
PY
}
if ! fetch || ! echo "$sha256  $sdist" | sha256sum -c --quiet; then
  echo "NBODY6++ check FAILED: the amuse-nbody6xx $version sdist could not be had from PyPI ($url)"; exit 1
fi
tar -C "$work" -xzf "$sdist"
src="$work/amuse_nbody6xx-$version/src/amuse/community/nbody6xx/src"
cp -r "$src" "$work/cpu"
cp -r "$src" "$work/gpu"
# The two programs build side by side (each make is serial inside).
make -C "$work/cpu" standard > "$work/cpu.log" 2>&1 &
cpu_build=$!
# The one line a user changes in the Makefile, given on make's command line instead.
make -C "$work/gpu" gpu CUDAOBJECTS="$lib/libnbody_gpunb_amuse.a $lib/libnbody_c.a" > "$work/gpu.log" 2>&1 ||
  { tail -30 "$work/gpu.log"; echo "NBODY6++ check FAILED: nbody6.gpu did not build against libnbody_c"; exit 1; }
wait "$cpu_build" || { tail -30 "$work/cpu.log"; echo "NBODY6++ check FAILED: make standard"; exit 1; }
# NBODY6++'s input: start, N and seed, step and output parameters to T_END, options (5:
# Plummer, 7: Lagrangian radii, 10: KS diagnostics), regularization, IMF, virial ratio.
cat > "$work/input" <<INPUT
1 100000.0 1.0E6 40 40
$n 1 10 4353 100 1
0.02 0.02 0.3 1.0 1.0 $t_end 2.0E-05 1.0 0.7
0 0 0 0 1 0 2 0 0 1
0 0 0 0 0 0 0 0 0 0
0 0 0 0 0 0 0 0 0 0
0 0 0 0 0 0 0 0 0 0
0 0 0 0 0 0 0 0 0 0
1.0E-04 0.01 0.2 1.0 1.0E-06 0.001
2.35 10.0 0.2 0 0 0.001 0 1.0
0.5 0.0 0.0 0.0
INPUT
mkdir -p "$work/run-cpu" "$work/run-gpu"
(cd "$work/run-cpu" && time ../cpu/nbody6 < ../input > out.txt 2> err.txt) 2> "$work/cpu.time" ||
  { tail "$work/run-cpu/out.txt" "$work/run-cpu/err.txt"; echo "NBODY6++ check FAILED: the CPU program"; exit 1; }
(cd "$work/run-gpu" && time NBODY_GPUNB_EXECUTOR=${NBODY6_CHECK_EXECUTOR:-cpu} ../gpu/nbody6.gpu < ../input > out.txt 2> err.txt) 2> "$work/gpu.time" ||
  { tail "$work/run-gpu/out.txt" "$work/run-gpu/err.txt"; echo "NBODY6++ check FAILED: the program on libnbody_c"; exit 1; }
echo "N = $n to T = $t_end: make standard $(grep real "$work/cpu.time" | cut -f2), on libnbody_c $(grep real "$work/gpu.time" | cut -f2) ($(head -1 "$work/run-gpu/err.txt"))"
if [ -n "${NBODY6_CHECK_KEEP:-}" ]; then mkdir -p "$NBODY6_CHECK_KEEP" && cp "$work/run-cpu/out.txt" "$NBODY6_CHECK_KEEP/standard.txt" && cp "$work/run-gpu/out.txt" "$NBODY6_CHECK_KEEP/libnbody_c.txt"; fi
python3 scripts/nbody6_compare.py "$work/run-cpu/out.txt" "$work/run-gpu/out.txt"
