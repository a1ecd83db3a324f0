//! One interface over every integrator, so a driver (the `nbody` command, a user's own
//! loop) steps, checks and checkpoints any of them the same way.

use crate::{BlockHermite, Checkpoint, Diagnostics, DormandPrince, Hermite, Hermite6, Leapfrog, State};
use nbody_core::{Error, Executor, Real};

/// An integrator of a [`State`] whose forces come from any executor.
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, Hermite, Integrator, Leapfrog, State};
/// let (p, v) = ics::plummer::<f64>(64, 1);
/// let mut chosen: Vec<Box<dyn Integrator<f64>>> =
///     vec![Box::new(Leapfrog::new(1.0 / 64.0, 0.05)?), Box::new(Hermite::new(0.02, 0.05)?)];
/// for integrator in &mut chosen {
///     let mut s = State::new(p.clone(), v.clone());
///     let steps = integrator.advance_to(&mut s, &mut Reference, 0.25)?;
///     assert!(steps > 0 && integrator.reached(&s, 0.25));
/// }
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub trait Integrator<T: Real>: Checkpoint {
    /// Name for reports.
    fn name(&self) -> &'static str;

    /// Whether `s` is at `until` as far as this integrator can land: a fixed-step
    /// leapfrog within half a step of it, the others on it or past it.
    fn reached(&self, s: &State<T>, until: f64) -> bool {
        s.time >= until
    }

    /// Advances `s` towards `until` by one step (one adaptive stretch to `until` for
    /// Runge-Kutta), never past it where the integrator can shorten its step; returns
    /// the steps taken. Block steps land on multiples of their largest step, which
    /// `until` must be.
    fn step_towards(&mut self, s: &mut State<T>, e: &mut dyn Executor<T>, until: f64) -> Result<u64, Error>;

    /// Steps until [`Integrator::reached`]; returns the steps taken.
    fn advance_to(&mut self, s: &mut State<T>, e: &mut dyn Executor<T>, until: f64) -> Result<u64, Error> {
        let mut steps = 0;
        while !self.reached(s, until) {
            steps += self.step_towards(s, e, until)?;
        }
        Ok(steps)
    }

    /// Energies, momenta and centre of mass of `s` (may cost a force call).
    fn diagnostics(&mut self, s: &State<T>, e: &mut dyn Executor<T>) -> Result<Diagnostics, Error>;
}

impl<T: Real> Integrator<T> for Leapfrog<T> {
    fn name(&self) -> &'static str {
        "leapfrog"
    }

    fn reached(&self, s: &State<T>, until: f64) -> bool {
        // A fixed step lands within half a step of `until`.
        s.time >= until - 0.5 * self.dt().abs()
    }

    fn step_towards(&mut self, s: &mut State<T>, mut e: &mut dyn Executor<T>, _until: f64) -> Result<u64, Error> {
        self.step(s, &mut e).map(|()| 1)
    }

    fn diagnostics(&mut self, s: &State<T>, mut e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        Leapfrog::diagnostics(self, s, &mut e)
    }
}

impl<T: Real> Integrator<T> for Hermite<T> {
    fn name(&self) -> &'static str {
        "hermite"
    }

    fn step_towards(&mut self, s: &mut State<T>, mut e: &mut dyn Executor<T>, until: f64) -> Result<u64, Error> {
        shared_towards(s, until, |s, left| self.step(s, &mut e, left))
    }

    fn diagnostics(&mut self, s: &State<T>, mut e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        Hermite::diagnostics(self, s, &mut e)
    }
}

impl<T: Real> Integrator<T> for BlockHermite<T> {
    fn name(&self) -> &'static str {
        "block-hermite"
    }

    fn step_towards(&mut self, s: &mut State<T>, mut e: &mut dyn Executor<T>, _until: f64) -> Result<u64, Error> {
        self.step(s, &mut e).map(|_| 1)
    }

    fn diagnostics(&mut self, s: &State<T>, mut e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        BlockHermite::diagnostics(self, s, &mut e)
    }
}

impl<T: Real> Integrator<T> for Hermite6<T> {
    fn name(&self) -> &'static str {
        "hermite6"
    }

    fn step_towards(&mut self, s: &mut State<T>, mut e: &mut dyn Executor<T>, until: f64) -> Result<u64, Error> {
        shared_towards(s, until, |s, left| self.step(s, &mut e, left))
    }

    fn diagnostics(&mut self, s: &State<T>, mut e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        Hermite6::diagnostics(self, s, &mut e)
    }
}

impl<T: Real> Integrator<T> for DormandPrince<T> {
    fn name(&self) -> &'static str {
        "rk"
    }

    fn step_towards(&mut self, s: &mut State<T>, mut e: &mut dyn Executor<T>, until: f64) -> Result<u64, Error> {
        self.advance_to(s, &mut e, until).map(|n| n as u64)
    }

    fn diagnostics(&mut self, s: &State<T>, mut e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        DormandPrince::diagnostics(self, s, &mut e)
    }
}

/// One shared step of at most what is left to `until`; a step that covers it lands on
/// it exactly (`t + (until - t)` can round below `until`, and the next step would be
/// too short to move the clock).
fn shared_towards<T: Real>(
    s: &mut State<T>,
    until: f64,
    step: impl FnOnce(&mut State<T>, f64) -> Result<f64, Error>,
) -> Result<u64, Error> {
    let left = until - s.time;
    if step(s, left)? >= left {
        s.time = until;
    }
    Ok(1)
}
