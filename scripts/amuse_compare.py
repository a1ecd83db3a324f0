"""The comparison both AMUSE checks make of one system run on the GPU and on the CPU."""

import numpy as np


def compare_runs(gpu, cpu, names, de_bound, dx_bound=1e-6):
    """What differs between two runs, each (initial energy, relative energy error, final
    positions): the initial energies beyond 1e-12, either energy error at or past
    `de_bound`, or any coordinate by `dx_bound` or more. Returns the failures' messages."""
    (e0g, deg, xg), (e0c, dec, xc) = gpu, cpu
    dx = np.abs(xg - xc).max()
    print(f"max |x_{names[0]} - x_{names[1]}| = {dx:.3e} (largest coordinate {np.abs(xc).max():.3e})")
    failures = []
    if abs(e0g - e0c) > 1e-12 * abs(e0c):
        failures.append(f"initial energies differ: {e0g} and {e0c}")
    if not (abs(deg) < de_bound and abs(dec) < de_bound):
        failures.append(f"energy errors too large: {names[0]} {deg:.3e}, {names[1]} {dec:.3e}")
    if not dx < dx_bound:
        failures.append(f"final states differ by {dx:.3e}")
    return failures
