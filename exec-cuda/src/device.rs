//! The CUDA context, the device's properties, and CUDA errors as nbody errors.

use cust::CudaFlags;
use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::Function;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use nbody_core::Error;

/// What the executor knows of its device; launch parameters are derived from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Peak SM clock in kHz, as the driver reports it.
    pub sm_clock_khz: u32,
    /// Shared memory per block, bytes.
    pub shared_memory_per_block: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Global memory, bytes.
    pub total_memory: usize,
}

/// Opens device `ordinal`: initialises the driver, retains the primary context and makes
/// it current. Every failure to find a usable device is [`Error::NoDevice`].
pub(crate) fn open(ordinal: u32) -> Result<(Context, DeviceInfo), Error> {
    let (device, context) = primary(ordinal)?;
    let attr =
        |a: DeviceAttribute| device.get_attribute(a).map(|v| v as u32).map_err(cuda("reading device attributes"));
    let info = DeviceInfo {
        name: device.name().map_err(cuda("reading the device name"))?,
        compute_capability: (
            attr(DeviceAttribute::ComputeCapabilityMajor)?,
            attr(DeviceAttribute::ComputeCapabilityMinor)?,
        ),
        sm_count: attr(DeviceAttribute::MultiprocessorCount)?,
        sm_clock_khz: attr(DeviceAttribute::ClockRate)?,
        shared_memory_per_block: attr(DeviceAttribute::MaxSharedMemoryPerBlock)?,
        registers_per_sm: attr(DeviceAttribute::MaxRegistersPerMultiprocessor)?,
        total_memory: device.total_memory().map_err(cuda("reading the device memory size"))?,
    };
    Ok((context, info))
}

/// Device `ordinal` and its primary context (retained for as long as the context
/// lives), made current on the calling thread; [`Error::NoDevice`] without one.
pub(crate) fn primary(ordinal: u32) -> Result<(Device, Context), Error> {
    cust::init(CudaFlags::empty()).map_err(|_| Error::NoDevice)?;
    let device = Device::get_device(ordinal).map_err(|_| Error::NoDevice)?;
    let context = Context::new(device).map_err(|_| Error::NoDevice)?;
    make_current(&context)?;
    Ok((device, context))
}

/// Devices the driver shows; [`Error::NoDevice`] without a driver.
pub(crate) fn count() -> Result<u32, Error> {
    cust::init(CudaFlags::empty()).map_err(|_| Error::NoDevice)?;
    Device::num_devices().map_err(|_| Error::NoDevice)
}

/// Makes `context` current on the calling thread (an executor may move between threads).
pub(crate) fn make_current(context: &Context) -> Result<(), Error> {
    CurrentContext::set_current(context).map_err(cuda("making the context current"))
}

/// Maps a CUDA error met while `during` to an nbody error.
pub(crate) fn cuda(during: &'static str) -> impl Fn(CudaError) -> Error {
    move |e| match e {
        CudaError::OutOfMemory => Error::OutOfMemory { bytes: 0 },
        CudaError::NoDevice | CudaError::InvalidDevice => Error::NoDevice,
        other => Error::Device { during, code: other as u32 },
    }
}

/// The device side of an executor: its context, the kernels' module, its two streams
/// and the device's properties. The rest of the executor (scratch buffers, tuning)
/// reaches the device only through these methods.
#[derive(Debug)]
pub(crate) struct Gpu {
    // Fields drop in order: the module and streams before the context.
    stream: Stream,
    copy_stream: Stream,
    module: Module,
    info: DeviceInfo,
    ordinal: u32,
    owner: nbody_core::resident::Owner,
    context: Context,
}

impl Gpu {
    /// Opens device `ordinal` and loads the kernels.
    pub(crate) fn open(ordinal: u32, fatbin: &[u8]) -> Result<Self, Error> {
        let (context, info) = open(ordinal)?;
        let module = Module::from_fatbin(fatbin, &[]).map_err(cuda("loading the kernels"))?;
        let stream = Stream::new(StreamFlags::DEFAULT, None).map_err(cuda("creating a stream"))?;
        let copy_stream = Stream::new(StreamFlags::DEFAULT, None).map_err(cuda("creating a stream"))?;
        Ok(Self { stream, copy_stream, module, info, ordinal, owner: nbody_core::resident::Owner::new(), context })
    }

    /// The stream the kernels run on.
    pub(crate) fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The stream uploads overlap the kernels on.
    pub(crate) fn copy_stream(&self) -> &Stream {
        &self.copy_stream
    }

    /// The device's ordinal.
    pub(crate) fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The device's properties.
    pub(crate) fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Stamps the resident systems this executor makes.
    pub(crate) fn owner(&self) -> nbody_core::resident::Owner {
        self.owner
    }

    /// The executor's context.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn make_current(&self) -> Result<(), Error> {
        make_current(&self.context)
    }

    /// The kernel exported as `name`.
    pub(crate) fn function(&self, name: &str) -> Result<Function<'_>, Error> {
        self.module.get_function(name).map_err(cuda("finding a kernel"))
    }
}
