"""Forces you can differentiate in PyTorch: `accelerations` is an autograd Function
whose backward pass is nbody's vector-Jacobian product kernel, not an all-pairs graph.

Tensors on the CPU are read without a copy when contiguous. CUDA tensors stay on their
GPU: the CUDA executor reads them in place and the results and gradients are tensors
on the same GPU (with `executor` left at its default; a CPU executor copies them to the
host and back). float32 and float64 are computed in their own precision.

>>> import torch, nbody.torch
>>> pos = torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
>>> acc, phi = nbody.torch.accelerations(pos, torch.ones(2, dtype=torch.float64))
>>> acc[0, 0].backward()
>>> float(pos.grad[1, 0])  # moving the source away weakens the pull by 2 m / r^3
-0.25
"""

import numpy as np
import torch

from . import _nbody

__all__ = ["accelerations"]


def _precision(dtype):
    if dtype == torch.float64:
        return "f64"
    if dtype == torch.float32:
        return "f32"
    raise ValueError(f"positions must be float32 or float64 (got {dtype})")


def _host(t, dtype):
    return t.detach().to(device="cpu", dtype=dtype).contiguous().numpy()


class _Field(torch.autograd.Function):
    @staticmethod
    def forward(ctx, positions, masses, eps, G, softening, executor, threads):
        precision = _precision(positions.dtype)
        ctx.save_for_backward(positions, masses)
        ctx.settings = (eps, G, softening, executor, threads)
        if _on_gpu(positions, executor):
            p, m = positions.detach().contiguous(), masses.detach().to(positions.dtype).contiguous()
            from . import accelerations as on_gpu

            return on_gpu(p, m, eps=eps, G=G, softening=softening, executor=_gpu_executor(positions, executor))
        p, m = _host(positions, positions.dtype), _host(masses, positions.dtype)
        acc, phi = _nbody.accelerations(
            p, m, eps=eps, G=G, softening=softening, executor=executor or "cpu", precision=precision, threads=threads
        )
        device = positions.device
        return torch.from_numpy(acc).to(device), torch.from_numpy(phi).to(device)

    @staticmethod
    def backward(ctx, cot_acc, cot_phi):
        positions, masses = ctx.saved_tensors
        eps, G, softening, executor, threads = ctx.settings
        dtype = positions.dtype
        if _on_gpu(positions, executor):
            from . import vjp as on_gpu

            p, m = positions.detach().contiguous(), masses.detach().to(dtype).contiguous()
            ca = cot_acc.detach().to(dtype).contiguous() if cot_acc is not None else torch.zeros_like(p)
            cp = cot_phi.detach().to(dtype).contiguous() if cot_phi is not None else None
            executor = _gpu_executor(positions, executor)
            d_pos, d_m = on_gpu(p, m, ca, cp, eps=eps, G=G, softening=softening, executor=executor)
            return d_pos, d_m.to(masses.dtype), None, None, None, None, None
        ca = _host(cot_acc, dtype) if cot_acc is not None else np.zeros((positions.shape[0], 3), _np(dtype))
        cp = _host(cot_phi, dtype) if cot_phi is not None else None
        d_pos, d_m = _nbody.vjp(
            _host(positions, dtype), _host(masses, dtype), ca, cp, eps=eps, G=G, softening=softening,
            executor=executor or "cpu", precision=_precision(dtype), threads=threads,
        )
        device = positions.device
        return (
            torch.from_numpy(d_pos).to(device),
            torch.from_numpy(d_m).to(device=device, dtype=masses.dtype),
            None, None, None, None, None,
        )


def _on_gpu(positions, executor):
    """Whether a call computes on the tensors' GPU in place: CUDA tensors with the
    default executor (None) or a CUDA one."""
    return positions.is_cuda and (executor is None or str(executor).startswith("cuda"))


def _gpu_executor(positions, executor):
    """The executor of a call on CUDA tensors: the one given, else the tensors' GPU."""
    return executor or f"cuda:{positions.device.index or 0}"


def _np(dtype):
    return np.float64 if dtype == torch.float64 else np.float32


def accelerations(positions, masses, eps=0.0, G=1.0, softening="plummer", executor=None, threads=None):
    """Acceleration (N, 3) and potential (N,) of every particle from all the others (each
    skipping its own pair), differentiable with respect to `positions` (N, 3) and
    `masses` (N,). The settings are as in `nbody.accelerations`; `executor` defaults to
    "cpu" for CPU tensors and to the tensors' GPU ("cuda:N") for CUDA tensors."""
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise ValueError(f"positions must have shape (N, 3) (got {tuple(positions.shape)})")
    if masses.shape != (positions.shape[0],):
        raise ValueError(f"masses must have shape ({positions.shape[0]},) (got {tuple(masses.shape)})")
    return _Field.apply(positions, masses, float(eps), float(G), softening, executor, threads)
