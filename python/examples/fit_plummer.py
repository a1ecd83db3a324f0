"""Fitting by gradient through a simulation: recover a Plummer sphere's initial
velocity scale from where its stars are after a short leapfrog run.

The observation is the sphere's positions after 16 leapfrog steps started with its
velocities scaled by 0.8. Starting from a guess of 1.0, the scale is fitted by
minimising the positions' misfit, its gradient taken by JAX through every step: each step's forces come
from nbody.jax.accelerations, whose gradient is nbody's vector-Jacobian product kernel
(two force passes, memory O(N)), not an N x N autodiff graph.
"""
import jax
import jax.numpy as jnp
import numpy as np

import nbody
import nbody.jax as njax

jax.config.update("jax_enable_x64", True)

N, STEPS, DT, EPS = 512, 16, 1.0 / 64.0, 1.0 / 64.0
sim = nbody.Simulation(ic="plummer", n=N, seed=7)
x0, v_unit, m = (jnp.asarray(a) for a in (sim.positions, sim.velocities, sim.masses))


def run(scale):
    """Positions after STEPS kick-drift-kick steps from velocities scale * v_unit."""

    def step(state, _):
        x, v = state
        v = v + 0.5 * DT * njax.accelerations(x, m, eps=EPS)[0]
        x = x + DT * v
        v = v + 0.5 * DT * njax.accelerations(x, m, eps=EPS)[0]
        return (x, v), None

    (x, _), _ = jax.lax.scan(step, (x0, scale * v_unit), None, length=STEPS)
    return x


truth = 0.8
observed = run(truth)
loss = jax.jit(lambda s: 0.5 * jnp.mean((run(s) - observed) ** 2))
grad = jax.jit(jax.grad(loss))

# The gradient through the 16 steps against a centred difference of the loss.
h = 1e-5
fd = (loss(1.0 + h) - loss(1.0 - h)) / (2 * h)
print(f"d(misfit)/d(scale) at 1.0: {float(grad(1.0)):.10e} (centred difference {float(fd):.10e})")
assert abs(float(grad(1.0)) - float(fd)) <= 1e-6 * abs(float(fd))

# One parameter: the secant method on the gradient (Newton with the curvature taken
# from two gradients).
s0, s1 = 1.0, 0.95
g0 = float(grad(s0))
for it in range(20):
    g1 = float(grad(s1))
    s0, g0, s1 = s1, g1, s1 - g1 * (s1 - s0) / (g1 - g0)
    print(f"iteration {it}: scale {s1:.9f}, rms misfit {float(jnp.sqrt(2 * loss(s1))):.3e}")
    if abs(s1 - s0) < 1e-10:
        break

print(f"recovered velocity scale {s1:.8f} (truth {truth}) from {N} positions after {STEPS} steps")
assert abs(s1 - truth) < 1e-6, s1
