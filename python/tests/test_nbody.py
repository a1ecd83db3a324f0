"""The Python package against a numpy double loop, on bad input, on non-contiguous
arrays and from several threads."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import nbody


def direct(pos, m, eps, G=1.0, targets=None):
    """The sum in float64 with numpy: each target skips its own pair when targets is None."""
    t = pos if targets is None else targets
    d = pos[None, :, :] - t[:, None, :]
    r2 = (d * d).sum(-1) + eps * eps
    with np.errstate(divide="ignore"):
        inv = np.where(r2 > 0, 1.0 / np.sqrt(r2), 0.0)
    if targets is None:
        np.fill_diagonal(inv, 0.0)
    acc = G * (m[None, :, None] * d * (inv**3)[:, :, None]).sum(1)
    pot = -G * (m[None, :] * inv).sum(1)
    return acc, pot


@pytest.fixture
def system():
    rng = np.random.default_rng(7)
    return rng.normal(size=(300, 3)), rng.uniform(0.5, 1.5, size=300)


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("executor", ["cpu", "reference", "mixed"])
@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_matches_the_double_loop(system, executor, eps):
    pos, m = system
    acc, pot = nbody.accelerations(pos, m, eps=eps, G=2.0, executor=executor)
    want_acc, want_pot = direct(pos, m, eps, G=2.0)
    tol = 1e-5 if executor == "mixed" else 1e-12  # mixed: f32 interactions
    assert acc.shape == (300, 3) and pot.shape == (300,) and acc.dtype == np.float64
    assert rel(acc, want_acc) < tol and rel(pot, want_pot) < tol


def test_float32_inputs_and_precision(system):
    pos, m = system
    want_acc, want_pot = direct(pos, m, 0.01)
    acc, pot = nbody.accelerations(pos.astype(np.float32), m.astype(np.float32), eps=0.01, precision="f32")
    assert acc.dtype == np.float32 and rel(acc, want_acc) < 1e-5 and rel(pot, want_pot) < 1e-5
    acc64, _ = nbody.accelerations(pos.astype(np.float32), m, eps=0.01)
    assert acc64.dtype == np.float64


def test_separate_targets_and_no_potential(system):
    pos, m = system
    targets = np.random.default_rng(3).normal(size=(40, 3))
    acc, pot = nbody.accelerations(pos, m, eps=0.02, targets=targets, potential=False)
    want_acc, _ = direct(pos, m, 0.02, targets=targets)
    assert acc.shape == (40, 3) and rel(acc, want_acc) < 1e-12
    assert np.all(pot == 0.0)


def test_any_strides(system):
    pos, m = system
    big = np.zeros((600, 7))
    big[::2, 1:4] = pos
    masses = np.zeros(900)
    masses[::3] = m
    strided, _ = nbody.accelerations(big[::2, 1:4], masses[::3], eps=0.01)
    fortran, _ = nbody.accelerations(np.asfortranarray(pos), m, eps=0.01)
    transposed, _ = nbody.accelerations(np.ascontiguousarray(pos.T).T, m, eps=0.01)
    plain, _ = nbody.accelerations(pos, m, eps=0.01)
    assert np.array_equal(strided, plain) and np.array_equal(fortran, plain) and np.array_equal(transposed, plain)


@pytest.mark.parametrize(
    "change, error",
    [
        (lambda p, m: (p.__setitem__((3, 1), np.nan), (p, m))[1], r"positions\[3\]"),
        (lambda p, m: (m.__setitem__(2, -1.0), (p, m))[1], r"masses\[2\] is negative"),
        (lambda p, m: (m.__setitem__(4, np.inf), (p, m))[1], r"masses\[4\]"),
        (lambda p, m: (np.zeros((5, 4)), np.ones(5)), r"shape \(N, 3\), got \(5, 4\)"),
        (lambda p, m: (np.zeros(6), np.ones(2)), r"positions must be a float32 or float64 numpy array"),
        (lambda p, m: (np.zeros((5, 3), dtype=np.int64), np.ones(5)), r"int64"),
        (lambda p, m: ([[0.0, 0.0, 0.0]], np.ones(1)), r"positions must be"),
        (lambda p, m: (p, m[:-1]), r"masses has 299 entries, positions has 300"),
        (lambda p, m: (p, m.astype(np.complex128)), r"masses must be"),
    ],
)
def test_bad_input_is_a_value_error_naming_it(system, change, error):
    pos, m = change(*[a.copy() for a in system])
    with pytest.raises(ValueError, match=error):
        nbody.accelerations(pos, m)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"eps": -1.0}, "eps must be"),
        ({"G": np.nan}, "G must be"),
        ({"executor": "abacus"}, "unknown family"),
        ({"executor": "cpu:100000"}, "at most"),
        ({"executor": "cpu:1", "threads": 2}, "give the threads once"),
        ({"precision": "f16"}, "precision must be"),
        ({"threads": 0}, "threads must be"),
        ({"executor": "mixed", "precision": "f32"}, "f64"),
        ({"targets": np.zeros((2, 2))}, r"targets must have shape"),
    ],
)
def test_bad_parameters(system, kwargs, error):
    with pytest.raises(ValueError, match=error):
        nbody.accelerations(*system, **kwargs)


def test_backends_say_what_they_compute():
    caps = nbody.backends(capabilities=True)
    assert set(caps) == set(nbody.backends())
    assert "snap" in caps["cpu"]["plummer"] and "snap" not in caps["cpu"]["spline"]
    assert "columns" not in caps["reference"]["plummer"]
    for backend, kernels in caps.items():
        if backend.startswith("cuda-mixed"):
            assert "jerk" not in kernels["spline"] and "accelerations" in kernels["spline"]


def test_the_build_says_whether_it_has_cuda_and_a_gpu_agrees_with_the_cpu(system):
    assert isinstance(nbody.cuda_compiled, bool)
    listed = any(b.startswith("cuda") for b in nbody.backends())
    if listed:
        # A build with CUDA on a machine with a GPU: the GPU's f64 kernels match the CPU's.
        want, _ = nbody.accelerations(*system, eps=0.01)
        got, _ = nbody.accelerations(*system, eps=0.01, executor="cuda")
        assert np.allclose(got, want, rtol=1e-9, atol=0)
        return
    # No CUDA compiled in, or no device: a clear error naming what is missing.
    with pytest.raises((ValueError, RuntimeError), match="(?i)cuda|device"):
        nbody.accelerations(*system, executor="cuda")
    if not nbody.cuda_compiled:
        assert not listed


def test_threads_get_the_same_answer(system):
    pos, m = system
    want, _ = nbody.accelerations(pos, m, eps=0.01, threads=1)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda k: nbody.accelerations(pos, m, eps=0.01, threads=1 + k % 2)[0], range(16)))
    assert all(np.allclose(r, want, rtol=1e-13, atol=0) for r in results)


def test_the_gil_is_released_during_the_computation():
    rng = np.random.default_rng(1)
    pos, m = rng.normal(size=(12000, 3)), np.ones(12000)
    done = threading.Event()
    ticks = 0

    def work():
        nbody.accelerations(pos, m, eps=0.01, threads=1)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks += 1
    t.join()
    # With the GIL held for the whole call, the loop could run only between switches.
    assert ticks > 10000


def test_simulation_conserves_energy_and_mirrors_the_command():
    sim = nbody.Simulation(ic="plummer", n=256, seed=3, integrator="leapfrog", dt=1 / 256, eps=1 / 64)
    e0 = sim.energies()[2]
    assert sim.evolve(0.25) == pytest.approx(0.25)
    assert sim.steps == 64
    assert abs((sim.energies()[2] - e0) / e0) < 1e-4
    assert sim.positions.shape == (256, 3) and sim.velocities.shape == (256, 3) and sim.masses.shape == (256,)


@pytest.mark.parametrize("integrator", ["hermite", "block-hermite", "hermite6", "rk"])
def test_figure_eight_returns(integrator):
    sim = nbody.Simulation(ic="figure8", integrator=integrator, eta=0.01, dt=1 / 64, eps=0.0, tolerance=1e-10)
    start = sim.positions.copy()
    sim.evolve(6.32591398)
    assert np.abs(sim.positions - start).max() < 1e-2


def test_simulation_from_arrays_and_bad_arrays():
    pos = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
    vel = np.array([[0, -0.5, 0], [0, 0.5, 0]])
    sim = nbody.Simulation(positions=pos, velocities=vel, masses=np.ones(2), eps=0.0, dt=0.001)
    sim.step()
    assert sim.time == pytest.approx(0.001)
    with pytest.raises(ValueError, match="masses"):
        nbody.Simulation(positions=pos, masses=np.ones(3))
    with pytest.raises(ValueError, match="integrator must be"):
        nbody.Simulation(integrator="euler")


def test_every_offered_backend_opens(system):
    """Every backend string the build offers works in a call (in f64: the mixed
    families compute f64 results) and agrees with the reference."""
    want, _ = nbody.accelerations(*system, eps=0.01, executor="reference")
    for backend in nbody.backends():
        acc, _ = nbody.accelerations(*system, eps=0.01, executor=backend, precision="f64")
        tol = 1e-5 if "mixed" in backend else 1e-12
        assert np.allclose(acc, want, rtol=tol, atol=tol * np.abs(want).max()), backend


def test_test_particles_orbit_and_exert_nothing():
    # A unit point mass and a test particle on a circular orbit of radius 2 around it.
    pos, mass, vel = np.zeros((1, 3)), np.ones(1), np.zeros((1, 3))
    probe, speed = np.array([[2.0, 0.0, 0.0]]), (1 / 2) ** 0.5
    sim = nbody.Simulation(positions=pos, velocities=vel, masses=mass, integrator="hermite", eta=0.01, eps=0.0,
                           test_positions=probe, test_velocities=np.array([[0.0, speed, 0.0]]))
    period = 2 * np.pi * 2 ** 1.5
    sim.evolve(period)
    p = sim.positions
    assert p.shape == (2, 3)
    assert np.all(p[0] == 0.0)  # the point mass feels nothing
    assert abs(np.hypot(p[1, 0], p[1, 1]) - 2.0) < 1e-5  # on its circle
    assert np.hypot(p[1, 0] - 2.0, p[1, 1]) < 1e-3  # back where it started, to the phase error
    with pytest.raises(ValueError, match="test_velocities"):
        nbody.Simulation(ic="kepler", test_positions=probe, test_velocities=np.zeros((2, 3)))


def test_collisions_are_every_pair_closer_than_its_radii():
    rng = np.random.default_rng(4)
    # A tight clump (lists overflow their slots and are searched again) and a loose set.
    pos = np.concatenate([rng.normal(scale=0.01, size=(20, 3)), rng.uniform(-1, 1, size=(80, 3))])
    radii = rng.uniform(0.0, 0.08, size=100)
    sim = nbody.Simulation(positions=pos, masses=np.ones(100), integrator="hermite", eps=0.01)
    pairs = sim.collisions(radii)
    d = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=2)
    want = [(i, j) for i in range(100) for j in range(i + 1, 100) if d[i, j] < radii[i] + radii[j]]
    assert pairs.shape == (len(want), 2) and pairs.dtype == np.int64
    assert [tuple(p) for p in pairs] == want
    assert len(want) > 150  # the clump touches itself almost everywhere
    assert sim.collisions(np.zeros(100)).shape == (0, 2)
    with pytest.raises(ValueError, match=r"radii\[3\] is negative"):
        sim.collisions(np.where(np.arange(100) == 3, -1.0, 0.1))
    with pytest.raises(ValueError, match="radii has 99 entries"):
        sim.collisions(np.zeros(99))


def test_a_step_never_passes_until_where_the_integrator_can_shorten_it():
    sim = nbody.Simulation(ic="plummer", n=64, integrator="hermite", eta=0.02)
    t = 0.0
    while t < 0.1:
        t = sim.step(until=0.1)
    assert t == 0.1
    assert sim.step(until=0.1) == 0.1  # nothing left to do
    with pytest.raises(ValueError, match="NaN"):
        sim.step(until=float("nan"))


def spline_direct(pos, m, eps):
    """Gadget's cubic spline (support h = 2.8 eps) in numpy, written from its polynomials in u."""
    h = 2.8 * eps
    d = pos[None, :, :] - pos[:, None, :]
    r = np.sqrt((d**2).sum(-1))
    u = r / h
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(
            u < 0.5,
            (32 / 3 + u**2 * (32 * u - 38.4)) / h**3,
            np.where(u < 1, (64 / 3 - 48 * u + 38.4 * u**2 - 32 / 3 * u**3 - 1 / (15 * u**3)) / h**3, 1 / r**3),
        )
        w = np.where(
            u < 0.5,
            -(-2.8 + u**2 * (16 / 3 + u**2 * (6.4 * u - 9.6))) / h,
            np.where(u < 1, -(-3.2 + 1 / (15 * u) + u**2 * (32 / 3 + u * (-16 + u * (9.6 - 32 / 15 * u)))) / h, 1 / r),
        )
    np.fill_diagonal(g, 0.0)
    np.fill_diagonal(w, 0.0)
    return (m[None, :, None] * d * g[:, :, None]).sum(1), -(m[None, :] * w).sum(1)


@pytest.mark.parametrize("executor", ["cpu", "reference", "mixed"])
def test_spline_softening_matches_gadgets_kernel(system, executor):
    pos, m = system
    eps = 0.2  # h = 0.56: many of the 300 pairs are inside the support
    acc, pot = nbody.accelerations(pos, m, eps=eps, executor=executor, softening="spline")
    want_acc, want_pot = spline_direct(pos, m, eps)
    assert rel(acc, want_acc) < 1e-9 and rel(pot, want_pot) < 1e-9
    plummer, _ = nbody.accelerations(pos, m, eps=eps, executor=executor)
    assert rel(acc, plummer) > 1e-3  # a different kernel
    with pytest.raises(ValueError, match="softening"):
        nbody.accelerations(pos, m, eps=eps, softening="gaussian")


def test_simulation_with_spline_softening_conserves_energy():
    sim = nbody.Simulation(n=128, integrator="hermite", eps=0.05, softening="spline")
    e0 = sim.energies()
    sim.evolve(0.25)
    e1 = sim.energies()
    assert abs((e1[2] - e0[2]) / e0[2]) < 1e-5
    plummer = nbody.Simulation(n=128, integrator="hermite", eps=0.05)
    assert abs(plummer.energies()[1] - e0[1]) > 1e-6 * abs(e0[1])


@pytest.mark.parametrize("executor", ["cpu", "reference"])
def test_softening_per_particle_matches_the_symmetrised_rule(system, executor):
    """Two species: eps per particle gives Plummer with eps_ij² = (eps_i² + eps_j²) / 2,
    in the plain call, against separate targets, and in the batched call."""
    pos, m = system
    eps = np.where(np.arange(300) % 3 == 0, 0.3, 0.02)
    acc, pot = nbody.accelerations(pos, m, eps=eps, executor=executor)
    d = pos[None, :, :] - pos[:, None, :]
    e2 = 0.5 * (eps[:, None] ** 2 + eps[None, :] ** 2)
    rinv = 1 / np.sqrt((d**2).sum(-1) + e2)
    np.fill_diagonal(rinv, 0.0)
    want_acc = (m[None, :, None] * d * rinv[:, :, None] ** 3).sum(1)
    want_pot = -(m[None, :] * rinv).sum(1)
    assert rel(acc, want_acc) < 1e-12 and rel(pot, want_pot) < 1e-12
    uniform, _ = nbody.accelerations(pos, m, eps=0.02, executor=executor)
    assert rel(acc, uniform) > 1e-3  # the lengths were used
    # Separate targets (the first ten particles' positions, as field points) with their lengths.
    t_acc, _ = nbody.accelerations(pos, m, eps=eps, targets=pos[:10] + 1e-3, target_eps=eps[:10], executor=executor)
    assert t_acc.shape == (10, 3)
    # The batched call over one pair of every particle against all of them.
    pairs = np.array([[0, 300, 0, 1]], dtype=np.int64)
    spans = np.array([[0, 300]], dtype=np.int64)
    b_acc, b_pot = nbody.leaves(pos, m, pairs, spans, eps=eps, executor=executor)
    assert rel(b_acc, want_acc) < 1e-12 and rel(b_pot, want_pot) < 1e-12
    # The spline takes the larger support.
    s_acc, _ = nbody.accelerations(pos, m, eps=eps, softening="spline", executor=executor)
    assert rel(s_acc, acc) > 1e-4


def test_softening_per_particle_bad_input(system):
    pos, m = system
    eps = np.full(300, 0.01)
    eps[7] = -1.0
    with pytest.raises(ValueError, match=r"eps\[7\] is negative"):
        nbody.accelerations(pos, m, eps=eps)
    with pytest.raises(ValueError, match="eps has 299 entries"):
        nbody.accelerations(pos, m, eps=np.full(299, 0.01))
    with pytest.raises(ValueError, match="target_eps"):
        nbody.accelerations(pos, m, eps=np.full(300, 0.01), targets=pos[:3])
    with pytest.raises(ValueError, match="eps must be finite"):
        nbody.accelerations(pos, m, eps=float("nan"))


def test_leaves_with_cells_match_direct_summation():
    """Two groups of a clustered system: each feels its own particles directly and the other
    group as one quadrupole cell; the far field agrees with direct summation to the octupole."""
    rng = np.random.default_rng(11)
    a = rng.normal(scale=0.1, size=(60, 3))
    b = rng.normal(scale=0.1, size=(40, 3)) + [5.0, 1.0, 0.0]
    pos, m = np.vstack([a, b]), rng.uniform(0.5, 1.5, size=100)
    cells = np.vstack([nbody.cell(pos[:60], m[:60]), nbody.cell(pos[60:], m[60:])])
    pairs = np.array([[0, 60, 0, 1], [60, 100, 1, 2]], dtype=np.int64)
    spans = np.array([[0, 60], [60, 100]], dtype=np.int32)
    cell_ranges = np.array([[1, 2], [0, 1]], dtype=np.uint32)
    cell_spans = np.array([[0, 1], [1, 2]])
    for executor in ["cpu", "reference"]:
        acc, pot = nbody.leaves(pos, m, pairs, spans, cells, cell_ranges, cell_spans, eps=0.01, executor=executor)
        want_acc, want_pot = direct(pos, m, 0.01)
        err = np.linalg.norm(acc - want_acc, axis=1) / np.linalg.norm(want_acc, axis=1)
        assert err.max() < 1e-3 and rel(pot, want_pot) < 1e-4
    # Ten lanes, without the spread: its term, eps² S / r⁵, is far below the octupole here.
    acc10, _ = nbody.leaves(pos, m, pairs, spans, cells[:, :10], cell_ranges, cell_spans, eps=0.01)
    assert 0 < rel(acc10, acc) < 1e-6
    with pytest.raises(ValueError, match="shape"):
        nbody.leaves(pos, m, pairs, spans, cells[:, :9], cell_ranges, cell_spans)
    # Without cells: the groups feel only themselves.
    acc, _ = nbody.leaves(pos, m, pairs, spans, eps=0.01)
    own, _ = nbody.accelerations(pos[:60], m[:60], eps=0.01)
    assert rel(acc[:60], own) < 1e-12
    # Bad input names the argument.
    with pytest.raises(ValueError, match="source span"):
        nbody.leaves(pos, m, pairs, np.array([[0, 60], [60, 101]]))
    with pytest.raises(ValueError, match="cell span"):
        nbody.leaves(pos, m, pairs, spans, cells, cell_ranges, np.array([[0, 1], [1, 3]]))
    with pytest.raises(ValueError, match="go together"):
        nbody.leaves(pos, m, pairs, spans, cells=cells)
    with pytest.raises(ValueError, match="pairs"):
        nbody.leaves(pos, m, np.array([[0, 60, 0]]), spans)
    with pytest.raises(ValueError, match="pairs\\[0\\] holds -1"):
        nbody.leaves(pos, m, np.array([[-1, 60, 0, 1]]), spans)
    bad = cells.copy()
    bad[1, 3] = -1.0
    with pytest.raises(ValueError, match="negative"):
        nbody.leaves(pos, m, pairs, spans, bad, cell_ranges, cell_spans)
    bad = cells.copy()
    bad[0, 10] = -1.0
    with pytest.raises(ValueError, match="negative spread"):
        nbody.leaves(pos, m, pairs, spans, bad, cell_ranges, cell_spans)


def test_cell_is_mass_centre_traceless_quadrupole_and_spread():
    pos = np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
    c = nbody.cell(pos, np.ones(2))
    assert c.tolist() == [0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, -0.5, 0.0, -0.5, 0.5]


def test_simulation_over_a_tree_conserves_energy_and_refuses_what_it_cannot_do():
    """gravity="tree": the leapfrog over the Barnes-Hut tree, its energy from the tree's
    potential (within 1e-3 of direct summation's), conserved as a leapfrog conserves it;
    the relative criterion too; the tree's options refused where they mean nothing."""
    direct = nbody.Simulation(n=2000, seed=3)
    tree = nbody.Simulation(n=2000, seed=3, gravity="tree", theta=0.6)
    relative = nbody.Simulation(n=2000, seed=3, gravity="tree", alpha=0.002)
    e_direct = direct.energies()[2]
    for sim in (tree, relative):
        e0 = sim.energies()[2]
        assert 0 < abs(e0 / e_direct - 1) < 1e-3
        sim.evolve(0.0625)
        assert sim.steps == 16
        assert abs(sim.energies()[2] / e0 - 1) < 1e-3
    assert tree.positions.shape == (2000, 3) and np.isfinite(tree.velocities).all()
    assert tree.masses.sum() == pytest.approx(1.0)
    # On the host tree the executor's neighbour search still finds contacts.
    x = tree.positions
    r = np.full(2000, 5e-3)
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    want = sorted((i, j) for i, j in zip(*np.nonzero(d2 < (2 * r[0]) ** 2)) if i < j)
    assert [tuple(p) for p in tree.collisions(r)] == want
    with pytest.raises(ValueError, match="need gravity='tree'"):
        nbody.Simulation(n=64, theta=0.5)
    with pytest.raises(ValueError, match="leapfrog only"):
        nbody.Simulation(n=64, gravity="tree", integrator="hermite")
    with pytest.raises(ValueError, match="gravity must be"):
        nbody.Simulation(n=64, gravity="fmm")
    with pytest.raises(ValueError, match="alpha must be positive"):
        nbody.Simulation(n=64, gravity="tree", alpha=-1.0)


@pytest.mark.skipif(not any(b.startswith("cuda") for b in nbody.backends()), reason="needs a CUDA build and a GPU")
def test_the_device_tree_steps_as_the_host_tree_does():
    """gravity="tree" on one GPU keeps the whole step on the device: its energy and its
    particles after 16 steps agree with the host tree's on the CPU."""
    host = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32")
    gpu = nbody.Simulation(n=4096, seed=5, gravity="tree", theta=0.5, precision="f32", executor="cuda")
    for sim in (host, gpu):
        sim.evolve(0.0625)
    assert gpu.steps == host.steps == 16
    assert abs(gpu.energies()[2] / host.energies()[2] - 1) < 1e-4
    assert np.abs(gpu.positions - host.positions).max() < 1e-3


def test_snapshots_in_gadget_hdf5_round_trip_or_say_why_not(tmp_path):
    """write_snapshot / read_snapshot / Simulation.save_snapshot: the Gadget layout the
    command writes, checked with h5py where it is installed; without HDF5 in the build,
    a RuntimeError that says so."""
    rng = np.random.default_rng(2)
    pos, vel, m = rng.normal(size=(100, 3)), rng.normal(size=(100, 3)).astype(np.float32), rng.random(100)
    path = tmp_path / "snap.hdf5"
    if not nbody.hdf5_compiled:
        with pytest.raises(RuntimeError, match="no HDF5"):
            nbody.write_snapshot(path, pos, vel, m)
        return
    nbody.write_snapshot(path, pos, vel, m, time=0.75)
    p, v, mass = nbody.read_snapshot(path)
    assert np.array_equal(p, pos) and np.array_equal(v, vel.astype(np.float64)) and np.array_equal(mass, m)
    try:
        import h5py
    except ImportError:
        h5py = None
    if h5py is not None:
        with h5py.File(path, "r") as f:
            h = f["Header"].attrs
            assert list(h["NumPart_ThisFile"]) == [0, 100, 0, 0, 0, 0] and h["Time"] == 0.75
            assert np.array_equal(f["PartType1/Coordinates"][:], pos)
            assert np.array_equal(f["PartType1/ParticleIDs"][:], np.arange(1, 101))
    sim = nbody.Simulation(n=256, seed=4)
    sim.evolve(0.03125)
    sim.save_snapshot(tmp_path / "sim.hdf5")
    p, v, mass = nbody.read_snapshot(tmp_path / "sim.hdf5")
    assert np.array_equal(p, sim.positions) and np.array_equal(v, sim.velocities)
    # Bad input and damaged files: errors naming what is wrong.
    with pytest.raises(ValueError, match="velocities has 99 rows"):
        nbody.write_snapshot(path, pos, vel[:99], m)
    with pytest.raises(ValueError, match="NaN"):
        nbody.write_snapshot(path, np.full((2, 3), np.nan), np.zeros((2, 3)), np.ones(2))
    (tmp_path / "junk.hdf5").write_bytes(b"not hdf5")
    with pytest.raises(OSError, match="junk.hdf5: not a readable HDF5 file"):
        nbody.read_snapshot(tmp_path / "junk.hdf5")
    with pytest.raises(OSError, match="missing"):
        nbody.write_snapshot(tmp_path / "missing" / "s.hdf5", pos, vel, m)


def test_jerk_matches_a_numpy_double_loop():
    rng = np.random.default_rng(7)
    pos, vel, m = rng.normal(size=(60, 3)), rng.normal(size=(60, 3)), rng.random(60)
    eps = 0.05
    d = pos[None, :, :] - pos[:, None, :]  # d[i, j] = x_j - x_i
    dv = vel[None, :, :] - vel[:, None, :]
    r2 = (d**2).sum(-1) + eps**2
    np.fill_diagonal(r2, np.inf)
    inv3 = r2**-1.5
    want_a = (m[None, :, None] * d * inv3[..., None]).sum(1)
    rv = (d * dv).sum(-1)
    want_j = (m[None, :, None] * (dv * inv3[..., None] - 3 * (rv / r2)[..., None] * d * inv3[..., None])).sum(1)
    want_phi = -(m[None, :] / np.sqrt(r2)).sum(1)
    acc, jerk, phi = nbody.jerk(pos, vel, m, eps=eps)
    assert np.allclose(acc, want_a, rtol=1e-12, atol=1e-12)
    assert np.allclose(jerk, want_j, rtol=1e-11, atol=1e-11)
    assert np.allclose(phi, want_phi, rtol=1e-12)
    acc32, jerk32, _ = nbody.jerk(pos, vel, m, eps=eps, precision="f32")
    assert acc32.dtype == np.float32 and np.allclose(jerk32, want_j, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="velocities has 59 rows"):
        nbody.jerk(pos, vel[:59], m)
    with pytest.raises(ValueError, match="eps must be finite"):
        nbody.jerk(pos, vel, m, eps=-1.0)


def test_density_map_deposits_every_particle_inside_the_window():
    rng = np.random.default_rng(8)
    pos, m = rng.uniform(-0.5, 0.5, size=(1000, 3)), rng.random(1000)
    grid = nbody.density_map(pos, m, plane="xz", half_width=1.0, pixels=64)
    assert grid.shape == (64, 64) and grid.dtype == np.float64
    assert grid.sum() == pytest.approx(m.sum(), rel=1e-12)
    # Everything lies in the middle half of the window.
    assert grid[:12].sum() == 0 and grid[-12:].sum() == 0
    one = nbody.density_map(np.array([[0.0, 0.0, 0.0]]), np.array([2.0]), pixels=4)
    assert one.sum() == pytest.approx(2.0) and one[1:3, 1:3].sum() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="plane must be"):
        nbody.density_map(pos, m, plane="xw")
    with pytest.raises(ValueError, match="pixels must be"):
        nbody.density_map(pos, m, pixels=0)
    with pytest.raises(ValueError, match="half"):
        nbody.density_map(pos, m, half_width=-1.0)


def test_the_integrators_are_the_registry_s():
    names = [name for name, _ in nbody.integrators()]
    assert names == ["leapfrog", "hermite", "block-hermite", "hermite6", "rk"]
    assert all(about for _, about in nbody.integrators())
    with pytest.raises(ValueError, match="one of leapfrog, hermite, block-hermite, hermite6, rk"):
        nbody.Simulation(integrator="rk45")


def test_the_softenings_are_the_registry_s_and_every_one_computes():
    names = [name for name, _ in nbody.softenings()]
    assert names[0] == "plummer" and "spline" in names
    pos = np.array([[0.0, 0.0, 0.0], [0.05, 0.0, 0.0], [1.0, 0.0, 0.0]])
    plummer, _ = nbody.accelerations(pos, np.ones(3), eps=0.1)
    for name in names:
        acc, _ = nbody.accelerations(pos, np.ones(3), eps=0.1, softening=name)
        # Every kernel is Newtonian for the far pair and softened for the near one.
        assert np.all(np.isfinite(acc)) and acc[0, 0] > 0
        assert name == "plummer" or not np.array_equal(acc, plummer)
    with pytest.raises(ValueError, match="one of " + ", ".join(names)):
        nbody.accelerations(pos, np.ones(3), eps=0.1, softening="gaussian")


@pytest.mark.parametrize("integrator", ["leapfrog", "hermite", "block-hermite", "hermite6", "rk"])
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_a_saved_simulation_continues_bit_for_bit(tmp_path, integrator, precision):
    """save/load and pickle: the loaded simulation steps exactly as the original does."""
    import pickle

    kw = dict(n=128, seed=6, integrator=integrator, precision=precision, dt=1 / 64, eta=0.05, tolerance=1e-6)
    if (integrator, precision) == ("hermite6", "f32"):
        with pytest.raises(ValueError, match="f64 for Hermite6"):
            nbody.Simulation(**kw)
        return
    sim = nbody.Simulation(**kw)
    sim.evolve(0.125)
    sim.save(tmp_path / "run.nbody")
    loaded = nbody.Simulation.load(tmp_path / "run.nbody")
    unpickled = pickle.loads(pickle.dumps(sim))
    for other in (loaded, unpickled):
        assert other.time == sim.time and other.steps == sim.steps
    for s in (sim, loaded, unpickled):
        s.evolve(0.25)
    for other in (loaded, unpickled):
        assert other.steps == sim.steps
        assert np.array_equal(other.positions, sim.positions) and np.array_equal(other.velocities, sim.velocities)
        assert other.energies() == sim.energies()


def test_damaged_saves_and_tree_saves_are_refused(tmp_path):
    sim = nbody.Simulation(n=32)
    sim.save(tmp_path / "a.nbody")
    data = bytearray((tmp_path / "a.nbody").read_bytes())
    data[100] ^= 1
    (tmp_path / "b.nbody").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="b.nbody: damaged"):
        nbody.Simulation.load(tmp_path / "b.nbody")
    (tmp_path / "c.nbody").write_bytes(bytes(data[:50]))
    with pytest.raises(ValueError, match="c.nbody"):
        nbody.Simulation.load(tmp_path / "c.nbody")
    with pytest.raises(OSError, match="missing.nbody"):
        nbody.Simulation.load(tmp_path / "missing.nbody")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nbody", "b.nbody", "c.nbody"]


@pytest.mark.parametrize("alpha", [None, 0.002])
def test_a_saved_tree_simulation_continues_bit_for_bit(tmp_path, alpha):
    """The tree leapfrog saves its field too (the next kick's, and the relative
    criterion's scale): loaded, it steps exactly as the original."""
    sim = nbody.Simulation(n=400, seed=12, gravity="tree", theta=0.6, alpha=alpha, dt=1 / 64)
    sim.evolve(0.125)
    sim.save(tmp_path / "tree.nbody")
    loaded = nbody.Simulation.load(tmp_path / "tree.nbody")
    assert loaded.time == sim.time and loaded.steps == sim.steps
    for s in (sim, loaded):
        s.evolve(0.25)
    assert np.array_equal(loaded.positions, sim.positions) and loaded.energies() == sim.energies()


@pytest.mark.parametrize("gravity", ["direct", "tree"])
def test_particles_are_added_and_removed_between_steps(gravity):
    sim = nbody.Simulation(n=100, seed=9, gravity=gravity)
    sim.evolve(1 / 16)
    t, steps, before = sim.time, sim.steps, sim.positions
    sim.add_particles(np.array([[5.0, 0, 0], [-5.0, 0, 0]]), np.zeros((2, 3)), np.array([0.01, 0.02]))
    assert sim.positions.shape == (102, 3) and sim.time == t and sim.steps == steps
    assert np.array_equal(sim.positions[:100], before) and sim.masses[-1] == 0.02
    sim.remove_particles([0, 101])
    assert sim.positions.shape == (100, 3)
    assert np.array_equal(sim.positions[:99], before[1:]) and sim.positions[99, 0] == 5.0
    sim.evolve(1 / 8)
    assert sim.time == pytest.approx(1 / 8) and np.isfinite(sim.positions).all()
    with pytest.raises(ValueError, match="index 100 is not a particle"):
        sim.remove_particles([100])
    with pytest.raises(ValueError, match="given twice"):
        sim.remove_particles([3, 3])
    with pytest.raises(ValueError, match="empty"):
        sim.remove_particles(list(range(100)))
    with pytest.raises(ValueError, match="NaN"):
        sim.add_particles(np.full((1, 3), np.nan), np.zeros((1, 3)), np.ones(1))


def test_an_orbit_in_au_solar_masses_and_years_takes_a_year(tmp_path):
    """units="au,msun,yr": inputs, times and outputs in those units; the Earth on a
    circular orbit is back after one year."""
    g = 4 * np.pi**2 * (1 - 3.8e-5)  # G in AU^3 / (Msun yr^2) with the Julian year
    m_e = 3.0034896e-6
    v = np.sqrt(g * (1 + m_e))
    pos = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    vel = np.array([[0.0, -m_e * v, 0], [0.0, v, 0]])
    sim = nbody.Simulation(positions=pos, velocities=vel, masses=np.array([1.0, m_e]), eps=0.0,
                           dt=1 / 1024, units="au,msun,yr")
    assert sim.time == 0.0
    sim.evolve(1.0)
    assert sim.time == pytest.approx(1.0, abs=1e-9)
    d = sim.positions[1] - sim.positions[0]
    assert np.linalg.norm(d - [1.0, 0, 0]) < 1e-3
    assert np.linalg.norm(sim.velocities[1]) == pytest.approx(2 * np.pi, rel=1e-3)
    kinetic = sim.energies()[0]
    assert kinetic == pytest.approx(0.5 * m_e * v**2, rel=1e-3)
    again = nbody.Simulation.from_bytes(sim.to_bytes())
    assert again.time == sim.time and np.array_equal(again.velocities, sim.velocities)
    if nbody.hdf5_compiled:
        sim.save_snapshot(tmp_path / "orbit.hdf5")
        _, v_read, _ = nbody.read_snapshot(tmp_path / "orbit.hdf5")
        assert np.array_equal(v_read, sim.velocities)
        try:
            import h5py
        except ImportError:
            h5py = None
        if h5py is not None:
            with h5py.File(tmp_path / "orbit.hdf5", "r") as f:
                h = f["Header"].attrs
                assert h["UnitLength_in_cm"] == 1.495978707e13 and h["Time"] == sim.time
    with pytest.raises(ValueError, match="unknown time unit"):
        nbody.Simulation(n=8, units="au,msun,fortnight")


def test_diagnostics_report_what_the_command_does():
    sim = nbody.Simulation(n=512, seed=11)
    d = sim.diagnostics()
    assert set(d) == {"time", "steps", "kinetic", "potential", "total", "momentum", "angular_momentum",
                      "centre_of_mass", "virial_ratio"}
    kinetic, potential, total = sim.energies()
    assert (d["kinetic"], d["potential"], d["total"]) == (kinetic, potential, total)
    assert d["virial_ratio"] == pytest.approx(2 * kinetic / abs(potential))
    assert np.abs(d["momentum"]).max() < 1e-12 and np.abs(d["centre_of_mass"]).max() < 1e-12
