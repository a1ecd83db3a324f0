//! Wrappers by construction: an executor that wraps another implements [`Forward`]
//! (which executor is inside, and optionally what to do before each call), and every
//! door and hook of [`Executor`] is forwarded for it by one blanket implementation. A
//! wrapper therefore cannot lose a device path by forgetting an entry point: whatever
//! the inner executor overrides (its neighbour search, its batched kernel), the wrapper
//! reaches.

use crate::calls::{
    BatchCall, BatchCellsCall, BatchPerParticleCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall,
    SnapCall, TidalCall, VjpBatchCall, VjpCall,
};
use crate::cell::Cell;
use crate::executor::{Bodies, Executor, InteractionList, Kinematics, LeafList, PerParticle};
use crate::neighbours::Neighbours;
use crate::{Error, Field, Jerk, Params, Particle, Real, Tidal};

/// What a call asks for, as a wrapper's [`Forward::before`] sees it.
#[derive(Clone, Copy, Debug)]
pub enum Call<'a> {
    /// Acceleration (and potential).
    Accelerations {
        /// Targets.
        targets: usize,
        /// Sources.
        sources: usize,
    },
    /// With the jerk; `neighbours` when the call finds neighbours too.
    Jerk {
        /// Targets.
        targets: usize,
        /// Sources.
        sources: usize,
        /// Whether neighbours are found in the same pass.
        neighbours: bool,
    },
    /// With the jerk and the snap.
    Snap {
        /// Targets.
        targets: usize,
        /// Sources.
        sources: usize,
    },
    /// With the tidal tensor.
    Tidal {
        /// Targets.
        targets: usize,
        /// Sources.
        sources: usize,
    },
    /// A vector-Jacobian product: a pass over the sources of each target and one over
    /// the targets of each source.
    Vjp {
        /// Targets.
        targets: usize,
        /// Sources.
        sources: usize,
    },
    /// A batched interaction list over `particles` particles.
    Batch {
        /// Particles the list indexes.
        particles: usize,
        /// The list (its interactions are counted only by a wrapper that asks).
        list: &'a InteractionList<'a>,
    },
    /// The vector-Jacobian product of a batched list: both of its passes over the list.
    VjpBatch {
        /// Particles the list indexes.
        particles: usize,
        /// The list.
        list: &'a InteractionList<'a>,
    },
    /// Far cells as sources (particle-cell interactions).
    Cells {
        /// Targets.
        targets: usize,
        /// Cells.
        cells: usize,
    },
    /// A leaf list: particle spans and cell spans per target group.
    BatchCells {
        /// Particles the pairs' targets and particle spans index.
        particles: usize,
        /// Cells the cell spans index.
        cells: usize,
        /// The list.
        list: &'a LeafList<'a>,
    },
}

impl Call<'_> {
    /// Pair interactions the call computes.
    ///
    /// ```
    /// use nbody_core::forward::Call;
    /// assert_eq!(Call::Accelerations { targets: 3, sources: 4 }.interactions(), 12);
    /// ```
    pub fn interactions(&self) -> usize {
        match *self {
            Call::Accelerations { targets, sources }
            | Call::Jerk { targets, sources, .. }
            | Call::Snap { targets, sources }
            | Call::Tidal { targets, sources }
            | Call::Cells { targets, cells: sources } => targets * sources,
            Call::Vjp { targets, sources } => 2 * targets * sources,
            Call::Batch { list, .. } => list.interactions(),
            Call::VjpBatch { list, .. } => 2 * list.interactions(),
            Call::BatchCells { list, .. } => list.particles.interactions() + list.cell_interactions(),
        }
    }
}

/// An executor that counts what it is asked for: the calls, and the pair interactions
/// they compute. Run loops report exact rates with it for every integrator (block
/// steps, Runge-Kutta stages, diagnostics), and tests check what reached an executor.
///
/// ```
/// use nbody_core::forward::Counted;
/// use nbody_core::{Executor, Field, Params, Particle, Reference};
/// let mut e = Counted::new(Reference);
/// let ps = [Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let mut out = [Field::zero(); 2];
/// e.accelerations(&ps, &ps, &Params::softened(0.1).with_overlap_identical(), &mut out)?;
/// assert_eq!((e.calls, e.interactions), (1, 4.0));
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Counted<E> {
    /// The executor inside.
    pub inner: E,
    /// Calls forwarded (doors and hooks alike).
    pub calls: u64,
    /// Pair interactions asked for.
    pub interactions: f64,
    /// Where each direct call's sources are one share of `all_sources` (a distributed
    /// executor's rank, whose calls pull its targets towards every rank's sources):
    /// direct calls count targets x `all_sources`.
    pub all_sources: Option<usize>,
}

impl<E> Counted<E> {
    /// Counts the calls made to `inner`, from zero.
    pub fn new(inner: E) -> Self {
        Counted { inner, calls: 0, interactions: 0.0, all_sources: None }
    }
}

impl<E> Forward for Counted<E> {
    type Inner = E;

    fn inner(&self) -> &E {
        &self.inner
    }

    fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    fn before(&mut self, call: &Call<'_>) {
        self.calls += 1;
        self.interactions += match (*call, self.all_sources) {
            (
                Call::Accelerations { targets, .. }
                | Call::Jerk { targets, .. }
                | Call::Snap { targets, .. }
                | Call::Tidal { targets, .. },
                Some(all),
            ) => targets as f64 * all as f64,
            _ => call.interactions() as f64,
        };
    }
}

/// An executor that wraps another: every door and hook of [`Executor`] goes to
/// [`Forward::inner_mut`], after [`Forward::before`] has seen the call. The wrapper is
/// an `Executor<T>` for every `T` its inner executor is one for.
///
/// ```
/// use nbody_core::forward::{Call, Forward};
/// use nbody_core::{Executor, Field, Params, Particle, Reference};
///
/// /// Counts the pair interactions asked of the executor inside.
/// struct Counted<E> { inner: E, pairs: usize }
///
/// impl<E> Forward for Counted<E> {
///     type Inner = E;
///     fn inner(&self) -> &E { &self.inner }
///     fn inner_mut(&mut self) -> &mut E { &mut self.inner }
///     fn before(&mut self, call: &Call<'_>) { self.pairs += call.interactions(); }
/// }
///
/// let mut e = Counted { inner: Reference, pairs: 0 };
/// let ps = [Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let mut out = [Field::zero(); 2];
/// e.accelerations(&ps, &ps, &Params::softened(0.1).with_overlap_identical(), &mut out)?;
/// assert_eq!((e.pairs, Executor::<f64>::name(&e)), (4, "reference"));
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub trait Forward {
    /// The executor inside (an `Executor<T>` for every `T` the wrapper serves).
    type Inner: ?Sized;

    /// The executor inside.
    fn inner(&self) -> &Self::Inner;

    /// The executor inside, to call.
    fn inner_mut(&mut self) -> &mut Self::Inner;

    /// Sees every call (door or hook) before it is forwarded. Default: nothing.
    fn before(&mut self, call: &Call<'_>) {
        let _ = call;
    }

    /// The name the wrapper reports, where it has its own (default: the inner
    /// executor's).
    fn own_name(&self) -> Option<&'static str> {
        None
    }
}

impl<T: Real, W: Forward + ?Sized> Executor<T> for W
where
    W::Inner: Executor<T>,
{
    fn name(&self) -> &'static str {
        self.own_name().unwrap_or_else(|| self.inner().name())
    }

    fn hooks_check_sources(&self) -> bool {
        self.inner().hooks_check_sources()
    }

    fn capabilities(&self) -> crate::capabilities::Capabilities {
        self.inner().capabilities()
    }

    fn accelerations(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: targets.len(), sources: sources.len() });
        self.inner_mut().accelerations(targets, sources, params, out)
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: call.targets.len(), sources: call.sources.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_unchecked(call) }
    }

    fn accelerations_jerk(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Jerk { targets: targets.pos.len(), sources: sources.pos.len(), neighbours: false });
        self.inner_mut().accelerations_jerk(targets, sources, params, out, jerk)
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Jerk {
            targets: call.targets.pos.len(),
            sources: call.sources.pos.len(),
            neighbours: false,
        });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_jerk_unchecked(call) }
    }

    fn accelerations_jerk_neighbours(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        neighbours: &mut Neighbours<'_, T>,
    ) -> Result<(), Error> {
        self.before(&Call::Jerk { targets: targets.pos.len(), sources: sources.pos.len(), neighbours: true });
        self.inner_mut().accelerations_jerk_neighbours(targets, sources, params, out, jerk, neighbours)
    }

    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        self.before(&Call::Jerk { targets: call.targets.pos.len(), sources: call.sources.pos.len(), neighbours: true });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_jerk_neighbours_unchecked(call) }
    }

    fn accelerations_snap(
        &mut self,
        targets: Kinematics<'_, T>,
        sources: Kinematics<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        snap: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Snap { targets: targets.pos.len(), sources: sources.pos.len() });
        self.inner_mut().accelerations_snap(targets, sources, params, out, jerk, snap)
    }

    unsafe fn accelerations_snap_unchecked(&mut self, call: SnapCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Snap { targets: call.targets.pos.len(), sources: call.sources.pos.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_snap_unchecked(call) }
    }

    fn accelerations_tidal(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
        tidal: &mut [Tidal<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Tidal { targets: targets.len(), sources: sources.len() });
        self.inner_mut().accelerations_tidal(targets, sources, params, out, tidal)
    }

    unsafe fn accelerations_tidal_unchecked(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Tidal { targets: call.targets.len(), sources: call.sources.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_tidal_unchecked(call) }
    }

    fn vjp(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        cotangents: &[Field<T>],
        target_grads: &mut [Particle<T>],
        source_grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Vjp { targets: targets.len(), sources: sources.len() });
        self.inner_mut().vjp(targets, sources, params, cotangents, target_grads, source_grads)
    }

    unsafe fn vjp_unchecked(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Vjp { targets: call.targets.len(), sources: call.sources.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().vjp_unchecked(call) }
    }

    fn vjp_batch(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        cotangents: &[Field<T>],
        grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        self.before(&Call::VjpBatch { particles: particles.len(), list });
        self.inner_mut().vjp_batch(particles, list, params, cotangents, grads)
    }

    unsafe fn vjp_batch_unchecked(&mut self, call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::VjpBatch { particles: call.particles.len(), list: call.list });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().vjp_batch_unchecked(call) }
    }

    fn accelerations_batch(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Batch { particles: particles.len(), list });
        self.inner_mut().accelerations_batch(particles, list, params, out)
    }

    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Batch { particles: call.particles.len(), list: call.list });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_batch_unchecked(call) }
    }

    fn accelerations_cells(
        &mut self,
        targets: &[Particle<T>],
        cells: &[Cell<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Cells { targets: targets.len(), cells: cells.len() });
        self.inner_mut().accelerations_cells(targets, cells, params, out)
    }

    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Cells { targets: call.targets.len(), cells: call.cells.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_cells_unchecked(call) }
    }

    fn accelerations_batch_cells(
        &mut self,
        particles: &[Particle<T>],
        cells: &[Cell<T>],
        list: &LeafList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::BatchCells { particles: particles.len(), cells: cells.len(), list });
        self.inner_mut().accelerations_batch_cells(particles, cells, list, params, out)
    }

    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::BatchCells { particles: call.particles.len(), cells: call.cells.len(), list: call.list });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_batch_cells_unchecked(call) }
    }

    fn accelerations_per_particle(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        eps: PerParticle<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: targets.len(), sources: sources.len() });
        self.inner_mut().accelerations_per_particle(targets, sources, eps, params, out)
    }

    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: call.targets.len(), sources: call.sources.len() });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_per_particle_unchecked(call) }
    }

    fn accelerations_batch_per_particle(
        &mut self,
        particles: &[Particle<T>],
        eps: &[T],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.before(&Call::Batch { particles: particles.len(), list });
        self.inner_mut().accelerations_batch_per_particle(particles, eps, list, params, out)
    }

    unsafe fn accelerations_batch_per_particle_unchecked(
        &mut self,
        call: BatchPerParticleCall<'_, T>,
    ) -> Result<(), Error> {
        self.before(&Call::Batch { particles: call.particles.len(), list: call.list });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_batch_per_particle_unchecked(call) }
    }

    fn collective(&mut self) -> Option<&mut dyn crate::collective::Collective> {
        self.inner_mut().collective()
    }

    fn field_columns(
        &mut self,
        call: crate::columns::ColumnsCall<'_, T>,
        params: &Params<T>,
        acc: &mut [[T; 3]],
        phi: Option<&mut [T]>,
    ) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: call.targets_len(), sources: call.positions.len() });
        self.inner_mut().field_columns(call, params, acc, phi)
    }

    unsafe fn field_columns_device(
        &mut self,
        call: crate::columns::DeviceColumns,
        params: &Params<T>,
    ) -> Result<(), Error> {
        self.before(&Call::Accelerations { targets: call.targets_len(), sources: call.n });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().field_columns_device(call, params) }
    }

    unsafe fn accelerations_batch_cells_device(
        &mut self,
        call: crate::columns::DeviceColumns,
        cells: &[Cell<T>],
        list: &LeafList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        self.before(&Call::Batch { particles: call.n, list: &list.particles });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().accelerations_batch_cells_device(call, cells, list, params) }
    }

    unsafe fn vjp_device(&mut self, call: crate::columns::DeviceVjp, params: &Params<T>) -> Result<(), Error> {
        self.before(&Call::Vjp { targets: call.n, sources: call.n });
        // SAFETY: the same call, the same contract.
        unsafe { self.inner_mut().vjp_device(call, params) }
    }
}

/// `&mut E` is an executor wherever `E` is.
impl<E: ?Sized> Forward for &mut E {
    type Inner = E;
    fn inner(&self) -> &E {
        self
    }
    fn inner_mut(&mut self) -> &mut E {
        self
    }
}

/// A boxed executor (`Box<dyn Executor<T>>`, chosen at run time) is an executor.
#[cfg(feature = "alloc")]
impl<E: ?Sized> Forward for alloc::boxed::Box<E> {
    type Inner = E;
    fn inner(&self) -> &E {
        self
    }
    fn inner_mut(&mut self) -> &mut E {
        self
    }
}
