//! The leapfrog over the device tree: a system whose positions, velocities and field
//! stay on the GPU, each force a [`CudaExecutor::tree_forces`] (sort, build, moments,
//! walk, leaf kernels) and each kick and drift a kernel, so a step moves nothing across
//! the bus but the tree's counters.

use crate::resident::DeviceState;
use crate::tree::{DeviceTree, TreeReport, TreeSettings};
use crate::{CudaExecutor, DeviceFields, DeviceReal};
use nbody_core::cell::Criterion;
use nbody_core::resident::Resident;
use nbody_core::stepping::{KickDrift, kick_drift_kick};
use nbody_core::{Error, Field, Params, Particle, Velocity, validate};

/// A system on the GPU with its device tree: what [`CudaExecutor::tree_leapfrog_step`]
/// steps. Made by [`CudaExecutor::upload_tree_system`].
///
/// ```no_run
/// use nbody_core::Params;
/// use nbody_cuda::{CudaExecutor, TreeSettings};
/// let mut gpu = CudaExecutor::new()?;
/// let (p, v) = nbody_integrators::ics::plummer::<f32>(1 << 16, 1);
/// let mut system = gpu.upload_tree_system(&p, &v, TreeSettings::new(0.5))?;
/// let params = Params::softened(0.01);
/// for _ in 0..10 {
///     gpu.tree_leapfrog_step(&mut system, &params, 1.0 / 256.0)?;
/// }
/// assert!((system.time() - 10.0 / 256.0).abs() < 1e-12);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct TreeSystem<T: DeviceReal> {
    state: DeviceState<T>,
    tree: DeviceTree<T>,
    settings: TreeSettings,
    /// The field before the state's current one (the relative test's scale), kept to
    /// swap with it.
    previous: Option<DeviceFields<T>>,
    /// Whether the state's field holds a force (of these or earlier positions).
    computed: bool,
    last: TreeReport,
    forces: u64,
    interactions: f64,
}

impl<T: DeviceReal> TreeSystem<T> {
    /// Particles.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }

    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.state.time
    }

    /// Sets the simulated time (a run resumed from a checkpoint).
    pub fn set_time(&mut self, t: f64) {
        self.state.time = t;
    }

    /// The settings every force uses.
    pub fn settings(&self) -> &TreeSettings {
        &self.settings
    }

    /// What the last force built and computed, with its phases' GPU times.
    pub fn last_force(&self) -> &TreeReport {
        &self.last
    }

    /// Forces computed so far.
    pub fn forces(&self) -> u64 {
        self.forces
    }

    /// Particle-particle and particle-cell interactions of every force so far.
    pub fn interactions(&self) -> f64 {
        self.interactions
    }

    /// Adds to the interactions counted (a run resumed from a checkpoint carries its
    /// count on).
    pub fn add_interactions(&mut self, interactions: f64) {
        self.interactions += interactions;
    }

    /// The device state (positions, velocities and field), for resident calls such as
    /// [`CudaExecutor::project_resident`].
    pub fn state(&self) -> &DeviceState<T> {
        &self.state
    }
}

/// The system as [`kick_drift_kick`] steps it.
struct Stepping<'a, T: DeviceReal> {
    gpu: &'a mut CudaExecutor,
    sys: &'a mut TreeSystem<T>,
    params: &'a Params<T>,
}

impl<T: DeviceReal> KickDrift<T> for Stepping<'_, T> {
    fn field_is_current(&self) -> bool {
        self.sys.state.fresh
    }

    fn compute_field(&mut self) -> Result<(), Error> {
        self.gpu.tree_field(self.sys, self.params)
    }

    fn kick(&mut self, h: T) -> Result<(), Error> {
        self.gpu.kick(&mut self.sys.state, h)
    }

    fn drift(&mut self, h: T) -> Result<(), Error> {
        self.gpu.drift(&mut self.sys.state, h)
    }
}

impl CudaExecutor {
    /// Uploads a system to be stepped with tree forces (checked as a force call's
    /// particles are, velocities too; the settings as [`CudaExecutor::tree_forces`]
    /// checks them). The mixed kernels' sorted states are refused: the tree sorts on its
    /// own.
    pub fn upload_tree_system<T: DeviceReal>(
        &mut self,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        settings: TreeSettings,
    ) -> Result<TreeSystem<T>, Error> {
        if self.family::<T>() == crate::Family::Mixed {
            return Err(Error::Unsupported {
                operation: "the device tree leapfrog with the mixed kernels",
                reason: "the tree runs the native f32 or f64 kernels; open the executor without mixed precision",
            });
        }
        settings.check()?;
        // The state (positions, velocities, field) and the previous field beside the tree.
        self.check_tree_memory::<T>(pos.len(), &settings, 4 * pos.len() * size_of::<Particle<T>>())?;
        let state = self.upload_state(pos, vel)?;
        Ok(TreeSystem {
            state,
            tree: DeviceTree::new(),
            settings,
            previous: None,
            computed: false,
            last: TreeReport::default(),
            forces: 0,
            interactions: 0.0,
        })
    }

    /// The tree field of the system at its positions, kept for the next kick. With the
    /// relative criterion, the field it held (its last force) scales the test.
    pub fn tree_field<T: DeviceReal>(&mut self, sys: &mut TreeSystem<T>, params: &Params<T>) -> Result<(), Error> {
        let n = sys.len();
        let relative = matches!(sys.settings.criterion, Criterion::Relative { .. }) && sys.computed;
        if relative {
            // The last force becomes the previous field; its buffer's place takes the spare.
            let spare = match sys.previous.take() {
                Some(p) if p.len() == n => p,
                _ => self.zeroed_fields(n)?,
            };
            sys.previous = Some(std::mem::replace(&mut sys.state.field, spare));
        }
        // The state's field is cleared and summed into: stale until this succeeds.
        (sys.state.fresh, sys.computed) = (false, false);
        self.zero_on_stream(&mut sys.state.field)?;
        let previous = if relative { sys.previous.as_ref() } else { None };
        let (state, settings) = (&mut sys.state, &sys.settings);
        let report = self.tree_forces_with(&mut sys.tree, &state.pos, previous, settings, params, &mut state.field)?;
        (sys.state.fresh, sys.computed, sys.last) = (true, true, report);
        sys.forces += 1;
        sys.interactions += (report.interactions + report.cell_interactions) as f64;
        Ok(())
    }

    /// Zeroes `f` on the executor's stream (a memset: `clear` uploads zeros from the
    /// host, which at 2^24 particles took longer than the force's moments and build).
    fn zero_on_stream<T: DeviceReal>(&self, f: &mut DeviceFields<T>) -> Result<(), Error> {
        let stream = self.gpu.stream().as_inner();
        // SAFETY: the buffer holds at least `bytes(len)` bytes; ordered on this stream.
        let r = unsafe {
            cust::sys::cuMemsetD8Async(
                crate::memory::ptr(&f.buf).as_raw(),
                0,
                DeviceFields::<T>::bytes(f.len()),
                stream,
            )
        };
        crate::pipeline::driver(r, "clearing the tree's field")
    }

    /// One kick-drift-kick step of `dt` with tree forces (one force per step: the
    /// field of the step's end is kept for the next one's first kick), then the clock
    /// advances.
    pub fn tree_leapfrog_step<T: DeviceReal>(
        &mut self,
        sys: &mut TreeSystem<T>,
        params: &Params<T>,
        dt: f64,
    ) -> Result<(), Error> {
        validate::params(params)?;
        kick_drift_kick(&mut Stepping { gpu: self, sys, params }, dt)?;
        sys.state.time += dt;
        Ok(())
    }

    /// Copies positions and velocities back.
    pub fn download_tree_system<T: DeviceReal>(
        &mut self,
        sys: &TreeSystem<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.download_state(&sys.state, pos, vel)
    }

    /// The tree field at the current positions (computed first if stale), copied back:
    /// its potential is the tree's, not direct summation's.
    pub fn download_tree_field<T: DeviceReal>(
        &mut self,
        sys: &mut TreeSystem<T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        if !sys.state.fresh {
            self.tree_field(sys, params)?;
        }
        // The tree's own field as held (a direct download asking for a potential the
        // state lacks would compute one by direct summation).
        self.download_held_field(&sys.state, out)
    }

    /// Puts a field saved with the system (a checkpoint) back as its current field, so
    /// the next step kicks with it and the relative criterion scales by it, as the
    /// saved run would have.
    pub fn restore_tree_field<T: DeviceReal>(
        &mut self,
        sys: &mut TreeSystem<T>,
        field: &[Field<T>],
    ) -> Result<(), Error> {
        validate::length("field", sys.len(), field.len())?;
        sys.state.field = self.upload_fields(field)?;
        (sys.state.fresh, sys.computed) = (true, true);
        Ok(())
    }
}
