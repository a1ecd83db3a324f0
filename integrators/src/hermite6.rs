//! Sixth-order Hermite (Nitadori & Makino 2008) with a shared step: the kernel gives
//! acceleration, jerk and snap ([`Executor::accelerations_snap`]); the predictor runs
//! to the crackle, the corrector is sixth order, and the step comes from the generalized
//! Aarseth criterion on the derivatives of the interpolating quintic.

use crate::{Diagnostics, State, diagnostics_combined};
use nbody_core::{Error, Executor, Field, Jerk, Kinematics, Params, Particle, Real, Velocity};

type V3 = [f64; 3];
/// Acceleration, jerk and snap of every particle.
type Derivatives = (Vec<V3>, Vec<V3>, Vec<V3>);

/// Sixth-order Hermite with a shared step: `dt = eta (sqrt(|a||s| + |j|²) /
/// sqrt(|c||a⁽⁵⁾| + |p|²))^(1/3)` (a acceleration, j jerk, s snap, c crackle, p pop), or a
/// fixed step ([`Hermite6::fixed`]). Typical eta: 0.1-0.2 (the cube root makes eta a
/// step fraction). On the e = 0.5 Kepler orbit, eta = 0.1 keeps |dE/E| at 1.1e-10 over 10
/// periods in 1,751 steps; Hermite 4 needs 7,910 steps for 7.2e-10.
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, Hermite6, State};
/// let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
/// let mut s = State::new(p, v);
/// let mut h = Hermite6::new(0.1, 0.0)?;
/// let e0 = h.diagnostics(&s, &mut Reference)?.total;
/// h.advance_to(&mut s, &mut Reference, 1.0)?;
/// let e1 = h.diagnostics(&s, &mut Reference)?.total;
/// assert!(((e1 - e0) / e0).abs() < 1e-10);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Hermite6<T: Real> {
    eta: f64,
    fixed: Option<f64>,
    pub(crate) params: Params<T>,
    /// Per particle at the current time: acceleration, jerk, snap, crackle (f64).
    acc: Vec<V3>,
    jerk: Vec<V3>,
    snap: Vec<V3>,
    crackle: Vec<V3>,
    dt: f64,
    started: bool,
    steps: usize,
}

use crate::rules::norm;

/// Derivatives at the end of a step of length `h` of the quintic through a, a', a'' at
/// both ends: (crackle, pop, a⁽⁵⁾).
fn interpolate([a0, j0, s0, a1, j1, s1]: [V3; 6], h: f64) -> (V3, V3, V3) {
    let (mut c, mut p, mut q) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    for k in 0..3 {
        // a(t) = a0 + j0 t + s0 t²/2 + c3 t³ + c4 t⁴ + c5 t⁵, with u_n = c_n hⁿ solving
        // the three end conditions.
        let r0 = a1[k] - (a0[k] + h * (j0[k] + 0.5 * h * s0[k]));
        let r1 = (j1[k] - (j0[k] + h * s0[k])) * h;
        let r2 = (s1[k] - s0[k]) * h * h;
        let u5 = 0.5 * (r2 + 12.0 * r0 - 6.0 * r1);
        let u4 = r1 - 3.0 * r0 - 2.0 * u5;
        let u3 = r0 - u4 - u5;
        c[k] = (6.0 * u3 + 24.0 * u4 + 60.0 * u5) / h.powi(3);
        p[k] = (24.0 * u4 + 120.0 * u5) / h.powi(4);
        q[k] = 120.0 * u5 / h.powi(5);
    }
    (c, p, q)
}

impl<T: Real> Hermite6<T> {
    /// Adaptive steps with accuracy `eta` and softening `eps`; f64 only (an f32 `T` is
    /// an error).
    pub fn new(eta: f64, eps: T) -> Result<Self, Error> {
        // The step's crackle and higher derivatives are differences of snaps over powers
        // of the step: from f32 forces they are rounding noise and the step shrinks
        // without end.
        if core::mem::size_of::<T>() < 8 {
            return Err(Error::InvalidParameter {
                name: "precision",
                requirement: "f64 for Hermite6 (from f32 forces its crackle is rounding noise and its step collapses)",
            });
        }
        crate::hermite::check_eta(eta)?;
        let params = Params::softened(eps).with_overlap_identical();
        nbody_core::validate::params(&params)?;
        Ok(Self {
            eta,
            fixed: None,
            params,
            acc: Vec::new(),
            jerk: Vec::new(),
            snap: Vec::new(),
            crackle: Vec::new(),
            dt: 0.0,
            started: false,
            steps: 0,
        })
    }

    /// Fixed steps of `dt` (for convergence studies), softening `eps`.
    pub fn fixed(dt: f64, eps: T) -> Result<Self, Error> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(Error::InvalidParameter { name: "dt", requirement: "finite and positive" });
        }
        Ok(Self { fixed: Some(dt), ..Self::new(1.0, eps)? })
    }

    /// Steps taken so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Acceleration, jerk and snap of `pos`, `vel`, `acc` (the kernel's snap needs each
    /// body's acceleration), in f64.
    fn force<E: Executor<T>>(
        &self,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        acc: &[Field<T>],
        e: &mut E,
    ) -> Result<Derivatives, Error> {
        let n = pos.len();
        let (mut out, mut jerk, mut snap) = (vec![Field::zero(); n], vec![Jerk::zero(); n], vec![Jerk::zero(); n]);
        let (spos, params) = crate::state::sources(pos, &self.params, e);
        let m = spos.len();
        let (targets, sources) =
            (Kinematics { pos, vel, acc }, Kinematics { pos: spos, vel: &vel[..m], acc: &acc[..m] });
        e.accelerations_snap(targets, sources, &params, &mut out, &mut jerk, &mut snap)?;
        let f = |x: T| x.to_f64();
        Ok((
            out.iter().map(|o| o.acceleration().map(f)).collect(),
            jerk.iter().map(|j| j.components().map(f)).collect(),
            snap.iter().map(|s| s.components().map(f)).collect(),
        ))
    }

    fn start<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        let n = s.len();
        // The snap needs accelerations: a first pass gives them, a second the snap.
        let zero = vec![Field::zero(); n];
        let (a, _, _) = self.force(&s.pos, &s.vel, &zero, e)?;
        let acc: Vec<Field<T>> = a.iter().map(|a| field(*a)).collect();
        let (a, j, sn) = self.force(&s.pos, &s.vel, &acc, e)?;
        self.dt = crate::rules::first_shared_step(e, &a, &j);
        (self.acc, self.jerk, self.snap, self.crackle) = (a, j, sn, vec![[0.0; 3]; n]);
        self.started = true;
        Ok(())
    }

    /// One step of at most `max_dt`; returns the step taken.
    pub fn step<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, max_dt: f64) -> Result<f64, Error> {
        if !self.started || self.acc.len() != s.len() {
            self.start(s, e)?;
        }
        let natural = self.fixed.unwrap_or(self.dt);
        let dt = natural.min(max_dt);
        let n = s.len();
        let c = T::from_f64;
        // Predictor: position to the crackle, velocity to the crackle, acceleration to
        // the crackle (the snap kernel's relative accelerations are predicted too).
        let (x0, v0) = (s.pos.clone(), s.vel.clone());
        let mut pacc = Vec::with_capacity(n);
        for i in 0..n {
            let (x, v) = (x0[i].position().map(Real::to_f64), v0[i].components().map(Real::to_f64));
            let (a, j, sn, cr) = (self.acc[i], self.jerk[i], self.snap[i], self.crackle[i]);
            let px: V3 = core::array::from_fn(|k| {
                x[k] + dt * (v[k] + dt * (a[k] / 2.0 + dt * (j[k] / 6.0 + dt * (sn[k] / 24.0 + dt * cr[k] / 120.0))))
            });
            let pv: V3 = core::array::from_fn(|k| {
                v[k] + dt * (a[k] + dt * (j[k] / 2.0 + dt * (sn[k] / 6.0 + dt * cr[k] / 24.0)))
            });
            let pa: V3 = core::array::from_fn(|k| a[k] + dt * (j[k] + dt * (sn[k] / 2.0 + dt * cr[k] / 6.0)));
            s.pos[i] = Particle::new(c(px[0]), c(px[1]), c(px[2]), x0[i].m);
            s.vel[i] = Velocity::new(c(pv[0]), c(pv[1]), c(pv[2]));
            pacc.push(field(pa));
        }
        let (a1, j1, s1) = self.force(&s.pos, &s.vel, &pacc, e)?;
        let mut next = f64::INFINITY;
        for i in 0..n {
            let (x, v) = (x0[i].position().map(Real::to_f64), v0[i].components().map(Real::to_f64));
            let (a0, j0, sn0) = (self.acc[i], self.jerk[i], self.snap[i]);
            // Sixth-order corrector (Nitadori & Makino 2008, eqs. 15-16).
            let v1: V3 = core::array::from_fn(|k| {
                v[k] + dt / 2.0 * (a0[k] + a1[i][k]) - dt * dt / 10.0 * (j1[i][k] - j0[k])
                    + dt.powi(3) / 120.0 * (sn0[k] + s1[i][k])
            });
            let x1: V3 = core::array::from_fn(|k| {
                x[k] + dt / 2.0 * (v[k] + v1[k]) - dt * dt / 10.0 * (a1[i][k] - a0[k])
                    + dt.powi(3) / 120.0 * (j0[k] + j1[i][k])
            });
            s.pos[i] = Particle::new(c(x1[0]), c(x1[1]), c(x1[2]), x0[i].m);
            s.vel[i] = Velocity::new(c(v1[0]), c(v1[1]), c(v1[2]));
            let (cr, pop, a5) = interpolate([a0, j0, sn0, a1[i], j1[i], s1[i]], dt);
            let num = (norm(a1[i]) * norm(s1[i]) + norm(j1[i]).powi(2)).sqrt();
            let den = (norm(cr) * norm(a5) + norm(pop).powi(2)).sqrt();
            let want = self.eta * (num / den).cbrt();
            if want.is_finite() && want > 0.0 {
                next = next.min(want);
            }
            self.crackle[i] = cr;
        }
        (self.acc, self.jerk, self.snap) = (a1, j1, s1);
        let next = nbody_core::collective::min(e, next);
        // A step cut short to land on an output time says nothing about the next one:
        // its crackle and pop come from differences of nearly equal forces over a tiny
        // interval (rounding, not dynamics), and the steps after it would shrink
        // without end. The step the criterion last chose stands.
        self.dt = if dt < natural { natural } else { crate::rules::next_shared_step([next], dt) };
        s.time += dt;
        self.steps += 1;
        Ok(dt)
    }

    /// Steps until `s.time == t_end` (the last step shortened to land on it); returns the
    /// number of steps.
    pub fn advance_to<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, t_end: f64) -> Result<usize, Error> {
        crate::hermite::advance_shared(s, t_end, |s, left| self.step(s, e, left))
    }

    /// Diagnostics at the current state (one extra force evaluation).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        let mut out = vec![Field::zero(); s.len()];
        e.accelerations(&s.pos, &s.pos, &self.params, &mut out)?;
        Ok(diagnostics_combined(s, &out, e))
    }
}

fn field<T: Real>(a: V3) -> Field<T> {
    Field::new(T::from_f64(a[0]), T::from_f64(a[1]), T::from_f64(a[2]), T::zero())
}

impl<T: Real> crate::Checkpoint for Hermite6<T> {
    fn save_to(&self, out: &mut crate::Sink<'_>) {
        out.f64(self.dt);
        out.word(u64::from(self.started));
        out.word(self.steps as u64);
        for v in [&self.acc, &self.jerk, &self.snap, &self.crackle] {
            out.triples(v);
        }
    }

    fn restore_from(&mut self, from: &mut crate::Source<'_, '_, '_>) -> Result<(), Error> {
        (self.dt, self.started, self.steps) = (from.f64()?, from.flag()?, from.word()? as usize);
        for v in [&mut self.acc, &mut self.jerk, &mut self.snap, &mut self.crackle] {
            *v = from.triples()?;
        }
        Ok(())
    }
}
