//! Turns an interaction list into equal-sized work items for one batched launch.

use crate::args::{BatchArgs, CellArgs};
use crate::kernels::{Kernel, Soft, count};
use crate::memory::{alloc, ptr, upload_padded};
use crate::{DeviceFields, DeviceParticles, DeviceReal};
use cust::memory::{DeviceBuffer, DevicePointer};
use nbody_core::{Error, InteractionList, Params, Softening, Span, validate};

/// Threads per block of the batched kernel: 32 targets x 4 threads each.
pub(crate) const BLOCK: u32 = 128;
/// Targets per work item.
const GROUP: u32 = 32;
/// Sources per work item at most, unless a launch has items enough to fill the GPU
/// without cutting so finely ([`chunk_for`]): long lists are cut so items cost about
/// the same and uneven lists still spread over every SM.
const CHUNK: u32 = 4096;
/// Items per SM a launch should have (16 resident blocks of 128 threads, 4 waves) before
/// it stops cutting lists finer than needed: every cut item's sums pass through memory.
const ITEMS_PER_SM: usize = 64;
/// An item whose sums are added atomically (gravity.cu's `NO_SLOT`).
const NO_SLOT: u32 = u32::MAX;

/// One block's work, as the kernel's `Item` reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Item {
    t0: u32,
    t1: u32,
    span_first: u32,
    span_last: u32,
}

/// Device addresses of one batched launch's arrays.
pub(crate) struct Buffers {
    pub particles: DevicePointer<u8>,
    pub items: DevicePointer<u8>,
    pub spans: DevicePointer<u8>,
    pub offsets: DevicePointer<u8>,
    /// How many of each target's source spans hold it, for the potential's self terms
    /// (null: the caller takes them off itself).
    pub self_counts: DevicePointer<u8>,
    pub out: DevicePointer<u8>,
    /// Per-particle softening as the kernels read it (null with one softening).
    pub lengths: DevicePointer<u8>,
    /// The items' partial-sum slots, the partial sums and the runs that add them (null
    /// and 0 runs: every item adds atomically; see [`Expanded`]).
    pub slots: DevicePointer<u8>,
    pub partial: DevicePointer<u8>,
    pub runs: DevicePointer<u8>,
    pub n_runs: usize,
}

/// Writes a softening length per particle as the batched and tiled kernels read it
/// (gravity.cu's `SOFT_*_EACH`) into `dst` (as long as `eps`): Plummer `ε²/2` (a pair's ε²
/// is the sum), the spline `h = 2.8 ε` (a pair's support is the larger). Returns the least
/// value written (infinity for none), found in the same pass.
pub(crate) fn write_kernel_lengths<T: DeviceReal>(eps: &[T], softening: Softening, dst: &mut [T]) -> T {
    let (scale, square) = softening.pair_rule().stored();
    let scale = T::from_f64(scale);
    let value = |e: T| if square { scale * e * e } else { scale * e };
    // Sixteen independent minima, so that the loop vectorises (the lengths are
    // validated: no NaN to order).
    let lesser = |a: T, x: T| if x < a { x } else { a };
    let mut lanes = [T::infinity(); 16];
    let (mut from, mut to) = (eps.chunks_exact(16), dst.chunks_exact_mut(16));
    for (e, d) in (&mut from).zip(&mut to) {
        for ((l, &e), d) in lanes.iter_mut().zip(e).zip(d) {
            *d = value(e);
            *l = lesser(*l, *d);
        }
    }
    let mut least = lanes.iter().fold(T::infinity(), |a, &x| lesser(a, x));
    for (&e, d) in from.remainder().iter().zip(to.into_remainder()) {
        *d = value(e);
        least = lesser(least, *d);
    }
    least
}

/// Whether per-particle Plummer must mask, from the least kernel lengths of the targets
/// and of the sources (padding included): together they soften nothing an f32 pair could
/// hold.
pub(crate) fn lengths_mask<T: DeviceReal>(least_target: T, least_source: T) -> bool {
    (least_target + least_source).to_f64() < f32::MIN_POSITIVE as f64
}

/// An interaction list expanded and uploaded ([`crate::CudaExecutor::upload_list`]).
#[derive(Debug)]
pub struct DeviceList {
    pub(crate) items: DeviceBuffer<u8>,
    pub(crate) spans: DeviceBuffer<u8>,
    pub(crate) offsets: DeviceBuffer<u8>,
    pub(crate) self_counts: DeviceBuffer<u8>,
    pub(crate) slots: DeviceBuffer<u8>,
    pub(crate) runs: DeviceBuffer<u8>,
    /// Room for the partial sums in f64 (what the f32 kernels need, twice over).
    pub(crate) partial: DeviceBuffer<u8>,
    pub(crate) n_runs: usize,
    pub(crate) n_items: usize,
    pub(crate) particles: usize,
    /// How many cells its spans index, for a cell list (`None`: a particle list).
    pub(crate) cells: Option<usize>,
    pub(crate) interactions: usize,
}

impl DeviceList {
    /// Pair interactions one launch over it computes.
    pub fn interactions(&self) -> usize {
        self.interactions
    }
}

/// A list expanded for the kernel: items, the span list they index (the list's spans
/// cut into pieces of at most a chunk, grouped so that no item holds more than a chunk
/// of sources), for each span where it starts in its item's concatenated source list,
/// and for each particle how many of its pairs' source spans hold it (the self terms the
/// softened potential must remove).
///
/// A target group whose sources were cut into several items does not add their sums
/// atomically (the order would follow the blocks' timing, and no two runs would agree in
/// the last bits): each of its items writes into its own block of 32 partial sums
/// (`slots[item]`; `NO_SLOT` for an item alone in its group, which adds atomically) and
/// a run (`t0, t1` and the group's slots `[span_first, span_last)`) adds them in order.
/// `slots` is empty when no group was cut.
pub(crate) struct Expanded {
    pub items: Vec<Item>,
    pub spans: Vec<Span>,
    pub offsets: Vec<u32>,
    pub self_counts: Vec<u32>,
    pub slots: Vec<u32>,
    pub runs: Vec<Item>,
    /// Blocks of 32 partial sums the slots index.
    pub partials: usize,
}

/// Sources per item for `list` on a GPU of `sm_count` SMs: `CHUNK`, or the list's
/// sources per item when its target groups alone fill the GPU (a plain call's one pair
/// over a million sources needs no cutting: its 32-target groups are items enough).
pub(crate) fn chunk_for(list: &InteractionList<'_>, sm_count: u32) -> u32 {
    use rayon::prelude::*;
    let (groups, work) = list
        .pairs
        .par_iter()
        .map(|p| {
            let g = p.targets.len().div_ceil(GROUP as usize) as u64;
            (g, g * list.sources_of(p).iter().map(|s| s.len() as u64).sum::<u64>())
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let wanted = groups.max(ITEMS_PER_SM as u64 * sm_count as u64).max(1);
    // Whole tiles of 128 sources per item (the kernels' tile), at most 2^31.
    let per_item = work.div_ceil(wanted).next_multiple_of(BLOCK as u64).min(1 << 31);
    (per_item as u32).max(CHUNK)
}

/// A pair's source spans cut into pieces so that no work item holds more than `chunk`
/// sources: each piece with its offset in its item's concatenated list (offset 0 starts
/// a new item). Empty spans give no piece.
fn pieces(spans: &[Span], chunk: u32) -> impl Iterator<Item = (Span, u32)> + '_ {
    let (mut k, mut a, mut total) = (0usize, spans.first().map_or(0, |s| s.start), 0u32);
    std::iter::from_fn(move || {
        loop {
            let s = spans.get(k)?;
            if a >= s.end {
                k += 1;
                a = spans.get(k).map_or(0, |s| s.start);
                continue;
            }
            if total == chunk {
                total = 0;
            }
            let take = (s.end - a).min(chunk - total);
            let piece = (Span::new(a, a + take), total);
            (a, total) = (a + take, total + take);
            return Some(piece);
        }
    })
}

/// Per pair: how many pieces and work items' worth of source groups it expands into.
fn shape(sources: &[Span], chunk: u32) -> (usize, usize) {
    pieces(sources, chunk).fold((0, 0), |(n, groups), (_, offset)| (n + 1, groups + (offset == 0) as usize))
}

/// Expands `list` over `n` particles, cutting sources into items of at most `chunk`
/// ([`chunk_for`]). Pairs are expanded in parallel (two passes: sizes, then each pair
/// fills its own slices), so a million-leaf tree list costs milliseconds.
pub(crate) fn expand(list: &InteractionList<'_>, n: usize, chunk: u32) -> Expanded {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    let shapes: Vec<(usize, usize)> = list.pairs.par_iter().map(|p| shape(list.sources_of(p), chunk)).collect();
    let chunks = |p: &nbody_core::Pair| p.targets.len().div_ceil(GROUP as usize);
    let mut span_at = Vec::with_capacity(shapes.len());
    let mut slot_at = Vec::with_capacity(shapes.len());
    let (mut n_spans, mut n_items, mut n_slots, mut n_runs) = (0usize, 0usize, 0usize, 0usize);
    for (p, &(spans, groups)) in list.pairs.iter().zip(&shapes) {
        span_at.push(n_spans);
        slot_at.push(n_slots as u32);
        n_spans += spans;
        n_items += groups * chunks(p);
        if groups > 1 {
            n_slots += groups * chunks(p);
            n_runs += chunks(p);
        }
    }
    let zero_item = Item { t0: 0, t1: 0, span_first: 0, span_last: 0 };
    let (mut items, mut spans, mut offsets) =
        (vec![zero_item; n_items], vec![Span::new(0, 0); n_spans], vec![0u32; n_spans]);
    let mut slots = vec![NO_SLOT; if n_runs > 0 { n_items } else { 0 }];
    let mut runs = vec![zero_item; n_runs];
    let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    // Each pair's slices of the five arrays, cut in order.
    let mut parts = Vec::with_capacity(list.pairs.len());
    {
        let (mut it, mut sp, mut off) = (items.as_mut_slice(), spans.as_mut_slice(), offsets.as_mut_slice());
        let (mut sl, mut ru) = (slots.as_mut_slice(), runs.as_mut_slice());
        for (k, p) in list.pairs.iter().enumerate() {
            let (ns, ng) = shapes[k];
            let (a, rest) = std::mem::take(&mut it).split_at_mut(ng * chunks(p));
            it = rest;
            let (b, rest) = std::mem::take(&mut sp).split_at_mut(ns);
            sp = rest;
            let (c, rest) = std::mem::take(&mut off).split_at_mut(ns);
            off = rest;
            let mine = if sl.is_empty() { 0 } else { ng * chunks(p) };
            let (d, rest) = std::mem::take(&mut sl).split_at_mut(mine);
            sl = rest;
            let (e, rest) = std::mem::take(&mut ru).split_at_mut(if ng > 1 { chunks(p) } else { 0 });
            ru = rest;
            parts.push((k, a, b, c, d, e));
        }
    }
    parts.into_par_iter().for_each(|(k, items, spans, offsets, slots, runs)| {
        let pair = &list.pairs[k];
        let base = span_at[k] as u32;
        let mut groups: Vec<(u32, u32)> = Vec::with_capacity(shapes[k].1);
        let t = pair.targets.range();
        for s in list.sources_of(pair) {
            let (a, b) = (t.start.max(s.start as usize), t.end.min(s.end as usize));
            for c in counts.get(a..b).unwrap_or(&[]) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut first = base;
        for (j, (piece, offset)) in pieces(list.sources_of(pair), chunk).enumerate() {
            let at = base + j as u32;
            if offset == 0 && at > first {
                groups.push((first, at));
                first = at;
            }
            (spans[j], offsets[j]) = (piece, offset);
        }
        if !spans.is_empty() {
            groups.push((first, base + spans.len() as u32));
        }
        let mut m = 0;
        let slot_base = slot_at[k];
        for (g, t0) in (pair.targets.start..pair.targets.end).step_by(GROUP as usize).enumerate() {
            let t1 = (t0 + GROUP).min(pair.targets.end);
            if groups.len() > 1 {
                let first = slot_base + m as u32;
                runs[g] = Item { t0, t1, span_first: first, span_last: first + groups.len() as u32 };
            }
            for &(span_first, span_last) in &groups {
                items[m] = Item { t0, t1, span_first, span_last };
                if groups.len() > 1 {
                    slots[m] = slot_base + m as u32;
                }
                m += 1;
            }
        }
    });
    let self_counts = counts.into_iter().map(AtomicU32::into_inner).collect();
    Expanded { items, spans, offsets, self_counts, slots, runs, partials: n_slots }
}

/// The partial sums' bytes for `partials` blocks of 32 fields of `T`.
pub(crate) fn partial_bytes<T>(partials: usize) -> usize {
    partials * GROUP as usize * 4 * size_of::<T>()
}

impl crate::CudaExecutor {
    /// The batched kernel over `n_items` items, then the self-potential fix-up over the
    /// `n` particles (softened potential only). `each`: the buffers carry a length per
    /// particle (`kernel_lengths`), with whether Plummer's kernel must mask.
    pub(crate) fn launch_batch<T: DeviceReal>(
        &self,
        b: &Buffers,
        n_items: usize,
        n: usize,
        params: &Params<T>,
        each: Option<bool>,
    ) -> Result<(), Error> {
        let (tag, g) = (self.family::<T>(), params.g);
        let (soft, eps2, masked) = match each {
            Some(masked) => (Soft::of(params.softening, true), T::zero(), masked),
            // The spline's support in eps2; with eps = 0 it is Newtonian: Plummer's mask.
            None => {
                let softened = nbody_core::kernel::Softened::of(params);
                if softened.softening() == Softening::Plummer {
                    let (eps2, masked) = self.kernel_eps2(&params.with_softening(Softening::Plummer))?;
                    (Soft::Plummer, eps2, masked)
                } else {
                    (Soft::of(params.softening, false), softened.argument(), false)
                }
            }
        };
        let args = BatchArgs {
            particles: b.particles,
            items: b.items,
            spans: b.spans,
            offset: b.offsets,
            self_count: b.self_counts,
            out: b.out,
            lengths: b.lengths,
            slots: b.slots,
            partial: b.partial,
            eps2,
            g,
            n: count(n)?,
        };
        let kernel = Kernel::Batch { tag, potential: params.potential, masked, soft };
        // SAFETY: items index spans, spans index particles (validated), out (and the
        // lengths, when given) have one entry per particle; slots (when given) one per
        // item, each a block of partial within its size.
        unsafe { self.launch(kernel, n_items as u32, BLOCK, args, "launching the batched kernel")? };
        self.launch_reduce(b, args)?;
        // One softening that masks removes nothing; per-particle lengths of zero are
        // skipped by the fix-up itself.
        if params.potential && !b.self_counts.is_null() && (each.is_some() || !masked) && n > 0 {
            // SAFETY: particles, self counts, lengths and out all hold n entries.
            unsafe {
                let what = "launching the self-potential fix-up";
                self.launch(Kernel::SelfPotential { tag, soft }, n.div_ceil(256) as u32, 256, args, what)?
            };
        }
        Ok(())
    }

    /// The batched cell kernel over `n_items` items of a list whose spans index `cells`
    /// (`indexed`: whose items index a flat array of cell indices in `b.spans`).
    pub(crate) fn launch_cells<T: DeviceReal>(
        &self,
        b: &Buffers,
        cells: DevicePointer<u8>,
        n_items: usize,
        n: usize,
        params: &Params<T>,
        indexed: bool,
    ) -> Result<(), Error> {
        let (tag, (eps2, _), g) = (self.family::<T>(), self.kernel_eps2(params)?, params.g);
        let args = CellArgs {
            particles: b.particles,
            cells,
            items: b.items,
            spans: b.spans,
            offset: b.offsets,
            out: b.out,
            slots: b.slots,
            partial: b.partial,
            eps2,
            g,
            n: count(n)?,
        };
        // SAFETY: items index spans, spans index cells (validated), out has one entry
        // per particle; slots as the batched kernel's.
        unsafe {
            let kernel = Kernel::Cells { tag, potential: params.potential, indexed };
            self.launch(kernel, n_items as u32, BLOCK, args, "launching the cell kernel")?
        };
        let batch = BatchArgs {
            particles: b.particles,
            items: b.items,
            spans: b.spans,
            offset: b.offsets,
            self_count: crate::args::null(),
            out: b.out,
            lengths: crate::args::null(),
            slots: b.slots,
            partial: b.partial,
            eps2,
            g,
            n: count(n)?,
        };
        self.launch_reduce(b, batch)
    }

    /// Adds the partial sums of `b`'s runs into its output, in order (nothing when the
    /// launch had no run).
    fn launch_reduce<T: DeviceReal>(&self, b: &Buffers, args: BatchArgs<T>) -> Result<(), Error> {
        if b.n_runs == 0 {
            return Ok(());
        }
        let runs = BatchArgs { items: b.runs, n: count(b.n_runs)?, ..args };
        let blocks = (b.n_runs * GROUP as usize).div_ceil(256);
        // SAFETY: each run names targets below n and slots of partial's blocks.
        unsafe {
            let kernel = Kernel::BatchReduce { tag: self.family::<T>() };
            self.launch(kernel, count(blocks)? as u32, 256, runs, "launching the partial sums' reduction")
        }
    }

    /// Expands and uploads an interaction list over `n` particles, for
    /// [`crate::CudaExecutor::accelerations_batch_resident`]: a tree code whose list serves
    /// several calls (or whose particles stay on the device) pays for it once.
    ///
    /// ```no_run
    /// use nbody_core::{InteractionList, Pair, Params, Particle, Span};
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let ps = vec![Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    /// let spans = [Span::new(0, 2)];
    /// let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) }];
    /// let list = gpu.upload_list(&InteractionList { pairs: &pairs, source_spans: &spans }, ps.len())?;
    /// let set = gpu.upload(&ps)?;
    /// let mut out = gpu.zeroed_fields::<f32>(ps.len())?;
    /// gpu.accelerations_batch_resident(&set, &list, &Params::softened(0.01), &mut out)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn upload_list(&mut self, list: &InteractionList<'_>, n: usize) -> Result<DeviceList, Error> {
        list.validate(n)?;
        self.upload_expanded(list, n, None)
    }

    /// Expands `list` over `n` targets and uploads it: a particle list (`cells` is
    /// `None`), or a cell list whose spans index that many cells (no self terms: its
    /// self counts are not uploaded).
    fn upload_expanded(
        &mut self,
        list: &InteractionList<'_>,
        n: usize,
        cells: Option<usize>,
    ) -> Result<DeviceList, Error> {
        self.gpu.make_current()?;
        let ex = expand(list, n, chunk_for(list, self.gpu.info().sm_count));
        let up = |data: &[u8]| -> Result<DeviceBuffer<u8>, Error> {
            let mut buf = alloc(data.len())?;
            upload_padded(&mut buf, data, 0)?;
            Ok(buf)
        };
        let self_counts: &[u32] = if cells.is_none() { &ex.self_counts } else { &[] };
        Ok(DeviceList {
            items: up(bytemuck::cast_slice(&ex.items))?,
            spans: up(bytemuck::cast_slice(&ex.spans))?,
            offsets: up(bytemuck::cast_slice(&ex.offsets))?,
            self_counts: up(bytemuck::cast_slice(self_counts))?,
            slots: up(bytemuck::cast_slice(&ex.slots))?,
            runs: up(bytemuck::cast_slice(&ex.runs))?,
            partial: alloc(partial_bytes::<f64>(ex.partials))?,
            n_runs: ex.runs.len(),
            n_items: ex.items.len(),
            particles: n,
            cells,
            interactions: list.interactions(),
        })
    }

    /// The device addresses of a resident call over `particles`, `list` and `out`.
    fn resident_buffers<T: DeviceReal>(
        particles: &DeviceParticles<T>,
        list: &DeviceList,
        out: &DeviceFields<T>,
    ) -> Buffers {
        Buffers {
            particles: ptr(&particles.buf),
            items: ptr(&list.items),
            spans: ptr(&list.spans),
            offsets: ptr(&list.offsets),
            self_counts: ptr(&list.self_counts),
            out: ptr(&out.buf),
            lengths: crate::args::null(),
            slots: if list.n_runs > 0 { ptr(&list.slots) } else { crate::args::null() },
            partial: ptr(&list.partial),
            runs: ptr(&list.runs),
            n_runs: list.n_runs,
        }
    }

    /// [`nbody_core::Executor::accelerations_batch`] on the device: particles, list and output all
    /// resident; returns once the launches are queued (a download or
    /// [`crate::timing::time_with_events`] waits for them).
    pub fn accelerations_batch_resident<T: DeviceReal>(
        &mut self,
        particles: &DeviceParticles<T>,
        list: &DeviceList,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<(), Error> {
        validate::params(params)?;
        if list.cells.is_some() {
            return Err(Error::InvalidParameter {
                name: "list",
                requirement: "a particle list (upload_list), not a cell list",
            });
        }
        validate::length("interaction list particles", particles.len(), list.particles)?;
        validate::length("output", particles.len(), out.len())?;
        if list.n_items == 0 {
            return Ok(());
        }
        self.gpu.make_current()?;
        let bufs = Self::resident_buffers(particles, list, out);
        self.launch_batch(&bufs, list.n_items, particles.len(), params, None)
    }
}

/// Far cells on the device ([`crate::CudaExecutor::upload_cells`]).
#[derive(Debug)]
pub struct DeviceCells<T> {
    pub(crate) buf: DeviceBuffer<u8>,
    pub(crate) len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T> DeviceCells<T> {
    /// Number of cells.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no cell.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl crate::CudaExecutor {
    /// Checks and uploads far cells for [`crate::CudaExecutor::accelerations_cells_resident`].
    ///
    /// ```no_run
    /// use nbody_core::cell::Cell;
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let cells = gpu.upload_cells(&[Cell::new(5.0f32, 0.0, 0.0, 1.0, [0.0; 6])])?;
    /// assert_eq!(cells.len(), 1);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn upload_cells<T: DeviceReal>(
        &mut self,
        cells: &[nbody_core::cell::Cell<T>],
    ) -> Result<DeviceCells<T>, Error> {
        nbody_core::cell::check(cells)?;
        self.gpu.make_current()?;
        let bytes: &[u8] = bytemuck::cast_slice(cells);
        let mut buf = alloc(bytes.len())?;
        upload_padded(&mut buf, bytes, 0)?;
        Ok(DeviceCells { buf, len: cells.len(), _t: core::marker::PhantomData })
    }

    /// Expands and uploads a list whose pairs' targets index `n` particles and whose
    /// source spans index `n_cells` cells (a leaf list's cell part: `LeafList::cell_pairs`
    /// over its `cell_spans`).
    pub fn upload_cell_list(
        &mut self,
        list: &InteractionList<'_>,
        n: usize,
        n_cells: usize,
    ) -> Result<DeviceList, Error> {
        list.validate_in(n, n_cells)?;
        self.upload_expanded(list, n, Some(n_cells))
    }

    /// The cell kernel on resident particles, cells and cell list, adding into `out`;
    /// returns once the launch is queued (kernel-only timing with
    /// [`crate::timing::time_with_events`]).
    pub fn accelerations_cells_resident<T: DeviceReal>(
        &mut self,
        particles: &DeviceParticles<T>,
        cells: &DeviceCells<T>,
        list: &DeviceList,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<(), Error> {
        validate::params(params)?;
        match list.cells {
            Some(n) => validate::length("cell list cells", cells.len(), n)?,
            None => {
                return Err(Error::InvalidParameter { name: "list", requirement: "a cell list (upload_cell_list)" });
            }
        }
        validate::length("cell list particles", particles.len(), list.particles)?;
        validate::length("output", particles.len(), out.len())?;
        if list.n_items == 0 {
            return Ok(());
        }
        self.gpu.make_current()?;
        let bufs = Self::resident_buffers(particles, list, out);
        self.launch_cells(
            &bufs,
            ptr(&cells.buf),
            list.n_items,
            particles.len(),
            &params.with_overlap(nbody_core::Overlap::Disjoint),
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nbody_core::Pair;

    #[test]
    fn items_cover_every_interaction_once() {
        let spans = [Span::new(0, 5000), Span::new(7000, 7100), Span::new(3, 3)];
        let pairs = [
            Pair { targets: Span::new(0, 70), sources: Span::new(0, 3) },
            Pair { targets: Span::new(100, 101), sources: Span::new(1, 2) },
        ];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let Expanded { items, spans: cut, offsets, self_counts, slots, runs, partials } = expand(&list, 7200, CHUNK);
        // Targets 0..70 lie in their source span 0..5000 once; nothing else holds a target.
        assert!(self_counts[..70].iter().all(|&c| c == 1) && self_counts[70..].iter().all(|&c| c == 0));
        for i in &items {
            let mut at = 0;
            for s in i.span_first..i.span_last {
                assert_eq!(offsets[s as usize], at);
                at += cut[s as usize].len() as u32;
            }
        }
        let count: usize = items
            .iter()
            .map(|i| {
                let sources: usize = cut[i.span_first as usize..i.span_last as usize].iter().map(Span::len).sum();
                assert!(sources <= CHUNK as usize && i.t1 - i.t0 <= GROUP);
                (i.t1 - i.t0) as usize * sources
            })
            .sum();
        assert_eq!(count, list.interactions());
        assert_eq!(items.len(), 3 * 2 + 1); // 70 targets in 3 groups x 2 chunks; 1 x 1
        // The first pair's groups were cut in two: their items write partial sums, in
        // slots the runs name in order; the second pair's one item adds atomically.
        assert_eq!(slots, [0, 1, 2, 3, 4, 5, NO_SLOT]);
        assert_eq!(partials, 6);
        let run = |t0, t1, s| Item { t0, t1, span_first: s, span_last: s + 2 };
        assert_eq!(runs, [run(0, 32, 0), run(32, 64, 2), run(64, 70, 4)]);
        for (r, pair) in runs.iter().zip(items.chunks(2)) {
            assert!(pair.iter().all(|i| (i.t0, i.t1) == (r.t0, r.t1)));
        }
    }

    #[test]
    fn lists_whose_groups_fill_the_gpu_are_not_cut() {
        // A plain call's one pair: 2^20 targets against 2^20 sources on 132 SMs.
        let spans = [Span::new(0, 1 << 20)];
        let pairs = [Pair { targets: Span::new(0, 1 << 20), sources: Span::new(0, 1) }];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        assert_eq!(chunk_for(&list, 132), 1 << 20);
        // 64 targets against 2^20 sources: cut at CHUNK, so 512 items spread the work.
        let few = [Pair { targets: Span::new(0, 64), sources: Span::new(0, 1) }];
        assert_eq!(chunk_for(&InteractionList { pairs: &few, source_spans: &spans }, 132), CHUNK);
        // 4,096 targets against 2^20: 128 groups; 8,448 items wanted, 16,000 sources each
        // (whole tiles of 128).
        let mid = [Pair { targets: Span::new(0, 4096), sources: Span::new(0, 1) }];
        let c = chunk_for(&InteractionList { pairs: &mid, source_spans: &spans }, 132);
        assert_eq!(c, 16_000);
        let ex = expand(&InteractionList { pairs: &mid, source_spans: &spans }, 1 << 20, c);
        assert_eq!(ex.items.len(), 128 * (1usize << 20).div_ceil(c as usize));
        assert_eq!((ex.runs.len(), ex.partials), (128, ex.items.len()));
    }

    #[test]
    fn kernel_lengths_and_their_least_in_one_pass() {
        // 37 values: two full chunks of sixteen and a tail, the least in the tail once.
        let eps: Vec<f64> = (0..37).map(|i| if i == 35 { 0.001 } else { 0.01 + i as f64 * 1e-3 }).collect();
        for softening in [Softening::Plummer, Softening::Spline] {
            let mut out = vec![f64::NAN; 37];
            let least = write_kernel_lengths(&eps, softening, &mut out);
            for (&e, &v) in eps.iter().zip(&out) {
                let want = match softening.pair_rule() {
                    nbody_core::PairRule::MeanSquare => 0.5 * e * e,
                    nbody_core::PairRule::Larger => nbody_core::SPLINE_SUPPORT * e,
                };
                assert_eq!(v, want);
            }
            assert_eq!(least, out[35]);
        }
        // The least in a full chunk; none at all.
        let mut eps = [3.0f32; 20];
        eps[5] = 0.5;
        let mut out = [0.0f32; 20];
        assert_eq!(write_kernel_lengths(&eps, Softening::Spline, &mut out), out[5]);
        assert!(out[5] < out[4]);
        assert_eq!(write_kernel_lengths::<f32>(&[], Softening::Plummer, &mut []), f32::INFINITY);
        // Plummer masks only when the least target and source lengths together hold nothing.
        assert!(lengths_mask(0.0f32, 0.0) && !lengths_mask(0.0f32, 1e-3) && !lengths_mask(1e-3f32, 0.0));
    }
}
