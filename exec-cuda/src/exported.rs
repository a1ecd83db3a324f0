//! Device memory a front end hands to other libraries: the output arrays of a call on
//! GPU arrays (Python's, exported through DLPack and the CUDA array interface), owned by
//! whoever holds the last reference, which may drop it on any thread.

use crate::pipeline::driver;
use cust::context::Context;
use nbody_core::Error;

/// Bytes on one GPU, allocated in its primary context (the one CuPy, PyTorch, JAX and
/// numba use, so their kernels read it), freed on drop.
///
/// ```no_run
/// use nbody_cuda::DeviceMemory;
/// let m = DeviceMemory::zeroed(0, 1024)?;
/// let mut back = [1u8; 1024];
/// m.copy_to_host(&mut back)?;
/// assert!(back.iter().all(|&b| b == 0));
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceMemory {
    address: u64,
    len: usize,
    ordinal: u32,
    context: Context,
}

// SAFETY: a device address and a retained primary context may be used from any thread;
// every driver call below makes the context current on the calling thread first.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above; `&self` methods only read the memory.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// `len` bytes on GPU `ordinal`, their contents undefined.
    pub fn uninitialized(ordinal: u32, len: usize) -> Result<Self, Error> {
        let (_, context) = crate::device::primary(ordinal)?;
        let mut address = 0;
        if len > 0 {
            // SAFETY: `address` receives the allocation.
            let r = unsafe { cust::sys::cuMemAlloc_v2(&mut address, len) };
            if r == cust::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
                return Err(Error::OutOfMemory { bytes: len });
            }
            driver(r, "allocating an output array")?;
        }
        Ok(Self { address, len, ordinal, context })
    }

    /// `len` bytes on GPU `ordinal`, all zero.
    pub fn zeroed(ordinal: u32, len: usize) -> Result<Self, Error> {
        let m = Self::uninitialized(ordinal, len)?;
        m.zero()?;
        Ok(m)
    }

    /// Sets every byte to zero.
    pub fn zero(&self) -> Result<(), Error> {
        if self.len > 0 {
            crate::device::make_current(&self.context)?;
            // SAFETY: the allocation holds `len` bytes.
            driver(unsafe { cust::sys::cuMemsetD8_v2(self.address, 0, self.len) }, "zeroing an output array")?;
        }
        Ok(())
    }

    /// Waits until all work queued on the GPU (by any library, on any stream of the
    /// primary context) is done: before memory given back by one holder is handed to
    /// another, which a stream of the first may still be reading.
    pub fn quiesce(&self) -> Result<(), Error> {
        crate::device::make_current(&self.context)?;
        // SAFETY: no arguments; the primary context is current.
        driver(unsafe { cust::sys::cuCtxSynchronize() }, "waiting for the GPU")
    }

    /// The device address of the first byte (0 when empty).
    pub fn address(&self) -> u64 {
        self.address
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The GPU's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The ordinal of the GPU whose memory holds `address`, as the driver places it;
    /// `None` for host memory, an address the driver does not know, or no driver.
    pub fn ordinal_of(address: u64) -> Option<u32> {
        cust::init(cust::CudaFlags::empty()).ok()?;
        let mut ordinal: i32 = -1;
        // SAFETY: the attribute is one int, written into `ordinal`.
        let r = unsafe {
            cust::sys::cuPointerGetAttribute(
                (&mut ordinal as *mut i32).cast(),
                cust::sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                address,
            )
        };
        (r == cust::sys::cudaError_enum::CUDA_SUCCESS).then_some(ordinal).and_then(|o| u32::try_from(o).ok())
    }

    /// Copies `out.len()` bytes at `address` on GPU `ordinal` (memory another library
    /// holds) to the host, after the work queued on `stream` (a `CUstream`, or 1 and 2
    /// for the default streams) when given.
    ///
    /// # Safety
    /// `address` is device memory of GPU `ordinal` holding at least `out.len()` bytes;
    /// `stream`, when given, is a live stream of that GPU's primary context.
    pub unsafe fn read(ordinal: u32, address: u64, stream: Option<u64>, out: &mut [u8]) -> Result<(), Error> {
        if out.is_empty() {
            return Ok(());
        }
        // The GPU's primary context, current for the copy.
        let _context = crate::device::primary(ordinal)?;
        if let Some(s) = stream {
            // SAFETY: the caller vouches for the stream.
            let r = unsafe { cust::sys::cuStreamSynchronize(s as usize as cust::sys::CUstream) };
            driver(r, "waiting for a stream")?;
        }
        // SAFETY: the caller vouches for the address; `out` holds its length; the copy
        // runs after the legacy default stream's work, which DLPack exports wait on.
        let r = unsafe { cust::sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), address, out.len()) };
        driver(r, "copying a GPU array to the host")
    }

    /// Sets `len` bytes at `address` on GPU `ordinal` (memory another library holds) to
    /// zero, before the call returns.
    ///
    /// # Safety
    /// `address` is writable device memory of GPU `ordinal` holding at least `len` bytes.
    pub unsafe fn zero_at(ordinal: u32, address: u64, len: usize) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        // The GPU's primary context, current for the memset.
        let _context = crate::device::primary(ordinal)?;
        // SAFETY: the caller vouches for the memory.
        driver(unsafe { cust::sys::cuMemsetD8_v2(address, 0, len) }, "zeroing an output array")
    }

    /// Copies `data`, exactly as many bytes as it holds, in.
    pub fn copy_from_host<T: cust::memory::DeviceCopy>(&mut self, data: &[T]) -> Result<(), Error> {
        nbody_core::validate::length("host data", self.len, size_of_val(data))?;
        if self.len == 0 {
            return Ok(());
        }
        crate::device::make_current(&self.context)?;
        // SAFETY: both hold `len` bytes.
        driver(
            unsafe { cust::sys::cuMemcpyHtoD_v2(self.address, data.as_ptr().cast(), self.len) },
            "copying host data to the device",
        )
    }

    /// Copies the bytes into `out`, which holds exactly as many.
    pub fn copy_to_host<T: cust::memory::DeviceCopy>(&self, out: &mut [T]) -> Result<(), Error> {
        nbody_core::validate::length("host copy", self.len, size_of_val(out))?;
        if self.len == 0 {
            return Ok(());
        }
        crate::device::make_current(&self.context)?;
        // SAFETY: both hold `len` bytes.
        driver(
            unsafe { cust::sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.address, self.len) },
            "copying an output array to the host",
        )
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.len > 0 && crate::device::make_current(&self.context).is_ok() {
            // SAFETY: allocated by cuMemAlloc above and freed once; a failure here (the
            // context torn down at exit) has no one to report to.
            unsafe { cust::sys::cuMemFree_v2(self.address) };
        }
    }
}
