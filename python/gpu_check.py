"""The Python package on the GPU: CUDA against the CPU, the device tree against the host
tree, and the cost of a Python call over the command's bench of the same call."""
import sys, time
sys.path.insert(0, "pylib")  # the wheel unpacked beside this script on the device
import numpy as np
import nbody

print("nbody", nbody.__version__, "cuda_compiled", nbody.cuda_compiled, "backends", nbody.backends())
rng = np.random.default_rng(1)
pos, m = rng.normal(size=(4096, 3)), rng.random(4096) / 4096
want, _ = nbody.accelerations(pos, m, eps=0.01)
got, _ = nbody.accelerations(pos, m, eps=0.01, executor="cuda")
print("f64 cuda vs cpu: max relative difference", float(np.abs(got - want).max() / np.abs(want).max()))

host = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32")
gpu = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32", executor="cuda")
for sim in (host, gpu):
    sim.evolve(0.0625)
print("device tree: steps", gpu.steps, host.steps, "energy ratio - 1", gpu.energies()[2] / host.energies()[2] - 1,
      "max position difference", float(np.abs(gpu.positions - host.positions).max()))

big = nbody.Simulation(n=1 << 20, seed=1, gravity="tree", theta=0.5, precision="f32", executor="cuda")
big.step()
t0 = time.perf_counter(); big.evolve(big.time + 32 / 256); t1 = time.perf_counter()
print(f"device tree from Python, 2^20, theta 0.5: {1e3 * (t1 - t0) / 32:.2f} ms per step ({big.steps} steps)")

for precision in ("f32", "f64"):
    n = 65536
    p32 = rng.normal(size=(n, 3)).astype(np.float32)
    m32 = np.full(n, 1.0 / n, dtype=np.float32)
    call = lambda: nbody.accelerations(p32, m32, eps=0.01, executor="cuda", precision=precision, potential=False)
    for _ in range(3):
        call()
    ts = []
    for _ in range(21):
        t0 = time.perf_counter()
        call()
        ts.append(time.perf_counter() - t0)
    med = float(np.median(ts))
    print(f"python accelerations {precision} cuda N={n} (no potential): median {1e3 * med:.3f} ms, {n * n / med:.3e} interactions/s")
