//! Fourth-order Hermite predictor-corrector (Makino & Aarseth 1992) with a shared
//! adaptive step from the Aarseth criterion.

use crate::{Diagnostics, State, diagnostics_combined};
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Params, Particle, Real, Velocity};

/// Hermite 4 with shared time steps: `dt = min_i sqrt(eta (|a||a''| + |a'|²) / (|a'||a'''| + |a''|²))`.
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, Hermite, State};
/// let (p, v) = ics::figure_eight::<f64>();
/// let mut s = State::new(p, v);
/// let mut h = Hermite::new(0.02, 0.0)?;
/// h.advance_to(&mut s, &mut Reference, 0.5)?;
/// assert!((s.time - 0.5).abs() < 1e-15);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Hermite<T: Real> {
    eta: f64,
    pub(crate) params: Params<T>,
    field: Vec<Field<T>>,
    jerk: Vec<Jerk<T>>,
    dt: f64,
    fresh: bool,
    iterations: usize,
    symmetrize: usize,
    criterion: Criterion,
    timing: crate::StepTiming,
}

/// How `eta` sets the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// Aarseth's: `dt = sqrt(eta (|a||a''| + |a'|²) / (|a'||a'''| + |a''|²))` (the
    /// default; eta ~ 0.01-0.02 in collisional codes).
    Aarseth,
    /// `dt = eta |a| / |a'|`: eta is the step as a fraction of the acceleration's
    /// time scale (the first-step rule of Makino & Aarseth 1992, used throughout).
    AccelerationOverJerk,
}

use crate::rules::{aarseth_step, correct as corrector, norm, predict};

/// Refuses an accuracy parameter that is not finite and positive (every Hermite
/// integrator takes one).
pub(crate) fn check_eta(eta: f64) -> Result<(), Error> {
    if eta.is_finite() && eta > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter { name: "eta", requirement: "finite and positive" })
    }
}

/// Takes shared steps of at most what is left until `s.time == t_end` (the last one
/// shortened to land on it exactly); `step(s, left)` returns the step taken. Returns the
/// number of steps. Shared by the fourth- and sixth-order integrators.
pub(crate) fn advance_shared<T: Real>(
    s: &mut State<T>,
    t_end: f64,
    mut step: impl FnMut(&mut State<T>, f64) -> Result<f64, Error>,
) -> Result<usize, Error> {
    let mut steps = 0;
    while s.time < t_end {
        let left = t_end - s.time;
        if step(s, left)? >= left {
            s.time = t_end;
        }
        steps += 1;
    }
    Ok(steps)
}

impl<T: Real> Hermite<T> {
    /// A Hermite integrator with accuracy parameter `eta` and softening `eps`.
    pub fn new(eta: f64, eps: T) -> Result<Self, Error> {
        check_eta(eta)?;
        let params = Params::softened(eps).with_overlap_identical();
        nbody_core::validate::params(&params)?;
        Ok(Self {
            eta,
            params,
            field: Vec::new(),
            jerk: Vec::new(),
            dt: 0.0,
            fresh: false,
            iterations: 1,
            symmetrize: 0,
            criterion: Criterion::Aarseth,
            timing: Default::default(),
        })
    }

    /// Evaluates and corrects `n` times per step (P(EC)^n, Kokubo, Yoshinaga & Makino
    /// 1998): each extra pass costs a force call and brings the scheme closer to time
    /// symmetry, so the energy error stops drifting. `n = 1` (the default) is Makino &
    /// Aarseth's scheme.
    pub fn with_corrector_iterations(mut self, n: usize) -> Self {
        self.iterations = n.max(1);
        self
    }

    /// Uses `criterion` to turn `eta` into steps.
    pub fn with_criterion(mut self, criterion: Criterion) -> Self {
        self.criterion = criterion;
        self
    }

    /// Chooses each step time-symmetrically, `dt = (tau(t) + tau(t + dt)) / 2`, redoing
    /// a step up to `n` times to solve for it (Hut, Makino & McMillan 1995). With
    /// [`Hermite::with_corrector_iterations`] of 2 or more the scheme is close to time
    /// reversible and the energy error of periodic orbits stops growing.
    pub fn with_symmetric_steps(mut self, n: usize) -> Self {
        self.symmetrize = n;
        self
    }

    /// The step the next call will take.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    fn force<E: Executor<T>>(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>], e: &mut E) -> Result<(), Error> {
        self.field.clear();
        self.field.resize(pos.len(), Field::zero());
        self.jerk.clear();
        self.jerk.resize(pos.len(), Jerk::zero());
        let (spos, params) = crate::state::sources(pos, &self.params, e);
        let (targets, sources) = (Bodies { pos, vel }, Bodies { pos: spos, vel: &vel[..spos.len()] });
        let start = std::time::Instant::now();
        let r = e.accelerations_jerk(targets, sources, &params, &mut self.field, &mut self.jerk);
        self.timing.force += start.elapsed();
        r
    }

    /// Time spent so far in steps, and in their force calls.
    pub fn timing(&self) -> crate::StepTiming {
        self.timing
    }

    fn start<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        self.force(&s.pos, &s.vel, e)?;
        let acc: Vec<[f64; 3]> = self.field.iter().map(|f| f.acceleration().map(Real::to_f64)).collect();
        let jerk: Vec<[f64; 3]> = self.jerk.iter().map(|j| j.components().map(Real::to_f64)).collect();
        // A shared step: the smallest over every process of a distributed executor.
        self.dt = crate::rules::first_shared_step(e, &acc, &jerk);
        self.fresh = true;
        Ok(())
    }

    /// One step of at most `max_dt`; returns the step taken.
    pub fn step<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, max_dt: f64) -> Result<f64, Error> {
        let start = std::time::Instant::now();
        if !self.fresh || self.field.len() != s.len() {
            self.start(s, e)?;
        }
        let (a0, j0) = (self.field.clone(), self.jerk.clone());
        let (x0, v0) = (s.pos.clone(), s.vel.clone());
        let tau0 = self.dt;
        let mut dt = tau0.min(max_dt);
        let mut next = self.attempt(&x0, &v0, &a0, &j0, s, e, dt)?;
        // Time-symmetric steps: dt = (tau(t0) + tau(t0 + dt)) / 2, solved by redoing the
        // step (Hut, Makino & McMillan 1995). The error then oscillates instead of drifting.
        for _ in 0..self.symmetrize {
            let want = (0.5 * (tau0 + next)).min(max_dt);
            if !(want.is_finite() && want > 0.0) || (want - dt).abs() <= 1e-12 * dt {
                break;
            }
            dt = want;
            next = self.attempt(&x0, &v0, &a0, &j0, s, e, dt)?;
        }
        // The next step starts from a and a' evaluated at the predicted state (P(EC)¹, as
        // in Makino & Aarseth 1992): no second force call per step.
        self.dt = crate::rules::next_shared_step([next], dt);
        s.time += dt;
        self.timing.total += start.elapsed();
        Ok(dt)
    }

    /// Predicts from the start of the step, then evaluates and corrects `iterations`
    /// times, leaving the result in `s`; returns the criterion's step at the end.
    #[allow(clippy::too_many_arguments)]
    fn attempt<E: Executor<T>>(
        &mut self,
        x0: &[Particle<T>],
        v0: &[Velocity<T>],
        a0: &[Field<T>],
        j0: &[Jerk<T>],
        s: &mut State<T>,
        e: &mut E,
        dt: f64,
    ) -> Result<f64, Error> {
        let f = |x: T| x.to_f64();
        // Predictor: Taylor series to the jerk.
        for i in 0..s.len() {
            let (x, v, a, j) = (x0[i].position(), v0[i].components(), a0[i].acceleration(), j0[i].components());
            let (px, pv) = predict(x.map(f), v.map(f), a.map(f), j.map(f), dt);
            s.pos[i] = Particle::new(T::from_f64(px[0]), T::from_f64(px[1]), T::from_f64(px[2]), x0[i].m);
            s.vel[i] = Velocity::new(T::from_f64(pv[0]), T::from_f64(pv[1]), T::from_f64(pv[2]));
        }
        let mut next = f64::INFINITY;
        for _ in 0..self.iterations {
            // Evaluate at the predicted (then at the corrected) state; correct from the start.
            self.force(&s.pos, &s.vel, e)?;
            next = self.correct(x0, v0, a0, j0, s, dt);
        }
        let next = nbody_core::collective::min(e, next);
        Ok(next)
    }

    /// The corrector from the start of the step (`x0`, `v0`, `a0`, `j0`) and the field
    /// now in `self`; returns the next step from the interpolated higher derivatives.
    fn correct(
        &self,
        x0: &[Particle<T>],
        v0: &[Velocity<T>],
        a0: &[Field<T>],
        j0: &[Jerk<T>],
        s: &mut State<T>,
        dt: f64,
    ) -> f64 {
        let f = |x: T| x.to_f64();
        let mut next = f64::INFINITY;
        for i in 0..s.len() {
            let (x, v) = (x0[i].position().map(f), v0[i].components().map(f));
            let (a0, j0) = (a0[i].acceleration().map(f), j0[i].components().map(f));
            let (a1, j1) = (self.field[i].acceleration().map(f), self.jerk[i].components().map(f));
            let (x1, v1, a2, a3) = corrector([x, v, a0, j0, a1, j1], dt);
            s.pos[i] = Particle::new(T::from_f64(x1[0]), T::from_f64(x1[1]), T::from_f64(x1[2]), x0[i].m);
            s.vel[i] = Velocity::new(T::from_f64(v1[0]), T::from_f64(v1[1]), T::from_f64(v1[2]));
            let di = match self.criterion {
                Criterion::Aarseth => aarseth_step(self.eta, a1, j1, a2, a3),
                Criterion::AccelerationOverJerk => self.eta * norm(a1) / norm(j1),
            };
            if di.is_finite() && di > 0.0 {
                next = next.min(di);
            }
        }
        next
    }

    /// Steps until `s.time == t_end` (the last step is shortened to land on it).
    pub fn advance_to<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, t_end: f64) -> Result<usize, Error> {
        advance_shared(s, t_end, |s, left| self.step(s, e, left))
    }

    /// Diagnostics at the current state (one extra force evaluation).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        let mut field = vec![Field::zero(); s.len()];
        e.accelerations(&s.pos, &s.pos, &self.params, &mut field)?;
        Ok(diagnostics_combined(s, &field, e))
    }
}

impl<T: Real> crate::Checkpoint for Hermite<T> {
    fn save_to(&self, out: &mut crate::Sink<'_>) {
        out.f64(self.dt);
        out.word(u64::from(self.fresh));
        out.fields(&self.field);
        out.jerks(&self.jerk);
    }

    fn restore_from(&mut self, from: &mut crate::Source<'_, '_, '_>) -> Result<(), Error> {
        (self.dt, self.fresh) = (from.f64()?, from.flag()?);
        (self.field, self.jerk) = (from.fields()?, from.jerks()?);
        Ok(())
    }
}
