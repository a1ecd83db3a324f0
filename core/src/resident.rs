//! Systems that live in an executor's own memory (a GPU's, several GPUs') between steps:
//! [`Resident`] extends [`Executor`] with handles on such systems and the few operations
//! a step is made of, and steps them with the one leapfrog of [`crate::stepping`].

use crate::stepping::{KickDrift, kick_drift_kick};
use crate::{Error, Executor, Field, Params, Particle, Real, Velocity};
use core::sync::atomic::{AtomicU64, Ordering};

/// Which executor made a resident system: every executor that holds systems takes one
/// [`Owner::new`] when it is built and stamps each system it makes, and refuses a
/// system stamped by another (its buffers would live on another device, or nowhere).
///
/// ```
/// use nbody_core::resident::Owner;
/// let (a, b) = (Owner::new(), Owner::new());
/// assert!(a.check(a).is_ok());
/// assert!(a.check(b).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner(u64);

impl Owner {
    /// A stamp no other executor in this process has.
    #[allow(clippy::new_without_default)] // a default would read as "no owner"
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Owner(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// `Ok` when `stamp` (a system's) is this owner's.
    pub fn check(self, stamp: Owner) -> Result<(), Error> {
        if self == stamp {
            Ok(())
        } else {
            Err(Error::InvalidParameter { name: "state", requirement: "a system this executor uploaded" })
        }
    }
}

/// An executor that can hold a system (positions, velocities, the field at the
/// positions, a clock) in its own memory and step it there, copying back only what is
/// asked for. Handles ([`Resident::State`]) belong to the executor that made them; any
/// other refuses them with an error. The leapfrog step is provided, written once over
/// [`crate::stepping::kick_drift_kick`]; an executor says how it kicks, drifts and
/// computes its field.
///
/// Generic code steps any resident executor the same way:
///
/// ```
/// use nbody_core::resident::Resident;
/// use nbody_core::{Error, Params, Particle, Real, Velocity};
/// fn orbit<T: Real, E: Resident<T>>(exec: &mut E, p: &[Particle<T>], v: &[Velocity<T>]) -> Result<f64, Error> {
///     let mut s = exec.upload_state(p, v)?;
///     let params = Params::softened(T::from_f64(0.01));
///     for _ in 0..8 {
///         exec.leapfrog_step(&mut s, &params, 1.0 / 64.0)?;
///     }
///     Ok(E::time(&s))
/// }
/// let p = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let v = [Velocity::new(0.0, -0.35, 0.0), Velocity::new(0.0, 0.35, 0.0)];
/// assert_eq!(orbit(&mut nbody_core::resident::OnHost::new(nbody_core::Reference), &p, &v)?, 0.125);
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub trait Resident<T: Real>: Executor<T> {
    /// A system this executor holds.
    type State;

    /// Copies a system in (checked: the same errors as a force call's).
    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<Self::State, Error>;
    /// Copies positions and velocities back (a snapshot).
    fn download_state(
        &mut self,
        s: &Self::State,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error>;
    /// The field at the current positions, copied back: computed first if it is stale.
    /// Where `params` asks for the potential and the field held was computed without
    /// (steps may run acceleration-only, diagnostics ask for the potential), the field is
    /// computed for this download only and the held one kept as it was, so a run does
    /// not depend on when its diagnostics ran.
    fn download_field(&mut self, s: &mut Self::State, params: &Params<T>, out: &mut [Field<T>]) -> Result<(), Error>;
    /// Whether the field held for `s` belongs to its current positions.
    fn field_is_current(s: &Self::State) -> bool;
    /// Computes and keeps the field of `s` at its positions (every particle a target and
    /// a source).
    fn compute_field(&mut self, s: &mut Self::State, params: &Params<T>) -> Result<(), Error>;
    /// `v += a h` with the field held.
    fn kick(&mut self, s: &mut Self::State, h: T) -> Result<(), Error>;
    /// `x += v h`; the field held is then stale.
    fn drift(&mut self, s: &mut Self::State, h: T) -> Result<(), Error>;
    /// Particles in `s` (on this process, for a distributed executor).
    fn len(s: &Self::State) -> usize;
    /// [`system_sums`] of `s` at its current positions, with the field
    /// [`Resident::download_field`] gives for `params` (the potential asked for): what a
    /// run's energies and momenta need. This default copies the system back and sums on
    /// the host; an executor that sums where it holds the system (a GPU) returns only the
    /// twelve numbers, so a run's diagnostics cost a fraction of a force.
    ///
    /// ```
    /// use nbody_core::resident::{OnHost, Resident};
    /// use nbody_core::{Params, Particle, Reference, Velocity};
    /// let mut exec = OnHost::new(Reference);
    /// let p = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    /// let v = [Velocity::new(0.0, -0.5, 0.0), Velocity::new(0.0, 0.5, 0.0)];
    /// let mut s = exec.upload_state(&p, &v)?;
    /// let sums = exec.system_sums(&mut s, &Params::softened(0.0))?;
    /// assert_eq!(sums[0], 0.25); // kinetic: 2 × ½ × 1 × 0.25
    /// assert_eq!(sums[1], -0.5); // ½ Σ m φ = -G m m / r
    /// assert_eq!(sums[11], 2.0); // mass
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    #[cfg(feature = "alloc")]
    fn system_sums(&mut self, s: &mut Self::State, params: &Params<T>) -> Result<[f64; 12], Error> {
        let n = Self::len(s);
        let (mut pos, mut vel) = (alloc::vec![Particle::zero(); n], alloc::vec![Velocity::zero(); n]);
        let mut field = alloc::vec![Field::zero(); n];
        self.download_state(s, &mut pos, &mut vel)?;
        self.download_field(s, &Params { potential: true, ..*params }, &mut field)?;
        Ok(system_sums(&pos, &vel, &field))
    }
    /// Simulated time of `s`.
    fn time(s: &Self::State) -> f64;
    /// Sets the simulated time of `s` (a run resumed from a checkpoint).
    fn set_time(s: &mut Self::State, t: f64);

    /// One kick-drift-kick step of `dt`: [`crate::stepping::kick_drift_kick`] on this
    /// executor's system, then the clock advances. `params` gives G, eps and whether the
    /// potential is computed (targets = sources is implied).
    fn leapfrog_step(&mut self, s: &mut Self::State, params: &Params<T>, dt: f64) -> Result<(), Error> {
        crate::validate::params(params)?;
        kick_drift_kick(&mut Stepping { exec: self, s, params }, dt)?;
        let t = Self::time(s) + dt;
        Self::set_time(s, t);
        Ok(())
    }
}

/// The sums behind a system's diagnostics, in f64 and in this order: kinetic energy
/// Σ ½ m v², potential energy ½ Σ m φ (from the kernel's φ), momentum Σ m v (3), angular
/// momentum Σ m x × v (3), Σ m x (3) and the mass Σ m. Sums of several parts (processes,
/// devices, blocks) add element by element.
///
/// ```
/// use nbody_core::resident::system_sums;
/// use nbody_core::{Field, Particle, Velocity};
/// let p = [Particle::new(1.0f64, 0.0, 0.0, 2.0)];
/// let v = [Velocity::new(0.0, 3.0, 0.0)];
/// let f = [Field::new(0.0, 0.0, 0.0, -4.0)];
/// let s = system_sums(&p, &v, &f);
/// assert_eq!(s, [9.0, -4.0, 0.0, 6.0, 0.0, 0.0, 0.0, 6.0, 2.0, 0.0, 0.0, 2.0]);
/// ```
pub fn system_sums<T: Real>(pos: &[Particle<T>], vel: &[Velocity<T>], field: &[Field<T>]) -> [f64; 12] {
    let mut s = [0.0; 12];
    for ((p, v), f) in pos.iter().zip(vel).zip(field) {
        let m = p.m.to_f64();
        let x = p.position().map(Real::to_f64);
        let u = v.components().map(Real::to_f64);
        s[0] += 0.5 * m * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        s[1] += 0.5 * m * f.phi.to_f64();
        for k in 0..3 {
            s[2 + k] += m * u[k];
            s[8 + k] += m * x[k];
        }
        s[5] += m * (x[1] * u[2] - x[2] * u[1]);
        s[6] += m * (x[2] * u[0] - x[0] * u[2]);
        s[7] += m * (x[0] * u[1] - x[1] * u[0]);
        s[11] += m;
    }
    s
}

/// Whether a resident download with `params` computes its field aside: it asks for the
/// potential and the field held (current or not, with potentials or not) has none to
/// give. Steps may run acceleration-only; computing the potential into the held field
/// would change the accelerations' last bits (another kernel sums them), so a run would
/// depend on when its diagnostics ran. Every resident executor decides by this rule.
///
/// ```
/// use nbody_core::{resident::field_aside, Params};
/// let p = Params::softened(0.01f64);
/// assert!(field_aside(true, false, &p)); // current, acceleration-only
/// assert!(!field_aside(true, true, &p));
/// assert!(!field_aside(false, false, &p.acceleration_only())); // computed into the held field
/// ```
pub fn field_aside<T: Real>(fresh: bool, potential: bool, params: &Params<T>) -> bool {
    params.potential && !(fresh && potential)
}

/// A resident executor whose held field can also take the pull of sources it does not
/// hold: another process's particles, passed around a ring of MPI ranks, so each rank's
/// targets stay in its executor's memory and only sources travel. The field is built as
/// [`Resident::compute_field`] (this system's own pull) followed by any number of
/// [`ForeignSources::add_pull`] calls.
///
/// ```
/// use nbody_core::resident::{ForeignSources, OnHost, Resident};
/// use nbody_core::{Field, Params, Particle, Reference, Velocity};
/// let mine = [Particle::new(-1.0f64, 0.0, 0.0, 1.0)];
/// let theirs = [Particle::new(1.0f64, 0.0, 0.0, 1.0)];
/// let mut exec = OnHost::new(Reference);
/// let mut s = exec.upload_state(&mine, &[Velocity::new(0.0, 0.0, 0.0)])?;
/// let params = Params::softened(0.0);
/// exec.compute_field(&mut s, &params)?; // own pull: none, one particle
/// exec.add_pull(&mut s, &theirs, &params)?;
/// let mut out = [Field::zero()];
/// exec.download_field(&mut s, &params, &mut out)?;
/// assert_eq!(out[0].ax, 0.25); // G m / r^2 towards +x
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub trait ForeignSources<T: Real>: Resident<T> {
    /// Copies the positions and masses of `s` into `out` (of `s`'s length) in the order
    /// the executor stores them: what other processes take as sources, where order does
    /// not matter.
    fn download_sources(&mut self, s: &Self::State, out: &mut [Particle<T>]) -> Result<(), Error>;

    /// Adds the pull of `sources` (none of them `s`'s own particles) into the field held
    /// for `s`, which [`Resident::compute_field`] made current (a stale field is an
    /// error). `params` as for `compute_field` (its overlap is ignored: the sets are
    /// disjoint; the potential is added where the field held has one). The executor may
    /// return before the work is done; `sources` may be reused as soon as it returns. A
    /// failure leaves the field stale.
    fn add_pull(&mut self, s: &mut Self::State, sources: &[Particle<T>], params: &Params<T>) -> Result<(), Error>;
}

/// A resident system as [`kick_drift_kick`] steps it.
struct Stepping<'a, T: Real, E: Resident<T> + ?Sized> {
    exec: &'a mut E,
    s: &'a mut E::State,
    params: &'a Params<T>,
}

impl<T: Real, E: Resident<T> + ?Sized> KickDrift<T> for Stepping<'_, T, E> {
    fn field_is_current(&self) -> bool {
        E::field_is_current(self.s)
    }

    fn compute_field(&mut self) -> Result<(), Error> {
        self.exec.compute_field(self.s, self.params)
    }

    fn kick(&mut self, h: T) -> Result<(), Error> {
        self.exec.kick(self.s, h)
    }

    fn drift(&mut self, h: T) -> Result<(), Error> {
        self.exec.drift(self.s, h)
    }
}

/// Any executor as a resident one, its system in host memory: what generic code written
/// against [`Resident`] runs on without a device, and the reference the device
/// executors' resident steps are checked against (the host leapfrog's operations, in
/// the executor's own force calls). Needs the `alloc` feature (on by default).
///
/// ```
/// use nbody_core::resident::{OnHost, Resident};
/// use nbody_core::{Params, Particle, Reference, Velocity};
/// let p = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let v = [Velocity::new(0.0, -0.35, 0.0), Velocity::new(0.0, 0.35, 0.0)];
/// let mut exec = OnHost::new(Reference);
/// let mut s = exec.upload_state(&p, &v)?;
/// exec.leapfrog_step(&mut s, &Params::softened(0.0), 0.01)?;
/// let (mut p2, mut v2) = (p, v);
/// exec.download_state(&s, &mut p2, &mut v2)?;
/// assert!(p2[0].x > -1.0 && OnHost::<Reference>::time(&s) == 0.01);
///
/// let mut other = OnHost::new(Reference); // a handle belongs to the executor that made it
/// assert!(other.download_state(&s, &mut p2, &mut v2).is_err());
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct OnHost<E: ?Sized> {
    owner: Owner,
    /// The executor that computes the field.
    pub exec: E,
}

#[cfg(feature = "alloc")]
impl<E> OnHost<E> {
    /// `exec` as a resident executor.
    pub fn new(exec: E) -> Self {
        OnHost { exec, owner: Owner::new() }
    }
}

/// A system [`OnHost`] holds.
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct HostState<T: Real> {
    pos: alloc::vec::Vec<Particle<T>>,
    vel: alloc::vec::Vec<Velocity<T>>,
    field: alloc::vec::Vec<Field<T>>,
    fresh: bool,
    /// Whether `field` has potentials.
    potential: bool,
    time: f64,
    owner: Owner,
}

#[cfg(feature = "alloc")]
impl<E: ?Sized> core::ops::Deref for OnHost<E> {
    type Target = E;
    fn deref(&self) -> &E {
        &self.exec
    }
}

#[cfg(feature = "alloc")]
impl<E: ?Sized> core::ops::DerefMut for OnHost<E> {
    fn deref_mut(&mut self) -> &mut E {
        &mut self.exec
    }
}

/// Forces come from the executor inside.
#[cfg(feature = "alloc")]
impl<E: ?Sized> crate::forward::Forward for OnHost<E> {
    type Inner = E;
    fn inner(&self) -> &E {
        &self.exec
    }
    fn inner_mut(&mut self) -> &mut E {
        &mut self.exec
    }
}

#[cfg(feature = "alloc")]
impl<T: Real, E: Executor<T>> Resident<T> for OnHost<E> {
    type State = HostState<T>;

    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<HostState<T>, Error> {
        crate::validate::particles(pos, crate::Array::Particles)?;
        crate::validate::velocities(vel, pos.len(), crate::Array::Velocities)?;
        Ok(HostState {
            pos: pos.to_vec(),
            vel: vel.to_vec(),
            field: alloc::vec![Field::zero(); pos.len()],
            fresh: false,
            potential: false,
            time: 0.0,
            owner: self.owner,
        })
    }

    fn download_state(
        &mut self,
        s: &HostState<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::validate::length("positions", s.pos.len(), pos.len())?;
        crate::validate::length("velocities", s.vel.len(), vel.len())?;
        pos.copy_from_slice(&s.pos);
        vel.copy_from_slice(&s.vel);
        Ok(())
    }

    fn download_field(&mut self, s: &mut HostState<T>, params: &Params<T>, out: &mut [Field<T>]) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::validate::length("output", s.field.len(), out.len())?;
        let held = (s.fresh, s.potential);
        if !field_aside(held.0, held.1, params) {
            if !s.fresh {
                self.compute_field(s, params)?;
            }
            out.copy_from_slice(&s.field);
            return Ok(());
        }
        // A potential the held field lacks: computed aside for this download only, the
        // held field kept as the steps made it (a run's bits do not depend on when its
        // diagnostics ran).
        let kept = core::mem::replace(&mut s.field, alloc::vec![Field::zero(); out.len()]);
        let got = self.compute_field(s, params).map(|()| out.copy_from_slice(&s.field));
        s.field = kept;
        (s.fresh, s.potential) = held;
        got
    }

    fn field_is_current(s: &HostState<T>) -> bool {
        s.fresh
    }

    fn compute_field(&mut self, s: &mut HostState<T>, params: &Params<T>) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        s.field.iter_mut().for_each(|f| *f = Field::zero());
        self.exec.accelerations(&s.pos, &s.pos, &params.with_overlap(crate::Overlap::Identical), &mut s.field)?;
        (s.fresh, s.potential) = (true, params.potential);
        Ok(())
    }

    fn kick(&mut self, s: &mut HostState<T>, h: T) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::stepping::kick(&mut s.vel, &s.field, h);
        Ok(())
    }

    fn drift(&mut self, s: &mut HostState<T>, h: T) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::stepping::drift(&mut s.pos, &s.vel, h);
        s.fresh = false;
        Ok(())
    }

    fn len(s: &HostState<T>) -> usize {
        s.pos.len()
    }

    fn time(s: &HostState<T>) -> f64 {
        s.time
    }

    fn set_time(s: &mut HostState<T>, t: f64) {
        s.time = t;
    }
}

#[cfg(feature = "alloc")]
impl<T: Real, E: Executor<T>> ForeignSources<T> for OnHost<E> {
    fn download_sources(&mut self, s: &HostState<T>, out: &mut [Particle<T>]) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::validate::length("sources", s.pos.len(), out.len())?;
        out.copy_from_slice(&s.pos);
        Ok(())
    }

    fn add_pull(&mut self, s: &mut HostState<T>, sources: &[Particle<T>], params: &Params<T>) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::validate::foreign_pull(core::mem::replace(&mut s.fresh, false))?;
        // The held field's kind: a potential is added only where the own pull had one.
        let params = Params { potential: s.potential, ..params.with_overlap(crate::Overlap::Disjoint) };
        self.exec.accelerations(&s.pos, sources, &params, &mut s.field)?;
        s.fresh = true;
        Ok(())
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::{OnHost, Resident};
    use crate::{Field, Params, Particle, Reference, Velocity};

    /// An acceleration-only step leaves no potential; a download asking for one computes
    /// it, with the same accelerations.
    #[test]
    fn potential_is_computed_when_asked_after_acceleration_only_steps() {
        let p = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 2.0)];
        let v = [Velocity::new(0.0, -0.3, 0.0), Velocity::new(0.0, 0.3, 0.0)];
        let mut exec = OnHost::new(Reference);
        let mut s = exec.upload_state(&p, &v).unwrap();
        let params = Params::softened(0.0);
        exec.leapfrog_step(&mut s, &params.acceleration_only(), 0.01).unwrap();
        let (mut plain, mut full) = ([Field::zero(); 2], [Field::zero(); 2]);
        exec.download_field(&mut s, &params.acceleration_only(), &mut plain).unwrap();
        exec.download_field(&mut s, &params, &mut full).unwrap();
        assert!(plain.iter().all(|f| f.phi == 0.0));
        assert!(full[0].phi < -0.9 && full[1].phi < -0.4, "{full:?}");
        assert_eq!(plain.map(|f| f.acceleration()), full.map(|f| f.acceleration()));
        let mut again = [Field::zero(); 2];
        exec.download_field(&mut s, &params.acceleration_only(), &mut again).unwrap();
        assert_eq!(again, plain, "the held field stays acceleration-only");
        assert!(OnHost::<Reference>::field_is_current(&s));
    }
}

#[cfg(feature = "std")]
/// How a resident Hermite corrector picks each corrected particle's next step, by
/// [`crate::rules`]: Aarseth's criterion with accuracy `eta` ([`crate::rules::next_step`]),
/// and with `dt_max` the block steps kept commensurate ([`crate::rules::block_step`],
/// no smaller than `dt_max` [`crate::rules::MIN_FRACTION`]).
///
/// ```
/// use nbody_core::resident::HermiteRule;
/// let rule = HermiteRule { eta: 0.02, dt_max: Some(0.25) };
/// // Wishing for 0.2 after a step of 0.125 ending at 0.5: a block step of 0.125.
/// assert_eq!(rule.next(0.2, 0.125, 0.5), 0.125);
/// assert_eq!(HermiteRule { eta: 0.02, dt_max: None }.next(0.2, 0.125, 0.5), 0.2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HermiteRule {
    /// Aarseth's accuracy parameter.
    pub eta: f64,
    /// Block steps of at most this (`None`: one shared step, the caller's choice).
    pub dt_max: Option<f64>,
}

#[cfg(feature = "std")]
impl HermiteRule {
    /// The step a particle takes next after a step of `dt` ending at `t` whose criterion
    /// wished for `want`: `want` itself for shared steps, else the block step.
    pub fn next(&self, want: f64, dt: f64, t: f64) -> f64 {
        match self.dt_max {
            None => want,
            Some(dt_max) => crate::rules::block_step(want, dt, t, dt_max, dt_max * crate::rules::MIN_FRACTION),
        }
    }
}

#[cfg(feature = "std")]
/// A resident Hermite system's records, copied out of the executor or to be put in: per
/// particle four lanes (x, y, z and the mass for positions; the fourth lane of the
/// others as the executor keeps it) and its own time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HermiteRecords<T> {
    /// Positions and masses.
    pub pos: alloc::vec::Vec<[T; 4]>,
    /// Velocities.
    pub vel: alloc::vec::Vec<[T; 4]>,
    /// Accelerations at each particle's own time.
    pub acc: alloc::vec::Vec<[T; 4]>,
    /// Jerks at each particle's own time.
    pub jerk: alloc::vec::Vec<[T; 4]>,
    /// Each particle's time.
    pub t: alloc::vec::Vec<f64>,
}

#[cfg(feature = "std")]
impl<T: Real> HermiteRecords<T> {
    /// Particles at `time` before any force: no acceleration or jerk yet.
    ///
    /// ```
    /// use nbody_core::resident::HermiteRecords;
    /// use nbody_core::{Particle, Velocity};
    /// let r = HermiteRecords::at(&[Particle::new(1.0f64, 2.0, 3.0, 4.0)], &[Velocity::new(5.0, 6.0, 7.0)], 0.5);
    /// assert_eq!((r.pos[0], r.vel[0], r.t[0]), ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 0.0], 0.5));
    /// ```
    pub fn at(pos: &[Particle<T>], vel: &[Velocity<T>], time: f64) -> Self {
        let z = T::zero();
        HermiteRecords {
            pos: pos.iter().map(|p| [p.x, p.y, p.z, p.m]).collect(),
            vel: vel.iter().map(|v| [v.vx, v.vy, v.vz, z]).collect(),
            acc: alloc::vec![[z; 4]; pos.len()],
            jerk: alloc::vec![[z; 4]; pos.len()],
            t: alloc::vec![time; pos.len()],
        }
    }

    /// Particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Copies the positions and velocities into `pos` and `vel` (each as long as the
    /// records).
    ///
    /// ```
    /// use nbody_core::resident::HermiteRecords;
    /// use nbody_core::{Particle, Velocity};
    /// let (p, v) = ([Particle::new(1.0f64, 2.0, 3.0, 4.0)], [Velocity::new(5.0, 6.0, 7.0)]);
    /// let (mut q, mut w) = ([Particle::default()], [Velocity::default()]);
    /// HermiteRecords::at(&p, &v, 0.0).particles(&mut q, &mut w)?;
    /// assert_eq!((q, w), (p, v));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn particles(&self, pos: &mut [Particle<T>], vel: &mut [Velocity<T>]) -> Result<(), Error> {
        crate::validate::length("positions", self.len(), pos.len())?;
        crate::validate::length("velocities", self.len(), vel.len())?;
        for ((p, v), (&[x, y, z, m], &[vx, vy, vz, _])) in
            pos.iter_mut().zip(vel.iter_mut()).zip(self.pos.iter().zip(&self.vel))
        {
            (*p, *v) = (Particle::new(x, y, z, m), Velocity::new(vx, vy, vz));
        }
        Ok(())
    }

    /// `Ok` when every array holds one record per particle.
    pub fn check(&self) -> Result<(), Error> {
        let n = self.pos.len();
        if [self.vel.len(), self.acc.len(), self.jerk.len(), self.t.len()].iter().any(|&l| l != n) {
            return Err(Error::InvalidParameter {
                name: "Hermite records",
                requirement: "one position, velocity, acceleration, jerk and time per particle",
            });
        }
        Ok(())
    }

    /// The force calls' parameters for softening `eps` (Plummer), once the records are
    /// checked as a force call's particles and velocities are: what every
    /// [`HermiteResident::upload_hermite`] checks before it keeps them.
    ///
    /// ```
    /// use nbody_core::resident::HermiteRecords;
    /// use nbody_core::{Particle, Velocity};
    /// let mut r = HermiteRecords::at(&[Particle::new(1.0f64, 2.0, 3.0, 4.0)], &[Velocity::new(5.0, 6.0, 7.0)], 0.0);
    /// assert_eq!(r.params(0.5)?.eps, 0.5);
    /// r.vel[0][1] = f64::NAN;
    /// assert!(r.params(0.5).is_err());
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn params(&self, eps: T) -> Result<Params<T>, Error> {
        self.check()?;
        let (mut pos, mut vel) =
            (alloc::vec![Particle::default(); self.len()], alloc::vec![Velocity::default(); self.len()]);
        self.particles(&mut pos, &mut vel)?;
        crate::validate::particles(&pos, crate::Array::Particles)?;
        crate::validate::velocities(&vel, pos.len(), crate::Array::Velocities)?;
        let params = Params::softened(eps).acceleration_only();
        crate::validate::params(&params)?;
        Ok(params)
    }
}

#[cfg(feature = "std")]
/// An executor that holds a fourth-order Hermite system in its own memory, as a GRAPE-6
/// keeps its j-particles: positions, velocities, accelerations, jerks and each particle's
/// time stay there, and one call predicts every particle, computes the active ones'
/// acceleration and jerk against all of them and corrects them in place, so only the
/// active indices go in and their next steps come out. Which particles are active and
/// when is the caller's: `nbody_integrators::ResidentHermite` steps any such executor
/// (shared or block steps) and [`OnHost`] is one on the host.
pub trait HermiteResident<T: Real>: Executor<T> {
    /// A system this executor holds.
    type Hermite;

    /// Puts `records` in (checked as a force call's particles are), softened by `eps`
    /// (Plummer).
    fn upload_hermite(&mut self, records: &HermiteRecords<T>, eps: T) -> Result<Self::Hermite, Error>;

    /// One force call ([`HermiteCall`]): predicts every particle to its `t`, computes the
    /// acceleration and jerk of its `active` particles from all of them, and corrects
    /// those to `t` ([`crate::rules::correct`]), writing into `want[k]` particle
    /// `active[k]`'s next step by its `rule`. With `start` it only sets their
    /// acceleration, jerk and time (the first force call; `want` is left as it is).
    fn hermite_force(&mut self, h: &mut Self::Hermite, call: HermiteCall<'_>) -> Result<(), Error>;

    /// The system's records, copied out.
    fn download_hermite(&mut self, h: &Self::Hermite) -> Result<HermiteRecords<T>, Error>;
}

/// One force call on a resident Hermite system ([`HermiteResident::hermite_force`]).
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct HermiteCall<'a> {
    /// The particles to force and correct (indices, each once).
    pub active: &'a [u32],
    /// The time every particle is predicted to and the active ones corrected to.
    pub t: f64,
    /// The first call: set the derivatives and times only.
    pub start: bool,
    /// How the next steps are chosen.
    pub rule: HermiteRule,
    /// Receives the active particles' next steps (at least as long as `active`).
    pub want: &'a mut [f64],
}

#[cfg(feature = "std")]
impl HermiteCall<'_> {
    /// `Ok` when every active index is below `n`, and `want` holds a step for each.
    pub fn check(&self, n: usize) -> Result<(), Error> {
        if self.active.iter().any(|&i| i as usize >= n) || self.want.len() < self.active.len() {
            return Err(Error::InvalidParameter { name: "active", requirement: "indices of the system's particles" });
        }
        Ok(())
    }
}

/// A Hermite system [`OnHost`] holds.
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct HostHermite<T: Real> {
    rec: HermiteRecords<T>,
    params: Params<T>,
    owner: Owner,
}

/// The host's twin of a device Hermite: the records in `T`, the predictor and corrector
/// in f64, the field from the executor inside (the device kernels do the same
/// arithmetic).
///
/// ```
/// use nbody_core::resident::{HermiteCall, HermiteRecords, HermiteResident, HermiteRule, OnHost};
/// use nbody_core::{Particle, Reference, Velocity};
/// let p = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let v = [Velocity::new(0.0, -0.35, 0.0), Velocity::new(0.0, 0.35, 0.0)];
/// let mut exec = OnHost::new(Reference);
/// let mut h = exec.upload_hermite(&HermiteRecords::at(&p, &v, 0.0), 0.0)?;
/// let (rule, mut want) = (HermiteRule { eta: 0.02, dt_max: None }, [0.0; 2]);
/// exec.hermite_force(&mut h, HermiteCall { active: &[0, 1], t: 0.0, start: true, rule, want: &mut want })?;
/// exec.hermite_force(&mut h, HermiteCall { active: &[0, 1], t: 0.01, start: false, rule, want: &mut want })?;
/// assert!(want[0] > 0.0 && exec.download_hermite(&h)?.t == [0.01, 0.01]);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[cfg(feature = "std")]
impl<T: Real, E: Executor<T>> HermiteResident<T> for OnHost<E> {
    type Hermite = HostHermite<T>;

    fn upload_hermite(&mut self, records: &HermiteRecords<T>, eps: T) -> Result<HostHermite<T>, Error> {
        let params = records.params(eps)?;
        Ok(HostHermite { rec: records.clone(), params, owner: self.owner })
    }

    fn hermite_force(&mut self, h: &mut HostHermite<T>, call: HermiteCall<'_>) -> Result<(), Error> {
        self.owner.check(h.owner)?;
        let n = h.rec.len();
        call.check(n)?;
        let HermiteCall { active, t, start, rule, want } = call;
        let wide = |r: [T; 4]| [r[0].to_f64(), r[1].to_f64(), r[2].to_f64()];
        let c = T::from_f64;
        let (mut ppos, mut pvel) = (alloc::vec::Vec::with_capacity(n), alloc::vec::Vec::with_capacity(n));
        for i in 0..n {
            let r = &h.rec;
            let (x, v) =
                crate::rules::predict(wide(r.pos[i]), wide(r.vel[i]), wide(r.acc[i]), wide(r.jerk[i]), t - r.t[i]);
            ppos.push(Particle::new(c(x[0]), c(x[1]), c(x[2]), r.pos[i][3]));
            pvel.push(Velocity::new(c(v[0]), c(v[1]), c(v[2])));
        }
        let tpos: alloc::vec::Vec<_> = active.iter().map(|&i| ppos[i as usize]).collect();
        let tvel: alloc::vec::Vec<_> = active.iter().map(|&i| pvel[i as usize]).collect();
        let (mut field, mut jerk) =
            (alloc::vec![Field::zero(); active.len()], alloc::vec![crate::Jerk::zero(); active.len()]);
        let (targets, sources) = (crate::Bodies { pos: &tpos, vel: &tvel }, crate::Bodies { pos: &ppos, vel: &pvel });
        self.exec.accelerations_jerk(targets, sources, &h.params, &mut field, &mut jerk)?;
        let z = T::zero();
        for (k, &i) in active.iter().enumerate() {
            let i = i as usize;
            let (f, j) = (field[k], jerk[k].components());
            let (acc, jrk) = ([f.ax, f.ay, f.az, z], [j[0], j[1], j[2], z]);
            let r = &mut h.rec;
            if !start {
                let dt = t - r.t[i];
                let (a1, j1) = (wide(acc), wide(jrk));
                let (x1, v1, a2, a3) = crate::rules::correct(
                    [wide(r.pos[i]), wide(r.vel[i]), wide(r.acc[i]), wide(r.jerk[i]), a1, j1],
                    dt,
                );
                r.pos[i] = [c(x1[0]), c(x1[1]), c(x1[2]), r.pos[i][3]];
                r.vel[i] = [c(v1[0]), c(v1[1]), c(v1[2]), z];
                want[k] = rule.next(crate::rules::next_step(rule.eta, dt, a1, j1, a2, a3), dt, t);
            }
            (r.acc[i], r.jerk[i], r.t[i]) = (acc, jrk, t);
        }
        Ok(())
    }

    fn download_hermite(&mut self, h: &HostHermite<T>) -> Result<HermiteRecords<T>, Error> {
        self.owner.check(h.owner)?;
        Ok(h.rec.clone())
    }
}
