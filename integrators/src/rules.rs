//! The fourth-order Hermite scheme's per-particle rules (Makino & Aarseth 1992), defined
//! once: the predictor, the corrector, Aarseth's step criterion, the first step and the
//! block-step rule. [`crate::Hermite`] and [`crate::BlockHermite`] follow them, and so
//! does the CUDA device-resident Hermite (`nbody_cuda::DeviceHermite`), whose kernels
//! do these operations in this order, each rounded on its own; its tests compare the
//! kernels with these functions bit for bit.
//!
//! Every operation here is one IEEE-754 double operation in the order written (Rust
//! does not fuse them), which is what makes the comparison exact.
//!
//! ```
//! use nbody_integrators::rules;
//! let (x, v, a, j) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]);
//! let dt = 0.01;
//! let (px, pv) = rules::predict(x, v, a, j, dt);
//! // A circular orbit: the prediction stays on it to fourth order.
//! assert!((px[0].hypot(px[1]) - 1.0).abs() < 1e-9);
//! let (x1, v1, a2, a3) = rules::correct([x, v, a, j, [-px[0], -px[1], 0.0], [-pv[0], -pv[1], 0.0]], dt);
//! assert!((x1[0].hypot(x1[1]) - 1.0).abs() < 1e-9 && (v1[0].hypot(v1[1]) - 1.0).abs() < 1e-9);
//! assert!(rules::aarseth_step(0.02, a, j, a2, a3) > 0.0);
//! ```

/// Factor of the first step: `dt0 = FIRST_STEP · |a| / |a'|`.
pub const FIRST_STEP: f64 = 0.01;

/// `sqrt(x² + y² + z²)`, summed in that order.
pub fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// The predictor over `d`: position `x + d (v + d (a/2 + d j / 6))` and velocity
/// `v + d (a + d j / 2)`.
pub fn predict(x: [f64; 3], v: [f64; 3], a: [f64; 3], j: [f64; 3], d: f64) -> ([f64; 3], [f64; 3]) {
    let px = core::array::from_fn(|k| x[k] + d * (v[k] + d * (0.5 * a[k] + d * j[k] / 6.0)));
    let pv = core::array::from_fn(|k| v[k] + d * (a[k] + 0.5 * d * j[k]));
    (px, pv)
}

/// One particle's corrector over `dt`, from position, velocity, acceleration and jerk at
/// the start (`x`, `v`, `a0`, `j0`) and acceleration and jerk at the predicted end (`a1`,
/// `j1`): the corrected position and velocity, and a'' and a''' at the end from the
/// interpolating polynomial (for the next step's criterion).
pub fn correct([x, v, a0, j0, a1, j1]: [[f64; 3]; 6], dt: f64) -> ([f64; 3], [f64; 3], [f64; 3], [f64; 3]) {
    let (dt2, half) = (dt * dt, 0.5 * dt);
    let v1: [f64; 3] = core::array::from_fn(|k| v[k] + half * (a0[k] + a1[k]) + dt2 * (j0[k] - j1[k]) / 12.0);
    let x1: [f64; 3] = core::array::from_fn(|k| x[k] + half * (v[k] + v1[k]) + dt2 * (a0[k] - a1[k]) / 12.0);
    let a3: [f64; 3] = core::array::from_fn(|k| (12.0 * (a0[k] - a1[k]) + 6.0 * dt * (j0[k] + j1[k])) / (dt2 * dt));
    let a2: [f64; 3] =
        core::array::from_fn(|k| (-6.0 * (a0[k] - a1[k]) - dt * (4.0 * j0[k] + 2.0 * j1[k])) / dt2 + a3[k] * dt);
    (x1, v1, a2, a3)
}

/// Aarseth's step: `sqrt(eta (|a||a''| + |a'|²) / (|a'||a'''| + |a''|²))`.
pub fn aarseth_step(eta: f64, a: [f64; 3], j: [f64; 3], a2: [f64; 3], a3: [f64; 3]) -> f64 {
    let (na, nj, n2, n3) = (norm(a), norm(j), norm(a2), norm(a3));
    (eta * (na * n2 + nj * nj) / (nj * n3 + n2 * n2)).sqrt()
}

/// Aarseth's step after a step of `dt`, or `2 dt` where the criterion gives no finite
/// positive step (a particle without force).
pub fn next_step(eta: f64, dt: f64, a: [f64; 3], j: [f64; 3], a2: [f64; 3], a3: [f64; 3]) -> f64 {
    let want = aarseth_step(eta, a, j, a2, a3);
    if want.is_finite() && want > 0.0 {
        want
    } else {
        2.0 * dt
    }
}

/// The first step's wish, `FIRST_STEP |a| / |a'|` (not finite where the jerk is zero).
pub fn first_step(a: [f64; 3], j: [f64; 3]) -> f64 {
    FIRST_STEP * norm(a) / norm(j)
}

/// `dt_max / 2^k`: the largest such step not above `dt`, and not below `dt_min`.
pub fn quantize(dt: f64, dt_max: f64, dt_min: f64) -> f64 {
    let mut q = dt_max;
    while q > dt && q > dt_min {
        q *= 0.5;
    }
    q
}

/// A particle's next block step after a step of `dt` ending at `t` that wished for
/// `want` ([`next_step`]): halved freely, doubled at most, and doubled only where `t` is
/// a multiple of the doubled step (so block times stay commensurate).
pub fn block_step(want: f64, dt: f64, t: f64, dt_max: f64, dt_min: f64) -> f64 {
    let new_dt = quantize(want.min(2.0 * dt), dt_max, dt_min);
    let r = t / new_dt;
    if new_dt > dt && r - r.floor() != 0.0 {
        dt
    } else {
        new_dt
    }
}
