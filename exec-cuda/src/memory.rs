//! Device buffers: grow-only scratch for host-slice calls, and device-resident sets.

use crate::device::cuda;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};
use nbody_core::{Error, Field, Particle, Real};
use std::marker::PhantomData;

/// Allocates `bytes` of device memory; out of memory is [`Error::OutOfMemory`] and
/// nothing stays allocated.
pub(crate) fn alloc(bytes: usize) -> Result<DeviceBuffer<u8>, Error> {
    // SAFETY: u8 has no invalid bit patterns; every byte read is written first.
    unsafe { DeviceBuffer::uninitialized(bytes.max(1)) }.map_err(|e| match cuda("allocating")(e) {
        Error::OutOfMemory { .. } => Error::OutOfMemory { bytes },
        other => other,
    })
}

/// A grow-only device buffer, reused across calls so the hot path does not allocate.
#[derive(Default, Debug)]
pub(crate) struct Scratch {
    buf: Option<DeviceBuffer<u8>>,
}

impl Scratch {
    /// A buffer of at least `bytes`; reallocates (dropping the old one first) only when
    /// the current one is smaller.
    pub(crate) fn reserve(&mut self, bytes: usize) -> Result<&mut DeviceBuffer<u8>, Error> {
        if self.buf.as_ref().is_none_or(|b| b.len() < bytes) {
            self.buf = None;
            self.buf = Some(alloc(bytes)?);
        }
        Ok(self.buf.as_mut().expect("allocated above"))
    }

    /// The buffer, if one was reserved.
    pub(crate) fn buf_ref(&self) -> Option<&DeviceBuffer<u8>> {
        self.buf.as_ref()
    }

    /// Drops the buffer (after an error that may have left the device short of memory).
    pub(crate) fn release(&mut self) {
        self.buf = None;
    }
}

/// Page-locked host bytes, grown as needed, packed piece by piece: copies between them
/// and the device run at the bus's speed (the driver stages pageable memory, at a
/// fraction of it).
#[derive(Default)]
pub(crate) struct Pinned {
    buf: Option<cust::memory::LockedBuffer<u8>>,
    len: usize,
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pinned {{ len: {}, capacity: {} }}", self.len, self.buf.as_ref().map_or(0, |b| b.len()))
    }
}

impl Pinned {
    /// Empties it (keeping the memory).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` bytes.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The bytes packed so far.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.as_ref().map_or(&[], |b| &b[..self.len])
    }

    /// Makes it `len` bytes long, keeping what it held (new bytes are unspecified).
    pub(crate) fn resize(&mut self, len: usize) -> Result<&mut [u8], Error> {
        let capacity = self.buf.as_ref().map_or(0, |b| b.len());
        if len > capacity || self.buf.is_none() {
            // Doubling: page-locking costs about a millisecond per allocation.
            let grown = len.max(2 * capacity).max(1 << 16);
            // SAFETY: u8 has no invalid bit patterns; the bytes past `self.len` are
            // written before they are read.
            let mut b = unsafe { cust::memory::LockedBuffer::<u8>::uninitialized(grown) }
                .map_err(cuda("allocating pinned memory"))?;
            if let Some(old) = &self.buf {
                b[..self.len].copy_from_slice(&old[..self.len]);
            }
            self.buf = Some(b);
        }
        self.len = len;
        Ok(&mut self.buf.as_mut().expect("allocated above")[..len])
    }

    /// Appends `piece` at the next 256-byte boundary; returns its offset.
    pub(crate) fn pack(&mut self, piece: &[u8]) -> Result<usize, Error> {
        let offset = self.len.next_multiple_of(256);
        self.resize(offset + piece.len())?[offset..].copy_from_slice(piece);
        Ok(offset)
    }
}

/// Copies `data` to the front of `dst` and zeroes `dst[data.len()..total]`.
pub(crate) fn upload_padded(dst: &mut DeviceBuffer<u8>, data: &[u8], total: usize) -> Result<(), Error> {
    if !data.is_empty() {
        dst.index(..data.len()).copy_from(data).map_err(cuda("copying to the device"))?;
    }
    if total > data.len() {
        dst.index(data.len()..total).set_zero().map_err(cuda("zeroing the padding"))?;
    }
    Ok(())
}

/// Sends the outputs a kernel adds into: a field that is all zero bits (a fresh force, the
/// common case) is zeroed on the device instead, which costs a scan on the host rather
/// than a copy from pageable memory.
pub(crate) fn upload_outputs(dst: &mut DeviceBuffer<u8>, out: &[u8]) -> Result<(), Error> {
    // Word by word without an early exit, so the scan vectorises.
    let (head, words, tail) = bytemuck::pod_align_to::<u8, u64>(out);
    let zero = head.iter().chain(tail).fold(0u8, |a, &b| a | b) == 0 && words.iter().fold(0, |a, &w| a | w) == 0;
    if zero { upload_padded(dst, &[], out.len()) } else { upload_padded(dst, out, 0) }
}

/// Copies `dst.len()` bytes from the front of `src` to the host.
pub(crate) fn download(src: &DeviceSlice<u8>, dst: &mut [u8]) -> Result<(), Error> {
    if dst.is_empty() {
        return Ok(());
    }
    src.index(..dst.len()).copy_to(dst).map_err(cuda("copying from the device"))
}

/// The device address of a buffer, typed for a kernel argument.
pub(crate) fn ptr(buf: &DeviceSlice<u8>) -> DevicePointer<u8> {
    buf.as_device_ptr()
}

/// Records of type `R` that live on the device: a device-resident set of particles
/// ([`DeviceParticles`]) or of outputs ([`DeviceFields`]).
#[derive(Debug)]
pub struct DeviceArray<R> {
    pub(crate) buf: DeviceBuffer<u8>,
    pub(crate) len: usize,
    _r: PhantomData<R>,
}

/// Particles that live on the device, padded with massless particles to a multiple of
/// [`crate::SOURCE_PAD`], validated when uploaded. Made by
/// [`crate::CudaExecutor::upload`]; an integrator keeps them there across steps.
pub type DeviceParticles<T> = DeviceArray<Particle<T>>;

/// Outputs `[ax, ay, az, phi]` that live on the device; kernels add into them.
pub type DeviceFields<T> = DeviceArray<Field<T>>;

impl<R> DeviceArray<R> {
    pub(crate) fn new(buf: DeviceBuffer<u8>, len: usize) -> Self {
        Self { buf, len, _r: PhantomData }
    }

    /// Number of records (the particles without their padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Length including the massless padding.
    pub fn padded_len(&self) -> usize {
        self.buf.len() / core::mem::size_of::<R>()
    }
}

impl<T: Real + DeviceCopy> DeviceFields<T> {
    /// Bytes of `n` entries.
    pub(crate) fn bytes(n: usize) -> usize {
        n * core::mem::size_of::<Field<T>>()
    }
}
