//! Density maps: particle mass deposited on a square pixel grid in one coordinate
//! plane. Executors compute them (in parallel, or where the particles live) so that a
//! picture of a million-body system costs no more than a sweep over the particles.

use crate::{Error, Particle, Real};

/// The coordinate plane a [`Projection`] looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plane {
    /// Horizontal x, vertical y.
    XY,
    /// Horizontal x, vertical z.
    XZ,
    /// Horizontal y, vertical z.
    YZ,
}

impl Plane {
    /// The coordinate indices (horizontal, vertical).
    pub const fn axes(self) -> (usize, usize) {
        match self {
            Plane::XY => (0, 1),
            Plane::XZ => (0, 2),
            Plane::YZ => (1, 2),
        }
    }

    /// `"xy"`, `"xz"` or `"yz"`.
    pub const fn name(self) -> &'static str {
        match self {
            Plane::XY => "xy",
            Plane::XZ => "xz",
            Plane::YZ => "yz",
        }
    }
}

/// A `pixels` x `pixels` window of half-width `half_width` centred on `centre` (in the
/// plane's two coordinates). Row 0 is the top (largest vertical coordinate), so the
/// grid is an image as it is stored.
///
/// ```
/// use nbody_core::projection::{Plane, Projection};
/// use nbody_core::Particle;
/// let proj = Projection { plane: Plane::XY, centre: [0.0, 0.0], half_width: 1.0, pixels: 4 };
/// let mut grid = vec![0.0; 16];
/// proj.deposit(&[Particle::new(0.9f64, 0.9, 5.0, 2.0), Particle::new(7.0, 0.0, 0.0, 1.0)], &mut grid)?;
/// assert_eq!(grid[3], 2.0); // top-right pixel; the second particle is outside
/// assert_eq!(grid.iter().sum::<f64>(), 2.0);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projection {
    /// Which plane.
    pub plane: Plane,
    /// Window centre (horizontal, vertical).
    pub centre: [f64; 2],
    /// Half the window's side; must be finite and positive.
    pub half_width: f64,
    /// Pixels per side; must be positive.
    pub pixels: usize,
}

impl Projection {
    /// Checks the window and that `grid_len == pixels²`.
    pub fn validate(&self, grid_len: usize) -> Result<(), Error> {
        if !(self.half_width.is_finite() && self.half_width > 0.0) {
            return Err(Error::InvalidParameter { name: "half_width", requirement: "finite and positive" });
        }
        if !(self.centre[0].is_finite() && self.centre[1].is_finite()) {
            return Err(Error::InvalidParameter { name: "centre", requirement: "finite" });
        }
        if self.pixels == 0 || self.pixels.checked_mul(self.pixels) != Some(grid_len) {
            return Err(Error::InvalidParameter { name: "pixels", requirement: "positive, with pixels² grid cells" });
        }
        Ok(())
    }

    /// The grid cell of `p`, or `None` outside the window (or for a non-finite position).
    #[inline]
    pub fn cell<T: Real>(&self, p: &Particle<T>) -> Option<usize> {
        let (h, v) = self.plane.axes();
        let x = p.position();
        let scale = self.pixels as f64 / (2.0 * self.half_width);
        let col = (x[h].to_f64() - (self.centre[0] - self.half_width)) * scale;
        let row = ((self.centre[1] + self.half_width) - x[v].to_f64()) * scale;
        // NaN fails both comparisons, so non-finite positions fall out here.
        let inside = |c: f64| c >= 0.0 && c < self.pixels as f64;
        (inside(col) && inside(row)).then(|| row as usize * self.pixels + col as usize)
    }

    /// Adds each particle's mass into its cell of `grid` (row-major, `pixels²` long).
    /// The plain loop every executor's version must agree with. Particles are checked
    /// as for a force call (finite, masses not negative); on error `grid` is untouched.
    pub fn deposit<T: Real>(&self, particles: &[Particle<T>], grid: &mut [f64]) -> Result<(), Error> {
        self.validate(grid.len())?;
        crate::validate::particles(particles, crate::Array::Particles)?;
        self.deposit_validated(particles, grid);
        Ok(())
    }

    /// [`Projection::deposit`] for callers that have already checked the window (with
    /// `grid.len()`) and the particles, such as an executor splitting them over threads.
    /// Unchecked input gives wrong cells or a panic, never undefined behaviour.
    ///
    /// ```
    /// use nbody_core::projection::{Plane, Projection};
    /// use nbody_core::Particle;
    /// let proj = Projection { plane: Plane::XZ, centre: [0.0, 0.0], half_width: 1.0, pixels: 2 };
    /// let ps = [Particle::new(-0.5f32, 9.0, -0.5, 3.0)];
    /// let mut grid = [0.0; 4];
    /// proj.validate(grid.len())?;
    /// nbody_core::validate::particles(&ps, nbody_core::Array::Particles)?;
    /// proj.deposit_validated(&ps, &mut grid);
    /// assert_eq!(grid, [0.0, 0.0, 3.0, 0.0]); // bottom-left cell of the x-z plane
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn deposit_validated<T: Real>(&self, particles: &[Particle<T>], grid: &mut [f64]) {
        for p in particles {
            if let Some(c) = self.cell(p) {
                grid[c] += p.m.to_f64();
            }
        }
    }
}

/// Density maps drawn by an executor: in parallel, or where the particles live. Apart
/// from [`crate::Executor`], whose entry points are all about forces; a driver that
/// wants both holds a [`Projecting`] executor.
///
/// ```
/// use nbody_core::projection::{Plane, Project, Projection};
/// use nbody_core::{Particle, Reference};
/// let p = Projection { plane: Plane::XY, centre: [0.0, 0.0], half_width: 1.0, pixels: 2 };
/// let mut grid = [0.0; 4];
/// Project::<f64>::project(&mut Reference, &[Particle::new(0.5, 0.5, 0.0, 1.0)], &p, &mut grid)?;
/// assert_eq!(grid.iter().sum::<f64>(), 1.0);
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub trait Project<T: Real> {
    /// Adds the mass of `particles` into the density map `grid` of `projection` (see
    /// [`Projection::deposit`], the default).
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        projection.deposit(particles, grid)
    }
}

impl<T: Real> Project<T> for crate::Reference {}

impl<T: Real, E: Project<T>> Project<T> for crate::forward::Counted<E> {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.inner.project(particles, projection, grid)
    }
}

impl<T: Real, E: Project<T> + ?Sized> Project<T> for &mut E {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        (**self).project(particles, projection, grid)
    }
}

#[cfg(feature = "alloc")]
impl<T: Real, E: Project<T> + ?Sized> Project<T> for alloc::boxed::Box<E> {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        (**self).project(particles, projection, grid)
    }
}

/// An executor that also draws density maps, as one trait object
/// (`Box<dyn Projecting<T>>`, which upcasts to `dyn Executor<T>`): what a driver that
/// chooses its executor at run time holds. Every type that is both is one.
pub trait Projecting<T: Real>: crate::Executor<T> + Project<T> {}

impl<T: Real, E: crate::Executor<T> + Project<T> + ?Sized> Projecting<T> for E {}
