//! The executors a command runs on (`--executor`, `--threads`), in the precisions
//! compiled in: chosen, opened, and checked for a device.

use super::ExecutorKind;
use anyhow::{bail, Result};
use nbody_core::projection::Projecting;
use nbody_core::Reference;
use nbody_cpu::{CpuExecutor, CpuReal, MixedExecutor, Parallelism};

/// The precisions the command runs in: those of every executor compiled in.
#[cfg(feature = "cuda")]
pub trait CliReal: CpuReal + nbody_cuda::DeviceReal {
    /// The mixed-precision executor, where it exists for this precision.
    fn mixed(par: Parallelism) -> Result<Box<dyn Projecting<Self>>>;
    /// `gpu` as this precision's host-slice executor: mixed (f64 only) when it was
    /// opened as the mixed-precision one.
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Projecting<Self>>>;
}
/// The precisions the command runs in: those of every executor compiled in.
#[cfg(not(feature = "cuda"))]
pub trait CliReal: CpuReal {
    /// The mixed-precision executor, where it exists for this precision.
    fn mixed(par: Parallelism) -> Result<Box<dyn Projecting<Self>>>;
}

impl CliReal for f32 {
    fn mixed(_: Parallelism) -> Result<Box<dyn Projecting<f32>>> {
        bail!("--executor mixed computes f64 results: use --precision f64")
    }
    #[cfg(feature = "cuda")]
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Projecting<f32>>> {
        if kind == ExecutorKind::CudaMixed {
            bail!("--executor cuda-mixed computes f64 results: use --precision f64")
        }
        Ok(Box::new(gpu))
    }
}

impl CliReal for f64 {
    fn mixed(par: Parallelism) -> Result<Box<dyn Projecting<f64>>> {
        Ok(Box::new(MixedExecutor::new(par)))
    }
    #[cfg(feature = "cuda")]
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Projecting<f64>>> {
        Ok(if kind == ExecutorKind::CudaMixed {
            Box::new(nbody_cuda::CudaMixedExecutor::from_executor(gpu))
        } else {
            Box::new(gpu)
        })
    }
}

/// Threads as the executors take them.
pub fn parallelism(threads: usize) -> Parallelism {
    Parallelism::threads(threads)
}

/// The CUDA executor a run found at start-up and hands on, so a run creates one CUDA
/// context (never one to probe and another to compute).
#[cfg(feature = "cuda")]
pub(super) type Gpu = Option<nbody_cuda::CudaExecutor>;
/// Without CUDA compiled in there is never one.
#[cfg(not(feature = "cuda"))]
pub(super) type Gpu = Option<std::convert::Infallible>;

/// The CUDA executor of `kind` (`cuda`, or `cuda-mixed`: the same executor running its
/// mixed-precision kernels for f64), or why there is none.
#[cfg(feature = "cuda")]
pub fn cuda_executor(kind: ExecutorKind) -> Result<nbody_cuda::CudaExecutor> {
    let made = if kind == ExecutorKind::CudaMixed {
        nbody_cuda::CudaMixedExecutor::new().map(nbody_cuda::CudaMixedExecutor::into_executor)
    } else {
        nbody_cuda::CudaExecutor::new()
    };
    made.map_err(|e| anyhow::anyhow!("--executor {}: {e}", kind.name()))
}

/// The devices of `--devices` (`all`, or ordinals such as `0,1`).
#[cfg(feature = "cuda")]
pub fn multi_device(list: &str) -> Result<nbody_cuda::MultiDevice> {
    let made = if list == "all" {
        nbody_cuda::MultiDevice::new()
    } else {
        let ordinals: Vec<u32> = list.split(',').filter_map(|d| d.trim().parse().ok()).collect();
        nbody_cuda::MultiDevice::on_devices(&ordinals)
    };
    made.map_err(|e| anyhow::anyhow!("--devices {list}: {e}"))
}

/// A host executor of the kind asked for (`cuda` runs through the host-slice entry
/// points; the leapfrog uses the device-resident path instead).
pub fn host_executor<T: CliReal>(kind: ExecutorKind, threads: usize) -> Result<Box<dyn Projecting<T>>> {
    Ok(match kind {
        ExecutorKind::Cpu => Box::new(CpuExecutor::new(parallelism(threads))),
        ExecutorKind::Mixed => T::mixed(parallelism(threads))?,
        ExecutorKind::Reference => Box::new(Reference),
        #[cfg(feature = "cuda")]
        ExecutorKind::Cuda | ExecutorKind::CudaMixed => T::cuda(cuda_executor(kind)?, kind)?,
        #[cfg(not(feature = "cuda"))]
        ExecutorKind::Cuda | ExecutorKind::CudaMixed => {
            bail!("--executor {}: this nbody was built without CUDA (build with --features cuda)", kind.name())
        }
    })
}
