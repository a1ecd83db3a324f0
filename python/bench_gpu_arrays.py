"""GPU arrays in place: the wall-clock time of `nbody.accelerations` on N device-resident
particles of each GPU array library here (numba, CuPy, PyTorch) against the same call
from Rust on arrays already on the GPU (`nbody._rust_seconds(entry="device")`, what
`nbody-cuda-bench --device-columns N` times), in one process, interleaved: rounds of a
few Rust calls then a few calls of each library, medians over the rounds, after a
second of warm-up. Checks each library's results against the host columns path (the
same kernels: equal bit for bit) before timing.

    python python/bench_gpu_arrays.py --n 65536
    python python/bench_gpu_arrays.py --n 65536 --torch-grad   # value and gradient

With --torch-grad: `nbody.torch.accelerations` forward and backward on N particles as
CUDA tensors (in place on the GPU) against the same on CPU tensors with the CUDA
executor (copied to the device and back each call), f32 and f64, median of --reps after
warm-ups, after checking the two gradients agree.
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


def median_ms(f, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=5, help="calls a round, each side")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    eps = 0.01  # as _rust_seconds (Plummer: the cost does not depend on the positions)
    for dtype, precision in ((np.float32, "f32"), (np.float64, "f64")):
        pos = rng.normal(size=(args.n, 3)).astype(dtype)
        m = np.full(args.n, 1.0 / args.n, dtype=dtype)
        want = nbody.accelerations(pos, m, eps=eps, executor="cuda", precision=precision)
        libs = []
        for name, up, down, sync in producers():
            d_pos, d_m = up(pos), up(m)
            acc, phi = nbody.accelerations(d_pos, d_m, eps=eps)
            if not (np.array_equal(down(acc), want[0]) and np.array_equal(down(phi), want[1])):
                raise SystemExit(f"{name} {precision}: GPU-array results differ from the host columns path")
            sync()
            libs.append((name, d_pos, d_m))
        t_end = time.perf_counter() + 1.0
        while time.perf_counter() < t_end:
            for _, d_pos, d_m in libs:
                nbody.accelerations(d_pos, d_m, eps=eps)
        rust, each = [], {name: [] for name, _, _ in libs}
        for _ in range(args.rounds):
            rust.append(nbody._rust_seconds(args.n, reps=args.reps, precision=precision, executor="cuda", entry="device") * 1e3)
            for name, d_pos, d_m in libs:
                each[name].append(median_ms(lambda: nbody.accelerations(d_pos, d_m, eps=eps), args.reps))
        r = statistics.median(rust)
        print(f"{precision}, N = {args.n}: Rust {r:.3f} ms a call", flush=True)
        for name, t in each.items():
            t = statistics.median(t)
            print(f"  {name}: {t:.3f} ms a call, {100 * (t / r - 1):+.1f}% (results equal the host columns path)", flush=True)
    print(f"(wall clock; medians over {args.rounds} rounds of {args.reps} calls each side, after 1 s of warm-up)")


def torch_grad(n, reps):
    import torch

    import nbody.torch as ntorch

    rng = np.random.default_rng(1)
    for dtype, rtol in ((torch.float32, 1e-4), (torch.float64, 1e-11)):
        pos = torch.tensor(rng.normal(size=(n, 3)), dtype=dtype)
        m = torch.full((n,), 1.0 / n, dtype=dtype)

        def step(device, executor):
            p = pos.to(device).requires_grad_(True)
            acc, phi = ntorch.accelerations(p, m.to(device), eps=1 / 256, executor=executor)
            ((acc * acc).sum() + phi.sum()).backward()
            return p.grad

        g_gpu, g_host = step("cuda", None).cpu(), step("cpu", "cuda")
        if not torch.allclose(g_gpu, g_host, rtol=rtol, atol=rtol * float(g_host.abs().max())):
            raise SystemExit(f"{dtype}: the CUDA-tensor gradient differs from the CPU-tensor one")
        for device, executor, what in (("cuda", None, "CUDA tensors, in place"), ("cpu", "cuda", "CPU tensors, copied")):
            for _ in range(3):
                step(device, executor)
            torch.cuda.synchronize()
            t = median_ms(lambda: (step(device, executor), torch.cuda.synchronize()), reps)
            print(f"torch {str(dtype)[6:]}, N = {n}: value and gradient {t:.3f} ms ({what})", flush=True)


if __name__ == "__main__":
    import sys

    if "--torch-grad" in sys.argv:
        sys.argv.remove("--torch-grad")
        args = argparse.ArgumentParser()
        args.add_argument("--n", type=int, default=65536)
        args.add_argument("--reps", type=int, default=7)
        a = args.parse_args()
        torch_grad(a.n, a.reps)
    else:
        main()
