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

# DLPack's device types (dlpack.h): the host's, and CUDA's page-locked host memory; CUDA
# device and managed memory.
_HOST_DEVICES = (1, 3)
_GPU_DEVICES = (2, 13)


def _on_gpu(value):
    """Whether `value` is an array on a GPU: a DLPack export of CUDA memory, or the CUDA
    array interface (numba)."""
    if value is None or isinstance(value, (_np.ndarray, int, float, str)):
        return False
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        try:
            return int(device()[0]) in _GPU_DEVICES
        except Exception:
            return False
    return hasattr(value, "__cuda_array_interface__")


def _on_host(value, name):
    """`value` as the kernels take it: numpy arrays and plain values as they are, any
    other array offering `__dlpack__` on the host viewed as a numpy array without a copy
    (PyTorch and JAX CPU arrays, CuPy's pinned host arrays); an array on a GPU is a
    ValueError naming the argument."""
    if isinstance(value, _np.ndarray) or not hasattr(value, "__dlpack__"):
        if hasattr(value, "__cuda_array_interface__") and not isinstance(value, _np.ndarray):
            raise ValueError(
                f"{name} is a GPU array (__cuda_array_interface__): only accelerations, jerk, leaves and vjp "
                "take GPU arrays in place; copy it to the host first"
            )
        return value
    device = value.__dlpack_device__()
    if int(device[0]) not in _HOST_DEVICES:
        raise ValueError(
            f"{name} is on DLPack device {tuple(int(d) for d in device)}, not the host: only accelerations, "
            "jerk, leaves and vjp take GPU arrays in place; copy it to the host first"
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


_accelerations_host = _host_arrays(_nbody.accelerations)


def _like(template, out):
    """`out` (a GpuArray) as an array of `template`'s library, without a copy: PyTorch,
    CuPy and JAX arrays in, the same kind out. numba's kernels take the GpuArray as it is
    (the CUDA array interface), and making a DeviceNDArray of it costs a few percent of a
    65,536-particle call, so numba and anything else get the GpuArray
    (`numba.cuda.as_cuda_array(a)` makes the DeviceNDArray view)."""
    library = type(template).__module__.split(".")[0]
    if library == "torch":
        import torch

        return torch.from_dlpack(out)
    if library == "cupy":
        import cupy

        return cupy.from_dlpack(out)
    if library in ("jax", "jaxlib"):
        import jax.numpy as jnp

        return jnp.from_dlpack(out)
    return out


def _outputs(out):
    """`out` as the extension takes it: None, or a tuple of the caller's GPU arrays."""
    if out is None:
        return None
    if not isinstance(out, (tuple, list)):
        raise ValueError("out must be a tuple of GPU arrays, in the order the call returns its results")
    return tuple(out)


def _gpu_settings(eps, threads):
    """A GPU call's softening length (one number; 0 by default), refusing what only the
    host takes (a length per particle, a thread count)."""
    if eps is not None and not isinstance(eps, (int, float)):
        raise ValueError("eps must be one number with GPU arrays (a length per particle is taken on the host)")
    if threads is not None:
        raise ValueError("threads is for CPU executors; GPU arrays run on executor 'cuda'")
    return float(eps or 0.0)


def _no_out(out):
    """Host calls return new numpy arrays: `out` is for GPU arrays."""
    if out is not None:
        raise ValueError("out is for GPU arrays (results on the host are new numpy arrays)")


def _results(template, results, out):
    """A GPU call's results: the caller's `out` arrays as given, else new arrays of the
    positions' library (`_like`)."""
    if out is not None:
        return tuple(out)
    return tuple(_like(template, r) for r in results)


def _all_on_gpu(names, arrays):
    """Whether the call's arrays are GPU arrays: all of them (None left out), or none;
    a mix is a ValueError naming the first host array."""
    if not any(_on_gpu(a) for a in arrays):
        return False
    for name, a in zip(names, arrays):
        if a is not None and not _on_gpu(a):
            raise ValueError(f"{name} is not on the GPU while the other arrays are: pass all of them on one GPU")
    return True


def _precision_of(array, precision):
    """The precision a GPU call runs in: the one asked for, else the array's dtype."""
    if precision is not None:
        return precision
    dtype = str(getattr(array, "dtype", "")).split(".")[-1]
    return {"float32": "f32", "float64": "f64"}.get(dtype, "f64")


def accelerations(
    positions,
    masses,
    eps=None,
    G=1.0,
    targets=None,
    potential=True,
    executor=None,
    precision=None,
    threads=None,
    softening="plummer",
    target_eps=None,
    out=None,
):
    if _all_on_gpu(("positions", "masses", "targets"), (positions, masses, targets)):
        if eps is not None and not isinstance(eps, (int, float)):
            raise ValueError("eps must be one number with GPU arrays (a length per particle is taken on the host)")
        if target_eps is not None:
            raise ValueError("target_eps is taken on the host only (a length per particle)")
        eps = _gpu_settings(eps, threads)
        results = _nbody._accelerations_device(
            positions,
            masses,
            eps,
            G,
            targets,
            potential,
            executor or "cuda",
            _precision_of(positions, precision),
            softening,
            out=_outputs(out),
        )
        return _results(positions, results, out)
    _no_out(out)
    return _accelerations_host(
        positions,
        masses,
        eps=eps,
        G=G,
        targets=targets,
        potential=potential,
        executor=executor or "cpu",
        precision=precision or "f64",
        threads=threads,
        softening=softening,
        target_eps=target_eps,
    )


accelerations.__doc__ = (_nbody.accelerations.__doc__ or "") + """

GPU arrays in place: when positions, masses (and targets) are arrays on a GPU (CuPy,
PyTorch, JAX or numba device arrays: anything offering DLPack or the CUDA array
interface), they are read where they are by the CUDA executor (executor defaults to
'cuda'; 'cuda:N' for GPU N), in their own precision (float32 or float64, C-contiguous;
precision defaults to their dtype), after their producer's stream. The accelerations and
potentials are allocated on the same GPU and returned as arrays of the positions'
library (PyTorch, CuPy, JAX; a `GpuArray` for numba and others, which numba kernels
take as it is), complete when the call returns; or written into `out`, the caller's
(acceleration, potential) GPU arrays of the right shape and dtype, writable and
overlapping no input.
"""
cell = _host_arrays(_nbody.cell)
density_map = _host_arrays(_nbody.density_map)
_jerk_host = _host_arrays(_nbody.jerk)


def jerk(positions, velocities, masses, eps=0.0, G=1.0, executor=None, precision=None, threads=None, out=None):
    if _all_on_gpu(("positions", "velocities", "masses"), (positions, velocities, masses)):
        eps = _gpu_settings(eps, threads)
        results = _nbody._jerk_device(
            positions,
            velocities,
            masses,
            eps,
            G,
            executor or "cuda",
            _precision_of(positions, precision),
            out=_outputs(out),
        )
        return _results(positions, results, out)
    _no_out(out)
    return _jerk_host(
        positions,
        velocities,
        masses,
        eps=eps,
        G=G,
        executor=executor or "cpu",
        precision=precision or "f64",
        threads=threads,
    )


jerk.__doc__ = (_nbody.jerk.__doc__ or "") + """

GPU arrays (positions, velocities, masses on one GPU) are read in place by the CUDA
executor as in `accelerations`: precision defaults to their dtype, the results come back
on the same GPU, or go into `out` (acceleration, jerk, potential).
"""
_leaves_host = _host_arrays(_nbody.leaves)


def leaves(
    positions,
    masses,
    pairs,
    spans,
    cells=None,
    cell_ranges=None,
    cell_spans=None,
    eps=None,
    G=1.0,
    potential=True,
    executor=None,
    precision=None,
    threads=None,
    softening="plummer",
    out=None,
):
    if _all_on_gpu(("positions", "masses"), (positions, masses)):
        eps = _gpu_settings(eps, threads)
        results = _nbody._leaves_device(
            positions,
            masses,
            pairs,
            spans,
            cells,
            cell_ranges,
            cell_spans,
            eps,
            G,
            potential,
            executor or "cuda",
            _precision_of(positions, precision),
            softening,
            out=_outputs(out),
        )
        return _results(positions, results, out)
    _no_out(out)
    return _leaves_host(
        positions,
        masses,
        pairs,
        spans,
        cells=cells,
        cell_ranges=cell_ranges,
        cell_spans=cell_spans,
        eps=eps,
        G=G,
        potential=potential,
        executor=executor or "cpu",
        precision=precision or "f64",
        threads=threads,
        softening=softening,
    )


leaves.__doc__ = (_nbody.leaves.__doc__ or "") + """

GPU arrays (positions and masses on one GPU) are read in place by the CUDA executor as in
`accelerations`; the list and cells may be host or GPU arrays (copied: the list is
expanded on the host). Results come back on the same GPU, or go into `out`
(acceleration, potential).
"""
leaves_vjp = _host_arrays(_nbody.leaves_vjp)
tidal = _host_arrays(_nbody.tidal)
_vjp_host = _host_arrays(_nbody.vjp)


def vjp(
    positions,
    masses,
    cot_acc,
    cot_phi=None,
    eps=0.0,
    G=1.0,
    targets=None,
    executor=None,
    precision=None,
    threads=None,
    softening="plummer",
):
    names = ("positions", "masses", "cot_acc", "cot_phi")
    if _all_on_gpu(names, (positions, masses, cot_acc, cot_phi)):
        if targets is not None:
            raise ValueError("targets are taken on the host only: the GPU product is of the particles on themselves")
        eps = _gpu_settings(eps, threads)
        d_pos, d_m = _nbody._vjp_device(
            positions,
            masses,
            cot_acc,
            cot_phi,
            eps,
            G,
            executor or "cuda",
            _precision_of(positions, precision),
            softening,
        )
        return _like(positions, d_pos), _like(positions, d_m)
    return _vjp_host(
        positions,
        masses,
        cot_acc,
        cot_phi,
        eps=eps,
        G=G,
        targets=targets,
        executor=executor or "cpu",
        precision=precision or "f64",
        threads=threads,
        softening=softening,
    )


vjp.__doc__ = (_nbody.vjp.__doc__ or "") + """

GPU arrays (positions, masses and cotangents on one GPU; no targets) are read in place by
the CUDA executor as in `accelerations`, and the gradients come back on the same GPU.
"""

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
