"""What a call from Python costs beside the same call timed inside Rust, at N = 1,024
and 16,384 (f64, one thread and all threads): python bench.py"""

import os
import time

import numpy as np

import nbody


def python_seconds(n, reps, threads):
    from math import sqrt

    rng = np.random.default_rng(1)
    # The Rust side times a Plummer sphere; the cost does not depend on the positions.
    pos, m = rng.normal(size=(n, 3)), np.full(n, 1.0 / n)
    nbody.accelerations(pos, m, eps=0.01, threads=threads)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        nbody.accelerations(pos, m, eps=0.01, threads=threads)
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    cores = os.cpu_count() or 1
    print(f"nbody {nbody.__version__}: Python call against the same call timed in Rust (f64, median)")
    print(f"{'N':>7} {'threads':>7} {'Rust (ms)':>10} {'Python (ms)':>12} {'extra':>8}")
    for n, reps in [(1024, 400), (16384, 9)]:
        for threads in sorted({1, cores}):
            rust = nbody._rust_seconds(n, reps, threads)
            py = python_seconds(n, reps, threads)
            print(f"{n:>7} {threads:>7} {rust * 1e3:>10.4f} {py * 1e3:>12.4f} {100 * (py / rust - 1):>7.1f}%")


if __name__ == "__main__":
    main()
