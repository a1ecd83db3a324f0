"""The Python package on the GPU: CUDA against the CPU (f64 to 1e-13), the columns path,
the device tree against the host tree, and the cost of a Python call over the command's
bench of the same call. Every check that fails is named, and the script exits 1 after
printing `N passed, N failed`; without a GPU it fails (the run that stages it has one)."""
import sys, time
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "pylib"))  # the staged wheel
import numpy as np
import nbody

print("nbody", nbody.__version__, "cuda_compiled", nbody.cuda_compiled, "backends", nbody.backends())
passed, failures = 0, []


def check(what, ok, detail=""):
    """Counts one check; a failure is named in the summary."""
    global passed
    print(what, detail, "ok" if ok else "FAILED")
    if ok:
        passed += 1
    else:
        failures.append(what)


check("a CUDA build with a GPU", nbody.cuda_compiled and any(b.startswith("cuda") for b in nbody.backends()))
rng = np.random.default_rng(1)
pos, m = rng.normal(size=(4096, 3)), rng.random(4096) / 4096
want, _ = nbody.accelerations(pos, m, eps=0.01)
got, _ = nbody.accelerations(pos, m, eps=0.01, executor="cuda")
f64_diff = float(np.abs(got - want).max() / np.abs(want).max())
check("f64 cuda vs cpu within 1e-13", f64_diff < 1e-13, f"max relative difference {f64_diff:.3e}")

# The columns path (contiguous arrays of the call's precision, packed on the device)
# against the host path (Fortran order takes it) and the CPU, with targets, the spline,
# without the potential; bad values named as on the CPU.
for dtype, precision, tol in ((np.float64, "f64", 1e-12), (np.float32, "f32", 1e-5)):
    p, w = pos.astype(dtype), m.astype(dtype)
    pts = rng.normal(size=(300, 3)).astype(dtype)
    for kw in (dict(eps=0.01), dict(eps=0.05, softening="spline"), dict(eps=0.0, potential=False), dict(eps=0.01, targets=pts)):
        cpu_a, cpu_p = nbody.accelerations(p, w, precision=precision, **kw)
        col_a, col_p = nbody.accelerations(p, w, precision=precision, executor="cuda", **kw)
        host_a, host_p = nbody.accelerations(np.asfortranarray(p), w, precision=precision, executor="cuda", **kw)
        scale = np.abs(cpu_a).max()
        d_col, d_host = float(np.abs(col_a - cpu_a).max() / scale), float(np.abs(host_a - cpu_a).max() / scale)
        d_phi = float(np.abs(col_p - cpu_p).max()) / max(float(np.abs(cpu_p).max()), 1e-300)
        ok = col_a.dtype == dtype and d_col < tol and d_host < tol and d_phi < tol
        check(f"columns {precision} {sorted(kw)}", ok, f"vs cpu {d_col:.2e} (host path {d_host:.2e}, potential {d_phi:.2e})")
    for bad, what in ((np.nan, "positions[7]"), (-1.0, "masses[7]")):
        q, v = p.copy(), w.copy()
        if what.startswith("positions"):
            q[7, 1] = bad
        else:
            v[7] = bad
        try:
            nbody.accelerations(q, v, precision=precision, executor="cuda")
            check(f"columns {precision} bad {what} refused", False, "accepted")
        except ValueError as e:
            check(f"columns {precision} bad {what} refused, named", what in str(e), str(e))

host = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32")
gpu = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32", executor="cuda")
for sim in (host, gpu):
    sim.evolve(0.0625)
# The same tree step in f32 on both: the steps agree, and the trajectories to the f32
# forces' rounding over 16 steps.
de = abs(gpu.energies()[2] / host.energies()[2] - 1)
dx = float(np.abs(gpu.positions - host.positions).max())
check("device tree against the host tree", gpu.steps == host.steps and de < 1e-4 and dx < 1e-5,
      f"steps {gpu.steps} {host.steps}, energy ratio - 1 {de:.2e}, max position difference {dx:.2e}")

# The library's one run loop puts the particles on the GPU for the leapfrog, Hermite
# (shared and block steps) and the tree, and steps the others on the host over the GPU's
# forces: each against the same run on the CPU (f64; the sums differ in their rounding
# only, so the energies agree far below the integrators' own error), a save and load on
# the device continuing bit for bit, and collisions found on the device.
for integrator, gravity, on_device in (("leapfrog", "direct", True), ("hermite", "direct", True),
                                       ("block-hermite", "direct", True), ("hermite6", "direct", False),
                                       ("rk", "direct", False), ("leapfrog", "tree", True)):
    # Each scheme at its customary accuracy (the sixth order's eta is larger for the
    # same error; Runge-Kutta's tolerance is per stretch).
    own = {"hermite6": dict(eta=0.1), "rk": dict(tolerance=1e-6)}.get(integrator, dict(eta=0.01))
    kw = dict(n=1024, seed=3, integrator=integrator, gravity=gravity, eps=0.01, dt=1 / 128, **own)
    cpu = nbody.Simulation(executor="cpu", **kw)
    dev = nbody.Simulation(executor="cuda", **kw)
    for sim in (cpu, dev):
        sim.evolve(0.0625)
    ec, ed = cpu.energies()[2], dev.energies()[2]
    dx = float(np.abs(dev.positions - cpu.positions).max())
    # The device tree and the host tree build and walk their cells differently (the
    # same opening test, other sums): their energies agree to the tree's own error.
    tol = 1e-5 if gravity == "tree" else 1e-9
    check(f"run loop {integrator} {gravity} on the GPU", dev.on_device == on_device and abs(ed / ec - 1) < tol and dx < 1e-5,
          f"on_device {dev.on_device}, steps {dev.steps} (cpu {cpu.steps}), energy ratio - 1 {abs(ed / ec - 1):.2e}, max dx {dx:.2e}")
    again = nbody.Simulation.from_bytes(dev.to_bytes())
    for sim in (dev, again):
        sim.evolve(0.125)
    check(f"run loop {integrator} {gravity}: saved on the GPU, loaded, bit for bit",
          np.array_equal(dev.positions, again.positions) and dev.steps == again.steps, f"steps {dev.steps}")
    if gravity == "direct":
        r = np.full(1024, 4e-3)
        same = np.array_equal(dev.collisions(r), nbody.Simulation(positions=dev.positions, masses=dev.masses, executor="cpu").collisions(r))
        check(f"run loop {integrator}: collisions on the GPU as on the CPU", same)

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

print(f"{passed} passed, {len(failures)} failed")
if failures:
    print("failed:", "; ".join(failures))
    sys.exit(1)
