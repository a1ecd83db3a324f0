"""nbody as an AMUSE gravitational-dynamics code.

`Nbody` speaks AMUSE's GravitationalDynamics and GravityField interfaces: particles in
and out with units (through an ``nbody_system`` converter for physical ones),
``evolve_model``, energies, parameters, ``get_gravity_at_point`` and
``get_potential_at_point`` (the kick a ``Bridge`` asks of a field code, computed by the
chosen backend, on the GPU for ``"cuda"``) and the collision-detection stopping
condition, found by the backend's neighbour search. It runs as an AMUSE Python worker:
a separate process that imports this module and drives :class:`nbody.Simulation`.
Needs ``amuse-framework`` and ``mpi4py`` (``pip install "./python[amuse]"``).

>>> from amuse.ic.plummer import new_plummer_model
>>> from amuse.units import nbody_system
>>> from nbody.amuse import Nbody
>>> code = Nbody(channel_type="sockets")
>>> code.parameters.epsilon_squared = 0.01 | nbody_system.length**2
>>> _ = code.particles.add_particles(new_plummer_model(64))
>>> code.evolve_model(0.125 | nbody_system.time)
>>> code.model_time
quantity<0.125 time>
>>> code.stop()

Parameters (``code.parameters``): ``epsilon_squared`` (Plummer softening, default 0),
``integrator`` (``"hermite"``: fourth-order Hermite with shared adaptive steps, the
default; ``"leapfrog"``: fixed steps of at most ``timestep``, shortened so that every
``evolve_model`` lands on its time; ``"hermite6"``: sixth-order Hermite with the snap;
``"rk"``: adaptive Dormand-Prince), its accuracy
``timestep_parameter`` (the Hermite schemes' eta, default 0.02) or ``tolerance`` (Runge-Kutta,
default 1e-8), ``backend`` (a backend string of the registry: ``"cpu"``, ``"cpu:8"``,
``"mixed"``, ``"cuda"``, ``"cuda:0,1"``, ...; see :func:`nbody.backends`) and
``precision`` (``"f64"`` or ``"f32"``). Particles of zero mass are test particles: they
feel every massive particle and exert nothing.

Every ``evolve_model`` ends with every particle at the requested time; a change to the
particles or the parameters between two calls restarts the integrator from the new
state (Hermite from its startup step), as a ``Bridge`` kick does every step.
``get_gravity_at_point(eps, x, y, z)`` softens each point with
``sqrt(epsilon_squared + eps**2)``.

Stopping conditions: ``collision_detection`` (after each step, every pair closer than
the sum of its radii; for ``"rk"``, at the end of each ``evolve_model``),
``timeout`` (wall-clock seconds of one ``evolve_model``) and ``number_of_steps``.
"""

import hashlib
import math
import os
import tempfile
import time

import numpy as np
from amuse.community.interface.gd import (
    GravitationalDynamics,
    GravitationalDynamicsInterface,
    GravityFieldCode,
    GravityFieldInterface,
)
from amuse.community.interface.stopping_conditions import StoppingConditionInterface, StoppingConditions
from amuse.rfi.core import PythonCodeInterface, legacy_function, remote_function
from amuse.units import nbody_system

import nbody

COLLISION, TIMEOUT, NUMBER_OF_STEPS = 0, 3, 4
SUPPORTED_CONDITIONS = (COLLISION, TIMEOUT, NUMBER_OF_STEPS)
# The registry's integrators but block-hermite: block steps land on multiples of a
# power-of-two step, and evolve_model lands anywhere.
INTEGRATORS = tuple(name for name, _ in nbody.integrators() if name != "block-hermite")


def _arrays(inherited):
    """The inherited per-particle call, taking whole arrays in one message: AMUSE calls a
    Python worker once per element otherwise."""

    def specification():
        spec = inherited.specification_function()
        spec.can_handle_array = False
        spec.must_handle_array = True
        spec.addParameter("number_of_particles", dtype="int32", direction=spec.LENGTH)
        return spec

    specification.__name__ = inherited.specification_function.__name__
    specification.__doc__ = inherited.specification_function.__doc__
    return legacy_function(specification)


class NbodyImplementation:
    """The worker side: the particles, the parameters and the running simulation.

    Every call returns 0 on success and -1 with a message on stderr otherwise, as AMUSE
    codes do; an out-of-range index or a bad value never changes the particles.
    """

    def __init__(self):
        self.next_id = 1
        self.ids = np.zeros(0, dtype=np.int64)
        self.mass = np.zeros(0)
        self.pos = np.zeros((0, 3))
        self.vel = np.zeros((0, 3))
        self.radius = np.zeros(0)
        self.row = {}
        self.time = 0.0
        self.begin_time = 0.0
        self.eps2 = 0.0
        self.eta = 0.02
        self.dt = 1.0 / 64.0
        self.tolerance = 1e-8
        self.integrator = "hermite"
        self.backend = "cpu"
        self.precision = "f64"
        self.stop_params = {"timeout": 4.0, "steps": 1}
        # The parameters of conditions this code does not support (AMUSE sets them all).
        self.kept_params = {}
        self.enabled = set()
        self.conditions_set = []
        # The simulation (None after any change), the model time at its time 0, the
        # rows in its order (massive particles first, then test particles) and its
        # leapfrog step.
        self.sim = None
        self.sim_start = 0.0
        self.sim_order = None

    # -- helpers -----------------------------------------------------------------------

    def _fail(self, message):
        print(f"nbody: {message}", flush=True)
        return -1

    def _rows(self, ids):
        try:
            return np.fromiter((self.row[int(i)] for i in np.atleast_1d(ids)), dtype=np.int64)
        except KeyError as e:
            raise LookupError(f"no particle with index {e.args[0]}") from None

    def _reindex(self):
        self.row = {int(i): k for k, i in enumerate(self.ids)}

    def _changed(self):
        self.sim = None

    def _accelerations(self, targets=None, eps2_extra=0.0):
        massive = self.mass > 0
        sources = self.pos[massive]
        n_targets = len(self.pos) if targets is None else len(targets)
        if len(sources) == 0 or n_targets == 0:
            return np.zeros((n_targets, 3)), np.zeros(n_targets)
        eps = math.sqrt(self.eps2 + eps2_extra)
        if targets is None:
            # Each particle against the others (massless ones add nothing), without its
            # own pair.
            acc, pot = nbody.accelerations(
                self.pos, self.mass, eps=eps, executor=self.backend, precision=self.precision
            )
            return np.asarray(acc, dtype=np.float64), np.asarray(pot, dtype=np.float64)
        acc, pot = nbody.accelerations(
            sources, self.mass[massive], eps=eps, targets=targets, executor=self.backend, precision=self.precision
        )
        return np.asarray(acc, dtype=np.float64), np.asarray(pot, dtype=np.float64)

    def _build(self, interval):
        """The simulation of the particles now, for one interval (a leapfrog's step is
        fitted to it)."""
        massive = np.flatnonzero(self.mass > 0)
        tests = np.flatnonzero(self.mass == 0)
        if len(massive) == 0:
            raise ValueError("the system has no particle with a mass above 0")
        dt = self.dt
        if self.integrator == "leapfrog":
            dt = interval / max(1, math.ceil(interval / self.dt * (1 - 1e-12)))
        self.sim = nbody.Simulation(
            positions=self.pos[massive],
            velocities=self.vel[massive],
            masses=self.mass[massive],
            test_positions=self.pos[tests] if len(tests) else None,
            test_velocities=self.vel[tests] if len(tests) else None,
            integrator=self.integrator,
            dt=dt,
            eta=self.eta,
            tolerance=self.tolerance,
            eps=math.sqrt(self.eps2),
            executor=self.backend,
            precision=self.precision,
        )
        self.sim_start = self.time
        self.sim_order = np.concatenate([massive, tests])
        self.sim_dt = dt

    def _pull(self):
        """The simulation's positions and velocities into the particle arrays."""
        self.pos[self.sim_order] = self.sim.positions
        self.vel[self.sim_order] = self.sim.velocities

    # -- code life ---------------------------------------------------------------------

    def initialize_code(self):
        return 0

    def cleanup_code(self):
        self.sim = None
        return 0

    def commit_parameters(self):
        return 0

    def recommit_parameters(self):
        self._changed()
        return 0

    def commit_particles(self):
        return 0

    def recommit_particles(self):
        self._changed()
        return 0

    def synchronize_model(self):
        return 0

    # -- particles ---------------------------------------------------------------------

    def new_particle(self, index_of_the_particle, mass, x, y, z, vx, vy, vz, radius, number_of_particles):
        columns = [np.asarray(c, dtype=np.float64) for c in (mass, x, y, z, vx, vy, vz, radius)]
        if not all(np.isfinite(c).all() for c in columns):
            return self._fail("new_particle: every value must be finite")
        if (columns[0] < 0).any() or (columns[7] < 0).any():
            return self._fail("new_particle: masses and radii must not be negative")
        n = number_of_particles
        ids = np.arange(self.next_id, self.next_id + n, dtype=np.int64)
        self.next_id += n
        self.ids = np.concatenate([self.ids, ids])
        self.mass = np.concatenate([self.mass, columns[0]])
        self.pos = np.concatenate([self.pos, np.column_stack(columns[1:4])])
        self.vel = np.concatenate([self.vel, np.column_stack(columns[4:7])])
        self.radius = np.concatenate([self.radius, columns[7]])
        self._reindex()
        self._changed()
        index_of_the_particle.value = ids.astype(np.int32)
        return 0

    def delete_particle(self, index_of_the_particle, number_of_particles):
        try:
            rows = self._rows(index_of_the_particle)
        except LookupError as e:
            return self._fail(f"delete_particle: {e}")
        keep = np.ones(len(self.ids), dtype=bool)
        keep[rows] = False
        self.ids, self.mass, self.radius = self.ids[keep], self.mass[keep], self.radius[keep]
        self.pos, self.vel = self.pos[keep], self.vel[keep]
        self._reindex()
        self._changed()
        return 0

    def _get(self, index, number_of_particles, **outputs):
        try:
            rows = self._rows(index)
        except LookupError as e:
            return self._fail(str(e))
        for holder, column in outputs.values():
            holder.value = column(rows)
        return 0

    def _set(self, index, columns):
        """Writes `columns` ((array, values) pairs) at the rows of `index`, all or none."""
        try:
            rows = self._rows(index)
        except LookupError as e:
            return self._fail(str(e))
        for _, values in columns:
            values = np.asarray(values, dtype=np.float64)
            if not np.isfinite(values).all():
                return self._fail("every value must be finite")
        for target, values in columns:
            if target is self.mass or target is self.radius:
                if (np.asarray(values) < 0).any():
                    return self._fail("masses and radii must not be negative")
        for target, values in columns:
            target[rows] = values
        self._changed()
        return 0

    def get_state(self, index_of_the_particle, mass, x, y, z, vx, vy, vz, radius, number_of_particles):
        return self._get(
            index_of_the_particle,
            number_of_particles,
            m=(mass, lambda r: self.mass[r]),
            x=(x, lambda r: self.pos[r, 0]),
            y=(y, lambda r: self.pos[r, 1]),
            z=(z, lambda r: self.pos[r, 2]),
            vx=(vx, lambda r: self.vel[r, 0]),
            vy=(vy, lambda r: self.vel[r, 1]),
            vz=(vz, lambda r: self.vel[r, 2]),
            radius=(radius, lambda r: self.radius[r]),
        )

    def set_state(self, index_of_the_particle, mass, x, y, z, vx, vy, vz, radius, number_of_particles):
        return self._set(
            index_of_the_particle,
            [
                (self.mass, mass),
                (self.pos[:, 0], x),
                (self.pos[:, 1], y),
                (self.pos[:, 2], z),
                (self.vel[:, 0], vx),
                (self.vel[:, 1], vy),
                (self.vel[:, 2], vz),
                (self.radius, radius),
            ],
        )

    def get_mass(self, index_of_the_particle, mass, number_of_particles):
        return self._get(index_of_the_particle, number_of_particles, m=(mass, lambda r: self.mass[r]))

    def set_mass(self, index_of_the_particle, mass, number_of_particles):
        return self._set(index_of_the_particle, [(self.mass, mass)])

    def get_radius(self, index_of_the_particle, radius, number_of_particles):
        return self._get(index_of_the_particle, number_of_particles, r=(radius, lambda r: self.radius[r]))

    def set_radius(self, index_of_the_particle, radius, number_of_particles):
        # Radii do not enter the dynamics: the simulation goes on.
        sim = self.sim
        status = self._set(index_of_the_particle, [(self.radius, radius)])
        self.sim = sim
        return status

    def get_position(self, index_of_the_particle, x, y, z, number_of_particles):
        return self._get(
            index_of_the_particle,
            number_of_particles,
            x=(x, lambda r: self.pos[r, 0]),
            y=(y, lambda r: self.pos[r, 1]),
            z=(z, lambda r: self.pos[r, 2]),
        )

    def set_position(self, index_of_the_particle, x, y, z, number_of_particles):
        return self._set(index_of_the_particle, [(self.pos[:, 0], x), (self.pos[:, 1], y), (self.pos[:, 2], z)])

    def get_velocity(self, index_of_the_particle, vx, vy, vz, number_of_particles):
        return self._get(
            index_of_the_particle,
            number_of_particles,
            vx=(vx, lambda r: self.vel[r, 0]),
            vy=(vy, lambda r: self.vel[r, 1]),
            vz=(vz, lambda r: self.vel[r, 2]),
        )

    def set_velocity(self, index_of_the_particle, vx, vy, vz, number_of_particles):
        return self._set(index_of_the_particle, [(self.vel[:, 0], vx), (self.vel[:, 1], vy), (self.vel[:, 2], vz)])

    def get_acceleration(self, index_of_the_particle, ax, ay, az, number_of_particles):
        try:
            rows = self._rows(index_of_the_particle)
            acc, _ = self._accelerations()
        except (LookupError, ValueError, RuntimeError) as e:
            return self._fail(f"get_acceleration: {e}")
        ax.value, ay.value, az.value = acc[rows, 0], acc[rows, 1], acc[rows, 2]
        return 0

    def get_potential(self, index_of_the_particle, potential, number_of_particles):
        try:
            rows = self._rows(index_of_the_particle)
            _, pot = self._accelerations()
        except (LookupError, ValueError, RuntimeError) as e:
            return self._fail(f"get_potential: {e}")
        potential.value = pot[rows]
        return 0

    def get_number_of_particles(self, number_of_particles):
        number_of_particles.value = len(self.ids)
        return 0

    def get_index_of_first_particle(self, index_of_the_particle):
        if len(self.ids) == 0:
            return 1
        index_of_the_particle.value = int(self.ids[0])
        return 0

    def get_index_of_next_particle(self, index_of_the_particle, index_of_the_next_particle):
        k = self.row.get(int(index_of_the_particle))
        if k is None:
            return -1
        if k + 1 >= len(self.ids):
            return 1
        index_of_the_next_particle.value = int(self.ids[k + 1])
        return 0

    # -- evolution ---------------------------------------------------------------------

    def evolve_model(self, time):
        self.conditions_set = []
        interval = float(time) - self.time
        if not interval > 0:
            return 0
        try:
            if self.sim is None or self.integrator == "leapfrog":
                self._build(interval)
            until = float(time) - self.sim_start
            # A fixed step lands within half a step; the others on the time itself.
            slack = 0.5 * self.sim_dt if self.integrator == "leapfrog" else 0.0
            watched = self.enabled & set(SUPPORTED_CONDITIONS)
            if not watched:
                self.sim.evolve(until)
                self._pull()
                self.time = float(time)
                return 0
            started, steps = time_now(), 0
            while self.sim.time < until - slack:
                self.sim.step(until)
                steps += 1
                if self._check(watched, steps, started):
                    break
            self._pull()
            reached = self.sim.time >= until - slack
            # Stopped early, the simulation goes on from here at the next call (a
            # leapfrog's is rebuilt for its new interval).
            self.time = float(time) if reached else self.sim_start + self.sim.time
        except (ValueError, RuntimeError) as e:
            self.sim = None
            return self._fail(f"evolve_model: {e}")
        return 0

    def _check(self, watched, steps, started):
        """Sets the conditions met after a step; whether any is."""
        if COLLISION in watched:
            order = self.sim_order
            pairs = self.sim.collisions(self.radius[order])
            for i, j in pairs:
                self.conditions_set.append((COLLISION, [int(self.ids[order[i]]), int(self.ids[order[j]])]))
        if TIMEOUT in watched and time_now() - started >= self.stop_params["timeout"]:
            self.conditions_set.append((TIMEOUT, []))
        if NUMBER_OF_STEPS in watched and steps >= self.stop_params["steps"]:
            self.conditions_set.append((NUMBER_OF_STEPS, []))
        return bool(self.conditions_set)

    def get_time(self, time):
        time.value = self.time
        return 0

    def get_begin_time(self, time):
        time.value = self.begin_time
        return 0

    def set_begin_time(self, time):
        """The model time of the particles as given (before the first evolve_model)."""
        if not math.isfinite(time):
            return self._fail("begin_time must be finite")
        self.begin_time = self.time = float(time)
        self._changed()
        return 0

    def get_time_step(self, time_step):
        time_step.value = self.dt
        return 0

    def set_time_step(self, time_step):
        if not (math.isfinite(time_step) and time_step > 0):
            return self._fail("timestep must be finite and above 0")
        self.dt = float(time_step)
        self._changed()
        return 0

    # -- diagnostics -------------------------------------------------------------------

    def get_kinetic_energy(self, kinetic_energy):
        kinetic_energy.value = 0.5 * float(np.sum(self.mass * np.sum(self.vel * self.vel, axis=1)))
        return 0

    def get_potential_energy(self, potential_energy):
        try:
            _, pot = self._accelerations()
        except (ValueError, RuntimeError) as e:
            return self._fail(f"get_potential_energy: {e}")
        potential_energy.value = 0.5 * float(np.sum(self.mass * pot))
        return 0

    def get_total_mass(self, mass):
        mass.value = float(np.sum(self.mass))
        return 0

    def _mean(self, columns):
        """The mass-weighted mean of `columns` (the origin for a massless system)."""
        m = np.sum(self.mass)
        return (self.mass @ columns) / m if m > 0 else np.zeros(3)

    def _centre(self, columns, out):
        for holder, value in zip(out, self._mean(columns)):
            holder.value = float(value)
        return 0

    def get_center_of_mass_position(self, x, y, z):
        return self._centre(self.pos, (x, y, z))

    def get_center_of_mass_velocity(self, vx, vy, vz):
        return self._centre(self.vel, (vx, vy, vz))

    def get_total_radius(self, radius):
        if len(self.ids) == 0:
            radius.value = 0.0
            return 0
        com = self._mean(self.pos)
        radius.value = float(np.sqrt(np.max(np.sum((self.pos - com) ** 2, axis=1))))
        return 0

    # -- the field at points -----------------------------------------------------------

    def _field(self, eps, x, y, z):
        points = np.column_stack([np.asarray(c, dtype=np.float64) for c in (x, y, z)])
        eps = np.asarray(eps, dtype=np.float64)
        if not (np.isfinite(points).all() and np.isfinite(eps).all()):
            raise ValueError("every point and softening must be finite")
        acc, pot = np.zeros((len(points), 3)), np.zeros(len(points))
        # One call per distinct softening (a Bridge passes one).
        for e in np.unique(eps):
            at = eps == e
            acc[at], pot[at] = self._accelerations(points[at], float(e) ** 2)
        return acc, pot

    def get_gravity_at_point(self, eps, x, y, z, ax, ay, az, npoints):
        try:
            acc, _ = self._field(eps, x, y, z)
        except (ValueError, RuntimeError) as e:
            return self._fail(f"get_gravity_at_point: {e}")
        ax.value, ay.value, az.value = acc[:, 0], acc[:, 1], acc[:, 2]
        return 0

    def get_potential_at_point(self, eps, x, y, z, phi, npoints):
        try:
            _, pot = self._field(eps, x, y, z)
        except (ValueError, RuntimeError) as e:
            return self._fail(f"get_potential_at_point: {e}")
        phi.value = pot
        return 0

    # -- parameters --------------------------------------------------------------------

    def get_eps2(self, epsilon_squared):
        epsilon_squared.value = self.eps2
        return 0

    def set_eps2(self, epsilon_squared):
        if not (math.isfinite(epsilon_squared) and epsilon_squared >= 0):
            return self._fail("epsilon_squared must be finite and not negative")
        self.eps2 = float(epsilon_squared)
        self._changed()
        return 0

    def get_eta(self, eta):
        eta.value = self.eta
        return 0

    def set_eta(self, eta):
        if not (math.isfinite(eta) and eta > 0):
            return self._fail("timestep_parameter must be finite and above 0")
        self.eta = float(eta)
        self._changed()
        return 0

    def get_tolerance(self, tolerance):
        tolerance.value = self.tolerance
        return 0

    def set_tolerance(self, tolerance):
        if not (math.isfinite(tolerance) and tolerance > 0):
            return self._fail("tolerance must be finite and above 0")
        self.tolerance = float(tolerance)
        self._changed()
        return 0

    def get_integrator(self, integrator):
        integrator.value = self.integrator
        return 0

    def set_integrator(self, integrator):
        if integrator not in INTEGRATORS:
            return self._fail(f"integrator must be one of {', '.join(INTEGRATORS)} (got {integrator!r})")
        self.integrator = integrator
        self._changed()
        return 0

    def get_backend(self, backend):
        backend.value = self.backend
        return 0

    def set_backend(self, backend):
        try:
            # Opens it once, so a bad string or a missing device is an error here.
            nbody.accelerations(np.zeros((1, 3)), np.ones(1), executor=backend, precision=self.precision)
        except (ValueError, RuntimeError) as e:
            return self._fail(f"backend: {e}")
        self.backend = backend
        self._changed()
        return 0

    def get_precision(self, precision):
        precision.value = self.precision
        return 0

    def set_precision(self, precision):
        if precision not in ("f32", "f64"):
            return self._fail(f"precision must be 'f32' or 'f64' (got {precision!r})")
        self.precision = precision
        self._changed()
        return 0

    # -- stopping conditions -----------------------------------------------------------

    def has_stopping_condition(self, type, result):
        result.value = 1 if type in SUPPORTED_CONDITIONS else 0
        return 0

    def enable_stopping_condition(self, type):
        if type not in SUPPORTED_CONDITIONS:
            return self._fail(f"stopping condition {type} is not supported")
        self.enabled.add(type)
        return 0

    def disable_stopping_condition(self, type):
        self.enabled.discard(type)
        return 0

    def is_stopping_condition_enabled(self, type, result):
        result.value = 1 if type in self.enabled else 0
        return 0

    def is_stopping_condition_set(self, type, result):
        result.value = 1 if any(t == type for t, _ in self.conditions_set) else 0
        return 0

    def get_number_of_stopping_conditions_set(self, result):
        result.value = len(self.conditions_set)
        return 0

    def get_stopping_condition_info(self, index, type, number_of_particles):
        if not 0 <= index < len(self.conditions_set):
            return -1
        kind, ids = self.conditions_set[index]
        type.value, number_of_particles.value = kind, len(ids)
        return 0

    def get_stopping_condition_particle_index(self, index, index_of_the_column, index_of_particle):
        if not 0 <= index < len(self.conditions_set):
            return -1
        ids = self.conditions_set[index][1]
        if not 0 <= index_of_the_column < len(ids):
            return -1
        index_of_particle.value = ids[index_of_the_column]
        return 0

    def set_stopping_condition_timeout_parameter(self, value):
        if not value > 0:
            return -1
        self.stop_params["timeout"] = float(value)
        return 0

    def get_stopping_condition_timeout_parameter(self, value):
        value.value = self.stop_params["timeout"]
        return 0

    def set_stopping_condition_number_of_steps_parameter(self, value):
        if not value >= 1:
            return -1
        self.stop_params["steps"] = int(value)
        return 0

    def get_stopping_condition_number_of_steps_parameter(self, value):
        value.value = self.stop_params["steps"]
        return 0


def time_now():
    """Wall-clock seconds (evolve_model's argument `time`, named by AMUSE, hides the module)."""
    return time.monotonic()


def _keep(name, convert, default):
    """A stored value for the parameter of a stopping condition this code does not
    support (out of box, and the gas codes' density and energy bounds)."""

    def setter(self, value):
        self.kept_params[name] = convert(value)
        return 0

    def getter(self, value):
        value.value = self.kept_params.get(name, default)
        return 0

    setattr(NbodyImplementation, f"set_stopping_condition_{name}_parameter", setter)
    setattr(NbodyImplementation, f"get_stopping_condition_{name}_parameter", getter)


for _name in ("minimum_density", "maximum_density", "minimum_internal_energy", "maximum_internal_energy"):
    _keep(_name, float, -1.0)
_keep("out_of_box", float, 0.0)
_keep("out_of_box_use_center_of_mass", bool, False)


class NbodyInterface(PythonCodeInterface, GravitationalDynamicsInterface, GravityFieldInterface, StoppingConditionInterface):
    """The calls of the worker (see the module docs). The worker script goes to a
    folder of the temporary directory (``worker_dir=`` chooses another)."""

    def __init__(self, **options):
        PythonCodeInterface.__init__(self, NbodyImplementation, **options)

    def make_executable_script_for(self, implementation_factory):
        # AMUSE writes the script into the working folder, in place. This one goes to a
        # folder named after its content (its interpreter and paths), written aside
        # and renamed: two codes, or two environments, starting at once never run a
        # half-written or a foreign script.
        from amuse.rfi.tools.create_python_worker import CreateAPythonWorker

        maker = CreateAPythonWorker()
        maker.channel_type = self.channel_type
        maker.interface_class = type(self)
        maker.implementation_factory = implementation_factory
        script = maker.new_executable_script_string().replace("\nimport sys\n", _NODELAY, 1)
        folder = self.worker_dir or os.path.join(
            tempfile.gettempdir(),
            f"nbody-amuse-{os.getuid()}",
            hashlib.sha256(script.encode()).hexdigest()[:16],
        )
        path = os.path.join(folder, "nbody_amuse_worker")
        if self.channel_factory.is_root():
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder)
            with os.fdopen(fd, "w") as f:
                f.write(script)
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        return path

    new_particle = _arrays(GravitationalDynamicsInterface.new_particle)
    delete_particle = _arrays(GravitationalDynamicsInterface.delete_particle)
    get_state = _arrays(GravitationalDynamicsInterface.get_state)
    set_state = _arrays(GravitationalDynamicsInterface.set_state)
    get_mass = _arrays(GravitationalDynamicsInterface.get_mass)
    set_mass = _arrays(GravitationalDynamicsInterface.set_mass)
    get_radius = _arrays(GravitationalDynamicsInterface.get_radius)
    set_radius = _arrays(GravitationalDynamicsInterface.set_radius)
    get_position = _arrays(GravitationalDynamicsInterface.get_position)
    set_position = _arrays(GravitationalDynamicsInterface.set_position)
    get_velocity = _arrays(GravitationalDynamicsInterface.get_velocity)
    set_velocity = _arrays(GravitationalDynamicsInterface.set_velocity)
    get_acceleration = _arrays(GravitationalDynamicsInterface.get_acceleration)
    get_potential = _arrays(GravitationalDynamicsInterface.get_potential)

    @remote_function
    def get_eps2():
        returns(epsilon_squared=0.0)  # noqa: F821 (AMUSE defines it)

    @remote_function
    def set_eps2(epsilon_squared=0.0):
        returns()  # noqa: F821

    @remote_function
    def set_time_step(time_step=0.0):
        returns()  # noqa: F821

    @remote_function
    def get_eta():
        returns(eta=0.0)  # noqa: F821

    @remote_function
    def set_eta(eta=0.0):
        returns()  # noqa: F821

    @remote_function
    def get_tolerance():
        returns(tolerance=0.0)  # noqa: F821

    @remote_function
    def set_tolerance(tolerance=0.0):
        returns()  # noqa: F821

    @remote_function
    def get_integrator():
        returns(integrator="s")  # noqa: F821

    @remote_function
    def set_integrator(integrator="s"):
        returns()  # noqa: F821

    @remote_function
    def get_backend():
        returns(backend="s")  # noqa: F821

    @remote_function
    def set_backend(backend="s"):
        returns()  # noqa: F821

    @remote_function
    def get_precision():
        returns(precision="s")  # noqa: F821

    @remote_function
    def set_precision(precision="s"):
        returns()  # noqa: F821


# AMUSE's Python worker answers through a socket without TCP_NODELAY, so every reply
# waits out the peer's delayed acknowledgement (40 ms a call on Linux: a Bridge step
# took 0.6 s). The worker script turns it on for the connection it opens.
_NODELAY = """
import sys
import socket
_create_connection = socket.create_connection


def _without_delay(*args, **kwargs):
    connection = _create_connection(*args, **kwargs)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


socket.create_connection = _without_delay
"""


class Nbody(GravitationalDynamics, GravityFieldCode):
    """nbody in AMUSE (see the module docs): ``Nbody(converter, **options)`` with
    AMUSE's options (``channel_type="sockets"`` without MPI)."""

    def __init__(self, unit_converter=None, **options):
        self.stopping_conditions = StoppingConditions(self)
        GravitationalDynamics.__init__(self, NbodyInterface(**options), unit_converter, **options)

    def define_state(self, handler):
        GravitationalDynamics.define_state(self, handler)
        GravityFieldCode.define_state(self, handler)
        self.stopping_conditions.define_state(handler)

    def define_parameters(self, handler):
        handler.add_method_parameter(
            "get_begin_time", "set_begin_time", "begin_time", "model time to start the simulation at",
            default_value=0.0 | nbody_system.time,
        )
        handler.add_method_parameter(
            "get_eps2", "set_eps2", "epsilon_squared", "Plummer softening length squared",
            default_value=0.0 | nbody_system.length**2,
        )
        handler.add_method_parameter(
            "get_integrator", "set_integrator", "integrator",
            "'hermite' (adaptive shared steps), 'leapfrog' (fixed steps) or 'rk' (adaptive Dormand-Prince)",
            default_value="hermite",
        )
        handler.add_method_parameter(
            "get_eta", "set_eta", "timestep_parameter", "Hermite's accuracy parameter eta", default_value=0.02
        )
        handler.add_method_parameter(
            "get_tolerance", "set_tolerance", "tolerance", "Runge-Kutta's relative tolerance", default_value=1e-8
        )
        handler.add_method_parameter(
            "get_time_step", "set_time_step", "timestep", "the leapfrog's largest step",
            default_value=(1.0 / 64.0) | nbody_system.time,
        )
        handler.add_method_parameter(
            "get_backend", "set_backend", "backend", "a backend string (nbody.backends())", default_value="cpu"
        )
        handler.add_method_parameter(
            "get_precision", "set_precision", "precision", "'f64' or 'f32'", default_value="f64"
        )
        self.stopping_conditions.define_parameters(handler)

    def define_methods(self, handler):
        GravitationalDynamics.define_methods(self, handler)
        handler.add_method("get_eps2", (), (nbody_system.length**2, handler.ERROR_CODE))
        handler.add_method("set_eps2", (nbody_system.length**2,), (handler.ERROR_CODE,))
        handler.add_method("set_time_step", (nbody_system.time,), (handler.ERROR_CODE,))
        for name in ("eta", "tolerance", "integrator", "backend", "precision"):
            handler.add_method(f"get_{name}", (), (handler.NO_UNIT, handler.ERROR_CODE))
            handler.add_method(f"set_{name}", (handler.NO_UNIT,), (handler.ERROR_CODE,))
        self.stopping_conditions.define_methods(handler)

    def define_particle_sets(self, handler):
        GravitationalDynamics.define_particle_sets(self, handler)
        handler.add_getter("particles", "get_potential", names=("potential_in_code",))
        self.stopping_conditions.define_particle_set(handler)


__all__ = ["Nbody", "NbodyInterface", "NbodyImplementation"]
