//! Launches of the jerk kernel (acceleration, potential and jerk, optionally with
//! neighbours): how many threads share a target, how the sources are split over thread
//! blocks when the targets are few, and the host side of the neighbour results.

use crate::args::{JerkArgs, JerkExtra, ListsArgs, null};
use crate::kernels::{Kernel, count};
use crate::memory::{download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceReal, SOURCE_PAD};
use cust::memory::DevicePointer;
use nbody_core::jmemory::PackedLists;
use nbody_core::neighbours::Neighbours;
use nbody_core::{Bodies, Error, Field, Jerk, Params, Velocity};

/// Threads per block of the jerk kernel.
const BLOCK: usize = 128;

/// How one jerk launch covers `n_targets` x `n_sources_padded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Threads per target (1, or 4 when fewer than a block's worth of targets).
    pub threads_per_target: usize,
    /// Targets per thread (2 in f64 from [`TWO_PER_THREAD`] targets up, else 1).
    pub targets_per_thread: usize,
    /// Sources per chunk (a multiple of the block) and the number of chunks.
    pub chunk: usize,
    pub chunks: usize,
}

/// Targets from which each thread takes two in f64 (each shared-memory load then serves
/// two interactions; below this, the blocks would be too few). Not in f32, whose loads
/// are half the size: there the second target's registers cost more than the load saves.
pub(crate) const TWO_PER_THREAD: usize = 8 * BLOCK;

impl Plan {
    /// One thread per target while there are a block's worth of targets, four below
    /// (and in f64, `wide`, two targets per thread from [`TWO_PER_THREAD`] up; or
    /// `per_thread` if given);
    /// then, if the blocks cannot fill the GPU, the sources are cut into chunks
    /// ([`crate::tuning::split_sources`]) that separate blocks sum, combined afterwards in chunk
    /// order.
    pub(crate) fn new(
        n_targets: usize,
        n_sources_padded: usize,
        sm_count: u32,
        per_thread: Option<usize>,
        wide: bool,
    ) -> Self {
        let threads_per_target = if n_targets >= BLOCK { 1 } else { 4 };
        let targets_per_thread = match per_thread {
            Some(2) if threads_per_target == 1 => 2,
            Some(_) => 1,
            None if wide && n_targets >= TWO_PER_THREAD => 2,
            None => 1,
        };
        let blocks = n_targets.div_ceil(BLOCK / threads_per_target * targets_per_thread).max(1);
        let (chunk, chunks) = crate::tuning::split_sources(blocks, n_sources_padded, BLOCK, sm_count);
        Plan { threads_per_target, targets_per_thread, chunk, chunks }
    }

    fn blocks(&self, n_targets: usize) -> u32 {
        n_targets.div_ceil(BLOCK / self.threads_per_target * self.targets_per_thread) as u32
    }
}

/// Scratch slots of the jerk launch beyond the executor's common ones.
pub(crate) const PART_ACC: usize = 7;
const PART_JERK: usize = 8;
const PART_NEAR: usize = 9;
const H2: usize = 10;
const COUNTS: usize = 11;
const LISTS: usize = 12;
const NEAR_INDEX: usize = 13;
const NEAR_R2: usize = 14;
const LIST_META: usize = 15;
const LIST_PACKED: usize = 16;
const AHEAD: usize = 17;
const INSIDE: usize = 18;
// The partials are the 8th to 10th of 19 slots (stage_jerk picks them by place).
const _: () = assert!(PART_ACC == 7 && PART_JERK == 8 && PART_NEAR == 9 && SLOTS == 19);
/// Slots the executor holds in all.
pub(crate) const SLOTS: usize = 19;

/// The lists a jerk call searches: the sources with unsoftened r² ≤ `radius2[i]`, or
/// with `ahead`, also those whose separation looked ahead by `ahead[i]` (`dx + dt dv`)
/// comes within it, stored in `capacity` slots a target (counted beyond them); with
/// `exclude`, every source listed (stored or not) is left out of the target's sums.
///
/// ```no_run
/// use nbody_core::{Bodies, Field, Jerk, Particle, Velocity};
/// let mut gpu = nbody_cuda::CudaExecutor::new()?;
/// let mut jm = nbody_cuda::DeviceJMemory::new(&mut gpu)?;
/// jm.replace(&mut gpu, &[Particle::new(0.5, 0.0, 0.0, 1.0)], &[Velocity::new(0.0, 0.0, 0.0)])?;
/// let (pos, vel) = ([Particle::new(0.0, 0.0, 0.0, 0.0)], [Velocity::new(0.0, 0.0, 0.0)]);
/// let (mut out, mut jerk) = ([Field::zero()], [Jerk::zero()]);
/// let lists = nbody_cuda::ListSearch { radius2: &[1.0], capacity: 4, ahead: None, exclude: true, inside: None };
/// let packed = jm.forces_and_lists(&mut gpu, 1, 0.0, Bodies { pos: &pos, vel: &vel }, &[-1], 0.0, &mut out, &mut jerk, lists)?;
/// assert_eq!((packed.list(0), out[0].ax), (&[0u32][..], 0.0)); // listed, so left out
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ListSearch<'a, T> {
    /// Each target's squared radius.
    pub radius2: &'a [T],
    /// Slots a target.
    pub capacity: usize,
    /// Each target's look-ahead step, or `None`.
    pub ahead: Option<&'a [T]>,
    /// Whether the listed sources are left out of the sums.
    pub exclude: bool,
    /// Each target's squared radius within which (now or looked ahead) a listed source
    /// is surely what the caller looks for, or `None`: such entries carry
    /// [`PackedLists::INSIDE`](nbody_core::jmemory::PackedLists::INSIDE), so that the
    /// caller need not look at them again. Meant a margin inside `radius2`, wider than
    /// the distances' rounding (float separations on a mixed executor).
    pub inside: Option<&'a [T]>,
}

/// Where a jerk launch reads and writes: targets and their velocities (`n`), sources and
/// theirs (`padded`, massless beyond `n_src`), outputs (`n`, added into).
#[derive(Clone, Copy)]
pub(crate) struct JerkBuffers {
    pub targets: DevicePointer<u8>,
    pub target_vel: DevicePointer<u8>,
    pub sources: DevicePointer<u8>,
    pub source_vel: DevicePointer<u8>,
    pub out: DevicePointer<u8>,
    pub jerk: DevicePointer<u8>,
}

/// A staged jerk call: what the launches need, all on the device.
pub(crate) struct Staged {
    plan: Plan,
    extra: JerkExtra,
    bufs: JerkBuffers,
    n: usize,
    n_src: usize,
    padded: usize,
    neighbours: bool,
}

impl Staged {
    /// A call on buffers the caller owns (device-resident particles), without neighbours;
    /// `partials` supplies the split launch's partial sums (grown as needed).
    #[allow(clippy::too_many_arguments)] // sizes and buffers of a resident launch
    pub(crate) fn resident(
        bufs: JerkBuffers,
        n: usize,
        n_src: usize,
        padded: usize,
        sm_count: u32,
        per_thread: Option<usize>,
        partials: &mut [crate::memory::Scratch; 3],
        (t_size, wide): (usize, bool),
    ) -> Result<Self, Error> {
        let plan = Plan::new(n, padded, sm_count, per_thread, wide);
        let [acc, jerk, near] = partials;
        let extra = JerkExtra::with_partials(&plan, n, t_size, [acc, jerk, near])?;
        Ok(Staged { plan, extra, bufs, n, n_src, padded, neighbours: false })
    }

    /// Adds neighbour finding to a resident call: the buffers in `exec`'s scratch (where
    /// [`CudaExecutor::merge_neighbours`] reads them) and each target's own source index
    /// (`own`, device ints; -1 for none) in place of the overlap's.
    pub(crate) fn with_neighbours(
        mut self,
        exec: &mut CudaExecutor,
        within: Option<ListSearch<'_, f64>>,
        own: DevicePointer<u8>,
    ) -> Result<Self, Error> {
        let n = self.n;
        exec.neighbour_buffers::<f64>(n, within, &mut self.extra)?;
        self.extra.own = own;
        self.neighbours = true;
        Ok(self)
    }
}

impl JerkExtra {
    /// No neighbour buffers; the partial sums of a split launch (`plan.chunks > 1`) in
    /// `partials` (acceleration, jerk, nearest index), grown as needed.
    fn with_partials(
        plan: &Plan,
        n: usize,
        t_size: usize,
        [acc, jerk, near]: [&mut crate::memory::Scratch; 3],
    ) -> Result<Self, Error> {
        let mut extra = Self::none();
        if plan.chunks > 1 {
            let parts = plan.chunks * n;
            extra.acc_part = ptr(acc.reserve(parts * 4 * t_size)?);
            extra.jerk_part = ptr(jerk.reserve(parts * 4 * t_size)?);
            extra.near_part = ptr(near.reserve(parts * 4)?);
        }
        Ok(extra)
    }

    fn none() -> Self {
        JerkExtra {
            acc_part: null(),
            jerk_part: null(),
            near_part: null(),
            h2: null(),
            counts: null(),
            lists: null(),
            capacity: 0,
            near_index: null(),
            near_r2: null(),
            own: null(),
            ahead: null(),
            inside: null(),
            exclude: 0,
        }
    }
}

impl CudaExecutor {
    /// The jerk call (validated by the caller; targets not empty): stage, launch (split
    /// by sources when the targets are few), combine, download, merge the neighbours.
    pub(crate) fn run_jerk<T: DeviceReal>(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        neighbours: Option<&mut Neighbours<'_, T>>,
    ) -> Result<(), Error> {
        self.guarded(|me| {
            let staged = me.stage_jerk(targets, sources, out, jerk, neighbours.as_deref())?;
            me.launch_jerk(&staged, params)?;
            me.sync_download(crate::OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))?;
            me.sync_download(crate::EXTRA_C, bytemuck::cast_slice_mut::<Jerk<T>, T>(jerk))?;
            if let Some(nb) = neighbours {
                me.merge_neighbours(staged.n, nb)?;
            }
            Ok(())
        })
    }

    /// Uploads a jerk call's inputs and sizes its partial and neighbour buffers.
    pub(crate) fn stage_jerk<T: DeviceReal>(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        out: &[Field<T>],
        jerk: &[Jerk<T>],
        neighbours: Option<&Neighbours<'_, T>>,
    ) -> Result<Staged, Error> {
        let me = self;
        let (n, n_src) = (targets.pos.len(), sources.pos.len());
        let padded = me.stage(targets.pos, sources.pos, out)?;
        let vsize = size_of::<Velocity<T>>();
        let tv = me.scratch[crate::EXTRA_A].reserve(std::mem::size_of_val(targets.vel))?;
        upload_padded(tv, bytemuck::cast_slice(targets.vel), 0)?;
        let sv = me.scratch[crate::EXTRA_B].reserve(padded * vsize)?;
        upload_padded(sv, bytemuck::cast_slice(sources.vel), padded * vsize)?;
        let j = me.scratch[crate::EXTRA_C].reserve(std::mem::size_of_val(jerk))?;
        upload_padded(j, bytemuck::cast_slice(jerk), 0)?;
        let plan = Plan::new(
            n,
            padded,
            me.gpu.info().sm_count,
            me.jerk_per_thread,
            me.two_per_thread::<T>(neighbours.is_some()),
        );
        // Slots PART_ACC, PART_JERK, PART_NEAR (the pattern's places; asserted below).
        let [.., acc, jerk, near, _, _, _, _, _, _, _, _, _] = &mut me.scratch;
        let mut extra = JerkExtra::with_partials(&plan, n, size_of::<T>(), [acc, jerk, near])?;
        if let Some(nb) = neighbours {
            let within = nb.within.as_ref().map(|w| ListSearch {
                radius2: w.radius2,
                capacity: w.capacity,
                ahead: None,
                exclude: false,
                inside: None,
            });
            me.neighbour_buffers(n, within, &mut extra)?;
        }
        let b = |k: usize| me.scratch[k].buf_ref().map(|b| ptr(b)).ok_or(Error::NoDevice);
        let bufs = JerkBuffers {
            targets: b(crate::TARGETS)?,
            target_vel: b(crate::EXTRA_A)?,
            sources: b(crate::SOURCES)?,
            source_vel: b(crate::EXTRA_B)?,
            out: b(crate::OUT)?,
            jerk: b(crate::EXTRA_C)?,
        };
        Ok(Staged { plan, extra, bufs, n, n_src, padded, neighbours: neighbours.is_some() })
    }

    /// Sizes (and for lists, fills) the neighbour buffers of a call on `n` targets and
    /// points `extra` at them.
    fn neighbour_buffers<T: DeviceReal>(
        &mut self,
        n: usize,
        within: Option<ListSearch<'_, T>>,
        extra: &mut JerkExtra,
    ) -> Result<(), Error> {
        extra.near_index = ptr(self.scratch[NEAR_INDEX].reserve(n * 4)?);
        extra.near_r2 = ptr(self.scratch[NEAR_R2].reserve(n * size_of::<T>())?);
        if let Some(ListSearch { radius2, capacity, ahead, exclude, inside }) = within {
            let cap = i32::try_from(capacity)
                .map_err(|_| Error::InvalidParameter { name: "capacity", requirement: "below 2^31 on the GPU" })?;
            let h2 = self.scratch[H2].reserve(n * size_of::<T>())?;
            upload_padded(h2, bytemuck::cast_slice(radius2), 0)?;
            extra.h2 = ptr(h2);
            let counts = self.scratch[COUNTS].reserve(n * 4)?;
            upload_padded(counts, &[], n * 4)?;
            extra.counts = ptr(counts);
            extra.lists = ptr(self.scratch[LISTS].reserve((n * capacity * 4).max(4))?);
            extra.capacity = cap;
            extra.exclude = i32::from(exclude);
            if let Some(dt) = ahead {
                let slot = self.scratch[AHEAD].reserve(n * size_of::<T>())?;
                upload_padded(slot, bytemuck::cast_slice(dt), 0)?;
                extra.ahead = ptr(slot);
            }
            if let Some(r2) = inside {
                let slot = self.scratch[INSIDE].reserve(n * size_of::<T>())?;
                upload_padded(slot, bytemuck::cast_slice(r2), 0)?;
                extra.inside = ptr(slot);
            }
        }
        Ok(())
    }

    /// Queues the jerk kernel (and the reduction of a split launch) on staged buffers.
    /// Each launch adds into the staged outputs.
    pub(crate) fn launch_jerk<T: DeviceReal>(&self, st: &Staged, params: &Params<T>) -> Result<(), Error> {
        let (n, plan, extra) = (st.n, st.plan, st.extra);
        let neighbours = st.neighbours;
        let (tag, (eps2, masked)) = (self.family::<T>(), self.kernel_eps2(params)?);
        let potential = params.potential;
        let (t0, s0, len) = params.overlap.resolve(n);
        let JerkBuffers { targets: tx, target_vel: txv, sources: sx, source_vel: sxv, out: o, jerk: jo } = st.bufs;
        let kernel = Kernel::Jerk {
            tag,
            threads_per_target: plan.threads_per_target,
            targets_per_thread: plan.targets_per_thread,
            potential,
            masked,
            neighbours,
        };
        let grid = (plan.blocks(n), plan.chunks as u32);
        debug_assert!(st.padded.is_multiple_of(SOURCE_PAD) && plan.chunk.is_multiple_of(BLOCK));
        let args = JerkArgs {
            targets: tx,
            target_vel: txv,
            sources: sx,
            source_vel: sxv,
            out: o,
            jerk: jo,
            eps2,
            g: params.g,
            n_targets: count(n)?,
            n_sources: count(st.n_src)?,
            n_sources_padded: count(st.padded)?,
            chunk: count(plan.chunk)?,
            self_t0: count(t0)?,
            self_s0: count(s0)?,
            self_len: count(len)?,
            x: extra,
        };
        // SAFETY: targets, velocities and outputs hold n records, sources and their
        // velocities `padded`; the partial and neighbour buffers were sized by
        // stage_jerk for this plan (null only where the kernel does not touch them).
        unsafe { self.launch(kernel, grid, BLOCK as u32, args, "launching the jerk kernel")? };
        if plan.chunks > 1 {
            let reduce = Kernel::JerkReduce { tag, potential, masked, neighbours };
            let args = JerkArgs { chunk: count(plan.chunks)?, ..args };
            let blocks = n.div_ceil(BLOCK) as u32;
            // SAFETY: the partial buffers hold chunks x n entries written above.
            unsafe { self.launch(reduce, blocks, BLOCK as u32, args, "launching the jerk reduction")? };
        }
        Ok(())
    }

    /// Adds the launch's neighbour results into `nb`: nearest offered, each target's new
    /// list entries sorted (when none was lost) and appended after what it held.
    pub(crate) fn merge_neighbours<T: DeviceReal>(
        &mut self,
        n: usize,
        nb: &mut Neighbours<'_, T>,
    ) -> Result<(), Error> {
        let offset = nb.index_offset;
        self.merge_nearest(n, nb.nearest, offset)?;
        if let Some(w) = &mut nb.within {
            let packed = self.pack_lists(n, w.capacity)?;
            for i in 0..n {
                for &j in packed.list(i) {
                    w.push(i, offset + j);
                }
                // Entries the device could not store still count (the list overflowed).
                let unstored = packed.counts[i] - packed.list(i).len() as u32;
                w.counts[i] = w.counts[i].saturating_add(unstored);
            }
        }
        Ok(())
    }

    /// A scratch slot's buffer (reserved by the launch that wrote it).
    fn slot(&self, k: usize) -> Result<&cust::memory::DeviceBuffer<u8>, Error> {
        self.scratch[k].buf_ref().ok_or(Error::NoDevice)
    }

    /// Offers each target's nearest source of the last jerk launch to `nearest`
    /// (indices shifted by `offset`).
    pub(crate) fn merge_nearest<T: DeviceReal>(
        &mut self,
        n: usize,
        nearest: &mut [nbody_core::neighbours::Nearest<T>],
        offset: u32,
    ) -> Result<(), Error> {
        let (mut index, mut r2) = (vec![0i32; n], vec![T::zero(); n]);
        download(self.slot(NEAR_INDEX)?, bytemuck::cast_slice_mut(&mut index))?;
        download(self.slot(NEAR_R2)?, bytemuck::cast_slice_mut(&mut r2))?;
        for (i, (&j, &d)) in index.iter().zip(&r2).enumerate() {
            if j != i32::MAX {
                nearest[i].offer(offset + j as u32, d);
            }
        }
        Ok(())
    }

    /// The last jerk launch's neighbour lists (`n` targets, `capacity` slots each) and
    /// nearest sources, packed on the device and read back in two copies, each list
    /// sorted.
    pub(crate) fn pack_lists(&mut self, n: usize, capacity: usize) -> Result<PackedLists, Error> {
        let meta_bytes = (3 * n + 1) * 4;
        let meta = self.scratch[LIST_META].reserve(meta_bytes)?;
        meta.index(..meta_bytes).set_zero().map_err(crate::device::cuda("zeroing the list counter"))?;
        self.scratch[LIST_PACKED].reserve((n * capacity * 4).max(4))?;
        let args = ListsArgs {
            counts: ptr(self.slot(COUNTS)?),
            lists: ptr(self.slot(LISTS)?),
            near_index: ptr(self.slot(NEAR_INDEX)?),
            meta: ptr(self.slot(LIST_META)?),
            compact: ptr(self.slot(LIST_PACKED)?),
            capacity: count(capacity)?,
            n: count(n)?,
        };
        let blocks = (n as u32).div_ceil(BLOCK as u32);
        // SAFETY: counts and near_index hold n words, meta 3 n + 1, lists and compact
        // n x capacity.
        unsafe { self.launch(Kernel::CompactLists, blocks, BLOCK as u32, args, "packing the neighbour lists")? };
        let mut meta = vec![0u32; 3 * n + 1];
        download(self.slot(LIST_META)?, bytemuck::cast_slice_mut(&mut meta))?;
        let total = meta[3 * n] as usize;
        let mut entries = vec![0u32; total];
        download(self.slot(LIST_PACKED)?, bytemuck::cast_slice_mut(&mut entries))?;
        let (mut counts, mut start, mut nearest) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for m in meta[..3 * n].chunks_exact(3) {
            let (c, s, j) = (m[0], m[1], m[2]);
            counts.push(c);
            start.push(s);
            nearest.push((j != NO_NEIGHBOUR).then_some(j));
            let stored = (c as usize).min(capacity);
            if stored > 1 {
                let list = &mut entries[s as usize..s as usize + stored];
                // In index order, whatever the marks.
                let index = |e: &u32| e & !PackedLists::INSIDE;
                if !list.is_sorted_by_key(index) {
                    list.sort_unstable_by_key(index);
                }
            }
        }
        Ok(PackedLists { counts, start, entries, capacity, nearest })
    }
}

/// What the jerk kernel writes for a target without a nearest source.
const NO_NEIGHBOUR: u32 = 0x7fff_ffff;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_targets_split_the_sources_to_fill_the_gpu() {
        let p = Plan::new(256, 1 << 20, 132, None, true);
        assert_eq!(p.threads_per_target, 1);
        assert!(p.chunks * p.blocks(256) as usize >= 3 * 132, "{p:?}"); // chunks rounded to whole tiles
        assert!(p.chunk.is_multiple_of(BLOCK) && p.chunk * p.chunks >= 1 << 20 && p.chunk * (p.chunks - 1) < 1 << 20);
        let dense = Plan::new(1 << 20, 1 << 20, 132, None, true);
        assert_eq!((dense.threads_per_target, dense.targets_per_thread, dense.chunks), (1, 2, 1));
        assert_eq!(Plan::new(1 << 20, 1 << 20, 132, Some(1), true).targets_per_thread, 1);
        assert_eq!(Plan::new(1 << 20, 1 << 20, 132, None, false).targets_per_thread, 1); // f32
        assert_eq!(Plan::new(100, 1 << 20, 132, Some(2), true).targets_per_thread, 1); // four threads per target
        let tiny = Plan::new(10, 2048, 132, None, true);
        assert_eq!((tiny.threads_per_target, tiny.chunks), (4, 2)); // chunks of at least 8 tiles
        assert_eq!(Plan::new(5, 256, 132, None, true).chunks, 1);
    }
}
