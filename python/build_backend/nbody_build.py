"""The package's PEP 517 build backend: maturin, with the CUDA executors compiled in when
a CUDA toolkit is found.

`pip install ./python` looks for nvcc ($NVCC, $CUDA_PATH/bin, /usr/local/cuda/bin, then
PATH). Found, the wheel is built with the `cuda` feature (executor="cuda" works on a
machine with a GPU); not found, it is built for the CPU alone and says so in one line
(shown by `pip install -v`; `nbody.cuda_compiled` tells afterwards). The choice can be
forced: NBODY_CUDA=1 (fail without a toolkit) or NBODY_CUDA=0 (never), or the same as
`pip install ./python --config-settings cuda=1`.
"""

import os
import shlex
import shutil
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


def _settings(config_settings, say=True):
    """maturin's settings, with `--features cuda` added when CUDA is wanted and found."""
    settings = dict(config_settings or {})
    asked = str(settings.pop("cuda", os.environ.get("NBODY_CUDA", "auto"))).strip().lower()
    if asked not in YES | NO | {"auto"}:
        raise RuntimeError(f"nbody: NBODY_CUDA / cuda= must be 1, 0 or auto (got {asked!r})")
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
        return settings
    # cust links libcuda from the toolkit's prefix (Debian's nvcc is /usr/bin/nvcc).
    os.environ.setdefault("CUDA_LIBRARY_PATH", os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    os.environ.setdefault("NVCC", nvcc)
    args = maturin.get_maturin_pep517_args(settings) + ["--features", "cuda"]
    settings.pop("build-args", None)
    settings["maturin.build-args"] = shlex.join(args)
    if say:
        _say(f"building with the CUDA executors (nvcc: {nvcc})")
    return settings


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return maturin.build_wheel(wheel_directory, _settings(config_settings), metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return maturin.build_editable(wheel_directory, _settings(config_settings), metadata_directory)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, _settings(config_settings, say=False))
