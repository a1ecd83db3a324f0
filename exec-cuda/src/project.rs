//! Density maps on the device: particles deposited with atomic adds into a grid of
//! doubles, only the grid coming back.

use crate::args::ProjectArgs;
use crate::kernels::{Kernel, count};
use crate::memory::{ptr, upload_padded};
use crate::{CudaExecutor, DeviceParticles, DeviceReal, EXTRA_A};
use nbody_core::Error;
use nbody_core::projection::Projection;

impl CudaExecutor {
    /// Density map of device-resident particles (for example a [`crate::DeviceState`]'s
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
    pub(crate) fn launch_project<T: DeviceReal>(
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
        let (h, v) = projection.plane.axes();
        let half = projection.half_width;
        let args = ProjectArgs {
            particles,
            grid: gp,
            left: projection.centre[0] - half,
            top: projection.centre[1] + half,
            scale: projection.pixels as f64 / (2.0 * half),
            n: count(n)?,
            pixels: count(projection.pixels)?,
            h_axis: count(h)?,
            v_axis: count(v)?,
        };
        let kernel = Kernel::Project { tag: T::FAMILY };
        // SAFETY: n particles of T lanes; the grid holds pixels² doubles.
        unsafe { self.launch(kernel, n.div_ceil(256) as u32, 256, args, "launching the density map")? };
        self.sync_download(EXTRA_A, grid)
    }
}
