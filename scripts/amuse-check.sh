#!/usr/bin/env bash
# nbody in AMUSE, in a fresh virtual environment with AMUSE 2024.6.0 from PyPI:
#  1. AMUSE's ph4 on libnbody_c, unchanged: builds ph4's GPU worker (src/libph4gpu.a,
#     whose grape.cc defines the GRAPE-6 C names over the Fortran ones) from the
#     amuse-ph4 sdist with SAPPORO_LIBS naming libnbody_c, and its CPU worker, and runs
#     scripts/amuse_ph4_check.py: Ph4(mode="gpu") (libnbody_c's executor:
#     NBODY_GRAPE_EXECUTOR, the CPU one without a GPU) against Ph4(mode="cpu").
#  2. nbody's own AMUSE code (nbody.amuse, from the Python package: NBODY_WHEEL names a
#     built wheel, else ./python is built) through python/tests/test_amuse.py, beside
#     AMUSE's ph4 and Hermite (amuse-hermite), with a Bridge and stopping conditions.
# Needs Open MPI's mpicxx (scripts/install-mpi.sh). AMUSE or the ph4 sdist that cannot
# be downloaded fails the check: CI never passes by skipping it.
#   scripts/amuse-check.sh [N] [T_END]        (ph4's check; default 1024 1)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1024}
t_end=${2:-1}
version=2024.6.0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib=${NBODY_C_LIB_DIR:-$PWD/target/release}
if [ -z "${NBODY_C_LIB_DIR:-}" ]; then cargo build --release -p nbody-capi; fi
python3 -m venv "$work/venv"
if ! "$work/venv/bin/pip" install -q "amuse-framework==$version" numpy mpi4py pytest; then
  echo "AMUSE checks FAILED: amuse-framework $version could not be installed from PyPI"; exit 1
fi
if ! (cd "$work" && "$work/venv/bin/pip" download -q --no-deps --no-binary :all: --no-build-isolation \
  "amuse-ph4==$version" > "$work/download.log" 2>&1 || [ -f "amuse_ph4-$version.tar.gz" ]); then
  echo "AMUSE checks FAILED: the amuse-ph4 $version sdist could not be downloaded"; exit 1
fi
if [ ! -f "$work/amuse_ph4-$version.tar.gz" ]; then
  echo "AMUSE checks FAILED: the amuse-ph4 $version sdist could not be downloaded"; exit 1
fi
tar -C "$work" -xzf "$work/amuse_ph4-$version.tar.gz"
code="$work/amuse_ph4-$version/src/amuse/community/ph4"
export PATH="$work/venv/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The shared library: the program's own C-name wrappers take precedence over the
# library's C names (a static archive would define them twice).
make -C "$code" ph4_worker ph4_worker_gpu SAPPORO_LIBS="-L$lib -lnbody_c -Wl,-rpath,$lib" CUDA_LIBS= BOOSTLIBS= \
  > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
# (Not by importing amuse: it prints its citations at exit.)
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/amuse
mkdir -p "$site/community/ph4"
cp "$code"/*.py "$code/ph4_worker" "$code/ph4_worker_gpu" "$site/community/ph4/"
NBODY_GRAPE_EXECUTOR=${NBODY_GRAPE_EXECUTOR:-cpu} "$work/venv/bin/python" scripts/amuse_ph4_check.py "$n" "$t_end"

# AMUSE's Hermite builds its worker from source at install.
"$work/venv/bin/pip" install -q "amuse-hermite==$version" > "$work/hermite.log" 2>&1 ||
  { tail -30 "$work/hermite.log"; exit 1; }
"$work/venv/bin/pip" install -q "${NBODY_WHEEL:-./python}"
# From a folder of its own, so that the installed package is the one imported.
(cd "$work" && NBODY_REQUIRE_AMUSE=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$OLDPWD/python/tests/test_amuse.py")
# The accuracy table of docs/embedding.md, when asked for (a measurement, not a check).
if [ -n "${AMUSE_ACCURACY_TABLE:-}" ]; then
  (cd "$work" && "$work/venv/bin/python" "$OLDPWD/scripts/amuse_accuracy.py") | tee "$AMUSE_ACCURACY_TABLE"
fi
