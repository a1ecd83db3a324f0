//! Several devices in one process (Miki et al. 2013, section 3): [`MultiDevice`]
//! composes one [`CudaExecutor`] per device (each with its own context, streams and
//! scratch), splits the targets among them (equally among identical devices, else in
//! proportion to their measured rates), and
//! runs them concurrently, one host thread per device. [`MultiState`] keeps a system on
//! the devices across steps: each device owns a slice, kicks and drifts it, and the
//! slices are exchanged device to device (peer copies where the devices allow them,
//! staged through pinned host memory where they do not) while each device already
//! computes the force of the sources it holds.

use crate::device::cuda;
use crate::kernels::Kernel;
use crate::memory::{alloc, download, upload_padded};
use crate::pipeline::Marker;
use crate::{CudaExecutor, DeviceFields, DeviceReal, SOURCE_PAD};
use cust::memory::{CopyDestination, DeviceBuffer, LockedBuffer};
use nbody_core::calls::{BatchCall, BatchCellsCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall};
use nbody_core::neighbours::{Neighbours, Within};
use nbody_core::projection::Projection;
use nbody_core::resident::{Owner, Resident};
use nbody_core::{
    Array, Bodies, Error, Executor, Field, InteractionList, LeafList, Overlap, Pair, Params, Particle, Span, Velocity,
    validate,
};
use std::ops::Range;

/// Which device pairs can read each other's memory directly (peer access).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAccess {
    /// The device ordinals, in the order of the matrix.
    pub devices: Vec<u32>,
    /// `can[a][b]`: device `devices[a]` can access `devices[b]`'s memory.
    pub can: Vec<Vec<bool>>,
}

impl PeerAccess {
    /// Asks the driver about every pair of `devices` (the same ordinal twice counts as
    /// access: one device reads its own memory).
    pub fn probe(devices: &[u32]) -> Result<Self, Error> {
        crate::device::count()?;
        let mut can = vec![vec![false; devices.len()]; devices.len()];
        for (a, &da) in devices.iter().enumerate() {
            for (b, &db) in devices.iter().enumerate() {
                can[a][b] = da == db || {
                    let (x, y) = (raw_device(da)?, raw_device(db)?);
                    let mut v = 0i32;
                    // SAFETY: both device handles come from the driver; v is written.
                    let r = unsafe { cust::sys::cuDeviceCanAccessPeer(&mut v, x, y) };
                    check(r, da, "asking about peer access")?;
                    v != 0
                };
            }
        }
        Ok(Self { devices: devices.to_vec(), can })
    }

    /// True when every pair of distinct devices has access both ways.
    pub fn all(&self) -> bool {
        self.can.iter().all(|row| row.iter().all(|&c| c))
    }
}

fn raw_device(ordinal: u32) -> Result<cust::sys::CUdevice, Error> {
    cust::device::Device::get_device(ordinal).map(|d| d.as_raw()).map_err(|_| Error::OnDevice {
        ordinal,
        during: "opening the device (no such ordinal)",
        code: 101,
    })
}

fn check(r: cust::sys::CUresult, ordinal: u32, during: &'static str) -> Result<(), Error> {
    crate::pipeline::driver(r, during).map_err(on_device(ordinal))
}

/// An error of one device, named by its ordinal.
fn on_device(ordinal: u32) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::Device { during, code } => Error::OnDevice { ordinal, during, code },
        Error::OutOfMemory { .. } => Error::OnDevice { ordinal, during: "allocating device memory", code: 2 },
        Error::NoDevice => Error::OnDevice { ordinal, during: "using the device", code: 100 },
        other => other,
    }
}

/// One device of a [`MultiDevice`].
struct Lane {
    ordinal: u32,
    exec: CudaExecutor,
}

/// The executor over several devices. Built from a list of device ordinals (all
/// visible devices by default; `CUDA_VISIBLE_DEVICES` applies); the same ordinal may
/// appear more than once, giving several executors (streams, scratch) on one GPU, which
/// is how the splitting and merging are tested on a machine with one GPU. Lanes on one
/// ordinal share that device's primary context.
///
/// Every host-slice entry point splits the targets (batched lists: the pairs; density
/// maps: the particles) among the devices by their weights, runs the pieces
/// concurrently, and writes the caller's output only once every device has succeeded:
/// a device that fails gives [`Error::OnDevice`] naming it, the output is untouched,
/// and the executor stays usable. With one device the calls go straight to it.
///
/// ```no_run
/// use nbody_core::{Executor, Field, Params};
/// let mut gpus = nbody_cuda::MultiDevice::new()?; // every visible device
/// let (bodies, _) = nbody_integrators::ics::plummer::<f32>(1 << 18, 1);
/// let mut field = vec![Field::zero(); bodies.len()];
/// gpus.accelerations(&bodies, &bodies, &Params::softened(0.01).with_overlap_identical(), &mut field)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub struct MultiDevice {
    lanes: Vec<Lane>,
    weights: Vec<f64>,
    peer: PeerAccess,
    /// Test hook: exchange through pinned host memory even where peer copies work.
    staged: bool,
    /// Stamps the resident systems this executor makes.
    owner: Owner,
}

impl std::fmt::Debug for MultiDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiDevice").field("devices", &self.devices()).field("weights", &self.weights).finish()
    }
}

/// Rates within this fraction of each other count as equal devices: equal shares, so
/// that noise in the calibration does not unbalance identical GPUs.
const EQUAL_RATES: f64 = 0.05;

impl MultiDevice {
    /// Every visible device (shares as [`MultiDevice::on_devices`] gives them).
    pub fn new() -> Result<Self, Error> {
        let n = crate::device::count()?;
        if n == 0 {
            return Err(Error::NoDevice);
        }
        Self::on_devices(&(0..n).collect::<Vec<_>>())
    }

    /// The devices `ordinals` (repeats allowed): equal shares where the devices are
    /// identical (same model, SMs, clock and memory; runs are then reproducible), else
    /// weighted by measured rate ([`MultiDevice::calibrate`]). An ordinal the driver
    /// does not have is an error here, not at the first call.
    pub fn on_devices(ordinals: &[u32]) -> Result<Self, Error> {
        if ordinals.is_empty() {
            return Err(Error::InvalidParameter { name: "devices", requirement: "at least one device ordinal" });
        }
        let visible = crate::device::count()?;
        let mut lanes = Vec::with_capacity(ordinals.len());
        for &ordinal in ordinals {
            if ordinal >= visible {
                return Err(Error::OnDevice { ordinal, during: "opening the device (no such ordinal)", code: 101 });
            }
            lanes.push(Lane { ordinal, exec: CudaExecutor::on_device(ordinal).map_err(on_device(ordinal))? });
        }
        let peer = PeerAccess::probe(ordinals)?;
        let weights = vec![1.0 / ordinals.len() as f64; ordinals.len()];
        let mut me = Self { weights, lanes, peer, staged: false, owner: Owner::new() };
        me.enable_peer_access()?;
        // Identical devices share equally without timing them: a timing's noise would
        // otherwise give two processes different shares, and so sums in a different
        // order (each lane's launch shape follows its share), and runs that are not
        // reproducible.
        let first = me.lanes[0].exec.info().clone();
        if me.lanes.iter().any(|l| *l.exec.info() != first) {
            me.calibrate()?;
        }
        Ok(me)
    }

    /// Shares of the targets per device, in device order (normalised to sum to 1).
    pub fn with_weights(mut self, weights: &[f64]) -> Result<Self, Error> {
        self.set_weights(weights)?;
        Ok(self)
    }

    /// Sets the shares of the targets per device (as [`MultiDevice::with_weights`]);
    /// weights that already sum to 1 (within 1e-12, as [`MultiDevice::weights`] gives
    /// them) are kept bit for bit, so a checkpointed run splits its particles again
    /// exactly as before (its sums then run in the same order).
    ///
    /// ```no_run
    /// let mut gpus = nbody_cuda::MultiDevice::on_devices(&[0, 0])?;
    /// let saved = gpus.weights().to_vec();
    /// gpus.set_weights(&saved)?;
    /// assert_eq!(gpus.weights(), &saved[..]);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn set_weights(&mut self, weights: &[f64]) -> Result<(), Error> {
        let total: f64 = weights.iter().sum();
        if weights.len() != self.lanes.len() || weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || total <= 0.0 {
            return Err(Error::InvalidParameter {
                name: "weights",
                requirement: "one finite non-negative weight per device, not all zero",
            });
        }
        self.weights =
            if (total - 1.0).abs() <= 1e-12 { weights.to_vec() } else { weights.iter().map(|w| w / total).collect() };
        Ok(())
    }

    /// Times each device alone on the same call (f32, 32,768 x 32,768) and sets the
    /// weights in proportion to the rates (equal when they agree within 5%). Returns
    /// the rates in interactions per second.
    pub fn calibrate(&mut self) -> Result<Vec<f64>, Error> {
        let n = 32_768;
        let ps = synthetic(n);
        let params = Params::softened(0.01f32).with_overlap_identical();
        let mut rates = Vec::new();
        for lane in &mut self.lanes {
            let mut out = vec![Field::zero(); n];
            let run = |e: &mut CudaExecutor, out: &mut [Field<f32>]| e.accelerations(&ps, &ps, &params, out);
            run(&mut lane.exec, &mut out).map_err(on_device(lane.ordinal))?;
            let start = std::time::Instant::now();
            run(&mut lane.exec, &mut out).map_err(on_device(lane.ordinal))?;
            rates.push((n * n) as f64 / start.elapsed().as_secs_f64());
        }
        let (lo, hi) = rates.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let total: f64 = rates.iter().sum();
        self.weights = if hi <= lo * (1.0 + EQUAL_RATES) {
            vec![1.0 / rates.len() as f64; rates.len()]
        } else {
            rates.iter().map(|r| r / total).collect()
        };
        Ok(rates)
    }

    /// The device ordinals, one per lane.
    pub fn devices(&self) -> Vec<u32> {
        self.lanes.iter().map(|l| l.ordinal).collect()
    }

    /// The share of the targets each device takes.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Which device pairs have peer access (enabled where they do).
    pub fn peer_access(&self) -> &PeerAccess {
        &self.peer
    }

    /// The single-device executors, in lane order (for their resident entry points).
    pub fn executors(&mut self) -> impl Iterator<Item = &mut CudaExecutor> {
        self.lanes.iter_mut().map(|l| &mut l.exec)
    }

    /// Waits until every device has finished what was queued on it.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.lanes.iter().try_for_each(|l| l.exec.synchronize().map_err(on_device(l.ordinal)))
    }

    /// Sends every exchange of [`MultiDevice::leapfrog_step`] through pinned host
    /// memory, as between devices without peer access (so that path is tested on
    /// machines whose devices all have it).
    #[cfg(feature = "testing")]
    pub fn force_staged_exchange(&mut self, on: bool) {
        self.staged = on;
    }

    /// Makes lane `lane`'s next tiled launch fail in the driver (see
    /// [`CudaExecutor::fail_next_launch`]).
    #[cfg(feature = "testing")]
    pub fn fail_next_launch_on(&mut self, lane: usize) {
        self.lanes[lane].exec.fail_next_launch();
    }

    fn enable_peer_access(&mut self) -> Result<(), Error> {
        for a in 0..self.lanes.len() {
            for b in 0..self.lanes.len() {
                let (la, lb) = (&self.lanes[a], &self.lanes[b]);
                if la.ordinal == lb.ordinal || !self.peer.can[a][b] {
                    continue;
                }
                la.exec.gpu.make_current().map_err(on_device(la.ordinal))?;
                // SAFETY: both contexts are live; enabling twice reports
                // PEER_ACCESS_ALREADY_ENABLED, which is fine.
                let r = unsafe { cust::sys::cuCtxEnablePeerAccess(lb.exec.gpu.context().as_raw(), 0) };
                if r != cust::sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    check(r, la.ordinal, "enabling peer access")?;
                }
            }
        }
        Ok(())
    }

    /// `n` items cut into one contiguous range per lane, by weight.
    /// Each device a share of the targets (`out`'s indices, split by weight): `call`
    /// adds a share's field into its copy of that share of `out`, and the shares are
    /// written back once every device has succeeded.
    fn by_targets<T: DeviceReal>(
        &mut self,
        out: &mut [Field<T>],
        call: impl Fn(Range<usize>, &mut CudaExecutor, &mut [Field<T>]) -> Result<(), Error> + Sync,
    ) -> Result<(), Error> {
        let pieces = self.split(out.len());
        let current: &[Field<T>] = out;
        let parts = self.each(|k, exec| {
            let mut part = current[pieces[k].clone()].to_vec();
            call(pieces[k].clone(), exec, &mut part)?;
            Ok(part)
        })?;
        for (r, part) in pieces.iter().zip(parts) {
            out[r.clone()].copy_from_slice(&part);
        }
        Ok(())
    }

    fn split(&self, n: usize) -> Vec<Range<usize>> {
        let mut edges = vec![0usize];
        let mut acc = 0.0;
        for w in &self.weights {
            acc += w;
            edges.push(((acc * n as f64).round() as usize).min(n));
        }
        *edges.last_mut().expect("one edge per lane and one more") = n;
        edges.windows(2).map(|w| w[0]..w[1].max(w[0])).collect()
    }

    /// Runs `task(lane index, executor)` on every lane at once, one host thread each;
    /// the first error, named by its device.
    fn each<R: Send>(
        &mut self,
        task: impl Fn(usize, &mut CudaExecutor) -> Result<R, Error> + Sync,
    ) -> Result<Vec<R>, Error> {
        let task = &task;
        let results: Vec<Result<R, Error>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .lanes
                .iter_mut()
                .enumerate()
                .map(|(k, lane)| scope.spawn(move || task(k, &mut lane.exec).map_err(on_device(lane.ordinal))))
                .collect();
            handles.into_iter().map(|h| h.join().expect("a device thread panicked")).collect()
        });
        results.into_iter().collect()
    }
}

/// Reproducible scattered particles for calibration.
fn synthetic(n: usize) -> Vec<Particle<f32>> {
    (0..n as u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let c = |s: u32| ((h >> s) & 0xffff) as f32 / 32_768.0 - 1.0;
            Particle::new(c(0), c(16), c(32), 1.0 / n as f32)
        })
        .collect()
}

impl<T: DeviceReal> Executor<T> for MultiDevice {
    fn name(&self) -> &'static str {
        "cuda-multi"
    }

    /// Each device's, but the columns (taken by a single device only).
    fn capabilities(&self) -> nbody_core::capabilities::Capabilities {
        use nbody_core::capabilities::Entry;
        Executor::<T>::capabilities(&self.lanes[0].exec).map(|_, entries| entries.without(Entry::Columns))
    }

    /// Each lane takes a run of the targets through its own door (a lane's run may be
    /// empty); one lane is called directly.
    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r = unsafe { self.lanes[0].exec.accelerations_unchecked(DirectCall { targets, sources, params, out }) };
            return r.map_err(on_device(ordinal));
        }
        let pieces = self.split(targets.len());
        let n = targets.len();
        let results = self.each(|k, exec| {
            let r = pieces[k].clone();
            let mut piece = out[r.clone()].to_vec();
            let p = params.with_overlap(params.overlap.restrict_targets(n, r.clone()));
            exec.accelerations(&targets[r], sources, &p, &mut piece)?;
            Ok(piece)
        })?;
        for (r, piece) in pieces.iter().zip(results) {
            out[r.clone()].copy_from_slice(&piece);
        }
        Ok(())
    }

    /// As [`Executor::accelerations_unchecked`].
    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r = unsafe {
                self.lanes[0].exec.accelerations_jerk_unchecked(JerkCall { targets, sources, params, out, jerk })
            };
            return r.map_err(on_device(ordinal));
        }
        let n = targets.pos.len();
        let pieces = self.split(n);
        let results = self.each(|k, exec| {
            let r = pieces[k].clone();
            let (mut piece, mut jpiece) = (out[r.clone()].to_vec(), jerk[r.clone()].to_vec());
            let p = params.with_overlap(params.overlap.restrict_targets(n, r.clone()));
            let t = Bodies { pos: &targets.pos[r.clone()], vel: &targets.vel[r] };
            exec.accelerations_jerk(t, sources, &p, &mut piece, &mut jpiece)?;
            Ok((piece, jpiece))
        })?;
        for (r, (piece, jpiece)) in pieces.iter().zip(results) {
            out[r.clone()].copy_from_slice(&piece);
            jerk[r.clone()].copy_from_slice(&jpiece);
        }
        Ok(())
    }

    /// As [`Executor::accelerations_jerk_unchecked`], each device finding its targets'
    /// neighbours in its own force pass (on copies of its share of the buffers).
    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r = unsafe { self.lanes[0].exec.accelerations_jerk_neighbours_unchecked(call) };
            return r.map_err(on_device(ordinal));
        }
        let NeighboursCall { targets, sources, params, out, jerk, neighbours } = call;
        let n = targets.pos.len();
        let pieces = self.split(n);
        let offset = neighbours.index_offset;
        let (nearest, within) = (&*neighbours.nearest, neighbours.within.as_ref());
        let results = self.each(|k, exec| {
            let r = pieces[k].clone();
            let (mut piece, mut jpiece) = (out[r.clone()].to_vec(), jerk[r.clone()].to_vec());
            let mut near = nearest[r.clone()].to_vec();
            let mut lists = within
                .map(|w| (w.counts[r.clone()].to_vec(), w.indices[r.start * w.capacity..r.end * w.capacity].to_vec()));
            let mut mine = Neighbours {
                nearest: &mut near,
                within: match (&mut lists, within) {
                    (Some((counts, indices)), Some(w)) => {
                        Some(Within { radius2: &w.radius2[r.clone()], capacity: w.capacity, indices, counts })
                    }
                    _ => None,
                },
                index_offset: offset,
            };
            let p = params.with_overlap(params.overlap.restrict_targets(n, r.clone()));
            let t = Bodies { pos: &targets.pos[r.clone()], vel: &targets.vel[r] };
            exec.accelerations_jerk_neighbours(t, sources, &p, &mut piece, &mut jpiece, &mut mine)?;
            Ok((piece, jpiece, near, lists))
        })?;
        for (r, (piece, jpiece, near, lists)) in pieces.iter().zip(results) {
            out[r.clone()].copy_from_slice(&piece);
            jerk[r.clone()].copy_from_slice(&jpiece);
            neighbours.nearest[r.clone()].copy_from_slice(&near);
            if let (Some(w), Some((counts, indices))) = (neighbours.within.as_mut(), lists) {
                w.counts[r.clone()].copy_from_slice(&counts);
                w.indices[r.start * w.capacity..r.end * w.capacity].copy_from_slice(&indices);
            }
        }
        Ok(())
    }

    /// Pairs are dealt to the devices in contiguous runs of about equal interaction
    /// counts (by weight); each device runs its pairs over the whole particle array and
    /// the outputs are summed.
    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        let no_cells = vec![Span::new(0, 0); list.pairs.len()];
        let leaves = LeafList { particles: *list, cells: &no_cells, cell_spans: &[] };
        // SAFETY: the same contract (a list with no cells is valid against no cells).
        unsafe {
            self.accelerations_batch_cells_unchecked(BatchCellsCall {
                particles,
                cells: &[],
                list: &leaves,
                params,
                out,
            })
        }
    }

    /// One device: its own call. Several: each cell call on the device a share of the
    /// targets, as in the plain calls.
    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        let CellsCall { targets, cells, params, out } = call;
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r =
                unsafe { self.lanes[0].exec.accelerations_cells_unchecked(CellsCall { targets, cells, params, out }) };
            return r.map_err(on_device(ordinal));
        }
        self.by_targets(out, |r, exec, part| exec.accelerations_cells(&targets[r], cells, params, part))
    }

    /// One device: its own call. Several: each device a share of the targets with
    /// their lengths, against every source.
    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r = unsafe {
                self.lanes[0].exec.accelerations_per_particle_unchecked(PerParticleCall {
                    targets,
                    sources,
                    eps,
                    params,
                    out,
                })
            };
            return r.map_err(on_device(ordinal));
        }
        self.by_targets(out, |r, exec, part| {
            let p = params.with_overlap(params.overlap.restrict_targets(targets.len(), r.clone()));
            let mine = nbody_core::PerParticle { targets: &eps.targets[r.clone()], sources: eps.sources };
            exec.accelerations_per_particle(&targets[r], sources, mine, &p, part)
        })
    }

    /// Pairs (with their particle and cell spans) are dealt as in the batched call.
    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        let BatchCellsCall { particles, cells, list, params, out } = call;
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            // SAFETY: the same call, the same contract.
            let r = unsafe {
                self.lanes[0].exec.accelerations_batch_cells_unchecked(BatchCellsCall {
                    particles,
                    cells,
                    list,
                    params,
                    out,
                })
            };
            return r.map_err(on_device(ordinal));
        }
        let span_sum = |spans: &[Span]| spans.iter().map(|s| s.len()).sum::<usize>();
        let work: Vec<usize> = (0..list.particles.pairs.len())
            .map(|k| {
                let p = &list.particles.pairs[k];
                // A cell interaction costs about two particle interactions.
                p.targets.len() * (span_sum(list.particles.sources_of(p)) + 2 * span_sum(list.cells_of(k)))
            })
            .collect();
        let total: usize = work.iter().sum();
        let mut runs: Vec<(Vec<Pair>, Vec<Span>)> = vec![(Vec::new(), Vec::new()); self.lanes.len()];
        let (mut lane, mut done, mut bound) = (0, 0usize, self.weights[0] * total as f64);
        for (k, w) in work.iter().enumerate() {
            while lane + 1 < runs.len() && done as f64 >= bound {
                lane += 1;
                bound += self.weights[lane] * total as f64;
            }
            runs[lane].0.push(list.particles.pairs[k]);
            runs[lane].1.push(list.cells[k]);
            done += w;
        }
        let parts = self.each(|k, exec| {
            let mine = LeafList {
                particles: InteractionList { pairs: &runs[k].0, source_spans: list.particles.source_spans },
                cells: &runs[k].1,
                cell_spans: list.cell_spans,
            };
            let mut part = vec![Field::zero(); particles.len()];
            exec.accelerations_batch_cells(particles, cells, &mine, params, &mut part)?;
            Ok(part)
        })?;
        parts.iter().for_each(|part| nbody_core::kernel::add_fields(out, part, params.potential));
        Ok(())
    }
}

impl<T: DeviceReal> nbody_core::projection::Project<T> for MultiDevice {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        if self.lanes.len() == 1 {
            let ordinal = self.lanes[0].ordinal;
            return self.lanes[0].exec.project(particles, projection, grid).map_err(on_device(ordinal));
        }
        projection.validate(grid.len())?;
        validate::particles(particles, Array::Particles)?;
        let pieces = self.split(particles.len());
        let grids = self.each(|k, exec| {
            let mut g = vec![0.0; grid.len()];
            exec.project(&particles[pieces[k].clone()], projection, &mut g)?;
            Ok(g)
        })?;
        for g in grids {
            grid.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
        }
        Ok(())
    }
}

/// One lane's part of a [`MultiState`].
#[derive(Debug)]
struct Part<T: DeviceReal> {
    /// This lane's particles (indices into the system).
    own: Range<usize>,
    /// Every lane's positions, each region padded with massless particles to a
    /// multiple of [`SOURCE_PAD`] (region `k` at `offsets[k]`).
    all: DeviceBuffer<u8>,
    vel: DeviceBuffer<u8>,
    field: DeviceFields<T>,
    /// Pinned staging for exchanges without peer access.
    staging: Option<LockedBuffer<u8>>,
}

/// A system spread over the devices of a [`MultiDevice`]: each device owns a
/// contiguous slice of the particles (positions, velocities, field) and holds a copy of
/// every other device's positions, refreshed after each drift.
#[derive(Debug)]
pub struct MultiState<T: DeviceReal> {
    parts: Vec<Part<T>>,
    /// Region offsets (in particles) in every lane's `all` buffer.
    offsets: Vec<usize>,
    padded: Vec<usize>,
    n: usize,
    fresh: bool,
    /// Whether the field held has potentials.
    potential: bool,
    /// A drift since the last field: the positions must be exchanged first.
    drifted: bool,
    /// Simulated time.
    pub time: f64,
    owner: Owner,
    _t: std::marker::PhantomData<T>,
}

impl<T: DeviceReal> MultiState<T> {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Which particles each device owns.
    pub fn slices(&self) -> Vec<Range<usize>> {
        self.parts.iter().map(|p| p.own.clone()).collect()
    }
}

fn bytes_of<R>(n: usize) -> usize {
    n * std::mem::size_of::<R>()
}

impl MultiDevice {
    /// Density map of the resident particles: each device deposits its own slice.
    pub fn project_resident<T: DeviceReal>(
        &mut self,
        state: &MultiState<T>,
        projection: &Projection,
        grid: &mut [f64],
    ) -> Result<(), Error> {
        self.owner.check(state.owner)?;
        projection.validate(grid.len())?;
        let mut total = vec![0.0; grid.len()];
        for (k, (lane, part)) in self.lanes.iter_mut().zip(&state.parts).enumerate() {
            let at = bytes_of::<Particle<T>>(state.offsets[k]);
            let p = crate::memory::ptr(&part.all.index(at..at + bytes_of::<Particle<T>>(state.padded[k])));
            let n = part.own.len();
            let mut g = vec![0.0; grid.len()];
            lane.exec
                .guarded(|me| {
                    me.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
                    me.launch_project::<T>(p, n, projection, &mut g)
                })
                .map_err(on_device(lane.ordinal))?;
            total.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
        }
        grid.iter_mut().zip(&total).for_each(|(a, b)| *a += b);
        Ok(())
    }

    /// The force on every device's own particles from all particles: the own region
    /// first, then each other region once it has arrived (`arrived[b][a]`).
    fn force_after<T: DeviceReal>(
        &mut self,
        s: &mut MultiState<T>,
        params: &Params<T>,
        arrived: Option<&[Vec<Option<Marker>>]>,
    ) -> Result<(), Error> {
        let psize = std::mem::size_of::<Particle<T>>();
        for (b, (lane, part)) in self.lanes.iter_mut().zip(&mut s.parts).enumerate() {
            let exec = &mut lane.exec;
            let run = |exec: &mut CudaExecutor| -> Result<(), Error> {
                exec.gpu.make_current()?;
                let nb = part.own.len();
                let fbytes = bytes_of::<Field<T>>(nb.max(1));
                // SAFETY: the field buffer holds at least fbytes; the memset is ordered
                // on this lane's stream before its kernels.
                let r = unsafe {
                    cust::sys::cuMemsetD8Async(
                        part.field.buf.as_device_ptr().as_raw(),
                        0,
                        fbytes,
                        exec.gpu.stream().as_inner(),
                    )
                };
                crate::pipeline::driver(r, "clearing the field")?;
                if nb == 0 {
                    return Ok(());
                }
                let config = exec.config_for::<T>(nb, s.n, params)?;
                let region = |k: usize| {
                    let at = s.offsets[k] * psize;
                    part.all.index(at..at + s.padded[k] * psize)
                };
                let own = region(b);
                let p = params.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: nb });
                exec.launch_tiled(config, &own, nb, &own, s.padded[b], &part.field.buf, &p)?;
                let disjoint = params.with_overlap(Overlap::Disjoint);
                for a in (0..s.offsets.len()).filter(|&a| a != b && s.padded[a] > 0) {
                    if let Some(ev) = arrived.and_then(|m| m[b][a].as_ref()) {
                        ev.block(exec.gpu.stream())?;
                    }
                    exec.launch_tiled(config, &own, nb, &region(a), s.padded[a], &part.field.buf, &disjoint)?;
                }
                Ok(())
            };
            run(exec).map_err(on_device(lane.ordinal))?;
        }
        (s.fresh, s.potential) = (true, params.potential);
        Ok(())
    }

    /// Recomputes the field of the resident system on every device (queued; a
    /// download or [`MultiDevice::synchronize`] waits for it).
    pub fn force<T: DeviceReal>(&mut self, s: &mut MultiState<T>, params: &Params<T>) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        validate::params(params)?;
        self.force_after(s, params, None)
    }

    /// Sends every lane's own positions to every other lane: peer copies where allowed
    /// (and within one device), else through pinned host memory. Returns, per receiving
    /// lane `b` and sending lane `a`, the event that marks the arrival.
    fn exchange<T: DeviceReal>(&mut self, s: &mut MultiState<T>) -> Result<Vec<Vec<Option<Marker>>>, Error> {
        let psize = std::mem::size_of::<Particle<T>>();
        let p = self.lanes.len();
        // Each lane's drift, marked on its stream.
        let mut drifted = Vec::with_capacity(p);
        for lane in &self.lanes {
            lane.exec.gpu.make_current().map_err(on_device(lane.ordinal))?;
            let ev = Marker::new().map_err(on_device(lane.ordinal))?;
            ev.record(lane.exec.gpu.stream()).map_err(on_device(lane.ordinal))?;
            drifted.push(ev);
        }
        let mut arrived: Vec<Vec<Option<Marker>>> = (0..p).map(|_| (0..p).map(|_| None).collect()).collect();
        for a in 0..p {
            let len = s.parts[a].own.len();
            if len == 0 {
                continue;
            }
            let bytes = len * psize;
            let at = s.offsets[a] * psize;
            let direct: Vec<bool> = (0..p)
                .map(|b| !self.staged && (self.lanes[a].ordinal == self.lanes[b].ordinal || self.peer.can[b][a]))
                .collect();
            if direct.iter().enumerate().any(|(b, &d)| b != a && !d) {
                // Staged: the sender's slice to pinned host memory once.
                let lane = &self.lanes[a];
                let mut stage = || -> Result<(), Error> {
                    lane.exec.gpu.make_current()?;
                    drifted[a].synchronize()?;
                    let part = &mut s.parts[a];
                    if part.staging.as_ref().is_none_or(|h| h.len() < bytes) {
                        part.staging = None;
                        // SAFETY: u8 has no invalid values; every byte sent is written first.
                        part.staging = Some(
                            unsafe { LockedBuffer::uninitialized(bytes) }.map_err(cuda("allocating pinned memory"))?,
                        );
                    }
                    let host = &mut part.staging.as_mut().expect("allocated above").as_mut_slice()[..bytes];
                    download(&part.all.index(at..at + bytes), host)
                };
                stage().map_err(on_device(lane.ordinal))?;
            }
            for b in (0..p).filter(|&b| b != a) {
                let (src_ctx, dst) = (&self.lanes[a].exec.gpu.context(), &self.lanes[b]);
                let send = || -> Result<Marker, Error> {
                    dst.exec.gpu.make_current()?;
                    let stream = dst.exec.gpu.copy_stream();
                    // After the sender's drift wrote the positions, and after the
                    // receiver's own queued work (the last force still reading its old
                    // copy of this region) is done: without the second wait a lagging
                    // receiver's kernel could read positions half overwritten.
                    drifted[a].block(stream)?;
                    drifted[b].block(stream)?;
                    let to = s.parts[b].all.as_device_ptr().as_raw() + at as u64;
                    let r = if direct[b] {
                        let from = s.parts[a].all.as_device_ptr().as_raw() + at as u64;
                        // SAFETY: both regions hold `bytes`; the copy waits for the drift
                        // and is waited for (the event) before any kernel reads it.
                        unsafe {
                            cust::sys::cuMemcpyPeerAsync(
                                to,
                                dst.exec.gpu.context().as_raw(),
                                from,
                                src_ctx.as_raw(),
                                bytes,
                                stream.as_inner(),
                            )
                        }
                    } else {
                        let host = s.parts[a].staging.as_ref().expect("staged above").as_slice();
                        // SAFETY: the pinned buffer holds `bytes` and is not written again
                        // before this copy is waited for (next exchange synchronises).
                        unsafe { cust::sys::cuMemcpyHtoDAsync_v2(to, host.as_ptr().cast(), bytes, stream.as_inner()) }
                    };
                    crate::pipeline::driver(r, "exchanging positions")?;
                    let ev = Marker::new()?;
                    ev.record(stream)?;
                    Ok(ev)
                };
                arrived[b][a] = Some(send().map_err(on_device(dst.ordinal))?);
            }
        }
        Ok(arrived)
    }
}

/// A system spread over the devices ([`MultiState`]): each lane kicks and drifts its own
/// slice (the drift writes straight into its copy of all positions); after a drift the
/// slices are exchanged and each lane starts its force as the others' arrive. The
/// leapfrog step is [`Resident::leapfrog_step`]'s.
impl<T: DeviceReal> Resident<T> for MultiDevice {
    type State = MultiState<T>;

    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<MultiState<T>, Error> {
        validate::particles(pos, Array::Particles)?;
        validate::velocities(vel, pos.len(), Array::Velocities)?;
        let slices = self.split(pos.len());
        let padded: Vec<usize> = slices.iter().map(|r| r.len().next_multiple_of(SOURCE_PAD)).collect();
        let offsets: Vec<usize> = padded.iter().scan(0, |a, &p| Some(std::mem::replace(a, *a + p))).collect();
        let total: usize = padded.iter().sum();
        let mut parts = Vec::with_capacity(self.lanes.len());
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            let mut up = || -> Result<Part<T>, Error> {
                lane.exec.gpu.make_current()?;
                let mut all = alloc(bytes_of::<Particle<T>>(total))?;
                upload_padded(&mut all, &[], bytes_of::<Particle<T>>(total))?;
                for (r, &off) in slices.iter().zip(&offsets) {
                    let data: &[u8] = bytemuck::cast_slice(&pos[r.clone()]);
                    if !data.is_empty() {
                        let at = bytes_of::<Particle<T>>(off);
                        all.index(at..at + data.len()).copy_from(data).map_err(cuda("copying to the device"))?;
                    }
                }
                let own = slices[k].clone();
                let vbytes = bytes_of::<Velocity<T>>(padded[k]);
                let mut v = alloc(vbytes)?;
                upload_padded(&mut v, bytemuck::cast_slice(&vel[own.clone()]), vbytes)?;
                let field = lane.exec.zeroed_fields::<T>(padded[k])?;
                Ok(Part { own, all, vel: v, field, staging: None })
            };
            parts.push(up().map_err(on_device(lane.ordinal))?);
        }
        Ok(MultiState {
            parts,
            offsets,
            padded,
            n: pos.len(),
            fresh: false,
            potential: false,
            drifted: false,
            time: 0.0,
            owner: self.owner,
            _t: Default::default(),
        })
    }

    fn download_state(
        &mut self,
        state: &MultiState<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.owner.check(state.owner)?;
        validate::length("positions", state.n, pos.len())?;
        validate::length("velocities", state.n, vel.len())?;
        for (k, (lane, part)) in self.lanes.iter_mut().zip(&state.parts).enumerate() {
            let r = part.own.clone();
            let mut get = || -> Result<(), Error> {
                lane.exec.gpu.make_current()?;
                lane.exec.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
                let at = bytes_of::<Particle<T>>(state.offsets[k]);
                download(
                    &part.all.index(at..at + bytes_of::<Particle<T>>(r.len())),
                    bytemuck::cast_slice_mut(&mut pos[r.clone()]),
                )?;
                download(&part.vel, bytemuck::cast_slice_mut(&mut vel[r.clone()]))
            };
            get().map_err(on_device(lane.ordinal))?;
        }
        Ok(())
    }

    fn download_field(
        &mut self,
        state: &mut MultiState<T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.owner.check(state.owner)?;
        validate::length("output", state.n, out.len())?;
        let held = (state.fresh, state.potential);
        if !nbody_core::resident::field_aside(held.0, held.1, params) {
            if !state.fresh {
                self.compute_field(state, params)?;
            }
            return self.download_held_field(state, out);
        }
        // A potential the held field lacks: computed into other buffers for this download
        // only, the held field kept as the steps made it (see the single device's
        // `download_field`).
        let mut kept = Vec::with_capacity(state.parts.len());
        for (lane, part) in self.lanes.iter_mut().zip(&mut state.parts) {
            let fresh = lane.exec.zeroed_fields(part.own.len()).map_err(on_device(lane.ordinal))?;
            kept.push(std::mem::replace(&mut part.field, fresh));
        }
        let got = self.compute_field(state, params).and_then(|()| self.download_held_field(state, out));
        for (part, field) in state.parts.iter_mut().zip(kept) {
            part.field = field;
        }
        (state.fresh, state.potential) = held;
        got
    }

    fn field_is_current(s: &MultiState<T>) -> bool {
        s.fresh
    }

    fn compute_field(&mut self, s: &mut MultiState<T>, params: &Params<T>) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        validate::params(params)?;
        if !s.drifted {
            return self.force_after(s, params, None);
        }
        let arrived = self.exchange(s)?;
        self.force_after(s, params, Some(&arrived))?;
        // The arrival events and staging buffers are done with once every copy is.
        for lane in &self.lanes {
            lane.exec.gpu.make_current().map_err(on_device(lane.ordinal))?;
            lane.exec
                .gpu
                .copy_stream()
                .synchronize()
                .map_err(cuda("exchanging positions"))
                .map_err(on_device(lane.ordinal))?;
        }
        s.drifted = false;
        Ok(())
    }

    fn kick(&mut self, s: &mut MultiState<T>, h: T) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        let s = &*s;
        each_lane(self, s, |exec, k| {
            let part = &s.parts[k];
            exec.kick_or_drift(Kernel::Kick { tag: T::FAMILY }, &part.vel, &part.field.buf, part.own.len(), h)
        })
    }

    fn drift(&mut self, s: &mut MultiState<T>, h: T) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        let psize = std::mem::size_of::<Particle<T>>();
        each_lane(self, s, |exec, k| {
            let part = &s.parts[k];
            let at = s.offsets[k] * psize;
            let own = part.all.index(at..at + s.padded[k] * psize);
            exec.kick_or_drift(Kernel::Drift { tag: T::FAMILY }, &own, &part.vel, part.own.len(), h)
        })?;
        s.fresh = false;
        s.drifted = true;
        Ok(())
    }

    fn len(s: &MultiState<T>) -> usize {
        s.len()
    }

    fn time(s: &MultiState<T>) -> f64 {
        s.time
    }

    fn set_time(s: &mut MultiState<T>, t: f64) {
        s.time = t;
    }
}

/// Runs `f(exec, k)` on every lane `k` that owns particles, naming the lane on failure.
fn each_lane<T: DeviceReal>(
    gpus: &mut MultiDevice,
    s: &MultiState<T>,
    f: impl Fn(&mut CudaExecutor, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    for (k, (lane, part)) in gpus.lanes.iter_mut().zip(&s.parts).enumerate() {
        let run = |exec: &mut CudaExecutor| -> Result<(), Error> {
            exec.gpu.make_current()?;
            if part.own.is_empty() {
                return Ok(());
            }
            f(exec, k)
        };
        run(&mut lane.exec).map_err(on_device(lane.ordinal))?;
    }
    Ok(())
}

impl MultiDevice {
    /// Copies the field each lane holds into its range of `out`.
    fn download_held_field<T: DeviceReal>(&mut self, state: &MultiState<T>, out: &mut [Field<T>]) -> Result<(), Error> {
        for (lane, part) in self.lanes.iter_mut().zip(&state.parts) {
            let r = part.own.clone();
            let mut get = || -> Result<(), Error> {
                lane.exec.gpu.make_current()?;
                lane.exec.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
                download(&part.field.buf, bytemuck::cast_slice_mut(&mut out[r.clone()]))
            };
            get().map_err(on_device(lane.ordinal))?;
        }
        Ok(())
    }
}
