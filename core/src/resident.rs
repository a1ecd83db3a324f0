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
