"""nbody.accelerations beside pytreegrav's brute force and REBOUND's direct gravity on the
same particles (a Plummer-like random set, f64, eps = 0.01), interleaved rounds, median
seconds per call. pytreegrav and REBOUND come from PyPI (`pip install pytreegrav
rebound`); whichever is missing is skipped with a line saying so.
Usage: python compare.py [N ...]   (default 4096 65536)"""
import ctypes
import sys
import time

import numpy as np

import nbody


def median_seconds(call, reps):
    call()  # warm-up (numba compiles, executors start)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [4096, 65536]
    try:
        import pytreegrav
    except ImportError:
        pytreegrav = None
        print("SKIP pytreegrav: not installed")
    try:
        import rebound
    except ImportError:
        rebound = None
        print("SKIP rebound: not installed")
    versions = [f"nbody {nbody.__version__}"]
    if pytreegrav:
        from importlib.metadata import version

        versions.append(f"pytreegrav {version('pytreegrav')}")
    if rebound:
        versions.append(f"rebound {rebound.__version__}")
    print(", ".join(versions))
    eps = 0.01
    for n in sizes:
        rng = np.random.default_rng(n)
        pos = rng.normal(size=(n, 3))
        m = np.full(n, 1.0 / n)
        h = np.full(n, eps)
        calls = {
            "nbody cpu:1": lambda: nbody.accelerations(pos, m, eps=eps, executor="cpu:1", potential=False),
            "nbody cpu:2": lambda: nbody.accelerations(pos, m, eps=eps, executor="cpu:2", potential=False),
        }
        want, _ = nbody.accelerations(pos, m, eps=eps)
        if pytreegrav:
            # pytreegrav softens with a spline kernel of support h: compare times, not values.
            calls["pytreegrav brute force, 1 thread"] = lambda: pytreegrav.Accel(
                pos, m, h, method="bruteforce", parallel=False
            )
            calls["pytreegrav brute force, parallel"] = lambda: pytreegrav.Accel(
                pos, m, h, method="bruteforce", parallel=True
            )
        if rebound:
            sim = rebound.Simulation()
            sim.gravity = "basic"
            sim.softening = eps
            for p, mass in zip(pos, m):
                sim.add(m=mass, x=p[0], y=p[1], z=p[2])
            update = rebound.clibrebound.reb_simulation_update_acceleration
            calls["rebound basic, 1 thread"] = lambda: update(ctypes.byref(sim))
            update(ctypes.byref(sim))
            got = np.array([[p.ax, p.ay, p.az] for p in sim.particles])
            print(f"N = {n}: rebound against nbody, max relative difference {np.abs(got - want).max() / np.abs(want).max():.2e}")
        reps = 5 if n <= 16384 else 3
        results = {k: [] for k in calls}
        for _ in range(3):  # interleaved rounds
            for k, c in calls.items():
                results[k].append(median_seconds(c, reps))
        base = np.median(results["nbody cpu:1"])
        for k, r in results.items():
            t = float(np.median(r))
            print(f"N = {n:6d}  {k:36s} {t * 1e3:10.2f} ms  {n * n / t:.3e} interactions/s  ({t / base:.1f}x nbody cpu:1)")


if __name__ == "__main__":
    main()
