//! The tidal tensor and the vector-Jacobian product on the device
//! ([`nbody_core::Executor::accelerations_tidal`], [`nbody_core::Executor::vjp`]): the
//! inputs and the outputs (which the calls add into) go up, one thread per target sums
//! over the sources for the field, the tidal tensor or the targets' gradients, one thread
//! per source over the targets for the sources' gradients (kernels/gradients.cuh), and
//! the outputs come back; a system on itself (`Overlap::Identical`) takes the product's
//! three parts in one pass over the pairs instead. f32 and f64 kernels, Plummer and the
//! spline; a mixed executor (an f64 interface over f32 interactions) runs the f64 ones.

use crate::args::{GradArgs, null};
use crate::kernels::{Kernel, Soft, count};
use crate::memory::{download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, Family, OUT, PARTIAL, SOURCES, TARGETS};
use cust::memory::DevicePointer;
use nbody_core::calls::{TidalCall, VjpCall};
use nbody_core::kernel::Softened;
use nbody_core::{Error, Params, Particle};

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
    })
}

impl CudaExecutor {
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
                // A system on itself (validated: the same records): one pass, its sources
                // split into rows where the particles alone would leave SMs idle.
                let x = n.div_ceil(FUSED_BLOCK as usize);
                let rows = fused_rows(x, n, me.gpu.info().sm_count as usize);
                let chunk = n.div_ceil(rows).next_multiple_of(FUSED_BLOCK as usize);
                let rows = n.div_ceil(chunk);
                let partial = if rows > 1 { ptr(me.scratch[PARTIAL].reserve(rows * n * 8 * 8)?) } else { null() };
                let args = GradArgs { grad: gt, out: gs, partial, chunk: count(chunk)?, ..base };
                // SAFETY: n records, cotangents and gradients of each kind, uploaded above;
                // eight doubles a particle a row in `partial`.
                unsafe {
                    let grid = (x as u32, rows as u32);
                    me.launch(
                        Kernel::GradFused { tag, soft, masked },
                        grid,
                        FUSED_BLOCK,
                        args,
                        "launching the gradients",
                    )?;
                    if rows > 1 {
                        let reduce = GradArgs { chunk: count(rows)?, ..args };
                        me.launch(Kernel::GradFusedReduce { tag }, blocks(n), BLOCK, reduce, "adding the gradients")?;
                    }
                };
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
    fn fused_launches_fill_the_gpu_but_keep_rows_long() {
        // 65,536 particles on 132 SMs: 512 blocks of 128, 17 rows of at least 1,024.
        assert_eq!(super::fused_rows(512, 65_536, 132), 17);
        assert_eq!(super::fused_rows(8, 1000, 132), 1);
        assert_eq!(super::fused_rows(8192, 1 << 20, 132), 2);
    }
}
