//! A leapfrog whose particles never leave the GPU: kick and drift are kernels, and only
//! diagnostics or snapshots are copied back.

use crate::device::cuda;
use crate::kernels::{count, Kernel};
use crate::memory::{alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal};
use cust::launch;
use cust::memory::DeviceBuffer;
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
    /// Uploads a system (validated) to stay on the device.
    pub fn upload_state<T: DeviceReal>(
        &mut self,
        pos: &[Particle<T>],
        vel: &[Velocity<T>],
    ) -> Result<DeviceState<T>, Error> {
        validate::velocities(vel, pos.len(), Array::Velocities)?;
        let p = self.upload(pos)?;
        let bytes = p.padded_len() * size_of::<Velocity<T>>();
        let mut v = alloc(bytes)?;
        upload_padded(&mut v, bytemuck::cast_slice(vel), bytes)?;
        let field = self.zeroed_fields(pos.len())?;
        Ok(DeviceState { pos: p, vel: v, field, fresh: false, time: 0.0 })
    }

    /// Copies positions and velocities back (a snapshot).
    pub fn download_state<T: DeviceReal>(
        &mut self,
        state: &DeviceState<T>,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        validate::length("positions", state.len(), pos.len())?;
        validate::length("velocities", state.len(), vel.len())?;
        crate::device::make_current(&self.context)?;
        self.stream.synchronize().map_err(cuda("waiting for the kernels"))?;
        download(&state.pos.buf, bytemuck::cast_slice_mut(pos))?;
        download(&state.vel, bytemuck::cast_slice_mut(vel))
    }

    /// The field (accelerations and potentials) at the current positions, copied back.
    pub fn download_field<T: DeviceReal>(
        &mut self,
        state: &mut DeviceState<T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        if !state.fresh {
            self.force(state, params)?;
        }
        self.download(&state.field, out)
    }

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

    /// One kick-drift-kick leapfrog step of `dt` on the device; `params` gives G, eps and
    /// whether the potential is computed (targets = sources is implied).
    pub fn leapfrog_step<T: DeviceReal>(
        &mut self,
        s: &mut DeviceState<T>,
        params: &Params<T>,
        dt: f64,
    ) -> Result<(), Error> {
        crate::device::make_current(&self.context)?;
        if !s.fresh {
            self.force(s, params)?;
        }
        let n = s.len();
        let half = T::from_f64(0.5 * dt);
        self.kick_or_drift(Kernel::Kick { tag: T::TAG }, &s.vel, &s.field.buf, n, half)?;
        self.kick_or_drift(Kernel::Drift { tag: T::TAG }, &s.pos.buf, &s.vel, n, T::from_f64(dt))?;
        self.force(s, params)?;
        self.kick_or_drift(Kernel::Kick { tag: T::TAG }, &s.vel, &s.field.buf, n, half)?;
        s.time += dt;
        Ok(())
    }
}
