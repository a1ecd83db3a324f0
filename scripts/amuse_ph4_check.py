"""AMUSE's ph4 in GPU mode (GRAPE-6 calls into libnbody_c) against its CPU mode: the same
Plummer sphere to the same time; the initial energies must agree, the energy errors be
small in both, and the final states agree (to the difference of two force summations).

    python scripts/amuse_ph4_check.py N T_END   (run by scripts/amuse-check.sh)
"""
import sys
import time

import numpy as np
from amuse.community.ph4.interface import ph4 as Ph4
from amuse.ic.plummer import new_plummer_model
from amuse.units import nbody_system
from amuse_compare import compare_runs

n, t_end = int(sys.argv[1]), float(sys.argv[2])
runs = {}
for mode in ("cpu", "gpu"):
    np.random.seed(7)
    stars = new_plummer_model(n)
    code = Ph4(mode=mode, channel_type="sockets")
    code.parameters.epsilon_squared = 0.01 | nbody_system.length**2
    code.parameters.timestep_parameter = 0.02
    code.particles.add_particles(stars)
    e0 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    start = time.time()
    code.evolve_model(t_end | nbody_system.time)
    wall = time.time() - start
    e1 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    x = code.particles.position.value_in(nbody_system.length)
    code.stop()
    runs[mode] = (e0, (e1 - e0) / abs(e0), x)
    print(f"ph4 {mode} mode, N = {n}, t = {t_end}: E0 {e0:.15g}, dE/E {(e1 - e0) / abs(e0):.3e}, wall {wall:.2f} s")

failures = compare_runs(runs["gpu"], runs["cpu"], ("gpu", "cpu"), 1e-7)
if failures:
    print("amuse-ph4 check FAILED: " + "; ".join(failures))
    sys.exit(1)
print("amuse-ph4 check passed")
