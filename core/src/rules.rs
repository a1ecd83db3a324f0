//! The fourth-order Hermite scheme's per-particle rules (Makino & Aarseth 1992), defined
//! once: the predictor, the corrector, Aarseth's step criterion, the first step and the
//! block-step rule. The integrators' `Hermite` and `BlockHermite` (nbody-integrators)
//! follow them, and so does the device-resident Hermite on the GPU, whose kernels do
//! these operations in this order, each rounded on its own; its tests compare the
//! kernels with these functions bit for bit.
//!
//! Every operation here is one IEEE-754 double operation in the order written (Rust
//! does not fuse them), which is what makes the comparison exact.
//!
//! ```
//! use nbody_core::rules;
//! let (x, v, a, j) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]);
//! let dt = 0.01;
//! let (px, pv) = rules::predict(x, v, a, j, dt);
//! // A circular orbit: the prediction stays on it to fourth order.
//! assert!((px[0].hypot(px[1]) - 1.0).abs() < 1e-9);
//! let (x1, v1, a2, a3) = rules::correct([x, v, a, j, [-px[0], -px[1], 0.0], [-pv[0], -pv[1], 0.0]], dt);
//! assert!((x1[0].hypot(x1[1]) - 1.0).abs() < 1e-9 && (v1[0].hypot(v1[1]) - 1.0).abs() < 1e-9);
//! assert!(rules::aarseth_step(0.02, a, j, a2, a3) > 0.0);
//! ```

use std::vec;
use std::vec::Vec;

/// Factor of the first step: `dt0 = FIRST_STEP · |a| / |a'|` ([`first_step`]).
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
    if want.is_finite() && want > 0.0 { want } else { 2.0 * dt }
}

/// Aarseth's startup criterion for one particle, `FIRST_STEP · max(|a|, floor) / |a'|`
/// (not finite where the jerk is zero): the step over which the acceleration changes by
/// the fraction `FIRST_STEP` of its size.
///
/// `floor` ([`acceleration_floor`]) stands in for an acceleration that vanishes by
/// cancellation, as at the centre of the figure-eight orbit: there `|a|` is rounding
/// noise (1e-17 against partial forces of order 1), `|a| / |a'|` is 1e-17 of the
/// orbit's time scale, and the steps that followed such a start stayed at the
/// corrector's rounding noise for thousands of steps.
pub fn first_step(a: [f64; 3], j: [f64; 3], floor: f64) -> f64 {
    FIRST_STEP * norm(a).max(floor) / norm(j)
}

/// Fraction of the typical acceleration below which [`first_step`] no longer trusts a
/// particle's own `|a|`.
pub const FLOOR_FRACTION: f64 = 1.0 / 128.0;

/// Binary exponents of an f64 (subnormals and zero share exponent 0).
const EXPONENTS: usize = 2048;

/// Counts of `|a|` by binary exponent, one entry per exponent ([`acceleration_floor`]
/// reads the median from them). Counts are whole numbers, so summing them over the
/// processes of a split computation is exact in any order, and every process count
/// gives the same floor.
pub fn exponent_counts(norms: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut counts = vec![0.0; EXPONENTS];
    for x in norms.into_iter().filter(|x| x.is_finite() && *x > 0.0) {
        counts[((x.to_bits() >> 52) & 0x7ff) as usize] += 1.0;
    }
    counts
}

/// `FLOOR_FRACTION · 2^e`, where `2^e` is the power of two at or below the median
/// `|a|` of the counted particles (0 where none has a finite nonzero acceleration).
pub fn acceleration_floor(counts: &[f64]) -> f64 {
    let total: f64 = counts.iter().sum();
    let mut seen = 0.0;
    for (e, c) in counts.iter().enumerate() {
        seen += c;
        if *c > 0.0 && 2.0 * seen >= total {
            return FLOOR_FRACTION * f64::from_bits((e as u64) << 52);
        }
    }
    0.0
}

/// Every particle's startup step ([`first_step`]) from its acceleration and jerk, with
/// the floor taken over every process of `exec`'s calls.
pub fn first_steps<T: crate::Real, E: crate::Executor<T> + ?Sized>(
    exec: &mut E,
    acc: &[[f64; 3]],
    jerk: &[[f64; 3]],
) -> Vec<f64> {
    let mut counts = exponent_counts(acc.iter().map(|a| norm(*a)));
    crate::collective::sum(exec, &mut counts);
    let floor = acceleration_floor(&counts);
    acc.iter().zip(jerk).map(|(a, j)| first_step(*a, *j, floor)).collect()
}

/// The smallest finite positive startup step over every process (`FIRST_STEP` where
/// none is): a shared-step integrator's first step.
pub fn first_shared_step<T: crate::Real, E: crate::Executor<T> + ?Sized>(
    exec: &mut E,
    acc: &[[f64; 3]],
    jerk: &[[f64; 3]],
) -> f64 {
    let dt =
        first_steps(exec, acc, jerk).into_iter().filter(|d| d.is_finite() && *d > 0.0).fold(f64::INFINITY, f64::min);
    let dt = crate::collective::min(exec, dt);
    if dt.is_finite() { dt } else { FIRST_STEP }
}

/// The next shared step after a step of `dt` whose particles' criteria wished for
/// `wants`: the least finite positive wish, at most doubling (`2 dt` where none is).
///
/// ```
/// use nbody_core::rules::next_shared_step;
/// assert_eq!(next_shared_step([0.3, 0.1, f64::NAN], 0.2), 0.1);
/// assert_eq!(next_shared_step([0.9], 0.2), 0.4);
/// assert_eq!(next_shared_step([f64::INFINITY, 0.0], 0.2), 0.4);
/// ```
pub fn next_shared_step(wants: impl IntoIterator<Item = f64>, dt: f64) -> f64 {
    let next = wants.into_iter().filter(|w| w.is_finite() && *w > 0.0).fold(f64::INFINITY, f64::min);
    if next.is_finite() { next.min(2.0 * dt) } else { 2.0 * dt }
}

/// Smallest block step, as a fraction of `dt_max` (2^-40): a floor against close
/// encounters.
pub const MIN_FRACTION: f64 = 1.0 / 1_099_511_627_776.0;

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
    if new_dt > dt && r - r.floor() != 0.0 { dt } else { new_dt }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_a_fraction_of_the_median_power_of_two() {
        // Three particles of |a| ~ 1.25 and one whose acceleration cancelled to 1e-17.
        let counts = exponent_counts([1.25, 1.25, 1e-17, 3.0]);
        assert_eq!(acceleration_floor(&counts), FLOOR_FRACTION);
        // A hard binary's huge accelerations move the median by one particle at most.
        let mut norms = vec![1.0; 99];
        norms.extend([1e12, 1e12]);
        assert_eq!(acceleration_floor(&exponent_counts(norms)), FLOOR_FRACTION);
        // Nothing to count: no floor (every first step is then the particle's own).
        assert_eq!(acceleration_floor(&exponent_counts([0.0, f64::NAN])), 0.0);
    }

    #[test]
    fn counts_summed_over_processes_give_the_same_floor() {
        let norms: Vec<f64> = (1..1000).map(|k| (k as f64).powf(1.7) * 1e-3).collect();
        let whole = acceleration_floor(&exponent_counts(norms.iter().copied()));
        let (a, b) = norms.split_at(377);
        let mut counts = exponent_counts(a.iter().copied());
        for (c, d) in counts.iter_mut().zip(exponent_counts(b.iter().copied())) {
            *c += d;
        }
        assert_eq!(acceleration_floor(&counts), whole);
    }

    #[test]
    fn a_cancelled_acceleration_starts_at_the_floor() {
        let floor = 1.0 / 128.0;
        let j = [-3.26, 4.11, 0.0];
        let dt = first_step([-1.4e-17, 1.3e-18, 0.0], j, floor);
        assert_eq!(dt, FIRST_STEP * floor / norm(j));
        // A particle with a real acceleration keeps its own step.
        assert_eq!(first_step([1.0, 0.0, 0.0], [2.0, 0.0, 0.0], floor), FIRST_STEP / 2.0);
    }
}
