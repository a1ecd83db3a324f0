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
        nbody_core::stepping::kick_drift_kick(&mut OnDevice { exec: self, s, params }, dt)?;
        s.time += dt;
        Ok(())
    }
}

/// A resident system as [`nbody_core::stepping`] steps it: kick and drift kernels, the
/// tiled kernel for the field.
struct OnDevice<'a, T: DeviceReal> {
    exec: &'a mut CudaExecutor,
    s: &'a mut DeviceState<T>,
    params: &'a Params<T>,
}

impl<T: DeviceReal> nbody_core::stepping::KickDrift<T> for OnDevice<'_, T> {
    fn field_is_current(&self) -> bool {
        self.s.fresh
    }

    fn compute_field(&mut self) -> Result<(), Error> {
        self.exec.force(self.s, self.params)
    }

    fn kick(&mut self, h: T) -> Result<(), Error> {
        let s = &*self.s;
        self.exec.kick_or_drift(Kernel::Kick { tag: T::TAG }, &s.vel, &s.field.buf, s.len(), h)
    }

    fn drift(&mut self, h: T) -> Result<(), Error> {
        let s = &mut *self.s;
        self.exec.kick_or_drift(Kernel::Drift { tag: T::TAG }, &s.pos.buf, &s.vel, s.len(), h)?;
        s.fresh = false;
        Ok(())
    }
}
