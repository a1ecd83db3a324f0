//! Device-resident particle sets and fields, and the tiled kernel's launches on them
//! (host-slice calls stage into scratch and launch the same way).

use crate::args::{TiledArgs, null};
use crate::device::cuda;
use crate::kernels::{Kernel, Soft, count};
use crate::memory::{alloc, download, ptr, upload_padded};
use crate::tuning::{
    LaunchConfig, SHUFFLE_TARGETS_PER_THREAD, balance_waves, choose_for_on, chunk_sources, ladder, split_sources,
};
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal, Family, SOURCE_PAD, timing};
use nbody_core::{Array, Error, Field, Overlap, Params, Particle, validate};

/// The softened kernel of a tiled launch: which one, its eps² (Plummer) or support (the
/// spline), whether it masks, and the per-particle lengths of targets and sources on the
/// device (null with one softening).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TiledSoft<T> {
    pub soft: Soft,
    pub eps2: T,
    pub masked: bool,
    pub lengths: (cust::memory::DevicePointer<u8>, cust::memory::DevicePointer<u8>),
}

impl<T: DeviceReal> TiledSoft<T> {
    /// The kernel of `params` with one length for every particle (its compiled
    /// argument: the spline's support).
    pub(crate) fn of(params: &Params<T>) -> Self {
        let soft = Soft::of(params.softening, false);
        let eps2 = nbody_core::kernel::Softened::of(params).argument();
        TiledSoft { soft, eps2, masked: soft.masked(params.masked()), lengths: (null(), null()) }
    }
}

/// Device memory a launch may take for partial sums when it splits its sources only to
/// fill its last wave ([`balance_waves`]): 8 chunks of 2^20 f32 targets.
const PARTIALS_BUDGET: usize = 128 << 20;

/// Threads per block of the mixed f64 redo (32 targets a block; gravity.cu's REDO_WARPS
/// warps of 32).
const REDO_BLOCK: u32 = 16 * 32;

impl CudaExecutor {
    /// Uploads particles (validated: finite, non-negative masses, and for the mixed
    /// kernels no wider than [`validate::MIXED_MAX_EXTENT`]) into a device-resident set
    /// padded with massless particles.
    pub fn upload<T: DeviceReal>(&mut self, particles: &[Particle<T>]) -> Result<DeviceParticles<T>, Error> {
        validate::particles(particles, Array::Particles)?;
        self.check_mixed_extent::<T>(particles, &[])?;
        self.gpu.make_current()?;
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
        self.check_mixed_extent::<T>(particles, &[])?;
        self.gpu.make_current()?;
        let total = set.padded_len() * size_of::<Particle<T>>();
        upload_padded(&mut set.buf, bytemuck::cast_slice(particles), total)
    }

    /// `n` zeroed outputs on the device.
    pub fn zeroed_fields<T: DeviceReal>(&mut self, n: usize) -> Result<DeviceFields<T>, Error> {
        self.gpu.make_current()?;
        let mut buf = alloc(DeviceFields::<T>::bytes(n))?;
        upload_padded(&mut buf, &[], DeviceFields::<T>::bytes(n))?;
        Ok(DeviceFields::new(buf, n))
    }

    /// Copies host fields to the device (an earlier force for
    /// [`CudaExecutor::tree_forces_after`], a checkpointed field).
    ///
    /// ```no_run
    /// use nbody_core::Field;
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let fields = gpu.upload_fields(&[Field::new(1.0f32, 0.0, 0.0, -1.0)])?;
    /// assert_eq!(fields.len(), 1);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn upload_fields<T: DeviceReal>(&mut self, fields: &[Field<T>]) -> Result<DeviceFields<T>, Error> {
        self.gpu.make_current()?;
        let bytes = DeviceFields::<T>::bytes(fields.len());
        let mut buf = alloc(bytes)?;
        upload_padded(&mut buf, bytemuck::cast_slice(fields), bytes)?;
        Ok(DeviceFields::new(buf, fields.len()))
    }

    /// Zeroes device outputs.
    pub fn clear<T: DeviceReal>(&mut self, fields: &mut DeviceFields<T>) -> Result<(), Error> {
        self.gpu.make_current()?;
        upload_padded(&mut fields.buf, &[], DeviceFields::<T>::bytes(fields.len))
    }

    /// Copies device outputs to the host.
    pub fn download<T: DeviceReal>(&mut self, fields: &DeviceFields<T>, out: &mut [Field<T>]) -> Result<(), Error> {
        validate::length("output", fields.len(), out.len())?;
        self.gpu.make_current()?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
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
        self.gpu.make_current()?;
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
        self.gpu.make_current()?;
        let (tag, (eps2, masked), g) = (self.family::<T>(), self.kernel_eps2(params)?, params.g);
        let kernel = Kernel::Shuffle {
            tag,
            targets_per_thread: targets_per_thread as usize,
            potential: params.potential,
            masked,
        };
        let (t0, _, len) = params.overlap.resolve(targets.len());
        let n = targets.len();
        let blocks = n.div_ceil(128 * targets_per_thread as usize) as u32;
        let args = TiledArgs {
            targets: ptr(&targets.buf),
            sources: ptr(&sources.buf),
            out: ptr(&out.buf),
            partial: null(),
            lengths_t: null(),
            lengths_s: null(),
            estimate: null(),
            redo: null(),
            eps2,
            g,
            n_targets: count(n)?,
            n_sources_padded: count(sources.padded_len())?,
            self_t0: count(t0)?,
            self_len: count(len)?,
            chunk: 0,
        };
        // SAFETY: n targets and outputs, `padded` sources (a multiple of 32) of T lanes.
        unsafe { self.launch(kernel, blocks, 128, args, "launching the warp-shuffle kernel") }
    }

    /// The checks of a resident call: parameters, lengths, and an overlap that fits.
    pub(crate) fn check_resident<T: DeviceReal>(
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
    pub(crate) fn config_for<T: DeviceReal>(
        &mut self,
        n_t: usize,
        n_s: usize,
        params: &Params<T>,
    ) -> Result<LaunchConfig, Error> {
        if let Some(c) = self.forced {
            return Ok(c);
        }
        if !self.autotune {
            let rungs = ladder(self.family::<T>());
            return Ok(choose_for_on(rungs, n_t, n_s.next_multiple_of(SOURCE_PAD), self.gpu.info().sm_count));
        }
        let key =
            (self.family::<T>(), params.potential, self.kernel_eps2(params)?.1, n_t.max(1).ilog2(), n_s.max(1).ilog2());
        if let Some(c) = self.tuned.get(&key) {
            return Ok(*c);
        }
        let best = timing::tune::<T>(self, n_t, n_s, params)?;
        self.tuned.insert(key, best);
        Ok(best)
    }

    /// Blocks of `block` threads of `kernel` one multiprocessor holds at once, asked of
    /// the driver once per kernel (launches run on every force call).
    fn resident_blocks(&self, kernel: Kernel, f: &cust::function::Function<'_>, block: u32) -> Result<u32, Error> {
        if let Some(&n) = self.resident_blocks.borrow().get(&kernel) {
            return Ok(n);
        }
        let n = f
            .max_active_blocks_per_multiprocessor(cust::function::BlockSize::x(block), 0)
            .map_err(cuda("asking a kernel's occupancy"))?;
        self.resident_blocks.borrow_mut().insert(kernel, n);
        Ok(n)
    }

    /// Launches the tiled kernel; `sources_padded` is a multiple of [`SOURCE_PAD`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_tiled<T: DeviceReal>(
        &self,
        config: LaunchConfig,
        targets: &cust::memory::DeviceSlice<u8>,
        n_targets: usize,
        sources: &cust::memory::DeviceSlice<u8>,
        sources_padded: usize,
        out: &cust::memory::DeviceSlice<u8>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let (eps2, masked) = self.kernel_eps2(params)?;
        let plummer = TiledSoft { soft: Soft::Plummer, eps2, masked, lengths: (null(), null()) };
        self.launch_tiled_as(config, targets, n_targets, sources, sources_padded, out, params, plummer)
    }

    /// [`CudaExecutor::launch_tiled`] under the softened kernel `k` (its own eps² or
    /// support, mask and lengths; `params` gives G, the potential and the overlap).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_tiled_as<T: DeviceReal>(
        &self,
        config: LaunchConfig,
        targets: &cust::memory::DeviceSlice<u8>,
        n_targets: usize,
        sources: &cust::memory::DeviceSlice<u8>,
        sources_padded: usize,
        out: &cust::memory::DeviceSlice<u8>,
        params: &Params<T>,
        k: TiledSoft<T>,
    ) -> Result<(), Error> {
        if n_targets == 0 {
            return Ok(());
        }
        let (tag, g, TiledSoft { soft, eps2, masked, lengths: (lengths_t, lengths_s) }) =
            (self.family::<T>(), params.g, k);
        let kernel = Kernel::Tiled { config, tag, potential: params.potential, masked, soft };
        let f = self.function(kernel)?;
        let (t0, _, len) = params.overlap.resolve(n_targets);
        let block = if self.sabotage.replace(false) { 4096 } else { config.block };
        let blocks = config.blocks(n_targets);
        let (mut chunk, mut chunks) =
            split_sources(blocks as usize, sources_padded, config.block as usize, self.gpu.info().sm_count);
        // More chunks than fill the GPU where they fill the last wave too, within a budget
        // for the partial sums.
        let slots = self.resident_blocks(kernel, &f, config.block)? as usize * self.gpu.info().sm_count as usize;
        let most = PARTIALS_BUDGET / (n_targets * 4 * size_of::<T>()).max(1);
        let balanced = balance_waves(blocks as usize, slots, sources_padded, config.block as usize, chunks, most);
        if balanced != chunks {
            (chunk, chunks) = chunk_sources(sources_padded, balanced, config.block as usize);
        }
        // Mixed launches always reduce (the reduction lists the targets to sum again in
        // f64; see REDO_RATIO in gravity.cu): after the partial sums, one float estimate
        // per chunk and target, then the list (a count and up to n_targets indices).
        let mixed = tag == Family::Mixed;
        // Mixed: 32 records more, so the redo's runs (whole groups of 32 listed targets)
        // always fit in what the reduction has read.
        let records = chunks * n_targets + if mixed { 32 } else { 0 };
        let sums = records * 4 * size_of::<T>();
        let estimates = if mixed { chunks * n_targets * size_of::<f32>() } else { 0 };
        let list = if mixed { (n_targets + 1) * size_of::<i32>() } else { 0 };
        let mut partials = self.split_partials.borrow_mut();
        let (partial, estimate, redo) = if chunks > 1 || mixed {
            let base = ptr(partials.reserve(sums + estimates + list)?);
            // SAFETY: offsets within the buffer just reserved (sums and estimates are
            // multiples of 4 bytes, so the floats and ints stay aligned).
            unsafe { (base, base.add(sums), base.add(sums + estimates)) }
        } else {
            (null(), null(), null())
        };
        let args = TiledArgs {
            targets: ptr(targets),
            sources: ptr(sources),
            out: ptr(out),
            partial,
            lengths_t,
            lengths_s,
            estimate,
            redo,
            eps2,
            g,
            n_targets: count(n_targets)?,
            n_sources_padded: count(sources_padded)?,
            self_t0: count(t0)?,
            self_len: count(len)?,
            chunk: count(chunk)?,
        };
        // SAFETY: the buffers hold n_targets targets, sources_padded sources and
        // n_targets outputs of T lanes; `partial` holds chunks x n_targets records when
        // chunks > 1 (null and unused otherwise).
        unsafe {
            self.launch_function(&f, kernel, (blocks, chunks as u32), block, args, "launching the tiled kernel")?
        };
        if chunks > 1 || mixed {
            let reduce = Kernel::TiledReduce { tag, potential: params.potential, masked, soft };
            let args = TiledArgs { chunk: count(chunks)?, ..args };
            // SAFETY: `partial` holds chunks x n_targets records written above (and
            // `estimate` as many floats, `redo` n_targets + 1 ints, when mixed).
            unsafe { self.launch(reduce, n_targets.div_ceil(256) as u32, 256, args, "launching the tiled reduction")? };
        }
        if mixed {
            // Two blocks an SM over the listed targets' runs of sources (each returns at
            // once when none is listed), then one thread a listed target to finish them.
            let (potential, sm) = (params.potential, self.gpu.info().sm_count);
            let args = TiledArgs { chunk: count(records)?, ..args };
            // SAFETY: `redo` lists at most n_targets indices below n_targets; `partial`
            // holds `records` records, which the reduction has read; the targets, sources
            // and outputs are those of the launch above.
            unsafe {
                self.launch(
                    Kernel::MixedRedo { potential, masked },
                    2 * sm,
                    REDO_BLOCK,
                    args,
                    "launching the mixed f64 redo",
                )?;
                let finish = Kernel::MixedRedoFinish { potential, masked };
                let blocks = (n_targets.div_ceil(256) as u32).min(4 * sm);
                self.launch(finish, blocks, 256, args, "finishing the mixed f64 redo")?;
            }
        }
        Ok(())
    }
}
