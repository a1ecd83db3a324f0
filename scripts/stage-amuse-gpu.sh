#!/usr/bin/env bash
# Stages the AMUSE runs for the device machine (which has Python and numpy, Open MPI and
# a GPU, but no Rust, no AMUSE and no network) in .stage/amuse/:
#  - lib/: libnbody_c.so built with CUDA (and Open MPI's C++ bindings, which ph4 links);
#  - site/: AMUSE 2024.6.0 (pure Python) with ph4's Python files and its CPU and GPU
#    workers built from the amuse-ph4 sdist against that library, the nbody package
#    built with CUDA, and mpi4py wheels for the device's Python to pick from;
#  - go.sh: scripts/amuse_ph4_check.py (Ph4 GPU mode on libnbody_c against CPU mode) at
#    the sizes given, then scripts/amuse_gpu_check.py (nbody's AMUSE code on "cuda").
# Then one device call: carry [".stage/amuse"], command "bash .stage/amuse/go.sh N:T ..."
# Needs what scripts/amuse-check.sh needs, plus maturin (MATURIN, default maturin).
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-/usr}
version=2024.6.0
out=.stage/amuse
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out/lib" "$out/site" "$out/wheels"
cargo build --release -p nbody-capi --features cuda --lib
cp target/release/libnbody_c.so "$out/lib/"
cp "$(ldconfig -p | awk '/libmpi_cxx.so.40 / {print $NF; exit}')" "$out/lib/"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "amuse-framework==$version" numpy
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
(cd "$work" && "$work/venv/bin/pip" download -q --no-deps --no-binary :all: --no-build-isolation "amuse-ph4==$version")
tar -C "$work" -xzf "$work/amuse_ph4-$version.tar.gz"
code="$work/amuse_ph4-$version/src/amuse/community/ph4"
# ph4's makefile asks AMUSE (amusifier, in the environment) for its flags.
PATH="$work/venv/bin:$PATH" make -C "$code" ph4_worker ph4_worker_gpu SAPPORO_LIBS="-L$PWD/$out/lib -lnbody_c" CUDA_LIBS= BOOSTLIBS= \
  > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
# AMUSE's own Python dependencies beyond numpy (docutils), and its build configuration
# (read from the working folder on the device).
cp -r "$site/amuse" "$site"/amuse_framework-*.dist-info "$site/docutils" "$out/site/"
cp "$work/venv/share/amuse/config.mk" "$out/"
mkdir -p "$out/site/amuse/community/ph4"
cp "$code"/*.py "$code/ph4_worker" "$code/ph4_worker_gpu" "$out/site/amuse/community/ph4/"
strip "$out/site/amuse/community/ph4/ph4_worker" "$out/site/amuse/community/ph4/ph4_worker_gpu"

# The nbody package with its CUDA executors (an abi3 wheel: any Python from 3.9), linked
# against the driver's libcuda as found on the device, not a bundled copy.
(cd python && "${MATURIN:-maturin}" build -q --release --features cuda --auditwheel skip -o "$work/wheel")
python3 -m zipfile -e "$work"/wheel/nbody-*.whl "$out/site/"
for v in 310 311 312 313; do
  "$work/venv/bin/pip" download -q --no-deps --only-binary :all: --python-version "$v" \
    --platform manylinux_2_17_x86_64 --platform manylinux1_x86_64 -d "$out/wheels" mpi4py==4.1.2
done
find "$out/site" -name __pycache__ -prune -exec rm -rf {} +
cp scripts/amuse_ph4_check.py scripts/amuse_gpu_check.py scripts/amuse_compare.py "$out/"

cp scripts/gate.sh "$out/"
cat > "$out/go.sh" <<'GO'
#!/usr/bin/env bash
# bash .stage/amuse/go.sh [N:T_END ...]   (ph4's checks; default 16384:0.0625)
# Each check is a step (gate.sh): the first failure stops it; the last line is
# `N passed, N failed`.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gate.sh"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PYTHONPATH="$here/site"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NBODY_GRAPE_EXECUTOR=${NBODY_GRAPE_EXECUTOR:-cuda}
tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
wheel=$(ls "$here"/wheels/mpi4py-*-"$tag"-*.whl | head -n 1)
step "mpi4py for this Python" python3 -m zipfile -e "$wheel" "$here/site/"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv || echo "(no nvidia-smi)"
nproc; python3 --version
cd "$(mktemp -d)" && cp "$here/config.mk" .
# AMUSE prints citations; they are filtered out, and the check's own status kept.
quiet() { "$@" 2>&1 | grep -v '^\s*$' | grep -v -E 'ADS:|DOI:|cite|^\s*"AMUSE'; return "${PIPESTATUS[0]}"; }
step "nbody's AMUSE code on ${GPU_BACKEND:-cuda}" quiet python3 "$here/amuse_gpu_check.py" "${GPU_BACKEND:-cuda}"
for run in "${@:-16384:0.0625}"; do
  step "ph4 on libnbody_c, N:T = $run" quiet python3 "$here/amuse_ph4_check.py" "${run%%:*}" "${run##*:}"
done
gate_done
GO
chmod +x "$out/go.sh"
du -sh "$out"
