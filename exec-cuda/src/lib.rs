//! # nbody-cuda
//!
//! The CUDA executor: kernels in `kernels/gravity.cu`, compiled by build.rs with nvcc
//! into a fatbin (sm_90 SASS plus compute_60 PTX) embedded in the crate, loaded and
//! launched through `cust`.
//!
//! - Host-slice entry points ([`Executor`]): upload, launch, download; device buffers
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

mod batch;
mod config;
pub mod costs;
mod device;
mod hermite;
mod jerk;
mod jmemory;
mod kernels;
mod memory;
mod mixed;
mod multi;
mod pipeline;
mod resident;
pub mod timing;

pub use batch::DeviceList;
pub use config::{
    choose, choose_for, choose_for_on, choose_on, instructions_per_interaction, ladder, split_sources, LaunchConfig,
    CANDIDATES, LADDER, MIXED_LADDER, SOURCE_PAD,
};
pub use device::DeviceInfo;
pub use hermite::{DeviceHermite, Steps};
pub use jmemory::{DeviceJMemory, JParticle};
pub use memory::{DeviceFields, DeviceParticles};
pub use mixed::CudaMixedExecutor;
pub use multi::{MultiDevice, MultiState, PeerAccess};
pub use resident::DeviceState;

/// Targets per thread of the warp-shuffle kernel variants compiled into the fatbin
/// (kernels/gravity.cu's `SHUFFLE_ALL` lists the same).
pub const SHUFFLE_TARGETS_PER_THREAD: [u32; 3] = [1, 2, 4];

use cust::context::Context;
use cust::memory::{DeviceBuffer, DeviceCopy};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::{function::Function, launch};
use device::cuda;
use kernels::{count, Kernel};
use memory::{alloc, download, ptr, upload_padded, Scratch};
use nbody_core::projection::Projection;
use nbody_core::{
    validate, Array, Bodies, Error, Executor, Field, InteractionList, Jerk, Overlap, Params, Particle, Real,
};
use std::collections::HashMap;

const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gravity.fatbin"));

/// The precisions the kernels are compiled for.
pub trait DeviceReal: Real + DeviceCopy {
    /// Kernel name suffix, `"f32"` or `"f64"`.
    const TAG: &'static str;
}

impl DeviceReal for f32 {
    const TAG: &'static str = "f32";
}

impl DeviceReal for f64 {
    const TAG: &'static str = "f64";
}

/// The CUDA executor. Holds its context, module, stream and scratch buffers; create one
/// per device and reuse it.
#[derive(Debug)]
pub struct CudaExecutor {
    // Fields drop in order: every buffer before the module, stream and context.
    scratch: [Scratch; jerk::SLOTS],
    /// Pinned host staging for the two-stream source upload (pipeline.rs).
    pinned: [Option<cust::memory::LockedBuffer<u8>>; 2],
    tuned: HashMap<(&'static str, bool, bool, u32, u32), LaunchConfig>,
    autotune: bool,
    forced: Option<LaunchConfig>,
    /// Targets per thread of the jerk kernel, when forced (benchmarks).
    jerk_per_thread: Option<usize>,
    /// Partial sums of a source-split tiled launch (grown as needed; behind a RefCell
    /// because launches borrow the executor's other buffers while they reserve it).
    split_partials: std::cell::RefCell<Scratch>,
    /// f64 calls run the mixed-precision kernels ([`CudaMixedExecutor`]).
    mixed: bool,
    /// Test hook: the next tiled launch asks for an impossible block size, so the
    /// driver refuses it (see [`CudaExecutor::fail_next_launch`]).
    sabotage: std::cell::Cell<bool>,
    stream: Stream,
    /// Uploads that overlap the kernels on `stream`.
    copy_stream: Stream,
    module: Module,
    info: DeviceInfo,
    context: Context,
}

/// Scratch slots.
const TARGETS: usize = 0;
const SOURCES: usize = 1;
const OUT: usize = 2;
const EXTRA_A: usize = 3;
const EXTRA_B: usize = 4;
const EXTRA_C: usize = 5;
const SELF_COUNTS: usize = 6;

impl CudaExecutor {
    /// Forces the jerk kernel's targets per thread (1 or 2; `None`: the executor's
    /// choice), for benchmarks that compare the variants.
    pub fn force_jerk_targets_per_thread(&mut self, n: Option<usize>) {
        self.jerk_per_thread = n;
    }

    /// Opens GPU 0. Returns [`Error::NoDevice`] when there is no driver or no GPU.
    pub fn new() -> Result<Self, Error> {
        Self::on_device(0)
    }

    /// Opens GPU `ordinal`.
    pub fn on_device(ordinal: u32) -> Result<Self, Error> {
        let (context, info) = device::open(ordinal)?;
        let module = Module::from_fatbin(FATBIN, &[]).map_err(cuda("loading the kernels"))?;
        let stream = Stream::new(StreamFlags::DEFAULT, None).map_err(cuda("creating a stream"))?;
        let copy_stream = Stream::new(StreamFlags::DEFAULT, None).map_err(cuda("creating a stream"))?;
        Ok(Self {
            scratch: Default::default(),
            pinned: [None, None],
            copy_stream,
            tuned: HashMap::new(),
            autotune: false,
            forced: None,
            jerk_per_thread: None,
            mixed: false,
            sabotage: std::cell::Cell::new(false),
            split_partials: Default::default(),
            stream,
            module,
            info,
            context,
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
        device::make_current(&self.context)?;
        self.stream.synchronize().map_err(cuda("waiting for the kernels"))?;
        self.copy_stream.synchronize().map_err(cuda("waiting for the copies"))
    }

    /// Device memory free now, in bytes.
    pub fn free_memory(&self) -> Result<usize, Error> {
        device::make_current(&self.context)?;
        cust::memory::mem_get_info().map(|(free, _)| free).map_err(cuda("asking for free memory"))
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Times every [`CANDIDATES`] variant once per precision and size class (powers of
    /// two of N_i and N_j) on the first call of that class, and uses the fastest after.
    pub fn set_autotune(&mut self, on: bool) {
        self.autotune = on;
    }

    /// Makes the next tiled-kernel launch fail in the driver (a block of 4,096 threads,
    /// over every GPU's limit), for tests that a failed launch loses nothing: the call
    /// returns an error, outputs keep their contents and the executor stays usable.
    #[doc(hidden)]
    pub fn fail_next_launch(&mut self) {
        self.sabotage.set(true);
    }

    /// Forces one launch configuration (for benchmarks); `None` restores the choice.
    pub fn force_config(&mut self, config: Option<LaunchConfig>) {
        self.forced = config;
    }

    /// Uploads particles (validated: finite, non-negative masses) into a device-resident
    /// set padded with massless particles.
    pub fn upload<T: DeviceReal>(&mut self, particles: &[Particle<T>]) -> Result<DeviceParticles<T>, Error> {
        validate::particles(particles, Array::Particles)?;
        device::make_current(&self.context)?;
        let padded = particles.len().next_multiple_of(SOURCE_PAD);
        let mut buf = alloc(padded * size_of::<Particle<T>>())?;
        upload_padded(&mut buf, bytemuck::cast_slice(particles), padded * size_of::<Particle<T>>())?;
        Ok(DeviceParticles::new(buf, particles.len()))
    }

    /// Replaces the contents of a device set of the same length.
    pub fn update<T: DeviceReal>(
        &mut self,
        set: &mut DeviceParticles<T>,
        particles: &[Particle<T>],
    ) -> Result<(), Error> {
        validate::length("particles", set.len(), particles.len())?;
        validate::particles(particles, Array::Particles)?;
        device::make_current(&self.context)?;
        let total = set.padded_len() * size_of::<Particle<T>>();
        upload_padded(&mut set.buf, bytemuck::cast_slice(particles), total)
    }

    /// `n` zeroed outputs on the device.
    pub fn zeroed_fields<T: DeviceReal>(&mut self, n: usize) -> Result<DeviceFields<T>, Error> {
        device::make_current(&self.context)?;
        let mut buf = alloc(DeviceFields::<T>::bytes(n))?;
        upload_padded(&mut buf, &[], DeviceFields::<T>::bytes(n))?;
        Ok(DeviceFields::new(buf, n))
    }

    /// Zeroes device outputs.
    pub fn clear<T: DeviceReal>(&mut self, fields: &mut DeviceFields<T>) -> Result<(), Error> {
        device::make_current(&self.context)?;
        upload_padded(&mut fields.buf, &[], DeviceFields::<T>::bytes(fields.len))
    }

    /// Copies device outputs to the host.
    pub fn download<T: DeviceReal>(&mut self, fields: &DeviceFields<T>, out: &mut [Field<T>]) -> Result<(), Error> {
        validate::length("output", fields.len(), out.len())?;
        device::make_current(&self.context)?;
        self.stream.synchronize().map_err(cuda("waiting for the kernels"))?;
        download(&fields.buf, bytemuck::cast_slice_mut(out))
    }

    /// Adds the field of device-resident `sources` on device-resident `targets` into
    /// `out`, all on the GPU. `Overlap::Identical` requires `targets` and `sources` to be
    /// the same set; `Overlap::Shared` ranges are checked against the lengths (the
    /// particles themselves are not compared, since they are on the device).
    pub fn accelerations_resident<T: DeviceReal>(
        &mut self,
        targets: &DeviceParticles<T>,
        sources: &DeviceParticles<T>,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<(), Error> {
        self.check_resident(targets, sources, params, out)?;
        device::make_current(&self.context)?;
        let config = self.config_for::<T>(targets.len(), sources.len(), params)?;
        self.launch_tiled(config, &targets.buf, targets.len(), &sources.buf, sources.padded_len(), &out.buf, params)
    }

    /// [`CudaExecutor::accelerations_resident`] through the warp-shuffle variant of the
    /// kernel (each warp's sources broadcast from registers by `__shfl_sync`, no shared
    /// memory, no barriers; 128 threads, one per target, `targets_per_thread` of
    /// [`SHUFFLE_TARGETS_PER_THREAD`] targets each): for comparing the two ways of
    /// sharing sources (`nbody-cuda-bench --shuffle`). The tiled kernel is the faster
    /// (see README), so no call chooses this one by itself.
    ///
    /// ```no_run
    /// use nbody_core::Params;
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let (p, _) = nbody_integrators::ics::plummer::<f32>(65_536, 1);
    /// let set = gpu.upload(&p)?;
    /// let mut out = gpu.zeroed_fields::<f32>(p.len())?;
    /// let params = Params::softened(0.01f32).with_overlap_identical();
    /// gpu.accelerations_resident_shuffle(&set, &set, &params, &mut out, 4)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn accelerations_resident_shuffle<T: DeviceReal>(
        &mut self,
        targets: &DeviceParticles<T>,
        sources: &DeviceParticles<T>,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
        targets_per_thread: u32,
    ) -> Result<(), Error> {
        self.check_resident(targets, sources, params, out)?;
        if !SHUFFLE_TARGETS_PER_THREAD.contains(&targets_per_thread) {
            return Err(Error::InvalidParameter { name: "targets_per_thread", requirement: "1, 2 or 4" });
        }
        if targets.is_empty() {
            return Ok(());
        }
        device::make_current(&self.context)?;
        let (tag, (eps2, masked), g) = (self.kernel_tag::<T>(), self.kernel_eps2(params), params.g);
        let f = self.function(Kernel::Shuffle {
            tag,
            targets_per_thread: targets_per_thread as usize,
            potential: params.potential,
            masked,
        })?;
        let (t0, _, len) = params.overlap.resolve(targets.len());
        let (n, padded, stream) = (targets.len(), sources.padded_len(), &self.stream);
        let blocks = n.div_ceil(128 * targets_per_thread as usize) as u32;
        let (tp, sp, op) = (ptr(&targets.buf), ptr(&sources.buf), ptr(&out.buf));
        // SAFETY: n targets and outputs, `padded` sources (a multiple of 32) of T lanes.
        unsafe {
            launch!(f<<<blocks, 128, 0, stream>>>(
                tp, count(n)?, sp, count(padded)?, op, eps2, g, count(t0)?, count(len)?
            ))
        }
        .map_err(cuda("launching the warp-shuffle kernel"))
    }

    /// The checks of a resident call: parameters, lengths, and an overlap that fits.
    fn check_resident<T: DeviceReal>(
        &self,
        targets: &DeviceParticles<T>,
        sources: &DeviceParticles<T>,
        params: &Params<T>,
        out: &DeviceFields<T>,
    ) -> Result<(), Error> {
        validate::params(params)?;
        validate::length("output", targets.len(), out.len())?;
        if params.overlap == Overlap::Identical && !std::ptr::eq(targets, sources) {
            return Err(Error::InvalidParameter {
                name: "overlap",
                requirement: "Identical only for the same device set",
            });
        }
        let (t0, s0, len) = params.overlap.resolve(targets.len());
        if t0 + len > targets.len() || s0 + len > sources.len() {
            let (array, end, n) = if t0 + len > targets.len() {
                (Array::Targets, t0 + len, targets.len())
            } else {
                (Array::Sources, s0 + len, sources.len())
            };
            return Err(Error::OverlapOutOfRange { array, end, len: n });
        }
        Ok(())
    }

    /// The kernel variant for this call: forced, tuned, or the heuristic's.
    fn config_for<T: DeviceReal>(&mut self, n_t: usize, n_s: usize, params: &Params<T>) -> Result<LaunchConfig, Error> {
        if let Some(c) = self.forced {
            return Ok(c);
        }
        if !self.autotune {
            let rungs = ladder(self.kernel_tag::<T>());
            return Ok(choose_for_on(rungs, n_t, n_s.next_multiple_of(SOURCE_PAD), self.info.sm_count));
        }
        let key = (
            self.kernel_tag::<T>(),
            params.potential,
            self.kernel_eps2(params).1,
            n_t.max(1).ilog2(),
            n_s.max(1).ilog2(),
        );
        if let Some(c) = self.tuned.get(&key) {
            return Ok(*c);
        }
        let best = timing::tune::<T>(self, n_t, n_s, params)?;
        self.tuned.insert(key, best);
        Ok(best)
    }

    fn function(&self, kernel: kernels::Kernel) -> Result<Function<'_>, Error> {
        self.module.get_function(kernel.name()).map_err(cuda("finding a kernel"))
    }

    /// Launches the tiled kernel; `sources_padded` is a multiple of [`SOURCE_PAD`].
    #[allow(clippy::too_many_arguments)]
    fn launch_tiled<T: DeviceReal>(
        &self,
        config: LaunchConfig,
        targets: &cust::memory::DeviceSlice<u8>,
        n_targets: usize,
        sources: &cust::memory::DeviceSlice<u8>,
        sources_padded: usize,
        out: &cust::memory::DeviceSlice<u8>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        if n_targets == 0 {
            return Ok(());
        }
        let (tag, (eps2, masked), g) = (self.kernel_tag::<T>(), self.kernel_eps2(params), params.g);
        let f = self.function(Kernel::Tiled { config, tag, potential: params.potential, masked })?;
        let (t0, _, len) = params.overlap.resolve(n_targets);
        let stream = &self.stream;
        let block = if self.sabotage.replace(false) { 4096 } else { config.block };
        let blocks = config.blocks(n_targets);
        let (chunk, chunks) = split_sources(blocks as usize, sources_padded, config.block as usize, self.info.sm_count);
        let mut partials = self.split_partials.borrow_mut();
        let partial = if chunks > 1 {
            ptr(partials.reserve(chunks * n_targets * 4 * size_of::<T>())?)
        } else {
            cust::memory::DevicePointer::null()
        };
        // SAFETY: the buffers hold n_targets targets, sources_padded sources and
        // n_targets outputs of T lanes, as the kernel's signature expects; `partial`
        // holds chunks x n_targets records when chunks > 1 (null and unused otherwise).
        unsafe {
            launch!(f<<<(blocks, chunks as u32), block, 0, stream>>>(
                ptr(targets), count(n_targets)?, ptr(sources), count(sources_padded)?, ptr(out),
                eps2, g, count(t0)?, count(len)?, count(chunk)?, partial
            ))
        }
        .map_err(cuda("launching the tiled kernel"))?;
        if chunks > 1 {
            let f = self.function(Kernel::TiledReduce { tag, potential: params.potential, masked })?;
            // SAFETY: `partial` holds chunks x n_targets records written above.
            unsafe {
                launch!(f<<<n_targets.div_ceil(256) as u32, 256, 0, stream>>>(
                    ptr(targets), count(n_targets)?, count(chunks)?, partial, ptr(out), eps2, g, count(t0)?, count(len)?
                ))
            }
            .map_err(cuda("launching the tiled reduction"))?;
        }
        Ok(())
    }

    /// The batched kernel over `n_items` items, then the self-potential fix-up over the
    /// `n` particles (softened potential only).
    fn launch_batch<T: DeviceReal>(
        &self,
        b: &batch::Buffers,
        n_items: usize,
        n: usize,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let (tag, (eps2, masked), g) = (self.kernel_tag::<T>(), self.kernel_eps2(params), params.g);
        let f = self.function(Kernel::Batch { tag, potential: params.potential, masked })?;
        let stream = &self.stream;
        let (ps, it, sp, off, o) = (b.particles, b.items, b.spans, b.offsets, b.out);
        // SAFETY: items index spans, spans index particles (validated), out has one
        // entry per particle.
        unsafe { launch!(f<<<n_items as u32, batch::BLOCK, 0, stream>>>(ps, it, sp, off, o, eps2, g)) }
            .map_err(cuda("launching the batched kernel"))?;
        if params.potential && !masked && n > 0 {
            let f = self.function(Kernel::SelfPotential { tag })?;
            let counts = b.self_counts;
            // SAFETY: particles, self counts and out all hold n entries.
            unsafe { launch!(f<<<n.div_ceil(256) as u32, 256, 0, stream>>>(ps, counts, count(n)?, o, eps2, g)) }
                .map_err(cuda("launching the self-potential fix-up"))?;
        }
        Ok(())
    }

    /// Expands and uploads an interaction list over `n` particles, for
    /// [`CudaExecutor::accelerations_batch_resident`]: a tree code whose list serves
    /// several calls (or whose particles stay on the device) pays for it once.
    ///
    /// ```no_run
    /// use nbody_core::{InteractionList, Pair, Params, Particle, Span};
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let ps = vec![Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    /// let spans = [Span::new(0, 2)];
    /// let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) }];
    /// let list = gpu.upload_list(&InteractionList { pairs: &pairs, source_spans: &spans }, ps.len())?;
    /// let set = gpu.upload(&ps)?;
    /// let mut out = gpu.zeroed_fields::<f32>(ps.len())?;
    /// gpu.accelerations_batch_resident(&set, &list, &Params::softened(0.01), &mut out)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn upload_list(&mut self, list: &InteractionList<'_>, n: usize) -> Result<batch::DeviceList, Error> {
        list.validate(n)?;
        device::make_current(&self.context)?;
        let ex = batch::expand(list, n);
        let up = |data: &[u8]| -> Result<DeviceBuffer<u8>, Error> {
            let mut buf = alloc(data.len())?;
            upload_padded(&mut buf, data, 0)?;
            Ok(buf)
        };
        Ok(batch::DeviceList {
            items: up(bytemuck::cast_slice(&ex.items))?,
            spans: up(bytemuck::cast_slice(&ex.spans))?,
            offsets: up(bytemuck::cast_slice(&ex.offsets))?,
            self_counts: up(bytemuck::cast_slice(&ex.self_counts))?,
            n_items: ex.items.len(),
            particles: n,
            interactions: list.interactions(),
        })
    }

    /// [`Executor::accelerations_batch`] on the device: particles, list and output all
    /// resident; returns once the launches are queued (a download or
    /// [`timing::time_with_events`] waits for them).
    pub fn accelerations_batch_resident<T: DeviceReal>(
        &mut self,
        particles: &DeviceParticles<T>,
        list: &batch::DeviceList,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<(), Error> {
        validate::params(params)?;
        validate::length("interaction list particles", particles.len(), list.particles)?;
        validate::length("output", particles.len(), out.len())?;
        if list.n_items == 0 {
            return Ok(());
        }
        device::make_current(&self.context)?;
        let bufs = batch::Buffers {
            particles: ptr(&particles.buf),
            items: ptr(&list.items),
            spans: ptr(&list.spans),
            offsets: ptr(&list.offsets),
            self_counts: ptr(&list.self_counts),
            out: ptr(&out.buf),
        };
        self.launch_batch(&bufs, list.n_items, particles.len(), params)
    }

    /// Density map of device-resident particles (for example a [`DeviceState`]'s
    /// positions), added into `grid` on the host: only the grid crosses PCIe.
    pub fn project_resident<T: DeviceReal>(
        &mut self,
        particles: &DeviceParticles<T>,
        projection: &Projection,
        grid: &mut [f64],
    ) -> Result<(), Error> {
        projection.validate(grid.len())?;
        self.guarded(|me| me.launch_project::<T>(ptr(&particles.buf), particles.len(), projection, grid))
    }

    /// Uploads `grid`, adds the particles at `particles` into it on the device, and
    /// copies it back.
    fn launch_project<T: DeviceReal>(
        &mut self,
        particles: cust::memory::DevicePointer<u8>,
        n: usize,
        projection: &Projection,
        grid: &mut [f64],
    ) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let g = self.scratch[EXTRA_A].reserve(std::mem::size_of_val(grid))?;
        upload_padded(g, bytemuck::cast_slice(grid), 0)?;
        let gp = ptr(g);
        let f = self.function(Kernel::Project { tag: T::TAG })?;
        let (h, v) = projection.plane.axes();
        let half = projection.half_width;
        let (left, top) = (projection.centre[0] - half, projection.centre[1] + half);
        let scale = projection.pixels as f64 / (2.0 * half);
        let (pixels, stream) = (count(projection.pixels)?, &self.stream);
        // SAFETY: n particles of T lanes; the grid holds pixels² doubles.
        unsafe {
            launch!(f<<<n.div_ceil(256) as u32, 256, 0, stream>>>(
                particles, count(n)?, gp, pixels, count(h)?, count(v)?, left, top, scale
            ))
        }
        .map_err(cuda("launching the density map"))?;
        self.sync_download(EXTRA_A, grid)
    }

    /// Uploads host slices into scratch (sources padded), returning the padded count.
    fn stage<T: DeviceReal>(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        out: &[Field<T>],
    ) -> Result<usize, Error> {
        let padded = sources.len().next_multiple_of(SOURCE_PAD);
        let psize = size_of::<Particle<T>>();
        let t = self.scratch[TARGETS].reserve(std::mem::size_of_val(targets))?;
        upload_padded(t, bytemuck::cast_slice(targets), 0)?;
        let s = self.scratch[SOURCES].reserve(padded * psize)?;
        upload_padded(s, bytemuck::cast_slice(sources), padded * psize)?;
        let o = self.scratch[OUT].reserve(std::mem::size_of_val(out))?;
        upload_padded(o, bytemuck::cast_slice(out), 0)?;
        Ok(padded)
    }

    /// Runs `f` with the context current; on failure drops the scratch buffers (a failed
    /// call may have left the device short of memory) so the next call starts clean.
    fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R, Error>) -> Result<R, Error> {
        device::make_current(&self.context)?;
        let result = f(self);
        if result.is_err() {
            let _ = self.stream.synchronize();
            let _ = self.copy_stream.synchronize();
            self.scratch.iter_mut().for_each(Scratch::release);
        }
        result
    }

    fn sync_download<T: DeviceReal>(&mut self, slot: usize, out: &mut [T]) -> Result<(), Error> {
        self.stream.synchronize().map_err(cuda("running the kernel"))?;
        let buf = self.scratch[slot].reserve(0)?;
        download(buf, bytemuck::cast_slice_mut(out))
    }
}

impl<T: DeviceReal> Executor<T> for CudaExecutor {
    fn name(&self) -> &'static str {
        if self.kernel_tag::<T>() == "mixed" {
            "cuda-mixed"
        } else {
            "cuda"
        }
    }

    fn accelerations(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate::call(targets, sources, params, out.len())?;
        if targets.is_empty() {
            return Ok(());
        }
        self.guarded(|me| {
            if sources.len() >= pipeline::PIPELINE_MIN_SOURCES {
                return me.accelerations_pipelined(targets, sources, params, out);
            }
            let padded = me.stage(targets, sources, out)?;
            let config = me.config_for::<T>(targets.len(), sources.len(), params)?;
            let s = &me.scratch;
            let (t, src, o) = (
                s[TARGETS].buf_ref().ok_or(Error::NoDevice)?,
                s[SOURCES].buf_ref().ok_or(Error::NoDevice)?,
                s[OUT].buf_ref().ok_or(Error::NoDevice)?,
            );
            me.launch_tiled(config, t, targets.len(), src, padded, o, params)?;
            me.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))
        })
    }

    fn accelerations_jerk(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        validate::jerk_call(&targets, &sources, params, out.len(), jerk.len())?;
        if targets.pos.is_empty() {
            return Ok(());
        }
        self.run_jerk(targets, sources, params, out, jerk, None)
    }

    /// Finds neighbours in the jerk kernel's pass (see the jerk kernel in
    /// kernels/gravity.cu): nearest per thread, combined across the threads of a target
    /// and the chunks of a split launch; list entries appended through atomic counters.
    fn accelerations_jerk_neighbours(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        neighbours: &mut nbody_core::neighbours::Neighbours<'_, T>,
    ) -> Result<(), Error> {
        neighbours.validate(targets.pos.len(), sources.pos.len())?;
        validate::jerk_call(&targets, &sources, params, out.len(), jerk.len())?;
        if targets.pos.is_empty() {
            return Ok(());
        }
        self.run_jerk(targets, sources, params, out, jerk, Some(neighbours))
    }

    fn accelerations_batch(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        nbody_core::validate_batch(particles, list, params, out.len())?;
        let ex = batch::expand(list, particles.len());
        if ex.items.is_empty() {
            return Ok(());
        }
        self.guarded(|me| {
            let up = |me: &mut Self, slot: usize, data: &[u8]| -> Result<(), Error> {
                let buf = me.scratch[slot].reserve(data.len())?;
                upload_padded(buf, data, 0)
            };
            up(me, SOURCES, bytemuck::cast_slice(particles))?;
            up(me, OUT, bytemuck::cast_slice(out))?;
            up(me, EXTRA_A, bytemuck::cast_slice(&ex.items))?;
            up(me, EXTRA_B, bytemuck::cast_slice(&ex.spans))?;
            up(me, EXTRA_C, bytemuck::cast_slice(&ex.offsets))?;
            up(me, SELF_COUNTS, bytemuck::cast_slice(&ex.self_counts))?;
            let b = |k: usize| me.scratch[k].buf_ref().map(|b| ptr(b)).ok_or(Error::NoDevice);
            let bufs = batch::Buffers {
                particles: b(SOURCES)?,
                items: b(EXTRA_A)?,
                spans: b(EXTRA_B)?,
                offsets: b(EXTRA_C)?,
                self_counts: b(SELF_COUNTS)?,
                out: b(OUT)?,
            };
            me.launch_batch(&bufs, ex.items.len(), particles.len(), params)?;
            me.sync_download(OUT, bytemuck::cast_slice_mut::<Field<T>, T>(out))
        })
    }

    /// Deposits on the device (atomic adds into a grid of doubles): the particles go up,
    /// only the grid comes back.
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        projection.validate(grid.len())?;
        validate::particles(particles, Array::Particles)?;
        if particles.is_empty() {
            return Ok(());
        }
        self.guarded(|me| {
            let p = me.scratch[SOURCES].reserve(std::mem::size_of_val(particles))?;
            upload_padded(p, bytemuck::cast_slice(particles), 0)?;
            let pp = ptr(p);
            me.launch_project::<T>(pp, particles.len(), projection, grid)
        })
    }
}
