//! The command's side of the backend registry (`nbody_backends`): `--executor` takes
//! its strings, and every error names the option.

use anyhow::{Result, anyhow};
pub use nbody_backends::{Backend, BackendReal as CliReal, Opened};
use nbody_core::projection::Projecting;

/// The error of `--executor`, one line naming the option and the backend.
pub fn option_error(e: nbody_backends::BackendError) -> anyhow::Error {
    anyhow!("--executor {}", e.to_string().trim_start_matches("backend "))
}

/// Opens `backend` (threads checked against the machine, the device opened).
pub fn open(backend: &Backend) -> Result<Opened> {
    backend.open().map_err(option_error)
}

/// `backend` opened for precision `T`, boxed: the host-slice executor of `accel` and of
/// the runs that step on the host.
pub fn host_executor<T: CliReal>(backend: &Backend) -> Result<Box<dyn Projecting<T> + Send>> {
    backend.open_for::<T>().map_err(option_error)
}

/// Threads as the executors take them.
pub fn parallelism(threads: usize) -> nbody_cpu::Parallelism {
    nbody_cpu::Parallelism::threads(threads)
}
