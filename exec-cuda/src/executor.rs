//! The host-slice entry points ([`Executor`]): validate, stage into scratch, launch,
//! download, and on failure leave the outputs untouched and the executor usable.

use crate::kernels::Soft;
use crate::memory::{ptr, upload_outputs, upload_padded};
use crate::{
    CELL_ITEMS, CELL_OFFSETS, CELL_RUNS, CELL_SLOTS, CELL_SPANS, CELLS, ITEM_RUNS, ITEM_SLOTS, LENGTHS, PARTIAL,
};
use crate::{CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, EXTRA_C, OUT, SELF_COUNTS, SOURCES, TARGETS, batch, pipeline};
use nbody_core::Executor;
use nbody_core::PerParticle;
use nbody_core::calls::{
    BatchCall, BatchCellsCall, BatchPerParticleCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall,
    TidalCall, VjpCall,
};
use nbody_core::capabilities::{Capabilities, Entries, Entry};
use nbody_core::cell::Cell;
use nbody_core::kernel::Softened;
use nbody_core::projection::Projection;
use nbody_core::{Array, Error, Field, InteractionList, Params, Particle, validate};
use nbody_core::{Pair, Span};

impl<T: DeviceReal> Executor<T> for CudaExecutor {
    fn name(&self) -> &'static str {
        match self.family::<T>() {
            crate::Family::Mixed => "cuda-mixed",
            crate::Family::F32 | crate::Family::F64 => "cuda",
        }
    }

    /// Every entry point under Plummer (the snap and the batched product in host loops);
    /// every other kernel in the plain, batched and per-particle kernels (the softened
    /// tiles, `Soft::of`) and the gradients: the jerk kernels and the cell kernels are Plummer's. The columns
    /// on all but the mixed kernels.
    fn capabilities(&self) -> Capabilities {
        let softened = Entries::NONE
            .with(Entry::Accelerations)
            .with(Entry::Batch)
            .with(Entry::PerParticle)
            .with(Entry::Tidal)
            .with(Entry::Vjp)
            .with(Entry::VjpBatch);
        let caps = Capabilities::uniform(softened.with(Entry::Columns))
            .with_kernel(nbody_core::Softening::Plummer, Entries::ALL);
        if self.family::<T>() == crate::Family::Mixed { caps.map(|_, e| e.without(Entry::Columns)) } else { caps }
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        // Plummer's own kernels below; every other kernel through the softened tiles
        // (which map it to its device kernels in one place, `Soft::of`).
        if Softened::of(params).softening() != nbody_core::Softening::Plummer {
            return self.tiled_soft(targets, sources, None, params, out);
        }
        self.check_mixed_extent::<T>(targets, sources)?;
        self.guarded(|me| {
            if me.runs_sorted::<T>(targets.len(), sources.len(), params) {
                return me.accelerations_sorted(DirectCall { targets, sources, params, out });
            }
            // The same slice as targets and sources (a system on itself) goes up once, as
            // one array, and runs in one launch: the two-stream pipeline only hides the
            // upload of sources the targets do not already carry, and costs launches. Mixed
            // calls run in one launch too: their reduction judges each target's error
            // estimate on its whole sum (a tile's share of it can hide a cancellation).
            let identical = core::ptr::eq(targets, sources);
            let mixed = me.family::<T>() == crate::Family::Mixed;
            if sources.len() >= pipeline::PIPELINE_MIN_SOURCES && !identical && !mixed {
                return me.accelerations_pipelined(DirectCall { targets, sources, params, out });
            }
            let padded = if identical { me.stage_once(sources, out)? } else { me.stage(targets, sources, out)? };
            let config = me.config_for::<T>(targets.len(), sources.len(), params)?;
            let s = &me.scratch;
            let (t, src, o) = (
                s[if identical { SOURCES } else { TARGETS }].buf_ref().ok_or(Error::NoDevice)?,
                s[SOURCES].buf_ref().ok_or(Error::NoDevice)?,
                s[OUT].buf_ref().ok_or(Error::NoDevice)?,
            );
            me.launch_tiled(config, t, targets.len(), src, padded, o, params)?;
            me.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))
        })
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        self.check_mixed_extent::<T>(targets.pos, sources.pos)?;
        self.run_jerk(targets, sources, params, out, jerk, None)
    }

    /// Finds neighbours in the jerk kernel's pass (see the jerk kernel in
    /// kernels/gravity.cu): nearest per thread, combined across the threads of a target
    /// and the chunks of a split launch; list entries appended through atomic counters.
    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        let NeighboursCall { targets, sources, params, out, jerk, neighbours } = call;
        self.check_mixed_extent::<T>(targets.pos, sources.pos)?;
        self.run_jerk(targets, sources, params, out, jerk, Some(neighbours))
    }

    /// One thread per target over the sources (kernels/gradients.cuh).
    unsafe fn accelerations_tidal_unchecked(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        self.tidal_call(call)
    }

    /// One thread per target over the sources, then one per source over the targets.
    unsafe fn vjp_unchecked(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        self.vjp_call(call)
    }

    /// A span on itself on the device, each pair once; other pairs in the core's loops.
    unsafe fn vjp_batch_unchecked(&mut self, call: nbody_core::calls::VjpBatchCall<'_, T>) -> Result<(), Error> {
        self.vjp_batch_call(call)
    }

    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        let none = InteractionList { pairs: &[], source_spans: &[] };
        self.run_leaves(particles, None, list, &[], &none, params, out)
    }

    /// The batched kernel with a length per particle beside the particles.
    unsafe fn accelerations_batch_per_particle_unchecked(
        &mut self,
        call: BatchPerParticleCall<'_, T>,
    ) -> Result<(), Error> {
        let BatchPerParticleCall { particles, eps, list, params, out } = call;
        let none = InteractionList { pairs: &[], source_spans: &[] };
        self.run_leaves(particles, Some(eps), list, &[], &none, params, out)
    }

    /// The tiled kernel with the lengths in shared memory beside the sources (see
    /// `tiled_soft`).
    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        self.tiled_soft(targets, sources, Some(eps), params, out)
    }

    /// One launch of the batched cell kernel over one pair: every target, every cell.
    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        let CellsCall { targets, cells, params, out } = call;
        let none = InteractionList { pairs: &[], source_spans: &[] };
        let pairs = [Pair { targets: Span::new(0, targets.len() as u32), sources: Span::new(0, 1) }];
        let spans = [Span::new(0, cells.len() as u32)];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        self.run_leaves(targets, None, &none, cells, &list, params, out)
    }

    /// The particle part and the cells in two launches on one upload of the particles
    /// and one download of the output.
    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        let BatchCellsCall { particles, cells, list, params, out } = call;
        let pairs: Vec<Pair> = list.cell_pairs().collect();
        let cell_list = InteractionList { pairs: &pairs, source_spans: list.cell_spans };
        self.run_leaves(particles, None, &list.particles, cells, &cell_list, params, out)
    }

    /// Packs and unpacks on the device (see [`crate::columns`]).
    fn field_columns(
        &mut self,
        call: nbody_core::columns::ColumnsCall<'_, T>,
        params: &Params<T>,
        acc: &mut [[T; 3]],
        phi: Option<&mut [T]>,
    ) -> Result<(), Error> {
        self.columns_call(call, params, acc, phi)
    }

    /// The product on the caller's device arrays (see [`crate::gradients`]).
    unsafe fn vjp_device(&mut self, call: nbody_core::columns::DeviceVjp, params: &Params<T>) -> Result<(), Error> {
        // SAFETY: the caller's contract is the trait's.
        unsafe { self.device_vjp_call(call, params) }
    }

    /// The leaf call on the caller's device arrays (see [`crate::columns`]).
    unsafe fn accelerations_batch_cells_device(
        &mut self,
        call: nbody_core::columns::DeviceColumns,
        cells: &[Cell<T>],
        list: &nbody_core::LeafList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        // SAFETY: the caller's contract is the trait's.
        unsafe { self.device_leaves_call(call, cells, list, params) }
    }

    /// Packs and unpacks the caller's device arrays in place (see [`crate::columns`]).
    unsafe fn field_columns_device(
        &mut self,
        call: nbody_core::columns::DeviceColumns,
        params: &Params<T>,
    ) -> Result<(), Error> {
        // SAFETY: the caller's contract is the trait's.
        unsafe { self.device_columns_call(call, params) }
    }
}

impl CudaExecutor {
    /// A plain call under the spline or with a length per particle: the tiled kernel's
    /// soft variants (the ladder's configurations; one upload, one download), the lengths
    /// staged beside targets and sources (padding sources get length 0). The mixed
    /// family's calls go through the batched kernel (`plain_via_batch`).
    fn tiled_soft<T: DeviceReal>(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        lengths: Option<PerParticle<'_, T>>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        if self.family::<T>() == crate::Family::Mixed {
            return self.plain_via_batch(targets, sources, lengths, params, out);
        }
        // A system on itself (the same slices of particles and of lengths) goes up once,
        // as the Plummer call's does.
        let identical = core::ptr::eq(targets, sources) && lengths.is_none_or(|l| core::ptr::eq(l.targets, l.sources));
        self.guarded(|me| {
            let padded = if identical { me.stage_once(sources, out)? } else { me.stage(targets, sources, out)? };
            let soft = match lengths {
                Some(l) => {
                    // Padding alone never makes the kernel mask.
                    let soft = Soft::of(params.softening, true);
                    let pad = soft.padding_length();
                    let least = me.upload_lengths(EXTRA_B, l.sources, params.softening, pad, padded)?;
                    let least_s = if padded > sources.len() && pad < least { pad } else { least };
                    // The targets' own lengths, unless they are the sources'.
                    let least_t = if identical {
                        least
                    } else {
                        me.upload_lengths(EXTRA_A, l.targets, params.softening, pad, targets.len())?
                    };
                    let b = |me: &Self, k: usize| me.scratch[k].buf_ref().map(|b| ptr(b)).ok_or(Error::NoDevice);
                    crate::tiled::TiledSoft {
                        soft,
                        eps2: T::zero(),
                        masked: batch::lengths_mask(least_t, least_s),
                        lengths: (b(me, if identical { EXTRA_B } else { EXTRA_A })?, b(me, EXTRA_B)?),
                    }
                }
                None => crate::tiled::TiledSoft::of(params),
            };
            let config = me.soft_config(targets.len(), sources.len(), padded, params)?;
            let s = &me.scratch;
            let (t, src, o) = (
                s[if identical { SOURCES } else { TARGETS }].buf_ref().ok_or(Error::NoDevice)?,
                s[SOURCES].buf_ref().ok_or(Error::NoDevice)?,
                s[OUT].buf_ref().ok_or(Error::NoDevice)?,
            );
            me.launch_tiled_as(config, t, targets.len(), src, padded, o, params, soft)?;
            me.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))
        })
    }

    /// The launch configuration of a soft (spline or per-particle) tiled launch: the one
    /// the Plummer kernel would take (forced, tuned or the ladder's) where the soft
    /// variants exist, the ladder's otherwise.
    pub(crate) fn soft_config<T: DeviceReal>(
        &mut self,
        n_t: usize,
        n_s: usize,
        padded: usize,
        params: &Params<T>,
    ) -> Result<crate::tuning::LaunchConfig, Error> {
        let plummer = params.with_softening(nbody_core::Softening::Plummer);
        let rungs = crate::tuning::ladder(self.family::<T>());
        Ok(match self.config_for::<T>(n_t, n_s, &plummer)? {
            c if rungs.contains(&c) => c,
            _ => crate::tuning::choose_for_on(rungs, n_t, padded, self.gpu.info().sm_count),
        })
    }

    /// Whether a host-slice call runs on sorted copies ([`CudaExecutor::sorted_call`]):
    /// mixed kernels, at least [`CudaExecutor::sorted_above`] pairs, and no shared range
    /// (its pairs would not stay paired).
    fn runs_sorted<T: DeviceReal>(&self, n_t: usize, n_s: usize, params: &Params<T>) -> bool {
        self.sorts::<T>(n_t, n_s) && !matches!(params.overlap, nbody_core::Overlap::Shared { .. })
    }

    /// A large mixed call: targets and sources (once, when identical) up, sorted on the
    /// device, the kernel, the results put back in order and down.
    fn accelerations_sorted<T: DeviceReal>(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let identical = params.overlap == nbody_core::Overlap::Identical;
        let s = self.scratch[SOURCES].reserve(std::mem::size_of_val(sources))?;
        upload_padded(s, bytemuck::cast_slice(sources), 0)?;
        let src = ptr(s);
        let tgt = if identical {
            src
        } else {
            let t = self.scratch[TARGETS].reserve(std::mem::size_of_val(targets))?;
            upload_padded(t, bytemuck::cast_slice(targets), 0)?;
            ptr(t)
        };
        let o = self.scratch[OUT].reserve(std::mem::size_of_val(out))?;
        upload_outputs(o, bytemuck::cast_slice(out))?;
        let o = ptr(o);
        self.sorted_call(tgt, targets.len(), src, sources.len(), identical, params, o)?;
        self.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))
    }

    /// A plain call the tiled kernels do not serve (a length per particle, or the
    /// spline) as one batched pair: targets and sources go up as one array, the targets
    /// against the span of the sources, and the pull of each target's own copy among the
    /// sources (`params.overlap`) is removed on the host as the CPU executor removes it.
    fn plain_via_batch<T: DeviceReal>(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        lengths: Option<PerParticle<'_, T>>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        let (nt, ns) = (targets.len(), sources.len());
        let (t_end, s_end) = (crate::kernels::count(nt)? as u32, crate::kernels::count(nt + ns)? as u32);
        let all: Vec<Particle<T>> = targets.iter().chain(sources).copied().collect();
        let all_eps: Option<Vec<T>> = lengths.map(|l| l.targets.iter().chain(l.sources).copied().collect());
        let pairs = [Pair { targets: Span::new(0, t_end), sources: Span::new(0, 1) }];
        let spans = [Span::new(t_end, s_end)];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let none = InteractionList { pairs: &[], source_spans: &[] };
        let mut sums: Vec<Field<T>> = out.iter().copied().chain(std::iter::repeat_n(Field::zero(), ns)).collect();
        let q = params.with_overlap(nbody_core::Overlap::Disjoint);
        self.run_leaves(&all, all_eps.as_deref(), &list, &[], &none, &q, &mut sums)?;
        let (t0, _, len) = params.overlap.resolve(nt);
        if params.potential {
            for i in t0..t0 + len {
                let own = Softened::own(params, lengths.map(|l| l.targets[i]));
                sums[i].phi = sums[i].phi + params.g * own.self_potential(targets[i].m);
            }
        }
        out.copy_from_slice(&sums[..nt]);
        Ok(())
    }

    /// A particle list over `particles` (with a length per particle in `lengths`) and a
    /// list whose spans index `cells`, each expanded into work items and launched if it
    /// has any: the particles go up once, the output comes down once.
    #[allow(clippy::too_many_arguments)]
    fn run_leaves<T: DeviceReal>(
        &mut self,
        particles: &[Particle<T>],
        lengths: Option<&[T]>,
        list: &InteractionList<'_>,
        cells: &[Cell<T>],
        cell_list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.check_mixed_extent::<T>(particles, &[])?;
        self.leaves_on(Leaves::Host { particles, out }, lengths, list, cells, cell_list, params)
    }

    /// [`CudaExecutor::run_leaves`] on particles given on the host (the field added into
    /// `out`) or as the caller's device arrays (packed and checked on the device, the
    /// field written into the caller's device outputs).
    pub(crate) fn leaves_on<T: DeviceReal>(
        &mut self,
        input: Leaves<'_, T>,
        lengths: Option<&[T]>,
        list: &InteractionList<'_>,
        cells: &[Cell<T>],
        cell_list: &InteractionList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let n = match &input {
            Leaves::Host { particles, .. } => particles.len(),
            Leaves::Device(call) => call.n,
        };
        let sms = self.gpu.info().sm_count;
        let (ex, cx) = rayon::join(
            || batch::expand(list, n, batch::chunk_for(list, sms)),
            || batch::expand(cell_list, n, batch::chunk_for(cell_list, sms)),
        );
        if ex.items.is_empty() && cx.items.is_empty() && matches!(input, Leaves::Host { .. }) {
            return Ok(());
        }
        self.guarded(|me| {
            let up = |me: &mut Self, slot: usize, data: &[u8]| -> Result<(), Error> {
                let buf = me.scratch[slot].reserve(data.len())?;
                upload_padded(buf, data, 0)
            };
            match &input {
                Leaves::Host { particles, out } => {
                    up(me, SOURCES, bytemuck::cast_slice(particles))?;
                    up(me, OUT, bytemuck::cast_slice(out))?;
                }
                Leaves::Device(call) => {
                    // SAFETY: the caller's contract (the trait method's).
                    unsafe { me.pack_device_particles::<T>(call)? };
                    let bytes = n * size_of::<Field<T>>();
                    upload_padded(me.scratch[OUT].reserve(bytes)?, &[], bytes)?;
                }
            }
            me.scratch[PARTIAL].reserve(batch::partial_bytes::<T>(ex.partials.max(cx.partials)))?;
            let b = |me: &Self, k: usize| me.scratch[k].buf_ref().map(|b| ptr(b)).ok_or(Error::NoDevice);
            // The slots and runs of a launch that cut some target group (else none).
            let order = |me: &mut Self, ex: &batch::Expanded, slots: usize, runs: usize| {
                if ex.runs.is_empty() {
                    return Ok::<_, Error>((crate::args::null(), crate::args::null(), 0));
                }
                up(me, slots, bytemuck::cast_slice(&ex.slots))?;
                up(me, runs, bytemuck::cast_slice(&ex.runs))?;
                Ok((b(me, slots)?, b(me, runs)?, ex.runs.len()))
            };
            let each = match lengths {
                Some(eps) if !ex.items.is_empty() => {
                    let least = me.upload_lengths(LENGTHS, eps, params.softening, T::zero(), eps.len())?;
                    Some(batch::lengths_mask(least, least))
                }
                _ => None,
            };
            // One expansion's items, spans, offsets (and self counts) uploaded to the
            // slots named, and the buffers its launch reads.
            let stage = |me: &mut Self,
                         ex: &batch::Expanded,
                         [items, spans, offsets]: [usize; 3],
                         self_counts: Option<usize>,
                         [slots, runs]: [usize; 2]| {
                up(me, items, bytemuck::cast_slice(&ex.items))?;
                up(me, spans, bytemuck::cast_slice(&ex.spans))?;
                up(me, offsets, bytemuck::cast_slice(&ex.offsets))?;
                let self_counts = match self_counts {
                    Some(k) => {
                        up(me, k, bytemuck::cast_slice(&ex.self_counts))?;
                        b(me, k)?
                    }
                    None => crate::args::null(),
                };
                let (slots, runs, n_runs) = order(me, ex, slots, runs)?;
                Ok::<_, Error>(batch::Buffers {
                    particles: b(me, SOURCES)?,
                    items: b(me, items)?,
                    spans: b(me, spans)?,
                    offsets: b(me, offsets)?,
                    self_counts,
                    out: b(me, OUT)?,
                    lengths: crate::args::null(),
                    slots,
                    partial: b(me, PARTIAL)?,
                    runs,
                    n_runs,
                })
            };
            if !ex.items.is_empty() {
                let mut bufs = stage(me, &ex, [EXTRA_A, EXTRA_B, EXTRA_C], Some(SELF_COUNTS), [ITEM_SLOTS, ITEM_RUNS])?;
                if each.is_some() {
                    bufs.lengths = b(me, LENGTHS)?;
                }
                me.launch_batch(&bufs, ex.items.len(), n, params, each)?;
            }
            if !cx.items.is_empty() {
                up(me, CELLS, bytemuck::cast_slice(cells))?;
                let bufs = stage(me, &cx, [CELL_ITEMS, CELL_SPANS, CELL_OFFSETS], None, [CELL_SLOTS, CELL_RUNS])?;
                me.launch_cells(&bufs, b(me, CELLS)?, cx.items.len(), n, params, false)?;
            }
            match input {
                Leaves::Host { out, .. } => me.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out)),
                Leaves::Device(call) => {
                    me.unpack_device_field::<T>(&call)?;
                    me.gpu.stream().synchronize().map_err(crate::device::cuda("running the kernels"))
                }
            }
        })
    }
}

/// Where a leaf call's particles are and where its field goes.
pub(crate) enum Leaves<'a, T: nbody_core::Real> {
    /// Particles on the host; the field added into `out`.
    Host { particles: &'a [Particle<T>], out: &'a mut [Field<T>] },
    /// The caller's device arrays (checked by `device_leaves_call`); the field written.
    Device(nbody_core::columns::DeviceColumns),
}

impl<T: DeviceReal> nbody_core::projection::Project<T> for CudaExecutor {
    /// Deposits on the device (atomic adds into a grid of doubles): the particles go up,
    /// only the grid comes back.
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        projection.validate(grid.len())?;
        validate::particles(particles, Array::Particles)?;
        if particles.is_empty() {
            return Ok(());
        }
        self.guarded(|me| {
            let p = me.scratch[SOURCES].reserve(std::mem::size_of_val(particles))?;
            upload_padded(p, bytemuck::cast_slice(particles), 0)?;
            let pp = ptr(p);
            me.launch_project::<T>(pp, particles.len(), projection, grid)
        })
    }
}
