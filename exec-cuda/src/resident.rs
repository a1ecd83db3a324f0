//! Systems that never leave the GPU ([`Resident`] for [`CudaExecutor`]): kick and drift
//! are kernels, and only diagnostics or snapshots are copied back.

use crate::device::cuda;
use crate::kernels::{count, Kernel};
use crate::memory::{alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal};
use cust::launch;
use cust::memory::DeviceBuffer;
use nbody_core::resident::{Owner, Resident};
use nbody_core::{validate, Array, Error, Field, Params, Particle, Velocity};

/// Positions, velocities and the last field of a system, all on the device.
#[derive(Debug)]
pub struct DeviceState<T: DeviceReal> {
    pos: DeviceParticles<T>,
    vel: DeviceBuffer<u8>,
    field: DeviceFields<T>,
    fresh: bool,
    /// Simulated time.
    pub time: f64,
    owner: Owner,
}

impl<T: DeviceReal> DeviceState<T> {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The positions and masses, on the device (for
    /// [`CudaExecutor::project_resident`] and other resident calls).
    pub fn positions(&self) -> &DeviceParticles<T> {
        &self.pos
    }
}

impl CudaExecutor {
    /// Recomputes the field of `s` at its positions.
    fn force<T: DeviceReal>(&mut self, s: &mut DeviceState<T>, params: &Params<T>) -> Result<(), Error> {
        self.clear(&mut s.field)?;
        let p = params.with_overlap(nbody_core::Overlap::Identical);
        self.accelerations_resident(&s.pos, &s.pos, &p, &mut s.field)?;
        s.fresh = true;
        Ok(())
    }

    pub(crate) fn kick_or_drift<T: DeviceReal>(
        &self,
        kernel: Kernel,
        a: &cust::memory::DeviceSlice<u8>,
        b: &cust::memory::DeviceSlice<u8>,
        n: usize,
        h: T,
    ) -> Result<(), Error> {
        let f = self.function(kernel)?;
        let stream = &self.stream;
        let (pa, pb) = (ptr(a), ptr(b));
        // SAFETY: both buffers hold at least n four-lane records of T.
        unsafe { launch!(f<<<n.div_ceil(256) as u32, 256, 0, stream>>>(pa, pb, count(n)?, h)) }
            .map_err(cuda("launching a kick or drift"))
    }

    /// Makes this executor's context current and checks that it made `s`.
    fn own<T: DeviceReal>(&self, s: &DeviceState<T>) -> Result<(), Error> {
        self.owner.check(s.owner)?;
        crate::device::make_current(&self.context)
    }
}

/// A system that never leaves the GPU: kick and drift are kernels, the field is the
/// tiled kernel's, and only diagnostics or snapshots are copied back. The leapfrog step
/// is [`Resident::leapfrog_step`]'s.
///
/// ```no_run
/// use nbody_core::resident::Resident;
/// use nbody_core::{Params, Particle, Velocity};
/// let mut gpu = nbody_cuda::CudaExecutor::new()?;
/// let p = vec![Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let v = vec![Velocity::new(0.0f32, 0.0, 0.0); 2];
/// let mut state = gpu.upload_state(&p, &v)?;
/// gpu.leapfrog_step(&mut state, &Params::softened(0.01), 1.0 / 256.0)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
impl<T: DeviceReal> Resident<T> for CudaExecutor {
    type State = DeviceState<T>;

    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<DeviceState<T>, Error> {
        validate::velocities(vel, pos.len(), Array::Velocities)?;
        let p = self.upload(pos)?;
        let bytes = p.padded_len() * size_of::<Velocity<T>>();
        let mut v = alloc(bytes)?;
        upload_padded(&mut v, bytemuck::cast_slice(vel), bytes)?;
        let field = self.zeroed_fields(pos.len())?;
        Ok(DeviceState { pos: p, vel: v, field, fresh: false, time: 0.0, owner: self.owner })
    }

    fn download_state(
        &mut self,
        state: &DeviceState<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.own(state)?;
        validate::length("positions", state.len(), pos.len())?;
        validate::length("velocities", state.len(), vel.len())?;
        self.stream.synchronize().map_err(cuda("waiting for the kernels"))?;
        download(&state.pos.buf, bytemuck::cast_slice_mut(pos))?;
        download(&state.vel, bytemuck::cast_slice_mut(vel))
    }

    fn download_field(
        &mut self,
        state: &mut DeviceState<T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.own(state)?;
        if !state.fresh {
            self.force(state, params)?;
        }
        self.download(&state.field, out)
    }

    fn field_is_current(s: &DeviceState<T>) -> bool {
        s.fresh
    }

    fn compute_field(&mut self, s: &mut DeviceState<T>, params: &Params<T>) -> Result<(), Error> {
        self.own(s)?;
        self.force(s, params)
    }

    fn kick(&mut self, s: &mut DeviceState<T>, h: T) -> Result<(), Error> {
        self.own(s)?;
        self.kick_or_drift(Kernel::Kick { tag: T::TAG }, &s.vel, &s.field.buf, s.len(), h)
    }

    fn drift(&mut self, s: &mut DeviceState<T>, h: T) -> Result<(), Error> {
        self.own(s)?;
        self.kick_or_drift(Kernel::Drift { tag: T::TAG }, &s.pos.buf, &s.vel, s.len(), h)?;
        s.fresh = false;
        Ok(())
    }

    fn time(s: &DeviceState<T>) -> f64 {
        s.time
    }

    fn set_time(s: &mut DeviceState<T>, t: f64) {
        s.time = t;
    }
}
