"""Accelerations and potentials of 20,000 particles on the CPU, checked for a few of
them against a direct numpy sum."""
import numpy as np

import nbody

rng = np.random.default_rng(1)
pos = rng.normal(size=(20_000, 3))
m = np.full(20_000, 1.0 / 20_000)
acc, phi = nbody.accelerations(pos, m, eps=0.01)

worst = 0.0
for i in rng.choice(20_000, 10, replace=False):
    d = pos - pos[i]
    r2 = (d**2).sum(1) + 0.01**2
    r2[i] = np.inf  # a particle does not pull itself
    want = (m[:, None] * d / r2[:, None] ** 1.5).sum(0)
    worst = max(worst, float(np.abs(acc[i] - want).max() / np.abs(want).max()))
print(f"20000 particles: acceleration of particle 0 {acc[0]}, potential {phi[0]:.6f}")
print(f"largest relative difference from numpy over 10 particles: {worst:.1e}")
assert worst < 1e-12
