//! What `nbody run` drives: a system with an integrator and an executor behind one
//! object-safe interface, so the run loop is written once for every combination.

use nbody_core::forward::{Call, Forward};
use nbody_core::projection::{Project, Projecting, Projection};
use nbody_core::{Error, Particle, Real};
use nbody_integrators::{Arrays, Checkpoint, Diagnostics, Integrator, State, Words};

pub(super) use super::files::Row;

/// One share of a split checkpoint: the words every share saves alike, and this
/// share's part of each per-particle array.
pub(super) type Share = (Vec<u64>, Vec<Vec<u64>>);

/// A running simulation.
pub(super) trait Simulation {
    /// Simulated time.
    fn time(&self) -> f64;
    /// Advances towards `until` by one step (one adaptive Runge-Kutta stretch); true
    /// once `until` is reached.
    fn step(&mut self, until: f64) -> Result<bool, Error>;
    /// Steps taken.
    fn steps(&self) -> u64;
    /// Pair interactions computed so far (every force call, diagnostics included).
    fn interactions(&self) -> f64;
    /// Conserved quantities now.
    fn diagnostics(&mut self) -> Result<Diagnostics, Error>;
    /// Positions, masses and velocities now, in f64.
    fn snapshot(&mut self) -> Result<Vec<Row>, Error>;
    /// Density map of the particles now, computed by the executor.
    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error>;
    /// What a checkpoint needs to continue this simulation bit for bit; `None` where
    /// it cannot be checkpointed (across MPI ranks).
    fn save(&mut self) -> Result<Option<Vec<u64>>, Error>;
    /// Continues from what [`Simulation::save`] gave.
    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error>;

    /// For one share of a system split over processes: the words every share saves
    /// alike and the per-particle arrays (see [`Checkpoint::save_split`]); `None` where
    /// the simulation cannot be split.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        Ok(None)
    }

    /// Continues one share from [`Simulation::save_split`]'s words and this share's
    /// part of each array.
    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        let _ = (shared, arrays);
        Err(Error::Unsupported {
            operation: "resuming one share of a split run",
            reason: "this simulation is not split",
        })
    }
}

/// An executor that counts the interactions it is asked for, so rates are exact for
/// every integrator (block steps, Runge-Kutta stages, diagnostics).
pub(super) struct Counting<'e, T: Real> {
    inner: Box<dyn Projecting<T> + 'e>,
    interactions: f64,
    /// Under MPI, every rank's sources: each call pulls this rank's targets towards all
    /// of them, though it passes only its own.
    all_sources: Option<usize>,
}

/// Every door and hook reaches the inner executor's own (MPI's collective doors, a
/// GPU's neighbour search), counted on the way.
impl<'e, T: Real> Forward for Counting<'e, T> {
    type Inner = dyn Projecting<T> + 'e;

    fn inner(&self) -> &Self::Inner {
        self.inner.as_ref()
    }

    fn inner_mut(&mut self) -> &mut Self::Inner {
        self.inner.as_mut()
    }

    fn before(&mut self, call: &Call<'_>) {
        self.interactions += match (*call, self.all_sources) {
            (Call::Batch { .. } | Call::Cells { .. } | Call::BatchCells { .. }, _) | (_, None) => {
                call.interactions() as f64
            }
            (
                Call::Accelerations { targets, .. } | Call::Jerk { targets, .. } | Call::Snap { targets, .. },
                Some(all),
            ) => targets as f64 * all as f64,
        };
    }
}

impl<T: Real> Project<T> for Counting<'_, T> {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.inner.project(particles, projection, grid)
    }
}

/// A system on the host, any integrator, any executor.
pub(super) struct Host<'e, T: Real> {
    state: State<T>,
    integrator: Box<dyn Integrator<T>>,
    exec: Counting<'e, T>,
    steps: u64,
}

impl<'e, T: Real> Host<'e, T> {
    /// A simulation of `state` advanced by `integrator` with forces from `exec`.
    pub(super) fn new(state: State<T>, integrator: Box<dyn Integrator<T>>, exec: Box<dyn Projecting<T> + 'e>) -> Self {
        Self { state, integrator, exec: Counting { inner: exec, interactions: 0.0, all_sources: None }, steps: 0 }
    }

    /// For a distributed executor: each call's sources are this rank's share of `n`.
    #[cfg(feature = "mpi")]
    pub(super) fn with_all_sources(mut self, n: usize) -> Self {
        self.exec.all_sources = Some(n);
        self
    }
}

impl<T: Real> Simulation for Host<'_, T> {
    fn time(&self) -> f64 {
        self.state.time
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        let (s, e) = (&mut self.state, &mut self.exec);
        if !self.integrator.reached(s, until) {
            self.steps += self.integrator.step_towards(s, e, until)?;
        }
        Ok(self.integrator.reached(s, until))
    }

    fn steps(&self) -> u64 {
        self.steps
    }

    fn interactions(&self) -> f64 {
        self.exec.interactions
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        self.integrator.diagnostics(&self.state, &mut self.exec)
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        Ok(rows(&self.state.pos, &self.state.vel))
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.exec.project(&self.state.pos, projection, grid)
    }

    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        let mut w = vec![self.steps, self.exec.interactions.to_bits()];
        self.state.save(&mut w);
        self.integrator.save(&mut w);
        Ok(Some(w))
    }

    /// Also takes a checkpoint gathered from MPI ranks (the whole system, in one process).
    fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        self.steps = w.word()?;
        if self.steps == SPLIT {
            let (own, all) = take_share(w, 1, 0, None)?;
            let parts: Vec<&[u64]> = all.iter().map(Vec::as_slice).collect();
            return self.restore_split(&mut Words::new(&own), &mut Arrays::new(&parts));
        }
        self.exec.interactions = w.f64()?;
        self.state.restore(w)?;
        self.integrator.restore(w)
    }

    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        let (mut shared, mut arrays) = (vec![self.steps, self.exec.interactions.to_bits()], Vec::new());
        self.state.save_split(&mut shared, &mut arrays);
        self.integrator.save_split(&mut shared, &mut arrays);
        Ok(Some((shared, arrays)))
    }

    fn restore_split(&mut self, w: &mut Words<'_>, a: &mut Arrays<'_>) -> Result<(), Error> {
        self.steps = w.word()?;
        self.exec.interactions = w.f64()?;
        self.state.restore_split(w, a)?;
        self.integrator.restore_split(w, a)
    }
}

/// Snapshot rows of positions and velocities.
pub(super) fn rows<T: Real>(pos: &[Particle<T>], vel: &[nbody_core::Velocity<T>]) -> Vec<Row> {
    pos.iter()
        .zip(vel)
        .map(|(p, v)| {
            let (x, u) = (p.position().map(Real::to_f64), v.components().map(Real::to_f64));
            [x[0], x[1], x[2], p.m.to_f64(), u[0], u[1], u[2]]
        })
        .collect()
}

#[cfg(feature = "cuda")]
pub(super) use device::{DeviceHermiteSim, DeviceLeapfrog, DeviceTreeLeapfrog};

#[cfg(feature = "cuda")]
mod device {
    use super::{Row, Simulation, rows};
    use nbody_core::projection::Projection;
    use nbody_core::resident::Resident;
    use nbody_core::{Error, Field, Params, Particle, Velocity};
    use nbody_cuda::{
        CudaExecutor, DeviceHermite, DeviceReal, DeviceState, HermiteCheckpoint, MultiDevice, MultiState, Steps,
        TreeSettings, TreeSystem,
    };
    use nbody_integrators::{Checkpoint, Diagnostics, State, Words, diagnostics};

    /// Resident executors ([`Resident`]: one GPU, several) that also draw density maps of
    /// the system they hold.
    pub(crate) trait ResidentMaps<T: DeviceReal>: Resident<T> {
        /// Density map on the device(s).
        fn project(&mut self, s: &Self::State, projection: &Projection, grid: &mut [f64]) -> Result<(), Error>;

        /// How a state stores its particles, as words for a checkpoint, so a resumed
        /// run makes the same state again and sums in the same order: a sorted mixed
        /// state's order and drifts since its last sort; several devices' shares.
        fn arrangement(&self, s: &Self::State) -> Vec<u64>;

        /// Uploads a state stored as [`ResidentMaps::arrangement`] said.
        fn upload_arranged(
            &mut self,
            pos: &[Particle<T>],
            vel: &[Velocity<T>],
            arrangement: &mut Words<'_>,
        ) -> Result<Self::State, Error>;
    }

    impl<T: DeviceReal> ResidentMaps<T> for CudaExecutor {
        fn project(&mut self, s: &DeviceState<T>, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            self.project_resident(s.positions(), projection, grid)
        }

        /// Sorted: drifts since the last sort, the order's length and the order;
        /// in the caller's order: nothing.
        fn arrangement(&self, s: &DeviceState<T>) -> Vec<u64> {
            let Some(order) = s.order() else { return Vec::new() };
            let mut w = vec![s.drifts_since_sort() as u64, order.len() as u64];
            w.extend(order.iter().map(|&i| u64::from(i)));
            w
        }

        fn upload_arranged(
            &mut self,
            pos: &[Particle<T>],
            vel: &[Velocity<T>],
            w: &mut Words<'_>,
        ) -> Result<DeviceState<T>, Error> {
            if w.is_done() {
                return self.upload_state(pos, vel);
            }
            let drifts = w.word()? as usize;
            let len = w.len(1)?;
            let order = (0..len)
                .map(|_| Ok(u32::try_from(w.word()?).unwrap_or(u32::MAX)))
                .collect::<Result<Vec<_>, Error>>()?;
            self.upload_state_arranged(pos, vel, &order, drifts)
        }
    }

    impl<T: DeviceReal> ResidentMaps<T> for MultiDevice {
        fn project(&mut self, s: &MultiState<T>, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            self.project_resident(s, projection, grid)
        }

        /// The devices' shares (their weights, which a calibration at opening sets and
        /// could set otherwise in another process).
        fn arrangement(&self, _: &MultiState<T>) -> Vec<u64> {
            self.weights().iter().map(|w| w.to_bits()).collect()
        }

        fn upload_arranged(
            &mut self,
            pos: &[Particle<T>],
            vel: &[Velocity<T>],
            w: &mut Words<'_>,
        ) -> Result<MultiState<T>, Error> {
            let mut weights = Vec::new();
            while !w.is_done() {
                weights.push(w.f64()?);
            }
            self.set_weights(&weights)?;
            self.upload_state(pos, vel)
        }
    }

    /// `f` of host copies of a device system at `time`, lent to a [`State`] and back
    /// without copying (diagnostics, checkpoints).
    fn lent<T: DeviceReal, R>(
        pos: &mut Vec<Particle<T>>,
        vel: &mut Vec<Velocity<T>>,
        time: f64,
        f: impl FnOnce(&State<T>) -> R,
    ) -> R {
        let s = State { pos: std::mem::take(pos), vel: std::mem::take(vel), time };
        let r = f(&s);
        (*pos, *vel) = (s.pos, s.vel);
        r
    }

    /// A leapfrog whose particles stay on the GPU(s); only diagnostics, snapshots and
    /// pictures copy them back.
    pub(crate) struct DeviceLeapfrog<T: DeviceReal, E: ResidentMaps<T>> {
        exec: E,
        state: E::State,
        params: Params<T>,
        dt: f64,
        steps: u64,
        interactions: f64,
        pos: Vec<Particle<T>>,
        vel: Vec<Velocity<T>>,
    }

    impl<T: DeviceReal, E: ResidentMaps<T>> DeviceLeapfrog<T, E> {
        /// Uploads the system.
        pub(crate) fn new(mut exec: E, s: &State<T>, dt: f64, eps: T) -> Result<Self, Error> {
            let params = Params::softened(eps).with_overlap_identical();
            nbody_core::validate::params(&params)?;
            let state = exec.upload_state(&s.pos, &s.vel)?;
            let (pos, vel) = (s.pos.clone(), s.vel.clone());
            Ok(Self { exec, state, params, dt, steps: 0, interactions: 0.0, pos, vel })
        }

        fn download(&mut self) -> Result<(), Error> {
            self.exec.download_state(&self.state, &mut self.pos, &mut self.vel)
        }
    }

    impl<T: DeviceReal, E: ResidentMaps<T>> Simulation for DeviceLeapfrog<T, E> {
        fn time(&self) -> f64 {
            E::time(&self.state)
        }

        fn step(&mut self, until: f64) -> Result<bool, Error> {
            let half = 0.5 * self.dt;
            if E::time(&self.state) < until - half {
                // Steps need no potential; diagnostics ask for it (download_field then
                // computes it).
                self.exec.leapfrog_step(&mut self.state, &self.params.acceleration_only(), self.dt)?;
                self.steps += 1;
                self.interactions += (self.pos.len() as f64).powi(2);
            }
            Ok(E::time(&self.state) >= until - half)
        }

        fn steps(&self) -> u64 {
            self.steps
        }

        fn interactions(&self) -> f64 {
            self.interactions
        }

        fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
            self.download()?;
            let mut field = vec![Field::zero(); self.pos.len()];
            self.exec.download_field(&mut self.state, &self.params, &mut field)?;
            Ok(lent(&mut self.pos, &mut self.vel, E::time(&self.state), |s| diagnostics(s, &field)))
        }

        fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
            self.download()?;
            Ok(rows(&self.pos, &self.vel))
        }

        fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            // On the device(s): only the grid comes back.
            ResidentMaps::project(&mut self.exec, &self.state, projection, grid)
        }

        fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
            self.download()?;
            let mut w = vec![self.steps, self.interactions.to_bits()];
            lent(&mut self.pos, &mut self.vel, E::time(&self.state), |s| s.save(&mut w));
            let arrangement = self.exec.arrangement(&self.state);
            w.push(arrangement.len() as u64);
            w.extend(arrangement);
            Ok(Some(w))
        }

        fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
            self.steps = w.word()?;
            self.interactions = w.f64()?;
            let mut s = State::new(Vec::new(), Vec::new());
            s.restore(w)?;
            let len = w.len(1)?;
            let arrangement = (0..len).map(|_| w.word()).collect::<Result<Vec<u64>, Error>>()?;
            self.state = self.exec.upload_arranged(&s.pos, &s.vel, &mut Words::new(&arrangement))?;
            E::set_time(&mut self.state, s.time);
            (self.pos, self.vel) = (s.pos, s.vel);
            Ok(())
        }
    }

    /// A leapfrog over the device tree ([`nbody_cuda::TreeSystem`]): every force sorts,
    /// builds, walks and runs the leaves on the GPU; diagnostics, snapshots and pictures
    /// copy the particles back. Energies use the tree's potential.
    pub(crate) struct DeviceTreeLeapfrog<T: DeviceReal> {
        gpu: CudaExecutor,
        sys: TreeSystem<T>,
        params: Params<T>,
        dt: f64,
        steps: u64,
        pos: Vec<Particle<T>>,
        vel: Vec<Velocity<T>>,
    }

    impl<T: DeviceReal> DeviceTreeLeapfrog<T> {
        /// Uploads the system.
        pub(crate) fn new(
            mut gpu: CudaExecutor,
            s: &State<T>,
            settings: TreeSettings,
            dt: f64,
            eps: T,
        ) -> Result<Self, Error> {
            let params = Params::softened(eps).with_overlap_identical();
            nbody_core::validate::params(&params)?;
            let sys = gpu.upload_tree_system(&s.pos, &s.vel, settings)?;
            Ok(Self { gpu, sys, params, dt, steps: 0, pos: s.pos.clone(), vel: s.vel.clone() })
        }

        fn download(&mut self) -> Result<(), Error> {
            self.gpu.download_tree_system(&self.sys, &mut self.pos, &mut self.vel)
        }
    }

    impl<T: DeviceReal> Simulation for DeviceTreeLeapfrog<T> {
        fn time(&self) -> f64 {
            self.sys.time()
        }

        fn step(&mut self, until: f64) -> Result<bool, Error> {
            let half = 0.5 * self.dt;
            if self.sys.time() < until - half {
                self.gpu.tree_leapfrog_step(&mut self.sys, &self.params, self.dt)?;
                self.steps += 1;
            }
            Ok(self.sys.time() >= until - half)
        }

        fn steps(&self) -> u64 {
            self.steps
        }

        fn interactions(&self) -> f64 {
            self.sys.interactions()
        }

        fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
            self.download()?;
            let mut field = vec![Field::zero(); self.pos.len()];
            self.gpu.download_tree_field(&mut self.sys, &self.params, &mut field)?;
            Ok(lent(&mut self.pos, &mut self.vel, self.sys.time(), |s| diagnostics(s, &field)))
        }

        fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
            self.download()?;
            Ok(rows(&self.pos, &self.vel))
        }

        fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            self.gpu.project_resident(self.sys.state().positions(), projection, grid)
        }

        /// The state and the field it kicks with next (the relative criterion's scale
        /// too), so a resumed run is bit for bit the same.
        fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
            self.download()?;
            let mut field = vec![Field::zero(); self.pos.len()];
            self.gpu.download_tree_field(&mut self.sys, &self.params, &mut field)?;
            let mut w = vec![self.steps, self.sys.interactions().to_bits()];
            lent(&mut self.pos, &mut self.vel, self.sys.time(), |s| s.save(&mut w));
            nbody_integrators::put_fields(&mut w, &field);
            Ok(Some(w))
        }

        fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
            self.steps = w.word()?;
            let interactions = w.f64()?;
            let mut s = State::new(Vec::new(), Vec::new());
            s.restore(w)?;
            let field = nbody_integrators::take_fields::<T>(w)?;
            let settings = *self.sys.settings();
            self.sys = self.gpu.upload_tree_system(&s.pos, &s.vel, settings)?;
            self.sys.set_time(s.time);
            self.sys.add_interactions(interactions);
            self.gpu.restore_tree_field(&mut self.sys, &field)?;
            (self.pos, self.vel) = (s.pos, s.vel);
            Ok(())
        }
    }

    /// Hermite (shared or block steps) with every particle's state on one GPU
    /// ([`DeviceHermite`]); diagnostics, snapshots and pictures copy the particles back.
    pub(crate) struct DeviceHermiteSim<T: DeviceReal> {
        gpu: CudaExecutor,
        h: DeviceHermite<T>,
        params: Params<T>,
        pos: Vec<Particle<T>>,
        vel: Vec<Velocity<T>>,
        extra: f64,
        /// What the integration was made with (a resumed one is made again with them).
        eta: f64,
        steps: Steps,
    }

    impl<T: DeviceReal> DeviceHermiteSim<T> {
        /// Uploads the system.
        pub(crate) fn new(mut gpu: CudaExecutor, s: &State<T>, eta: f64, eps: T, steps: Steps) -> Result<Self, Error> {
            let h = DeviceHermite::new(&mut gpu, &s.pos, &s.vel, s.time, eta, eps, steps)?;
            let params = Params::softened(eps).with_overlap_identical();
            Ok(Self { gpu, h, params, pos: s.pos.clone(), vel: s.vel.clone(), extra: 0.0, eta, steps })
        }

        fn download(&mut self) -> Result<(), Error> {
            self.h.download(&mut self.gpu, &mut self.pos, &mut self.vel)
        }
    }

    impl<T: DeviceReal> Simulation for DeviceHermiteSim<T> {
        fn time(&self) -> f64 {
            self.h.time()
        }

        fn step(&mut self, until: f64) -> Result<bool, Error> {
            if self.h.time() < until {
                self.h.step(&mut self.gpu, until)?;
            }
            Ok(self.h.time() >= until)
        }

        fn steps(&self) -> u64 {
            self.h.steps()
        }

        fn interactions(&self) -> f64 {
            self.h.interactions() + self.extra
        }

        fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
            use nbody_core::Executor;
            self.download()?;
            let mut field = vec![Field::zero(); self.pos.len()];
            self.gpu.accelerations(&self.pos, &self.pos, &self.params, &mut field)?;
            self.extra += (self.pos.len() as f64).powi(2);
            Ok(lent(&mut self.pos, &mut self.vel, self.h.time(), |s| diagnostics(s, &field)))
        }

        fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
            self.download()?;
            Ok(rows(&self.pos, &self.vel))
        }

        fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            self.download()?;
            nbody_core::projection::Project::<T>::project(&mut self.gpu, &self.pos, projection, grid)
        }

        /// Everything on the device comes back (positions, velocities, derivatives and
        /// each particle's time) with the step bookkeeping, so the run resumes bit for bit.
        fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
            let c = self.h.checkpoint(&mut self.gpu)?;
            let mut w = vec![self.extra.to_bits(), c.time.to_bits(), u64::from(c.started), c.dt.to_bits(), c.steps];
            w.push(c.interactions.to_bits());
            w.push(c.pos.len() as u64);
            for lanes in [&c.pos, &c.vel, &c.acc, &c.jerk] {
                w.extend(lanes.iter().flatten().map(|x| nbody_core::Real::to_f64(*x).to_bits()));
            }
            w.extend(c.t.iter().chain(&c.dt_each).map(|x| x.to_bits()));
            w.push(c.levels.len() as u64);
            for level in &c.levels {
                w.push(level.len() as u64);
                w.extend(level.iter().map(|&i| u64::from(i)));
            }
            Ok(Some(w))
        }

        fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
            self.extra = w.f64()?;
            let (time, started, dt, steps, interactions) = (w.f64()?, w.word()? != 0, w.f64()?, w.word()?, w.f64()?);
            // Per particle: four arrays of four lanes, a time and a step.
            let n = w.len(18)?;
            let mut lanes = || -> Result<Vec<[T; 4]>, Error> {
                (0..n).map(|_| Ok([w.f64()?, w.f64()?, w.f64()?, w.f64()?].map(T::from_f64))).collect()
            };
            let (pos, vel, acc, jerk) = (lanes()?, lanes()?, lanes()?, lanes()?);
            let t = (0..n).map(|_| w.f64()).collect::<Result<Vec<_>, _>>()?;
            let dt_each = (0..n).map(|_| w.f64()).collect::<Result<Vec<_>, _>>()?;
            let count = w.len(1)?;
            let mut levels = Vec::with_capacity(count);
            for _ in 0..count {
                let len = w.len(1)?;
                let level =
                    (0..len).map(|_| Ok(u32::try_from(w.word()?).unwrap_or(u32::MAX))).collect::<Result<_, Error>>()?;
                levels.push(level);
            }
            // The host copies as saved (a resumed run starts from an empty system).
            self.pos = pos.iter().map(|&[x, y, z, m]| Particle::new(x, y, z, m)).collect();
            self.vel = vel.iter().map(|&[x, y, z, _]| Velocity::new(x, y, z)).collect();
            let c =
                HermiteCheckpoint { time, started, dt, steps, interactions, pos, vel, acc, jerk, t, dt_each, levels };
            self.h = DeviceHermite::resume(&mut self.gpu, &c, self.eta, self.params.eps, self.steps)?;
            Ok(())
        }
    }
}

/// A simulation whose particles are spread over the ranks of a [`super::team::Team`]:
/// snapshots gather every rank's rows (in rank order) onto every rank, and so do
/// checkpoints, which can resume on another number of ranks.
#[cfg(feature = "mpi")]
pub(super) struct Gathered<'a> {
    /// This rank's part.
    pub sim: Box<dyn Simulation + 'a>,
    /// The ranks.
    pub team: &'a super::team::Team,
    /// Particles over all ranks.
    pub n: usize,
}

/// Marks a checkpoint gathered from several ranks.
const SPLIT: u64 = u64::from_le_bytes(*b"NBRANKS1");

fn not_gathered() -> Error {
    Error::InvalidParameter { name: "checkpoint", requirement: "one gathered from MPI ranks, of this run's particles" }
}

/// One share of a gathered checkpoint (after its `SPLIT` mark) for rank `rank` of
/// `size`: its shared words and its part of every array (`expected`, where given, must
/// be the saved particle count). On as many ranks as wrote it, each rank's own words
/// (bit for bit); on another number, rank 0's shared words (time, steps and step sizes
/// are the same on every rank) and the rank's new share of every array.
fn take_share(w: &mut Words<'_>, size: usize, rank: usize, expected: Option<usize>) -> Result<Share, Error> {
    let ranks = w.len(0)?;
    let n = usize::try_from(w.word()?).map_err(|_| not_gathered())?;
    if ranks == 0 || expected.is_some_and(|e| e != n) {
        return Err(not_gathered());
    }
    let mut shared = Vec::with_capacity(ranks);
    for _ in 0..ranks {
        let len = w.len(1)?;
        shared.push((0..len).map(|_| w.word()).collect::<Result<Vec<u64>, Error>>()?);
    }
    let share = n * rank / size..n * (rank + 1) / size;
    let count = w.len(1)?;
    let mut mine = Vec::with_capacity(count);
    for _ in 0..count {
        let len = w.len(1)?;
        let all = (0..len).map(|_| w.word()).collect::<Result<Vec<u64>, Error>>()?;
        let per = len.checked_div(n).unwrap_or(0);
        if per * n != len {
            return Err(not_gathered());
        }
        mine.push(all[share.start * per..share.end * per].to_vec());
    }
    let own = if ranks == size { shared.swap_remove(rank) } else { shared.swap_remove(0) };
    Ok((own, mine))
}

#[cfg(feature = "mpi")]
impl Simulation for Gathered<'_> {
    fn time(&self) -> f64 {
        self.sim.time()
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        self.sim.step(until)
    }

    fn steps(&self) -> u64 {
        self.sim.steps()
    }

    fn interactions(&self) -> f64 {
        self.sim.interactions()
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        self.sim.diagnostics()
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        let mine = self.sim.snapshot()?;
        Ok(self.team.gather_rows(mine))
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.sim.project(projection, grid)
    }

    /// Every rank's shared words and every per-particle array, gathered in rank order
    /// (so particle order): `SPLIT`, the rank count, the particle count, each rank's
    /// shared words (count, words), then each array (count, words). Collective.
    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        let Some((shared, arrays)) = self.sim.save_split()? else { return Ok(None) };
        let mut w = vec![SPLIT, self.team.size() as u64, self.n as u64];
        for words in self.team.gather_words(shared) {
            w.push(words.len() as u64);
            w.extend(words);
        }
        w.push(arrays.len() as u64);
        for a in arrays {
            let all = self.team.gather_words(a).concat();
            w.push(all.len() as u64);
            w.extend(all);
        }
        Ok(Some(w))
    }

    /// This rank's share of a gathered checkpoint (see [`take_share`]).
    fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        if w.word()? != SPLIT {
            return Err(not_gathered());
        }
        let (own, mine) = take_share(w, self.team.size(), self.team.rank(), Some(self.n))?;
        let parts: Vec<&[u64]> = mine.iter().map(Vec::as_slice).collect();
        self.sim.restore_split(&mut Words::new(&own), &mut Arrays::new(&parts))
    }
}

/// A simulation seen in a run's units ([`crate::units::Units`]): times, velocities,
/// energies and momenta converted on the way in and out; the simulation itself runs in
/// N-body units, and its checkpoints stay in them.
pub(super) struct InUnits<'a> {
    sim: Box<dyn Simulation + 'a>,
    /// sqrt(G) in the run's units: model time = run time x `k`.
    k: f64,
    /// The block step in model units (0: none): a target time a rounding away from a
    /// multiple of it is put on it, so block steps land where the run asked.
    grid: f64,
}

impl<'a> InUnits<'a> {
    pub(super) fn new(sim: Box<dyn Simulation + 'a>, k: f64, grid: f64) -> Self {
        Self { sim, k, grid }
    }
}

impl Simulation for InUnits<'_> {
    fn time(&self) -> f64 {
        self.sim.time() / self.k
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        let mut u = until * self.k;
        if self.grid > 0.0 {
            let on = (u / self.grid).round() * self.grid;
            if (on - u).abs() <= 1e-9 * u.abs().max(self.grid) {
                u = on;
            }
        }
        self.sim.step(u)
    }

    fn steps(&self) -> u64 {
        self.sim.steps()
    }

    fn interactions(&self) -> f64 {
        self.sim.interactions()
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        let (k, d) = (self.k, self.sim.diagnostics()?);
        Ok(Diagnostics {
            kinetic: d.kinetic * k * k,
            potential: d.potential * k * k,
            total: d.total * k * k,
            momentum: d.momentum.map(|p| p * k),
            angular_momentum: d.angular_momentum.map(|l| l * k),
            ..d
        })
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        let mut rows = self.sim.snapshot()?;
        for r in &mut rows {
            r[4..7].iter_mut().for_each(|v| *v *= self.k);
        }
        Ok(rows)
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.sim.project(projection, grid)
    }

    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        self.sim.save()
    }

    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error> {
        self.sim.restore(words)
    }

    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        self.sim.save_split()
    }

    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        self.sim.restore_split(shared, arrays)
    }
}

#[cfg(test)]
mod tests {
    use super::Counting;
    use nbody_conformance::wrappers::{Probe, every_door_reaches};

    /// The run loop's counter reaches the executor's own hook at every door (a device's
    /// neighbour search, MPI's collective doors) and counts what each asks for.
    #[test]
    fn counting_reaches_every_hook_and_counts() {
        let probe = Probe::default();
        let log = probe.log.clone();
        let mut counting = Counting { inner: Box::new(ProbeMaps(probe)), interactions: 0.0, all_sources: None };
        every_door_reaches(&mut counting, &log).unwrap();
        // Four calls of 6 x 6 and two batches of 6 x 6.
        assert_eq!(counting.interactions, 6.0 * 36.0);
    }

    /// The probe with the plain density map, as the command's executors all have one.
    struct ProbeMaps(Probe);

    impl nbody_core::forward::Forward for ProbeMaps {
        type Inner = Probe;
        fn inner(&self) -> &Probe {
            &self.0
        }
        fn inner_mut(&mut self) -> &mut Probe {
            &mut self.0
        }
    }

    impl nbody_core::projection::Project<f64> for ProbeMaps {}
}
