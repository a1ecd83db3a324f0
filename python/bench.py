"""What a call from Python costs beside the same call timed inside Rust (same process,
same executor, medians; the Python call computes the particles on themselves as the Rust
one does). On a GPU `accelerations` hands its arrays to the executor's columns entry
(`field_columns`), so that is the Rust call it is compared with; the packed-records call
(`Executor::accelerations` on host slices) is printed beside it.

    python bench.py                      # CPU, f64: N = 1,024 and 16,384, 1 and all threads
    python bench.py --executor cuda      # GPU: N = 65,536, f32 and f64, acceleration only
"""

import argparse
import os
import time

import numpy as np

import nbody


def python_seconds(n, reps, threads, precision, executor, potential):
    dtype = np.float32 if precision == "f32" else np.float64
    rng = np.random.default_rng(1)
    # The Rust side times a Plummer sphere; the cost does not depend on the positions.
    pos, m = rng.normal(size=(n, 3)).astype(dtype), np.full(n, 1.0 / n, dtype=dtype)

    def call():
        kw = dict(eps=0.01, precision=precision, executor=executor, potential=potential)
        if executor.startswith("cpu"):
            kw["threads"] = threads
        nbody.accelerations(pos, m, **kw)

    call()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--executor", default="cpu")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved Rust/Python rounds per row")
    a = ap.parse_args()
    gpu = not a.executor.startswith("cpu")
    cores = os.cpu_count() or 1
    if gpu:
        rows = [(65536, 21, 1, p, False) for p in ("f32", "f64")]
    else:
        rows = [(n, reps, t, "f64", True) for n, reps in [(1024, 400), (16384, 9)] for t in sorted({1, cores})]
    print(f"nbody {nbody.__version__}: Python call against the same call timed in Rust ({a.executor}, medians)")
    extra_col = f" {'Rust records (ms)':>17}" if gpu else ""
    print(f"{'N':>7} {'prec':>4} {'threads':>7} {'potential':>9} {'Rust (ms)':>10} {'Python (ms)':>12} {'extra':>8}{extra_col}")
    entry = "columns" if gpu else "accelerations"
    for n, reps, threads, precision, potential in rows:
        # Interleaved rounds, the best of each side: clocks and neighbours drift.
        rust, py, records = [], [], []
        for _ in range(a.rounds):
            rust.append(nbody._rust_seconds(n, reps, threads, precision, a.executor, potential, entry))
            py.append(python_seconds(n, reps, threads, precision, a.executor, potential))
            if gpu:
                records.append(nbody._rust_seconds(n, reps, threads, precision, a.executor, potential, "accelerations"))
        r, p = min(rust), min(py)
        tail = f" {min(records) * 1e3:>17.4f}" if gpu else ""
        print(
            f"{n:>7} {precision:>4} {threads if not gpu else '-':>7} {str(potential):>9} "
            f"{r * 1e3:>10.4f} {p * 1e3:>12.4f} {100 * (p / r - 1):>7.1f}%{tail}"
        )

if __name__ == "__main__":
    main()
