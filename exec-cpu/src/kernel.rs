//! The tiled kernels, generic over the vector backend.
//!
//! Lanes are targets: `U` vectors of targets (`U * LANES` targets, a *block*) stay in
//! registers while every source of a tile is broadcast once and serves all of them
//! (unroll-and-jam). Sources are SoA tiles sized for L1; partial sums live in a small
//! SoA accumulator per block between tiles.

use crate::simd::Simd;
use nbody_core::Real;
use num_traits::Float;

/// What one part's neighbour scan found: per target of the part its nearest source
/// (`(r², index)`, index `u32::MAX` if none) and the `(target in part, source)` pairs
/// within the radius, per target in increasing source order.
#[derive(Default, Debug)]
pub struct Found<T> {
    pub nearest: Vec<(T, u32)>,
    pub pairs: Vec<(u32, u32)>,
}

/// A part's share of a neighbour search.
#[derive(Debug)]
pub struct PartSearch<'a, T> {
    /// Index of the part's first source in the call's sources.
    pub source_start: usize,
    pub own: &'a [u32],
    pub h2: &'a [T],
    pub found: &'a mut Found<T>,
}

/// Sources per tile. Each tile's sums start from zero and are added into f64 totals:
/// summation error then grows with sqrt(512) roundings of the working precision instead
/// of sqrt(N) (at N = 65,536 that is what keeps f32 within 2e-6), and a tile (8 KiB of
/// f32 SoA) stays in L1 while every target block of a thread uses it.
pub(crate) const TILE: usize = 512;

/// SoA sources (positions, masses, and for the jerk kernel velocities).
#[derive(Clone, Copy, Debug)]
pub struct SourcesSoa<'a, T> {
    pub x: &'a [T],
    pub y: &'a [T],
    pub z: &'a [T],
    pub m: &'a [T],
    pub vx: &'a [T],
    pub vy: &'a [T],
    pub vz: &'a [T],
    /// Per-particle softening, negated (see [`Block::eps`]); empty unless the call has
    /// a length per particle.
    pub e: &'a [T],
}

impl<'a, T> SourcesSoa<'a, T> {
    /// Positions and masses only (no velocities, no softening per particle).
    pub(crate) fn positions(pos: [&'a [T]; 3], m: &'a [T]) -> Self {
        let [x, y, z] = pos;
        Self { x, y, z, m, vx: &[], vy: &[], vz: &[], e: &[] }
    }

    pub(crate) fn len(&self) -> usize {
        self.x.len()
    }

    /// Sources `a..b` (velocities only if present).
    pub(crate) fn slice(&self, a: usize, b: usize) -> Self {
        let v = |s: &'a [T]| if s.is_empty() { s } else { &s[a..b] };
        Self {
            x: &self.x[a..b],
            y: &self.y[a..b],
            z: &self.z[a..b],
            m: &self.m[a..b],
            vx: v(self.vx),
            vy: v(self.vy),
            vz: v(self.vz),
            e: v(self.e),
        }
    }
}

/// A block's targets and running sums, SoA, `U * LANES` long: x, y, z, then
/// ax, ay, az, phi (and vx, vy, vz, jx, jy, jz for the jerk kernel).
pub(crate) struct Block<'a, T> {
    pub pos: [&'a [T]; 3],
    /// Per-particle softening (empty unless the call has one), as the kernels combine
    /// it with the sources' negated values: Plummer `ε_i²/2` against `−ε_j²/2`, so
    /// `ε_ij² = a_i − c_j`; the spline `−h_i` against `−h_j`, so `−h_ij = min(a_i, c_j)`.
    pub eps: &'a [T],
    pub vel: [&'a [T]; 3],
    pub acc: [&'a mut [T]; 4],
    pub jerk: [&'a mut [T]; 3],
}

impl<'a, T> Block<'a, T> {
    /// Positions and sums only (no velocities, no softening per particle, no jerk).
    pub(crate) fn plain(pos: [&'a [T]; 3], acc: [&'a mut [T]; 4]) -> Self {
        Self { pos, eps: &[], vel: [&[], &[], &[]], acc, jerk: [&mut [], &mut [], &mut []] }
    }
}

/// The spline's lanes: for every lane of `r2` inside its support (the lane of `h`), the weights
/// `(m w / PHI_SCALE, m g / ACC_SCALE)` (`nbody_core::kernel::spline`, in scalar code:
/// pairs that close are rare in any system the spline is used for, so the vector path
/// pays one compare per vector and this runs seldom).
///
/// # Safety
/// The backend's instructions are available.
#[inline(always)]
unsafe fn spline_weights<S: Simd>(r2: S::V, m: S::T, h: S::V, w: &mut S::V, g: &mut S::V) {
    // SAFETY: the caller's contract; the arrays hold 16 >= LANES values.
    unsafe {
        let (mut r, mut wa, mut ga) = ([S::T::from_f64(0.0); 16], [S::T::from_f64(0.0); 16], [S::T::from_f64(0.0); 16]);
        let mut hs = [S::T::from_f64(0.0); 16];
        S::store(r.as_mut_ptr(), r2);
        S::store(hs.as_mut_ptr(), h);
        S::store(wa.as_mut_ptr(), *w);
        S::store(ga.as_mut_ptr(), *g);
        let (phi_scale, acc_scale) = (S::T::from_f64(1.0 / S::PHI_SCALE), S::T::from_f64(1.0 / S::ACC_SCALE));
        for l in 0..S::LANES {
            let h = hs[l];
            if r[l] < h * h {
                let (sw, sg, _) = nbody_core::kernel::spline(r[l], h, S::T::from_f64(1.0) / h);
                wa[l] = m * sw * phi_scale;
                ga[l] = m * sg * acc_scale;
            } else if r[l] < <S::T as Float>::min_positive_value() {
                // Two unsoftened particles at one point (h = 0): masked, as in the pair.
                wa[l] = S::T::from_f64(0.0);
                ga[l] = S::T::from_f64(0.0);
            }
        }
        *w = S::load(wa.as_ptr());
        *g = S::load(ga.as_ptr());
    }
}

/// The squares of a block's pairs' rounding errors, up to a constant factor (the mixed
/// executor's f32 pairs near a block, see `nbody_cpu::mixed`): each pair adds
/// `(m / r³)² (r² + base)` to its target's lane of `sums` (added to, unlike the block's
/// sums, which are overwritten).
pub(crate) struct ErrorEstimate<'a, T> {
    pub sums: &'a mut [T],
    pub base: T,
}

/// Writes the pull of every source in `src` on a block of `U * S::LANES` targets into
/// the block's sums (overwriting them). `phi` accumulates `-Σ m / r` when `POT`; `MASK`
/// zeroes pairs at zero distance. With `SPLINE` the cubic spline: `eps2` is then its
/// support `h`, separations are not softened, and lanes inside `h` take the spline's
/// weights.
///
/// With `EACH` a softening per particle (see [`Block::eps`]): the block's `eps` and the
/// sources' `e` lanes are read instead of `eps2`.
///
/// With `RUN > 0` each run of `RUN` sources is summed apart and then added into the
/// totals (two-level sums: each total rounds about n / RUN times instead of n times, for
/// one subtraction per run); `RUN = 0` sums all sources in one run.
///
/// With an `estimate`, each pair also adds its term (see [`ErrorEstimate`]). Without
/// one the inlined kernel keeps a test per pair that always goes one way, or none where
/// the caller passes `None` literally.
///
/// # Safety
/// The backend's instructions must be available (see `simd`); every slice of `blk`
/// holds `U * S::LANES` values; with `EACH`, `blk.eps` holds `U * S::LANES` values and
/// `src.e` one per source.
#[inline(always)]
pub(crate) unsafe fn accumulate_split<
    S: Simd,
    const U: usize,
    const POT: bool,
    const MASK: bool,
    const SPLINE: bool,
    const EACH: bool,
    const RUN: usize,
>(
    blk: &mut Block<'_, S::T>,
    src: &SourcesSoa<'_, S::T>,
    eps2: S::T,
    estimate: Option<ErrorEstimate<'_, S::T>>,
) {
    // SAFETY: the caller's contract: this CPU has the backend's features, and the lengths are as above.
    unsafe {
        let l = S::LANES;
        let load = |s: &[S::T], u: usize| S::load(s.as_ptr().add(u * l));
        let xi: [S::V; U] = core::array::from_fn(|u| load(blk.pos[0], u));
        let yi: [S::V; U] = core::array::from_fn(|u| load(blk.pos[1], u));
        let zi: [S::V; U] = core::array::from_fn(|u| load(blk.pos[2], u));
        let zero = S::splat(S::T::from_f64(0.0));
        let (mut ax, mut ay, mut az, mut phi) = ([zero; U], [zero; U], [zero; U], [zero; U]);
        // The spline: `eps2` is its support h; no softening is added to r².
        let h = S::splat(eps2);
        let (e2, h2) = if SPLINE || EACH { (zero, S::mul(h, h)) } else { (S::splat(eps2), zero) };
        let ei: [S::V; U] = core::array::from_fn(|u| if EACH { load(blk.eps, u) } else { zero });
        // The per-particle spline's cheap test: a pair is inside only if r² is below the
        // square of the larger of the block's largest support and the source's (at least
        // the smallest normal number, so coincident unsoftened pairs take the exact path).
        let neg_hmax = if SPLINE && EACH {
            blk.eps.iter().fold(S::T::from_f64(0.0), |a, &b| if b < a { b } else { a })
        } else {
            S::T::from_f64(0.0)
        };
        let se = src.e.as_ptr();
        let n = src.len();
        let (sx, sy, sz, sm) = (src.x.as_ptr(), src.y.as_ptr(), src.z.as_ptr(), src.m.as_ptr());
        // With RUN > 0, two-level sums: each run of RUN sources is summed on its own
        // (negated, so that the backends' fnma and sub do it), then added to the totals.
        // RUN = 0 is one run, rounded exactly as a single sum (negation is exact).
        let run = if RUN == 0 { n.max(1) } else { RUN };
        let one = S::splat(S::T::from_f64(1.0));
        let neg_base = estimate.as_ref().map_or(zero, |e| S::splat(-e.base));
        let mut err = [zero; U];
        for j0 in (0..n).step_by(run) {
            let (mut cx, mut cy, mut cz, mut cphi) = ([zero; U], [zero; U], [zero; U], [zero; U]);
            for j in j0..n.min(j0 + run) {
                let (xj, yj, zj) = (S::splat(*sx.add(j)), S::splat(*sy.add(j)), S::splat(*sz.add(j)));
                let mj = S::splat(*sm.add(j));
                let dx: [S::V; U] = core::array::from_fn(|u| S::sub(xj, xi[u]));
                let dy: [S::V; U] = core::array::from_fn(|u| S::sub(yj, yi[u]));
                let dz: [S::V; U] = core::array::from_fn(|u| S::sub(zj, zi[u]));
                // Per particle: the pair's ε² (Plummer) or its negated support (the spline).
                let cj = if EACH { S::splat(*se.add(j)) } else { zero };
                let pair = |u: usize| match (EACH, SPLINE) {
                    (true, false) => S::sub(ei[u], cj),
                    (true, true) => S::min(ei[u], cj),
                    _ => e2,
                };
                let soft = |u: usize| if EACH && !SPLINE { pair(u) } else { e2 };
                // eps² folded into the first FMA: r² = ((eps² + dx²) + dy²) + dz².
                let r2: [S::V; U] =
                    core::array::from_fn(|u| S::fma(dz[u], dz[u], S::fma(dy[u], dy[u], S::fma(dx[u], dx[u], soft(u)))));
                // The spline: one test for the whole block whether any pair may be inside h
                // (per particle against the bound above; the exact supports only then).
                let bound = if SPLINE && EACH {
                    let c = *se.add(j);
                    let h = if c < neg_hmax { c } else { neg_hmax };
                    let h2 = h * h;
                    S::splat(if h2 < <S::T as Float>::min_positive_value() {
                        <S::T as Float>::min_positive_value()
                    } else {
                        h2
                    })
                } else {
                    h2
                };
                let near = SPLINE && S::any_lt(r2[1..].iter().fold(r2[0], |a, &b| S::min(a, b)), bound);
                for u in 0..U {
                    let (mut m_rinv, mut m_rinv3) = S::weights::<MASK>(r2[u], mj);
                    if near && S::any_lt(r2[u], bound) {
                        let hu = if EACH { S::sub(zero, pair(u)) } else { h };
                        spline_weights::<S>(r2[u], *sm.add(j), hu, &mut m_rinv, &mut m_rinv3);
                    }
                    cx[u] = S::fnma(dx[u], m_rinv3, cx[u]);
                    cy[u] = S::fnma(dy[u], m_rinv3, cy[u]);
                    cz[u] = S::fnma(dz[u], m_rinv3, cz[u]);
                    if POT {
                        cphi[u] = S::fma(m_rinv, one, cphi[u]);
                    }
                    if estimate.is_some() {
                        err[u] = S::fma(S::mul(m_rinv3, m_rinv3), S::sub(r2[u], neg_base), err[u]);
                    }
                }
            }
            for u in 0..U {
                ax[u] = S::sub(ax[u], cx[u]);
                ay[u] = S::sub(ay[u], cy[u]);
                az[u] = S::sub(az[u], cz[u]);
                if POT {
                    phi[u] = S::sub(phi[u], cphi[u]);
                }
            }
        }
        // The sums are kept in units of 1 / ACC_SCALE and 1 / PHI_SCALE (`Simd::weights`).
        let (acc_scale, phi_scale) = (S::splat(S::T::from_f64(S::ACC_SCALE)), S::splat(S::T::from_f64(S::PHI_SCALE)));
        for u in 0..U {
            S::store(blk.acc[0].as_mut_ptr().add(u * l), S::mul(ax[u], acc_scale));
            S::store(blk.acc[1].as_mut_ptr().add(u * l), S::mul(ay[u], acc_scale));
            S::store(blk.acc[2].as_mut_ptr().add(u * l), S::mul(az[u], acc_scale));
            S::store(blk.acc[3].as_mut_ptr().add(u * l), S::mul(phi[u], phi_scale));
        }
        if let Some(e) = estimate {
            for (u, &eu) in err.iter().enumerate() {
                let p = e.sums.as_mut_ptr().add(u * l);
                S::store(p, S::fma(S::mul(eu, acc_scale), acc_scale, S::load(p)));
            }
        }
    }
}

/// [`accumulate_split`] plus the jerk (also overwriting the block's sums); one vector of targets (the jerk kernel is not the
/// hot path of any benchmark, and its 30 live vectors leave no room for two).
///
/// # Safety
/// As for [`accumulate_split`]; `src` has velocities.
#[inline(always)]
pub(crate) unsafe fn accumulate_jerk<S: Simd, const POT: bool, const MASK: bool, const SPLINE: bool>(
    blk: &mut Block<'_, S::T>,
    src: &SourcesSoa<'_, S::T>,
    eps2: S::T,
) {
    // SAFETY: the caller's contract: this CPU has the backend's features, and the lengths are as above.
    unsafe {
        let ld = |s: &[S::T]| S::load(s.as_ptr());
        let (xi, yi, zi) = (ld(blk.pos[0]), ld(blk.pos[1]), ld(blk.pos[2]));
        let (vxi, vyi, vzi) = (ld(blk.vel[0]), ld(blk.vel[1]), ld(blk.vel[2]));
        let zero = S::splat(S::T::from_f64(0.0));
        let (mut ax, mut ay, mut az, mut phi) = (zero, zero, zero, zero);
        let (mut jx, mut jy, mut jz) = (zero, zero, zero);
        let three = S::splat(S::T::from_f64(3.0));
        let (h, h_inv) = (eps2, S::T::from_f64(1.0) / eps2);
        let (e2, h2) = if SPLINE { (zero, S::splat(h * h)) } else { (S::splat(eps2), zero) };
        for j in 0..src.len() {
            let g = |s: &[S::T]| S::splat(*s.get_unchecked(j));
            let (dx, dy, dz) = (S::sub(g(src.x), xi), S::sub(g(src.y), yi), S::sub(g(src.z), zi));
            let (dvx, dvy, dvz) = (S::sub(g(src.vx), vxi), S::sub(g(src.vy), vyi), S::sub(g(src.vz), vzi));
            let r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, e2)));
            let rinv = S::rsqrt::<MASK>(r2);
            // Multiplied in this order so a massless source stays 0 where 1/r² overflows.
            let mut m_rinv = S::mul(g(src.m), rinv);
            let mut m_rinv3 = S::mul(S::mul(m_rinv, rinv), rinv);
            let rv = S::fma(dz, dvz, S::fma(dy, dvy, S::mul(dx, dvx)));
            let mut alpha = S::mul(S::mul(S::mul(three, rv), rinv), rinv);
            if SPLINE && S::any_lt(r2, h2) {
                spline_jerk::<S>(r2, rv, *src.m.get_unchecked(j), h, h_inv, [&mut m_rinv, &mut m_rinv3, &mut alpha]);
            }
            ax = S::fma(dx, m_rinv3, ax);
            ay = S::fma(dy, m_rinv3, ay);
            az = S::fma(dz, m_rinv3, az);
            if POT {
                phi = S::sub(phi, m_rinv);
            }
            jx = S::fma(m_rinv3, S::fnma(alpha, dx, dvx), jx);
            jy = S::fma(m_rinv3, S::fnma(alpha, dy, dvy), jy);
            jz = S::fma(m_rinv3, S::fnma(alpha, dz, dvz), jz);
        }
        let st = |s: &mut [S::T], v: S::V| S::store(s.as_mut_ptr(), v);
        st(blk.acc[0], ax);
        st(blk.acc[1], ay);
        st(blk.acc[2], az);
        st(blk.acc[3], phi);
        st(blk.jerk[0], jx);
        st(blk.jerk[1], jy);
        st(blk.jerk[2], jz);
    }
}

/// The jerk kernel's spline lanes: inside the support, `m w`, `m g` and the `alpha`
/// that makes `m g (dv − alpha d)` the spline's jerk (`alpha = −dg (d·dv) / g`).
///
/// # Safety
/// The backend's instructions are available.
#[inline(always)]
unsafe fn spline_jerk<S: Simd>(r2: S::V, rv: S::V, m: S::T, h: S::T, h_inv: S::T, out: [&mut S::V; 3]) {
    // SAFETY: the caller's contract; the arrays hold 16 >= LANES values.
    unsafe {
        let z = S::T::from_f64(0.0);
        let (mut r, mut d) = ([z; 16], [z; 16]);
        let mut lanes = [[z; 16]; 3];
        S::store(r.as_mut_ptr(), r2);
        S::store(d.as_mut_ptr(), rv);
        for (a, v) in lanes.iter_mut().zip(&out) {
            S::store(a.as_mut_ptr(), **v);
        }
        for l in 0..S::LANES {
            if r[l] < h * h {
                let (w, g, dg) = nbody_core::kernel::spline(r[l], h, h_inv);
                lanes[0][l] = m * w;
                lanes[1][l] = m * g;
                lanes[2][l] = -(dg * d[l]) / g;
            }
        }
        for (a, v) in lanes.iter().zip(out) {
            *v = S::load(a.as_ptr());
        }
    }
}

/// The neighbour search over one tile for the `L` targets of a block starting at `b` of
/// the part: nearest source and sources within the radius, by unsoftened `r²` summed as
/// `nbody_core::neighbours::distance2` sums it. Run right after the force kernel on the
/// same tile and block, so the tile is read from L1; `L` is fixed at compile time so the
/// lanes vectorize (compare and select). Only a tile holding a target's own particle
/// pays for comparing indices.
#[inline(always)]
pub(crate) fn scan_tile<T: Real, const L: usize>(
    pos: [&[T]; 3],
    search: &mut PartSearch<'_, T>,
    b: usize,
    tile: &SourcesSoa<'_, T>,
    tile_start: usize,
) {
    let first = (search.source_start + tile_start) as u32;
    let end = first + tile.len() as u32;
    if search.own[b..b + L].iter().any(|&o| o >= first && o < end) {
        scan::<T, L, true>(pos, search, b, tile, first)
    } else {
        scan::<T, L, false>(pos, search, b, tile, first)
    }
}

#[inline(always)]
fn scan<T: Real, const L: usize, const OWN: bool>(
    pos: [&[T]; 3],
    search: &mut PartSearch<'_, T>,
    b: usize,
    tile: &SourcesSoa<'_, T>,
    first: u32,
) {
    let lane = |v: &[T]| -> [T; L] { core::array::from_fn(|l| v[b + l]) };
    let (xi, yi, zi) = (lane(pos[0]), lane(pos[1]), lane(pos[2]));
    let own: [u32; L] = core::array::from_fn(|l| search.own[b + l]);
    let h2 = lane(search.h2);
    let near = &mut search.found.nearest[b..b + L];
    let mut best: [T; L] = core::array::from_fn(|l| near[l].0);
    let mut arg: [u32; L] = core::array::from_fn(|l| near[l].1);
    let (x, y, z) = (tile.x, tile.y, &tile.z[..tile.x.len()]);
    for j in 0..x.len() {
        let index = first + j as u32;
        let (xj, yj, zj) = (x[j], y[j], z[j]);
        let mut hit = [false; L];
        for l in 0..L {
            let (dx, dy, dz) = (xj - xi[l], yj - yi[l], zj - zi[l]);
            let mut d2 = dx * dx + dy * dy + dz * dz;
            if OWN && index == own[l] {
                d2 = T::infinity();
            }
            let closer = d2 < best[l];
            best[l] = if closer { d2 } else { best[l] };
            arg[l] = if closer { index } else { arg[l] };
            hit[l] = d2 <= h2[l];
        }
        if hit.iter().any(|&h| h) {
            for (l, _) in hit.iter().enumerate().filter(|&(_, &h)| h) {
                search.found.pairs.push(((b + l) as u32, index));
            }
        }
    }
    for l in 0..L {
        near[l] = (best[l], arg[l]);
    }
}
