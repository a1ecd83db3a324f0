//! The host-slice acceleration call with its source upload hidden behind the kernel
//! (Miki et al. 2013, section 3: two streams): sources go up in tiles through two
//! pinned staging buffers on a copy stream while the compute stream runs the kernel on
//! the tile before. The targets and the output go up once; each tile's kernel adds into
//! the output, with the self terms of the sources it holds.

use crate::device::cuda;
use crate::memory::{download, upload_outputs, upload_padded};
use crate::{CudaExecutor, DeviceReal, OUT, SOURCE_PAD, SOURCES, TARGETS};
use cust::memory::{AsyncCopyDestination, LockedBuffer};
use cust::stream::Stream;
use nbody_core::calls::DirectCall;
use nbody_core::{Error, Particle};

/// Below this many sources the call is one upload and one kernel: a tile of fewer
/// would run for less time than its launch and synchronisation cost.
pub(crate) const PIPELINE_MIN_SOURCES: usize = 32_768;

/// Tiles per call, at most: enough that the first tile's upload (the only one not
/// hidden) is a small part of the transfer.
const MAX_TILES: usize = 8;

/// Sources per tile for `n` sources: a multiple of [`SOURCE_PAD`], at least 16,384.
pub(crate) fn tile_len(n: usize) -> usize {
    n.div_ceil(MAX_TILES).max(16_384).next_multiple_of(SOURCE_PAD)
}

/// A CUDA event the streams can wait on (cust's `Stream::wait_event` consumes its
/// event, and a pipeline waits on each one several times). Destroyed on drop.
pub(crate) struct Marker(cust::sys::CUevent);

// SAFETY: a CUDA event handle may be used from any thread of its process.
unsafe impl Send for Marker {}
// SAFETY: as above; the driver serialises operations on one event.
unsafe impl Sync for Marker {}

/// A driver call's result as an nbody error: the one place raw `CUresult`s are read.
pub(crate) fn driver(r: cust::sys::CUresult, during: &'static str) -> Result<(), Error> {
    if r == cust::sys::cudaError_enum::CUDA_SUCCESS { Ok(()) } else { Err(Error::Device { during, code: r as u32 }) }
}

impl Marker {
    /// A new event in the current context (no timing).
    pub(crate) fn new() -> Result<Self, Error> {
        let mut e = std::ptr::null_mut();
        // SAFETY: `e` receives the new handle; flag 2 is CU_EVENT_DISABLE_TIMING.
        driver(unsafe { cust::sys::cuEventCreate(&mut e, 2) }, "creating an event")?;
        Ok(Self(e))
    }

    /// Marks the point `stream` has reached.
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), Error> {
        // SAFETY: both handles are live.
        driver(unsafe { cust::sys::cuEventRecord(self.0, stream.as_inner()) }, "recording an event")
    }

    /// Marks the point another library's stream (a raw `CUstream`, or 1 and 2 for the
    /// legacy and per-thread default streams) has reached.
    ///
    /// # Safety
    /// `stream` is a live stream of the current context's device, or 1 or 2.
    pub(crate) unsafe fn record_raw(&self, stream: u64) -> Result<(), Error> {
        // SAFETY: the event is live; the caller vouches for the stream.
        driver(
            unsafe { cust::sys::cuEventRecord(self.0, stream as usize as cust::sys::CUstream) },
            "recording an event",
        )
    }

    /// Waits on the host until the marked point is reached.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: the handle is live.
        driver(unsafe { cust::sys::cuEventSynchronize(self.0) }, "waiting for an event")
    }

    /// Makes `stream` wait (on the device) until the marked point is reached; the event
    /// may belong to another device.
    pub(crate) fn block(&self, stream: &Stream) -> Result<(), Error> {
        // SAFETY: both handles are live.
        driver(unsafe { cust::sys::cuStreamWaitEvent(stream.as_inner(), self.0, 0) }, "ordering streams")
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cuEventCreate and is destroyed once; the
        // driver defers the release until pending work on it completes.
        unsafe { cust::sys::cuEventDestroy_v2(self.0) };
    }
}

impl CudaExecutor {
    /// [`nbody_core::Executor::accelerations`] with the sources uploaded tile by tile,
    /// overlapping the kernel. Inputs are validated by the caller; runs inside
    /// `guarded`.
    pub(crate) fn accelerations_pipelined<T: DeviceReal>(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let (n_t, n_s) = (targets.len(), sources.len());
        let psize = size_of::<Particle<T>>();
        let tile = tile_len(n_s);
        let tile_bytes = tile * psize;
        let t = self.scratch[TARGETS].reserve(std::mem::size_of_val(targets))?;
        upload_padded(t, bytemuck::cast_slice(targets), 0)?;
        let o = self.scratch[OUT].reserve(std::mem::size_of_val(out))?;
        upload_outputs(o, bytemuck::cast_slice(out))?;
        self.scratch[SOURCES].reserve(tile_bytes)?;
        self.scratch[crate::EXTRA_A].reserve(tile_bytes)?;
        for p in &mut self.pinned {
            if p.as_ref().is_none_or(|b| b.len() < tile_bytes) {
                *p = None;
                // SAFETY: u8 has no invalid values; every byte sent is written first.
                *p =
                    Some(unsafe { LockedBuffer::uninitialized(tile_bytes) }.map_err(cuda("allocating pinned memory"))?);
            }
        }
        let config = self.config_for::<T>(n_t, tile, params)?;
        let (copied, computed) = ([Marker::new()?, Marker::new()?], [Marker::new()?, Marker::new()?]);
        let slots = [SOURCES, crate::EXTRA_A];
        for (k, start) in (0..n_s).step_by(tile).enumerate() {
            let b = k % 2;
            let range = start..(start + tile).min(n_s);
            let padded = range.len().next_multiple_of(SOURCE_PAD);
            let bytes = padded * psize;
            {
                // The pinned buffer is free once its previous upload is done.
                if k >= 2 {
                    copied[b].synchronize()?;
                }
                let staging = self.pinned[b].as_mut().expect("allocated above").as_mut_slice();
                let data: &[u8] = bytemuck::cast_slice(&sources[range.clone()]);
                staging[..data.len()].copy_from_slice(data);
                staging[data.len()..bytes].fill(0);
                // The device buffer is free once the kernel two tiles back is done.
                if k >= 2 {
                    computed[b].block(self.gpu.copy_stream())?;
                }
                let dst = self.scratch[slots[b]].reserve(tile_bytes)?;
                let src = &self.pinned[b].as_ref().expect("allocated above").as_slice()[..bytes];
                // SAFETY: `src` is pinned and outlives the copy (this call waits for every
                // upload before it returns); `dst` holds at least `bytes`.
                unsafe { dst.index(..bytes).async_copy_from(src, self.gpu.copy_stream()) }
                    .map_err(cuda("uploading a source tile"))?;
                copied[b].record(self.gpu.copy_stream())?;
            }
            copied[b].block(self.gpu.stream())?;
            let p = params.with_overlap(params.overlap.restrict_sources(n_t, range));
            let s = &self.scratch;
            let (tb, sb, ob) = (
                s[TARGETS].buf_ref().ok_or(Error::NoDevice)?,
                s[slots[b]].buf_ref().ok_or(Error::NoDevice)?,
                s[OUT].buf_ref().ok_or(Error::NoDevice)?,
            );
            self.launch_tiled(config, tb, n_t, sb, padded, ob, &p)?;
            computed[b].record(self.gpu.stream())?;
        }
        self.gpu.copy_stream().synchronize().map_err(cuda("uploading the sources"))?;
        self.gpu.stream().synchronize().map_err(cuda("running the kernel"))?;
        let o = self.scratch[OUT].reserve(0)?;
        download(o, bytemuck::cast_slice_mut(out))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tiles_cover_the_sources_in_at_most_eight_padded_pieces() {
        for n in [32_768usize, 100_000, 1 << 20, 3_000_001] {
            let t = super::tile_len(n);
            assert_eq!(t % crate::SOURCE_PAD, 0);
            assert!(n.div_ceil(t) <= super::MAX_TILES && t >= 16_384, "n = {n}, tile {t}");
        }
    }
}
