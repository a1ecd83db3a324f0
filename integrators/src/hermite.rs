//! Fourth-order Hermite predictor-corrector (Makino & Aarseth 1992) with a shared
//! adaptive step from the Aarseth criterion.

use crate::{diagnostics, Diagnostics, State};
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
pub struct Hermite<T: Real> {
    eta: f64,
    params: Params<T>,
    field: Vec<Field<T>>,
    jerk: Vec<Jerk<T>>,
    dt: f64,
    fresh: bool,
    timing: crate::StepTiming,
}

/// Factor of the first step: `dt0 = ETA_START · min |a| / |a'|`.
const ETA_START: f64 = 0.01;

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

impl<T: Real> Hermite<T> {
    /// A Hermite integrator with accuracy parameter `eta` and softening `eps`.
    pub fn new(eta: f64, eps: T) -> Result<Self, Error> {
        if !(eta.is_finite() && eta > 0.0) {
            return Err(Error::InvalidParameter { name: "eta", requirement: "finite and positive" });
        }
        let params = Params::softened(eps).with_overlap_identical();
        nbody_core::validate::params(&params)?;
        Ok(Self { eta, params, field: Vec::new(), jerk: Vec::new(), dt: 0.0, fresh: false, timing: Default::default() })
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
        let b = Bodies { pos, vel };
        let start = std::time::Instant::now();
        let r = e.accelerations_jerk(b, b, &self.params, &mut self.field, &mut self.jerk);
        self.timing.force += start.elapsed();
        r
    }

    /// Time spent so far in steps, and in their force calls.
    pub fn timing(&self) -> crate::StepTiming {
        self.timing
    }

    fn start<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        self.force(&s.pos, &s.vel, e)?;
        self.dt = self
            .field
            .iter()
            .zip(&self.jerk)
            .map(|(f, j)| ETA_START * norm(f.acceleration().map(Real::to_f64)) / norm(j.components().map(Real::to_f64)))
            .filter(|d| d.is_finite() && *d > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !self.dt.is_finite() {
            self.dt = ETA_START;
        }
        self.fresh = true;
        Ok(())
    }

    /// One step of at most `max_dt`; returns the step taken.
    pub fn step<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, max_dt: f64) -> Result<f64, Error> {
        let start = std::time::Instant::now();
        if !self.fresh || self.field.len() != s.len() {
            self.start(s, e)?;
        }
        let dt = self.dt.min(max_dt);
        let (a0, j0) = (self.field.clone(), self.jerk.clone());
        let f = |x: T| x.to_f64();
        // Predictor: Taylor series to the jerk.
        let mut xp = s.pos.clone();
        let mut vp = s.vel.clone();
        for i in 0..s.len() {
            let (x, v, a, j) = (s.pos[i].position(), s.vel[i].components(), a0[i].acceleration(), j0[i].components());
            let px: [f64; 3] =
                core::array::from_fn(|k| f(x[k]) + dt * (f(v[k]) + dt * (0.5 * f(a[k]) + dt * f(j[k]) / 6.0)));
            let pv: [f64; 3] = core::array::from_fn(|k| f(v[k]) + dt * (f(a[k]) + 0.5 * dt * f(j[k])));
            xp[i] = Particle::new(T::from_f64(px[0]), T::from_f64(px[1]), T::from_f64(px[2]), s.pos[i].m);
            vp[i] = Velocity::new(T::from_f64(pv[0]), T::from_f64(pv[1]), T::from_f64(pv[2]));
        }
        self.force(&xp, &vp, e)?;
        // Corrector, and the next step from the interpolated higher derivatives.
        let mut next = f64::INFINITY;
        for i in 0..s.len() {
            let (x, v) = (s.pos[i].position().map(f), s.vel[i].components().map(f));
            let (a0, j0) = (a0[i].acceleration().map(f), j0[i].components().map(f));
            let (a1, j1) = (self.field[i].acceleration().map(f), self.jerk[i].components().map(f));
            let v1: [f64; 3] =
                core::array::from_fn(|k| v[k] + 0.5 * dt * (a0[k] + a1[k]) + dt * dt * (j0[k] - j1[k]) / 12.0);
            let x1: [f64; 3] =
                core::array::from_fn(|k| x[k] + 0.5 * dt * (v[k] + v1[k]) + dt * dt * (a0[k] - a1[k]) / 12.0);
            s.pos[i] = Particle::new(T::from_f64(x1[0]), T::from_f64(x1[1]), T::from_f64(x1[2]), s.pos[i].m);
            s.vel[i] = Velocity::new(T::from_f64(v1[0]), T::from_f64(v1[1]), T::from_f64(v1[2]));
            let a3: [f64; 3] =
                core::array::from_fn(|k| (12.0 * (a0[k] - a1[k]) + 6.0 * dt * (j0[k] + j1[k])) / dt.powi(3));
            let a2: [f64; 3] = core::array::from_fn(|k| {
                (-6.0 * (a0[k] - a1[k]) - dt * (4.0 * j0[k] + 2.0 * j1[k])) / (dt * dt) + a3[k] * dt
            });
            let (na, nj, n2, n3) = (norm(a1), norm(j1), norm(a2), norm(a3));
            let di = (self.eta * (na * n2 + nj * nj) / (nj * n3 + n2 * n2)).sqrt();
            if di.is_finite() && di > 0.0 {
                next = next.min(di);
            }
        }
        // The next step starts from a and a' evaluated at the predicted state (P(EC)¹, as
        // in Makino & Aarseth 1992): no second force call per step.
        self.dt = if next.is_finite() { next.min(2.0 * dt) } else { 2.0 * dt };
        s.time += dt;
        self.timing.total += start.elapsed();
        Ok(dt)
    }

    /// Steps until `s.time == t_end` (the last step is shortened to land on it).
    pub fn advance_to<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, t_end: f64) -> Result<usize, Error> {
        let mut steps = 0;
        while s.time < t_end {
            let left = t_end - s.time;
            let dt = self.step(s, e, left)?;
            if dt >= left {
                s.time = t_end;
            }
            steps += 1;
        }
        Ok(steps)
    }

    /// Diagnostics at the current state (one extra force evaluation).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        let mut field = vec![Field::zero(); s.len()];
        e.accelerations(&s.pos, &s.pos, &self.params, &mut field)?;
        Ok(diagnostics(s, &field))
    }
}
