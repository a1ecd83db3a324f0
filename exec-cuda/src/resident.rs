//! Systems that never leave the GPU ([`Resident`] for [`CudaExecutor`]): kick and drift
//! are kernels, diagnostics are summed on the device, and only snapshots are copied back.

use crate::args::{StepArgs, SumsArgs};
use crate::device::cuda;
use crate::kernels::{Kernel, count};
use crate::memory::{alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal, SOURCE_PAD, SOURCES};
use cust::memory::DeviceBuffer;
use nbody_core::layout::{gather, scatter};
use nbody_core::resident::{ForeignSources, Owner, Resident};
use nbody_core::{Array, Error, Field, Params, Particle, Velocity, validate};

/// Positions, velocities and the last field of a system, all on the device.
///
/// On a mixed executor ([`crate::CudaMixedExecutor`]) a state of at least
/// [`crate::CudaExecutor::sorted_above`]'s square root particles (262,144 by default)
/// keeps them in Morton order, sorted on the device at upload and again every
/// [`DeviceState::resort_interval`] drifts as they move (or as
/// [`DeviceState::set_resort_every`] says), where the mixed kernels run compact source
/// tiles in plain float. Downloads give particles and fields back in the caller's order.
#[derive(Debug)]
pub struct DeviceState<T: DeviceReal> {
    pub(crate) pos: DeviceParticles<T>,
    vel: DeviceBuffer<u8>,
    pub(crate) field: DeviceFields<T>,
    pub(crate) fresh: bool,
    /// Whether the field held has potentials (an acceleration-only step leaves them out;
    /// a download that asks for them computes them then).
    potential: bool,
    /// Simulated time.
    pub time: f64,
    owner: Owner,
    /// The caller's index of each particle as stored, for a sorted state.
    order: Option<Vec<u32>>,
    drifts_since_sort: usize,
    resort_every: usize,
    /// A tree system's gravity ([`CudaExecutor::upload_tree_system`]); `None`: direct
    /// summation.
    pub(crate) tree: Option<Box<crate::tree_step::TreeGravity<T>>>,
}

impl<T: DeviceReal> DeviceState<T> {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The positions and masses, on the device (for
    /// [`CudaExecutor::project_resident`] and other resident calls), in the state's own
    /// order ([`DeviceState::order`]).
    pub fn positions(&self) -> &DeviceParticles<T> {
        &self.pos
    }

    /// For a state kept in Morton order (mixed kernels), the caller's index of each
    /// particle as stored on the device; `None` where the state keeps the caller's order.
    ///
    /// ```no_run
    /// use nbody_core::resident::Resident;
    /// let mut mixed = nbody_cuda::CudaMixedExecutor::new()?;
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(4096, 1);
    /// mixed.executor().set_sorted_above(0); // sort states of any size
    /// let state = mixed.executor().upload_state(&p, &v)?;
    /// assert_eq!(state.order().map(|o| o.len()), Some(4096));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn order(&self) -> Option<&[u32]> {
        self.order.as_deref()
    }

    /// Drifts between two Morton sorts of a sorted state: 2^21 / N, at least 1. A sort on
    /// the device (keys, CUB's sort, the gathers, the permutation down) costs a small
    /// fraction of a large state's force, while drifting particles lose their order within
    /// a few steps. Smaller N sort more rarely, as their sort's share of the force grows.
    ///
    /// ```
    /// assert_eq!(nbody_cuda::DeviceState::<f64>::resort_interval(1 << 20), 2);
    /// assert_eq!(nbody_cuda::DeviceState::<f64>::resort_interval(1 << 16), 32);
    /// ```
    pub fn resort_interval(n: usize) -> usize {
        ((1usize << 21) / n.max(1)).max(1)
    }

    /// Sorts a sorted state again every `drifts` drifts instead of
    /// [`DeviceState::resort_interval`]'s (`usize::MAX`: never again); no effect on a
    /// state kept in the caller's order.
    ///
    /// ```no_run
    /// use nbody_core::resident::Resident;
    /// let mut mixed = nbody_cuda::CudaMixedExecutor::new()?;
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(4096, 1);
    /// let mut state = mixed.executor().upload_state(&p, &v)?;
    /// state.set_resort_every(64);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn set_resort_every(&mut self, drifts: usize) {
        self.resort_every = drifts.max(1);
    }

    /// Drifts since a sorted state was last sorted (0 for a state kept in the caller's
    /// order): with [`DeviceState::order`], what [`CudaExecutor::upload_state_arranged`]
    /// needs to make the same state again.
    pub fn drifts_since_sort(&self) -> usize {
        self.drifts_since_sort
    }

    /// A tree system's gravity: its settings and what its forces did (`None` for a
    /// system whose field is direct summation's).
    pub fn tree(&self) -> Option<&crate::tree_step::TreeGravity<T>> {
        self.tree.as_deref()
    }

    /// [`DeviceState::tree`], to change its counters.
    pub fn tree_mut(&mut self) -> Option<&mut crate::tree_step::TreeGravity<T>> {
        self.tree.as_deref_mut()
    }
}

impl CudaExecutor {
    /// Uploads a state as [`DeviceState::order`] and [`DeviceState::drifts_since_sort`]
    /// described a saved one: a sorted state (mixed kernels) stores the particles in
    /// `order` (the caller's index of each stored particle) and sorts again when the
    /// saved state would have, so a checkpointed mixed leapfrog continues bit for bit.
    /// An executor that keeps the caller's order ignores both.
    ///
    /// ```no_run
    /// use nbody_core::resident::Resident;
    /// let mut mixed = nbody_cuda::CudaMixedExecutor::new()?;
    /// let gpu = mixed.executor();
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(4096, 1);
    /// gpu.set_sorted_above(0); // sort states of any size
    /// let state = gpu.upload_state(&p, &v)?;
    /// let order = state.order().unwrap().to_vec();
    /// let again = gpu.upload_state_arranged(&p, &v, &order, state.drifts_since_sort())?;
    /// assert_eq!(again.order(), state.order());
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn upload_state_arranged<T: DeviceReal>(
        &mut self,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        order: &[u32],
        drifts_since_sort: usize,
    ) -> Result<DeviceState<T>, Error> {
        if self.family::<T>() != crate::Family::Mixed {
            return self.upload_state(pos, vel);
        }
        validate::velocities(vel, pos.len(), Array::Velocities)?;
        validate::particles(pos, Array::Particles)?;
        let mut seen = vec![false; pos.len()];
        let permutation = order.len() == pos.len()
            && order.iter().all(|&i| (i as usize) < seen.len() && !std::mem::replace(&mut seen[i as usize], true));
        if !permutation {
            return Err(Error::InvalidParameter {
                name: "order",
                requirement: "a permutation of the particles' indices",
            });
        }
        self.upload_state_in(pos, vel, Some(order.to_vec()), drifts_since_sort)
    }

    /// Uploads `pos` and `vel` stored in `order` (the caller's index of each stored
    /// particle; `None`: as given).
    fn upload_state_in<T: DeviceReal>(
        &mut self,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
        order: Option<Vec<u32>>,
        drifts_since_sort: usize,
    ) -> Result<DeviceState<T>, Error> {
        let sorted = order.as_ref().map(|o| (gather(pos, o), gather(vel, o)));
        let (pos, vel) = sorted.as_ref().map_or((pos, vel), |(p, v)| (&p[..], &v[..]));
        let p = self.upload(pos)?;
        let bytes = p.padded_len() * size_of::<Velocity<T>>();
        let mut v = alloc(bytes)?;
        upload_padded(&mut v, bytemuck::cast_slice(vel), bytes)?;
        let field = self.zeroed_fields(pos.len())?;
        let resort_every = DeviceState::<T>::resort_interval(pos.len());
        Ok(DeviceState {
            pos: p,
            vel: v,
            field,
            fresh: false,
            potential: false,
            time: 0.0,
            owner: self.gpu.owner(),
            order,
            drifts_since_sort,
            resort_every,
            tree: None,
        })
    }

    /// Recomputes the field of `s` at its positions.
    fn force<T: DeviceReal>(&mut self, s: &mut DeviceState<T>, params: &Params<T>) -> Result<(), Error> {
        self.clear(&mut s.field)?;
        let p = params.with_overlap(nbody_core::Overlap::Identical);
        self.accelerations_resident(&s.pos, &s.pos, &p, &mut s.field)?;
        (s.fresh, s.potential) = (true, params.potential);
        Ok(())
    }

    pub(crate) fn kick_or_drift<T: DeviceReal>(
        &self,
        kernel: Kernel,
        a: &cust::memory::DeviceSlice<u8>,
        b: &cust::memory::DeviceSlice<u8>,
        n: usize,
        h: T,
    ) -> Result<(), Error> {
        let args = StepArgs { a: ptr(a), b: ptr(b), h, n: count(n)? };
        // SAFETY: both buffers hold at least n four-lane records of T.
        unsafe { self.launch(kernel, n.div_ceil(256) as u32, 256, args, "launching a kick or drift") }
    }

    /// Puts a sorted state back in Morton order of its current positions (they move
    /// apart as the system evolves), on the device: keys, CUB's sort, and gathers of the
    /// positions and velocities; only the permutation comes back, to compose the state's
    /// order. Only after a drift: the field is stale then, so only positions and
    /// velocities move.
    fn resort<T: DeviceReal>(&mut self, s: &mut DeviceState<T>) -> Result<(), Error> {
        let Some(order) = &s.order else { return Ok(()) };
        let step = self.morton_sort_in_place::<T>(ptr(&s.pos.buf), ptr(&s.vel), s.len())?;
        s.order = Some(step.iter().map(|&k| order[k as usize]).collect());
        s.drifts_since_sort = 0;
        Ok(())
    }

    /// Puts a sorted state in Morton order of its current positions now (it sorts itself
    /// every [`DeviceState::resort_interval`] drifts); the field is recomputed when next
    /// needed. No effect on a state kept in the caller's order. For callers that move
    /// particles by other means, and for timing the sort.
    ///
    /// ```no_run
    /// use nbody_core::resident::Resident;
    /// let mut gpu = nbody_cuda::CudaMixedExecutor::new()?.into_executor();
    /// gpu.set_sorted_above(0);
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(4096, 1);
    /// let mut state = gpu.upload_state(&p, &v)?;
    /// gpu.resort_state(&mut state)?;
    /// assert_eq!(state.drifts_since_sort(), 0);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn resort_state<T: DeviceReal>(&mut self, s: &mut DeviceState<T>) -> Result<(), Error> {
        self.own(s)?;
        if s.order.is_some() {
            s.fresh = false;
        }
        self.resort(s)
    }

    /// Copies the field `s` holds, whatever computed it (the tree's forces too), in the
    /// caller's order, once the kernels are done.
    pub(crate) fn download_held_field<T: DeviceReal>(
        &mut self,
        s: &DeviceState<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.own(s)?;
        validate::length("output", s.len(), out.len())?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        download_in_order(&s.field.buf, s.order(), out)
    }

    /// `f` on `state` with the field a download with `params` gives in its held field:
    /// the tree's own (its potential is the tree's, not direct summation's), or the
    /// direct field, computed first if stale. Where `params` asks for a potential the
    /// held field lacks, it is computed into other buffers for `f` only: the held field
    /// stays what the steps made it (the potential's kernel sums accelerations in
    /// another order), so a run's bits do not depend on when its diagnostics ran, and a
    /// resumed run matches an uninterrupted one.
    fn with_field<T: DeviceReal, R>(
        &mut self,
        state: &mut DeviceState<T>,
        params: &Params<T>,
        f: impl FnOnce(&mut Self, &DeviceState<T>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if state.tree.is_some() {
            if !state.fresh {
                self.tree_field(state, params)?;
            }
            return f(self, state);
        }
        let held = (state.fresh, state.potential);
        if !nbody_core::resident::field_aside(held.0, held.1, params) {
            if !state.fresh {
                self.force(state, params)?;
            }
            return f(self, state);
        }
        let aside = self.zeroed_fields(state.len())?;
        let kept = std::mem::replace(&mut state.field, aside);
        let got = self.force(state, params).and_then(|()| f(self, state));
        state.field = kept;
        (state.fresh, state.potential) = held;
        got
    }

    /// [`nbody_core::resident::system_sums`] of the positions, velocities and held field
    /// of `s`, on the device.
    fn held_sums<T: DeviceReal>(&mut self, s: &DeviceState<T>) -> Result<[f64; 12], Error> {
        let n = s.len();
        let mut sums = [0.0; 12];
        if n == 0 {
            return Ok(sums);
        }
        // A fixed number of rows for a given n (not the GPU's), so every device adds the
        // same way.
        let blocks = n.div_ceil(256).min(1024);
        let rows = self.scratch[crate::EXTRA_A].reserve(blocks * 12 * size_of::<f64>())?;
        let args = SumsArgs {
            pos: ptr(&s.pos.buf),
            vel: ptr(&s.vel),
            field: ptr(&s.field.buf),
            partial: ptr(rows),
            n: count(n)?,
        };
        // SAFETY: n records of T lanes in each of pos, vel and field; rows for 12 doubles
        // a block.
        unsafe { self.launch(Kernel::Sums { tag: T::FAMILY }, blocks as u32, 256, args, "launching the sums")? };
        let mut rows = vec![0.0f64; blocks * 12];
        self.sync_download(crate::EXTRA_A, &mut rows)?;
        for row in rows.chunks_exact(12) {
            sums.iter_mut().zip(row).for_each(|(s, r)| *s += r);
        }
        Ok(sums)
    }

    /// Makes this executor's context current and checks that it made `s`.
    fn own<T: DeviceReal>(&self, s: &DeviceState<T>) -> Result<(), Error> {
        self.gpu.owner().check(s.owner)?;
        self.gpu.make_current()
    }
}

/// A system that never leaves the GPU: kick and drift are kernels, the field is the
/// tiled kernel's, diagnostics are summed on the device ([`Resident::system_sums`]), and
/// only snapshots are copied back. The leapfrog step
/// is [`Resident::leapfrog_step`]'s.
///
/// ```no_run
/// use nbody_core::resident::Resident;
/// use nbody_core::{Params, Particle, Velocity};
/// let mut gpu = nbody_cuda::CudaExecutor::new()?;
/// let p = vec![Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let v = vec![Velocity::new(0.0f32, 0.0, 0.0); 2];
/// let mut state = gpu.upload_state(&p, &v)?;
/// gpu.leapfrog_step(&mut state, &Params::softened(0.01), 1.0 / 256.0)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
impl<T: DeviceReal> Resident<T> for CudaExecutor {
    type State = DeviceState<T>;

    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<DeviceState<T>, Error> {
        validate::velocities(vel, pos.len(), Array::Velocities)?;
        if !self.sorts::<T>(pos.len(), pos.len()) {
            return self.upload_state_in(pos, vel, None, 0);
        }
        // Checked before sorting, so an error names the caller's index.
        validate::particles(pos, Array::Particles)?;
        let mut state = self.upload_state_in(pos, vel, Some((0..pos.len() as u32).collect()), 0)?;
        self.resort(&mut state)?;
        Ok(state)
    }

    fn download_state(
        &mut self,
        state: &DeviceState<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.own(state)?;
        validate::length("positions", state.len(), pos.len())?;
        validate::length("velocities", state.len(), vel.len())?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        download_in_order(&state.pos.buf, state.order(), pos)?;
        download_in_order(&state.vel, state.order(), vel)
    }

    fn download_field(
        &mut self,
        state: &mut DeviceState<T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.own(state)?;
        validate::length("output", state.len(), out.len())?;
        self.with_field(state, params, |me, s| me.download_held_field(s, out))
    }

    /// Summed on the device: only a row of twelve doubles per block of 256 particles
    /// (at most 1,024 rows) crosses the bus, added on the host in block order (the same
    /// bits on every GPU and every call).
    fn system_sums(&mut self, state: &mut DeviceState<T>, params: &Params<T>) -> Result<[f64; 12], Error> {
        self.own(state)?;
        let params = Params { potential: true, ..*params };
        self.with_field(state, &params, |me, s| me.held_sums(s))
    }

    fn field_is_current(s: &DeviceState<T>) -> bool {
        s.fresh
    }

    fn compute_field(&mut self, s: &mut DeviceState<T>, params: &Params<T>) -> Result<(), Error> {
        self.own(s)?;
        if s.tree.is_some() { self.tree_field(s, params) } else { self.force(s, params) }
    }

    fn kick(&mut self, s: &mut DeviceState<T>, h: T) -> Result<(), Error> {
        self.own(s)?;
        self.kick_or_drift(Kernel::Kick { tag: T::FAMILY }, &s.vel, &s.field.buf, s.len(), h)
    }

    fn drift(&mut self, s: &mut DeviceState<T>, h: T) -> Result<(), Error> {
        self.own(s)?;
        self.kick_or_drift(Kernel::Drift { tag: T::FAMILY }, &s.pos.buf, &s.vel, s.len(), h)?;
        s.fresh = false;
        s.drifts_since_sort += 1;
        if s.order.is_some() && s.drifts_since_sort >= s.resort_every {
            self.resort(s)?;
        }
        Ok(())
    }

    fn len(s: &DeviceState<T>) -> usize {
        s.len()
    }

    fn time(s: &DeviceState<T>) -> f64 {
        s.time
    }

    fn set_time(s: &mut DeviceState<T>, t: f64) {
        s.time = t;
    }
}

/// Another process's sources against a state's targets on the device (an MPI rank's
/// resident ring, `nbody_mpi`): the state's positions go down once per field, each
/// foreign slice goes up into scratch and its kernel is queued behind the last, so the
/// caller's message passing runs while the GPU computes.
///
/// ```no_run
/// use nbody_core::resident::{ForeignSources, Resident};
/// use nbody_core::{Field, Params};
/// let mut gpu = nbody_cuda::CudaExecutor::new()?;
/// let (p, v) = nbody_integrators::ics::plummer::<f32>(4096, 1);
/// let mut state = gpu.upload_state(&p[..2048], &v[..2048])?;
/// let params = Params::softened(0.01f32);
/// gpu.compute_field(&mut state, &params)?;
/// gpu.add_pull(&mut state, &p[2048..], &params)?; // the other half's pull
/// let mut out = vec![Field::zero(); 2048];
/// gpu.download_field(&mut state, &params, &mut out)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
impl<T: DeviceReal> ForeignSources<T> for CudaExecutor {
    fn download_sources(&mut self, s: &DeviceState<T>, out: &mut [Particle<T>]) -> Result<(), Error> {
        self.own(s)?;
        validate::length("sources", s.len(), out.len())?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        download(&s.pos.buf, bytemuck::cast_slice_mut(out))
    }

    fn add_pull(&mut self, s: &mut DeviceState<T>, sources: &[Particle<T>], params: &Params<T>) -> Result<(), Error> {
        self.own(s)?;
        let was_fresh = std::mem::replace(&mut s.fresh, false);
        validate::foreign_pull(was_fresh)?;
        validate::params(params)?;
        validate::particles(sources, Array::Sources)?;
        self.check_mixed_extent::<T>(&[], sources)?;
        if sources.is_empty() || s.is_empty() {
            s.fresh = was_fresh;
            return Ok(());
        }
        // The held field's kind: a potential is added only where the own pull had one.
        let params = Params { potential: s.potential, ..params.with_overlap(nbody_core::Overlap::Disjoint) };
        let padded = sources.len().next_multiple_of(SOURCE_PAD);
        let (targets, field) = (&s.pos.buf, &s.field.buf);
        self.guarded(|me| {
            let bytes = padded * size_of::<Particle<T>>();
            // The copy waits for the kernel still reading the last slice (the stream is a
            // blocking one, so the synchronous copy is ordered after it).
            upload_padded(me.scratch[SOURCES].reserve(bytes)?, bytemuck::cast_slice(sources), bytes)?;
            let config = me.config_for::<T>(s.pos.len(), sources.len(), &params)?;
            let src = me.scratch[SOURCES].buf_ref().ok_or(Error::NoDevice)?;
            me.launch_tiled(config, targets, s.pos.len(), src, padded, field, &params)
        })?;
        s.fresh = true;
        Ok(())
    }
}

/// Copies `out.len()` records from the device into `out`, through `order` (the caller's
/// index of each stored record) where the state is sorted.
fn download_in_order<R: bytemuck::Pod>(
    src: &cust::memory::DeviceSlice<u8>,
    order: Option<&[u32]>,
    out: &mut [R],
) -> Result<(), Error> {
    match order {
        None => download(src, bytemuck::cast_slice_mut(out)),
        Some(order) => {
            let mut stored = out.to_vec();
            download(src, bytemuck::cast_slice_mut(&mut stored))?;
            scatter(&stored, order, out);
            Ok(())
        }
    }
}
