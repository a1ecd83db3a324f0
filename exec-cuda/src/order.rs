//! Morton order on the device, for the mixed kernels: keys over the particles' bounding
//! box and CUB's radix sort (the device tree's kernels, kernels/tree.cuh and sort.cu),
//! then gathers that apply the permutation and a scatter that undoes it on the results.
//!
//! The mixed kernels run a source tile in plain float when it lies far from the block's
//! targets, which only happens when both the tile and the block are compact in space. In
//! a generator's or a file's random order neither is, and every pair takes the slower
//! double-single path. Sorting costs a few kernels, small beside a large force, so the
//! mixed executor sorts
//! where a call is large enough to gain ([`CudaExecutor::set_sorted_above`]): host-slice calls, and
//! device-resident states at upload and as they drift
//! ([`crate::DeviceState::resort_interval`]).

use crate::args::{Ptr, TreeArgs};
use crate::kernels::{TreeStep, count};
use crate::memory::{Scratch, ptr};
use crate::pipeline::driver;
use crate::tree::at;
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal, Family, SOURCE_PAD};
use nbody_core::{Error, Overlap, Params, Particle};
use std::ffi::c_void;

/// Mixed calls of at least this many pairs run sorted by default (targets and sources put
/// in Morton order on the device, the results put back), and mixed states of at least
/// its square root sort themselves: below, the sort and the gathers cost more than the
/// far tiles save on a Plummer sphere (docs/figures.md, Mixed precision).
pub const SORTED_MIN_INTERACTIONS: u64 = 1 << 36;

/// The device buffers of a sort and of the sorted copies it feeds, kept by the executor
/// and grown as needed.
#[derive(Debug, Default)]
pub(crate) struct MortonScratch {
    /// Keys, then the sorted keys (2n u64).
    keys: Scratch,
    /// Indices 0..n, then the permutation (2n u32).
    index: Scratch,
    /// The bounding box as ordered integers (6 u64).
    bounds: Scratch,
    /// CUB's scratch.
    temp: Scratch,
    /// Sorted copies: targets (or positions), sources (or velocities), the results.
    first: Scratch,
    second: Scratch,
    out: Scratch,
}

impl MortonScratch {
    /// Drops every buffer (after an error that may have left the device short).
    pub(crate) fn release(&mut self) {
        for s in [
            &mut self.keys,
            &mut self.index,
            &mut self.bounds,
            &mut self.temp,
            &mut self.first,
            &mut self.second,
            &mut self.out,
        ] {
            s.release();
        }
    }
}

impl CudaExecutor {
    /// Runs the mixed kernels on Morton-sorted copies for host-slice calls of at least
    /// `pairs` target-source pairs, and keeps device-resident states of at least
    /// `sqrt(pairs)` particles sorted (from their upload on); [`SORTED_MIN_INTERACTIONS`]
    /// by default, `u64::MAX` never. Sorted, the results no longer depend on the order the
    /// particles came in; a clustered system may gain below the default too.
    ///
    /// ```no_run
    /// let mut gpu = nbody_cuda::CudaMixedExecutor::new()?.into_executor();
    /// gpu.set_sorted_above(1 << 30);
    /// assert_eq!(gpu.sorted_above(), 1 << 30);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn set_sorted_above(&mut self, pairs: u64) {
        self.sorted_above = pairs;
    }

    /// The pairs from which mixed calls run sorted ([`CudaExecutor::set_sorted_above`]).
    pub fn sorted_above(&self) -> u64 {
        self.sorted_above
    }

    /// Whether a mixed call of `n_t` targets and `n_s` sources runs sorted.
    pub(crate) fn sorts<T: DeviceReal>(&self, n_t: usize, n_s: usize) -> bool {
        self.family::<T>() == Family::Mixed
            && n_t.min(n_s) > 1
            && (n_t as u64).saturating_mul(n_s as u64) >= self.sorted_above
    }

    fn stream_ptr(&self) -> *mut c_void {
        self.gpu.stream().as_inner() as *mut c_void
    }

    /// Queues the Morton sort of the `n` four-lane records of T at `particles`; returns
    /// the address of the permutation (n u32: the index of each particle in key order),
    /// valid until the next sort.
    pub(crate) fn morton_sort<T: DeviceReal>(&mut self, particles: Ptr, n: usize) -> Result<Ptr, Error> {
        let n_int = count(n)?;
        self.reserve_sort(n)?;
        let stream = self.stream_ptr();
        let bounds = at(&self.morton.bounds).as_raw();
        // SAFETY: bounds holds 6 u64s; minima start at the largest ordered value, maxima
        // at the smallest (what tree.cuh's reset writes), ordered on this stream.
        unsafe {
            driver(cust::sys::cuMemsetD8Async(bounds, 0xff, 24, stream.cast()), "clearing the sort's box")?;
            driver(cust::sys::cuMemsetD8Async(bounds + 24, 0, 24, stream.cast()), "clearing the sort's box")?;
        }
        let args = TreeArgs {
            particles,
            keys: at(&self.morton.keys),
            index: at(&self.morton.index),
            bounds: at(&self.morton.bounds),
            ..TreeArgs::<T>::bare(n_int)
        };
        self.tree_step(TreeStep::Bounds, crate::tree::grid(n), crate::tree::THREADS, args)?;
        self.tree_step(TreeStep::Keys, crate::tree::grid(n), crate::tree::THREADS, args)?;
        let m = &self.morton;
        crate::tree::sort_pairs(&m.temp, at(&m.keys), at(&m.index), n, stream)?;
        Ok(at(&m.index).wrapping_add(n * 4))
    }

    /// Room for sorts of up to `n` particles, reserved before any is queued (a buffer
    /// grown later would be freed under a queued kernel).
    fn reserve_sort(&mut self, n: usize) -> Result<(), Error> {
        let m = &mut self.morton;
        m.keys.reserve(2 * n * 8)?;
        m.index.reserve(2 * n * 4)?;
        m.bounds.reserve(6 * 8)?;
        m.temp.reserve(crate::tree::sort_bytes(n)?.max(1))?;
        Ok(())
    }

    /// Queues `to[k] = from[index[k]]` for the first `n` four-lane records of T.
    fn gather<T: DeviceReal>(&self, from: Ptr, to: Ptr, index: Ptr, n: usize) -> Result<(), Error> {
        let args = TreeArgs { particles: from, sorted: to, index, ..TreeArgs::<T>::bare(count(n)?) };
        self.tree_step(TreeStep::Gather, crate::tree::grid(n), crate::tree::THREADS, args)
    }

    /// Queues a device-to-device copy of `bytes` on the executor's stream.
    fn copy_within(&self, from: Ptr, to: Ptr, bytes: usize) -> Result<(), Error> {
        // SAFETY: both buffers hold at least `bytes` (the callers' reservations), and do
        // not overlap; ordered on this stream.
        let r = unsafe { cust::sys::cuMemcpyDtoDAsync_v2(to.as_raw(), from.as_raw(), bytes, self.stream_ptr().cast()) };
        driver(r, "copying on the device")
    }

    /// Puts the first `n` positions at `pos` and velocities at `vel` (four-lane records
    /// of T, in place) in Morton order of the positions, and returns the permutation
    /// applied: element k of the result is the index, before the sort, of the particle
    /// now stored at k. Waits for the device.
    pub(crate) fn morton_sort_in_place<T: DeviceReal>(
        &mut self,
        pos: Ptr,
        vel: Ptr,
        n: usize,
    ) -> Result<Vec<u32>, Error> {
        let index = self.morton_sort::<T>(pos, n)?;
        let bytes = n * size_of::<Particle<T>>();
        let (a, b) = (ptr(self.morton.first.reserve(bytes)?), ptr(self.morton.second.reserve(bytes)?));
        self.gather::<T>(pos, a, index, n)?;
        self.gather::<T>(vel, b, index, n)?;
        self.copy_within(a, pos, bytes)?;
        self.copy_within(b, vel, bytes)?;
        let mut step = vec![0u32; n];
        self.gpu.stream().synchronize().map_err(crate::device::cuda("sorting on the device"))?;
        let index = self.morton.index.buf_ref().ok_or(Error::NoDevice)?;
        crate::memory::download(&index.index(n * 4..), bytemuck::cast_slice_mut(&mut step))?;
        Ok(step)
    }

    /// [`CudaExecutor::accelerations_resident`] on copies of `targets` and `sources`
    /// put in Morton order on the device, the results added into `out` in the caller's
    /// order. What a mixed executor gains from a sort without keeping its particles
    /// sorted (device-resident states keep theirs, [`crate::DeviceState`]); other
    /// executors and [`Overlap::Shared`] calls run unsorted, as there is nothing to
    /// gain or the shared pairs would not stay paired.
    ///
    /// ```no_run
    /// use nbody_core::Params;
    /// let mut gpu = nbody_cuda::CudaMixedExecutor::new()?.into_executor();
    /// let (p, _) = nbody_integrators::ics::plummer::<f64>(1 << 16, 1);
    /// let set = gpu.upload(&p)?;
    /// let mut out = gpu.zeroed_fields::<f64>(p.len())?;
    /// gpu.accelerations_resident_sorted(&set, &set, &Params::softened(0.01).with_overlap_identical(), &mut out)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn accelerations_resident_sorted<T: DeviceReal>(
        &mut self,
        targets: &DeviceParticles<T>,
        sources: &DeviceParticles<T>,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<(), Error> {
        self.check_resident(targets, sources, params, out)?;
        if self.family::<T>() != Family::Mixed || matches!(params.overlap, Overlap::Shared { .. }) {
            return self.accelerations_resident(targets, sources, params, out);
        }
        self.gpu.make_current()?;
        let identical = params.overlap == Overlap::Identical;
        self.sorted_call(
            ptr(&targets.buf),
            targets.len(),
            ptr(&sources.buf),
            sources.len(),
            identical,
            params,
            ptr(&out.buf),
        )
    }

    /// The tiled kernel on sorted copies: sources sorted and gathered (padded with
    /// massless particles), then targets (the same copy when `identical`), the results
    /// added into `out` through the targets' permutation.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sorted_call<T: DeviceReal>(
        &mut self,
        targets: Ptr,
        n_t: usize,
        sources: Ptr,
        n_s: usize,
        identical: bool,
        params: &Params<T>,
        out: Ptr,
    ) -> Result<(), Error> {
        if n_t == 0 {
            return Ok(());
        }
        let v4 = size_of::<Particle<T>>();
        let padded = n_s.next_multiple_of(SOURCE_PAD);
        let stream = self.stream_ptr();
        self.reserve_sort(n_t.max(n_s))?;
        let src = ptr(self.morton.second.reserve(padded * v4)?);
        let tgt = if identical { src } else { ptr(self.morton.first.reserve(n_t * v4)?) };
        let sorted_out = ptr(self.morton.out.reserve(n_t * v4)?);
        let index = self.morton_sort::<T>(sources, n_s)?;
        self.gather::<T>(sources, src, index, n_s)?;
        // SAFETY: the copy holds `padded` records; its tail is the massless padding.
        let r = unsafe {
            cust::sys::cuMemsetD8Async(src.wrapping_add(n_s * v4).as_raw(), 0, (padded - n_s) * v4, stream.cast())
        };
        driver(r, "padding the sorted sources")?;
        let (tgt, index) = if identical {
            (src, index)
        } else {
            let index = self.morton_sort::<T>(targets, n_t)?;
            self.gather::<T>(targets, tgt, index, n_t)?;
            (tgt, index)
        };
        // SAFETY: the sorted results hold n_t fields; ordered on this stream.
        let r = unsafe { cust::sys::cuMemsetD8Async(sorted_out.as_raw(), 0, n_t * v4, stream.cast()) };
        driver(r, "clearing the sorted results")?;
        let config = self.config_for::<T>(n_t, n_s, params)?;
        let m = &self.morton;
        let (t_buf, s_buf, o_buf) = (
            if identical { m.second.buf_ref() } else { m.first.buf_ref() }.ok_or(Error::NoDevice)?,
            m.second.buf_ref().ok_or(Error::NoDevice)?,
            m.out.buf_ref().ok_or(Error::NoDevice)?,
        );
        debug_assert_eq!((ptr(t_buf), ptr(o_buf)), (tgt, sorted_out));
        self.launch_tiled(config, t_buf, n_t, s_buf, padded, o_buf, params)?;
        let args =
            TreeArgs { sorted_out, out, index, potential: params.potential as i32, ..TreeArgs::<T>::bare(count(n_t)?) };
        self.tree_step(TreeStep::Scatter, crate::tree::grid(n_t), crate::tree::THREADS, args)
    }
}
