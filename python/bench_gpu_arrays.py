"""GPU arrays in place: the wall-clock time of `nbody.accelerations` on N device-resident
particles of each GPU array library here (numba, CuPy, PyTorch), against which
`nbody-cuda-bench --device-columns N` gives the same call from Rust. Checks each
library's results against the host columns path (the same kernels: equal bit for bit)
before timing.

    python python/bench_gpu_arrays.py --n 65536 --reps 21
"""

import argparse
import statistics
import time

import numpy as np

import nbody


def producers():
    found = []
    try:
        from numba import cuda

        if cuda.is_available():
            found.append(("numba", cuda.to_device, lambda d: d.to_numpy(), cuda.synchronize))
    except Exception:
        pass
    try:
        import cupy

        found.append(("cupy", cupy.asarray, cupy.asnumpy, cupy.cuda.runtime.deviceSynchronize))
    except Exception:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            found.append(("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy(), torch.cuda.synchronize))
    except Exception:
        pass
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    for dtype, precision in ((np.float32, "f32"), (np.float64, "f64")):
        pos = rng.normal(size=(args.n, 3)).astype(dtype)
        m = np.full(args.n, 1.0 / args.n, dtype=dtype)
        want = nbody.accelerations(pos, m, eps=1 / 256, executor="cuda", precision=precision)
        for name, up, down, sync in producers():
            d_pos, d_m = up(pos), up(m)
            acc, phi = nbody.accelerations(d_pos, d_m, eps=1 / 256)
            same = np.array_equal(down(acc), want[0]) and np.array_equal(down(phi), want[1])
            if not same:
                raise SystemExit(f"{name} {precision}: GPU-array results differ from the host columns path")
            times = []
            sync()
            for k in range(args.reps + 3):
                t0 = time.perf_counter()
                nbody.accelerations(d_pos, d_m, eps=1 / 256)
                t = time.perf_counter() - t0
                if k >= 3:
                    times.append(t)
            print(
                f"{name} {precision}, N = {args.n}: {statistics.median(times) * 1e3:.3f} ms a call "
                f"(wall clock, median of {args.reps} after 3 warm-ups; results equal the host columns path)",
                flush=True,
            )


if __name__ == "__main__":
    main()
