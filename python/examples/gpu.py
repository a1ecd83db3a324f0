"""On a GPU: the CUDA executor against the CPU, and a 65,536-particle Plummer sphere
stepped by the device tree (every step on the GPU). Prints a line and stops where this
build or machine has no GPU."""
import time

import numpy as np

import nbody

if not any(b.startswith("cuda") for b in nbody.backends()):
    why = "this build has no CUDA executors" if not nbody.cuda_compiled else "no GPU on this machine"
    print(f"no GPU run: {why} (nbody.backends() = {nbody.backends()})")
    raise SystemExit(0)

rng = np.random.default_rng(4)
pos, m = rng.normal(size=(16_384, 3)), np.full(16_384, 1.0 / 16_384)
cpu, _ = nbody.accelerations(pos, m, eps=0.01)
gpu, _ = nbody.accelerations(pos, m, eps=0.01, executor="cuda")
print(f"CUDA against CPU, f64: largest relative difference {np.abs(gpu - cpu).max() / np.abs(cpu).max():.1e}")
sim = nbody.Simulation(n=65_536, gravity="tree", executor="cuda", precision="f32", dt=1 / 128)
e0 = sim.energies()[2]
t0 = time.perf_counter()
sim.evolve(0.25)
print(f"device tree: {sim.steps} steps in {time.perf_counter() - t0:.2f} s, energy error {sim.energies()[2] / e0 - 1:.1e}")
