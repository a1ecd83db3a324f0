//! Hermite 4 with individual block (power-of-two) time steps: each block step moves only
//! the particles whose step ends then (the *active* ones), which become the kernel's
//! targets against all particles predicted to that time: the N_i << N_j case.

use crate::{Diagnostics, State, StepTiming, diagnostics_combined};
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Overlap, Params, Particle, Real, Velocity};

/// Hermite 4 with block time steps `dt_max / 2^k`, chosen per particle by the Aarseth
/// criterion and kept commensurate (a step doubles only where the block time allows).
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, BlockHermite, State};
/// let (p, v) = ics::plummer::<f64>(64, 1);
/// let mut s = State::new(p, v);
/// let mut h = BlockHermite::new(0.01, 1.0 / 16.0, 1.0 / 64.0)?;
/// h.advance_to(&mut s, &mut Reference, 0.25)?;
/// assert_eq!(s.time, 0.25);
/// assert!(h.mean_active_fraction() <= 1.0);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct BlockHermite<T: Real> {
    eta: f64,
    dt_max: f64,
    pub(crate) params: Params<T>,
    /// Per particle: its time, step, and acceleration and jerk at its time (f64).
    t: Vec<f64>,
    dt: Vec<f64>,
    acc: Vec<[f64; 3]>,
    jerk: Vec<[f64; 3]>,
    /// Scratch: predicted particles with the active ones first, and the kernel's output.
    order: Vec<usize>,
    /// Per particle: whether it is active in the current block step.
    due: Vec<bool>,
    pred_pos: Vec<Particle<T>>,
    pred_vel: Vec<Velocity<T>>,
    field: Vec<Field<T>>,
    jerk_out: Vec<Jerk<T>>,
    steps: usize,
    targets: usize,
    timing: StepTiming,
    started: bool,
}

use crate::rules::MIN_FRACTION;

impl<T: Real> BlockHermite<T> {
    /// An integrator with accuracy `eta`, largest step `dt_max` and softening `eps`.
    pub fn new(eta: f64, dt_max: f64, eps: T) -> Result<Self, Error> {
        crate::hermite::check_eta(eta)?;
        if !(dt_max.is_finite() && dt_max > 0.0) {
            return Err(Error::InvalidParameter { name: "dt_max", requirement: "finite and positive" });
        }
        let params = Params::softened(eps).acceleration_only();
        nbody_core::validate::params(&params)?;
        Ok(Self {
            eta,
            dt_max,
            params,
            t: Vec::new(),
            dt: Vec::new(),
            acc: Vec::new(),
            jerk: Vec::new(),
            order: Vec::new(),
            due: Vec::new(),
            pred_pos: Vec::new(),
            pred_vel: Vec::new(),
            field: Vec::new(),
            jerk_out: Vec::new(),
            steps: 0,
            targets: 0,
            timing: StepTiming::default(),
            started: false,
        })
    }

    /// Mean fraction of the particles that were targets per block step so far.
    pub fn mean_active_fraction(&self) -> f64 {
        if self.steps == 0 || self.t.is_empty() {
            return 0.0;
        }
        self.targets as f64 / (self.steps * self.t.len()) as f64
    }

    /// Time spent so far in block steps, and in their force calls.
    pub fn timing(&self) -> StepTiming {
        self.timing
    }

    /// `dt_max / 2^k`, the largest such value not above `dt`.
    fn quantize(&self, dt: f64) -> f64 {
        crate::rules::quantize(dt, self.dt_max, self.dt_max * MIN_FRACTION)
    }

    /// Force on the active particles from the massive ones, predicted in `pred_*`:
    /// `order` is the active massive particles, the other massive ones (`massive` in
    /// all), then the active test particles and the other test particles; outputs in
    /// the active particles' order. Test particles are targets only (one more call).
    fn force<E: Executor<T>>(&mut self, n_active: usize, massive: usize, e: &mut E) -> Result<(), Error> {
        let start = std::time::Instant::now();
        self.field.clear();
        self.field.resize(n_active, Field::zero());
        self.jerk_out.clear();
        self.jerk_out.resize(n_active, Jerk::zero());
        let am = self.order[..massive].iter().take_while(|&&i| self.due[i]).count().min(n_active);
        let sources = Bodies { pos: &self.pred_pos[..massive], vel: &self.pred_vel[..massive] };
        let targets = Bodies { pos: &self.pred_pos[..am], vel: &self.pred_vel[..am] };
        let p = self.params.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: am });
        let (field, jerk) = (&mut self.field[..am], &mut self.jerk_out[..am]);
        let mut r = e.accelerations_jerk(targets, sources, &p, field, jerk);
        let at = n_active - am;
        if r.is_ok() && at > 0 {
            let t = massive..massive + at;
            let targets = Bodies { pos: &self.pred_pos[t.clone()], vel: &self.pred_vel[t] };
            let p = self.params.with_overlap(Overlap::Disjoint);
            r = e.accelerations_jerk(targets, sources, &p, &mut self.field[am..], &mut self.jerk_out[am..]);
        }
        self.timing.force += start.elapsed();
        r
    }

    /// The particles in the order [`BlockHermite::force`] takes them (`due[i]`: active),
    /// and how many act as sources (`state::source_count`).
    fn arrange<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> usize {
        let n = s.len();
        let massive = crate::state::source_count(&s.pos, e);
        let due = &self.due;
        self.order.clear();
        for range in [0..massive, massive..n] {
            self.order.extend(range.clone().filter(|&i| due[i]));
            self.order.extend(range.filter(|&i| !due[i]));
        }
        massive
    }

    /// Puts the particles in `order` (active first) into the prediction buffers,
    /// predicted to time `t`.
    fn predict(&mut self, s: &State<T>, t: f64) {
        self.pred_pos.clear();
        self.pred_vel.clear();
        for &i in &self.order {
            let d = t - self.t[i];
            let (x, v, a, j) = (
                s.pos[i].position().map(Real::to_f64),
                s.vel[i].components().map(Real::to_f64),
                self.acc[i],
                self.jerk[i],
            );
            let (px, pv) = crate::rules::predict(x, v, a, j, d);
            let c = T::from_f64;
            self.pred_pos.push(Particle::new(c(px[0]), c(px[1]), c(px[2]), s.pos[i].m));
            self.pred_vel.push(Velocity::new(c(pv[0]), c(pv[1]), c(pv[2])));
        }
    }

    fn start<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        let n = s.len();
        self.t = vec![s.time; n];
        self.acc = vec![[0.0; 3]; n];
        self.jerk = vec![[0.0; 3]; n];
        self.due = vec![true; n];
        let massive = self.arrange(s, e);
        self.predict(s, s.time);
        self.force(n, massive, e)?;
        self.started = true;
        for i in 0..n {
            self.acc[i] = self.field[i].acceleration().map(Real::to_f64);
            self.jerk[i] = self.jerk_out[i].components().map(Real::to_f64);
        }
        let wish = crate::rules::first_steps(e, &self.acc, &self.jerk);
        self.dt =
            wish.into_iter().map(|d| self.quantize(if d.is_finite() && d > 0.0 { d } else { self.dt_max })).collect();
        Ok(())
    }

    /// One block step; returns the number of active particles.
    pub fn step<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E) -> Result<usize, Error> {
        let clock = std::time::Instant::now();
        if !self.started || self.t.len() != s.len() {
            self.start(s, e)?;
        }
        let n = s.len();
        let t_next = (0..n).map(|i| self.t[i] + self.dt[i]).fold(f64::INFINITY, f64::min);
        // The block time is the earliest over every process of a distributed executor
        // (a process holding no particles, or none due, still takes part in the call).
        let t_next = nbody_core::collective::min(e, t_next);
        self.due.clear();
        self.due.extend((0..n).map(|i| self.t[i] + self.dt[i] == t_next));
        let massive = self.arrange(s, e);
        // The active particles in the order of the force call's outputs.
        let active: Vec<usize> = self.order.iter().copied().filter(|&i| self.due[i]).collect();
        let n_active = active.len();
        self.predict(s, t_next);
        self.force(n_active, massive, e)?;
        for (k, &i) in active.iter().enumerate() {
            let dt = t_next - self.t[i];
            let (x, v) = (s.pos[i].position().map(Real::to_f64), s.vel[i].components().map(Real::to_f64));
            let (a0, j0) = (self.acc[i], self.jerk[i]);
            let (a1, j1) =
                (self.field[k].acceleration().map(Real::to_f64), self.jerk_out[k].components().map(Real::to_f64));
            let (x1, v1, a2, a3) = crate::rules::correct([x, v, a0, j0, a1, j1], dt);
            let c = T::from_f64;
            s.pos[i] = Particle::new(c(x1[0]), c(x1[1]), c(x1[2]), s.pos[i].m);
            s.vel[i] = Velocity::new(c(v1[0]), c(v1[1]), c(v1[2]));
            let want = crate::rules::next_step(self.eta, dt, a1, j1, a2, a3);
            // Halve freely; double only where the new block time is a multiple of 2 dt.
            self.dt[i] = crate::rules::block_step(want, dt, t_next, self.dt_max, self.dt_max * MIN_FRACTION);
            self.t[i] = t_next;
            self.acc[i] = a1;
            self.jerk[i] = j1;
        }
        s.time = t_next;
        self.steps += 1;
        self.targets += n_active;
        self.timing.total += clock.elapsed();
        Ok(n_active)
    }

    /// Block steps until `t_end`, which must be a multiple of `dt_max` so that every
    /// particle is synchronized there. Returns the number of block steps.
    pub fn advance_to<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, t_end: f64) -> Result<usize, Error> {
        if (t_end / self.dt_max).fract() != 0.0 {
            return Err(Error::InvalidParameter { name: "t_end", requirement: "a multiple of dt_max" });
        }
        let mut steps = 0;
        while s.time < t_end {
            self.step(s, e)?;
            steps += 1;
        }
        Ok(steps)
    }

    /// Diagnostics (valid where all particles are synchronized, e.g. after `advance_to`).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        let mut field = vec![Field::zero(); s.len()];
        let p = Params { potential: true, ..self.params }.with_overlap_identical();
        e.accelerations(&s.pos, &s.pos, &p, &mut field)?;
        Ok(diagnostics_combined(s, &field, e))
    }
}

impl<T: Real> crate::Checkpoint for BlockHermite<T> {
    fn save_to(&self, out: &mut crate::Sink<'_>) {
        for w in [u64::from(self.started), self.steps as u64, self.targets as u64] {
            out.word(w);
        }
        out.f64s(&self.t);
        out.f64s(&self.dt);
        out.triples(&self.acc);
        out.triples(&self.jerk);
    }

    fn restore_from(&mut self, from: &mut crate::Source<'_, '_, '_>) -> Result<(), Error> {
        self.started = from.flag()?;
        (self.steps, self.targets) = (from.word()? as usize, from.word()? as usize);
        (self.t, self.dt) = (from.f64s()?, from.f64s()?);
        (self.acc, self.jerk) = (from.triples()?, from.triples()?);
        Ok(())
    }
}
