//! # nbody-cuda
//!
//! The CUDA executor: kernels in `kernels/gravity.cu`, compiled by build.rs with nvcc
//! into a fatbin (sm_90 SASS plus compute_60 PTX) embedded in the crate, loaded and
//! launched through `cust`.
//!
//! - Host-slice entry points ([`nbody_core::Executor`]): upload, launch, download; device buffers
//!   are grow-only scratch reused across calls.
//! - Device-resident particles ([`DeviceParticles`], [`DeviceFields`]): upload once,
//!   compute every step, download only what is needed.
//! - The tiled kernel for large N, several threads per target for small N (chosen from
//!   the SM count, or timed once per size class with [`CudaExecutor::set_autotune`]),
//!   a jerk kernel, and a batched kernel that runs a whole interaction list in one
//!   launch.
//!
//! ```no_run
//! use nbody_core::{Executor, Field, Params};
//! use nbody_cuda::CudaExecutor;
//!
//! let mut gpu = CudaExecutor::new()?; // Error::NoDevice without a GPU
//! let (bodies, _) = nbody_integrators::ics::plummer::<f32>(65_536, 1);
//! let mut field = vec![Field::zero(); bodies.len()];
//! gpu.accelerations(&bodies, &bodies, &Params::softened(0.01).with_overlap_identical(), &mut field)?;
//! # Ok::<(), nbody_core::Error>(())
//! ```

#![warn(missing_docs)]

mod args;
mod batch;
mod columns;
pub mod costs;
mod device;
mod executor;
mod exported;
mod gradients;
mod hermite;
mod jerk;
mod jmemory;
mod kernels;
mod memory;
mod mixed;
mod multi;
mod order;
mod pipeline;
mod project;
mod resident;
mod tiled;
pub mod timing;
mod tree;
mod tree_step;
pub mod tuning;

#[cfg(feature = "testing")]
pub use args::probe_layouts;
pub use batch::{DeviceCells, DeviceList};
pub use device::DeviceInfo;
pub use exported::DeviceMemory;
pub use hermite::CudaHermite;
#[cfg(feature = "testing")]
pub use hermite::{KernelCase, KernelOutcome, hermite_kernels};
pub use jerk::ListSearch;
pub use jmemory::DeviceJMemory;
pub use kernels::Family;
pub use memory::{DeviceArray, DeviceFields, DeviceParticles};
pub use mixed::CudaMixedExecutor;
pub use multi::{MultiDevice, MultiState, PeerAccess};
pub use nbody_core::jmemory::{JParticle, PackedLists};
pub use order::SORTED_MIN_INTERACTIONS;
pub use resident::DeviceState;
pub use tree::{DeviceTree, TreeReport, TreeSettings, TreeTimes};
pub use tree_step::{TreeGravity, TreeSystem};
pub use tuning::SOURCE_PAD;

use cust::function::Function;
use cust::memory::DeviceCopy;
use device::cuda;
use memory::{Scratch, download, upload_outputs, upload_padded};
use nbody_core::{Error, Field, Particle, Real};
use std::collections::HashMap;
use tuning::LaunchConfig;

const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gravity.fatbin"));

/// The precisions the kernels are compiled for.
pub trait DeviceReal: Real + DeviceCopy {
    /// The kernels that run this precision ([`Family::F64`] for f64; a mixed
    /// executor runs [`Family::Mixed`] instead, see [`CudaExecutor::family`]).
    const FAMILY: Family;
}

impl DeviceReal for f32 {
    const FAMILY: Family = Family::F32;
}

impl DeviceReal for f64 {
    const FAMILY: Family = Family::F64;
}

/// The CUDA executor. Holds its context, module, stream and scratch buffers; create one
/// per device and reuse it.
#[derive(Debug)]
pub struct CudaExecutor {
    // Fields drop in order: every buffer before the module, stream and context.
    scratch: [Scratch; jerk::SLOTS],
    /// Morton sorts on the device and the sorted copies they feed (mixed kernels).
    morton: order::MortonScratch,
    /// Pinned host staging for the two-stream source upload (pipeline.rs).
    pinned: [Option<cust::memory::LockedBuffer<u8>>; 2],
    /// Pinned host staging for per-particle lengths ([`CudaExecutor::upload_lengths`]).
    lengths_up: memory::Pinned,
    tuned: HashMap<(Family, bool, bool, u32, u32), LaunchConfig>,
    autotune: bool,
    forced: Option<LaunchConfig>,
    /// Targets per thread of the jerk kernel, when forced (benchmarks).
    jerk_per_thread: Option<usize>,
    /// Most bytes of slot rows a whole-gradient pair launch writes
    /// ([`CudaExecutor::limit_pair_slots`]).
    pair_slot_bytes: usize,
    /// Partial sums of a source-split tiled launch (grown as needed; behind a RefCell
    /// because launches borrow the executor's other buffers while they reserve it).
    split_partials: std::cell::RefCell<Scratch>,
    /// Blocks per multiprocessor of each tiled kernel launched so far (the driver's
    /// occupancy answer, which does not change).
    resident_blocks: std::cell::RefCell<HashMap<kernels::Kernel, u32>>,
    /// The kernels of f64 calls: [`Family::F64`], or [`Family::Mixed`] on a
    /// [`CudaMixedExecutor`].
    f64_family: Family,
    /// Mixed calls of at least this many pairs run sorted ([`order`]).
    sorted_above: u64,
    /// Test hook (feature `testing`): the next tiled launch asks for an impossible block
    /// size, so the driver refuses it (see `CudaExecutor::fail_next_launch`).
    sabotage: std::cell::Cell<bool>,
    /// The device: context, module, streams, properties (last, so it drops last).
    gpu: device::Gpu,
}

/// Scratch slots.
const TARGETS: usize = 0;
const SOURCES: usize = 1;
const OUT: usize = 2;
const EXTRA_A: usize = 3;
const EXTRA_B: usize = 4;
const EXTRA_C: usize = 5;
const SELF_COUNTS: usize = 6;
/// A cell call's cells and its expanded cell list: the jerk launch's partial-sum slots
/// (7 to 10, never used by the same call).
const CELLS: usize = 7;
const CELL_ITEMS: usize = 8;
const CELL_SPANS: usize = 9;
const CELL_OFFSETS: usize = 10;
/// A batched call's per-particle softening (the targets' slot, which batched calls leave
/// unused).
const LENGTHS: usize = TARGETS;
/// A batched call's partial-sum slots and runs, for its particle and its cell launch,
/// and the partial sums both use in turn (the jerk launch's slots 11 to 15).
const ITEM_SLOTS: usize = 11;
const ITEM_RUNS: usize = 12;
const CELL_SLOTS: usize = 13;
const CELL_RUNS: usize = 14;
const PARTIAL: usize = 15;

impl CudaExecutor {
    /// Forces the jerk kernel's targets per thread (1 or 2; `None`: the executor's
    /// choice), for benchmarks that compare the variants.
    pub fn force_jerk_targets_per_thread(&mut self, n: Option<usize>) {
        self.jerk_per_thread = n;
    }

    /// Bounds the device memory a particle's-whole-gradient product
    /// ([`nbody_core::Executor::vjp_device`], and [`nbody_core::Executor::vjp_batch`]'s
    /// pairs of a span on itself) takes for its partial sums, 256 MiB unless set: it then
    /// runs in more launches, each over fewer diagonals of its tiles, and gives the same
    /// bits. At least one diagonal a launch whatever the bound.
    ///
    /// ```no_run
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// gpu.limit_pair_slots(64 << 20);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn limit_pair_slots(&mut self, bytes: usize) {
        self.pair_slot_bytes = bytes;
    }

    /// Opens GPU 0. Returns [`Error::NoDevice`] when there is no driver or no GPU.
    pub fn new() -> Result<Self, Error> {
        Self::on_device(0)
    }

    /// Opens GPU `ordinal`.
    pub fn on_device(ordinal: u32) -> Result<Self, Error> {
        let gpu = device::Gpu::open(ordinal, FATBIN)?;
        Ok(Self {
            scratch: Default::default(),
            morton: Default::default(),
            pinned: [None, None],
            lengths_up: Default::default(),
            tuned: HashMap::new(),
            autotune: false,
            forced: None,
            jerk_per_thread: None,
            pair_slot_bytes: gradients::PAIR_SLOT_BYTES,
            f64_family: Family::F64,
            sorted_above: order::SORTED_MIN_INTERACTIONS,
            sabotage: std::cell::Cell::new(false),
            split_partials: Default::default(),
            resident_blocks: Default::default(),
            gpu,
        })
    }

    /// How many devices the driver shows (`CUDA_VISIBLE_DEVICES` applied);
    /// [`Error::NoDevice`] without a driver. Ranks or threads that each take a device pick `ordinal % device_count()`.
    ///
    /// ```
    /// let n = nbody_cuda::CudaExecutor::device_count().unwrap_or(0);
    /// assert!(n < 1024);
    /// ```
    pub fn device_count() -> Result<u32, Error> {
        device::count()
    }

    /// Waits until every launch queued on this executor has finished.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.gpu.make_current()?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        self.gpu.copy_stream().synchronize().map_err(cuda("waiting for the copies"))
    }

    /// Device memory free now, in bytes.
    pub fn free_memory(&self) -> Result<usize, Error> {
        self.gpu.make_current()?;
        cust::memory::mem_get_info().map(|(free, _)| free).map_err(cuda("asking for free memory"))
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        self.gpu.info()
    }

    /// Times every [`tuning::CANDIDATES`] variant once per precision and size class (powers of
    /// two of N_i and N_j) on the first call of that class, and uses the fastest after.
    pub fn set_autotune(&mut self, on: bool) {
        self.autotune = on;
    }

    /// Makes the next tiled-kernel launch fail in the driver (a block of 4,096 threads,
    /// over every GPU's limit), for tests that a failed launch loses nothing: the call
    /// returns an error, outputs keep their contents and the executor stays usable.
    #[cfg(feature = "testing")]
    pub fn fail_next_launch(&mut self) {
        self.sabotage.set(true);
    }

    /// Forces one launch configuration (for benchmarks); `None` restores the choice.
    pub fn force_config(&mut self, config: Option<LaunchConfig>) {
        self.forced = config;
    }

    fn function(&self, kernel: kernels::Kernel) -> Result<Function<'_>, Error> {
        self.gpu.function(&kernel.name())
    }

    /// Uploads host slices into scratch (sources padded), returning the padded count.
    fn stage<T: DeviceReal>(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        out: &[Field<T>],
    ) -> Result<usize, Error> {
        let t = self.scratch[TARGETS].reserve(std::mem::size_of_val(targets))?;
        upload_padded(t, bytemuck::cast_slice(targets), 0)?;
        self.stage_once(sources, out)
    }

    /// The sources (padded) and the outputs of [`CudaExecutor::stage`], without the
    /// targets: for a call whose targets are its sources (the same slice), whose
    /// particles go up once into the sources' slot, which serves as both.
    fn stage_once<T: DeviceReal>(&mut self, particles: &[Particle<T>], out: &[Field<T>]) -> Result<usize, Error> {
        let padded = particles.len().next_multiple_of(SOURCE_PAD);
        let bytes = padded * size_of::<Particle<T>>();
        let s = self.scratch[SOURCES].reserve(bytes)?;
        upload_padded(s, bytemuck::cast_slice(particles), bytes)?;
        let o = self.scratch[OUT].reserve(std::mem::size_of_val(out))?;
        upload_outputs(o, bytemuck::cast_slice(out))?;
        Ok(padded)
    }

    /// Sends the kernels' lengths of `eps` ([`batch::write_kernel_lengths`]), then `pad` up
    /// to `total` values, into scratch slot `slot`; returns the least length of `eps`. They
    /// are written straight into page-locked memory, which the copy reads at the bus's
    /// speed, instead of a fresh vector the driver must stage.
    fn upload_lengths<T: DeviceReal>(
        &mut self,
        slot: usize,
        eps: &[T],
        softening: nbody_core::Softening,
        pad: T,
        total: usize,
    ) -> Result<T, Error> {
        debug_assert!(eps.len() <= total);
        let dst = self.scratch[slot].reserve(total * size_of::<T>())?;
        if total == 0 {
            return Ok(T::infinity());
        }
        let mut pageable = Vec::new();
        let host: &mut [T] = match self.lengths_up.resize(total * size_of::<T>()) {
            Ok(bytes) => bytemuck::cast_slice_mut(bytes),
            // Page-locked memory refused (the system's limit): a pageable vector still works.
            Err(_) => {
                pageable.resize(total, pad);
                &mut pageable
            }
        };
        let least = batch::write_kernel_lengths(eps, softening, &mut host[..eps.len()]);
        host[eps.len()..].fill(pad);
        upload_padded(dst, bytemuck::cast_slice(host), 0)?;
        Ok(least)
    }

    /// Runs `f` with the context current; on failure drops the scratch buffers (a failed
    /// call may have left the device short of memory) so the next call starts clean.
    fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R, Error>) -> Result<R, Error> {
        self.gpu.make_current()?;
        let result = f(self);
        if result.is_err() {
            let _ = self.gpu.stream().synchronize();
            let _ = self.gpu.copy_stream().synchronize();
            self.scratch.iter_mut().for_each(Scratch::release);
            self.morton.release();
        }
        result
    }

    fn sync_download<T: DeviceReal>(&mut self, slot: usize, out: &mut [T]) -> Result<(), Error> {
        self.gpu.stream().synchronize().map_err(cuda("running the kernel"))?;
        let buf = self.scratch[slot].reserve(0)?;
        download(buf, bytemuck::cast_slice_mut(out))
    }
}
