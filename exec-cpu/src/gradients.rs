//! The tidal tensor and the vector-Jacobian product on the CPU: SIMD lanes and the
//! executor's threads, in the call's precision.
//!
//! Both passes put one vector of particles in the lanes and broadcast the other side:
//! the targets' pass (field and tidal tensor, and from them a target's gradient) takes
//! a vector of targets against every source; the sources' pass (a source's position and
//! mass gradients) a vector of sources against every target, whose cotangents play the
//! sources' part. Sums run in the working precision over tiles of [`TILE`] and are added
//! into f64 totals, as the field's kernels do. Plummer runs in the vector kernels; the
//! spline in the core's scalar terms on the same threads (its polynomials inside the
//! support are per lane).

// The loops index several columns at one particle: a range reads plainest.
#![allow(clippy::needless_range_loop)]

use crate::kernel::TILE;
use crate::simd::Simd;
use nbody_core::calls::{TidalCall, VjpCall};
use nbody_core::gradient;
use nbody_core::kernel::{Softened, finish, finish_tidal};
use nbody_core::{Field, Params, Particle, Real, Tidal};

/// Lanes of the widest vector (the blocks' and the padding's unit).
pub(crate) const WIDTH: usize = 16;

/// The targets' pass over one vector of targets: `pos` holds their x, y, z (a vector's
/// worth each), `src` every source's x, y, z, m; `totals` receives ax, ay, az, phi and
/// the tidal lanes xx, xy, xz, yy, yz, zz (without G) per lane.
pub(crate) type TargetFn<T> = unsafe fn(&[&[T]; 3], &[&[T]; 4], T, &mut [[f64; WIDTH]; 10]);

/// The sources' pass over one vector of sources: `pos` their x, y, z, `tgt` every
/// target's x, y, z, cx, cy, cz, h; `totals` receives the sums s_x, s_y, s_z and m of
/// [`gradient::pair_source_gradient`] per lane.
pub(crate) type SourceFn<T> = unsafe fn(&[&[T]; 3], &[&[T]; 7], T, &mut [[f64; WIDTH]; 4]);

/// The product of a system on itself over one vector of particles: `own` holds their x,
/// y, z, cx, cy, cz, h, `all` every particle's x, y, z, m, cx, cy, cz, h; `totals`
/// receives the sums of [`gradient::pair_fused`] per lane.
pub(crate) type FusedFn<T> = unsafe fn(&[&[T]; 7], &[&[T]; 8], T, &mut [[f64; WIDTH]; 8]);

/// A particle's whole gradient in a system on itself over one vector of particles: `own`
/// holds their x, y, z, m, cx, cy, cz, h, `all` every particle's, and `start` the index in
/// `all` of the vector's first lane (its lanes' own pairs are left out); `totals`
/// receives the sums of [`gradient::pair_whole`] per lane.
pub(crate) type WholeFn<T> = unsafe fn(&[&[T]; 8], &[&[T]; 8], usize, T, &mut [[f64; WIDTH]; 4]);

/// One precision's compiled passes for a call's kernel.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct Passes<T> {
    pub(crate) lanes: usize,
    pub(crate) targets: TargetFn<T>,
    pub(crate) sources: SourceFn<T>,
    pub(crate) fused: FusedFn<T>,
    pub(crate) whole: WholeFn<T>,
}

/// The targets' pass for Plummer (`MASK`: ε = 0, zero distances masked).
///
/// # Safety
/// The backend's instructions are available; every slice of `pos` holds `S::LANES`
/// values; the slices of `src` have one length.
#[inline(always)]
pub(crate) unsafe fn target_block<S: Simd, const MASK: bool>(
    pos: &[&[S::T]; 3],
    src: &[&[S::T]; 4],
    eps2: S::T,
    totals: &mut [[f64; WIDTH]; 10],
) {
    // SAFETY: the caller's contract.
    unsafe {
        let l = S::LANES;
        let [xi, yi, zi] = pos.map(|p| S::load(p.as_ptr()));
        let (e2, minus3) = (S::splat(eps2), S::splat(S::T::from_f64(-3.0)));
        let zero = S::splat(S::T::from_f64(0.0));
        let n = src[0].len();
        for t0 in (0..n).step_by(TILE) {
            let mut acc = [zero; 10];
            for j in t0..(t0 + TILE).min(n) {
                let dx = S::sub(S::splat(src[0][j]), xi);
                let dy = S::sub(S::splat(src[1][j]), yi);
                let dz = S::sub(S::splat(src[2][j]), zi);
                let r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, e2)));
                let rinv = S::rsqrt::<MASK>(r2);
                let rinv2 = S::mul(rinv, rinv);
                // (m/r · 1/r) · 1/r, as the field's kernels: 0 for a massless source.
                let mr = S::mul(S::splat(src[3][j]), rinv);
                let mg = S::mul(S::mul(mr, rinv), rinv);
                let mdg = S::mul(S::mul(minus3, mg), rinv2);
                acc[0] = S::fma(mg, dx, acc[0]);
                acc[1] = S::fma(mg, dy, acc[1]);
                acc[2] = S::fma(mg, dz, acc[2]);
                acc[3] = S::sub(acc[3], mr);
                let (ex, ey, ez) = (S::mul(mdg, dx), S::mul(mdg, dy), S::mul(mdg, dz));
                acc[4] = S::fnma(ex, dx, S::sub(acc[4], mg));
                acc[5] = S::fnma(ex, dy, acc[5]);
                acc[6] = S::fnma(ex, dz, acc[6]);
                acc[7] = S::fnma(ey, dy, S::sub(acc[7], mg));
                acc[8] = S::fnma(ey, dz, acc[8]);
                acc[9] = S::fnma(ez, dz, S::sub(acc[9], mg));
            }
            add_lanes::<S, _>(&acc, totals, l);
        }
    }
}

/// The sources' pass for Plummer (`MASK`: ε = 0, zero distances masked).
///
/// # Safety
/// As [`target_block`], with `tgt` in place of `src`.
#[inline(always)]
pub(crate) unsafe fn source_block<S: Simd, const MASK: bool>(
    pos: &[&[S::T]; 3],
    tgt: &[&[S::T]; 7],
    eps2: S::T,
    totals: &mut [[f64; WIDTH]; 4],
) {
    // SAFETY: the caller's contract.
    unsafe {
        let l = S::LANES;
        let [xj, yj, zj] = pos.map(|p| S::load(p.as_ptr()));
        let (e2, minus3) = (S::splat(eps2), S::splat(S::T::from_f64(-3.0)));
        let zero = S::splat(S::T::from_f64(0.0));
        let n = tgt[0].len();
        for t0 in (0..n).step_by(TILE) {
            let mut acc = [zero; 4];
            for i in t0..(t0 + TILE).min(n) {
                let dx = S::sub(xj, S::splat(tgt[0][i]));
                let dy = S::sub(yj, S::splat(tgt[1][i]));
                let dz = S::sub(zj, S::splat(tgt[2][i]));
                let (cx, cy, cz, h) =
                    (S::splat(tgt[3][i]), S::splat(tgt[4][i]), S::splat(tgt[5][i]), S::splat(tgt[6][i]));
                let r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, e2)));
                let w = S::rsqrt::<MASK>(r2);
                let w2 = S::mul(w, w);
                let g = S::mul(w2, w);
                let dg = S::mul(S::mul(minus3, g), w2);
                let dc = S::fma(dz, cz, S::fma(dy, cy, S::mul(dx, cx)));
                let radial = S::fma(dg, dc, S::mul(h, g));
                acc[0] = S::fma(radial, dx, S::fma(g, cx, acc[0]));
                acc[1] = S::fma(radial, dy, S::fma(g, cy, acc[1]));
                acc[2] = S::fma(radial, dz, S::fma(g, cz, acc[2]));
                acc[3] = S::fnma(h, w, S::fma(g, dc, acc[3]));
            }
            add_lanes::<S, _>(&acc, totals, l);
        }
    }
}

/// The fused pass for Plummer (`MASK`: ε = 0, zero distances masked).
///
/// # Safety
/// The backend's instructions are available; every slice of `own` holds `S::LANES`
/// values; the slices of `all` have one length.
#[inline(always)]
pub(crate) unsafe fn fused_block<S: Simd, const MASK: bool>(
    own: &[&[S::T]; 7],
    all: &[&[S::T]; 8],
    eps2: S::T,
    totals: &mut [[f64; WIDTH]; 8],
) {
    // SAFETY: the caller's contract.
    unsafe {
        let l = S::LANES;
        let [xi, yi, zi, cxi, cyi, czi, hi] = own.map(|p| S::load(p.as_ptr()));
        let (e2, minus3) = (S::splat(eps2), S::splat(S::T::from_f64(-3.0)));
        let zero = S::splat(S::T::from_f64(0.0));
        let n = all[0].len();
        for t0 in (0..n).step_by(TILE) {
            let mut acc = [zero; 8];
            for j in t0..(t0 + TILE).min(n) {
                let dx = S::sub(S::splat(all[0][j]), xi);
                let dy = S::sub(S::splat(all[1][j]), yi);
                let dz = S::sub(S::splat(all[2][j]), zi);
                let (mj, hj) = (S::splat(all[3][j]), S::splat(all[7][j]));
                let (cxj, cyj, czj) = (S::splat(all[4][j]), S::splat(all[5][j]), S::splat(all[6][j]));
                let r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, e2)));
                let w = S::rsqrt::<MASK>(r2);
                let w2 = S::mul(w, w);
                let g = S::mul(w2, w);
                let dg = S::mul(S::mul(minus3, g), w2);
                let dci = S::fma(dz, czi, S::fma(dy, cyi, S::mul(dx, cxi)));
                let dcj = S::fma(dz, czj, S::fma(dy, cyj, S::mul(dx, cxj)));
                let mg = S::mul(mj, g);
                let cv = S::fma(S::mul(mj, dg), dci, S::mul(hi, mg));
                let cb = S::fnma(hj, g, S::mul(dg, dcj));
                acc[0] = S::fma(mj, g, acc[0]);
                acc[1] = S::fma(cv, dx, acc[1]);
                acc[2] = S::fma(cv, dy, acc[2]);
                acc[3] = S::fma(cv, dz, acc[3]);
                acc[4] = S::fma(cb, dx, S::fma(g, cxj, acc[4]));
                acc[5] = S::fma(cb, dy, S::fma(g, cyj, acc[5]));
                acc[6] = S::fma(cb, dz, S::fma(g, czj, acc[6]));
                acc[7] = S::fnma(hj, w, S::fnma(g, dcj, acc[7]));
            }
            add_lanes::<S, _>(&acc, totals, l);
        }
    }
}

/// The whole-gradient pass for Plummer (`MASK`: ε = 0, zero distances masked): per pair
/// `P += g H + s d`, `s = g (m_i A + m_j B)` with `A = −3 d·c_j / r² − h_j` and
/// `B = 3 d·c_i / r² − h_i` ([`gradient::pair_whole`] with its potential terms folded).
///
/// # Safety
/// The backend's instructions are available; every slice of `own` holds `S::LANES`
/// values; the slices of `all` have one length.
#[inline(always)]
pub(crate) unsafe fn whole_block<S: Simd, const MASK: bool>(
    own: &[&[S::T]; 8],
    all: &[&[S::T]; 8],
    start: usize,
    eps2: S::T,
    totals: &mut [[f64; WIDTH]; 4],
) {
    // SAFETY: the caller's contract.
    unsafe {
        let l = S::LANES;
        let [xi, yi, zi, mi, cxi, cyi, czi, hi] = own.map(|p| S::load(p.as_ptr()));
        let (e2, minus3) = (S::splat(eps2), S::splat(S::T::from_f64(-3.0)));
        let (zero, one) = (S::splat(S::T::from_f64(0.0)), S::T::from_f64(1.0));
        let n = all[0].len();
        for t0 in (0..n).step_by(TILE) {
            let mut acc = [zero; 4];
            for j in t0..(t0 + TILE).min(n) {
                let dx = S::sub(S::splat(all[0][j]), xi);
                let dy = S::sub(S::splat(all[1][j]), yi);
                let dz = S::sub(S::splat(all[2][j]), zi);
                let (mj, hj) = (S::splat(all[3][j]), S::splat(all[7][j]));
                let minus_hj = S::splat(S::T::from_f64(0.0) - all[7][j]);
                let (cxj, cyj, czj) = (S::splat(all[4][j]), S::splat(all[5][j]), S::splat(all[6][j]));
                let r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, e2)));
                let mut w = S::rsqrt::<MASK>(r2);
                if (start..start + l).contains(&j) {
                    // The vector's own particles: the lane of particle j pairs with
                    // nothing (w = 0 zeroes every term).
                    let mut keep = [one; WIDTH];
                    keep[j - start] = S::T::from_f64(0.0);
                    w = S::mul(w, S::load(keep.as_ptr()));
                }
                let w2 = S::mul(w, w);
                let g = S::mul(w2, w);
                let (gi, gj) = (S::mul(g, mi), S::mul(g, mj));
                let dci = S::fma(dz, czi, S::fma(dy, cyi, S::mul(dx, cxi)));
                let dcj = S::fma(dz, czj, S::fma(dy, cyj, S::mul(dx, cxj)));
                let r3 = S::mul(minus3, w2);
                // A = r3 d.c_j - h_j and -B = r3 d.c_i + h_i: s = gi A - gj (-B).
                let a = S::fma(r3, dcj, minus_hj);
                let b = S::fma(r3, dci, hi);
                let sv = S::fnma(gj, b, S::mul(gi, a));
                acc[0] = S::fma(sv, dx, S::fma(gi, cxj, S::fnma(gj, cxi, acc[0])));
                acc[1] = S::fma(sv, dy, S::fma(gi, cyj, S::fnma(gj, cyi, acc[1])));
                acc[2] = S::fma(sv, dz, S::fma(gi, czj, S::fnma(gj, czi, acc[2])));
                acc[3] = S::fnma(hj, w, S::fnma(g, dcj, acc[3]));
            }
            add_lanes::<S, _>(&acc, totals, l);
        }
    }
}

/// The whole-gradient pass for any kernel in the core's scalar terms (see
/// [`target_block_scalar`]).
///
/// # Safety
/// None beyond the slices' lengths.
pub(crate) unsafe fn whole_block_scalar<T: Real>(
    k: Softened<T>,
    lanes: usize,
    own: &[&[T]; 8],
    all: &[&[T]; 8],
    start: usize,
    totals: &mut [[f64; WIDTH]; 4],
) {
    for l in 0..lanes {
        let pi = Particle::new(own[0][l], own[1][l], own[2][l], own[3][l]);
        let (ci, hi) = ([own[4][l], own[5][l], own[6][l]], own[7][l]);
        for t0 in (0..all[0].len()).step_by(TILE) {
            let mut s = [T::zero(); 4];
            for j in (t0..(t0 + TILE).min(all[0].len())).filter(|&j| j != start + l) {
                let pj = Particle::new(all[0][j], all[1][j], all[2][j], all[3][j]);
                gradient::pair_whole(&k, &pi, ci, hi, &pj, [all[4][j], all[5][j], all[6][j]], all[7][j], &mut s);
            }
            for (total, v) in totals.iter_mut().zip(s) {
                total[l] += v.to_f64();
            }
        }
    }
}

/// The fused pass for any kernel in the core's scalar terms (see
/// [`target_block_scalar`]).
///
/// # Safety
/// None beyond the slices' lengths.
pub(crate) unsafe fn fused_block_scalar<T: Real>(
    k: Softened<T>,
    lanes: usize,
    own: &[&[T]; 7],
    all: &[&[T]; 8],
    totals: &mut [[f64; WIDTH]; 8],
) {
    for l in 0..lanes {
        let (xi, ci, hi) = ([own[0][l], own[1][l], own[2][l]], [own[3][l], own[4][l], own[5][l]], own[6][l]);
        for t0 in (0..all[0].len()).step_by(TILE) {
            let mut s = [T::zero(); 8];
            for j in t0..(t0 + TILE).min(all[0].len()) {
                let pj = Particle::new(all[0][j], all[1][j], all[2][j], all[3][j]);
                gradient::pair_fused(&k, xi, ci, hi, &pj, [all[4][j], all[5][j], all[6][j]], all[7][j], &mut s);
            }
            for (total, v) in totals.iter_mut().zip(s) {
                total[l] += v.to_f64();
            }
        }
    }
}

/// Adds a tile's vectors into the f64 totals.
///
/// # Safety
/// The backend's instructions are available.
#[inline(always)]
unsafe fn add_lanes<S: Simd, const N: usize>(acc: &[S::V; N], totals: &mut [[f64; WIDTH]; N], lanes: usize) {
    let mut buf = [S::T::from_f64(0.0); WIDTH];
    for (v, t) in acc.iter().zip(totals.iter_mut()) {
        // SAFETY: the caller's contract; `buf` holds WIDTH >= LANES values.
        unsafe { S::store(buf.as_mut_ptr(), *v) };
        for (t, b) in t.iter_mut().zip(&buf[..lanes]) {
            *t += b.to_f64();
        }
    }
}

/// The targets' pass for any kernel in the core's scalar terms (the spline), one lane
/// after another; `arg` is the kernel's argument (the spline's support).
///
/// # Safety
/// None beyond the slices' lengths (as [`target_block`], with `lanes` values in `pos`).
pub(crate) unsafe fn target_block_scalar<T: Real>(
    k: Softened<T>,
    lanes: usize,
    pos: &[&[T]; 3],
    src: &[&[T]; 4],
    totals: &mut [[f64; WIDTH]; 10],
) {
    for l in 0..lanes {
        let xi = [pos[0][l], pos[1][l], pos[2][l]];
        for t0 in (0..src[0].len()).step_by(TILE) {
            let (mut f, mut t) = (Field::zero(), Tidal::zero());
            for j in t0..(t0 + TILE).min(src[0].len()) {
                k.pair_tidal(xi, &Particle::new(src[0][j], src[1][j], src[2][j], src[3][j]), &mut f, &mut t);
            }
            let sums = [f.ax, f.ay, f.az, f.phi, t.xx, t.xy, t.xz, t.yy, t.yz, t.zz];
            for (total, s) in totals.iter_mut().zip(sums) {
                total[l] += s.to_f64();
            }
        }
    }
}

/// The sources' pass for any kernel in the core's scalar terms (see
/// [`target_block_scalar`]).
///
/// # Safety
/// None beyond the slices' lengths.
pub(crate) unsafe fn source_block_scalar<T: Real>(
    k: Softened<T>,
    lanes: usize,
    pos: &[&[T]; 3],
    tgt: &[&[T]; 7],
    totals: &mut [[f64; WIDTH]; 4],
) {
    for l in 0..lanes {
        let xj = [pos[0][l], pos[1][l], pos[2][l]];
        for t0 in (0..tgt[0].len()).step_by(TILE) {
            let (mut s, mut m) = ([T::zero(); 3], T::zero());
            for i in t0..(t0 + TILE).min(tgt[0].len()) {
                let (xi, c) = ([tgt[0][i], tgt[1][i], tgt[2][i]], [tgt[3][i], tgt[4][i], tgt[5][i]]);
                gradient::pair_source_gradient(&k, xj, xi, c, tgt[6][i], &mut s, &mut m);
            }
            for (total, v) in totals.iter_mut().zip([s[0], s[1], s[2], m]) {
                total[l] += v.to_f64();
            }
        }
    }
}

/// Columns of `n` values padded with zeros to a whole number of [`WIDTH`]s.
fn columns<T: Real, const K: usize>(n: usize, value: impl Fn(usize, usize) -> T) -> [Vec<T>; K] {
    let padded = n.div_ceil(WIDTH) * WIDTH;
    core::array::from_fn(|k| (0..padded).map(|i| if i < n { value(i, k) } else { T::zero() }).collect())
}

/// How a call's passes run: a vector kernel pair, or the core's scalar terms.
#[derive(Clone, Copy)]
pub(crate) enum Kernel<T> {
    Vector(Passes<T>),
    Scalar(Softened<T>),
}

/// Runs `block` over the vector blocks of `n` padded particles on the executor's
/// threads, each block's totals into its own slot; returns the totals per particle.
fn blocks<const N: usize>(
    pool: Option<&crate::team::Team>,
    n: usize,
    lanes: usize,
    block: impl Fn(usize, &mut [[f64; WIDTH]; N]) + Sync,
) -> Vec<[f64; N]> {
    let count = n.div_ceil(WIDTH) * WIDTH / lanes;
    let mut totals = vec![[[0.0; WIDTH]; N]; count];
    // Parts of several blocks: enough for every thread to take a few.
    let per_part = count.div_ceil(8 * pool.map_or(1, |t| t.threads())).max(1);
    let parts: Vec<(usize, &mut [[[f64; WIDTH]; N]])> =
        totals.chunks_mut(per_part).enumerate().map(|(k, c)| (k * per_part, c)).collect();
    crate::run_parts(pool, parts, |(first, chunk)| {
        for (b, t) in chunk.iter_mut().enumerate() {
            block(first + b, t);
        }
    });
    // Lane l of block b is particle b * lanes + l.
    let mut per = vec![[0.0; N]; count * lanes];
    for (b, t) in totals.iter().enumerate() {
        for l in 0..lanes {
            per[b * lanes + l] = core::array::from_fn(|k| t[k][l]);
        }
    }
    per
}

/// Each target's sums (field, then tidal lanes; without G and before its own pair is
/// taken out), over its sources.
fn target_pass<T: Real>(
    pool: Option<&crate::team::Team>,
    kernel: Kernel<T>,
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
) -> Vec<[f64; 10]> {
    let tcols: [Vec<T>; 3] = columns(targets.len(), |i, k| targets[i].position()[k]);
    let scols: [Vec<T>; 4] = core::array::from_fn(|k| sources.iter().map(|s| lanes(s)[k]).collect());
    let src = [&scols[0][..], &scols[1][..], &scols[2][..], &scols[3][..]];
    let arg = Softened::of(params).argument();
    let width = kernel.lanes();
    blocks::<10>(pool, targets.len(), width, |b, totals| {
        let r = b * width..(b + 1) * width;
        let pos = [&tcols[0][r.clone()], &tcols[1][r.clone()], &tcols[2][r]];
        // SAFETY: `kernel` suits this CPU (`CpuExecutor::gradient_kernel`), and `pos`
        // holds one vector of padded targets.
        unsafe {
            match kernel {
                Kernel::Vector(p) => (p.targets)(&pos, &src, arg, totals),
                Kernel::Scalar(k) => target_block_scalar(k, width, &pos, &src, totals),
            }
        }
    })
    .into_iter()
    .take(targets.len())
    .collect()
}

/// `[x, y, z, m]`.
fn lanes<T: Real>(p: &Particle<T>) -> [T; 4] {
    [p.x, p.y, p.z, p.m]
}

/// A target's sums from its totals, in the working precision.
fn sums_of<T: Real>(t: &[f64; 10]) -> (Field<T>, Tidal<T>) {
    let c = |k: usize| T::from_f64(t[k]);
    (Field::new(c(0), c(1), c(2), c(3)), Tidal::new(core::array::from_fn(|k| c(4 + k))))
}

/// [`nbody_core::Executor::accelerations_tidal`] on validated, non-empty input.
pub(crate) fn tidal<T: Real>(pool: Option<&crate::team::Team>, kernel: Kernel<T>, call: TidalCall<'_, T>) {
    let TidalCall { targets, sources, params, out, tidal } = call;
    let k = Softened::of(params);
    for (i, t) in target_pass(pool, kernel, targets, sources, params).iter().enumerate() {
        let (mut f, mut t) = sums_of::<T>(t);
        gradient::subtract_self_tidal(params, &k, sources, i, &mut f, &mut t);
        finish(params.g, &f, params.potential, &mut out[i]);
        finish_tidal(params.g, &t, &mut tidal[i]);
    }
}

/// [`nbody_core::Executor::vjp`] on validated, non-empty input.
pub(crate) fn vjp<T: Real>(pool: Option<&crate::team::Team>, kernel: Kernel<T>, call: VjpCall<'_, T>) {
    if call.params.overlap == nbody_core::Overlap::Identical {
        return vjp_fused(pool, kernel, call);
    }
    let VjpCall { targets, sources, params, cotangents, target_grads, source_grads } = call;
    let k = Softened::of(params);
    for (i, t) in target_pass(pool, kernel, targets, sources, params).iter().enumerate() {
        let (mut f, mut t) = sums_of::<T>(t);
        gradient::subtract_self_tidal(params, &k, sources, i, &mut f, &mut t);
        gradient::add_target_gradient(params, &f, &t, &cotangents[i], &mut target_grads[i]);
    }
    // The sources' pass: the targets with their cotangents broadcast.
    let h = |c: &Field<T>| gradient::potential_cotangent(params, c);
    let tcols: [Vec<T>; 7] = core::array::from_fn(|k| {
        targets.iter().zip(cotangents).map(|(t, c)| [t.x, t.y, t.z, c.ax, c.ay, c.az, h(c)][k]).collect()
    });
    let tgt: [&[T]; 7] = core::array::from_fn(|k| &tcols[k][..]);
    let scols: [Vec<T>; 3] = columns(sources.len(), |j, k| sources[j].position()[k]);
    let arg = k.argument();
    let width = kernel.lanes();
    let per = blocks::<4>(pool, sources.len(), width, |b, totals| {
        let r = b * width..(b + 1) * width;
        let pos = [&scols[0][r.clone()], &scols[1][r.clone()], &scols[2][r]];
        // SAFETY: as in `target_pass`.
        unsafe {
            match kernel {
                Kernel::Vector(p) => (p.sources)(&pos, &tgt, arg, totals),
                Kernel::Scalar(k) => source_block_scalar(k, width, &pos, &tgt, totals),
            }
        }
    });
    for (j, t) in per.iter().take(sources.len()).enumerate() {
        let (mut s, mut m) = ([t[0], t[1], t[2]].map(T::from_f64), T::from_f64(t[3]));
        if let Some(i) = params.overlap.target_of(j, targets.len()) {
            gradient::subtract_self_source(params, &k, &cotangents[i], &mut s, &mut m);
        }
        gradient::add_source_gradient(params, sources[j].m, &s, m, &mut source_grads[j]);
    }
}

/// [`vjp`] of a system on itself (validated: the targets are the sources): one pass
/// over the pairs ([`gradient::pair_fused`]).
fn vjp_fused<T: Real>(pool: Option<&crate::team::Team>, kernel: Kernel<T>, call: VjpCall<'_, T>) {
    let VjpCall { targets, params, cotangents, target_grads, source_grads, .. } = call;
    let k = Softened::of(params);
    let h = |c: &Field<T>| gradient::potential_cotangent(params, c);
    let row = |p: &Particle<T>, c: &Field<T>| [p.x, p.y, p.z, p.m, c.ax, c.ay, c.az, h(c)];
    let n = targets.len();
    let all_cols: [Vec<T>; 8] =
        core::array::from_fn(|q| targets.iter().zip(cotangents).map(|(p, c)| row(p, c)[q]).collect());
    let all: [&[T]; 8] = core::array::from_fn(|q| &all_cols[q][..]);
    // The block's own lanes: x, y, z, cx, cy, cz, h (the mass is not read per pair).
    const OWN: [usize; 7] = [0, 1, 2, 4, 5, 6, 7];
    let own_cols: [Vec<T>; 7] = columns(n, |i, q| row(&targets[i], &cotangents[i])[OWN[q]]);
    let arg = k.argument();
    let width = kernel.lanes();
    let per = blocks::<8>(pool, n, width, |b, totals| {
        let r = b * width..(b + 1) * width;
        let own: [&[T]; 7] = core::array::from_fn(|q| &own_cols[q][r.clone()]);
        // SAFETY: as in `target_pass`.
        unsafe {
            match kernel {
                Kernel::Vector(p) => (p.fused)(&own, &all, arg, totals),
                Kernel::Scalar(k) => fused_block_scalar(k, width, &own, &all, totals),
            }
        }
    });
    for (i, t) in per.iter().take(n).enumerate() {
        let c = &cotangents[i];
        let s = t.map(T::from_f64);
        let (tg, sg) = (&mut target_grads[i], &mut source_grads[i]);
        gradient::add_fused(params, &k, &targets[i], c.acceleration(), h(c), s, tg, sg);
    }
}

/// Each particle's whole gradient in a system on itself (`particles` with their
/// `cotangents`), added into `grads`: one pass over the pairs per vector of particles
/// ([`gradient::pair_whole`]), on the executor's threads when `pool` is given.
pub(crate) fn vjp_whole<T: Real>(
    pool: Option<&crate::team::Team>,
    kernel: Kernel<T>,
    particles: &[Particle<T>],
    params: &Params<T>,
    cotangents: &[Field<T>],
    grads: &mut [Particle<T>],
) {
    let k = Softened::of(params);
    let h = |c: &Field<T>| gradient::potential_cotangent(params, c);
    let row = |p: &Particle<T>, c: &Field<T>| [p.x, p.y, p.z, p.m, c.ax, c.ay, c.az, h(c)];
    let n = particles.len();
    let all_cols: [Vec<T>; 8] =
        core::array::from_fn(|q| particles.iter().zip(cotangents).map(|(p, c)| row(p, c)[q]).collect());
    let all: [&[T]; 8] = core::array::from_fn(|q| &all_cols[q][..]);
    let own_cols: [Vec<T>; 8] = columns(n, |i, q| row(&particles[i], &cotangents[i])[q]);
    let arg = k.argument();
    let width = kernel.lanes();
    let per = blocks::<4>(pool, n, width, |b, totals| {
        let r = b * width..(b + 1) * width;
        let own: [&[T]; 8] = core::array::from_fn(|q| &own_cols[q][r.clone()]);
        // SAFETY: as in `target_pass`.
        unsafe {
            match kernel {
                Kernel::Vector(p) => (p.whole)(&own, &all, r.start, arg, totals),
                Kernel::Scalar(k) => whole_block_scalar(k, width, &own, &all, r.start, totals),
            }
        }
    });
    for (g, t) in grads.iter_mut().zip(&per) {
        gradient::add_whole(params, &t.map(T::from_f64), g);
    }
}

impl<T> Kernel<T> {
    /// Particles per block.
    fn lanes(&self) -> usize {
        match self {
            Kernel::Vector(p) => p.lanes,
            Kernel::Scalar(_) => WIDTH,
        }
    }
}

/// Defines `$name(isa, masked)`: the vector passes of precision `$t` for `isa`.
macro_rules! passes {
    ($name:ident, $t:ty, $( $isa:ident => $s:ty $(, #[$feat:meta])? );* $(;)?) => {
        pub(crate) fn $name(isa: crate::Isa, masked: bool) -> Passes<$t> {
            $(
                if isa == crate::Isa::$isa {
                    $(#[$feat])?
                    unsafe fn t<const M: bool>(pos: &[&[$t]; 3], src: &[&[$t]; 4], eps2: $t, totals: &mut [[f64; WIDTH]; 10]) {
                        // SAFETY: the caller's contract (this CPU has the features; `pos` holds a vector).
                        unsafe { target_block::<$s, M>(pos, src, eps2, totals) }
                    }
                    $(#[$feat])?
                    unsafe fn s<const M: bool>(pos: &[&[$t]; 3], tgt: &[&[$t]; 7], eps2: $t, totals: &mut [[f64; WIDTH]; 4]) {
                        // SAFETY: as above.
                        unsafe { source_block::<$s, M>(pos, tgt, eps2, totals) }
                    }
                    $(#[$feat])?
                    unsafe fn f<const M: bool>(own: &[&[$t]; 7], all: &[&[$t]; 8], eps2: $t, totals: &mut [[f64; WIDTH]; 8]) {
                        // SAFETY: as above.
                        unsafe { fused_block::<$s, M>(own, all, eps2, totals) }
                    }
                    $(#[$feat])?
                    unsafe fn w<const M: bool>(own: &[&[$t]; 8], all: &[&[$t]; 8], start: usize, eps2: $t, totals: &mut [[f64; WIDTH]; 4]) {
                        // SAFETY: as above.
                        unsafe { whole_block::<$s, M>(own, all, start, eps2, totals) }
                    }
                    let lanes = <$s as Simd>::LANES;
                    return if masked {
                        Passes { lanes, targets: t::<true>, sources: s::<true>, fused: f::<true>, whole: w::<true> }
                    } else {
                        Passes { lanes, targets: t::<false>, sources: s::<false>, fused: f::<false>, whole: w::<false> }
                    };
                }
            )*
            // Another architecture's instruction set (never detected here): portable.
            unsafe fn t<const M: bool>(pos: &[&[$t]; 3], src: &[&[$t]; 4], eps2: $t, totals: &mut [[f64; WIDTH]; 10]) {
                // SAFETY: portable code; `pos` holds a vector.
                unsafe { target_block::<crate::simd::Portable<$t>, M>(pos, src, eps2, totals) }
            }
            unsafe fn s<const M: bool>(pos: &[&[$t]; 3], tgt: &[&[$t]; 7], eps2: $t, totals: &mut [[f64; WIDTH]; 4]) {
                // SAFETY: as above.
                unsafe { source_block::<crate::simd::Portable<$t>, M>(pos, tgt, eps2, totals) }
            }
            unsafe fn f<const M: bool>(own: &[&[$t]; 7], all: &[&[$t]; 8], eps2: $t, totals: &mut [[f64; WIDTH]; 8]) {
                // SAFETY: as above.
                unsafe { fused_block::<crate::simd::Portable<$t>, M>(own, all, eps2, totals) }
            }
            unsafe fn w<const M: bool>(own: &[&[$t]; 8], all: &[&[$t]; 8], start: usize, eps2: $t, totals: &mut [[f64; WIDTH]; 4]) {
                // SAFETY: as above.
                unsafe { whole_block::<crate::simd::Portable<$t>, M>(own, all, start, eps2, totals) }
            }
            let lanes = <crate::simd::Portable<$t> as Simd>::LANES;
            if masked {
                Passes { lanes, targets: t::<true>, sources: s::<true>, fused: f::<true>, whole: w::<true> }
            } else {
                Passes { lanes, targets: t::<false>, sources: s::<false>, fused: f::<false>, whole: w::<false> }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2F32, Avx2F64, Avx512F32, Avx512F64};

#[cfg(target_arch = "x86_64")]
passes!(f32_passes, f32,
    Avx512 => Avx512F32, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F32, #[target_feature(enable = "avx2,fma")];
);

#[cfg(target_arch = "x86_64")]
passes!(f64_passes, f64,
    Avx512 => Avx512F64, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F64, #[target_feature(enable = "avx2,fma")];
);

#[cfg(not(target_arch = "x86_64"))]
passes!(f32_passes, f32,);

#[cfg(not(target_arch = "x86_64"))]
passes!(f64_passes, f64,);
