//! Particle layouts: AoS records padded to four lanes, and a view of SoA arrays.
//!
//! Every AoS record is four `T` lanes, aligned to its own size (16 bytes for f32, 32 for
//! f64) and `bytemuck::Pod`, so a `&[f32]` of length `4n`, a memory-mapped file or a GPU
//! buffer can be viewed as records without a copy:
//!
//! ```
//! use nbody_core::Particle;
//! #[repr(C, align(16))]
//! struct Raw([f32; 8]);
//! let raw = Raw([0.0, 1.0, 2.0, 0.5, 3.0, 4.0, 5.0, 0.25]);
//! let bodies: &[Particle<f32>] = bytemuck::cast_slice(&raw.0);
//! assert_eq!(bodies[1].y, 4.0);
//! assert_eq!(bodies[0].m, 0.5);
//! ```

use crate::{Error, Real};
use core::fmt;

/// Defines a four-lane record `[a, b, c, d]` of `T`, aligned to `4 * size_of::<T>()`.
macro_rules! four_lane_record {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident),+ ; $($(#[$pdoc:meta])* private $pad:ident)? }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Default, PartialEq)]
        pub struct $name<T: Real> {
            $($(#[$fdoc])* pub $field: T,)+
            $($(#[$pdoc])* $pad: T,)?
            _align: [T::Align4; 0],
        }

        // SAFETY: four `T` lanes of a Pod float and a zero-length array of a zero-sized
        // alignment marker whose alignment equals the record size: no padding, every bit
        // pattern valid. The assertions below check the size and alignment for both types.
        unsafe impl<T: Real> bytemuck::Zeroable for $name<T> {}
        // SAFETY: as above.
        unsafe impl<T: Real> bytemuck::Pod for $name<T> {}

        const _: () = {
            assert!(core::mem::size_of::<$name<f32>>() == 16);
            assert!(core::mem::align_of::<$name<f32>>() == 16);
            assert!(core::mem::size_of::<$name<f64>>() == 32);
            assert!(core::mem::align_of::<$name<f64>>() == 32);
        };

        impl<T: Real> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))$(.field(stringify!($field), &self.$field))+.finish()
            }
        }

        impl<T: Real> $name<T> {
            /// All lanes zero.
            pub fn zero() -> Self {
                Self::default()
            }
        }
    };
}

four_lane_record! {
    /// A particle `[x, y, z, m]`: position and mass.
    ///
    /// ```
    /// use nbody_core::Particle;
    /// let p = Particle::new(1.0f64, 2.0, 3.0, 0.5);
    /// assert_eq!(p.position(), [1.0, 2.0, 3.0]);
    /// assert_eq!(core::mem::size_of_val(&p), 32);
    /// ```
    Particle {
        /// x coordinate.
        x,
        /// y coordinate.
        y,
        /// z coordinate.
        z,
        /// Mass (non-negative; zero for padding).
        m;
    }
}

four_lane_record! {
    /// The kernel's output for one target `[ax, ay, az, phi]`; calls add into it.
    ///
    /// ```
    /// use nbody_core::Field;
    /// let f = Field::<f32>::zero();
    /// assert_eq!(f.acceleration(), [0.0; 3]);
    /// ```
    Field {
        /// x component of the acceleration.
        ax,
        /// y component of the acceleration.
        ay,
        /// z component of the acceleration.
        az,
        /// Gravitational potential (negative); untouched by acceleration-only calls.
        phi;
    }
}

four_lane_record! {
    /// A velocity `[vx, vy, vz, _]`, padded like [`Particle`], for the jerk kernel.
    ///
    /// ```
    /// use nbody_core::Velocity;
    /// let v = Velocity::new(1.0f32, 0.0, -1.0);
    /// assert_eq!(v.vz, -1.0);
    /// ```
    Velocity {
        /// x component.
        vx,
        /// y component.
        vy,
        /// z component.
        vz;
        /// Padding lane (kept zero).
        private pad
    }
}

four_lane_record! {
    /// The jerk (time derivative of the acceleration) `[jx, jy, jz, _]` of one target.
    ///
    /// ```
    /// use nbody_core::Jerk;
    /// assert_eq!(Jerk::<f64>::zero().jx, 0.0);
    /// ```
    Jerk {
        /// x component.
        jx,
        /// y component.
        jy,
        /// z component.
        jz;
        /// Padding lane (kept zero).
        private pad
    }
}

impl<T: Real> Particle<T> {
    /// A particle at `(x, y, z)` with mass `m`.
    #[inline(always)]
    pub fn new(x: T, y: T, z: T, m: T) -> Self {
        Self { x, y, z, m, _align: [] }
    }

    /// `[x, y, z]`.
    pub fn position(&self) -> [T; 3] {
        [self.x, self.y, self.z]
    }

    /// Converts the lanes to another precision (rounding to nearest when narrowing).
    pub fn cast<U: Real>(&self) -> Particle<U> {
        let c = |v: T| U::from_f64(v.to_f64());
        Particle::new(c(self.x), c(self.y), c(self.z), c(self.m))
    }
}

impl<T: Real> Field<T> {
    /// A field value from its four lanes.
    #[inline(always)]
    pub fn new(ax: T, ay: T, az: T, phi: T) -> Self {
        Self { ax, ay, az, phi, _align: [] }
    }

    /// `[ax, ay, az]`.
    pub fn acceleration(&self) -> [T; 3] {
        [self.ax, self.ay, self.az]
    }
}

impl<T: Real> Velocity<T> {
    /// A velocity `(vx, vy, vz)`.
    #[inline(always)]
    pub fn new(vx: T, vy: T, vz: T) -> Self {
        Self { vx, vy, vz, pad: T::zero(), _align: [] }
    }

    /// `[vx, vy, vz]`.
    pub fn components(&self) -> [T; 3] {
        [self.vx, self.vy, self.vz]
    }

    /// Converts the lanes to another precision.
    pub fn cast<U: Real>(&self) -> Velocity<U> {
        let c = |v: T| U::from_f64(v.to_f64());
        Velocity::new(c(self.vx), c(self.vy), c(self.vz))
    }
}

impl<T: Real> Jerk<T> {
    /// A jerk `(jx, jy, jz)`.
    #[inline(always)]
    pub fn new(jx: T, jy: T, jz: T) -> Self {
        Self { jx, jy, jz, pad: T::zero(), _align: [] }
    }

    /// `[jx, jy, jz]`.
    pub fn components(&self) -> [T; 3] {
        [self.jx, self.jy, self.jz]
    }
}

/// The tidal tensor of one target, the gradient of its acceleration with respect to its
/// own position, `∂a/∂x = −G Σ_j m_j (g I + g′ d dᵀ)` (Newtonian: `G Σ_j m_j (3 d dᵀ / r⁵ −
/// I / r³)`), as its six distinct lanes `[xx, xy, xz, yy, yz, zz]`; calls add into it.
/// Six lanes of `T`, `bytemuck::Pod`, so a `(n, 6)` array is viewed without a copy.
///
/// ```
/// use nbody_core::Tidal;
/// let t = Tidal::new([1.0f64, 0.0, 0.0, -0.5, 0.0, -0.5]);
/// assert_eq!(t.apply([1.0, 2.0, 0.0]), [1.0, -1.0, 0.0]);
/// assert_eq!(t.xx + t.yy + t.zz, 0.0); // traceless outside the softening
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tidal<T: Real> {
    /// ∂a_x/∂x.
    pub xx: T,
    /// ∂a_x/∂y = ∂a_y/∂x.
    pub xy: T,
    /// ∂a_x/∂z = ∂a_z/∂x.
    pub xz: T,
    /// ∂a_y/∂y.
    pub yy: T,
    /// ∂a_y/∂z = ∂a_z/∂y.
    pub yz: T,
    /// ∂a_z/∂z.
    pub zz: T,
}

// SAFETY: six lanes of one Pod float, `repr(C)`: no padding, every bit pattern valid
// (the assertions check the size for both types).
unsafe impl<T: Real> bytemuck::Zeroable for Tidal<T> {}
// SAFETY: as above.
unsafe impl<T: Real> bytemuck::Pod for Tidal<T> {}

const _: () = {
    assert!(core::mem::size_of::<Tidal<f32>>() == 24);
    assert!(core::mem::size_of::<Tidal<f64>>() == 48);
};

impl<T: Real> Tidal<T> {
    /// The lanes' pairs of axes, in the record's order.
    pub const AXES: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];

    /// A tensor from its lanes `[xx, xy, xz, yy, yz, zz]`.
    pub fn new(l: [T; 6]) -> Self {
        Self { xx: l[0], xy: l[1], xz: l[2], yy: l[3], yz: l[4], zz: l[5] }
    }

    /// All lanes zero.
    pub fn zero() -> Self {
        Self::default()
    }

    /// `[xx, xy, xz, yy, yz, zz]`.
    pub fn lanes(&self) -> [T; 6] {
        [self.xx, self.xy, self.xz, self.yy, self.yz, self.zz]
    }

    /// The tensor times the vector `c`.
    pub fn apply(&self, c: [T; 3]) -> [T; 3] {
        [
            self.xx * c[0] + self.xy * c[1] + self.xz * c[2],
            self.xy * c[0] + self.yy * c[1] + self.yz * c[2],
            self.xz * c[0] + self.yz * c[1] + self.zz * c[2],
        ]
    }
}

/// Borrowed SoA particles: four slices of one length.
///
/// ```
/// use nbody_core::SoaRef;
/// let (x, y, z, m) = ([0.0f32, 1.0], [0.0; 2], [0.0; 2], [1.0; 2]);
/// let soa = SoaRef::new(&x, &y, &z, &m).unwrap();
/// assert_eq!(soa.len(), 2);
/// assert!(SoaRef::new(&x, &y, &z, &m[..1]).is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SoaRef<'a, T> {
    /// x coordinates.
    pub x: &'a [T],
    /// y coordinates.
    pub y: &'a [T],
    /// z coordinates.
    pub z: &'a [T],
    /// Masses.
    pub m: &'a [T],
}

fn check_lanes(lengths: [usize; 4]) -> Result<usize, Error> {
    let n = lengths[0];
    for (found, what) in lengths[1..].iter().zip(["y", "z", "m"]) {
        if *found != n {
            return Err(Error::LengthMismatch { what, expected: n, found: *found });
        }
    }
    Ok(n)
}

impl<'a, T: Real> SoaRef<'a, T> {
    /// Views four slices as particles; they must have one length.
    pub fn new(x: &'a [T], y: &'a [T], z: &'a [T], m: &'a [T]) -> Result<Self, Error> {
        check_lanes([x.len(), y.len(), z.len(), m.len()])?;
        Ok(Self { x, y, z, m })
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no particles.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Particle `i` as an AoS record.
    pub fn get(&self, i: usize) -> Particle<T> {
        Particle::new(self.x[i], self.y[i], self.z[i], self.m[i])
    }

    /// Writes these particles into `dst` as AoS records; lengths must match.
    ///
    /// ```
    /// use nbody_core::{Particle, SoaRef};
    /// let (x, y, z, m) = ([1.0f64], [2.0], [3.0], [4.0]);
    /// let mut aos = [Particle::zero()];
    /// SoaRef::new(&x, &y, &z, &m).unwrap().to_aos(&mut aos).unwrap();
    /// assert_eq!(aos[0], Particle::new(1.0, 2.0, 3.0, 4.0));
    /// ```
    pub fn to_aos(&self, dst: &mut [Particle<T>]) -> Result<(), Error> {
        if dst.len() != self.len() {
            return Err(Error::LengthMismatch { what: "AoS destination", expected: self.len(), found: dst.len() });
        }
        for (i, p) in dst.iter_mut().enumerate() {
            *p = self.get(i);
        }
        Ok(())
    }
}

/// Interleaves the low 21 bits of three integer coordinates into a 63-bit Morton code:
/// sorting by it orders points along a Z-curve, so runs of the order are compact in
/// space (used for target blocks and tree codes).
///
/// ```
/// use nbody_core::layout::morton;
/// assert_eq!(morton([1, 0, 0]), 1);
/// assert_eq!(morton([0, 1, 0]), 2);
/// assert_eq!(morton([1, 1, 1]), 7);
/// assert_eq!(morton([2, 0, 0]), 8);
/// ```
pub fn morton(c: [u64; 3]) -> u64 {
    let spread = |mut v: u64| {
        v &= 0x1f_ffff;
        v = (v | v << 32) & 0x1f_0000_0000_ffff;
        v = (v | v << 16) & 0x1f_0000_ff00_00ff;
        v = (v | v << 8) & 0x100f_00f0_0f00_f00f;
        v = (v | v << 4) & 0x10c3_0c30_c30c_30c3;
        (v | v << 2) & 0x1249_2492_4924_9249
    };
    spread(c[0]) | spread(c[1]) << 1 | spread(c[2]) << 2
}

/// Indices of `particles` along a Morton (Z-order) curve over their bounding box, 21
/// bits per axis (needs the `alloc` feature): consecutive indices are near in space, so
/// blocks of them are compact. Mixed-precision executors form their blocks of targets
/// this way; a tree code's leaves already are.
///
/// ```
/// use nbody_core::{layout::morton_order, Particle};
/// let ps = [Particle::new(1.0, 1.0, 1.0, 1.0), Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(0.9, 1.0, 1.0, 1.0)];
/// let mut order = Vec::new();
/// morton_order(&ps, &mut order);
/// assert_eq!(order, [1, 2, 0]);
/// ```
#[cfg(feature = "alloc")]
pub fn morton_order<T: Real>(particles: &[Particle<T>], order: &mut alloc::vec::Vec<u32>) {
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    let pos = |p: &Particle<T>| [p.x.to_f64(), p.y.to_f64(), p.z.to_f64()];
    for p in particles {
        for (k, x) in pos(p).into_iter().enumerate() {
            lo[k] = lo[k].min(x);
            hi[k] = hi[k].max(x);
        }
    }
    let cell = |p: &Particle<T>| {
        let x = pos(p);
        morton(core::array::from_fn(|k| {
            let span = (hi[k] - lo[k]).max(f64::MIN_POSITIVE);
            ((x[k] - lo[k]) / span * 2_097_151.0) as u64
        }))
    };
    let mut keyed: alloc::vec::Vec<(u64, u32)> =
        particles.iter().enumerate().map(|(i, p)| (cell(p), i as u32)).collect();
    keyed.sort_unstable();
    order.clear();
    order.extend(keyed.iter().map(|&(_, i)| i));
}

/// `items` in the order `order` names (`out[k] = items[order[k]]`), as [`morton_order`]
/// gives it; [`scatter`] puts them back. Needs the `alloc` feature.
///
/// ```
/// use nbody_core::layout::{gather, scatter};
/// let order = [2, 0, 1];
/// let sorted = gather(&['a', 'b', 'c'], &order);
/// assert_eq!(sorted, ['c', 'a', 'b']);
/// let mut back = ['-'; 3];
/// scatter(&sorted, &order, &mut back);
/// assert_eq!(back, ['a', 'b', 'c']);
/// ```
#[cfg(feature = "alloc")]
pub fn gather<R: Copy>(items: &[R], order: &[u32]) -> alloc::vec::Vec<R> {
    order.iter().map(|&i| items[i as usize]).collect()
}

/// Undoes [`gather`]: `out[order[k]] = sorted[k]`. `order` must be a permutation of
/// `0..out.len()` as long as `sorted` (panics on an index out of range).
#[cfg(feature = "alloc")]
pub fn scatter<R: Copy>(sorted: &[R], order: &[u32], out: &mut [R]) {
    for (&x, &i) in sorted.iter().zip(order) {
        out[i as usize] = x;
    }
}
