"""nbody.torch against autograd of a plain all-pairs sum (f64, 1e-10). PyTorch's PyPI
wheel brings gigabytes of CUDA libraries, more than CI installs: this runs where torch
is installed (docs/gradients.md records the run)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import nbody.torch as ntorch  # noqa: E402


def all_pairs(pos, m, eps):
    n = pos.shape[0]
    d = pos[None, :, :] - pos[:, None, :]
    off = 1.0 - torch.eye(n, dtype=pos.dtype)
    r2 = (d**2).sum(-1) + eps**2 + (1.0 - off)
    inv = off / torch.sqrt(r2)
    return (m[None, :, None] * d * (inv**3)[..., None]).sum(1), -(m[None, :] * inv).sum(1)


@pytest.mark.parametrize("eps", [0.0, 0.03])
def test_torch_gradients_match_autograd_of_all_pairs(eps):
    rng = np.random.default_rng(4)
    pos0, m0 = rng.normal(size=(48, 3)), rng.uniform(0.5, 1.5, 48) / 48
    c, h = torch.tensor(rng.normal(size=(48, 3))), torch.tensor(rng.normal(size=48))
    grads = []
    for field in (lambda p, m: ntorch.accelerations(p, m, eps=eps), lambda p, m: all_pairs(p, m, eps)):
        pos = torch.tensor(pos0, requires_grad=True)
        m = torch.tensor(m0, requires_grad=True)
        acc, phi = field(pos, m)
        ((c * acc).sum() + (h * phi).sum()).backward()
        grads.append((pos.grad.numpy(), m.grad.numpy()))
    (gp, gm), (wp, wm) = grads
    np.testing.assert_allclose(gp, wp, rtol=1e-10, atol=1e-10 * np.abs(wp).max())
    np.testing.assert_allclose(gm, wm, rtol=1e-10, atol=1e-10 * np.abs(wm).max())


def test_torch_refuses_bad_shapes():
    with pytest.raises(ValueError, match="positions must have shape"):
        ntorch.accelerations(torch.ones(4, 2, dtype=torch.float64), torch.ones(4, dtype=torch.float64))
