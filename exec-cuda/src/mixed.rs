//! Mixed precision on the GPU: f64 particles and sums, each interaction in f32.
//!
//! The kernels are the f32 and f64 kernels' own code instantiated a third time
//! (kernels/gravity.cu, `T = double`, `C = float`): each thread block computes the frame
//! of its targets (the middle of their bounding box, or the origin where the box is
//! wider than its distance from it), every particle it reads is moved into that frame in
//! f64 and split into a float and the float of what that dropped (double-single, as
//! Sapporo2 does), separations are taken on both parts (exact for close pairs), the rest
//! of each interaction runs in f32, and each thread's f32 sums go into f64 sums every
//! tile. The error is then that of f32 arithmetic on exact separations, whatever the
//! order of the targets and however far the system is from the origin (plain f32 loses
//! `|x| 2^-24` of every coordinate). That is a few 2^-24 of each pair's pull, which is
//! not small beside a target's net pull where its strongest pulls nearly cancel (a
//! particle between heavy neighbours, at a clump's centre): the kernels also sum each
//! target's squared pulls, and the reduction sends a target whose root sum exceeds six
//! times its net pull to an f64 sum of its own (gravity.cu, `REDO_RATIO`), so the
//! clustered test holds 2e-6 in every order, as the CPU's mixed executor does.
//!
//! The CPU's `nbody_cpu::MixedExecutor` rounds the offsets once, on Morton-sorted blocks
//! of 16 targets; the GPU's blocks hold up to 1,024 targets, too wide for that (emulated
//! on the 65,536-body Plummer sphere shifted by 1e4: 5.8e-6 with one rounding on sorted
//! blocks of 256, 1.2e-4 unsorted; 9e-8 with the low parts, sorted or not).

use crate::{CudaExecutor, DeviceReal, Family};
use nbody_core::forward::Forward;
use nbody_core::projection::Projection;
use nbody_core::{Error, Executor, Params, Particle, validate};

impl CudaExecutor {
    /// The kernel family that runs this executor's calls in `T`: [`Family::Mixed`] for
    /// f64 on a mixed executor, else `T`'s own.
    ///
    /// ```no_run
    /// use nbody_cuda::{CudaMixedExecutor, Family};
    /// let gpu = CudaMixedExecutor::new()?.into_executor();
    /// assert_eq!(gpu.family::<f64>(), Family::Mixed);
    /// assert_eq!(gpu.family::<f32>(), Family::F32);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn family<T: DeviceReal>(&self) -> Family {
        match T::FAMILY {
            Family::F64 => self.f64_family,
            family => family,
        }
    }

    /// Refuses, for the mixed kernels, targets and sources wider than
    /// [`validate::MIXED_MAX_EXTENT`] (their f32 offsets would overflow); other kernels
    /// take any finite input.
    pub(crate) fn check_mixed_extent<T: DeviceReal>(
        &self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
    ) -> Result<(), Error> {
        if self.family::<T>() == Family::Mixed {
            validate::mixed_extent(targets, sources)?;
        }
        Ok(())
    }

    /// eps² as the kernels take it, and whether they mask coincident pairs. The mixed
    /// kernels square eps in f32 (their arithmetic), and mask where that square is not
    /// a normal f32 (the GPU flushes subnormals, so it would vanish from r²).
    /// Refuses a spline softening: every kernel here is Plummer's.
    pub(crate) fn kernel_eps2<T: DeviceReal>(&self, params: &Params<T>) -> Result<(T, bool), Error> {
        nbody_core::validate::plummer_only(params, "CUDA kernels")?;
        Ok(if self.family::<T>() == Family::Mixed {
            let e = params.eps.to_f64() as f32;
            let e2 = e * e;
            (T::from_f64(e2 as f64), e2 < f32::MIN_POSITIVE)
        } else {
            (params.eps2(), params.masked())
        })
    }

    /// Whether its f64 calls run the mixed-precision kernels (it came from a
    /// [`CudaMixedExecutor`]).
    ///
    /// ```no_run
    /// let gpu = nbody_cuda::CudaMixedExecutor::new()?.into_executor();
    /// assert!(gpu.is_mixed());
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn is_mixed(&self) -> bool {
        self.f64_family == Family::Mixed
    }

    /// Whether the jerk kernel may hold two targets per thread: where each source's
    /// shared-memory load is large (f64; mixed, whose positions carry low parts), not in
    /// f32, nor for a mixed neighbour search (the search's registers leave no room for a
    /// second target).
    pub(crate) fn two_per_thread<T: DeviceReal>(&self, neighbours: bool) -> bool {
        match self.family::<T>() {
            Family::F32 => false,
            Family::Mixed => !neighbours,
            Family::F64 => true,
        }
    }
}

/// The mixed-precision CUDA executor (an `Executor<f64>`): forces of close to f64
/// quality at close to the f32 kernel's speed, for systems far from the origin too.
///
/// Every entry point runs on the GPU (acceleration and potential, jerk with or without
/// neighbours, batched lists, density maps); [`CudaMixedExecutor::executor`] gives the
/// underlying [`CudaExecutor`], whose f64 device-resident calls ([`crate::DeviceState`]'s
/// leapfrog, [`crate::CudaHermite`]) then run the mixed kernels too. Systems wider
/// than [`validate::MIXED_MAX_EXTENT`] are refused (host-slice calls; device-resident
/// particles are the caller's to keep in range); pairs whose f32 separation squared is
/// below the smallest normal f32 count as coincident.
///
/// ```no_run
/// use nbody_core::{Executor, Field, Params};
/// use nbody_cuda::CudaMixedExecutor;
///
/// let mut gpu = CudaMixedExecutor::new()?; // Error::NoDevice without a GPU
/// let (bodies, _) = nbody_integrators::ics::plummer::<f64>(65_536, 1);
/// let mut field = vec![Field::zero(); bodies.len()];
/// gpu.accelerations(&bodies, &bodies, &Params::softened(0.01).with_overlap_identical(), &mut field)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct CudaMixedExecutor {
    gpu: CudaExecutor,
}

impl CudaMixedExecutor {
    /// Opens GPU 0 ([`Error::NoDevice`] without a driver or a GPU).
    pub fn new() -> Result<Self, Error> {
        Self::on_device(0)
    }

    /// Opens GPU `ordinal`.
    pub fn on_device(ordinal: u32) -> Result<Self, Error> {
        CudaExecutor::on_device(ordinal).map(Self::from_executor)
    }

    /// Turns an opened CUDA executor into the mixed-precision one (same device, context
    /// and buffers; its f64 calls run the mixed kernels from now on).
    ///
    /// ```no_run
    /// use nbody_cuda::{CudaExecutor, CudaMixedExecutor};
    /// let mixed = CudaMixedExecutor::from_executor(CudaExecutor::on_device(0)?);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn from_executor(mut gpu: CudaExecutor) -> Self {
        gpu.f64_family = Family::Mixed;
        Self { gpu }
    }

    /// The CUDA executor underneath, running the mixed kernels for f64: for its
    /// device-resident API.
    ///
    /// ```no_run
    /// use nbody_core::resident::Resident;
    /// use nbody_core::Params;
    /// let mut mixed = nbody_cuda::CudaMixedExecutor::new()?;
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(4096, 1);
    /// let gpu = mixed.executor();
    /// let mut state = gpu.upload_state(&p, &v)?; // f64 on the device
    /// gpu.leapfrog_step(&mut state, &Params::softened(0.01), 1.0 / 256.0)?; // mixed kernels
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn executor(&mut self) -> &mut CudaExecutor {
        &mut self.gpu
    }

    /// Unwraps into the CUDA executor underneath (still mixed for f64), for owners of an
    /// executor such as `nbody_integrators::ResidentHermite`'s callers.
    ///
    /// ```no_run
    /// use nbody_cuda::CudaMixedExecutor;
    /// use nbody_integrators::{ResidentHermite, Steps};
    /// let mut gpu = CudaMixedExecutor::new()?.into_executor();
    /// let (p, v) = nbody_integrators::ics::plummer::<f64>(16_384, 1);
    /// let mut h = ResidentHermite::new(&mut gpu, &p, &v, 0.0, 0.02, 1.0 / 256.0, Steps::Shared)?;
    /// h.step(&mut gpu, 0.125)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn into_executor(self) -> CudaExecutor {
        self.gpu
    }
}

/// Every door and hook is the CUDA executor's underneath (through [`Forward`], so none
/// can be missed), which runs the mixed kernels for f64 and refuses systems wider than
/// [`validate::MIXED_MAX_EXTENT`]. The wrapper is an executor for f64 only.
impl Forward for CudaMixedExecutor {
    // As a trait object of f64 only: the wrapper has no f32 calls.
    type Inner = dyn Executor<f64>;

    fn inner(&self) -> &Self::Inner {
        &self.gpu
    }

    fn inner_mut(&mut self) -> &mut Self::Inner {
        &mut self.gpu
    }

    fn own_name(&self) -> Option<&'static str> {
        Some("cuda-mixed")
    }
}

impl nbody_core::projection::Project<f64> for CudaMixedExecutor {
    fn project(&mut self, particles: &[Particle<f64>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.gpu.project(particles, projection, grid)
    }
}
