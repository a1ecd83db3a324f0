//! Fourth-order Hermite over a system the executor holds ([`HermiteResident`], as a GPU
//! holds a GRAPE-6's j-particles): the executor predicts, computes and corrects in its own
//! memory; this side decides which particles are due and when, by the rules the host
//! integrators take (`nbody_core::rules`), so per block step only the due particles'
//! indices go in and their next steps come out.

use nbody_core::resident::{HermiteCall, HermiteRecords, HermiteResident, HermiteRule};
use nbody_core::rules::{self, MIN_FRACTION};
use nbody_core::{Error, Particle, Real, Velocity};

/// How the steps are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Steps {
    /// One step for all particles: the smallest of Aarseth's criterion, at most doubling
    /// ([`crate::Hermite`] with its defaults).
    Shared,
    /// Individual power-of-two steps of at most `dt_max`, commensurate
    /// ([`crate::BlockHermite`]).
    Block {
        /// The largest step; block times are its multiples.
        dt_max: f64,
    },
}

/// A [`ResidentHermite`] integration copied out, to continue it later bit for bit
/// ([`ResidentHermite::checkpoint`], [`ResidentHermite::resume`]): the executor's records
/// and the step bookkeeping.
#[derive(Clone, Debug, PartialEq)]
pub struct HermiteCheckpoint<T> {
    /// The integration's time.
    pub time: f64,
    /// Whether the first force call (which sets the derivatives and first steps) was made.
    pub started: bool,
    /// Shared steps: the next step.
    pub dt: f64,
    /// Steps taken.
    pub steps: u64,
    /// Pair interactions computed so far.
    pub interactions: f64,
    /// The particles as the executor keeps them.
    pub records: HermiteRecords<T>,
    /// Block steps: each particle's step.
    pub dt_each: Vec<f64>,
    /// Block steps: the particles by level k (step dt_max / 2^k), in the order the
    /// integration keeps them.
    pub levels: Vec<Vec<u32>>,
}

/// A Hermite integration whose particles live in the executor `E`.
///
/// ```
/// use nbody_core::{resident::OnHost, Reference};
/// use nbody_integrators::{ics, ResidentHermite, Steps};
/// let mut exec = OnHost::new(Reference);
/// let (p, v) = ics::plummer::<f64>(64, 1);
/// let mut h = ResidentHermite::new(&mut exec, &p, &v, 0.0, 0.02, 1.0 / 64.0, Steps::Block { dt_max: 1.0 / 16.0 })?;
/// while h.time() < 0.125 {
///     h.step(&mut exec, 0.125)?;
/// }
/// assert!(h.synchronized() && h.time() == 0.125);
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub struct ResidentHermite<T: Real, E: HermiteResident<T>> {
    sys: E::Hermite,
    n: usize,
    steps_kind: Steps,
    rule: HermiteRule,
    time: f64,
    started: bool,
    /// Shared steps: the next step.
    dt: f64,
    /// Block steps: per particle its time and step (host copies), and the particles by
    /// level k (step dt_max / 2^k).
    t_host: Vec<f64>,
    dt_host: Vec<f64>,
    levels: Vec<Vec<u32>>,
    active: Vec<u32>,
    want: Vec<f64>,
    block_steps: u64,
    interactions: f64,
}

impl<T: Real, E: HermiteResident<T>> ResidentHermite<T, E> {
    /// Puts the system at time `time` into `exec`; `eta` is Aarseth's accuracy
    /// parameter, `eps` the (Plummer) softening.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        exec: &mut E,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        time: f64,
        eta: f64,
        eps: T,
        steps: Steps,
    ) -> Result<Self, Error> {
        // Checked here for the clearer message; the executor checks the rest at upload.
        nbody_core::validate::length("velocities", pos.len(), vel.len())?;
        Self::from_records(exec, &HermiteRecords::at(pos, vel, time), time, eta, eps, steps)
    }

    fn from_records(
        exec: &mut E,
        records: &HermiteRecords<T>,
        time: f64,
        eta: f64,
        eps: T,
        steps: Steps,
    ) -> Result<Self, Error> {
        crate::hermite::check_eta(eta)?;
        let dt_max = match steps {
            Steps::Block { dt_max } if !(dt_max.is_finite() && dt_max > 0.0) => {
                return Err(Error::InvalidParameter { name: "dt_max", requirement: "finite and positive" });
            }
            Steps::Block { dt_max } => Some(dt_max),
            Steps::Shared => None,
        };
        let n = records.len();
        Ok(Self {
            sys: exec.upload_hermite(records, eps)?,
            n,
            steps_kind: steps,
            rule: HermiteRule { eta, dt_max },
            time,
            started: false,
            dt: 0.0,
            t_host: vec![time; n],
            dt_host: vec![0.0; n],
            levels: Vec::new(),
            active: Vec::new(),
            want: vec![0.0; n],
            block_steps: 0,
            interactions: 0.0,
        })
    }

    /// The integration's time (every particle synchronized there after a shared step, or
    /// when the block time is a multiple of every particle's step).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Steps taken (block steps, or shared steps).
    pub fn steps(&self) -> u64 {
        self.block_steps
    }

    /// Pair interactions computed so far (active particles x all, per step).
    pub fn interactions(&self) -> f64 {
        self.interactions
    }

    /// One step, ending no later than `until` for shared steps (block steps end on
    /// multiples of `dt_max`, which the caller's output times must be). Returns the
    /// number of active particles.
    pub fn step(&mut self, exec: &mut E, until: f64) -> Result<usize, Error> {
        if self.n == 0 || (self.steps_kind == Steps::Shared && self.started && until <= self.time) {
            self.time = until.max(self.time);
            return Ok(0);
        }
        if !self.started {
            self.active = (0..self.n as u32).collect();
            self.force(exec, self.time, true)?;
            self.started = true;
            self.after_start(exec)?;
        }
        let t_next = match self.steps_kind {
            Steps::Shared => {
                let dt = self.dt.min(until - self.time);
                self.active = (0..self.n as u32).collect();
                self.time + dt
            }
            Steps::Block { .. } => self.next_block(),
        };
        self.force(exec, t_next, false)?;
        let na = self.active.len();
        match self.steps_kind {
            Steps::Shared => {
                self.dt = rules::next_shared_step(self.want[..na].iter().copied(), t_next - self.time);
            }
            Steps::Block { .. } => {
                let active = std::mem::take(&mut self.active);
                for (k, &i) in active.iter().enumerate() {
                    self.t_host[i as usize] = t_next;
                    self.dt_host[i as usize] = self.want[k];
                }
                self.regroup(&active);
                self.active = active;
            }
        }
        self.time = t_next;
        self.block_steps += 1;
        self.interactions += (na * self.n) as f64;
        Ok(na)
    }

    /// The executor's force call on the active particles at `t`.
    fn force(&mut self, exec: &mut E, t: f64, start: bool) -> Result<(), Error> {
        let call = HermiteCall { active: &self.active, t, start, rule: self.rule, want: &mut self.want };
        exec.hermite_force(&mut self.sys, call)
    }

    /// After the first force call: the first shared step, or every particle's level,
    /// from the startup rule of `nbody_core::rules` on the accelerations and jerks
    /// (copied out once: the rule's floor is a median over every particle).
    fn after_start(&mut self, exec: &mut E) -> Result<(), Error> {
        let records = exec.download_hermite(&self.sys)?;
        let wide = |v: &[[T; 4]]| -> Vec<[f64; 3]> {
            v.iter().map(|r| [r[0].to_f64(), r[1].to_f64(), r[2].to_f64()]).collect()
        };
        let (acc, jerk) = (wide(&records.acc), wide(&records.jerk));
        match self.steps_kind {
            Steps::Shared => self.dt = rules::first_shared_step::<T, _>(exec, &acc, &jerk),
            Steps::Block { dt_max } => {
                let dt_min = dt_max * MIN_FRACTION;
                self.dt_host = rules::first_steps::<T, _>(exec, &acc, &jerk)
                    .into_iter()
                    .map(|d| rules::quantize(if d.is_finite() && d > 0.0 { d } else { dt_max }, dt_max, dt_min))
                    .collect();
                let all: Vec<u32> = (0..self.n as u32).collect();
                self.regroup(&all);
            }
        }
        Ok(())
    }

    /// Block steps: the earliest block time, and the particles due then taken out of
    /// their levels. Every particle of a level shares its next time (its time is a
    /// multiple of its step), so a level is due whole: the work is O(active).
    fn next_block(&mut self) -> f64 {
        let next = |l: &Vec<u32>| l.first().map(|&i| self.t_host[i as usize] + self.dt_host[i as usize]);
        let t_next = self.levels.iter().filter_map(next).fold(f64::INFINITY, f64::min);
        self.active.clear();
        for k in 0..self.levels.len() {
            if next(&self.levels[k]) == Some(t_next) {
                self.active.append(&mut self.levels[k]);
            }
        }
        t_next
    }

    /// Files the particles `moved` (just corrected, or all at the start) under their
    /// new steps' levels.
    fn regroup(&mut self, moved: &[u32]) {
        let Steps::Block { dt_max } = self.steps_kind else { return };
        for &i in moved {
            let k = (dt_max / self.dt_host[i as usize]).log2().round().max(0.0) as usize;
            if self.levels.len() <= k {
                self.levels.resize(k + 1, Vec::new());
            }
            self.levels[k].push(i);
        }
    }

    /// Everything the integration needs to continue bit for bit, copied out: the
    /// executor's records and the step bookkeeping (the next shared step, or each
    /// particle's step and the block levels in their order). [`ResidentHermite::resume`]
    /// takes it back.
    ///
    /// ```
    /// use nbody_core::{resident::OnHost, Reference};
    /// use nbody_integrators::{ics, ResidentHermite, Steps};
    /// let mut exec = OnHost::new(Reference);
    /// let (p, v) = ics::plummer::<f64>(64, 1);
    /// let steps = Steps::Block { dt_max: 1.0 / 16.0 };
    /// let mut h = ResidentHermite::new(&mut exec, &p, &v, 0.0, 0.02, 1.0 / 64.0, steps)?;
    /// h.step(&mut exec, 0.125)?;
    /// let saved = h.checkpoint(&mut exec)?;
    /// let mut again = ResidentHermite::resume(&mut exec, &saved, 0.02, 1.0 / 64.0, steps)?;
    /// h.step(&mut exec, 0.125)?;
    /// again.step(&mut exec, 0.125)?;
    /// assert_eq!(h.checkpoint(&mut exec)?, again.checkpoint(&mut exec)?);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn checkpoint(&self, exec: &mut E) -> Result<HermiteCheckpoint<T>, Error> {
        Ok(HermiteCheckpoint {
            time: self.time,
            started: self.started,
            dt: self.dt,
            steps: self.block_steps,
            interactions: self.interactions,
            records: exec.download_hermite(&self.sys)?,
            dt_each: self.dt_host.clone(),
            levels: self.levels.clone(),
        })
    }

    /// Continues an integration from [`ResidentHermite::checkpoint`]'s copy, on `exec`
    /// (any executor of the kind), with the same `eta`, `eps` and `steps` as the run
    /// that wrote it.
    pub fn resume(exec: &mut E, saved: &HermiteCheckpoint<T>, eta: f64, eps: T, steps: Steps) -> Result<Self, Error> {
        let n = saved.records.len();
        let filed: usize = saved.levels.iter().map(Vec::len).sum();
        let bad_level = saved.levels.iter().flatten().any(|&i| i as usize >= n);
        if saved.records.check().is_err()
            || saved.dt_each.len() != n
            || bad_level
            || (saved.started && filed != n && steps != Steps::Shared)
        {
            return Err(Error::InvalidParameter {
                name: "Hermite checkpoint",
                requirement: "one position, velocity, acceleration, jerk, time and step per particle, each particle on one level",
            });
        }
        let mut h = Self::from_records(exec, &saved.records, saved.time, eta, eps, steps)?;
        h.started = saved.started;
        h.dt = saved.dt;
        h.block_steps = saved.steps;
        h.interactions = saved.interactions;
        h.t_host = saved.records.t.clone();
        h.dt_host = saved.dt_each.clone();
        h.levels = saved.levels.clone();
        Ok(h)
    }

    /// Copies positions and velocities out (each at its particle's own time; all at
    /// [`ResidentHermite::time`] after a shared step or at a full block time).
    pub fn download(&self, exec: &mut E, pos: &mut [Particle<T>], vel: &mut [Velocity<T>]) -> Result<(), Error> {
        exec.download_hermite(&self.sys)?.particles(pos, vel)
    }

    /// Whether every particle is at [`ResidentHermite::time`].
    pub fn synchronized(&self) -> bool {
        match self.steps_kind {
            Steps::Shared => true,
            Steps::Block { .. } => !self.started || self.t_host.iter().all(|&t| t == self.time),
        }
    }
}

impl<T: Real, E: HermiteResident<T>> std::fmt::Debug for ResidentHermite<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentHermite")
            .field("n", &self.n)
            .field("steps", &self.steps_kind)
            .field("time", &self.time)
            .finish()
    }
}
