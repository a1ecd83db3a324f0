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
    accelerations,
    backends,
    cell,
    cuda_compiled,
    density_map,
    hdf5_compiled,
    integrators,
    softenings,
    jerk,
    tidal,
    vjp,
    leaves,
    read_snapshot,
    write_snapshot,
)

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
    "read_snapshot",
    "Simulation",
    "write_snapshot",
    "__version__",
]
