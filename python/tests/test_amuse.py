"""nbody.amuse, the AMUSE code, through AMUSE itself (a Python worker on the sockets
channel). Skipped where AMUSE is not installed, unless NBODY_REQUIRE_AMUSE=1 (as
scripts/amuse-check.sh sets it), where a missing AMUSE is a failure."""

import os

import numpy as np
import pytest

if os.environ.get("NBODY_REQUIRE_AMUSE") == "1":
    import amuse  # noqa: F401  (a failure here, not a skip)
    from amuse.community.hermite.interface import Hermite  # noqa: F401
else:
    pytest.importorskip("amuse", reason="AMUSE is not installed (pip install './python[amuse]')")
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (AMUSE's Python workers import it)")

from amuse.couple.bridge import Bridge  # noqa: E402
from amuse.datamodel import Particles  # noqa: E402
from amuse.ic.plummer import new_plummer_model  # noqa: E402
from amuse.units import nbody_system, units  # noqa: E402

from nbody.amuse import Nbody  # noqa: E402

os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

EPS2 = 0.01 | nbody_system.length**2


def plummer(n, seed):
    np.random.seed(seed)
    return new_plummer_model(n)


def energy(code):
    return (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)


@pytest.fixture
def code():
    c = Nbody(channel_type="sockets")
    yield c
    c.stop()


def run(code, stars, t_end, **parameters):
    """(E0, dE/E, final positions) of `stars` evolved by `code` to `t_end`."""
    code.parameters.epsilon_squared = EPS2
    for name, value in parameters.items():
        setattr(code.parameters, name, value)
    code.particles.add_particles(stars)
    e0 = energy(code)
    code.evolve_model(t_end)
    assert code.model_time == t_end
    return e0, (energy(code) - e0) / abs(e0), code.particles.position.value_in(nbody_system.length)


def test_a_plummer_sphere_as_amuse_own_ph4_and_hermite_evolve_it():
    """Each code at its own default accuracy parameter (their criteria differ: at one
    nominal eta the errors differ by orders of magnitude)."""
    stars = plummer(256, 3)
    t_end = 1.0 | nbody_system.time
    from amuse.community.hermite.interface import Hermite

    makers = {"nbody": Nbody, "hermite": Hermite}
    if _ph4():
        makers["ph4"] = _ph4()
    elif os.environ.get("NBODY_REQUIRE_AMUSE") == "1":
        pytest.fail("AMUSE's ph4 is not installed")
    results = {}
    for name, make in makers.items():
        c = make(channel_type="sockets")
        try:
            results[name] = run(c, stars.copy(), t_end)
        finally:
            c.stop()
    e0, de, x = results.pop("nbody")
    for name, (e0_other, de_other, x_other) in results.items():
        assert e0 == pytest.approx(e0_other, rel=1e-12), name
        # Energy errors of the same order or better, all small.
        assert abs(de) < 1e-6 and abs(de_other) < 1e-5, (name, de, de_other)
        assert abs(de) < 10 * abs(de_other), (name, de, de_other)
        # The same trajectories, to the difference of two integrators over a crossing time.
        assert np.median(np.abs(x - x_other)) < 1e-3, name


def _ph4():
    try:
        from amuse.community.ph4.interface import ph4

        return ph4
    except ImportError:
        return None


@pytest.mark.parametrize("integrator", ["leapfrog", "hermite6", "rk"])
def test_every_integrator_lands_on_the_time_and_conserves_energy(code, integrator):
    extra = {"timestep": (1.0 / 256.0) | nbody_system.time} if integrator == "leapfrog" else {}
    for t in (0.1, 0.25):
        code.particles.add_particles(plummer(64, 5)) if t == 0.1 else None
        code.parameters.integrator = integrator
        code.parameters.epsilon_squared = EPS2
        for name, value in extra.items():
            setattr(code.parameters, name, value)
        if t == 0.1:
            e0 = energy(code)
        code.evolve_model(t | nbody_system.time)
        assert code.model_time == t | nbody_system.time
    assert abs((energy(code) - e0) / e0) < 1e-3


def test_gravity_and_potential_at_points_match_the_direct_sum(code):
    stars = plummer(100, 7)
    code.parameters.epsilon_squared = EPS2
    code.particles.add_particles(stars)
    rng = np.random.default_rng(1)
    points = rng.normal(size=(50, 3))
    eps = np.where(np.arange(50) < 25, 0.0, 0.2)
    ax, ay, az = code.get_gravity_at_point(
        eps | nbody_system.length, *(points[:, k] | nbody_system.length for k in range(3))
    )
    phi = code.get_potential_at_point(eps | nbody_system.length, *(points[:, k] | nbody_system.length for k in range(3)))
    x = stars.position.value_in(nbody_system.length)
    m = stars.mass.value_in(nbody_system.mass)
    d = x[None, :, :] - points[:, None, :]
    r2 = (d**2).sum(axis=2) + EPS2.value_in(nbody_system.length**2) + eps[:, None] ** 2
    want_a = (m[None, :, None] * d / r2[:, :, None] ** 1.5).sum(axis=1)
    want_phi = -(m[None, :] / np.sqrt(r2)).sum(axis=1)
    got_a = np.column_stack([a.value_in(nbody_system.acceleration) for a in (ax, ay, az)])
    assert np.allclose(got_a, want_a, rtol=1e-12, atol=0)
    assert np.allclose(phi.value_in(nbody_system.potential), want_phi, rtol=1e-12, atol=0)


def test_a_bridge_of_two_clusters_follows_one_code_holding_both():
    a, b = plummer(64, 11), plummer(64, 12)
    a.mass *= 0.5
    b.mass *= 0.5
    a.position += (1.5, 0, 0) | nbody_system.length
    b.position -= (1.5, 0, 0) | nbody_system.length
    a.velocity += (0, 0.3, 0) | nbody_system.speed
    b.velocity -= (0, 0.3, 0) | nbody_system.speed
    t_end, dt = 0.5 | nbody_system.time, (1.0 / 128.0) | nbody_system.time

    whole = Nbody(channel_type="sockets")
    parts = [Nbody(channel_type="sockets"), Nbody(channel_type="sockets")]
    try:
        both = Particles()
        both.add_particles(a)
        both.add_particles(b)
        _, de_whole, x_whole = run(whole, both, t_end)
        for c, stars in zip(parts, (a, b)):
            c.parameters.epsilon_squared = EPS2
            c.particles.add_particles(stars)
        bridge = Bridge(timestep=dt)
        bridge.add_system(parts[0], (parts[1],))
        bridge.add_system(parts[1], (parts[0],))
        bridged_e0 = bridge.kinetic_energy + bridge.potential_energy
        bridge.evolve_model(t_end)
        bridged_e1 = bridge.kinetic_energy + bridge.potential_energy
        x_bridge = np.concatenate([c.particles.position.value_in(nbody_system.length) for c in parts])
    finally:
        whole.stop()
        for c in parts:
            c.stop()
    de_bridge = float((bridged_e1 - bridged_e0) / abs(bridged_e0))
    assert abs(de_whole) < 1e-6
    # The bridge's kicks split the cross forces at second order in its step.
    assert abs(de_bridge) < 1e-3
    assert np.median(np.abs(x_bridge - x_whole)) < 1e-3


def test_the_collision_condition_stops_a_head_on_pair(code):
    pair = Particles(3)
    pair.mass = [0.5, 0.5, 0.0] | nbody_system.mass
    pair.position = [[-1, 0, 0], [1, 0, 0], [0, 5, 0]] | nbody_system.length
    pair.velocity = [[0.2, 0, 0], [-0.2, 0, 0], [0, 0, 0]] | nbody_system.speed
    pair.radius = [0.05, 0.1, 0.5] | nbody_system.length
    code.particles.add_particles(pair)
    collision = code.stopping_conditions.collision_detection
    collision.enable()
    code.evolve_model(10 | nbody_system.time)
    assert collision.is_set()
    assert code.model_time < 10 | nbody_system.time
    hit = [collision.particles(0), collision.particles(1)]
    assert len(hit[0]) == 1
    assert {hit[0][0].key, hit[1][0].key} == {code.particles[0].key, code.particles[1].key}
    x = code.particles.position.value_in(nbody_system.length)
    gap = np.linalg.norm(x[0] - x[1])
    # Stopped on the step it touched: closer than the radii, not through each other.
    assert 0.05 < gap < 0.15
    # Merge them as a collision handler would, and go on.
    merged = Particles(1)
    merged.mass = 1.0 | nbody_system.mass
    merged.position = code.particles[:2].center_of_mass()
    merged.velocity = code.particles[:2].center_of_mass_velocity()
    merged.radius = 0.2 | nbody_system.length
    code.particles.remove_particles(code.particles[:2])
    code.particles.add_particles(merged)
    collision.disable()
    t = code.model_time
    code.evolve_model(t + (0.5 | nbody_system.time))
    assert len(code.particles) == 2
    assert code.model_time == t + (0.5 | nbody_system.time)


def test_the_number_of_steps_condition_stops_an_evolve(code):
    code.particles.add_particles(plummer(32, 2))
    code.parameters.epsilon_squared = EPS2
    code.parameters.stopping_conditions_number_of_steps = 3
    condition = code.stopping_conditions.number_of_steps_detection
    condition.enable()
    code.evolve_model(5 | nbody_system.time)
    assert condition.is_set()
    assert 0 | nbody_system.time < code.model_time < 5 | nbody_system.time


def earth_after_one_year(eta):
    """Where a massless Earth on a circular orbit is after one period, in AU, and
    whether the Sun stayed put."""
    converter = nbody_system.nbody_to_si(1 | units.MSun, 1 | units.AU)
    code = Nbody(converter, channel_type="sockets")
    try:
        code.parameters.timestep_parameter = eta
        bodies = Particles(2)
        bodies.mass = [1, 0] | units.MSun
        bodies.position = [[0, 0, 0], [1, 0, 0]] | units.AU
        speed = (units.constants.G * (1 | units.MSun) / (1 | units.AU)).sqrt()
        bodies.velocity = speed * np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        code.particles.add_particles(bodies)
        year = 2 * np.pi * ((1 | units.AU) ** 3 / (units.constants.G * (1 | units.MSun))).sqrt()
        assert abs(year.value_in(units.yr) - 1) < 1e-3
        code.evolve_model(year)
        assert abs(code.model_time / year - 1) < 1e-15
        sun = code.particles[0].position.value_in(units.AU)
        return code.particles[1].position.value_in(units.AU), np.abs(sun).max() == 0
    finally:
        code.stop()


def test_an_earth_as_test_particle_orbits_the_sun_at_fourth_order():
    # Hermite's step goes as sqrt(eta): a quarter of eta halves the steps, and the
    # error of a fourth-order integrator falls 16-fold.
    coarse, sun_still = earth_after_one_year(0.004)
    fine, _ = earth_after_one_year(0.001)
    error_coarse, error_fine = np.abs(coarse - [1, 0, 0]).max(), np.abs(fine - [1, 0, 0]).max()
    assert sun_still, "the Sun moved: a test particle exerted a force"
    assert error_fine < 2e-6
    assert 12 < error_coarse / error_fine < 20, (error_coarse, error_fine)


def test_bad_input_is_an_error_that_changes_nothing(code):
    code.particles.add_particles(plummer(8, 1))
    before = code.particles.position.value_in(nbody_system.length)
    with pytest.raises(Exception):
        code.particles[0].x = float("nan") | nbody_system.length
    with pytest.raises(Exception):
        code.parameters.backend = "no-such-backend"
    with pytest.raises(Exception):
        code.parameters.integrator = "verlet"
    with pytest.raises(Exception):
        code.parameters.epsilon_squared = -1 | nbody_system.length**2
    assert np.array_equal(code.particles.position.value_in(nbody_system.length), before)
    assert code.parameters.backend == "cpu"
    code.evolve_model(0.1 | nbody_system.time)
