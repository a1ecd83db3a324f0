//! The host-slice entry points ([`Executor`]): validate, stage into scratch, launch,
//! download, and on failure leave the outputs untouched and the executor usable.

use crate::memory::{ptr, upload_padded};
use crate::{batch, pipeline, CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, EXTRA_C, OUT, SELF_COUNTS, SOURCES, TARGETS};
use nbody_core::projection::Projection;
use nbody_core::Executor;
use nbody_core::{validate, Array, Bodies, Error, Field, InteractionList, Jerk, Params, Particle};

impl<T: DeviceReal> Executor<T> for CudaExecutor {
    fn name(&self) -> &'static str {
        match self.family::<T>() {
            crate::Family::Mixed => "cuda-mixed",
            crate::Family::F32 | crate::Family::F64 => "cuda",
        }
    }

    unsafe fn accelerations_unchecked(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.check_mixed_extent::<T>(targets, sources)?;
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

    unsafe fn accelerations_jerk_unchecked(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        self.check_mixed_extent::<T>(targets.pos, sources.pos)?;
        self.run_jerk(targets, sources, params, out, jerk, None)
    }

    /// Finds neighbours in the jerk kernel's pass (see the jerk kernel in
    /// kernels/gravity.cu): nearest per thread, combined across the threads of a target
    /// and the chunks of a split launch; list entries appended through atomic counters.
    unsafe fn accelerations_jerk_neighbours_unchecked(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        neighbours: &mut nbody_core::neighbours::Neighbours<'_, T>,
    ) -> Result<(), Error> {
        self.check_mixed_extent::<T>(targets.pos, sources.pos)?;
        self.run_jerk(targets, sources, params, out, jerk, Some(neighbours))
    }

    unsafe fn accelerations_batch_unchecked(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        self.check_mixed_extent::<T>(particles, &[])?;
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
}

impl<T: DeviceReal> nbody_core::projection::Project<T> for CudaExecutor {
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
