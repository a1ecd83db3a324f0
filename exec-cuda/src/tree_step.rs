//! The device tree as a resident system's gravity: a [`DeviceState`] made by
//! [`CudaExecutor::upload_tree_system`] computes its field with
//! [`CudaExecutor::tree_forces`] (sort, build, moments, walk, leaf kernels) instead of
//! direct summation, so [`Resident::leapfrog_step`] (the one leapfrog, core's
//! `kick_drift_kick`) steps it with nothing across the bus but the tree's counters.

use crate::resident::DeviceState;
use crate::tree::{DeviceTree, TreeReport, TreeSettings};
use crate::{CudaExecutor, DeviceFields, DeviceReal};
use nbody_core::cell::Criterion;
use nbody_core::resident::Resident;
use nbody_core::{Error, Field, Params, Particle, Velocity, validate};

/// A resident system whose gravity is the device tree (a [`DeviceState`] with its
/// [`TreeGravity`]).
///
/// ```no_run
/// use nbody_core::Params;
/// use nbody_core::resident::Resident;
/// use nbody_cuda::{CudaExecutor, TreeSettings};
/// let mut gpu = CudaExecutor::new()?;
/// let (p, v) = nbody_integrators::ics::plummer::<f32>(1 << 16, 1);
/// let mut system = gpu.upload_tree_system(&p, &v, TreeSettings::new(0.5))?;
/// let params = Params::softened(0.01);
/// for _ in 0..10 {
///     gpu.leapfrog_step(&mut system, &params, 1.0 / 256.0)?;
/// }
/// assert!((system.time - 10.0 / 256.0).abs() < 1e-12);
/// assert_eq!(system.tree().map(|t| t.forces()), Some(11));
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub type TreeSystem<T> = DeviceState<T>;

/// The device tree a resident system computes its field with, and what its forces did.
#[derive(Debug)]
pub struct TreeGravity<T: DeviceReal> {
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
    seconds: f64,
}

impl<T: DeviceReal> TreeGravity<T> {
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

    /// GPU seconds of every force so far (each one's phases, timed with CUDA events):
    /// beside a run's wall time, what its steps spent outside the force.
    pub fn force_seconds(&self) -> f64 {
        self.seconds
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
}

impl CudaExecutor {
    /// Uploads a system whose field is the device tree's (checked as a force call's
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
        let mut state = self.upload_state(pos, vel)?;
        state.tree = Some(Box::new(TreeGravity {
            tree: DeviceTree::new(),
            settings,
            previous: None,
            computed: false,
            last: TreeReport::default(),
            forces: 0,
            interactions: 0.0,
            seconds: 0.0,
        }));
        Ok(state)
    }

    /// The tree field of the system at its positions, kept for the next kick
    /// ([`Resident::compute_field`] of a tree system). With the relative criterion, the
    /// field it held (its last force) scales the test.
    pub(crate) fn tree_field<T: DeviceReal>(
        &mut self,
        sys: &mut DeviceState<T>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let n = sys.len();
        let Some(g) = sys.tree.as_deref_mut() else {
            return Err(Error::InvalidParameter { name: "state", requirement: "a system made by upload_tree_system" });
        };
        let relative = matches!(g.settings.criterion, Criterion::Relative { .. }) && g.computed;
        if relative {
            // The last force becomes the previous field; its buffer's place takes the spare.
            let spare = match g.previous.take() {
                Some(p) if p.len() == n => p,
                _ => self.zeroed_fields(n)?,
            };
            g.previous = Some(std::mem::replace(&mut sys.field, spare));
        }
        // The state's field is cleared and summed into: stale until this succeeds.
        (sys.fresh, g.computed) = (false, false);
        self.zero_on_stream(&mut sys.field)?;
        let previous = if relative { g.previous.as_ref() } else { None };
        let report = self.tree_forces_with(&mut g.tree, &sys.pos, previous, &g.settings, params, &mut sys.field)?;
        (sys.fresh, g.computed, g.last) = (true, true, report);
        g.forces += 1;
        g.interactions += (report.interactions + report.cell_interactions) as f64;
        g.seconds += report.times.total();
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

    /// Puts a field saved with the system (a checkpoint) back as its current field, so
    /// the next step kicks with it and the relative criterion scales by it, as the
    /// saved run would have.
    pub fn restore_tree_field<T: DeviceReal>(
        &mut self,
        sys: &mut TreeSystem<T>,
        field: &[Field<T>],
    ) -> Result<(), Error> {
        validate::length("field", sys.len(), field.len())?;
        let Some(gravity) = sys.tree.as_mut() else {
            return Err(Error::InvalidParameter { name: "state", requirement: "a system made by upload_tree_system" });
        };
        sys.field = self.upload_fields(field)?;
        (sys.fresh, gravity.computed) = (true, true);
        Ok(())
    }
}
