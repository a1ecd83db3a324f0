//! Kick-drift-kick leapfrog with a fixed step: symplectic and time-reversible.

use crate::{Diagnostics, State, diagnostics_combined};
use nbody_core::{Error, Executor, Field, Params, Real};

/// Leapfrog (KDK). Keeps the last accelerations, so each step costs one force call.
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, Leapfrog, State};
/// let (p, v) = ics::kepler::<f64>(0.0, 0.5, 0.5);
/// let mut s = State::new(p, v);
/// let mut lf = Leapfrog::new(0.01, 0.0)?;
/// for _ in 0..100 {
///     lf.step(&mut s, &mut Reference)?;
/// }
/// assert!((s.time - 1.0).abs() < 1e-12);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Leapfrog<T: Real> {
    dt: f64,
    pub(crate) params: Params<T>,
    field: Vec<Field<T>>,
    fresh: bool,
    timing: crate::StepTiming,
}

impl<T: Real> Leapfrog<T> {
    /// A leapfrog with step `dt` (negative integrates backwards) and softening `eps`.
    pub fn new(dt: f64, eps: T) -> Result<Self, Error> {
        if !(dt.is_finite() && dt != 0.0) {
            return Err(Error::InvalidParameter { name: "dt", requirement: "finite and non-zero" });
        }
        let params = Params::softened(eps).with_overlap_identical();
        nbody_core::validate::params(&params)?;
        Ok(Self { dt, params, field: Vec::new(), fresh: false, timing: Default::default() })
    }

    /// The step.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// Reverses the direction of integration (the leapfrog retraces its steps).
    pub fn reverse(&mut self) {
        self.dt = -self.dt;
    }

    /// Accelerations and potentials at the current positions (after a step).
    pub fn field(&self) -> &[Field<T>] {
        &self.field
    }

    fn force<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        let start = std::time::Instant::now();
        self.field.clear();
        self.field.resize(s.len(), Field::zero());
        let (sources, params) = crate::state::sources(&s.pos, &self.params, e);
        e.accelerations(&s.pos, sources, &params, &mut self.field)?;
        self.fresh = true;
        self.timing.force += start.elapsed();
        Ok(())
    }

    /// Time spent so far in steps, and in their force calls.
    pub fn timing(&self) -> crate::StepTiming {
        self.timing
    }

    /// Advances `s` by one step.
    pub fn step<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E) -> Result<(), Error> {
        let start = std::time::Instant::now();
        let dt = self.dt;
        nbody_core::stepping::kick_drift_kick(&mut OnHost { lf: self, s, e }, dt)?;
        s.time += self.dt;
        self.timing.total += start.elapsed();
        Ok(())
    }

    /// Diagnostics at the current state (computes the force if no step has yet).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        if !self.fresh || self.field.len() != s.len() {
            self.force(s, e)?;
        }
        Ok(diagnostics_combined(s, &self.field, e))
    }
}

/// A host system as [`nbody_core::stepping`] steps it: the state, and the field the
/// leapfrog keeps for it.
struct OnHost<'a, T: Real, E> {
    lf: &'a mut Leapfrog<T>,
    s: &'a mut State<T>,
    e: &'a mut E,
}

impl<T: Real, E: Executor<T>> nbody_core::stepping::KickDrift<T> for OnHost<'_, T, E> {
    fn field_is_current(&self) -> bool {
        self.lf.fresh && self.lf.field.len() == self.s.len()
    }

    fn compute_field(&mut self) -> Result<(), Error> {
        self.lf.force(self.s, self.e)
    }

    fn kick(&mut self, h: T) -> Result<(), Error> {
        nbody_core::stepping::kick(&mut self.s.vel, &self.lf.field, h);
        Ok(())
    }

    fn drift(&mut self, h: T) -> Result<(), Error> {
        nbody_core::stepping::drift(&mut self.s.pos, &self.s.vel, h);
        self.lf.fresh = false;
        Ok(())
    }
}

impl<T: Real> crate::Checkpoint for Leapfrog<T> {
    fn save_to(&self, out: &mut crate::Sink<'_>) {
        out.f64(self.dt);
        out.word(u64::from(self.fresh));
        out.fields(&self.field);
    }

    fn restore_from(&mut self, from: &mut crate::Source<'_, '_, '_>) -> Result<(), Error> {
        (self.dt, self.fresh) = (from.f64()?, from.flag()?);
        self.field = from.fields()?;
        Ok(())
    }
}
