"""GPU arrays in place (`nbody.accelerations`, `jerk`, `leaves` and a Simulation's
initial state on CuPy, PyTorch, JAX and numba device arrays). Everywhere: mixed or
misplaced arrays are refused by name. With a GPU, a CUDA build and a producer library:
results equal the host path on the same executor bit for bit (the same kernels), come
back as the producer's arrays on the same GPU, bad values are named, and the producer's
stream is waited for."""

import numpy as np
import pytest

import nbody


class OnGpu:
    """A DLPack export that claims CUDA memory and must not be read."""

    def __dlpack__(self, stream=None):
        raise AssertionError("not to be read")

    def __dlpack_device__(self):
        return (2, 0)


class Interface:
    __cuda_array_interface__ = {"shape": (3, 3), "typestr": "<f8", "data": (0, False), "version": 3}


def test_gpu_and_host_arrays_mixed_are_refused_by_name():
    with pytest.raises(ValueError, match="positions is not on the GPU"):
        nbody.accelerations(np.zeros((3, 3)), OnGpu())
    with pytest.raises(ValueError, match="masses is not on the GPU"):
        nbody.accelerations(Interface(), np.ones(3))


def test_out_is_for_gpu_arrays():
    pos, m = np.zeros((3, 3)), np.ones(3)
    with pytest.raises(ValueError, match="out is for GPU arrays"):
        nbody.accelerations(pos, m, out=(np.zeros((3, 3)), np.zeros(3)))


def test_other_functions_refuse_gpu_arrays_by_name():
    with pytest.raises(ValueError, match="masses is on DLPack device .* only accelerations, jerk, leaves and vjp"):
        nbody.tidal(np.zeros((3, 3)), OnGpu())
    with pytest.raises(ValueError, match="positions is a GPU array .* only accelerations, jerk, leaves and vjp"):
        nbody.density_map(Interface(), np.ones(3))
    with pytest.raises(ValueError, match="velocities is not on the GPU"):
        nbody.jerk(Interface(), np.zeros((3, 3)), Interface())


@pytest.mark.skipif(nbody.cuda_compiled, reason="this build has the CUDA executor")
def test_gpu_arrays_without_cuda_are_a_clear_error():
    with pytest.raises(ValueError, match="CUDA executor"):
        nbody.accelerations(OnGpu(), OnGpu())


def _producers():
    """(name, to_device(numpy array), to_numpy(array)) of each library here that sees a GPU."""
    found = []
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            found.append(("cupy", cupy.asarray, cupy.asnumpy))
    except Exception:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            found.append(("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy()))
    except Exception:
        pass
    try:
        from numba import cuda

        if cuda.is_available():
            found.append(("numba", cuda.to_device, lambda d: d.copy_to_host()))
    except Exception:
        pass
    try:
        import jax

        # float64 stays float64 (JAX makes float32 of it otherwise).
        jax.config.update("jax_enable_x64", True)
        if jax.devices("gpu"):
            found.append(("jax", lambda a: jax.device_put(a, jax.devices("gpu")[0]), np.asarray))
    except Exception:
        pass
    return found


PRODUCERS = _producers() if nbody.cuda_compiled else []
needs_gpu = pytest.mark.skipif(not PRODUCERS, reason="no GPU, CUDA build and GPU array library here")


def plummer_like(n, dtype, seed=3):
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, 3)).astype(dtype)
    m = rng.uniform(0.5, 1.5, size=n).astype(dtype) / n
    return pos, m


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
@pytest.mark.parametrize("dtype,precision", [(np.float32, "f32"), (np.float64, "f64")])
def test_gpu_arrays_match_the_host_columns_bit_for_bit(producer, dtype, precision):
    name, up, down = producer
    pos, m = plummer_like(5000, dtype)
    points = np.linspace(-1.5, 1.5, 900).reshape(300, 3).astype(dtype)
    for targets in (None, points):
        for potential in (True, False):
            want = nbody.accelerations(
                pos, m, eps=0.01, targets=targets, potential=potential, executor="cuda", precision=precision
            )
            got = nbody.accelerations(
                up(pos), up(m), eps=0.01, targets=None if targets is None else up(targets), potential=potential
            )
            if name == "numba":
                # numba takes the GpuArray as it is (the CUDA array interface).
                assert isinstance(got[0], nbody._nbody.GpuArray)
                acc, phi = got[0].to_numpy(), got[1].to_numpy()
            else:
                assert type(got[0]).__module__.split(".")[0] == type(up(pos)).__module__.split(".")[0]
                acc, phi = down(got[0]), down(got[1])
            assert acc.dtype == dtype and acc.shape == want[0].shape and phi.shape == want[1].shape
            np.testing.assert_array_equal(acc, want[0])
            np.testing.assert_array_equal(phi, want[1])


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
@pytest.mark.parametrize("dtype,precision", [(np.float32, "f32"), (np.float64, "f64")])
def test_gpu_jerk_matches_the_host_slice_jerk_bit_for_bit(producer, dtype, precision):
    name, up, down = producer
    pos, m = plummer_like(3000, dtype)
    vel = np.random.default_rng(4).normal(size=(3000, 3)).astype(dtype)
    want = nbody.jerk(pos, vel, m, eps=0.01, executor="cuda", precision=precision)
    got = nbody.jerk(up(pos), up(vel), up(m), eps=0.01)
    for g, w in zip(got, want):
        g = g.to_numpy() if isinstance(g, nbody._nbody.GpuArray) else down(g)
        assert g.dtype == dtype
        np.testing.assert_array_equal(g, w)
    bad = vel.copy()
    bad[11, 0] = np.inf
    with pytest.raises(ValueError, match=r"velocities\[11\] has a NaN"):
        nbody.jerk(up(pos), up(bad), up(m))


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
def test_gpu_arrays_refuse_bad_input_by_name(producer):
    name, up, down = producer
    pos, m = plummer_like(1000, np.float64)
    bad = pos.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match=r"positions\[5\] or masses\[5\] has a NaN"):
        nbody.accelerations(up(bad), up(m))
    negative = m.copy()
    negative[17] = -1.0
    with pytest.raises(ValueError, match=r"masses\[17\] is negative"):
        nbody.accelerations(up(pos), up(negative))
    with pytest.raises(ValueError, match="positions must be float32"):
        nbody.accelerations(up(pos), up(m), precision="f32")
    with pytest.raises(ValueError, match="masses must hold one value a row"):
        nbody.accelerations(up(pos), up(m[:999]))
    with pytest.raises(ValueError, match="shape"):
        nbody.accelerations(up(np.ascontiguousarray(pos[:, :2])), up(m))
    with pytest.raises(ValueError, match="executor 'cuda'"):
        nbody.accelerations(up(pos), up(m), executor="cpu")
    if name in ("cupy", "torch"):
        fortran = up(np.asfortranarray(pos))
        if name == "torch":
            fortran = up(pos.T.copy()).T
        with pytest.raises(ValueError, match="C-contiguous"):
            nbody.accelerations(fortran, up(m))


@needs_gpu
def test_gpu_array_outputs_export_and_copy_back():
    pos, m = plummer_like(100, np.float32)
    name, up, down = PRODUCERS[0]
    acc, phi = nbody._nbody._accelerations_device(up(pos), up(m), 0.01, 1.0, None, True, "cuda", "f32", "plummer")
    assert acc.shape == (100, 3) and phi.shape == (100,) and acc.dtype == np.float32 and len(acc) == 100
    cai = acc.__cuda_array_interface__
    assert cai["typestr"] == "<f4" and cai["shape"] == (100, 3) and cai["data"][0] != 0
    assert acc.__dlpack_device__() == (2, acc.device)
    want = nbody.accelerations(pos, m, eps=0.01, executor="cuda", precision="f32")
    np.testing.assert_array_equal(acc.to_numpy(), want[0])
    np.testing.assert_array_equal(phi.to_numpy(), want[1])


@needs_gpu
def test_the_producers_stream_is_waited_for():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU for PyTorch")
    pos, m = plummer_like(1 << 16, np.float32)
    want = nbody.accelerations(pos, m, eps=0.01, executor="cuda", precision="f32")
    side = torch.cuda.Stream()
    x, mm = torch.from_numpy(pos).cuda(), torch.from_numpy(m).cuda()
    torch.cuda.synchronize()
    for _ in range(3):
        with torch.cuda.stream(side):
            # A slow product first on the side stream, then the positions written there.
            big = torch.randn(4096, 4096, device="cuda")
            for _ in range(8):
                big = big @ big
                big = big / big.norm()
            y = torch.empty_like(x)
            y.copy_(x + 0 * big[0, 0])
            got = nbody.accelerations(y, mm, eps=0.01)
        np.testing.assert_array_equal(got[0].cpu().numpy(), want[0])


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
def test_simulations_take_gpu_arrays_as_their_initial_state(producer):
    name, up, down = producer
    pos, m = plummer_like(256, np.float64)
    vel = np.random.default_rng(5).normal(size=(256, 3)) * 0.3
    for executor in ("cpu", "cuda"):
        a = nbody.Simulation(positions=pos, velocities=vel, masses=m, executor=executor)
        b = nbody.Simulation(positions=up(pos), velocities=up(vel), masses=up(m), executor=executor)
        a.evolve(1 / 16)
        b.evolve(1 / 16)
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.velocities, b.velocities)


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
@pytest.mark.parametrize("dtype,precision", [(np.float32, "f32"), (np.float64, "f64")])
def test_gpu_leaves_match_the_host_leaf_call_bit_for_bit(producer, dtype, precision):
    name, up, down = producer
    pos, m = plummer_like(2048, dtype)
    # Groups of 64 targets of the first 1,536 against every particle, and two far cells.
    pairs = np.array([[t, t + 64, 0, 1] for t in range(0, 1536, 64)])
    spans = np.array([[0, 2048]])
    cells = np.array([nbody.cell(pos[:1024] + 40.0, m[:1024]), nbody.cell(pos[1024:] - 40.0, m[1024:])])
    ranges, cell_spans = np.tile([0, 1], (len(pairs), 1)), np.array([[0, 2]])
    want = nbody.leaves(pos, m, pairs, spans, cells, ranges, cell_spans, eps=0.01, executor="cuda", precision=precision)
    for index_arrays in ("host", "gpu"):
        lists = (pairs, spans, cells, ranges, cell_spans)
        if index_arrays == "gpu" and name in ("cupy", "torch"):
            lists = tuple(up(np.ascontiguousarray(a)) for a in lists)
        got = nbody.leaves(up(pos), up(m), *lists, eps=0.01)
        for g, w in zip(got, want):
            g = g.to_numpy() if isinstance(g, nbody._nbody.GpuArray) else down(g)
            np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="source span 0 is reversed or reaches past"):
        nbody.leaves(up(pos), up(m), pairs, np.array([[0, 4096]]), eps=0.01)


class ReadOnly:
    """The CUDA array interface of another array, marked read-only."""

    def __init__(self, array):
        cai = dict(array.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], True)
        self.__cuda_array_interface__ = cai


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
def test_results_go_into_the_callers_arrays(producer):
    name, up, down = producer
    pos, m = plummer_like(1000, np.float32)
    vel = np.random.default_rng(2).normal(size=(1000, 3)).astype(np.float32)
    want = nbody.accelerations(pos, m, eps=0.01, executor="cuda", precision="f32")
    if name == "jax":
        with pytest.raises(ValueError, match="JAX array, which cannot be written"):
            nbody.accelerations(up(pos), up(m), eps=0.01, out=(up(np.zeros((1000, 3), np.float32)), up(m)))
        return
    acc, phi = up(np.full((1000, 3), 7.0, np.float32)), up(np.full(1000, 7.0, np.float32))
    got = nbody.accelerations(up(pos), up(m), eps=0.01, out=(acc, phi))
    assert got[0] is acc and got[1] is phi
    np.testing.assert_array_equal(down(acc), want[0])
    np.testing.assert_array_equal(down(phi), want[1])
    nbody.accelerations(up(pos), up(m), eps=0.01, potential=False, out=(acc, phi))
    assert not down(phi).any()
    want_j = nbody.jerk(pos, vel, m, eps=0.01, executor="cuda", precision="f32")
    outs = (up(np.zeros((1000, 3), np.float32)), up(np.zeros((1000, 3), np.float32)), up(np.zeros(1000, np.float32)))
    nbody.jerk(up(pos), up(vel), up(m), eps=0.01, out=outs)
    for o, w in zip(outs, want_j):
        np.testing.assert_array_equal(down(o), w)
    d_pos, d_m = up(pos), up(m)
    with pytest.raises(ValueError, match="overlaps an input"):
        nbody.accelerations(d_pos, d_m, eps=0.01, out=(d_pos, phi))
    with pytest.raises(ValueError, match=r"out\[1\] \(potential\) must have shape"):
        nbody.accelerations(d_pos, d_m, eps=0.01, out=(acc, up(np.zeros(999, np.float32))))
    with pytest.raises(ValueError, match="out must hold 2 arrays"):
        nbody.accelerations(d_pos, d_m, eps=0.01, out=(acc,))
    if hasattr(acc, "__cuda_array_interface__"):
        before = down(acc).copy()
        with pytest.raises(ValueError, match=r"out\[0\] \(acceleration\) is read-only"):
            nbody.accelerations(d_pos, d_m, eps=0.01, out=(ReadOnly(acc), phi))
        np.testing.assert_array_equal(down(acc), before)


@needs_gpu
@pytest.mark.parametrize("producer", PRODUCERS, ids=[p[0] for p in PRODUCERS])
@pytest.mark.parametrize("dtype,precision,rtol", [(np.float32, "f32", 1e-5), (np.float64, "f64", 1e-12)])
def test_gpu_vjp_matches_the_host_product(producer, dtype, precision, rtol):
    name, up, down = producer
    pos, m = plummer_like(2000, dtype)
    rng = np.random.default_rng(9)
    ca, cp = rng.normal(size=(2000, 3)).astype(dtype), rng.normal(size=2000).astype(dtype)
    for phi in (None, cp):
        want = nbody.vjp(pos, m, ca, phi, eps=0.01, executor="cuda", precision=precision)
        got = nbody.vjp(up(pos), up(m), up(ca), None if phi is None else up(phi), eps=0.01)
        for g, w in zip(got, want):
            g = g.to_numpy() if isinstance(g, nbody._nbody.GpuArray) else down(g)
            assert g.dtype == dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    bad = ca.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"cot_acc\[7\] or cot_phi\[7\] has a NaN"):
        nbody.vjp(up(pos), up(m), up(bad))


@needs_gpu
@pytest.mark.parametrize("dtype,precision,rtol", [(np.float32, "f32", 1e-4), (np.float64, "f64", 1e-9)])
def test_cuda_vjp_of_host_arrays_holds_each_particle_to_the_f64_product(dtype, precision, rtol):
    # A system on itself runs the pair kernels: each particle's target and source parts are
    # summed together, so in f32 they are not rounded apart before they cancel (the two
    # parts added err by about 0.1 in f32). The f64 bound is the CPU reference's own: its
    # two parts, added, cancel to about 1e-10.
    pos, m = plummer_like(3000, dtype, seed=5)
    rng = np.random.default_rng(11)
    ca, cp = rng.normal(size=(3000, 3)).astype(dtype), rng.normal(size=3000).astype(dtype)
    got = nbody.vjp(pos, m, ca, cp, eps=0.01, executor="cuda", precision=precision)
    f64 = [a.astype(np.float64) for a in (pos, m, ca, cp)]
    want = nbody.vjp(*f64, eps=0.01, executor="cpu", precision="f64")
    d_pos, d_m = (np.asarray(g, np.float64) for g in got)
    # Each particle's error against its own gradient (the largest's thousandth at least).
    size = np.maximum(np.linalg.norm(want[0], axis=1), 1e-3 * np.linalg.norm(want[0], axis=1).max())
    assert (np.linalg.norm(d_pos - want[0], axis=1) / size).max() < rtol
    size_m = np.maximum(np.abs(want[1]), 1e-3 * np.abs(want[1]).max())
    assert (np.abs(d_m - want[1]) / size_m).max() < rtol


@needs_gpu
def test_torch_gradients_stay_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU for PyTorch")
    import nbody.torch as ntorch

    pos, m = plummer_like(1024, np.float64)
    grads = []
    for device in ("cuda", "cpu"):
        p = torch.tensor(pos, device=device, requires_grad=True)
        mm = torch.tensor(m, device=device, requires_grad=True)
        # The CPU tensors on the CUDA executor (copied), the CUDA tensors in place.
        acc, phi = ntorch.accelerations(p, mm, eps=0.01, executor=None if device == "cuda" else "cuda")
        assert acc.device.type == device
        ((acc * acc).sum() + phi.sum()).backward()
        assert p.grad.device.type == device
        grads.append((p.grad.cpu().numpy(), mm.grad.cpu().numpy()))
    for g, w in zip(grads[0], grads[1]):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12 * np.abs(w).max())
