//! The vector-Jacobian product's and the tidal tensor's pair terms and finishing steps,
//! written once for the plain loops of [`crate::Executor`]'s default hooks and for every
//! executor's own passes, so that each rounds alike.
//!
//! The product has two passes. Over the sources of each target: its field and tidal
//! tensor `T_i`, then `∂L/∂x_i = G (T_i c_i − h_i a_i)` ([`add_target_gradient`]). Over the
//! targets of each source (the targets' cotangents taking the sources' part):
//! `∂L/∂x_j = G m_j Σ_i (g c_i + dg (d·c_i) d + h_i g d)` and `∂L/∂m_j = G Σ_i (g d·c_i −
//! h_i w)` ([`pair_source_gradient`], [`add_source_gradient`]). A particle that is both
//! has its own pair summed and then subtracted, as the potential's `m / ε` is.
//!
//! ```
//! use nbody_core::gradient::pair_source_gradient;
//! use nbody_core::kernel::Softened;
//! // A unit cotangent along x at a target 2 to the source's left: the mass gradient is
//! // g d·c = 1/8 · 2.
//! let k = Softened::Plummer { eps2: 0.0f64, masked: true };
//! let (mut s, mut m) = ([0.0; 3], 0.0);
//! pair_source_gradient(&k, [2.0, 0.0, 0.0], [0.0; 3], [1.0, 0.0, 0.0], 0.0, &mut s, &mut m);
//! assert_eq!(m, 0.25);
//! assert_eq!(s[0], 0.125 - 3.0 / 32.0 * 4.0); // g − 3 d² / r⁵
//! ```

use crate::kernel::Softened;
use crate::{Field, Params, Particle, Real, Tidal};

/// The cotangent on a target's potential the call reads: `c.phi` when the call computes
/// the potential, else zero (the potential is then not an output).
#[inline(always)]
pub fn potential_cotangent<T: Real>(params: &Params<T>, c: &Field<T>) -> T {
    if params.potential { c.phi } else { T::zero() }
}

/// Target i's field and tidal sums over `sources` (without G), its own pair taken out:
/// the targets' pass of the default loops.
pub fn target_sums<T: Real>(
    params: &Params<T>,
    k: &Softened<T>,
    target: &Particle<T>,
    sources: &[Particle<T>],
    i: usize,
) -> (Field<T>, Tidal<T>) {
    let (mut sums, mut tidal) = (Field::zero(), Tidal::zero());
    for s in sources {
        k.pair_tidal(target.position(), s, &mut sums, &mut tidal);
    }
    subtract_self_tidal(params, k, sources, i, &mut sums, &mut tidal);
    (sums, tidal)
}

/// Removes a target's own pair from its sums (when it is a source): the potential's
/// `m / ε` and the tidal tensor's `−m g(0) I` (the pair's acceleration is zero).
pub fn subtract_self_tidal<T: Real>(
    params: &Params<T>,
    k: &Softened<T>,
    sources: &[Particle<T>],
    i: usize,
    sums: &mut Field<T>,
    tidal: &mut Tidal<T>,
) {
    if let Some(j) = params.overlap.source_of(i) {
        let m = sources[j].m;
        sums.phi = sums.phi + k.self_potential(m);
        let mg0 = m * k.terms(T::zero()).1;
        tidal.xx = tidal.xx + mg0;
        tidal.yy = tidal.yy + mg0;
        tidal.zz = tidal.zz + mg0;
    }
}

/// Adds `G (T c − h a)` into a target's gradient, from its sums without G (`h` only when
/// the call computes the potential).
#[inline(always)]
pub fn add_target_gradient<T: Real>(
    params: &Params<T>,
    sums: &Field<T>,
    tidal: &Tidal<T>,
    c: &Field<T>,
    grad: &mut Particle<T>,
) {
    let tc = tidal.apply(c.acceleration());
    let h = potential_cotangent(params, c);
    let a = sums.acceleration();
    grad.x = grad.x + params.g * (tc[0] - h * a[0]);
    grad.y = grad.y + params.g * (tc[1] - h * a[1]);
    grad.z = grad.z + params.g * (tc[2] - h * a[2]);
}

/// One (target, source) pair's terms of a source's gradient sums, without G and the
/// source's mass: `s += g c + dg (d·c) d + h g d` and `m += g d·c − h w`, with
/// `d = x_j − x_i`. The targets' cotangents play the sources' part here.
#[inline(always)]
pub fn pair_source_gradient<T: Real>(
    k: &Softened<T>,
    xj: [T; 3],
    xi: [T; 3],
    c: [T; 3],
    h: T,
    s: &mut [T; 3],
    m: &mut T,
) {
    let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
    let (w, g, dg) = k.terms(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    let dc = d[0] * c[0] + d[1] * c[1] + d[2] * c[2];
    let (radial, hg) = (dg * dc, h * g);
    for a in 0..3 {
        s[a] = s[a] + (g * c[a] + (radial + hg) * d[a]);
    }
    *m = *m + (g * dc - h * w);
}

/// Removes a source's own pair (as a target, at zero separation) from its gradient sums:
/// `s −= g(0) c` and `m += h w(0)`.
#[inline(always)]
pub fn subtract_self_source<T: Real>(params: &Params<T>, k: &Softened<T>, c: &Field<T>, s: &mut [T; 3], m: &mut T) {
    let (w0, g0, _) = k.terms(T::zero());
    let h = potential_cotangent(params, c);
    let c = c.acceleration();
    for a in 0..3 {
        s[a] = s[a] - g0 * c[a];
    }
    *m = *m + h * w0;
}

/// Adds `G m_j s` and `G m` into a source's gradient.
#[inline(always)]
pub fn add_source_gradient<T: Real>(params: &Params<T>, mass: T, s: &[T; 3], m: T, grad: &mut Particle<T>) {
    let gm = params.g * mass;
    grad.x = grad.x + gm * s[0];
    grad.y = grad.y + gm * s[1];
    grad.z = grad.z + gm * s[2];
    grad.m = grad.m + params.g * m;
}

/// The sums of [`pair_fused`], in its order: `S0, V (3), B (3), M`.
pub type FusedSums<T> = [T; 8];

/// One pair (i, j) of a system on itself for particle i, where the product's three parts
/// come from one pass over j (particle i the target of its own sums and the source of
/// everyone else's): with `d = x_j − x_i`,
///
/// ```text
/// S0 += m_j g                     V += (m_j dg (d·c_i) + h_i m_j g) d
/// B  += g c_j + (dg (d·c_j) − h_j g) d        M −= g (d·c_j) + h_j w
/// ```
///
/// after which ([`add_fused`]) i's target part is `−G (S0 c_i + V)`, its source part
/// `G m_i B` and its mass gradient `G M`. `h_i`, `h_j` are zero when the call leaves the
/// potential alone.
///
/// ```
/// use nbody_core::gradient::pair_fused;
/// use nbody_core::kernel::Softened;
/// use nbody_core::Particle;
/// let k = Softened::Plummer { eps2: 0.0f64, masked: true };
/// let mut s = [0.0; 8];
/// // Particle j (mass 1, 2 along x) with a unit cotangent along x on j alone.
/// pair_fused(&k, [0.0; 3], [0.0; 3], 0.0, &Particle::new(2.0, 0.0, 0.0, 1.0), [1.0, 0.0, 0.0], 0.0, &mut s);
/// // i's mass gradient: a_j = m_i / r² towards i, along −x, so c_j · a_j = −m_i / 4.
/// assert_eq!(s[7], -0.25);
/// ```
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn pair_fused<T: Real>(
    k: &Softened<T>,
    xi: [T; 3],
    ci: [T; 3],
    hi: T,
    pj: &Particle<T>,
    cj: [T; 3],
    hj: T,
    s: &mut FusedSums<T>,
) {
    let d = [pj.x - xi[0], pj.y - xi[1], pj.z - xi[2]];
    let (w, g, dg) = k.terms(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    let dci = d[0] * ci[0] + d[1] * ci[1] + d[2] * ci[2];
    let dcj = d[0] * cj[0] + d[1] * cj[1] + d[2] * cj[2];
    let mg = pj.m * g;
    let cv = pj.m * dg * dci + hi * mg;
    let cb = dg * dcj - hj * g;
    s[0] = s[0] + mg;
    for a in 0..3 {
        s[1 + a] = s[1 + a] + cv * d[a];
        s[4 + a] = s[4 + a] + (g * cj[a] + cb * d[a]);
    }
    s[7] = s[7] - (g * dcj + hj * w);
}

/// Takes particle i's own pair out of its [`pair_fused`] sums (summed at `d = 0`:
/// `m_i g(0)` in S0, `g(0) c_i` in B, `−h_i w(0)` in M) and adds its target part into
/// `target_grad` and its source part and mass gradient into `source_grad`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn add_fused<T: Real>(
    params: &Params<T>,
    k: &Softened<T>,
    p: &Particle<T>,
    ci: [T; 3],
    hi: T,
    s: FusedSums<T>,
    target_grad: &mut Particle<T>,
    source_grad: &mut Particle<T>,
) {
    let (w0, g0, _) = k.terms(T::zero());
    let s0 = s[0] - p.m * g0;
    let b = [s[4] - g0 * ci[0], s[5] - g0 * ci[1], s[6] - g0 * ci[2]];
    let m = s[7] + hi * w0;
    let g = params.g;
    target_grad.x = target_grad.x - g * (s0 * ci[0] + s[1]);
    target_grad.y = target_grad.y - g * (s0 * ci[1] + s[2]);
    target_grad.z = target_grad.z - g * (s0 * ci[2] + s[3]);
    add_source_gradient(params, p.m, &b, m, source_grad);
}

/// The sums of [`pair_whole`]: particle i's whole position gradient `P` (3) and its
/// mass gradient `M`, without G.
pub type WholeSums<T> = [T; 4];

/// One pair (i, j ≠ i) of a system on itself for particle i's *whole* gradient (its parts
/// as a target and as a source together): with `d = x_j − x_i`, `H = m_i c_j − m_j c_i`
/// and `e = h_i m_j + h_j m_i`,
///
/// ```text
/// P += g H + (dg (d·H) − g e) d        M −= g (d·c_j) + h_j w
/// ```
///
/// Each term is antisymmetric in (i, j) and small where the cotangents vary slowly, so
/// the sums do not cancel the large target and source parts against each other as
/// [`pair_fused`]'s do (and there is no own pair to take out). The particle's gradient is
/// then `G P` and `G M` ([`add_whole`]).
///
/// ```
/// use nbody_core::gradient::pair_whole;
/// use nbody_core::kernel::Softened;
/// use nbody_core::Particle;
/// let k = Softened::Plummer { eps2: 0.0f64, masked: true };
/// let (pi, pj) = (Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0));
/// let (mut si, mut sj) = ([0.0; 4], [0.0; 4]);
/// pair_whole(&k, &pi, [1.0, 0.0, 0.0], 0.0, &pj, [0.0; 3], 0.0, &mut si);
/// pair_whole(&k, &pj, [0.0; 3], 0.0, &pi, [1.0, 0.0, 0.0], 0.0, &mut sj);
/// // c · a_i with a_i = m_j / (x_j − x_i)²: d/dx_i = 2/8, and the pair's terms cancel.
/// assert_eq!((si[0], sj[0]), (0.25, -0.25));
/// ```
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn pair_whole<T: Real>(
    k: &Softened<T>,
    pi: &Particle<T>,
    ci: [T; 3],
    hi: T,
    pj: &Particle<T>,
    cj: [T; 3],
    hj: T,
    s: &mut WholeSums<T>,
) {
    let d = [pj.x - pi.x, pj.y - pi.y, pj.z - pi.z];
    let (w, g, dg) = k.terms(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    let dci = d[0] * ci[0] + d[1] * ci[1] + d[2] * ci[2];
    let dcj = d[0] * cj[0] + d[1] * cj[1] + d[2] * cj[2];
    let sd = dg * (pi.m * dcj - pj.m * dci) - g * (hi * pj.m + hj * pi.m);
    for a in 0..3 {
        s[a] = s[a] + (g * (pi.m * cj[a] - pj.m * ci[a]) + sd * d[a]);
    }
    s[3] = s[3] - (g * dcj + hj * w);
}

/// Adds [`pair_whole`]'s sums, times G, into particle i's gradient.
#[inline(always)]
pub fn add_whole<T: Real>(params: &Params<T>, s: &WholeSums<T>, grad: &mut Particle<T>) {
    let g = params.g;
    *grad = Particle::new(grad.x + g * s[0], grad.y + g * s[1], grad.z + g * s[2], grad.m + g * s[3]);
}
