//! The evolving system and its conservation diagnostics.

use nbody_core::{Error, Executor, Field, Params, Particle, Real, Velocity};

/// Positions with masses, velocities and the current time.
#[derive(Clone, Debug, PartialEq)]
pub struct State<T: Real> {
    /// Positions and masses.
    pub pos: Vec<Particle<T>>,
    /// Velocities.
    pub vel: Vec<Velocity<T>>,
    /// Simulated time.
    pub time: f64,
}

impl<T: Real> State<T> {
    /// A state at time 0.
    ///
    /// ```
    /// let (p, v) = nbody_integrators::ics::kepler::<f64>(0.0, 0.5, 0.5);
    /// let s = nbody_integrators::State::new(p, v);
    /// assert_eq!(s.len(), 2);
    /// ```
    pub fn new(pos: Vec<Particle<T>>, vel: Vec<Velocity<T>>) -> Self {
        Self { pos, vel, time: 0.0 }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// A state of massive particles followed by test particles: massless, they feel
    /// every massive particle and exert nothing. The integrators take only the massive
    /// ones as sources (every trailing massless particle is left out of the sources), so
    /// a step costs N x N_massive interactions, not N².
    ///
    /// ```
    /// use nbody_core::{Particle, Velocity};
    /// use nbody_integrators::{Leapfrog, State};
    /// // A test particle on a circular orbit of radius 1 around a unit mass.
    /// let sun = (vec![Particle::new(0.0f64, 0.0, 0.0, 1.0)], vec![Velocity::new(0.0, 0.0, 0.0)]);
    /// let probe = (vec![[1.0, 0.0, 0.0]], vec![Velocity::new(0.0, 1.0, 0.0)]);
    /// let mut s = State::with_test_particles(sun.0, sun.1, &probe.0, probe.1)?;
    /// let mut lf = Leapfrog::new(1e-3, 0.0)?;
    /// for _ in 0..1000 {
    ///     lf.step(&mut s, &mut nbody_core::Reference)?;
    /// }
    /// assert_eq!(s.pos[0].position(), [0.0; 3]); // the sun feels nothing
    /// assert!((s.pos[1].x.hypot(s.pos[1].y) - 1.0).abs() < 1e-6);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn with_test_particles(
        mut pos: Vec<Particle<T>>,
        mut vel: Vec<Velocity<T>>,
        test_pos: &[[T; 3]],
        test_vel: Vec<Velocity<T>>,
    ) -> Result<Self, Error> {
        nbody_core::validate::length("velocities", pos.len(), vel.len())?;
        nbody_core::validate::length("test particle velocities", test_pos.len(), test_vel.len())?;
        pos.extend(test_pos.iter().map(|x| Particle::new(x[0], x[1], x[2], T::zero())));
        vel.extend(test_vel);
        Ok(Self::new(pos, vel))
    }

    /// How many particles act as sources: all but the trailing massless ones (test
    /// particles; see [`State::with_test_particles`]).
    pub fn massive(&self) -> usize {
        massive(&self.pos)
    }
}

/// `pos.len()` less its trailing run of massless particles.
pub(crate) fn massive<T: Real>(pos: &[Particle<T>]) -> usize {
    pos.iter().rposition(|p| p.m != T::zero()).map_or(0, |k| k + 1)
}

/// How many of `pos` a force call through `exec` takes as sources: its massive prefix,
/// or every particle when `exec` spans several processes (each holds a slice of the
/// particles, whose tails are not the system's).
pub(crate) fn source_count<T: Real, E: Executor<T> + ?Sized>(pos: &[Particle<T>], exec: &mut E) -> usize {
    if exec.collective().is_some() { pos.len() } else { massive(pos) }
}

/// The sources of a force call on every particle of `pos` ([`source_count`] of them),
/// with `params` (whose overlap says targets = sources) narrowed to them.
pub(crate) fn sources<'a, T: Real, E: Executor<T> + ?Sized>(
    pos: &'a [Particle<T>],
    params: &Params<T>,
    exec: &mut E,
) -> (&'a [Particle<T>], Params<T>) {
    let k = source_count(pos, exec);
    if k == pos.len() {
        return (pos, *params);
    }
    (&pos[..k], params.with_overlap(nbody_core::Overlap::Shared { target_start: 0, source_start: 0, len: k }))
}

/// Conserved quantities and their friends, in f64 whatever the precision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Diagnostics {
    /// Σ ½ m v².
    pub kinetic: f64,
    /// ½ Σ m φ, from the kernel's potential (softened, G included).
    pub potential: f64,
    /// kinetic + potential.
    pub total: f64,
    /// Σ m v.
    pub momentum: [f64; 3],
    /// Σ m x × v.
    pub angular_momentum: [f64; 3],
    /// Σ m x / Σ m.
    pub centre_of_mass: [f64; 3],
    /// 2 T / |W|.
    pub virial_ratio: f64,
}

/// Diagnostics of `state`, with `field` the kernel's output at the same positions
/// (targets = sources, potential on).
///
/// ```
/// use nbody_core::{Executor, Field, Params, Reference};
/// let (p, v) = nbody_integrators::ics::kepler::<f64>(0.0, 0.5, 0.5);
/// let s = nbody_integrators::State::new(p, v);
/// let mut f = vec![Field::zero(); 2];
/// Reference.accelerations(&s.pos, &s.pos, &Params::softened(0.0).with_overlap_identical(), &mut f).unwrap();
/// let d = nbody_integrators::diagnostics(&s, &f);
/// assert!((d.total + 0.125).abs() < 1e-12); // E = -G m1 m2 / (2a)
/// ```
pub fn diagnostics<T: Real>(state: &State<T>, field: &[Field<T>]) -> Diagnostics {
    finish(sums(state, field))
}

/// [`diagnostics`] over every process of a distributed executor: each process holds a
/// slice of the particles, its sums are combined through [`nbody_core::collective::sum`]. With
/// an executor of one process it is [`diagnostics`].
///
/// ```
/// use nbody_core::{Executor, Field, Params, Reference};
/// let (p, v) = nbody_integrators::ics::kepler::<f64>(0.0, 0.5, 0.5);
/// let s = nbody_integrators::State::new(p, v);
/// let mut f = vec![Field::zero(); 2];
/// Reference.accelerations(&s.pos, &s.pos, &Params::softened(0.0).with_overlap_identical(), &mut f).unwrap();
/// let d = nbody_integrators::diagnostics_combined(&s, &f, &mut Reference);
/// assert_eq!(d, nbody_integrators::diagnostics(&s, &f));
/// ```
pub fn diagnostics_combined<T: Real, E: Executor<T> + ?Sized>(
    state: &State<T>,
    field: &[Field<T>],
    exec: &mut E,
) -> Diagnostics {
    let mut s = sums(state, field);
    nbody_core::collective::sum(exec, &mut s);
    finish(s)
}

/// The sums behind [`Diagnostics`] ([`nbody_core::resident::system_sums`]).
fn sums<T: Real>(state: &State<T>, field: &[Field<T>]) -> [f64; 12] {
    nbody_core::resident::system_sums(&state.pos, &state.vel, field)
}

/// [`Diagnostics`] from their sums ([`nbody_core::resident::system_sums`], or a resident
/// executor's [`nbody_core::resident::Resident::system_sums`], summed where the system
/// lives).
///
/// ```
/// use nbody_core::resident::{OnHost, Resident};
/// use nbody_core::{Params, Reference};
/// let (p, v) = nbody_integrators::ics::kepler::<f64>(0.0, 0.5, 0.5);
/// let mut exec = OnHost::new(Reference);
/// let mut s = exec.upload_state(&p, &v)?;
/// let d = nbody_integrators::diagnostics_of_sums(exec.system_sums(&mut s, &Params::softened(0.0))?);
/// assert!((d.total + 0.125).abs() < 1e-12); // E = -G m1 m2 / (2a)
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub fn diagnostics_of_sums(sums: [f64; 12]) -> Diagnostics {
    finish(sums)
}

fn finish(s: [f64; 12]) -> Diagnostics {
    let mass = s[11];
    let (kinetic, potential) = (s[0], s[1]);
    Diagnostics {
        kinetic,
        potential,
        total: kinetic + potential,
        momentum: [s[2], s[3], s[4]],
        angular_momentum: [s[5], s[6], s[7]],
        centre_of_mass: [s[8], s[9], s[10]].map(|c| c / mass.max(f64::MIN_POSITIVE)),
        virial_ratio: 2.0 * kinetic / potential.abs().max(f64::MIN_POSITIVE),
    }
}

/// Wall time spent in an integrator's steps, and the part of it in force calls; the rest
/// (kicks, drifts, predictors, correctors, time-step selection) is the integrator's cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTiming {
    /// All of the steps.
    pub total: std::time::Duration,
    /// The executor calls within them.
    pub force: std::time::Duration,
}

impl StepTiming {
    /// The fraction of step time outside the force calls.
    pub fn overhead_fraction(&self) -> f64 {
        let total = self.total.as_secs_f64();
        if total > 0.0 { (total - self.force.as_secs_f64()).max(0.0) / total } else { 0.0 }
    }
}
