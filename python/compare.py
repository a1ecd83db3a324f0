"""nbody.accelerations beside pytreegrav's brute force and REBOUND's direct gravity on the
same particles (a Plummer-like random set, f64, eps = 0.01), interleaved rounds, median
seconds per call. pytreegrav and REBOUND come from PyPI (`pip install pytreegrav
rebound`); whichever is missing is skipped with a line saying so.
Usage: python compare.py [N ...]         (default 4096 65536)
       python compare.py --gpu [N ...]   (default 65536 262144): nbody's CUDA executor
       (f32 and f64) beside pytreegrav's CUDA brute force (float32; `pip install
       pytreegrav[cuda]`), both the one-call form (which uploads the sources every call)
       and a held CudaAccelBruteforce (sources resident)."""
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


def gpu(sizes):
    try:
        import pytreegrav
        from pytreegrav.cuda import CudaAccelBruteforce
    except ImportError as e:
        pytreegrav = None
        print(f"SKIP pytreegrav on the GPU: {e}")
    eps = 0.01
    for n in sizes:
        rng = np.random.default_rng(n)
        pos = rng.normal(size=(n, 3))
        m = np.full(n, 1.0 / n)
        p32, m32 = pos.astype(np.float32), m.astype(np.float32)
        calls = {
            "nbody cuda f32": lambda: nbody.accelerations(p32, m32, eps=eps, executor="cuda", precision="f32", potential=False),
            "nbody cuda f64": lambda: nbody.accelerations(pos, m, eps=eps, executor="cuda", potential=False),
        }
        want, _ = nbody.accelerations(pos, m, eps=eps, executor="cuda", potential=False)
        if pytreegrav:
            h = np.full(n, eps, dtype=np.float32)
            held = CudaAccelBruteforce(p32, m32, h)
            calls["pytreegrav cuda brute force, one call"] = lambda: pytreegrav.Accel(
                p32, m32, h, method="bruteforce", device="cuda"
            )
            calls["pytreegrav cuda brute force, held"] = lambda: held(p32, h)
            # pytreegrav softens with a spline kernel of support h: compared where the
            # pairs are unsoftened, the median (most pairs are far apart).
            got = held(p32, h)
            rel = np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)
            print(f"N = {n}: pytreegrav cuda against nbody cuda f64, median relative difference {np.median(rel):.2e}")
        results = {k: [] for k in calls}
        for _ in range(3):  # interleaved rounds
            for k, c in calls.items():
                results[k].append(median_seconds(c, 7))
        base = np.median(results["nbody cuda f32"])
        for k, r in results.items():
            t = float(np.median(r))
            print(f"N = {n:6d}  {k:40s} {t * 1e3:10.3f} ms  {n * n / t:.3e} interactions/s  ({t / base:.2f}x nbody cuda f32)")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--gpu"]:
        from importlib.metadata import PackageNotFoundError, version

        names = ["pytreegrav", "numba", "numba-cuda"]
        found = []
        for name in names:
            try:
                found.append(f"{name} {version(name)}")
            except PackageNotFoundError:
                pass
        print(", ".join([f"nbody {nbody.__version__}"] + found))
        return gpu([int(a) for a in args[1:]] or [65536, 262144])
    sizes = [int(a) for a in args] or [4096, 65536]
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
