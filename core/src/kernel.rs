//! The softened pair interaction: the physics every executor reproduces.
//!
//! For target `i` and source `j`, with `d = x_j − x_i` and `r² = |d|² + ε²`:
//!
//! ```text
//! a_i   += G m_j d / r³
//! phi_i −= G m_j / r
//! jerk_i += G m_j (v / r³ − 3 (d·v) d / r⁵),   v = v_j − v_i
//! ```
//!
//! G is applied once per target after the sum. With ε > 0 the sum runs over every pair
//! and [`self_potential`] is subtracted for targets that are also sources; with ε = 0
//! pairs at zero distance are masked (they contribute exactly nothing).
//!
//! ```
//! use nbody_core::{kernel, Field, Particle};
//! let mut acc = Field::zero();
//! kernel::pair([0.0f64; 3], &Particle::new(2.0, 0.0, 0.0, 4.0), 0.0, true, &mut acc);
//! assert_eq!(acc.acceleration(), [1.0, 0.0, 0.0]); // 4 / 2²
//! assert_eq!(acc.phi, -2.0);
//! ```

use crate::{rsqrt, Field, Jerk, Particle, Real, Velocity};

/// `1/r` for `r² = |d|² + ε²`; zero when `masked` and `r²` is below the smallest normal
/// number (zero, or a separation so small that 1/r³ would overflow anyway: treated as
/// coincident, the same in every executor).
#[inline(always)]
pub fn inverse_distance<T: Real>(r2: T, masked: bool) -> T {
    if masked && r2 < T::min_positive_value() {
        T::zero()
    } else {
        rsqrt::exact(r2)
    }
}

/// Adds source `src`'s contribution (without G) to the running sums `acc` of a target
/// at `xi`; returns `(d, 1/r, m/r³)` for callers that add more terms (the jerk).
#[inline(always)]
pub fn pair<T: Real>(xi: [T; 3], src: &Particle<T>, eps2: T, masked: bool, acc: &mut Field<T>) -> ([T; 3], T, T) {
    let (dx, dy, dz) = (src.x - xi[0], src.y - xi[1], src.z - xi[2]);
    let r2 = eps2 + dx * dx + dy * dy + dz * dz;
    let rinv = inverse_distance(r2, masked);
    // (m/r · 1/r) · 1/r, not m/r · 1/r²: stays 0 for a massless source where 1/r² overflows.
    let m_rinv = src.m * rinv;
    let m_rinv3 = m_rinv * rinv * rinv;
    acc.ax = acc.ax + dx * m_rinv3;
    acc.ay = acc.ay + dy * m_rinv3;
    acc.az = acc.az + dz * m_rinv3;
    acc.phi = acc.phi - m_rinv;
    ([dx, dy, dz], rinv, m_rinv3)
}

/// [`pair`] plus the jerk, for a target at `xi` moving with `vi` and a source moving
/// with `vj`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the physics has this many inputs
pub fn pair_jerk<T: Real>(
    xi: [T; 3],
    vi: [T; 3],
    src: &Particle<T>,
    vj: &Velocity<T>,
    eps2: T,
    masked: bool,
    acc: &mut Field<T>,
    jerk: &mut Jerk<T>,
) {
    let ([dx, dy, dz], rinv, m_rinv3) = pair(xi, src, eps2, masked, acc);
    let (dvx, dvy, dvz) = (vj.vx - vi[0], vj.vy - vi[1], vj.vz - vi[2]);
    let alpha = T::from_f64(3.0) * (dx * dvx + dy * dvy + dz * dvz) * rinv * rinv;
    jerk.jx = jerk.jx + m_rinv3 * (dvx - alpha * dx);
    jerk.jy = jerk.jy + m_rinv3 * (dvy - alpha * dy);
    jerk.jz = jerk.jz + m_rinv3 * (dvz - alpha * dz);
}

/// [`pair`] plus the jerk and the snap (the acceleration's second derivative), for
/// sixth-order Hermite (Nitadori & Makino 2008): with `d`, `dv`, `da` the relative
/// position, velocity and acceleration, `α = d·dv / r²`, `β = (|dv|² + d·da) / r² + α²`,
///
/// ```text
/// A0 = m d / r³,  A1 = m dv / r³ − 3α A0,  A2 = m da / r³ − 6α A1 − 3β A0
/// ```
///
/// added into the acceleration, `jerk` and `snap` sums. `xi`, `vi`, `ai` are the target's
/// position, velocity and acceleration; `vj`, `aj` the source's.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the physics has this many inputs
pub fn pair_snap<T: Real>(
    [xi, vi, ai]: [[T; 3]; 3],
    src: &Particle<T>,
    vj: [T; 3],
    aj: [T; 3],
    eps2: T,
    masked: bool,
    acc: &mut Field<T>,
    jerk: &mut Jerk<T>,
    snap: &mut Jerk<T>,
) {
    let (d, rinv, m_rinv3) = pair(xi, src, eps2, masked, acc);
    let dv: [T; 3] = core::array::from_fn(|k| vj[k] - vi[k]);
    let da: [T; 3] = core::array::from_fn(|k| aj[k] - ai[k]);
    let dot = |a: &[T; 3], b: &[T; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let rinv2 = rinv * rinv;
    let alpha = dot(&d, &dv) * rinv2;
    let beta = (dot(&dv, &dv) + dot(&d, &da)) * rinv2 + alpha * alpha;
    let three = T::from_f64(3.0);
    let a0: [T; 3] = core::array::from_fn(|k| m_rinv3 * d[k]);
    let a1: [T; 3] = core::array::from_fn(|k| m_rinv3 * dv[k] - three * alpha * a0[k]);
    let a2: [T; 3] =
        core::array::from_fn(|k| m_rinv3 * da[k] - T::from_f64(6.0) * alpha * a1[k] - three * beta * a0[k]);
    jerk.jx = jerk.jx + a1[0];
    jerk.jy = jerk.jy + a1[1];
    jerk.jz = jerk.jz + a1[2];
    snap.jx = snap.jx + a2[0];
    snap.jy = snap.jy + a2[1];
    snap.jz = snap.jz + a2[2];
}

/// The potential a particle of mass `m` adds to itself through the softened kernel
/// (without G and sign): `m / ε`. Executors add `G · self_potential` to `phi` of every
/// target that is also a source when ε² > 0.
///
/// ```
/// assert_eq!(nbody_core::kernel::self_potential(2.0f64, 0.25), 4.0);
/// ```
#[inline(always)]
pub fn self_potential<T: Real>(m: T, eps2: T) -> T {
    m * rsqrt::exact(eps2)
}

/// Adds `G · sums` into `out`; the potential only when `potential` is set.
#[inline(always)]
pub fn finish<T: Real>(g: T, sums: &Field<T>, potential: bool, out: &mut Field<T>) {
    out.ax = out.ax + g * sums.ax;
    out.ay = out.ay + g * sums.ay;
    out.az = out.az + g * sums.az;
    if potential {
        out.phi = out.phi + g * sums.phi;
    }
}

/// Adds `G · sums` into `out`.
#[inline(always)]
pub fn finish_jerk<T: Real>(g: T, sums: &Jerk<T>, out: &mut Jerk<T>) {
    out.jx = out.jx + g * sums.jx;
    out.jy = out.jy + g * sums.jy;
    out.jz = out.jz + g * sums.jz;
}

/// Adds the partial results `part` into `out` lane by lane, `phi` only when
/// `potential` (an acceleration-only call leaves `phi` as it was, bit for bit): how an
/// executor that splits a call (by devices, ranks or source chunks) merges the pieces.
///
/// ```
/// use nbody_core::Field;
/// let mut out = [Field::new(1.0f64, 1.0, 1.0, -0.0)];
/// nbody_core::kernel::add_fields(&mut out, &[Field::new(1.0, 2.0, 3.0, 0.0)], false);
/// assert_eq!(out[0].acceleration(), [2.0, 3.0, 4.0]);
/// assert!(out[0].phi.is_sign_negative());
/// ```
pub fn add_fields<T: Real>(out: &mut [Field<T>], part: &[Field<T>], potential: bool) {
    for (o, p) in out.iter_mut().zip(part) {
        o.ax = o.ax + p.ax;
        o.ay = o.ay + p.ay;
        o.az = o.az + p.az;
        if potential {
            o.phi = o.phi + p.phi;
        }
    }
}

/// Adds the partial jerks `part` into `out` (see [`add_fields`]).
///
/// ```
/// use nbody_core::Jerk;
/// let mut out = [Jerk::new(1.0f32, 0.0, 0.0)];
/// nbody_core::kernel::add_jerks(&mut out, &[Jerk::new(1.0, 2.0, 3.0)]);
/// assert_eq!(out[0].components(), [2.0, 2.0, 3.0]);
/// ```
pub fn add_jerks<T: Real>(out: &mut [Jerk<T>], part: &[Jerk<T>]) {
    for (o, p) in out.iter_mut().zip(part) {
        o.jx = o.jx + p.jx;
        o.jy = o.jy + p.jy;
        o.jz = o.jz + p.jz;
    }
}
