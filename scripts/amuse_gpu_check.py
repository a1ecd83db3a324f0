"""nbody's AMUSE code (nbody.amuse.Nbody) on a GPU backend against its CPU backend:
  1. a Plummer sphere evolved with Hermite on both (same initial energy, energy errors,
     final states, wall times);
  2. a Bridge kick: the field of a large code at as many points (get_gravity_at_point),
     timed through AMUSE, both backends, and their agreement;
  3. the collision search (Simulation.collisions) on both: the same pairs.

    python scripts/amuse_gpu_check.py [GPU_BACKEND] [N] [T_END] [N_FIELD]
    (default cuda 16384 0.0625 65536; run on the device by .stage/amuse/go.sh)
"""
import sys
import time

import numpy as np
from amuse.ic.plummer import new_plummer_model
from amuse.units import nbody_system
from amuse_compare import compare_runs

import nbody
from nbody.amuse import Nbody

gpu = sys.argv[1] if len(sys.argv) > 1 else "cuda"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16384
t_end = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0625
n_field = int(sys.argv[4]) if len(sys.argv) > 4 else 65536
failures = []


def energy(code):
    return (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)


np.random.seed(5)
stars = new_plummer_model(n)
runs = {}
for backend in (gpu, "cpu"):
    code = Nbody(channel_type="sockets")
    code.parameters.epsilon_squared = (1.0 / 64.0) ** 2 | nbody_system.length**2
    code.parameters.backend = backend
    code.particles.add_particles(stars)
    e0 = energy(code)
    start = time.time()
    code.evolve_model(t_end | nbody_system.time)
    wall = time.time() - start
    de = (energy(code) - e0) / abs(e0)
    runs[backend] = (e0, de, code.particles.position.value_in(nbody_system.length))
    code.stop()
    print(f"nbody.amuse Hermite, backend {backend}, N = {n}, t = {t_end}: E0 {e0:.15g}, dE/E {de:.3e}, wall {wall:.2f} s")
failures += compare_runs(runs[gpu], runs["cpu"], (gpu, "cpu"), 1e-6)

np.random.seed(6)
field = new_plummer_model(n_field)
points = new_plummer_model(n_field).position
eps = (0.01 | nbody_system.length).as_vector_with_length(n_field)
kicks = {}
for backend in (gpu, "cpu"):
    code = Nbody(channel_type="sockets")
    code.parameters.backend = backend
    code.particles.add_particles(field)
    code.get_gravity_at_point(eps, points.x, points.y, points.z)  # warm-up
    times = []
    for _ in range(3):
        start = time.time()
        a = code.get_gravity_at_point(eps, points.x, points.y, points.z)
        times.append(time.time() - start)
    kicks[backend] = np.column_stack([c.value_in(nbody_system.acceleration) for c in a])
    code.stop()
    rate = n_field * n_field / min(times)
    print(f"Bridge kick, backend {backend}: {n_field} sources at {n_field} points, best of 3 {min(times):.3f} s "
          f"through AMUSE ({rate:.3g} interactions/s)")
rel = np.linalg.norm(kicks[gpu] - kicks["cpu"], axis=1) / np.linalg.norm(kicks["cpu"], axis=1)
print(f"kick agreement: max relative difference {rel.max():.3e}")
if not rel.max() < 1e-10:
    failures.append(f"kicks differ by {rel.max():.3e}")

x = stars.position.value_in(nbody_system.length)
m = stars.mass.value_in(nbody_system.mass)
radii = np.full(n, 2e-3)
pairs = {}
for backend in (gpu, "cpu"):
    sim = nbody.Simulation(positions=x, masses=m, integrator="hermite", executor=backend)
    start = time.time()
    pairs[backend] = sim.collisions(radii)
    print(f"collision search, backend {backend}: {len(pairs[backend])} pairs among {n} in {time.time() - start:.3f} s")
if not np.array_equal(pairs[gpu], pairs["cpu"]):
    failures.append("the backends found different close pairs")

if failures:
    print("amuse-gpu check FAILED: " + "; ".join(failures))
    sys.exit(1)
print("amuse-gpu check passed")
