"""Forces you can differentiate in JAX: `accelerations` is a JAX function whose
vector-Jacobian product is nbody's own kernel, not an all-pairs autodiff graph.

The forward pass and the product run nbody's executors through `jax.pure_callback`
(XLA's FFI would save the host copies, but it needs a compiled extension per jaxlib
version; the callback works with any): both cost one copy of the particles to the host
and back, and memory O(N), where `jax.grad` of a jax.numpy all-pairs sum holds O(N^2).
They work under `jax.jit`, `jax.grad`, `jax.vjp` and `jax.vmap` (one call per mapped
element). Arrays are float64 (enable `jax_enable_x64`) or float32, computed in that
precision.

>>> import jax, jax.numpy as jnp, nbody.jax
>>> jax.config.update("jax_enable_x64", True)
>>> pos = jnp.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
>>> acc, phi = nbody.jax.accelerations(pos, jnp.ones(2))
>>> float(acc[0, 0])
0.25
>>> # d(a_0x)/d(x_1): moving the source away weakens the pull by 2 m / r^3.
>>> float(jax.grad(lambda p: nbody.jax.accelerations(p, jnp.ones(2))[0][0, 0])(pos)[1, 0])
-0.25
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _nbody

__all__ = ["accelerations", "potential"]


def _precision(dtype):
    if dtype == jnp.float64:
        return "f64"
    if dtype == jnp.float32:
        return "f32"
    raise ValueError(f"positions must be float32 or float64 (got {dtype})")


def _field(positions, masses, eps, G, softening, executor, threads):
    precision = _precision(positions.dtype)

    def host(p, m):
        acc, phi = _nbody.accelerations(
            np.asarray(p), np.asarray(m), eps=eps, G=G, softening=softening,
            executor=executor, precision=precision, threads=threads,
        )
        return acc, phi

    n = positions.shape[0]
    shapes = (jax.ShapeDtypeStruct((n, 3), positions.dtype), jax.ShapeDtypeStruct((n,), positions.dtype))
    return jax.pure_callback(host, shapes, positions, masses.astype(positions.dtype), vmap_method="sequential")


@partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4, 5, 6))
def _accelerations(positions, masses, eps, G, softening, executor, threads):
    return _field(positions, masses, eps, G, softening, executor, threads)


def _forward(positions, masses, eps, G, softening, executor, threads):
    return _field(positions, masses, eps, G, softening, executor, threads), (positions, masses)


def _backward(eps, G, softening, executor, threads, residuals, cotangents):
    positions, masses = residuals
    cot_acc, cot_phi = cotangents
    precision = _precision(positions.dtype)

    def host(p, m, ca, cp):
        return _nbody.vjp(
            np.asarray(p), np.asarray(m), np.asarray(ca), np.asarray(cp), eps=eps, G=G,
            softening=softening, executor=executor, precision=precision, threads=threads,
        )

    n = positions.shape[0]
    shapes = (jax.ShapeDtypeStruct((n, 3), positions.dtype), jax.ShapeDtypeStruct((n,), positions.dtype))
    d_pos, d_m = jax.pure_callback(
        host, shapes, positions, masses.astype(positions.dtype), cot_acc.astype(positions.dtype),
        cot_phi.astype(positions.dtype), vmap_method="sequential",
    )
    return d_pos, d_m.astype(masses.dtype)


_accelerations.defvjp(_forward, _backward)


def accelerations(positions, masses, eps=0.0, G=1.0, softening="plummer", executor="cpu", threads=None):
    """Acceleration (N, 3) and potential (N,) of every particle from all the others (each
    skipping its own pair), differentiable with respect to `positions` (N, 3) and
    `masses` (N,) through nbody's vector-Jacobian product kernel. `eps`, `G`,
    `softening`, `executor` and `threads` are as in `nbody.accelerations` (static: a new
    value retraces)."""
    positions = jnp.asarray(positions)
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise ValueError(f"positions must have shape (N, 3) (got {positions.shape})")
    masses = jnp.asarray(masses)
    if masses.shape != (positions.shape[0],):
        raise ValueError(f"masses must have shape ({positions.shape[0]},) (got {masses.shape})")
    return _accelerations(positions, masses, float(eps), float(G), softening, executor, threads)


def potential(positions, masses, eps=0.0, G=1.0, softening="plummer", executor="cpu", threads=None):
    """The potential (N,) of `accelerations`, differentiable the same way (the gradient
    of the total potential energy 0.5 sum(m phi) is minus the forces)."""
    return accelerations(positions, masses, eps, G, softening, executor, threads)[1]
