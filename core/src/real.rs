//! One trait for the two precisions, so every kernel is written once.

use core::fmt::{Debug, Display};
use num_traits::Float;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A zero-sized marker that gives a four-lane record 16-byte alignment (f32 lanes).
#[repr(align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Align16;

/// A zero-sized marker that gives a four-lane record 32-byte alignment (f64 lanes).
#[repr(align(32))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Align32;

/// The floating-point type a kernel computes in: `f32` or `f64` (sealed).
///
/// Math goes through `num_traits::Float`, which uses `std` when the `std` feature is on
/// and `libm` otherwise, so the same code builds for bare-metal targets.
///
/// ```
/// use nbody_core::Real;
/// fn half<T: Real>(x: T) -> T { x * T::from_f64(0.5) }
/// assert_eq!(half(3.0f32), 1.5);
/// assert!((4.0f64.rsqrt_newton(4) - 0.5).abs() < 1e-15);
/// ```
pub trait Real: Float + bytemuck::Pod + Default + Debug + Display + Send + Sync + sealed::Sealed + 'static {
    /// Zero-sized marker carrying the alignment of a four-lane record of `Self`
    /// (16 bytes for f32, 32 for f64): a float4 / double4 a GPU loads in one access.
    type Align4: Copy + Debug + Default + PartialEq + Send + Sync + 'static;

    /// `"f32"` or `"f64"`, for reports.
    const NAME: &'static str;

    /// Converts from f64 (rounding to nearest for f32).
    fn from_f64(x: f64) -> Self;

    /// Widens to f64 (exact).
    fn to_f64(self) -> f64;

    /// The bit-trick estimate of `1/sqrt(self)` (about 3.4% relative error), no Newton
    /// step. See [`crate::rsqrt`] for the domain and the error after refinement.
    fn rsqrt_estimate(self) -> Self;

    /// `1/sqrt(self)` from [`Real::rsqrt_estimate`] refined by `steps` Newton steps.
    fn rsqrt_newton(self, steps: u32) -> Self {
        crate::rsqrt::refine(self, self.rsqrt_estimate(), steps)
    }
}

impl Real for f32 {
    type Align4 = Align16;
    const NAME: &'static str = "f32";

    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as f32
    }

    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }

    #[inline(always)]
    fn rsqrt_estimate(self) -> Self {
        crate::rsqrt::estimate_f32(self)
    }
}

impl Real for f64 {
    type Align4 = Align32;
    const NAME: &'static str = "f64";

    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }

    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }

    #[inline(always)]
    fn rsqrt_estimate(self) -> Self {
        crate::rsqrt::estimate_f64(self)
    }
}
