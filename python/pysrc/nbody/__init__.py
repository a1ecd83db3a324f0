"""Direct-summation gravity on numpy arrays.

The softened Newtonian acceleration and potential of a set of particles, computed by
the same executors the Rust library has (SIMD CPU kernels on threads, a mixed-precision
CPU executor, CUDA where compiled in), and simulations driven by its integrators.

>>> import numpy as np, nbody
>>> pos = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
>>> acc, pot = nbody.accelerations(pos, np.ones(2))
>>> acc[0].tolist(), pot.tolist()
([1.0, 0.0, 0.0], [-1.0, -1.0])
"""

from ._nbody import (
    Simulation,
    __version__,
    _rust_seconds,
    backends,
    cuda_compiled,
    hdf5_compiled,
    integrators,
    softenings,
    read_snapshot,
    write_snapshot,
)
import functools as _functools
import inspect as _inspect

import numpy as _np

from . import _nbody

# DLPack's device types (dlpack.h): the host's, and CUDA's page-locked host memory.
_HOST_DEVICES = (1, 3)


def _on_host(value, name):
    """`value` as the kernels take it: numpy arrays and plain values as they are, any
    other array offering `__dlpack__` on the host viewed as a numpy array without a copy
    (PyTorch and JAX CPU arrays, CuPy's pinned host arrays); an array on a GPU is a
    ValueError naming the argument."""
    if isinstance(value, _np.ndarray) or not hasattr(value, "__dlpack__"):
        if hasattr(value, "__cuda_array_interface__") and not isinstance(value, _np.ndarray):
            raise ValueError(
                f"{name} is a GPU array (__cuda_array_interface__): GPU arrays are not taken in place; "
                "copy it to the host first"
            )
        return value
    device = value.__dlpack_device__()
    if int(device[0]) not in _HOST_DEVICES:
        raise ValueError(
            f"{name} is on DLPack device {tuple(int(d) for d in device)}, not the host: GPU arrays are not "
            "taken in place; copy it to the host first"
        )
    return _np.from_dlpack(value)


def _host_arrays(f):
    """`f` with every array argument passed through `_on_host`."""

    params = list(_inspect.signature(f).parameters)

    @_functools.wraps(f)
    def call(*args, **kwargs):
        args = tuple(_on_host(a, params[k] if k < len(params) else f"argument {k}") for k, a in enumerate(args))
        return f(*args, **{k: _on_host(v, k) for k, v in kwargs.items()})

    return call


accelerations = _host_arrays(_nbody.accelerations)
cell = _host_arrays(_nbody.cell)
density_map = _host_arrays(_nbody.density_map)
jerk = _host_arrays(_nbody.jerk)
leaves = _host_arrays(_nbody.leaves)
leaves_vjp = _host_arrays(_nbody.leaves_vjp)
tidal = _host_arrays(_nbody.tidal)
vjp = _host_arrays(_nbody.vjp)

__all__ = [
    "accelerations",
    "backends",
    "cell",
    "cuda_compiled",
    "density_map",
    "hdf5_compiled",
    "integrators",
    "softenings",
    "jerk",
    "tidal",
    "vjp",
    "leaves",
    "leaves_vjp",
    "read_snapshot",
    "Simulation",
    "write_snapshot",
    "__version__",
]
