"""A Plummer sphere of 1,024 particles evolved to t = 1 with the Hermite integrator; the
relative energy error over time goes to energy.png (when matplotlib is installed) and is
printed."""
import numpy as np

import nbody

sim = nbody.Simulation(ic="plummer", n=1024, integrator="hermite", eta=0.02, seed=2)
e0 = sim.energies()[2]
times, errors = [0.0], [0.0]
for k in range(1, 33):
    sim.evolve(k / 32)
    times.append(sim.time)
    errors.append(sim.energies()[2] / e0 - 1)
print(f"t = {sim.time:.3f} after {sim.steps} steps, relative energy error {errors[-1]:.2e}")
assert abs(errors[-1]) < 1e-4
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no energy.png")
else:
    plt.plot(times, np.abs(np.array(errors)) + 1e-17)
    plt.yscale("log")
    plt.xlabel("time (N-body units)")
    plt.ylabel("|E(t) / E(0) - 1|")
    plt.title("Plummer sphere, N = 1024, Hermite, eta = 0.02")
    plt.savefig("energy.png", dpi=100)
    print("wrote energy.png")
