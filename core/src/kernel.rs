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

use crate::{Field, Jerk, Params, Particle, Real, Softening, Tidal, Velocity, rsqrt};

/// `1/r` for `r² = |d|² + ε²`; zero when `masked` and `r²` is below the smallest normal
/// number (zero, or a separation so small that 1/r³ would overflow anyway: treated as
/// coincident, the same in every executor).
#[inline(always)]
pub fn inverse_distance<T: Real>(r2: T, masked: bool) -> T {
    if masked && r2 < T::min_positive_value() { T::zero() } else { rsqrt::exact(r2) }
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

/// The cubic spline kernel (see [`Softening::Spline`] for the formulas) at `r2 = |d|²`
/// (no ε added) for support `h` with `h_inv = 1/h` given (so every caller rounds alike):
/// returns `(w, g, dg)` with `phi −= m w`, `a += m g d` and `jerk += m (g dv + dg (d·dv) d)`.
/// Beyond `h`: `w = 1/r`, `g = 1/r³`, `dg = −3/r⁵`; at `r = 0`: `w = 14/5 h⁻¹ = 1/ε`.
///
/// ```
/// use nbody_core::kernel::spline;
/// let (w, g, _) = spline(4.0f64, 1.0, 1.0); // r = 2 beyond h = 1: Newtonian
/// assert_eq!((w, g), (0.5, 0.125));
/// let (w0, _, _) = spline(0.0f64, 2.8, 1.0 / 2.8); // eps = 1: the potential at r = 0 is 1/eps
/// assert!((w0 - 1.0).abs() < 1e-15);
/// ```
#[inline(always)]
pub fn spline<T: Real>(r2: T, h: T, h_inv: T) -> (T, T, T) {
    let c = T::from_f64;
    if r2 >= h * h {
        let rinv = rsqrt::exact(r2);
        let rinv2 = rinv * rinv;
        return (rinv, rinv2 * rinv, c(-3.0) * rinv2 * rinv2 * rinv);
    }
    let u = r2.sqrt() * h_inv;
    let (u2, h3) = (u * u, h_inv * h_inv * h_inv);
    let h5 = h3 * h_inv * h_inv;
    if u < c(0.5) {
        let w = c(14.0 / 5.0) - u2 * (c(16.0 / 3.0) + u2 * (c(32.0 / 5.0) * u - c(48.0 / 5.0)));
        let g = c(32.0 / 3.0) + u2 * (c(32.0) * u - c(192.0 / 5.0));
        (w * h_inv, g * h3, (c(96.0) * u - c(384.0 / 5.0)) * h5)
    } else {
        // In q = 1 − u, so that nothing cancels near u = 1 (Gadget's polynomials in u lose
        // fifty roundings there): the enclosed mass fraction m(u) = 1 − q⁴ (16 − 128/5 q
        // + 32/3 q²), g = m / u³, w = (1 + 16/15 q⁵ (2 q − 3)) / u, and
        // dg = (64 q³ / u − 3 m / u⁴) / u.
        let q = T::one() - u;
        let q2 = q * q;
        let q4 = q2 * q2;
        let m = T::one() - q4 * (c(16.0) - c(128.0 / 5.0) * q + c(32.0 / 3.0) * q2);
        let u_inv = T::one() / u;
        let u3_inv = u_inv * u_inv * u_inv;
        let w = (T::one() + c(16.0 / 15.0) * q4 * q * (c(2.0) * q - c(3.0))) * u_inv;
        let dg = (c(64.0) * q2 * q * u_inv - c(3.0) * m * u3_inv * u_inv) * u_inv;
        (w * h_inv, m * u3_inv * h3, dg * h5)
    }
}

/// A call's softened kernel with its constants worked out once: what the scalar paths
/// (the reference executor, default hooks, the oracle's twin in `T`) evaluate per pair.
///
/// ```
/// use nbody_core::kernel::Softened;
/// use nbody_core::{Field, Params, Particle, Softening};
/// let k = Softened::of(&Params::softened(0.5f64).with_softening(Softening::Spline));
/// let mut acc = Field::zero();
/// k.pair([0.0; 3], &Particle::new(3.0, 0.0, 0.0, 9.0), &mut acc); // beyond h = 1.4
/// assert_eq!(acc.ax, 1.0);
/// assert_eq!(k.self_potential(1.0), 2.0); // 1 / eps
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Softened<T> {
    /// Plummer with `eps2 = ε²`; `masked` for ε² below the smallest normal number.
    Plummer {
        /// ε².
        eps2: T,
        /// Zero-distance pairs contribute nothing.
        masked: bool,
    },
    /// The spline with support `h` and `h_inv = 1/h` (ε > 0).
    Spline {
        /// The support `2.8 ε`.
        h: T,
        /// `1/h`.
        h_inv: T,
    },
}

impl<T: Real> Softened<T> {
    /// The kernel of `params` (a spline with ε = 0 is Newtonian: the masked Plummer).
    pub fn of(params: &Params<T>) -> Self {
        let masked = Softened::Plummer { eps2: params.eps2(), masked: params.masked() };
        match params.softening {
            Softening::Plummer => masked,
            Softening::Spline if params.masked() => masked,
            Softening::Spline => {
                let h = params.spline_support();
                Softened::Spline { h, h_inv: T::one() / h }
            }
        }
    }

    /// The family of kernel that computes this one (a spline that softens nothing is
    /// masked Plummer): what executors select their compiled kernels by.
    ///
    /// ```
    /// use nbody_core::kernel::Softened;
    /// use nbody_core::{Params, Softening};
    /// let spline = Params::softened(0.1f64).with_softening(Softening::Spline);
    /// assert_eq!(Softened::of(&spline).softening(), Softening::Spline);
    /// assert_eq!(Softened::of(&Params::softened(0.0f64).with_softening(Softening::Spline)).softening(), Softening::Plummer);
    /// ```
    pub fn softening(&self) -> Softening {
        match self {
            Softened::Plummer { .. } => Softening::Plummer,
            Softened::Spline { .. } => Softening::Spline,
        }
    }

    /// The one scalar compiled kernels take: ε² for Plummer, the support `h` for the
    /// spline.
    ///
    /// ```
    /// use nbody_core::kernel::Softened;
    /// assert_eq!(Softened::Plummer { eps2: 0.25f64, masked: false }.argument(), 0.25);
    /// assert_eq!(Softened::Spline { h: 2.8f64, h_inv: 1.0 / 2.8 }.argument(), 2.8);
    /// ```
    pub fn argument(&self) -> T {
        match *self {
            Softened::Plummer { eps2, .. } => eps2,
            Softened::Spline { h, .. } => h,
        }
    }

    /// The kernel between two particles of softening lengths `eps_i` and `eps_j` (the
    /// symmetrised rule): Plummer with `ε² = (ε_i² + ε_j²) / 2`, masked below the
    /// smallest normal number; the spline with `h = 2.8 max(ε_i, ε_j)`, as Gadget takes
    /// the larger support (Newtonian, masked, when both are zero).
    ///
    /// ```
    /// use nbody_core::kernel::Softened;
    /// use nbody_core::Softening;
    /// assert_eq!(Softened::between(Softening::Plummer, 1.0f64, 3.0), Softened::Plummer { eps2: 5.0, masked: false });
    /// assert_eq!(Softened::between(Softening::Spline, 1.0f64, 0.5), Softened::Spline { h: 2.8, h_inv: 1.0 / 2.8 });
    /// ```
    #[inline]
    pub fn between(softening: Softening, eps_i: T, eps_j: T) -> Self {
        let half = T::from_f64(0.5);
        match softening {
            Softening::Plummer => {
                let eps2 = half * eps_i * eps_i + half * eps_j * eps_j;
                Softened::Plummer { eps2, masked: eps2 < T::min_positive_value() }
            }
            Softening::Spline => {
                let eps = if eps_i > eps_j { eps_i } else { eps_j };
                if eps * eps < T::min_positive_value() {
                    return Softened::Plummer { eps2: T::zero(), masked: true };
                }
                let h = T::from_f64(crate::SPLINE_SUPPORT) * eps;
                Softened::Spline { h, h_inv: T::one() / h }
            }
        }
    }

    /// The kernel a particle applies to itself, whose potential term executors remove
    /// for targets that are also sources: with its own length `eps` under the
    /// symmetrised rule ([`Softened::between`]), or `params`' one softening.
    ///
    /// ```
    /// use nbody_core::kernel::Softened;
    /// use nbody_core::Params;
    /// let p = Params::softened(0.5f64);
    /// assert_eq!(Softened::own(&p, Some(2.0)).self_potential(1.0), 0.5);
    /// assert_eq!(Softened::own(&p, None).self_potential(1.0), 2.0);
    /// ```
    #[inline]
    pub fn own(params: &Params<T>, eps: Option<T>) -> Self {
        match eps {
            Some(e) => Softened::between(params.softening, e, e),
            None => Softened::of(params),
        }
    }

    /// Adds source `src`'s pull (without G) at `xi` into `acc`; returns `(d, m g, m dg)`
    /// for the jerk (see [`spline`]).
    #[inline(always)]
    pub fn pair(&self, xi: [T; 3], src: &Particle<T>, acc: &mut Field<T>) -> ([T; 3], T, T) {
        match *self {
            Softened::Plummer { eps2, masked } => {
                let (d, rinv, m_rinv3) = pair(xi, src, eps2, masked, acc);
                (d, m_rinv3, T::from_f64(-3.0) * m_rinv3 * rinv * rinv)
            }
            Softened::Spline { h, h_inv } => {
                let d = [src.x - xi[0], src.y - xi[1], src.z - xi[2]];
                let (w, g, dg) = spline(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], h, h_inv);
                let mg = src.m * g;
                acc.ax = acc.ax + d[0] * mg;
                acc.ay = acc.ay + d[1] * mg;
                acc.az = acc.az + d[2] * mg;
                acc.phi = acc.phi - src.m * w;
                (d, mg, src.m * dg)
            }
        }
    }

    /// [`Softened::pair`] plus the jerk of a target moving with `vi` and a source with `vj`.
    #[inline(always)]
    pub fn pair_jerk(
        &self,
        (xi, vi): ([T; 3], [T; 3]),
        src: &Particle<T>,
        vj: &Velocity<T>,
        acc: &mut Field<T>,
        jerk: &mut Jerk<T>,
    ) {
        match *self {
            // The Plummer jerk as every executor writes it (same roundings).
            Softened::Plummer { eps2, masked } => return pair_jerk(xi, vi, src, vj, eps2, masked, acc, jerk),
            Softened::Spline { .. } => {}
        }
        let (d, mg, mdg) = self.pair(xi, src, acc);
        let dv = [vj.vx - vi[0], vj.vy - vi[1], vj.vz - vi[2]];
        let radial = mdg * (d[0] * dv[0] + d[1] * dv[1] + d[2] * dv[2]);
        jerk.jx = jerk.jx + mg * dv[0] + radial * d[0];
        jerk.jy = jerk.jy + mg * dv[1] + radial * d[1];
        jerk.jz = jerk.jz + mg * dv[2] + radial * d[2];
    }

    /// The pair's kernel terms without the mass at squared separation `d2 = |d|²`:
    /// `(w, g, dg)` with `phi −= m w`, `a += m g d` and `∂(g d)/∂d = g I + dg d dᵀ` (see
    /// [`spline`]); all zero for a masked pair. What the gradient passes take, where the
    /// mass is not the pair's factor.
    ///
    /// ```
    /// use nbody_core::kernel::Softened;
    /// let k = Softened::Plummer { eps2: 0.0f64, masked: true };
    /// assert_eq!(k.terms(4.0), (0.5, 0.125, -3.0 / 32.0));
    /// assert_eq!(k.terms(0.0), (0.0, 0.0, 0.0));
    /// ```
    #[inline(always)]
    pub fn terms(&self, d2: T) -> (T, T, T) {
        match *self {
            Softened::Plummer { eps2, masked } => {
                let rinv = inverse_distance(eps2 + d2, masked);
                let rinv2 = rinv * rinv;
                (rinv, rinv2 * rinv, T::from_f64(-3.0) * rinv2 * rinv2 * rinv)
            }
            Softened::Spline { h, h_inv } => spline(d2, h, h_inv),
        }
    }

    /// [`Softened::pair`] plus the pair's tidal term: `tidal −= m (g I + dg d dᵀ)`.
    #[inline(always)]
    pub fn pair_tidal(&self, xi: [T; 3], src: &Particle<T>, acc: &mut Field<T>, tidal: &mut Tidal<T>) {
        let (d, mg, mdg) = self.pair(xi, src, acc);
        add_tidal_term(tidal, d, mg, mdg);
    }

    /// What the kernel adds to the potential of a particle of mass `m` from itself
    /// (without G and sign), removed for targets that are also sources: `m / ε` for
    /// both kernels, in each one's own arithmetic; 0 when masked.
    #[inline(always)]
    pub fn self_potential(&self, m: T) -> T {
        match *self {
            Softened::Plummer { masked: true, .. } => T::zero(),
            Softened::Plummer { eps2, .. } => self_potential(m, eps2),
            Softened::Spline { h, h_inv } => m * spline(T::zero(), h, h_inv).0,
        }
    }
}

/// `tidal −= mg I + mdg d dᵀ`: one pair's tidal term, given its mass-weighted `g` and
/// `dg`.
#[inline(always)]
pub fn add_tidal_term<T: Real>(tidal: &mut Tidal<T>, d: [T; 3], mg: T, mdg: T) {
    let (ex, ey, ez) = (mdg * d[0], mdg * d[1], mdg * d[2]);
    tidal.xx = tidal.xx - (mg + ex * d[0]);
    tidal.xy = tidal.xy - ex * d[1];
    tidal.xz = tidal.xz - ex * d[2];
    tidal.yy = tidal.yy - (mg + ey * d[1]);
    tidal.yz = tidal.yz - ey * d[2];
    tidal.zz = tidal.zz - (mg + ez * d[2]);
}

/// Adds `G · sums` into `out` lane by lane.
#[inline(always)]
pub fn finish_tidal<T: Real>(g: T, sums: &Tidal<T>, out: &mut Tidal<T>) {
    let (s, o) = (sums.lanes(), out.lanes());
    *out = Tidal::new(core::array::from_fn(|k| o[k] + g * s[k]));
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

#[cfg(test)]
mod tests {
    use super::spline;

    /// Gadget's polynomials in u, as its source writes them: the q-forms agree, and the
    /// kernel is continuous and Newtonian at u = 1 and continuous at u = 1/2.
    #[test]
    fn spline_matches_gadgets_polynomials() {
        let (h, h_inv) = (1.0f64, 1.0);
        for k in 0..=200 {
            let u = k as f64 / 200.0;
            let (w, g, dg) = spline(u * u, h, h_inv);
            let (gw, gg) = if u < 0.5 {
                (-2.8 + u * u * (5.333333333333 + u * u * (6.4 * u - 9.6)), 10.666666666667 + u * u * (32.0 * u - 38.4))
            } else {
                (
                    -3.2 + 0.066666666667 / u
                        + u * u * (10.666666666667 + u * (-16.0 + u * (9.6 - 2.133333333333 * u))),
                    21.333333333333 - 48.0 * u + 38.4 * u * u
                        - 10.666666666667 * u * u * u
                        - 0.066666666667 / (u * u * u),
                )
            };
            assert!((w + gw).abs() < 1e-10, "u {u}: w {w} against {}", -gw);
            if u > 0.0 {
                assert!((g - gg).abs() < 1e-9 * gg.abs().max(1.0), "u {u}: g {g} against {gg}");
                // dg/r = (dg/du) / (u h⁵): against a centred difference of g.
                let e = 1e-6;
                let slope = (spline((u + e) * (u + e), h, h_inv).1 - spline((u - e) * (u - e), h, h_inv).1) / (2.0 * e);
                if (u - 0.5).abs() > 2e-6 && (u - 1.0).abs() > 2e-6 {
                    assert!(
                        (dg * u - slope).abs() < 1e-5 * slope.abs().max(1.0),
                        "u {u}: dg {dg} against {}",
                        slope / u
                    );
                }
            }
        }
        let (w, g, dg) = spline(1.0f64, 1.0, 1.0);
        assert!((w - 1.0).abs() < 1e-15 && (g - 1.0).abs() < 1e-15 && (dg + 3.0).abs() < 1e-13);
        let below = spline(0.25 - 1e-12f64, 1.0, 1.0);
        let above = spline(0.25 + 1e-12f64, 1.0, 1.0);
        assert!(
            (below.0 - above.0).abs() < 1e-9 && (below.1 - above.1).abs() < 1e-9 && (below.2 - above.2).abs() < 1e-8
        );
    }
}
