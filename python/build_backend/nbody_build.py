"""The package's PEP 517 build backend: maturin, with the CUDA executors compiled in when
a CUDA toolkit is found, and Gadget HDF5 snapshots when libhdf5 is.

`pip install ./python` looks for nvcc ($NVCC, $CUDA_PATH/bin, /usr/local/cuda/bin, then
PATH). Found, the wheel is built with the `cuda` feature (executor="cuda" works on a
machine with a GPU); not found, it is built for the CPU alone and says so in one line
(shown by `pip install -v`; `nbody.cuda_compiled` tells afterwards). The choice can be
forced: NBODY_CUDA=1 (fail without a toolkit) or NBODY_CUDA=0 (never), or the same as
`pip install ./python --config-settings cuda=1`.

HDF5 (nbody.write_snapshot, read_snapshot, Simulation.save_snapshot) the same way:
compiled in when `pkg-config --exists hdf5` finds libhdf5 (Debian: libhdf5-dev),
NBODY_HDF5=1 / 0 or `--config-settings hdf5=1` to decide; `nbody.hdf5_compiled` tells.
"""

import os
import shlex
import shutil
import subprocess
import sys

import maturin
from maturin import (  # noqa: F401  (the hooks this backend does not change)
    build_sdist,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
)

YES = {"1", "yes", "on", "true"}
NO = {"0", "no", "off", "false"}


def find_nvcc():
    """The CUDA compiler the kernels would be built with, or None."""
    candidates = [os.environ.get("NVCC")]
    if os.environ.get("CUDA_PATH"):
        candidates.append(os.path.join(os.environ["CUDA_PATH"], "bin", "nvcc"))
    candidates += ["/usr/local/cuda/bin/nvcc", shutil.which("nvcc")]
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def _say(line):
    print(f"nbody: {line}", file=sys.stderr, flush=True)


def _choice(settings, key):
    asked = str(settings.pop(key, os.environ.get(f"NBODY_{key.upper()}", "auto"))).strip().lower()
    if asked not in YES | NO | {"auto"}:
        raise RuntimeError(f"nbody: NBODY_{key.upper()} / {key}= must be 1, 0 or auto (got {asked!r})")
    return asked


def has_hdf5():
    """Whether pkg-config finds libhdf5 (what hdf5-metno links)."""
    pkg = shutil.which("pkg-config")
    return pkg is not None and subprocess.run([pkg, "--exists", "hdf5"], check=False).returncode == 0


def _hdf5_features(settings, say):
    asked = _choice(settings, "hdf5")
    found = asked not in NO and has_hdf5()
    if asked in YES and not found:
        raise RuntimeError("nbody: HDF5 was asked for (NBODY_HDF5=1) but pkg-config finds no hdf5; install libhdf5-dev")
    if say:
        _say("with Gadget HDF5 snapshots (libhdf5 found)" if found else "without HDF5 snapshots (no libhdf5 found by pkg-config)")
    return ["--features", "hdf5"] if found else []


def _settings(config_settings, say=True):
    """maturin's settings, with `--features cuda` added when CUDA is wanted and found
    (and `hdf5` when libhdf5 is)."""
    settings = dict(config_settings or {})
    asked = _choice(settings, "cuda")
    hdf5 = _hdf5_features(settings, say)
    nvcc = None if asked in NO else find_nvcc()
    if asked in YES and nvcc is None:
        raise RuntimeError(
            "nbody: CUDA was asked for (NBODY_CUDA=1) but no nvcc was found in $NVCC, $CUDA_PATH/bin, "
            "/usr/local/cuda/bin or PATH; install the CUDA toolkit or build with NBODY_CUDA=0"
        )
    if nvcc is None:
        why = "NBODY_CUDA=0" if asked in NO else "no CUDA toolkit (nvcc) found"
        if say:
            _say(f"building the CPU executors only ({why}); executor='cuda' will be refused")
        return _with_args(settings, hdf5)
    # cust links libcuda from the toolkit's prefix (Debian's nvcc is /usr/bin/nvcc).
    os.environ.setdefault("CUDA_LIBRARY_PATH", os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    os.environ.setdefault("NVCC", nvcc)
    if say:
        _say(f"building with the CUDA executors (nvcc: {nvcc})")
    return _with_args(settings, hdf5 + ["--features", "cuda"])


def _with_args(settings, extra):
    """`settings` with `extra` appended to maturin's build arguments."""
    if not extra:
        return settings
    args = maturin.get_maturin_pep517_args(settings) + extra
    settings.pop("build-args", None)
    settings["maturin.build-args"] = shlex.join(args)
    return settings


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return maturin.build_wheel(wheel_directory, _settings(config_settings), metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return maturin.build_editable(wheel_directory, _settings(config_settings), metadata_directory)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, _settings(config_settings, say=False))
