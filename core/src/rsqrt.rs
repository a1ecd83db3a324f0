//! Reciprocal square roots: exact, and the bit-trick estimate refined by Newton steps.
//!
//! The estimate reinterprets the float's bits, halves the exponent and subtracts from a
//! magic constant (Lomont's 0x5f375a86 for f32, 0x5fe6eb50c7b537a9 for f64); each Newton
//! step `y ← y (3 − x y²) / 2` roughly squares the relative error. GPU and SIMD kernels
//! start from a hardware estimate instead, but refine it the same way.
//!
//! Maximum relative error against `1/sqrt(x)` evaluated in f64, measured by the tests
//! below over every f32 exponent (1,024 mantissas each, subnormals included) and over
//! 2,000,000 random f64 inputs spread over all exponents (their f64 truth is itself
//! within one rounding, about 1.1e-16). Measured worst case, and the bound the tests
//! assert:
//!
//! | Newton steps | f32 measured | f32 bound | f64 measured | f64 bound |
//! |---|---|---|---|---|
//! | 0 | 3.44e-2 | 3.5e-2 | 3.44e-2 | 3.5e-2 |
//! | 1 | 1.76e-3 | 1.8e-3 | 1.76e-3 | 1.8e-3 |
//! | 2 | 4.72e-6 | 4.8e-6 | 4.60e-6 | 4.7e-6 |
//! | 3 | 1.37e-7 | 1.5e-7 | 3.17e-11 | 3.3e-11 |
//! | 4 | 1.04e-7 | 1.2e-7 | 3.99e-16 | 4.5e-16 |
//!
//! So f32 reaches its rounding level (about 1 ulp) after 3 steps and f64 after 4.
//!
//! Domain: positive finite inputs, subnormals included (they are scaled into the
//! normal range first). `0` gives a large finite value, not infinity: kernels that may
//! see `r² = 0` mask it themselves.
//!
//! ```
//! use nbody_core::rsqrt;
//! let y = rsqrt::refine(2.0f32, rsqrt::estimate_f32(2.0), 3);
//! assert!((y - 0.70710677).abs() < 1e-6);
//! assert_eq!(rsqrt::exact(4.0f64), 0.5);
//! ```

use crate::Real;

/// Relative error bounds for 0..=4 Newton steps in f32, as in the module table.
pub const MAX_REL_ERROR_F32: [f64; 5] = [3.5e-2, 1.8e-3, 4.8e-6, 1.5e-7, 1.2e-7];
/// Relative error bounds for 0..=4 Newton steps in f64, as in the module table.
pub const MAX_REL_ERROR_F64: [f64; 5] = [3.5e-2, 1.8e-3, 4.7e-6, 3.3e-11, 4.5e-16];

/// `1/sqrt(x)` with a true square root and a division.
#[inline(always)]
pub fn exact<T: Real>(x: T) -> T {
    x.sqrt().recip()
}

/// Applies `steps` Newton steps for `1/sqrt(x)` to the estimate `y`.
#[inline(always)]
pub fn refine<T: Real>(x: T, mut y: T, steps: u32) -> T {
    let (half, three_halves) = (T::from_f64(0.5), T::from_f64(1.5));
    for _ in 0..steps {
        // (x·y) first: x/2 would round away bits of a subnormal x, and y² alone overflows.
        y = y * (three_halves - half * (x * y) * y);
    }
    y
}

/// Bit-trick estimate of `1/sqrt(x)` for f32.
#[inline(always)]
pub fn estimate_f32(x: f32) -> f32 {
    // 2^24 brings every subnormal into the normal range; 1/sqrt scales by 2^-12 back.
    if x > 0.0 && x < f32::MIN_POSITIVE {
        return estimate_f32(x * 16_777_216.0) * 4096.0;
    }
    f32::from_bits(0x5f37_5a86 - (x.to_bits() >> 1))
}

/// Bit-trick estimate of `1/sqrt(x)` for f64.
#[inline(always)]
pub fn estimate_f64(x: f64) -> f64 {
    if x > 0.0 && x < f64::MIN_POSITIVE {
        // 2^54 lifts subnormals; 1/sqrt scales by 2^27.
        return estimate_f64(x * 18_014_398_509_481_984.0) * 134_217_728.0;
    }
    f64::from_bits(0x5fe6_eb50_c7b5_37a9 - (x.to_bits() >> 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(y: f64, truth: f64) -> f64 {
        ((y - truth) / truth).abs()
    }

    /// Every f32 exponent (subnormal range included), 1,024 mantissas each.
    #[test]
    fn sweep_f32_every_exponent() {
        let mut worst = [0.0f64; 5];
        for exp in 0u32..255 {
            for k in 0u32..1024 {
                // Spread mantissas over the whole 23-bit field, ends included.
                let mantissa = (k * 8191 + k / 7) & 0x7f_ffff;
                let bits = (exp << 23) | mantissa;
                let x = f32::from_bits(bits);
                if x == 0.0 {
                    continue;
                }
                let truth = 1.0 / (x as f64).sqrt();
                for (steps, w) in worst.iter_mut().enumerate() {
                    let y = x.rsqrt_newton(steps as u32) as f64;
                    *w = w.max(rel(y, truth));
                }
            }
        }
        for (steps, (w, bound)) in worst.iter().zip(MAX_REL_ERROR_F32).enumerate() {
            assert!(w <= &bound, "f32, {steps} steps: max rel error {w:e} > {bound:e}");
        }
    }

    /// 2,000,000 f64 inputs with random exponents over the whole range and random mantissas.
    #[test]
    fn sweep_f64_random() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            // SplitMix64: enough for a reproducible spread of bit patterns.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut worst = [0.0f64; 5];
        for _ in 0..2_000_000 {
            let r = next();
            let exp = (r >> 52) % 2047; // 0..=2046: subnormals and every normal exponent
            let x = f64::from_bits((exp << 52) | (next() & 0x000f_ffff_ffff_ffff));
            if x == 0.0 {
                continue;
            }
            // 1/sqrt in f64 is within one rounding of the truth; the bounds allow for it.
            let truth = 1.0 / x.sqrt();
            for (steps, w) in worst.iter_mut().enumerate() {
                *w = w.max(rel(x.rsqrt_newton(steps as u32), truth));
            }
        }
        for (steps, (w, bound)) in worst.iter().zip(MAX_REL_ERROR_F64).enumerate() {
            assert!(w <= &bound, "f64, {steps} steps: max rel error {w:e} > {bound:e}");
        }
    }

    #[test]
    fn zero_gives_a_finite_value() {
        assert!(estimate_f32(0.0).is_finite());
        assert!(estimate_f64(0.0).is_finite());
    }
}
