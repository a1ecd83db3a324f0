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
            let xj = f(s);
            let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
            // The coordinates' own size: rounding them moves d by about u times this.
            let coord = norm([xi[0], xi[1], xi[2]]) + norm([xj[0], xj[1], xj[2]]);
            if Some(j) == self_index {
                if !masked {
                    // Executors add and then subtract m/ε: its rounding is part of the error.
                    e.phi_bound += xj[3] / Float::sqrt(eps2);
                }
                continue;
            }
            let Some(PairTerms { w, g: g3, dg, rinv, dist2 }) = pair_terms::<T>(params, d, eps2, masked) else {
                continue;
            };
            let m = xj[3];
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

/// The tidal tensor of every target in f64: the gradient of its acceleration with
/// respect to its own position, `∂a_i/∂x_i = −G Σ_j m_j (g I + dg d dᵀ)` with
/// `d = x_j − x_i` (Newtonian: `G Σ_j m_j (3 d dᵀ / r⁵ − I / r³)`), as
/// `[xx, xy, xz, yy, yz, zz]`, over the pairs [`field`] sums (a target's pair with itself
/// and masked zero distances left out), for either softening. Validated like a call.
///
/// ```
/// use nbody_core::{oracle, Params, Particle};
/// let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 4.0)];
/// let mut t = [[0.0; 6]; 2];
/// oracle::tidal(&ps, &ps, &Params::softened(0.0).with_overlap_identical(), &mut t).unwrap();
/// // Along the line: stretched by 2 m / r³; across it: squeezed by m / r³.
/// assert_eq!(t[0], [1.0, 0.0, 0.0, -0.5, 0.0, -0.5]);
/// ```
pub fn tidal<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    out: &mut [[f64; 6]],
) -> Result<(), Error> {
    validate::call(targets, sources, params, out.len())?;
    let (g, eps2, masked) = (params.g.to_f64(), params.eps.to_f64() * params.eps.to_f64(), params.masked());
    for (i, o) in out.iter_mut().enumerate() {
        let xi = lanes(&targets[i]);
        let mut t = [Compensated::default(); 6];
        for (j, s) in sources.iter().enumerate() {
            let xj = lanes(s);
            let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
            if Some(j) == params.overlap.source_of(i) {
                continue;
            }
            let Some(k) = pair_terms::<T>(params, d, eps2, masked) else { continue };
            for (lane, &(a, b)) in TENSOR_PAIRS.iter().enumerate() {
                let diagonal = if a == b { k.g } else { 0.0 };
                t[lane].add(-xj[3] * (diagonal + k.dg * d[a] * d[b]));
            }
        }
        *o = core::array::from_fn(|lane| g * t[lane].value());
    }
    Ok(())
}

/// The index pairs of a symmetric tensor's six lanes `[xx, xy, xz, yy, yz, zz]`.
const TENSOR_PAIRS: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];

/// The cotangents of a call's outputs: `acc[i]` on target i's acceleration and,
/// optionally, `phi[i]` on its potential.
#[derive(Clone, Copy, Debug)]
pub struct Cotangents<'a> {
    /// One per target, on its acceleration.
    pub acc: &'a [[f64; 3]],
    /// One per target, on its potential (none: zero).
    pub phi: Option<&'a [f64]>,
}

/// Where [`vjp`] writes the gradients (overwritten): of the targets' positions, the
/// sources' positions and the sources' masses.
#[derive(Debug)]
pub struct Gradients<'a> {
    /// One per target.
    pub targets: &'a mut [[f64; 3]],
    /// One per source.
    pub sources: &'a mut [[f64; 3]],
    /// One per source.
    pub masses: &'a mut [f64],
}

/// The vector-Jacobian product of a call in f64: the gradients of
/// `L = Σ_i (c_i · a_i + h_i φ_i)` for cotangents `c` (on the accelerations) and `h` (on
/// the potentials) with respect to the targets' positions, the sources' positions and
/// the sources' masses, over the pairs [`field`] sums, for either softening. With
/// `K_ij = m_j (g I + dg d dᵀ)` and `d = x_j − x_i`:
///
/// ```text
/// ∂L/∂x_i (target) = −G Σ_j K_ij c_i − h_i a_i
/// ∂L/∂x_j (source) =  G Σ_i (K_ij c_i + h_i m_j g d)
/// ∂L/∂m_j          =  G Σ_i (g d · c_i − h_i w)
/// ```
///
/// Where targets and sources are one array, a particle's gradient is its target part
/// plus its source part. Validated like a call; cotangents must be finite.
///
/// ```
/// use nbody_core::oracle::{self, Cotangents, Gradients};
/// use nbody_core::{Params, Particle};
/// // Two unit masses 2 apart: a_0 = +1/4 along x. Its gradient with respect to the
/// // source's x is −2 m / r³ (the pull weakens as it moves away), and with respect to
/// // the source's mass 1/r².
/// let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
/// let cot = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]];
/// let (mut gt, mut gs, mut gm) = ([[0.0; 3]; 2], [[0.0; 3]; 2], [0.0; 2]);
/// let grads = Gradients { targets: &mut gt, sources: &mut gs, masses: &mut gm };
/// oracle::vjp(&ps, &ps, &Params::softened(0.0).with_overlap_identical(), Cotangents { acc: &cot, phi: None }, grads)
///     .unwrap();
/// assert_eq!((gs[1][0], gm[1]), (-0.25, 0.25));
/// assert_eq!(gt[0][0], 0.25); // moving the target towards the source strengthens it
/// ```
pub fn vjp<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    cot: Cotangents<'_>,
    out: Gradients<'_>,
) -> Result<(), Error> {
    let n = targets.len();
    validate::call(targets, sources, params, n)?;
    validate::length("acceleration cotangents", n, cot.acc.len())?;
    if let Some(h) = cot.phi {
        validate::length("potential cotangents", n, h.len())?;
    }
    validate::length("target gradients", n, out.targets.len())?;
    validate::length("source gradients", sources.len(), out.sources.len())?;
    validate::length("mass gradients", sources.len(), out.masses.len())?;
    let finite = |i: usize| cot.acc[i].iter().all(|c| c.is_finite()) && cot.phi.is_none_or(|h| h[i].is_finite());
    if let Some(index) = (0..n).find(|&i| !finite(i)) {
        return Err(Error::NonFinite { array: crate::Array::Cotangents, index });
    }
    let (g, eps2, masked) = (params.g.to_f64(), params.eps.to_f64() * params.eps.to_f64(), params.masked());
    let h = |i: usize| cot.phi.map_or(0.0, |h| h[i]);
    // Pair (i, j) as field sums it: the separation, the source's mass, the kernel's
    // terms and K c_i (the pair's Jacobian block times the cotangent); `None` where it
    // is left out.
    let pair = |i: usize, j: usize| -> Option<([f64; 3], f64, PairTerms, [f64; 3])> {
        let (xi, xj) = (lanes(&targets[i]), lanes(&sources[j]));
        let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
        if Some(j) == params.overlap.source_of(i) {
            return None;
        }
        let k = pair_terms::<T>(params, d, eps2, masked)?;
        let c = cot.acc[i];
        let dc = d[0] * c[0] + d[1] * c[1] + d[2] * c[2];
        let kc = core::array::from_fn(|a| xj[3] * (k.g * c[a] + k.dg * dc * d[a]));
        Some((d, xj[3], k, kc))
    };
    // The targets: a pass over the sources of each.
    for (i, o) in out.targets.iter_mut().enumerate() {
        let (mut grad, mut acc) = ([Compensated::default(); 3], [Compensated::default(); 3]);
        for (d, m, k, kc) in (0..sources.len()).filter_map(|j| pair(i, j)) {
            for a in 0..3 {
                grad[a].add(-kc[a]);
                acc[a].add(m * k.g * d[a]);
            }
        }
        *o = core::array::from_fn(|a| g * (grad[a].value() - h(i) * acc[a].value()));
    }
    // The sources: a pass over the targets of each.
    for j in 0..sources.len() {
        let (mut grad, mut mass) = ([Compensated::default(); 3], Compensated::default());
        for (i, (d, m, k, kc)) in (0..n).filter_map(|i| pair(i, j).map(|p| (i, p))) {
            let c = cot.acc[i];
            for a in 0..3 {
                grad[a].add(kc[a] + h(i) * m * k.g * d[a]);
            }
            mass.add(k.g * (d[0] * c[0] + d[1] * c[1] + d[2] * c[2]) - h(i) * k.w);
        }
        out.sources[j] = core::array::from_fn(|a| g * grad[a].value());
        out.masses[j] = g * mass.value();
    }
    Ok(())
}

/// Error scales of the gradients (see [`gradient_scales`]): the sums of the magnitudes of
/// each value's terms, each widened by how far rounding the coordinates moves it, in the
/// value's units (G included).
#[derive(Debug)]
pub struct GradientScales<'a> {
    /// One per target, for every lane of its tidal tensor.
    pub tidal: &'a mut [f64],
    /// One per target, for its position gradient.
    pub targets: &'a mut [f64],
    /// One per source, for its position gradient.
    pub sources: &'a mut [f64],
    /// One per source, for its mass gradient.
    pub masses: &'a mut [f64],
}

/// The error scales of [`tidal`] and [`vjp`] (overwritten into `out`), by which tests
/// judge an executor's gradients as [`Exact`]'s bounds judge its field: each pair adds
/// its terms' magnitudes, widened by `1 + 5 |x| / r` (`|x|` the coordinates' size: their
/// rounding moves `d` by `u |x|`, and the terms go as up to `r⁻⁵`); a target's own pair,
/// which executors add and subtract, adds its `m g(0)` and `w(0)`. Validated like
/// [`vjp`].
///
/// ```
/// use nbody_core::oracle::{self, Cotangents, GradientScales};
/// use nbody_core::{Params, Particle};
/// let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
/// let cot = [[1.0, 0.0, 0.0]; 2];
/// let (mut t, mut gt, mut gs, mut gm) = ([0.0; 2], [0.0; 2], [0.0; 2], [0.0; 2]);
/// let out = GradientScales { tidal: &mut t, targets: &mut gt, sources: &mut gs, masses: &mut gm };
/// oracle::gradient_scales(&ps, &ps, &Params::softened(0.0).with_overlap_identical(), Cotangents { acc: &cot, phi: None }, out)
///     .unwrap();
/// assert!(t[0] >= 0.5 && gs[1] >= 0.5 && gm[1] >= 0.25); // at least the terms themselves
/// ```
pub fn gradient_scales<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    cot: Cotangents<'_>,
    out: GradientScales<'_>,
) -> Result<(), Error> {
    let n = targets.len();
    validate::call(targets, sources, params, n)?;
    validate::length("acceleration cotangents", n, cot.acc.len())?;
    for (what, len) in [("tidal scales", out.tidal.len()), ("target scales", out.targets.len())] {
        validate::length(what, n, len)?;
    }
    for (what, len) in [("source scales", out.sources.len()), ("mass scales", out.masses.len())] {
        validate::length(what, sources.len(), len)?;
    }
    let (g, eps2, masked) = (params.g.to_f64(), params.eps.to_f64() * params.eps.to_f64(), params.masked());
    let norm = |a: [f64; 3]| Float::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    let h = |i: usize| cot.phi.map_or(0.0, |h| h[i]).abs();
    let self_terms = pair_terms::<T>(params, [0.0; 3], eps2, masked);
    out.sources.fill(0.0);
    out.masses.fill(0.0);
    for (i, t) in targets.iter().enumerate() {
        let xi = lanes(t);
        let c = norm(cot.acc[i]);
        let (mut tidal, mut acc) = (0.0, 0.0);
        for (j, s) in sources.iter().enumerate() {
            let xj = lanes(s);
            let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
            let m = xj[3];
            if Some(j) == params.overlap.source_of(i) {
                if let Some(k) = &self_terms {
                    tidal += m * k.g.abs();
                    out.sources[j] += m * k.g.abs() * c;
                    out.masses[j] += h(i) * k.w.abs();
                }
                continue;
            }
            let Some(k) = pair_terms::<T>(params, d, eps2, masked) else { continue };
            let coord = norm([xi[0], xi[1], xi[2]]) + norm([xj[0], xj[1], xj[2]]);
            let widen = 1.0 + 5.0 * coord * k.rinv;
            let r = Float::sqrt(k.dist2);
            let (gk, dgk) = (k.g.abs(), k.dg.abs() * k.dist2);
            tidal += m * (gk + dgk) * widen;
            acc += m * gk * r * widen;
            out.sources[j] += m * ((gk + dgk) * c + h(i) * gk * r) * widen;
            out.masses[j] += (gk * r * c + h(i) * k.w.abs()) * widen;
        }
        out.tidal[i] = g * tidal;
        out.targets[i] = g * (tidal * c + h(i) * acc);
    }
    out.sources.iter_mut().for_each(|x| *x *= g);
    out.masses.iter_mut().for_each(|x| *x *= g);
    Ok(())
}

/// A particle's lanes in f64.
fn lanes<T: Real>(p: &Particle<T>) -> [f64; 4] {
    [p.x.to_f64(), p.y.to_f64(), p.z.to_f64(), p.m.to_f64()]
}

/// One pair's kernel terms in f64: `phi −= m w`, `a += m g d`, and the derivative
/// `∂(g d)/∂d = g I + dg d dᵀ` (what the jerk and the gradients take), with `rinv` the
/// Plummer-softened `1/r` (the bounds' scale for either softening) and `dist2 = |d|²`.
struct PairTerms {
    w: f64,
    g: f64,
    dg: f64,
    rinv: f64,
    dist2: f64,
}

/// [`PairTerms`] of separation `d` (source minus target) under `params`' softening with
/// the pair's `eps2`; `None` where executors mask the pair (a zero distance, or an r²
/// below T's smallest normal number, of an unsoftened Plummer pair; the spline is finite
/// at r = 0).
fn pair_terms<T: Real>(params: &Params<T>, d: [f64; 3], eps2: f64, masked: bool) -> Option<PairTerms> {
    let spline = match params.softening {
        crate::Softening::Plummer => None,
        crate::Softening::Spline => (!masked).then(|| {
            let h = crate::SPLINE_SUPPORT * Float::sqrt(eps2);
            (h, 1.0 / h)
        }),
    };
    let dist2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    let r2 = if spline.is_some() { dist2 } else { dist2 + eps2 };
    if spline.is_none() && (r2 == 0.0 || (masked && T::from_f64(r2) < T::min_positive_value())) {
        return None;
    }
    // w = 1/r, g = 1/r³, dg = −3/r⁵ (Plummer: of the softened r; the spline: its
    // polynomials inside h).
    let rinv = 1.0 / Float::sqrt(dist2 + eps2);
    let (w, g, dg) = match spline {
        Some((h, h_inv)) => crate::kernel::spline(dist2, h, h_inv),
        None => (rinv, rinv * rinv * rinv, -3.0 * rinv.powi(5)),
    };
    Some(PairTerms { w, g, dg, rinv, dist2 })
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
