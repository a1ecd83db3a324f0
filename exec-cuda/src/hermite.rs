//! Fourth-order Hermite with every particle's state on the device, as a GRAPE-6 keeps its
//! j-particles: positions, velocities, accelerations, jerks and times stay there; a step
//! predicts all particles to the step's time (a kernel), gathers the active ones as
//! targets, runs the jerk kernel (split over the sources when they are few) and corrects
//! them on the device. Per block step only the active particles' indices go up and their
//! new steps come back.

use crate::args::HermiteArgs;
use crate::device::cuda;
use crate::jerk::{JerkBuffers, Staged};
use crate::kernels::{Kernel, count};
use crate::memory::{Scratch, alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceReal, SOURCE_PAD};
use cust::memory::DeviceBuffer;
use nbody_core::rules::{self, MIN_FRACTION};
use nbody_core::{Error, Params, Particle, Velocity};

/// How the steps are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Steps {
    /// One step for all particles: the smallest of Aarseth's criterion, at most doubling
    /// (nbody-integrators' `Hermite` with its defaults).
    Shared,
    /// Individual power-of-two steps of at most `dt_max`, commensurate (nbody-integrators'
    /// `BlockHermite`).
    Block {
        /// The largest step; block times are its multiples.
        dt_max: f64,
    },
}

/// Threads per block of the per-particle kernels.
const THREADS: u32 = 256;

/// A [`DeviceHermite`] integration copied to the host, to continue it later bit for bit
/// ([`DeviceHermite::checkpoint`], [`DeviceHermite::resume`]). Vectors hold one entry per
/// particle: four lanes as the device keeps them (x, y, z, mass or 0), times in f64.
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
    /// Positions and masses.
    pub pos: Vec<[T; 4]>,
    /// Velocities.
    pub vel: Vec<[T; 4]>,
    /// Accelerations at each particle's own time.
    pub acc: Vec<[T; 4]>,
    /// Jerks at each particle's own time.
    pub jerk: Vec<[T; 4]>,
    /// Each particle's time.
    pub t: Vec<f64>,
    /// Block steps: each particle's step.
    pub dt_each: Vec<f64>,
    /// Block steps: the particles by level k (step dt_max / 2^k), in the order the
    /// integration keeps them.
    pub levels: Vec<Vec<u32>>,
}

/// A Hermite integration whose particles live on one GPU.
///
/// ```no_run
/// use nbody_cuda::{CudaExecutor, DeviceHermite, Steps};
/// let mut gpu = CudaExecutor::new()?;
/// let (p, v) = nbody_integrators::ics::plummer::<f64>(16_384, 1);
/// let mut h = DeviceHermite::new(&mut gpu, &p, &v, 0.0, 0.02, 1.0 / 256.0, Steps::Block { dt_max: 1.0 / 16.0 })?;
/// while h.time() < 0.125 {
///     h.step(&mut gpu, 0.125)?;
/// }
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub struct DeviceHermite<T: DeviceReal> {
    n: usize,
    padded: usize,
    steps_kind: Steps,
    eta: f64,
    params: Params<T>,
    time: f64,
    started: bool,
    /// Shared steps: the next step.
    dt: f64,
    /// Block steps: per particle its step and its time (host copies), and the particles
    /// by level k (step dt_max / 2^k).
    t_host: Vec<f64>,
    dt_host: Vec<f64>,
    levels: Vec<Vec<u32>>,
    active: Vec<u32>,
    want: Vec<f64>,
    block_steps: u64,
    interactions: f64,
    pos: DeviceBuffer<u8>,
    vel: DeviceBuffer<u8>,
    acc: DeviceBuffer<u8>,
    jerk: DeviceBuffer<u8>,
    tj: DeviceBuffer<u8>,
    ppos: DeviceBuffer<u8>,
    pvel: DeviceBuffer<u8>,
    idx: DeviceBuffer<u8>,
    tpos: DeviceBuffer<u8>,
    tvel: DeviceBuffer<u8>,
    field: DeviceBuffer<u8>,
    jerk_out: DeviceBuffer<u8>,
    want_dev: DeviceBuffer<u8>,
    partials: [Scratch; 3],
}

impl<T: DeviceReal> DeviceHermite<T> {
    /// Uploads the system at time `time`; `eta` is Aarseth's accuracy parameter, `eps` the
    /// softening.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        exec: &mut CudaExecutor,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        time: f64,
        eta: f64,
        eps: T,
        steps: Steps,
    ) -> Result<Self, Error> {
        nbody_core::validate::length("velocities", pos.len(), vel.len())?;
        nbody_core::validate::particles(pos, nbody_core::Array::Particles)?;
        nbody_core::validate::velocities(vel, pos.len(), nbody_core::Array::Velocities)?;
        if !(eta.is_finite() && eta > 0.0) {
            return Err(Error::InvalidParameter { name: "eta", requirement: "finite and positive" });
        }
        if let Steps::Block { dt_max } = steps
            && !(dt_max.is_finite() && dt_max > 0.0)
        {
            return Err(Error::InvalidParameter { name: "dt_max", requirement: "finite and positive" });
        }
        let params = Params::softened(eps).acceleration_only();
        nbody_core::validate::params(&params)?;
        exec.gpu.make_current()?;
        let n = pos.len();
        let padded = n.next_multiple_of(SOURCE_PAD).max(SOURCE_PAD);
        let v4 = 4 * size_of::<T>();
        let up = |data: &[u8], total: usize| -> Result<DeviceBuffer<u8>, Error> {
            let mut b = alloc(total.max(16))?;
            upload_padded(&mut b, data, total)?;
            Ok(b)
        };
        let times = vec![time; n];
        let h = Self {
            n,
            padded,
            steps_kind: steps,
            eta,
            params,
            time,
            started: false,
            dt: 0.0,
            t_host: times.clone(),
            dt_host: vec![0.0; n],
            levels: Vec::new(),
            active: Vec::new(),
            want: vec![0.0; n],
            block_steps: 0,
            interactions: 0.0,
            pos: up(bytemuck::cast_slice(pos), n * v4)?,
            vel: up(bytemuck::cast_slice(vel), n * v4)?,
            acc: up(&[], n * v4)?,
            jerk: up(&[], n * v4)?,
            tj: up(bytemuck::cast_slice(&times), n * 8)?,
            // Padding: massless particles at rest at the origin (predicted as such).
            ppos: up(&[], padded * v4)?,
            pvel: up(&[], padded * v4)?,
            idx: up(&[], n * 4)?,
            tpos: up(&[], n * v4)?,
            tvel: up(&[], n * v4)?,
            field: up(&[], n * v4)?,
            jerk_out: up(&[], n * v4)?,
            want_dev: up(&[], n * 8)?,
            partials: Default::default(),
        };
        Ok(h)
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

    fn dt_min(&self) -> f64 {
        match self.steps_kind {
            Steps::Block { dt_max } => dt_max * MIN_FRACTION,
            Steps::Shared => 0.0,
        }
    }

    /// One step, ending no later than `until` for shared steps (block steps end on
    /// multiples of `dt_max`, which the caller's output times must be). Returns the
    /// number of active particles.
    pub fn step(&mut self, exec: &mut CudaExecutor, until: f64) -> Result<usize, Error> {
        exec.gpu.make_current()?;
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
                download(&self.want_dev, bytemuck::cast_slice_mut(&mut self.want[..na]))?;
                let dt = t_next - self.time;
                let next =
                    self.want[..na].iter().copied().filter(|w| w.is_finite() && *w > 0.0).fold(f64::INFINITY, f64::min);
                self.dt = if next.is_finite() { next.min(2.0 * dt) } else { 2.0 * dt };
            }
            Steps::Block { .. } => {
                // Only the active particles' new steps come back.
                download(&self.want_dev, bytemuck::cast_slice_mut(&mut self.want[..na]))?;
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

    /// The `n` records of four lanes a state buffer holds.
    fn lanes(&self, buf: &DeviceBuffer<u8>) -> Result<Vec<[T; 4]>, Error> {
        let mut v = vec![[T::zero(); 4]; self.n];
        download(buf, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }

    /// After the first force call: the first shared step, or every particle's level,
    /// from the startup rule of `nbody_core::rules` on the accelerations and jerks
    /// (downloaded once: the rule's floor is a median over every particle).
    fn after_start(&mut self, exec: &mut CudaExecutor) -> Result<(), Error> {
        let triples = |b: &DeviceBuffer<u8>| -> Result<Vec<[f64; 3]>, Error> {
            Ok(self.lanes(b)?.into_iter().map(|[x, y, z, _]| [x.to_f64(), y.to_f64(), z.to_f64()]).collect())
        };
        let (acc, jerk) = (triples(&self.acc)?, triples(&self.jerk)?);
        match self.steps_kind {
            Steps::Shared => self.dt = rules::first_shared_step::<T, _>(exec, &acc, &jerk),
            Steps::Block { dt_max } => {
                let dt_min = self.dt_min();
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

    /// Predict every particle to `t`, compute the active ones' acceleration and jerk, and
    /// correct them (or, at the start, set their derivatives and first steps).
    fn force(&mut self, exec: &mut CudaExecutor, t: f64, start: bool) -> Result<(), Error> {
        let (n, na) = (self.n, self.active.len());
        upload_padded(&mut self.idx, bytemuck::cast_slice(&self.active), 0)?;
        let (ppos, pvel) = (ptr(&self.ppos), ptr(&self.pvel));
        // SAFETY: every buffer holds n records (the predicted ones `padded`).
        unsafe { predict::<T>(exec, n, t, [&self.pos, &self.vel, &self.acc, &self.jerk], &self.tj, [ppos, pvel])? };
        let (tpos, tvel, field, jout) = (ptr(&self.tpos), ptr(&self.tvel), ptr(&self.field), ptr(&self.jerk_out));
        let (block, dt_max) = match self.steps_kind {
            Steps::Block { dt_max } => (1, dt_max),
            Steps::Shared => (0, 0.0),
        };
        let args = HermiteArgs {
            pos: ptr(&self.pos),
            vel: ptr(&self.vel),
            acc: ptr(&self.acc),
            jerk: ptr(&self.jerk),
            tj: ptr(&self.tj),
            ppos,
            pvel,
            idx: ptr(&self.idx),
            tpos,
            tvel,
            field,
            jerk_out: jout,
            want: ptr(&self.want_dev),
            t,
            eta: self.eta,
            dt_max,
            dt_min: self.dt_min(),
            n: count(n)?,
            na: count(na)?,
            start: i32::from(start),
            block,
        };
        let blocks = (na as u32).div_ceil(THREADS);
        // SAFETY: idx holds na indices below n; the target buffers hold n records.
        unsafe {
            exec.launch(
                Kernel::HermiteGather { tag: T::FAMILY },
                blocks,
                THREADS,
                args,
                "launching the Hermite gather",
            )?
        };
        let bufs =
            JerkBuffers { targets: tpos, target_vel: tvel, sources: ppos, source_vel: pvel, out: field, jerk: jout };
        let staged = Staged::resident(
            bufs,
            na,
            n,
            self.padded,
            exec.gpu.info().sm_count,
            exec.jerk_per_thread,
            &mut self.partials,
            (size_of::<T>(), exec.two_per_thread::<T>(false)),
        )?;
        exec.launch_jerk(&staged, &self.params)?;
        let correct = Kernel::HermiteCorrect { tag: T::FAMILY };
        // SAFETY: as above; want holds n doubles.
        unsafe { exec.launch(correct, blocks, THREADS, args, "launching the Hermite corrector")? };
        exec.gpu.stream().synchronize().map_err(cuda("running the Hermite step"))
    }

    /// Everything the integration needs to continue bit for bit, copied to the host: the
    /// particles' positions, velocities, accelerations, jerks and times from the device,
    /// and the step bookkeeping (the next shared step, or each particle's step and the
    /// block levels in their order). [`DeviceHermite::resume`] takes it back.
    ///
    /// ```no_run
    /// use nbody_cuda::{CudaExecutor, DeviceHermite, Steps};
    /// let mut gpu = CudaExecutor::new()?;
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(1024, 1);
    /// let steps = Steps::Block { dt_max: 1.0 / 16.0 };
    /// let mut h = DeviceHermite::new(&mut gpu, &p, &v, 0.0, 0.02, 1.0 / 64.0, steps)?;
    /// h.step(&mut gpu, 0.125)?;
    /// let saved = h.checkpoint(&mut gpu)?;
    /// let mut again = DeviceHermite::resume(&mut gpu, &saved, 0.02, 1.0 / 64.0, steps)?;
    /// h.step(&mut gpu, 0.125)?;
    /// again.step(&mut gpu, 0.125)?;
    /// assert_eq!(h.checkpoint(&mut gpu)?, again.checkpoint(&mut gpu)?);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn checkpoint(&self, exec: &mut CudaExecutor) -> Result<HermiteCheckpoint<T>, Error> {
        exec.gpu.make_current()?;
        exec.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        let n = self.n;
        let lanes = |buf: &DeviceBuffer<u8>| self.lanes(buf);
        let mut tj = vec![0.0; n];
        download(&self.tj, bytemuck::cast_slice_mut(&mut tj))?;
        Ok(HermiteCheckpoint {
            time: self.time,
            started: self.started,
            dt: self.dt,
            steps: self.block_steps,
            interactions: self.interactions,
            pos: lanes(&self.pos)?,
            vel: lanes(&self.vel)?,
            acc: lanes(&self.acc)?,
            jerk: lanes(&self.jerk)?,
            t: tj,
            dt_each: self.dt_host.clone(),
            levels: self.levels.clone(),
        })
    }

    /// Continues an integration from [`DeviceHermite::checkpoint`]'s copy, on `exec`
    /// (any GPU), with the same `eta`, `eps` and `steps` as the run that wrote it.
    pub fn resume(
        exec: &mut CudaExecutor,
        saved: &HermiteCheckpoint<T>,
        eta: f64,
        eps: T,
        steps: Steps,
    ) -> Result<Self, Error> {
        let n = saved.pos.len();
        let lengths = [saved.vel.len(), saved.acc.len(), saved.jerk.len(), saved.t.len(), saved.dt_each.len()];
        let filed: usize = saved.levels.iter().map(Vec::len).sum();
        let bad_level = saved.levels.iter().flatten().any(|&i| i as usize >= n);
        if lengths.iter().any(|&l| l != n) || bad_level || (saved.started && filed != n && steps != Steps::Shared) {
            return Err(Error::InvalidParameter {
                name: "Hermite checkpoint",
                requirement: "one position, velocity, acceleration, jerk, time and step per particle, each particle on one level",
            });
        }
        let pos: Vec<Particle<T>> = saved.pos.iter().map(|&[x, y, z, m]| Particle::new(x, y, z, m)).collect();
        let vel: Vec<Velocity<T>> = saved.vel.iter().map(|&[x, y, z, _]| Velocity::new(x, y, z)).collect();
        let mut h = Self::new(exec, &pos, &vel, saved.time, eta, eps, steps)?;
        upload_padded(&mut h.acc, bytemuck::cast_slice(&saved.acc), 0)?;
        upload_padded(&mut h.jerk, bytemuck::cast_slice(&saved.jerk), 0)?;
        upload_padded(&mut h.tj, bytemuck::cast_slice(&saved.t), 0)?;
        // The velocities as saved, fourth lane included (the kernels keep it as they found it).
        upload_padded(&mut h.vel, bytemuck::cast_slice(&saved.vel), 0)?;
        h.started = saved.started;
        h.dt = saved.dt;
        h.block_steps = saved.steps;
        h.interactions = saved.interactions;
        h.t_host = saved.t.clone();
        h.dt_host = saved.dt_each.clone();
        h.levels = saved.levels.clone();
        Ok(h)
    }

    /// Copies positions and velocities to the host (each at its particle's own time;
    /// all at [`DeviceHermite::time`] after a shared step or at a full block time).
    pub fn download(
        &self,
        exec: &mut CudaExecutor,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        nbody_core::validate::length("positions", self.n, pos.len())?;
        nbody_core::validate::length("velocities", self.n, vel.len())?;
        exec.gpu.make_current()?;
        exec.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        download(&self.pos, bytemuck::cast_slice_mut(pos))?;
        download(&self.vel, bytemuck::cast_slice_mut(vel))
    }

    /// Whether every particle is at [`DeviceHermite::time`].
    pub fn synchronized(&self) -> bool {
        match self.steps_kind {
            Steps::Shared => true,
            Steps::Block { .. } => !self.started || self.t_host.iter().all(|&t| t == self.time),
        }
    }
}

impl<T: DeviceReal> std::fmt::Debug for DeviceHermite<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceHermite")
            .field("n", &self.n)
            .field("steps", &self.steps_kind)
            .field("time", &self.time)
            .finish()
    }
}

/// Queues the predictor kernel: particles `0..n` (positions, velocities, accelerations,
/// jerks as [x, y, z, w] of `T`, times in f64) to time `t`, into `out`
/// (predicted positions, velocities).
///
/// # Safety
/// Every buffer holds at least `n` records.
pub(crate) unsafe fn predict<T: DeviceReal>(
    exec: &CudaExecutor,
    n: usize,
    t: f64,
    [pos, vel, acc, jerk]: [&DeviceBuffer<u8>; 4],
    tj: &DeviceBuffer<u8>,
    [ppos, pvel]: [cust::memory::DevicePointer<u8>; 2],
) -> Result<(), Error> {
    let args = HermiteArgs {
        pos: ptr(pos),
        vel: ptr(vel),
        acc: ptr(acc),
        jerk: ptr(jerk),
        tj: ptr(tj),
        ppos,
        pvel,
        t,
        n: count(n)?,
        ..HermiteArgs::empty()
    };
    let blocks = (n as u32).div_ceil(THREADS);
    // SAFETY: the caller's contract.
    unsafe { exec.launch(Kernel::HermitePredict { tag: T::FAMILY }, blocks, THREADS, args, "launching the predictor") }
}

/// One particle's inputs to [`hermite_kernels`]: its state at its time `t0` and the
/// acceleration and jerk at the predicted end of its step.
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelCase {
    /// Position, velocity, acceleration and jerk at `t0`.
    pub x: [f64; 3],
    /// Velocity at `t0`.
    pub v: [f64; 3],
    /// Acceleration at `t0`.
    pub a0: [f64; 3],
    /// Jerk at `t0`.
    pub j0: [f64; 3],
    /// Acceleration at the end of the step.
    pub a1: [f64; 3],
    /// Jerk at the end of the step.
    pub j1: [f64; 3],
    /// The particle's time.
    pub t0: f64,
}

/// What the device's Hermite kernels made of a [`KernelCase`].
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelOutcome {
    /// Predicted position and velocity at `t`.
    pub px: [f64; 3],
    /// Predicted velocity.
    pub pv: [f64; 3],
    /// Corrected position and velocity at `t`.
    pub x1: [f64; 3],
    /// Corrected velocity.
    pub v1: [f64; 3],
    /// The shared-step corrector's wish (Aarseth, or 2 h).
    pub want: f64,
    /// The block-step corrector's next step.
    pub block: f64,
}

/// Test harness (feature `testing`): runs the f64 predictor and corrector kernels (shared
/// and block steps) on `cases` stepped to `t`, so the tests can compare them with
/// `nbody_core::rules` bit for bit.
#[cfg(feature = "testing")]
pub fn hermite_kernels(
    exec: &mut CudaExecutor,
    cases: &[KernelCase],
    t: f64,
    eta: f64,
    dt_max: f64,
) -> Result<Vec<KernelOutcome>, Error> {
    exec.gpu.make_current()?;
    let n = cases.len();
    let lanes = |f: &dyn Fn(&KernelCase) -> [f64; 3], w: f64| -> Vec<[f64; 4]> {
        cases.iter().map(f).map(|[x, y, z]| [x, y, z, w]).collect()
    };
    let up = |data: &[u8]| -> Result<DeviceBuffer<u8>, Error> {
        let mut b = alloc(data.len().max(16))?;
        upload_padded(&mut b, data, 0)?;
        Ok(b)
    };
    let state = || -> Result<[DeviceBuffer<u8>; 5], Error> {
        Ok([
            up(bytemuck::cast_slice(&lanes(&|c| c.x, 1.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.v, 0.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.a0, 0.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.j0, 0.0)))?,
            up(bytemuck::cast_slice(&cases.iter().map(|c| c.t0).collect::<Vec<f64>>()))?,
        ])
    };
    let [pos, vel, acc, jerk, tj] = state()?;
    let (ppos, pvel) = (up(&vec![0u8; n * 32])?, up(&vec![0u8; n * 32])?);
    // SAFETY: every buffer holds n records.
    unsafe { predict::<f64>(exec, n, t, [&pos, &vel, &acc, &jerk], &tj, [ptr(&ppos), ptr(&pvel)])? };
    let idx = up(bytemuck::cast_slice(&(0..n as u32).collect::<Vec<u32>>()))?;
    let field = up(bytemuck::cast_slice(&lanes(&|c| c.a1, 0.0)))?;
    let jerk_out = up(bytemuck::cast_slice(&lanes(&|c| c.j1, 0.0)))?;
    let want = up(&vec![0u8; n * 8])?;
    let mut out = vec![KernelOutcome::default(); n];
    let down4 = |b: &DeviceBuffer<u8>| -> Result<Vec<[f64; 4]>, Error> {
        let mut v = vec![[0.0; 4]; n];
        download(b, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    };
    exec.gpu.stream().synchronize().map_err(cuda("predicting"))?;
    for (o, (p, q)) in out.iter_mut().zip(down4(&ppos)?.into_iter().zip(down4(&pvel)?)) {
        (o.px, o.pv) = ([p[0], p[1], p[2]], [q[0], q[1], q[2]]);
    }
    for block in [0, 1] {
        let [pos, vel, acc, jerk, tj] = state()?;
        let args = HermiteArgs {
            pos: ptr(&pos),
            vel: ptr(&vel),
            acc: ptr(&acc),
            jerk: ptr(&jerk),
            tj: ptr(&tj),
            idx: ptr(&idx),
            field: ptr(&field),
            jerk_out: ptr(&jerk_out),
            want: ptr(&want),
            t,
            eta,
            dt_max,
            dt_min: dt_max * MIN_FRACTION,
            na: count(n)?,
            block,
            ..HermiteArgs::empty()
        };
        let kernel = Kernel::HermiteCorrect { tag: crate::Family::F64 };
        // SAFETY: idx holds n indices below n; every buffer holds n records.
        unsafe { exec.launch(kernel, (n as u32).div_ceil(THREADS), THREADS, args, "the corrector")? };
        exec.gpu.stream().synchronize().map_err(cuda("correcting"))?;
        let mut w = vec![0.0f64; n];
        download(&want, bytemuck::cast_slice_mut(&mut w))?;
        let (x1, v1) = (down4(&pos)?, down4(&vel)?);
        for (k, o) in out.iter_mut().enumerate() {
            if block == 0 {
                (o.x1, o.v1, o.want) = ([x1[k][0], x1[k][1], x1[k][2]], [v1[k][0], v1[k][1], v1[k][2]], w[k]);
            } else {
                o.block = w[k];
            }
        }
    }
    Ok(out)
}
