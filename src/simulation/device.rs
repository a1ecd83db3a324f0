//! The device-resident simulations: the particles stay on the GPU(s) between steps,
//! and only snapshots and checkpoints copy them back (diagnostics are summed where the
//! particles are, and pictures drawn there).

#[cfg(feature = "cuda")]
pub(super) use gpu::{direct, tree};
#[cfg(not(feature = "cuda"))]
pub(super) use none::{direct, tree};

#[cfg(not(feature = "cuda"))]
mod none {
    use super::super::{Plan, Run};
    use nbody_backends::{BackendReal, Opened};
    use nbody_core::Error;
    use nbody_integrators::State;

    /// The executor back: the host serves every run.
    type Chosen = Result<Result<Run, Opened>, Error>;

    /// Without the GPU's executor nothing stays on a device: every run steps on the host.
    pub(crate) fn direct<T: BackendReal>(_: &Plan, _: &State<T>, opened: Opened) -> Chosen {
        Ok(Err(opened))
    }

    /// As [`direct`]: the host tree serves every tree run.
    pub(crate) fn tree<T: BackendReal>(_: &Plan, _: &State<T>, opened: Opened, _: &str) -> Chosen {
        Ok(Err(opened))
    }
}

/// The device-resident simulations.
#[cfg(feature = "cuda")]
mod gpu {
    use super::super::{Gravity, Plan, Row, Run, Simulation, rows};
    use nbody_backends::{Executor as Opens, Opened};
    use nbody_core::projection::Projection;
    use nbody_core::resident::HermiteRecords;
    use nbody_core::resident::Resident;
    use nbody_core::{Error, Executor, Field, Params, Particle, Velocity};
    use nbody_cuda::{CudaExecutor, DeviceReal, DeviceState, MultiDevice, MultiState, TreeSettings, TreeSystem};
    use nbody_integrators::{Checkpoint, Diagnostics, State, Words, diagnostics, diagnostics_of_sums};
    use nbody_integrators::{HermiteCheckpoint, ResidentHermite, Scheme, Steps};

    /// Resident executors ([`Resident`]: one GPU, several) that also draw density maps of
    /// the system they hold.
    pub(crate) trait ResidentMaps<T: DeviceReal>: Resident<T> + Executor<T> {
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

    /// A leapfrog whose particles stay on the GPU(s); only snapshots and checkpoints copy
    /// them back.
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
            let mut state = exec.upload_state(&s.pos, &s.vel)?;
            E::set_time(&mut state, s.time);
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

        /// Summed where the system lives (a GPU's diagnostics cost a fraction of a
        /// force, not a copy of the system).
        fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
            Ok(diagnostics_of_sums(self.exec.system_sums(&mut self.state, &self.params)?))
        }

        fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
            self.download()?;
            Ok(rows(&self.pos, &self.vel))
        }

        fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            // On the device(s): only the grid comes back.
            ResidentMaps::project(&mut self.exec, &self.state, projection, grid)
        }

        fn touching(&mut self, radii: &[f64]) -> Result<Vec<[u32; 2]>, Error> {
            self.download()?;
            let (exec, time) = (&mut self.exec, E::time(&self.state));
            lent(&mut self.pos, &mut self.vel, time, |s| crate::simulation::host::touching(exec, s, radii))
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

    /// A leapfrog over the device tree ([`nbody_cuda::TreeSystem`], stepped by
    /// [`Resident::leapfrog_step`] as every resident system is): every force sorts,
    /// builds, walks and runs the leaves on the GPU; diagnostics, snapshots and pictures
    /// copy the particles back. Energies use the tree's potential.
    pub(crate) struct DeviceTreeLeapfrog<T: DeviceReal> {
        gpu: CudaExecutor,
        sys: TreeSystem<T>,
        settings: TreeSettings,
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
            let mut sys = gpu.upload_tree_system(&s.pos, &s.vel, settings)?;
            sys.time = s.time;
            Ok(Self { gpu, sys, settings, params, dt, steps: 0, pos: s.pos.clone(), vel: s.vel.clone() })
        }

        fn download(&mut self) -> Result<(), Error> {
            self.gpu.download_state(&self.sys, &mut self.pos, &mut self.vel)
        }
    }

    impl<T: DeviceReal> Simulation for DeviceTreeLeapfrog<T> {
        fn time(&self) -> f64 {
            self.sys.time
        }

        fn step(&mut self, until: f64) -> Result<bool, Error> {
            let half = 0.5 * self.dt;
            if self.sys.time < until - half {
                self.gpu.leapfrog_step(&mut self.sys, &self.params, self.dt)?;
                self.steps += 1;
            }
            Ok(self.sys.time >= until - half)
        }

        fn steps(&self) -> u64 {
            self.steps
        }

        fn interactions(&self) -> f64 {
            self.sys.tree().map_or(0.0, |t| t.interactions())
        }

        fn force_time(&self) -> Option<(u64, f64)> {
            self.sys.tree().map(|t| (t.forces(), t.force_seconds()))
        }

        /// Summed on the GPU from the tree's own field: twelve numbers cross the bus.
        fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
            Ok(diagnostics_of_sums(self.gpu.system_sums(&mut self.sys, &self.params)?))
        }

        fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
            self.download()?;
            Ok(rows(&self.pos, &self.vel))
        }

        fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
            self.gpu.project_resident(self.sys.positions(), projection, grid)
        }

        /// The state and the field it kicks with next (the relative criterion's scale
        /// too), so a resumed run is bit for bit the same.
        fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
            self.download()?;
            let mut field = vec![Field::zero(); self.pos.len()];
            self.gpu.download_field(&mut self.sys, &self.params, &mut field)?;
            let mut w = vec![self.steps, self.interactions().to_bits()];
            lent(&mut self.pos, &mut self.vel, self.sys.time, |s| s.save(&mut w));
            nbody_integrators::Sink::Flat(&mut w).fields(&field);
            Ok(Some(w))
        }

        fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
            self.steps = w.word()?;
            let interactions = w.f64()?;
            let mut s = State::new(Vec::new(), Vec::new());
            s.restore(w)?;
            let field = nbody_integrators::Source::Flat(w).fields::<T>()?;
            self.sys = self.gpu.upload_tree_system(&s.pos, &s.vel, self.settings)?;
            self.sys.time = s.time;
            if let Some(t) = self.sys.tree_mut() {
                t.add_interactions(interactions);
            }
            self.gpu.restore_tree_field(&mut self.sys, &field)?;
            (self.pos, self.vel) = (s.pos, s.vel);
            Ok(())
        }
    }

    /// Hermite (shared or block steps) with every particle's state on one GPU
    /// ([`ResidentHermite`] over [`CudaExecutor`]); diagnostics, snapshots and pictures
    /// copy the particles back.
    pub(crate) struct ResidentHermiteSim<T: DeviceReal> {
        gpu: CudaExecutor,
        h: ResidentHermite<T, CudaExecutor>,
        params: Params<T>,
        pos: Vec<Particle<T>>,
        vel: Vec<Velocity<T>>,
        extra: f64,
        /// What the integration was made with (a resumed one is made again with them).
        eta: f64,
        steps: Steps,
    }

    impl<T: DeviceReal> ResidentHermiteSim<T> {
        /// Uploads the system.
        pub(crate) fn new(mut gpu: CudaExecutor, s: &State<T>, eta: f64, eps: T, steps: Steps) -> Result<Self, Error> {
            let h = ResidentHermite::new(&mut gpu, &s.pos, &s.vel, s.time, eta, eps, steps)?;
            let params = Params::softened(eps).with_overlap_identical();
            Ok(Self { gpu, h, params, pos: s.pos.clone(), vel: s.vel.clone(), extra: 0.0, eta, steps })
        }

        fn download(&mut self) -> Result<(), Error> {
            self.h.download(&mut self.gpu, &mut self.pos, &mut self.vel)
        }
    }

    impl<T: DeviceReal> Simulation for ResidentHermiteSim<T> {
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

        fn touching(&mut self, radii: &[f64]) -> Result<Vec<[u32; 2]>, Error> {
            self.download()?;
            let (gpu, time) = (&mut self.gpu, self.h.time());
            lent(&mut self.pos, &mut self.vel, time, |s| crate::simulation::host::touching(gpu, s, radii))
        }

        /// Everything on the device comes back (positions, velocities, derivatives and
        /// each particle's time) with the step bookkeeping, so the run resumes bit for bit.
        fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
            let c = self.h.checkpoint(&mut self.gpu)?;
            let mut w = vec![self.extra.to_bits(), c.time.to_bits(), u64::from(c.started), c.dt.to_bits(), c.steps];
            w.push(c.interactions.to_bits());
            let r = &c.records;
            w.push(r.pos.len() as u64);
            for lanes in [&r.pos, &r.vel, &r.acc, &r.jerk] {
                w.extend(lanes.iter().flatten().map(|x| nbody_core::Real::to_f64(*x).to_bits()));
            }
            w.extend(r.t.iter().chain(&c.dt_each).map(|x| x.to_bits()));
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
            let records = HermiteRecords { pos, vel, acc, jerk, t };
            let c = HermiteCheckpoint { time, started, dt, steps, interactions, records, dt_each, levels };
            self.h = ResidentHermite::resume(&mut self.gpu, &c, self.eta, self.params.eps, self.steps)?;
            Ok(())
        }
    }

    /// The device-resident direct simulation `plan` asks for, where `opened` has one (one
    /// process: the leapfrog on one GPU or several, Hermite with shared or block steps on
    /// one); otherwise the executor back.
    pub(in crate::simulation) fn direct<T: DeviceReal>(
        plan: &Plan,
        state: &State<T>,
        opened: Opened,
    ) -> Result<Result<Run, Opened>, Error> {
        let backend = opened.backend().clone();
        if backend.check_precision(T::NAME).is_err() {
            return Ok(Err(opened));
        }
        let eps = T::from_f64(plan.eps);
        let (sim, label): (Box<dyn Simulation + Send>, &str) = match (opened.into_executor(), plan.integrator) {
            (Opens::Cuda(gpu), Scheme::Leapfrog) => {
                (Box::new(DeviceLeapfrog::new(*gpu, state, plan.dt, eps)?), "device-resident leapfrog")
            }
            (Opens::Devices(multi), Scheme::Leapfrog) => {
                (Box::new(DeviceLeapfrog::new(*multi, state, plan.dt, eps)?), "device-resident leapfrog")
            }
            (Opens::Cuda(gpu), Scheme::Hermite | Scheme::BlockHermite) => {
                let steps = match plan.integrator {
                    Scheme::Hermite => Steps::Shared,
                    _ => Steps::Block { dt_max: plan.dt },
                };
                (Box::new(ResidentHermiteSim::new(*gpu, state, plan.eta, eps, steps)?), "device-resident Hermite")
            }
            (other, _) => return Ok(Err(Opened::from_parts(backend, other))),
        };
        Ok(Ok(Run { sim, on_device: true, label: format!("{backend} ({label})") }))
    }

    /// The device tree's leapfrog, where `opened` is one GPU with the native kernels and
    /// `plan` softens as Plummer; otherwise the executor back.
    pub(in crate::simulation) fn tree<T: DeviceReal>(
        plan: &Plan,
        state: &State<T>,
        opened: Opened,
        test: &str,
    ) -> Result<Result<Run, Opened>, Error> {
        let backend = opened.backend().clone();
        let Gravity::Tree { theta, criterion } = plan.gravity else { return Ok(Err(opened)) };
        if backend.is_mixed() || !plan.plummer() || backend.check_precision(T::NAME).is_err() {
            return Ok(Err(opened));
        }
        match opened.into_executor() {
            Opens::Cuda(gpu) => {
                let settings = TreeSettings::new(theta).with_criterion(criterion);
                let sim = DeviceTreeLeapfrog::new(*gpu, state, settings, plan.dt, T::from_f64(plan.eps))?;
                let label = format!(
                    "{backend} (device tree leapfrog, quadrupole cells, {test}; energies from the tree's potential)"
                );
                Ok(Ok(Run { sim: Box::new(sim), on_device: true, label }))
            }
            other => Ok(Err(Opened::from_parts(backend, other))),
        }
    }
}
