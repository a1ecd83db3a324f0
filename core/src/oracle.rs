//! The f64 oracle: what every test compares against.
//!
//! It converts any input to f64 and sums the i ≠ j pairs directly (skipping a target's
//! pair with itself instead of subtracting it, and masking zero distances when ε = 0),
//! so it is an independent statement of the physics rather than a copy of the
//! executors' trick. Alongside each value it returns an error scale: the sum of the
//! magnitudes of the terms, widened by how far rounding the coordinates (of size
//! `|x_i| + |x_j|`) can move each term. An executor computing in precision `u` with
//! `n` sources is correct when `|value − oracle| ≤ K(n) · u · bound` for a small K(n).
//!
//! ```
//! use nbody_core::{oracle, Params, Particle};
//! let ps = [Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
//! let mut exact = [oracle::Exact::default(); 2];
//! oracle::field(&ps, None, &ps, None, &Params::softened(0.0).with_overlap_identical(), &mut exact).unwrap();
//! assert_eq!(exact[0].acc, [0.25, 0.0, 0.0]);
//! assert_eq!(exact[1].phi, -0.5);
//! ```

use crate::{Bodies, Error, Params, Particle, Real, Velocity, validate};
use num_traits::Float;

/// The f64 truth for one target, with error scales.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Exact {
    /// Acceleration.
    pub acc: [f64; 3],
    /// Potential (i ≠ j pairs only).
    pub phi: f64,
    /// Jerk (zero unless velocities were given).
    pub jerk: [f64; 3],
    /// Error scale for each acceleration component.
    pub acc_bound: f64,
    /// Error scale for the potential.
    pub phi_bound: f64,
    /// Error scale for each jerk component.
    pub jerk_bound: f64,
}

/// Computes [`Exact`] for every target into `out` (overwriting it). Velocities are
/// optional; give both to get the jerk. Inputs are validated like an executor call.
pub fn field<T: Real>(
    targets: &[Particle<T>],
    target_vel: Option<&[Velocity<T>]>,
    sources: &[Particle<T>],
    source_vel: Option<&[Velocity<T>]>,
    params: &Params<T>,
    out: &mut [Exact],
) -> Result<(), Error> {
    let vels = match (target_vel, source_vel) {
        (Some(tv), Some(sv)) => {
            let (t, s) = (Bodies { pos: targets, vel: tv }, Bodies { pos: sources, vel: sv });
            validate::jerk_call(&t, &s, params, out.len(), out.len())?;
            Some((tv, sv))
        }
        (None, None) => {
            validate::call(targets, sources, params, out.len())?;
            None
        }
        _ => {
            return Err(Error::InvalidParameter {
                name: "velocities",
                requirement: "given for both targets and sources, or neither",
            });
        }
    };
    let eps2 = params.eps.to_f64() * params.eps.to_f64();
    let masked = params.masked();
    sum(targets, vels, sources, params, |_, _| (eps2, masked), out);
    Ok(())
}

/// [`field`] with a softening length per particle (the symmetrised rule of
/// [`crate::PerParticle`]), without velocities.
///
/// ```
/// use nbody_core::{oracle, Params, Particle, PerParticle};
/// let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let eps = PerParticle { targets: &[0.0, 1.0], sources: &[0.0, 1.0] };
/// let mut exact = [oracle::Exact::default(); 2];
/// oracle::field_per_particle(&ps, &ps, eps, &Params::softened(0.0).with_overlap_identical(), &mut exact).unwrap();
/// assert!((exact[0].acc[0] - 1.5f64.powf(-1.5)).abs() < 1e-15);
/// ```
pub fn field_per_particle<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    eps: crate::PerParticle<'_, T>,
    params: &Params<T>,
    out: &mut [Exact],
) -> Result<(), Error> {
    validate::per_particle_call(targets, sources, &eps, params, out.len())?;
    let pair = |i: usize, j: usize| {
        let (ei, ej) = (eps.targets[i].to_f64(), eps.sources[j].to_f64());
        // The Plummer-equivalent ε² of the pair: the mean of the squares, or the larger
        // length for the spline (whose support is 2.8 times it).
        let eps2 = params.softening.pair_rule().eps2(ei, ej);
        let masked = matches!(
            crate::kernel::Softened::between(params.softening, eps.targets[i], eps.sources[j]),
            crate::kernel::Softened::Plummer { masked: true, .. }
        );
        (eps2, masked)
    };
    sum(targets, None, sources, params, pair, out);
    Ok(())
}

/// Target and source velocities.
type Velocities<'a, T> = (&'a [Velocity<T>], &'a [Velocity<T>]);

/// The oracle's sums on validated input; `pair(i, j)` gives target i's and source j's
/// Plummer-equivalent ε² and whether their kernel masks zero distances.
fn sum<T: Real>(
    targets: &[Particle<T>],
    vels: Option<Velocities<'_, T>>,
    sources: &[Particle<T>],
    params: &Params<T>,
    pair: impl Fn(usize, usize) -> (f64, bool),
    out: &mut [Exact],
) {
    let g = params.g.to_f64();
    let f = |p: &Particle<T>| [p.x.to_f64(), p.y.to_f64(), p.z.to_f64(), p.m.to_f64()];
    let v3 = |v: &Velocity<T>| [v.vx.to_f64(), v.vy.to_f64(), v.vz.to_f64()];
    let norm = |a: [f64; 3]| Float::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (i, o) in out.iter_mut().enumerate() {
        let xi = f(&targets[i]);
        let vi = vels.map_or([0.0; 3], |(tv, _)| v3(&tv[i]));
        let self_index = params.overlap.source_of(i);
        let mut e = Exact::default();
        // Compensated sums: the oracle's own rounding stays about u whatever the number
        // of sources, so an f64 executor is measured against the truth, not against a
        // sum as inexact as its own.
        let (mut acc, mut phi, mut jerk) =
            ([Compensated::default(); 3], Compensated::default(), [Compensated::default(); 3]);
        for (j, s) in sources.iter().enumerate() {
            let (eps2, masked) = pair(i, j);
            let spline = match params.softening {
                crate::Softening::Plummer => None,
                crate::Softening::Spline => (!masked).then(|| {
                    let h = crate::SPLINE_SUPPORT * Float::sqrt(eps2);
                    (h, 1.0 / h)
                }),
            };
            let xj = f(s);
            let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
            let dist2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let r2 = if spline.is_some() { dist2 } else { dist2 + eps2 };
            // The coordinates' own size: rounding them moves d by about u times this.
            let coord = norm([xi[0], xi[1], xi[2]]) + norm([xj[0], xj[1], xj[2]]);
            if Some(j) == self_index {
                if !masked {
                    // Executors add and then subtract m/ε: its rounding is part of the error.
                    e.phi_bound += xj[3] / Float::sqrt(eps2);
                }
                continue;
            }
            // Executors mask pairs whose r² (in T) is below the smallest normal number
            // (the spline is finite at r = 0).
            if spline.is_none() && (r2 == 0.0 || (masked && T::from_f64(r2) < T::min_positive_value())) {
                continue;
            }
            let m = xj[3];
            // w = 1/r, g = 1/r³, dg = −3/r⁵ (Plummer: of the softened r; the spline: its
            // polynomials inside h). The bounds take the Plummer form with r² ≥ ε²,
            // which bounds the spline's terms as well.
            // 1/r of the Plummer-softened r: the Plummer kernel's and, for the spline,
            // its bounds'.
            let rinv = 1.0 / Float::sqrt(dist2 + eps2);
            let (w, g3, dg) = match spline {
                Some((h, h_inv)) => crate::kernel::spline(dist2, h, h_inv),
                None => (rinv, rinv * rinv * rinv, -3.0 * rinv.powi(5)),
            };
            let m_r3 = m * g3;
            for (a, dk) in acc.iter_mut().zip(d) {
                a.add(m_r3 * dk);
            }
            phi.add(-(m * w));
            let m_b3 = m * rinv * rinv * rinv;
            e.acc_bound += m_b3 * (Float::sqrt(dist2) + 3.0 * coord);
            e.phi_bound += m * rinv * (1.0 + coord * rinv);
            if let Some((_, sv)) = vels {
                let vj = v3(&sv[j]);
                let dv = [vj[0] - vi[0], vj[1] - vi[1], vj[2] - vi[2]];
                let radial = m * dg * (d[0] * dv[0] + d[1] * dv[1] + d[2] * dv[2]);
                for k in 0..3 {
                    jerk[k].add(m_r3 * dv[k]);
                    jerk[k].add(radial * d[k]);
                }
                let speeds = norm(vi) + norm(vj) + norm(dv);
                e.jerk_bound += 4.0 * m_b3 * speeds * (1.0 + 3.0 * coord * rinv);
            }
        }
        for k in 0..3 {
            e.acc[k] = g * acc[k].value();
            e.jerk[k] = g * jerk[k].value();
        }
        e.phi = g * phi.value();
        e.acc_bound *= g;
        e.phi_bound *= g;
        e.jerk_bound *= g;
        *o = e;
    }
}

/// Neumaier's compensated sum: the rounding of each addition is kept and added back at
/// the end, so the result errs by about one rounding of the total plus `n u²` of the
/// terms' magnitudes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Compensated {
    sum: f64,
    carry: f64,
}

impl Compensated {
    /// Adds `x`.
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        self.carry += if self.sum.abs() >= x.abs() { (self.sum - t) + x } else { (x - t) + self.sum };
        self.sum = t;
    }

    /// The sum.
    #[inline]
    pub(crate) fn value(self) -> f64 {
        self.sum + self.carry
    }
}
