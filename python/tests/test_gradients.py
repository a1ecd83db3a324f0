"""The tidal tensor and the vector-Jacobian product from Python: against finite
differences of `accelerations`, against autodiff of a plain all-pairs sum (JAX, f64, to
1e-10), under jax.jit and jax.grad, and their refusals of bad input."""
import numpy as np
import pytest

import nbody


def plummer_like(n, seed=3):
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, 3))
    m = rng.uniform(0.5, 1.5, n) / n
    return pos, m


def loss(pos, m, c, h, eps):
    acc, phi = nbody.accelerations(pos, m, eps=eps)
    return float((c * acc).sum() + (h * phi).sum())


@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_vjp_matches_finite_differences(eps):
    pos, m = plummer_like(40)
    rng = np.random.default_rng(5)
    c, h = rng.normal(size=(40, 3)), rng.normal(size=40)
    d_pos, d_m = nbody.vjp(pos, m, c, h, eps=eps)
    step = 1e-6
    for i, k in [(0, 0), (7, 1), (39, 2)]:
        up, down = pos.copy(), pos.copy()
        up[i, k] += step
        down[i, k] -= step
        fd = (loss(up, m, c, h, eps) - loss(down, m, c, h, eps)) / (2 * step)
        assert abs(d_pos[i, k] - fd) <= 1e-6 * max(1.0, abs(fd)), (i, k, d_pos[i, k], fd)
    for j in [0, 13]:
        up, down = m.copy(), m.copy()
        up[j] += step * m[j]
        down[j] -= step * m[j]
        fd = (loss(pos, up, c, h, eps) - loss(pos, down, c, h, eps)) / (2 * step * m[j])
        assert abs(d_m[j] - fd) <= 1e-6 * max(1.0, abs(fd)), (j, d_m[j], fd)


@pytest.mark.parametrize("executor", ["cpu", "reference"])
def test_vjp_of_a_system_in_f32_holds_each_particle_to_the_f64_product(executor):
    # Without targets each particle's whole gradient is summed in one pass: its target and
    # source parts (each much larger, of opposite sign) are not rounded apart in f32.
    rng = np.random.default_rng(5)
    n = 3000
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    m = (rng.uniform(0.5, 1.5, size=n) / n).astype(np.float32)
    ca, cp = rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=n).astype(np.float32)
    d_pos, d_m = nbody.vjp(pos, m, ca, cp, eps=0.01, executor=executor, precision="f32")
    want_pos, want_m = nbody.vjp(*(a.astype(np.float64) for a in (pos, m, ca, cp)), eps=0.01)
    size = np.linalg.norm(want_pos, axis=1)
    err = np.linalg.norm(d_pos - want_pos, axis=1) / np.maximum(size, 1e-3 * size.max())
    size_m = np.abs(want_m)
    err_m = np.abs(d_m - want_m) / np.maximum(size_m, 1e-3 * size_m.max())
    assert err.max() < 1e-4 and err_m.max() < 1e-4, (err.max(), err_m.max())


def test_vjp_with_targets_splits_the_gradients():
    pos, m = plummer_like(30)
    targets = np.random.default_rng(2).normal(size=(5, 3))
    c = np.ones((5, 3))
    d_t, d_s, d_m = nbody.vjp(pos, m, c, targets=targets, eps=0.01)
    assert d_t.shape == (5, 3) and d_s.shape == (30, 3) and d_m.shape == (30,)
    # Translating everything changes nothing: the target and source parts cancel.
    np.testing.assert_allclose(d_t.sum(0) + d_s.sum(0), 0.0, atol=1e-12)


def test_tidal_is_the_acceleration_gradient():
    pos, m = plummer_like(25)
    acc, phi, t = nbody.tidal(pos, m, eps=0.02)
    a2, p2 = nbody.accelerations(pos, m, eps=0.02)
    np.testing.assert_allclose(acc, a2, rtol=1e-13)
    np.testing.assert_allclose(phi, p2, rtol=1e-13)
    np.testing.assert_allclose(t, t.transpose(0, 2, 1))
    # Target 3's own position moved, everything else held: a target outside the others.
    step = 1e-6
    for k in range(3):
        up, down = pos[3:4].copy(), pos[3:4].copy()
        up[0, k] += step
        down[0, k] -= step
        others = np.delete(np.arange(25), 3)
        fd = (nbody.accelerations(pos[others], m[others], eps=0.02, targets=up)[0]
              - nbody.accelerations(pos[others], m[others], eps=0.02, targets=down)[0]) / (2 * step)
        np.testing.assert_allclose(t[3, :, k], fd[0], rtol=1e-6, atol=1e-8)


def test_bad_cotangents_are_refused_by_name():
    pos, m = plummer_like(10)
    c = np.ones((10, 3))
    c[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"cot_acc\[4\]"):
        nbody.vjp(pos, m, c)
    with pytest.raises(ValueError, match="cot_acc has 3 rows"):
        nbody.vjp(pos, m, np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"cot_phi\[2\]"):
        nbody.vjp(pos, m, np.ones((10, 3)), np.array([0, 1, np.inf, 0, 0, 0, 0, 0, 0, 0.0]))
    with pytest.raises(ValueError, match="masses"):
        nbody.vjp(pos, -m, np.ones((10, 3)))


jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
import nbody.jax as njax  # noqa: E402

jax.config.update("jax_enable_x64", True)


def all_pairs(pos, m, eps):
    """The field by a plain jax.numpy all-pairs sum (each particle skipping itself)."""
    n = pos.shape[0]
    d = pos[None, :, :] - pos[:, None, :]
    off = 1.0 - jnp.eye(n)
    r2 = (d**2).sum(-1) + eps**2 + (1.0 - off)  # the diagonal kept away from zero
    inv = off / jnp.sqrt(r2)
    acc = (m[None, :, None] * d * (inv**3)[..., None]).sum(1)
    phi = -(m[None, :] * inv).sum(1)
    return acc, phi


@pytest.mark.parametrize("eps", [0.0, 0.03])
def test_jax_gradients_match_autodiff_of_all_pairs(eps):
    pos, m = plummer_like(64)
    rng = np.random.default_rng(9)
    c, h = jnp.asarray(rng.normal(size=(64, 3))), jnp.asarray(rng.normal(size=64))

    def scalar(field):
        return lambda p, mm: (c * field(p, mm)[0]).sum() + (h * field(p, mm)[1]).sum()

    ours = jax.jit(jax.grad(scalar(lambda p, mm: njax.accelerations(p, mm, eps=eps)), argnums=(0, 1)))
    theirs = jax.grad(scalar(lambda p, mm: all_pairs(p, mm, eps)), argnums=(0, 1))
    (gp, gm), (wp, wm) = ours(jnp.asarray(pos), jnp.asarray(m)), theirs(jnp.asarray(pos), jnp.asarray(m))
    np.testing.assert_allclose(gp, wp, rtol=1e-10, atol=1e-10 * float(jnp.abs(wp).max()))
    np.testing.assert_allclose(gm, wm, rtol=1e-10, atol=1e-10 * float(jnp.abs(wm).max()))
    acc, phi = njax.accelerations(jnp.asarray(pos), jnp.asarray(m), eps=eps)
    np.testing.assert_allclose(acc, all_pairs(jnp.asarray(pos), jnp.asarray(m), eps)[0], rtol=1e-10, atol=1e-12)


def test_jax_potential_energy_gradient_is_minus_the_force():
    pos, m = plummer_like(50)
    pos, m = jnp.asarray(pos), jnp.asarray(m)
    energy = jax.jit(lambda p: 0.5 * (m * njax.potential(p, m, eps=0.01)).sum())
    force = -jax.grad(energy)(pos)
    acc, _ = njax.accelerations(pos, m, eps=0.01)
    np.testing.assert_allclose(force, m[:, None] * acc, rtol=1e-10, atol=1e-14)


def test_jax_refuses_bad_shapes():
    with pytest.raises(ValueError, match="positions must have shape"):
        njax.accelerations(jnp.ones((4, 2)), jnp.ones(4))
    with pytest.raises(ValueError, match="masses must have shape"):
        njax.accelerations(jnp.ones((4, 3)), jnp.ones(3))


def on_cpu(a):
    """A JAX array on the host, also where JAX's default device is a GPU."""
    return jax.device_put(a, jax.devices("cpu")[0])


def test_host_arrays_through_dlpack_work_as_numpy_arrays_do():
    pos, m = plummer_like(20)
    want = nbody.accelerations(pos, m, eps=0.01)
    got = nbody.accelerations(on_cpu(pos), on_cpu(m), eps=0.01)
    np.testing.assert_array_equal(got[0], want[0])
    d_pos, _ = nbody.vjp(on_cpu(pos), m, cot_acc=on_cpu(np.ones((20, 3))), eps=0.01)
    np.testing.assert_array_equal(d_pos, nbody.vjp(pos, m, np.ones((20, 3)), eps=0.01)[0])


def test_leaves_vjp_is_the_product_of_the_leaves_field():
    pos, m = plummer_like(48)
    # Three leaves of 16, each against all three (the whole system, as leaf pairs).
    pairs = np.array([[0, 16, 0, 3], [16, 32, 0, 3], [32, 48, 0, 3]])
    spans = np.array([[0, 16], [16, 32], [32, 48]])
    rng = np.random.default_rng(6)
    c, h = rng.normal(size=(48, 3)), rng.normal(size=48)
    d_pos, d_m = nbody.leaves_vjp(pos, m, pairs, spans, c, h, eps=0.02)
    want_pos, want_m = nbody.vjp(pos, m, c, h, eps=0.02)
    # The same sums in another order (per leaf pair, against one pass): roundings apart.
    np.testing.assert_allclose(d_pos, want_pos, rtol=1e-10, atol=1e-12 * np.abs(want_pos).max())
    np.testing.assert_allclose(d_m, want_m, rtol=1e-10, atol=1e-12 * np.abs(want_m).max())


def test_simulations_take_host_arrays_through_dlpack():
    pos, m = plummer_like(32)
    vel = np.zeros((32, 3))
    a = nbody.Simulation(positions=on_cpu(pos), velocities=on_cpu(vel), masses=on_cpu(m))
    b = nbody.Simulation(positions=pos, velocities=vel, masses=m)
    np.testing.assert_array_equal(a.positions, b.positions)
    if nbody.cuda_compiled:
        return  # GPU arrays are read (python/tests/test_gpu_arrays.py)
    with pytest.raises(ValueError, match="velocities is on DLPack device"):

        class OnGpu:
            def __dlpack__(self, stream=None):
                raise AssertionError("not to be read")

            def __dlpack_device__(self):
                return (2, 0)

        nbody.Simulation(positions=pos, velocities=OnGpu(), masses=m)
