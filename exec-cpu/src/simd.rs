//! Vector backends behind one trait, so each kernel is written once.
//!
//! Every method is `#[inline(always)]`: the kernels are inlined into entry points
//! compiled with `#[target_feature(enable = ...)]`, and only there do the intrinsics
//! become single instructions. Calling a backend outside such an entry point is
//! undefined behaviour on a CPU without the feature, hence `unsafe`.
//!
//! That precondition is the only one, and it is the caller's: every function here is an
//! `unsafe fn` whose body is a few intrinsics, so the workspace's
//! `unsafe_op_in_unsafe_fn` is allowed in this module alone (an `unsafe` block with the
//! same comment in each of some sixty one-line bodies would say nothing more).
#![allow(unsafe_op_in_unsafe_fn)]

use nbody_core::Real;

/// A vector of `LANES` values of `T`, one lane per target.
pub(crate) trait Simd: Copy {
    type T: Real;
    type V: Copy;
    const LANES: usize;

    unsafe fn splat(x: Self::T) -> Self::V;
    unsafe fn load(p: *const Self::T) -> Self::V;
    unsafe fn store(p: *mut Self::T, v: Self::V);
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused where the hardware has it.
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `c - a * b`, fused where the hardware has it.
    unsafe fn fnma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `1/sqrt(x)` to about one rounding of the type: the hardware estimate refined by
    /// Newton steps (never a raw estimate). `MASK`: lanes with `x` below the smallest
    /// normal number give 0 (see `nbody_core::kernel::inverse_distance`).
    unsafe fn rsqrt<const MASK: bool>(x: Self::V) -> Self::V;
    /// Whether any lane of `a` is below the same lane of `b` (the spline kernel's test
    /// for pairs inside its support: one compare and a mask test per vector).
    unsafe fn any_lt(a: Self::V, b: Self::V) -> bool;
    /// Lane-wise minimum (so that one [`Simd::any_lt`] tests several vectors).
    unsafe fn min(a: Self::V, b: Self::V) -> Self::V;
    /// Lane `l` from `base[idx[l]]` (`idx` holds `LANES` offsets, in elements): the
    /// neighbour-list kernels' loads from records all over memory. Backends with a
    /// gather instruction override it.
    #[inline(always)]
    unsafe fn gather(base: *const Self::T, idx: *const i32) -> Self::V {
        let mut lanes = [Self::T::from_f64(0.0); 16];
        for (l, v) in lanes.iter_mut().enumerate().take(Self::LANES) {
            *v = *base.offset(*idx.add(l) as isize);
        }
        Self::load(lanes.as_ptr())
    }
    /// Four consecutive values from `base[idx[l]]` for every lane `l`, transposed: the
    /// `c`-th vector holds value `c` of every lane (a record's row of four, gathered).
    /// Backends that can load the rows whole and transpose them in registers override it.
    #[inline(always)]
    unsafe fn gather_rows(base: *const Self::T, idx: *const i32) -> [Self::V; 4] {
        [
            Self::gather(base, idx),
            Self::gather(base.add(1), idx),
            Self::gather(base.add(2), idx),
            Self::gather(base.add(3), idx),
        ]
    }

    /// [`Simd::weights`]' acceleration term times this is `m / r³`.
    const ACC_SCALE: f64 = 1.0;
    /// [`Simd::weights`]' potential term times this is `m / r`.
    const PHI_SCALE: f64 = 1.0;

    /// For `r2 = r² (+ eps²)` and the mass `ms`, returns `(m / r / PHI_SCALE,
    /// m / r³ / ACC_SCALE)`: the potential and acceleration weights of a pair, up to
    /// constant factors that the kernel applies once to its sums (exact powers of two, so
    /// nothing is lost even for subnormal masses). Backends override it to drop the
    /// constants of their last Newton step.
    #[inline(always)]
    unsafe fn weights<const MASK: bool>(r2: Self::V, ms: Self::V) -> (Self::V, Self::V) {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { weights_of::<Self>(Self::rsqrt::<MASK>(r2), ms) }
    }

    /// [`Simd::weights`] with `1/r` to at least 2^-33 rather than to the type's last bit
    /// (same scales): for f64 pairs whose error is weighed against f32's (the mixed
    /// executor's near sources). Backends whose last refinement step only serves the last
    /// bits skip it here; the others give [`Simd::weights`].
    #[inline(always)]
    unsafe fn weights_short<const MASK: bool>(r2: Self::V, ms: Self::V) -> (Self::V, Self::V) {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { Self::weights::<MASK>(r2, ms) }
    }
}

/// `(m / r, m / r³)` from `rinv = 1/r`: the unscaled weights.
#[inline(always)]
unsafe fn weights_of<S: Simd>(rinv: S::V, ms: S::V) -> (S::V, S::V) {
    // SAFETY: as this unsafe function's own contract (its caller's promise).
    unsafe {
        let m_rinv = S::mul(ms, rinv);
        // (m/r · 1/r) · 1/r: stays 0 for a massless source where 1/r² would overflow.
        (m_rinv, S::mul(S::mul(m_rinv, rinv), rinv))
    }
}

/// `S` whose weights are [`Simd::weights_short`]: the mixed executor's f64 near pairs.
#[derive(Clone, Copy)]
pub(crate) struct Short<S>(core::marker::PhantomData<S>);

impl<S: Simd> Simd for Short<S> {
    type T = S::T;
    type V = S::V;
    const LANES: usize = S::LANES;
    const ACC_SCALE: f64 = S::ACC_SCALE;
    const PHI_SCALE: f64 = S::PHI_SCALE;

    #[inline(always)]
    unsafe fn splat(x: S::T) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::splat(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const S::T) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::load(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut S::T, v: S::V) {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::store(p, v) }
    }
    #[inline(always)]
    unsafe fn sub(a: S::V, b: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::sub(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: S::V, b: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::mul(a, b) }
    }
    #[inline(always)]
    unsafe fn fma(a: S::V, b: S::V, c: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::fma(a, b, c) }
    }
    #[inline(always)]
    unsafe fn fnma(a: S::V, b: S::V, c: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::fnma(a, b, c) }
    }
    #[inline(always)]
    unsafe fn rsqrt<const MASK: bool>(x: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::rsqrt::<MASK>(x) }
    }
    #[inline(always)]
    unsafe fn any_lt(a: S::V, b: S::V) -> bool {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::any_lt(a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: S::V, b: S::V) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::min(a, b) }
    }
    #[inline(always)]
    unsafe fn gather(base: *const S::T, idx: *const i32) -> S::V {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::gather(base, idx) }
    }
    #[inline(always)]
    unsafe fn gather_rows(base: *const S::T, idx: *const i32) -> [S::V; 4] {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::gather_rows(base, idx) }
    }
    #[inline(always)]
    unsafe fn weights<const MASK: bool>(r2: S::V, ms: S::V) -> (S::V, S::V) {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { S::weights_short::<MASK>(r2, ms) }
    }
}

/// The last Newton step folded into the weights: with `w = y (3 - x y²) = 2 y'` (the
/// refined `1/r` doubled), `m w = 2 m y'` and `m w³ = 8 m y'³` (so PHI_SCALE = 1/2,
/// ACC_SCALE = 1/8): 6 operations for both weights instead of 7.
#[inline(always)]
unsafe fn folded_weights<S: Simd>(x: S::V, y: S::V, m: S::V) -> (S::V, S::V) {
    // SAFETY: as this unsafe function's own contract (its caller's promise).
    unsafe {
        let t = S::mul(x, y);
        let w = S::mul(y, S::fnma(t, y, S::splat(S::T::from_f64(3.0))));
        let p = S::mul(m, w);
        (p, S::mul(S::mul(p, w), w))
    }
}

/// Newton step for 1/sqrt: `y (3 - x y²) / 2`, written so that it costs 4 operations.
#[inline(always)]
unsafe fn newton<S: Simd>(x: S::V, y: S::V) -> S::V {
    // SAFETY: as this unsafe function's own contract (its caller's promise).
    unsafe {
        let t = S::mul(x, y);
        let c = S::fnma(t, y, S::splat(S::T::from_f64(3.0)));
        S::mul(S::mul(y, S::splat(S::T::from_f64(0.5))), c)
    }
}

/// Third-order step for 1/sqrt: `y (1 + e/2 + 3e²/8)`, `e = 1 - x y²`: cubes the error.
#[inline(always)]
unsafe fn householder<S: Simd>(x: S::V, y: S::V) -> S::V {
    // SAFETY: as this unsafe function's own contract (its caller's promise).
    unsafe {
        let one = S::splat(S::T::from_f64(1.0));
        let e = S::fnma(S::mul(x, y), y, one);
        let p = S::fma(e, S::splat(S::T::from_f64(0.375)), S::splat(S::T::from_f64(0.5)));
        S::fma(S::mul(y, e), p, y)
    }
}

/// Plain Rust on arrays of 8 lanes: the compiler vectorizes it for whatever the build
/// targets; the fallback on CPUs without AVX2 and on other architectures.
#[derive(Clone, Copy)]
pub(crate) struct Portable<T>(core::marker::PhantomData<T>);

impl<T: Real> Simd for Portable<T> {
    type T = T;
    type V = [T; 8];
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn splat(x: T) -> [T; 8] {
        [x; 8]
    }
    #[inline(always)]
    unsafe fn load(p: *const T) -> [T; 8] {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { core::ptr::read_unaligned(p as *const [T; 8]) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut T, v: [T; 8]) {
        // SAFETY: as this unsafe function's own contract (its caller's promise).
        unsafe { core::ptr::write_unaligned(p as *mut [T; 8], v) }
    }
    #[inline(always)]
    unsafe fn sub(a: [T; 8], b: [T; 8]) -> [T; 8] {
        core::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    unsafe fn mul(a: [T; 8], b: [T; 8]) -> [T; 8] {
        core::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    unsafe fn fma(a: [T; 8], b: [T; 8], c: [T; 8]) -> [T; 8] {
        // Unfused: a libm fma call per lane would be far slower than the rounding it saves.
        core::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    unsafe fn fnma(a: [T; 8], b: [T; 8], c: [T; 8]) -> [T; 8] {
        core::array::from_fn(|i| c[i] - a[i] * b[i])
    }
    #[inline(always)]
    unsafe fn any_lt(a: [T; 8], b: [T; 8]) -> bool {
        a.iter().zip(&b).any(|(a, b)| a < b)
    }
    #[inline(always)]
    unsafe fn min(a: [T; 8], b: [T; 8]) -> [T; 8] {
        core::array::from_fn(|i| if a[i] < b[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    unsafe fn rsqrt<const MASK: bool>(x: [T; 8]) -> [T; 8] {
        core::array::from_fn(
            |i| if MASK && x[i] < T::min_positive_value() { T::zero() } else { T::one() / x[i].sqrt() },
        )
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Simd, folded_weights, householder, newton, weights_of};
    use core::arch::x86_64::*;

    /// AVX-512F, 16 f32 lanes: vrsqrt14ps (relative error below 2^-14) and one Newton
    /// step (error about 1.5 * 2^-28, below f32 rounding).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512F32;

    impl Simd for Avx512F32 {
        type T = f32;
        type V = __m512;
        const LANES: usize = 16;

        #[inline(always)]
        unsafe fn splat(x: f32) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_set1_ps(x) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn sub(a: __m512, b: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_sub_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: __m512, b: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_mul_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn fnma(a: __m512, b: __m512, c: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_fnmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: __m512, b: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_min_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn gather(base: *const f32, idx: *const i32) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_i32gather_ps::<4>(_mm512_loadu_si512(idx.cast()), base.cast()) }
        }
        #[inline(always)]
        unsafe fn any_lt(a: __m512, b: __m512) -> bool {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) != 0 }
        }
        #[inline(always)]
        unsafe fn rsqrt<const MASK: bool>(x: __m512) -> __m512 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let y = if MASK {
                    _mm512_maskz_rsqrt14_ps(_mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_set1_ps(f32::MIN_POSITIVE)), x)
                } else {
                    _mm512_rsqrt14_ps(x)
                };
                newton::<Self>(x, y)
            }
        }

        const ACC_SCALE: f64 = 0.125;
        const PHI_SCALE: f64 = 0.5;

        #[inline(always)]
        unsafe fn weights<const MASK: bool>(r2: __m512, m: __m512) -> (__m512, __m512) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let y = if MASK {
                    _mm512_maskz_rsqrt14_ps(_mm512_cmp_ps_mask::<_CMP_GE_OQ>(r2, _mm512_set1_ps(f32::MIN_POSITIVE)), r2)
                } else {
                    _mm512_rsqrt14_ps(r2)
                };
                folded_weights::<Self>(r2, y, m)
            }
        }
    }

    /// AVX-512F, 8 f64 lanes: vrsqrt14pd and two Newton steps (2^-14 -> 2^-27 -> 2^-53).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512F64;

    impl Simd for Avx512F64 {
        type T = f64;
        type V = __m512d;
        const LANES: usize = 8;

        #[inline(always)]
        unsafe fn splat(x: f64) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_set1_pd(x) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_loadu_pd(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m512d) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_storeu_pd(p, v) }
        }
        #[inline(always)]
        unsafe fn sub(a: __m512d, b: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_sub_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: __m512d, b: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_mul_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn fma(a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_fmadd_pd(a, b, c) }
        }
        #[inline(always)]
        unsafe fn fnma(a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_fnmadd_pd(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: __m512d, b: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_min_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn gather(base: *const f64, idx: *const i32) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_i32gather_pd::<8>(_mm256_loadu_si256(idx.cast()), base.cast()) }
        }
        #[inline(always)]
        unsafe fn any_lt(a: __m512d, b: __m512d) -> bool {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b) != 0 }
        }
        #[inline(always)]
        unsafe fn rsqrt<const MASK: bool>(x: __m512d) -> __m512d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let y = if MASK {
                    _mm512_maskz_rsqrt14_pd(_mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, _mm512_set1_pd(f64::MIN_POSITIVE)), x)
                } else {
                    _mm512_rsqrt14_pd(x)
                };
                newton::<Self>(x, newton::<Self>(x, y))
            }
        }

        const ACC_SCALE: f64 = 0.125;
        const PHI_SCALE: f64 = 0.5;

        #[inline(always)]
        unsafe fn weights<const MASK: bool>(r2: __m512d, m: __m512d) -> (__m512d, __m512d) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let y = if MASK {
                    _mm512_maskz_rsqrt14_pd(_mm512_cmp_pd_mask::<_CMP_GE_OQ>(r2, _mm512_set1_pd(f64::MIN_POSITIVE)), r2)
                } else {
                    _mm512_rsqrt14_pd(r2)
                };
                folded_weights::<Self>(r2, newton::<Self>(r2, y), m)
            }
        }
    }

    /// AVX2 + FMA, 8 f32 lanes: vrsqrtps (about 2^-12) and one third-order step
    /// (error about 2^-35: a plain Newton step would leave a 3e-7 bias).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2F32;

    impl Simd for Avx2F32 {
        type T = f32;
        type V = __m256;
        const LANES: usize = 8;

        #[inline(always)]
        unsafe fn splat(x: f32) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_set1_ps(x) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn sub(a: __m256, b: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: __m256, b: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn fnma(a: __m256, b: __m256, c: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_fnmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: __m256, b: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_min_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn gather(base: *const f32, idx: *const i32) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_i32gather_ps::<4>(base, _mm256_loadu_si256(idx.cast())) }
        }
        #[inline(always)]
        unsafe fn any_lt(a: __m256, b: __m256) -> bool {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(a, b)) != 0 }
        }
        #[inline(always)]
        unsafe fn rsqrt<const MASK: bool>(x: __m256) -> __m256 {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let y = householder::<Self>(x, _mm256_rsqrt_ps(x));
                if MASK {
                    _mm256_and_ps(y, _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(f32::MIN_POSITIVE)))
                } else {
                    y
                }
            }
        }
    }

    /// AVX2 + FMA, 4 f64 lanes: the f32 estimate (vrsqrtps on the rounded value), one
    /// third-order step (2^-12 -> 2^-35) and one Newton step (-> below f64 rounding).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2F64;

    impl Simd for Avx2F64 {
        type T = f64;
        type V = __m256d;
        const LANES: usize = 4;

        #[inline(always)]
        unsafe fn splat(x: f64) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_set1_pd(x) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_loadu_pd(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m256d) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_storeu_pd(p, v) }
        }
        #[inline(always)]
        unsafe fn sub(a: __m256d, b: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_sub_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: __m256d, b: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_mul_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn fma(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_fmadd_pd(a, b, c) }
        }
        #[inline(always)]
        unsafe fn fnma(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_fnmadd_pd(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: __m256d, b: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_min_pd(a, b) }
        }
        #[inline(always)]
        unsafe fn gather(base: *const f64, idx: *const i32) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_i32gather_pd::<8>(base, _mm_loadu_si128(idx.cast())) }
        }
        /// Four row loads and a 4×4 transpose in eight shuffles: on Zen 3 about a third
        /// of the cost of four gathers.
        #[inline(always)]
        unsafe fn gather_rows(base: *const f64, idx: *const i32) -> [__m256d; 4] {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                let row = |l: usize| _mm256_loadu_pd(base.offset(*idx.add(l) as isize));
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
                let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
                [
                    _mm256_permute2f128_pd::<0x20>(t0, t2),
                    _mm256_permute2f128_pd::<0x20>(t1, t3),
                    _mm256_permute2f128_pd::<0x31>(t0, t2),
                    _mm256_permute2f128_pd::<0x31>(t1, t3),
                ]
            }
        }
        #[inline(always)]
        unsafe fn any_lt(a: __m256d, b: __m256d) -> bool {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b)) != 0 }
        }
        #[inline(always)]
        unsafe fn rsqrt<const MASK: bool>(x: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { Self::rsqrt_steps::<MASK, true>(x) }
        }
        /// Without the Newton step: 2^-35.
        #[inline(always)]
        unsafe fn weights_short<const MASK: bool>(r2: __m256d, m: __m256d) -> (__m256d, __m256d) {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe { weights_of::<Self>(Self::rsqrt_steps::<MASK, false>(r2), m) }
        }
    }

    impl Avx2F64 {
        /// `rsqrt`, with its last (Newton) step when `FULL`.
        #[inline(always)]
        unsafe fn rsqrt_steps<const MASK: bool, const FULL: bool>(x: __m256d) -> __m256d {
            // SAFETY: as this unsafe function's own contract (its caller's promise).
            unsafe {
                // Values outside the f32 range (r² > 3e38 or < 1e-38) would round to inf or 0:
                // those lanes take the exact 1/sqrt instead.
                let xf = _mm256_cvtpd_ps(x);
                let y0 = _mm256_cvtps_pd(_mm_rsqrt_ps(xf));
                let y = householder::<Self>(x, y0);
                let y = if FULL { newton::<Self>(x, y) } else { y };
                let lo = _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_set1_pd(1e-36));
                let hi = _mm256_cmp_pd::<_CMP_GT_OQ>(x, _mm256_set1_pd(1e36));
                let outside = _mm256_or_pd(lo, hi);
                let y = if _mm256_movemask_pd(outside) == 0 {
                    y
                } else {
                    _mm256_blendv_pd(y, _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(x)), outside)
                };
                if MASK {
                    _mm256_and_pd(y, _mm256_cmp_pd::<_CMP_GE_OQ>(x, _mm256_set1_pd(f64::MIN_POSITIVE)))
                } else {
                    y
                }
            }
        }
    }
}
