//! The tidal tensor and the vector-Jacobian product on the device
//! ([`nbody_core::Executor::accelerations_tidal`], [`nbody_core::Executor::vjp`]): the
//! inputs and the outputs (which the calls add into) go up, one thread per target sums
//! over the sources for the field, the tidal tensor or the targets' gradients, one thread
//! per source over the targets for the sources' gradients (kernels/gradients.cuh), and
//! the outputs come back; a system on itself (`Overlap::Identical`) takes the product's
//! three parts in one pass over the pairs instead. A particle's whole gradient (its
//! parts as a target and as a source together: [`nbody_core::Executor::vjp_device`], and
//! [`nbody_core::Executor::vjp_batch`]'s pairs of a span on itself) takes each pair once
//! for both of its particles. f32 and f64 kernels, Plummer and the spline; a mixed
//! executor (an f64 interface over f32 interactions) runs the f64 ones.

use crate::args::{GradArgs, null};
use crate::kernels::{Kernel, Soft, count};
use crate::memory::{download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, EXTRA_C, Family, OUT, PARTIAL, SOURCES, TARGETS};
use cust::memory::DevicePointer;
use nbody_core::calls::{TidalCall, VjpBatchCall, VjpCall};
use nbody_core::kernel::Softened;
use nbody_core::{Error, InteractionList, Pair, Params, Particle};

/// Threads per block (kernels/gradients.cuh's GRAD_BLOCK).
const BLOCK: u32 = 256;

/// Threads per block of the fused kernel (GRAD_FUSED_BLOCK).
const FUSED_BLOCK: u32 = 128;

/// Block rows of a fused launch over `n` particles in `x` blocks: enough for about four
/// waves of sixteen blocks an SM, each row at least 1,024 sources.
fn fused_rows(x: usize, n: usize, sm_count: usize) -> usize {
    (4 * 16 * sm_count).div_ceil(x.max(1)).clamp(1, (n / 1024).max(1))
}

/// A call's kernel constants: the device kernel, its argument (ε² or the support), 1/h,
/// and the kernel's `w(0)`, `g(0)` for the self pairs.
struct Constants<T> {
    soft: Soft,
    masked: bool,
    arg: T,
    h_inv: T,
    w0: T,
    g0: T,
}

impl<T: DeviceReal> Constants<T> {
    fn of(params: &Params<T>) -> Self {
        let k = Softened::of(params);
        let (w0, g0, _) = k.terms(T::zero());
        match k {
            Softened::Plummer { eps2, masked } => {
                Constants { soft: Soft::Plummer, masked, arg: eps2, h_inv: T::zero(), w0, g0 }
            }
            Softened::Spline { h, h_inv } => Constants { soft: Soft::Spline, masked: false, arg: h, h_inv, w0, g0 },
        }
    }
}

/// The kernels' precision for `T` (the f64 ones under a mixed executor).
fn tag<T: DeviceReal>() -> Family {
    if T::FAMILY == Family::Mixed { Family::F64 } else { T::FAMILY }
}

/// Copies `data` into scratch slot `slot` and returns its address.
fn up<X: bytemuck::Pod>(me: &mut CudaExecutor, slot: usize, data: &[X]) -> Result<DevicePointer<u8>, Error> {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    let buf = me.scratch[slot].reserve(bytes.len().max(1))?;
    upload_padded(buf, bytes, bytes.len())?;
    Ok(ptr(buf))
}

/// Copies scratch slot `slot` back into `out`.
fn down<X: bytemuck::Pod>(me: &mut CudaExecutor, slot: usize, out: &mut [X]) -> Result<(), Error> {
    let buf = me.scratch[slot].buf_ref().ok_or(Error::NoDevice)?;
    download(buf, bytemuck::cast_slice_mut(out))
}

/// The launch arguments every gradient kernel shares.
fn base_args<T: DeviceReal>(
    params: &Params<T>,
    n_targets: usize,
    n_sources: usize,
    targets: DevicePointer<u8>,
    sources: DevicePointer<u8>,
) -> Result<GradArgs<T>, Error> {
    let c = Constants::of(params);
    let (t0, s0, len) = params.overlap.resolve(n_targets);
    Ok(GradArgs {
        targets,
        sources,
        cot: null(),
        out: null(),
        tidal: null(),
        grad: null(),
        arg: c.arg,
        h_inv: c.h_inv,
        w0: c.w0,
        g0: c.g0,
        g: params.g,
        n_targets: count(n_targets)?,
        n_sources: count(n_sources)?,
        self_t0: count(t0)?,
        self_s0: count(s0)?,
        self_len: count(len)?,
        potential: params.potential as i32,
        partial: null(),
        chunk: count(n_sources)?,
        slots: null(),
        tiles: 0,
        band0: 0,
        band: 0,
        finish: 0,
    })
}

/// Threads per block of the pair kernels (GRAD_PAIRS_THREADS).
const PAIRS_THREADS: usize = 64;

/// Most bytes of slot rows a pair launch writes unless the executor is told otherwise: a
/// band of diagonals is as wide as they allow (at 65,536 f32 particles, 128 of 256
/// diagonals a band).
pub(crate) const PAIR_SLOT_BYTES: usize = 256 << 20;

/// A pair product's tiling of `n` particles of `T`'s kernels: particles a tile (four a
/// thread in f32, two in f64, 64 threads a block: kernels/gradients.cuh's PairsTile),
/// tiles, and diagonals a band.
fn pairs_tiling<T: DeviceReal>(n: usize, slot_bytes: usize) -> (usize, usize, usize) {
    let tile = if tag::<T>() == Family::F32 { 4 * PAIRS_THREADS } else { 2 * PAIRS_THREADS };
    let tiles = n.div_ceil(tile).max(1);
    let row = tiles * tile * 4 * size_of::<T>();
    (tile, tiles, (slot_bytes / (2 * row)).clamp(1, tiles))
}

impl CudaExecutor {
    /// Queues the fused product of `n` particles on themselves (records at `particles`,
    /// cotangents at `cot`), adding the targets' parts into `gt` and the sources' parts
    /// and mass gradients into `gs`; its sources split into block rows where the particles
    /// alone would leave SMs idle.
    ///
    /// # Safety
    /// Each address holds `n` four-lane records of `T`'s kernels.
    unsafe fn launch_fused<T: DeviceReal>(
        &mut self,
        params: &Params<T>,
        n: usize,
        particles: DevicePointer<u8>,
        cot: DevicePointer<u8>,
        gt: DevicePointer<u8>,
        gs: DevicePointer<u8>,
    ) -> Result<(), Error> {
        let c = Constants::of(params);
        let (tag, soft, masked) = (tag::<T>(), c.soft, c.masked);
        let x = n.div_ceil(FUSED_BLOCK as usize);
        let rows = fused_rows(x, n, self.gpu.info().sm_count as usize);
        let chunk = n.div_ceil(rows).next_multiple_of(FUSED_BLOCK as usize);
        let rows = n.div_ceil(chunk);
        let partial = if rows > 1 { ptr(self.scratch[PARTIAL].reserve(rows * n * 8 * 8)?) } else { null() };
        let base = GradArgs { cot, ..base_args(params, n, n, particles, particles)? };
        let args = GradArgs { grad: gt, out: gs, partial, chunk: count(chunk)?, ..base };
        // SAFETY: the caller's word for the records; eight doubles a particle a row in
        // `partial`.
        unsafe {
            let grid = (x as u32, rows as u32);
            self.launch(Kernel::GradFused { tag, soft, masked }, grid, FUSED_BLOCK, args, "launching the gradients")?;
            if rows > 1 {
                let reduce = GradArgs { chunk: count(rows)?, ..args };
                let blocks = n.div_ceil(BLOCK as usize) as u32;
                self.launch(Kernel::GradFusedReduce { tag }, blocks, BLOCK, reduce, "adding the gradients")?;
            }
        }
        Ok(())
    }

    /// Queues the whole product of `n` particles on themselves (records at `particles`,
    /// cotangents at `cot`), each pair evaluated once for both of its particles, adding
    /// each particle's whole gradient (its parts as a target and as a source, and its
    /// mass gradient) into `grad`: bands of tile diagonals, each band's slot rows added
    /// in order into four doubles a particle.
    ///
    /// # Safety
    /// Each address holds `n` four-lane records of `T`'s kernels.
    pub(crate) unsafe fn launch_pairs<T: DeviceReal>(
        &mut self,
        params: &Params<T>,
        n: usize,
        particles: DevicePointer<u8>,
        cot: DevicePointer<u8>,
        grad: DevicePointer<u8>,
    ) -> Result<(), Error> {
        let c = Constants::of(params);
        let (tag, soft, masked, potential) = (tag::<T>(), c.soft, c.masked, params.potential);
        let (tile, tiles, width) = pairs_tiling::<T>(n, self.pair_slot_bytes);
        let padded = tiles * tile;
        let (slots, partial) = self.reserve_pairs::<T>(n)?;
        let base = GradArgs {
            cot,
            grad,
            slots,
            partial,
            tiles: count(tiles)?,
            chunk: count(tile)?,
            ..base_args(params, n, n, particles, particles)?
        };
        let mut band0 = 0;
        while band0 < tiles {
            let band = width.min(tiles - band0);
            let finish = band0 + band == tiles;
            let args = GradArgs { band0: count(band0)?, band: count(band)?, finish: finish as i32, ..base };
            // SAFETY: the caller's word for the records; 2 band rows of padded records in
            // `slots`, four doubles a padded particle in `partial`.
            unsafe {
                let grid = ((tiles - band0) as u32, band as u32);
                let pairs = Kernel::GradPairs { tag, soft, masked, potential };
                self.launch(pairs, grid, PAIRS_THREADS as u32, args, "launching the pair gradients")?;
                let blocks = padded.div_ceil(BLOCK as usize) as u32;
                self.launch(Kernel::GradPairsReduce { tag }, blocks, BLOCK, args, "adding the pair gradients")?;
            }
            band0 += band;
        }
        Ok(())
    }

    /// The slot rows and double sums of a pair product of `n` particles.
    fn reserve_pairs<T: DeviceReal>(&mut self, n: usize) -> Result<(DevicePointer<u8>, DevicePointer<u8>), Error> {
        let (tile, tiles, width) = pairs_tiling::<T>(n, self.pair_slot_bytes);
        let padded = tiles * tile;
        let slots = ptr(self.scratch[EXTRA_A].reserve(2 * width * padded * 4 * size_of::<T>())?);
        Ok((slots, ptr(self.scratch[PARTIAL].reserve(padded * 4 * 8)?)))
    }

    /// [`nbody_core::Executor::vjp_batch`]: a pair whose only source span is its targets
    /// (a system, or a leaf, on itself) runs the pair kernels on the device, each pair of
    /// particles once; the other pairs run the core's loops on the host, added after.
    pub(crate) fn vjp_batch_call<T: DeviceReal>(&mut self, call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        let VjpBatchCall { particles, list, params, cotangents, grads } = call;
        let on_itself = |p: &Pair| matches!(list.sources_of(p), [s] if *s == p.targets);
        let (own, rest): (Vec<Pair>, Vec<Pair>) = list.pairs.iter().partition(|p| on_itself(p));
        if !own.is_empty() {
            let sz = 4 * size_of::<T>();
            self.guarded(|me| {
                let x = up(me, SOURCES, particles)?;
                let cot = up(me, TARGETS, cotangents)?;
                let g = up(me, OUT, grads)?;
                // The longest span's buffers first, so no launch waits on a reallocation.
                let longest = own.iter().map(|p| p.targets.len()).max().unwrap_or(0);
                me.reserve_pairs::<T>(longest)?;
                for pair in &own {
                    let (at, len) = (pair.targets.start as usize, pair.targets.len());
                    if len == 0 {
                        continue;
                    }
                    let shift = |d: DevicePointer<u8>| DevicePointer::from_raw(d.as_raw() + (at * sz) as u64);
                    // SAFETY: the pair's span lies inside the uploaded records (validated),
                    // as many cotangents and gradients.
                    unsafe { me.launch_pairs(params, len, shift(x), shift(cot), shift(g))? };
                }
                me.gpu.stream().synchronize().map_err(crate::device::cuda("running the pair gradients"))?;
                down(me, OUT, grads)
            })?;
        }
        if !rest.is_empty() {
            let list = InteractionList { pairs: &rest, source_spans: list.source_spans };
            nbody_core::vjp_batch_loops(VjpBatchCall { particles, list: &list, params, cotangents, grads });
        }
        Ok(())
    }

    /// [`nbody_core::Executor::vjp_device`]: the particles and cotangents packed and
    /// checked on the device, each particle's whole gradient from the pair kernels
    /// ([`CudaExecutor::launch_pairs`]), and the sums unpacked into the caller's gradient
    /// arrays.
    ///
    /// # Safety
    /// As the trait method's.
    pub(crate) unsafe fn device_vjp_call<T: DeviceReal>(
        &mut self,
        call: nbody_core::columns::DeviceVjp,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let n = call.n;
        let columns = nbody_core::columns::DeviceColumns {
            device: call.device,
            positions: call.positions,
            masses: call.masses,
            n,
            targets: None,
            acc: call.grad_positions,
            phi: Some(call.grad_masses),
            velocities: None,
            jerk: None,
            streams: call.streams,
        };
        self.device_preamble::<T>(&columns, params, "vjp_device on the mixed kernels")?;
        let mut p = params.with_overlap_identical();
        p.potential = call.cot_phi.is_some();
        let sz = 4 * size_of::<T>();
        self.guarded(|me| {
            // SAFETY: the caller's contract.
            unsafe { me.pack_device_particles::<T>(&columns)? };
            if n == 0 {
                return Ok(());
            }
            me.check_owned("cot_acc", call.cot_acc)?;
            if let Some(c) = call.cot_phi {
                me.check_owned("cot_phi", c)?;
            }
            // The cotangents as records [cx, cy, cz, c_phi], checked like coordinates.
            let flags = me.scratch[EXTRA_C].reserve(8)?;
            upload_padded(flags, bytemuck::cast_slice(&[i32::MAX; 2]), 0)?;
            let flags = ptr(flags);
            let cot = ptr(me.scratch[TARGETS].reserve(n * sz)?);
            let device = DevicePointer::<u8>::from_raw;
            let args = crate::args::ColumnsArgs {
                records: cot,
                rows: device(call.cot_acc),
                column: call.cot_phi.map_or(null(), device),
                first_bad: flags,
                n: count(n)?,
                padded: count(n)?,
            };
            // SAFETY: the rows hold 3 n values and the column n (the caller's word), the
            // records n, the flags two ints.
            unsafe { me.launch_columns::<T>(false, n, args, "packing cotangents")? };
            me.gpu.stream().synchronize().map_err(crate::device::cuda("packing cotangents"))?;
            let mut found = [i32::MAX; 2];
            download(me.scratch[EXTRA_C].reserve(0)?, bytemuck::cast_slice_mut(&mut found))?;
            // (The second flag marks a negative potential cotangent, which is allowed.)
            if found[0] != i32::MAX {
                return Err(me.flagged_record::<T>(TARGETS, nbody_core::Array::Cotangents, found[0] as usize)?);
            }
            let gs = me.scratch[EXTRA_B].reserve(n * sz)?;
            upload_padded(gs, &[], n * sz)?;
            let gs = ptr(gs);
            let particles = ptr(me.scratch[SOURCES].buf_ref().ok_or(Error::NoDevice)?);
            // SAFETY: n packed particles and cotangents, n zeroed whole gradients.
            unsafe { me.launch_pairs(&p, n, particles, cot, gs)? };
            let unpack = crate::args::ColumnsArgs {
                records: gs,
                rows: device(call.grad_positions),
                column: device(call.grad_masses),
                first_bad: null(),
                n: count(n)?,
                padded: count(n)?,
            };
            // SAFETY: n records in; 3 n rows and n values out (the caller's word).
            unsafe { me.launch_columns::<T>(true, n, unpack, "unpacking the gradients")? };
            me.gpu.stream().synchronize().map_err(crate::device::cuda("running the gradient kernel"))
        })
    }

    /// See the module documentation.
    pub(crate) fn tidal_call<T: DeviceReal>(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        let TidalCall { targets, sources, params, out, tidal } = call;
        let c = Constants::of(params);
        let (n, ns) = (targets.len(), sources.len());
        self.guarded(|me| {
            let t = up(me, TARGETS, targets)?;
            let s = up(me, SOURCES, sources)?;
            let o = up(me, OUT, out)?;
            let td = up(me, EXTRA_A, tidal)?;
            let args = GradArgs { out: o, tidal: td, ..base_args(params, n, ns, t, s)? };
            let kernel = Kernel::GradTargets { tag: tag::<T>(), soft: c.soft, masked: c.masked, gradient: false };
            // SAFETY: n target records, ns source records, n outputs and 6 n tensor lanes,
            // uploaded above.
            unsafe { me.launch(kernel, n.div_ceil(BLOCK as usize) as u32, BLOCK, args, "launching the tidal kernel")? };
            me.gpu.stream().synchronize().map_err(crate::device::cuda("running the tidal kernel"))?;
            down(me, OUT, out)?;
            down(me, EXTRA_A, tidal)
        })
    }

    /// See the module documentation.
    pub(crate) fn vjp_call<T: DeviceReal>(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        let VjpCall { targets, sources, params, cotangents, target_grads, source_grads } = call;
        let c = Constants::of(params);
        let (n, ns) = (targets.len(), sources.len());
        self.guarded(|me| {
            let t = up(me, TARGETS, targets)?;
            let s = up(me, SOURCES, sources)?;
            let cot = up(me, EXTRA_A, cotangents)?;
            let gt = up(me, OUT, target_grads)?;
            let gs = up(me, EXTRA_B, source_grads)?;
            let base = GradArgs { cot, ..base_args(params, n, ns, t, s)? };
            let (tag, soft, masked) = (tag::<T>(), c.soft, c.masked);
            let blocks = |k: usize| k.div_ceil(BLOCK as usize) as u32;
            if params.overlap == nbody_core::Overlap::Identical {
                // A system on itself (validated: the same records): one pass.
                // SAFETY: n records, cotangents and gradients of each kind, uploaded above.
                unsafe { me.launch_fused(params, n, t, cot, gt, gs)? };
                me.gpu.stream().synchronize().map_err(crate::device::cuda("running the gradient kernel"))?;
                down(me, OUT, target_grads)?;
                return down::<Particle<T>>(me, EXTRA_B, source_grads);
            }
            // SAFETY: n target records, cotangents and target gradients, ns source records
            // and source gradients, uploaded above.
            unsafe {
                me.launch(
                    Kernel::GradTargets { tag, soft, masked, gradient: true },
                    blocks(n),
                    BLOCK,
                    GradArgs { grad: gt, ..base },
                    "launching the targets' gradient kernel",
                )?;
                me.launch(
                    Kernel::GradSources { tag, soft, masked },
                    blocks(ns),
                    BLOCK,
                    GradArgs { grad: gs, ..base },
                    "launching the sources' gradient kernel",
                )?;
            }
            me.gpu.stream().synchronize().map_err(crate::device::cuda("running the gradient kernels"))?;
            down(me, OUT, target_grads)?;
            down::<Particle<T>>(me, EXTRA_B, source_grads)
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pair_bands_fit_their_bound() {
        use super::{PAIR_SLOT_BYTES, pairs_tiling};
        // 65,536 f32 particles: 256 tiles of 256, rows of 1 MiB, 128 diagonals a band.
        assert_eq!(pairs_tiling::<f32>(65_536, PAIR_SLOT_BYTES), (256, 256, 128));
        // f64: 512 tiles of 128, rows of 2 MiB.
        assert_eq!(pairs_tiling::<f64>(65_536, PAIR_SLOT_BYTES), (128, 512, 64));
        // Few particles: every diagonal in one band; a bound too small still gives one.
        assert_eq!(pairs_tiling::<f32>(1_000, PAIR_SLOT_BYTES), (256, 4, 4));
        assert_eq!(pairs_tiling::<f32>(1_000, 1), (256, 4, 1));
        assert_eq!(pairs_tiling::<f64>(0, PAIR_SLOT_BYTES), (128, 1, 1));
    }

    #[test]
    fn fused_launches_fill_the_gpu_but_keep_rows_long() {
        // 65,536 particles on 132 SMs: 512 blocks of 128, 17 rows of at least 1,024.
        assert_eq!(super::fused_rows(512, 65_536, 132), 17);
        assert_eq!(super::fused_rows(8, 1000, 132), 1);
        assert_eq!(super::fused_rows(8192, 1 << 20, 132), 2);
    }
}
