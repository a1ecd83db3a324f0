//! Mixed precision: positions and sums in f64, each interaction in f32 on coordinates
//! relative to the centre of its target block.
//!
//! Plain f32 loses `|x| · 2^-24` of every coordinate, so its error grows with the
//! distance of the system from the origin. Here each block of 32 targets converts the
//! sources, tile by tile, to f32 offsets from the block's centre (f64 subtraction, then
//! rounding): the rounding is relative to the offsets, not to the absolute positions, and
//! a system shifted by 1e4 keeps the error it had at the origin. Blocks are formed from
//! the targets in Morton order, so each is compact and its offsets are small. Partial
//! sums of a tile are f32 and are added into f64 sums.

use crate::dispatch::Isa;
use crate::kernel::{accumulate, Block, SourcesSoa, TILE};
use crate::simd::{Portable, Simd};
use crate::Parallelism;
use nbody_core::kernel::self_potential;
use nbody_core::layout::morton_order;
use nbody_core::{validate, Bodies, Error, Executor, Field, Jerk, Params, Particle};

/// The mixed-precision CPU executor (an `Executor<f64>`). The jerk kernel runs in full
/// f64 (through [`crate::CpuExecutor`]): Hermite integrators need its accuracy.
///
/// Its range is f32's on the offsets: systems wider than [`MAX_EXTENT`] are refused, and
/// separations whose f32 square is below the smallest normal f32 (about 1e-19) count as
/// coincident.
///
/// ```
/// use nbody_core::{Executor, Field, Params};
/// use nbody_cpu::{MixedExecutor, Parallelism};
/// let (bodies, _) = nbody_integrators::ics::plummer::<f64>(500, 2);
/// let mut out = vec![Field::zero(); 500];
/// MixedExecutor::new(Parallelism::Sequential)
///     .accelerations(&bodies, &bodies, &Params::softened(0.01).with_overlap_identical(), &mut out)?;
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct MixedExecutor {
    full: crate::CpuExecutor,
    scratch: Scratch,
}

/// Per-call and per-thread buffers.
#[derive(Debug, Default)]
struct Scratch {
    /// Targets x, y, z (f64, padded to blocks) and sums ax, ay, az, phi (f64).
    tpos: [Vec<f64>; 3],
    acc: [Vec<f64>; 4],
    /// Sources x, y, z (f64) and masses (f32).
    src: [Vec<f64>; 3],
    mass: Vec<f32>,
    /// Targets in Morton order: slot k of the padded arrays holds target `order[k]`.
    order: Vec<u32>,
    /// Per thread: a relative source tile (x, y, z) and a block's relative targets and sums.
    threads: Vec<ThreadBuf>,
}

#[derive(Default, Clone, Debug)]
struct ThreadBuf {
    tile: [Vec<f32>; 3],
    targets: [Vec<f32>; 3],
    sums: [Vec<f32>; 4],
}

/// One thread's share: whole blocks of targets and their f64 sums.
pub(crate) struct MixedPart<'a> {
    pos: [&'a [f64]; 3],
    acc: [&'a mut [f64]; 4],
    buf: &'a mut ThreadBuf,
}

/// Sources as the mixed kernel reads them.
pub(crate) struct MixedSources<'a> {
    pos: [&'a [f64]; 3],
    mass: &'a [f32],
}

/// Targets per block, each block with its own centre. Small, so the offsets that are
/// rounded to f32 stay small: 16 targets in Morton order span a few interparticle
/// spacings, and the rounding of a near neighbour's offset stays far below its distance.
const BLOCK: usize = 16;

type MixedFn = unsafe fn(&mut MixedPart<'_>, &MixedSources<'_>, f32);

impl MixedExecutor {
    /// An executor on the best instruction set this CPU has.
    pub fn new(parallelism: Parallelism) -> Self {
        Self::with_isa(parallelism, Isa::detect())
    }

    /// An executor forced to one instruction set (the best available if this CPU lacks it).
    pub fn with_isa(parallelism: Parallelism, isa: Isa) -> Self {
        Self { full: crate::CpuExecutor::with_isa(parallelism, isa), scratch: Scratch::default() }
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.full.isa()
    }
}

impl Executor<f64> for MixedExecutor {
    fn name(&self) -> &'static str {
        "cpu-mixed"
    }

    /// Refuses a system wider than [`MAX_EXTENT`].
    unsafe fn accelerations_unchecked(
        &mut self,
        targets: &[Particle<f64>],
        sources: &[Particle<f64>],
        params: &Params<f64>,
        out: &mut [Field<f64>],
    ) -> Result<(), Error> {
        validate::mixed_extent(targets, sources)?;
        let eps32 = params.eps as f32;
        let eps2 = eps32 * eps32;
        // The f32 kernel decides masking; the self term follows the same decision.
        let masked = eps2 == 0.0;
        let kernel = select(self.full.isa(), params.potential, masked);
        let parts = self.full.threads().min(targets.len().div_ceil(BLOCK)).max(1);
        let s = &mut self.scratch;
        stage(s, targets, sources, parts);
        let Scratch { tpos, acc, src, mass, threads, .. } = s;
        let per = (tpos[0].len() / BLOCK).div_ceil(parts) * BLOCK;
        let mut pos = tpos.each_ref().map(|v| v.chunks(per));
        let mut sums = acc.each_mut().map(|v| v.chunks_mut(per));
        let work: Vec<MixedPart<'_>> = threads
            .iter_mut()
            .take(parts)
            .filter_map(|buf| {
                let p = [pos[0].next()?, pos[1].next()?, pos[2].next()?];
                let a = [sums[0].next()?, sums[1].next()?, sums[2].next()?, sums[3].next()?];
                Some(MixedPart { pos: p, acc: a, buf })
            })
            .collect();
        let srcs = MixedSources { pos: [&src[0], &src[1], &src[2]], mass };
        let run = |mut part: MixedPart<'_>| {
            // SAFETY: `kernel` suits this CPU and every part holds whole blocks.
            unsafe { kernel(&mut part, &srcs, eps2) }
        };
        crate::run_parts(self.full.pool.as_ref(), work, run);
        let (t0, s0, len) = params.overlap.resolve(targets.len());
        let (acc, order) = (&self.scratch.acc, &self.scratch.order);
        for (k, &i) in order.iter().enumerate() {
            let i = i as usize;
            let mut f = Field::new(acc[0][k], acc[1][k], acc[2][k], acc[3][k]);
            if !masked && i >= t0 && i < t0 + len {
                // Remove the f32 kernel's self term as it computed it: m / eps in f32.
                f.phi += self_potential(sources[s0 + i - t0].m as f32, eps2) as f64;
            }
            nbody_core::kernel::finish(params.g, &f, params.potential, &mut out[i]);
        }
        Ok(())
    }

    /// In f64, by the CPU executor it carries.
    unsafe fn accelerations_jerk_unchecked(
        &mut self,
        targets: Bodies<'_, f64>,
        sources: Bodies<'_, f64>,
        params: &Params<f64>,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
    ) -> Result<(), Error> {
        // SAFETY: the same call, the same contract.
        unsafe { self.full.accelerations_jerk_unchecked(targets, sources, params, out, jerk) }
    }

    /// In f64, by the CPU executor it carries (neighbours found in its force pass).
    unsafe fn accelerations_jerk_neighbours_unchecked(
        &mut self,
        targets: Bodies<'_, f64>,
        sources: Bodies<'_, f64>,
        params: &Params<f64>,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
        neighbours: &mut nbody_core::neighbours::Neighbours<'_, f64>,
    ) -> Result<(), Error> {
        // SAFETY: the same call, the same contract.
        unsafe { self.full.accelerations_jerk_neighbours_unchecked(targets, sources, params, out, jerk, neighbours) }
    }
}

impl nbody_core::projection::Project<f64> for MixedExecutor {
    /// Deposits with the threads of the f64 executor it carries.
    fn project(
        &mut self,
        particles: &[nbody_core::Particle<f64>],
        projection: &nbody_core::projection::Projection,
        grid: &mut [f64],
    ) -> Result<(), Error> {
        self.full.project(particles, projection, grid)
    }
}

/// Offsets are rounded to f32 and squared: the system must span less than this (see
/// [`nbody_core::validate::MIXED_MAX_EXTENT`]).
pub const MAX_EXTENT: f64 = validate::MIXED_MAX_EXTENT;

fn stage(s: &mut Scratch, targets: &[Particle<f64>], sources: &[Particle<f64>], parts: usize) {
    let padded = targets.len().next_multiple_of(BLOCK);
    morton_order(targets, &mut s.order);
    for (k, v) in s.tpos.iter_mut().enumerate() {
        v.clear();
        v.extend(s.order.iter().map(|&i| targets[i as usize].position()[k]));
        // Padding targets sit on the last real one, so block centres are not dragged.
        let last = v[v.len() - 1];
        v.resize(padded, last);
    }
    for v in &mut s.acc {
        v.clear();
        v.resize(padded, 0.0);
    }
    for (k, v) in s.src.iter_mut().enumerate() {
        v.clear();
        v.extend(sources.iter().map(|p| p.position()[k]));
    }
    s.mass.clear();
    s.mass.extend(sources.iter().map(|p| p.m as f32));
    if s.threads.len() < parts {
        s.threads.resize(parts, ThreadBuf::default());
    }
    for t in &mut s.threads[..parts] {
        t.tile.iter_mut().for_each(|v| v.resize(TILE, 0.0));
        t.targets.iter_mut().for_each(|v| v.resize(BLOCK, 0.0));
        t.sums.iter_mut().for_each(|v| v.resize(BLOCK, 0.0));
    }
}

/// `dst[i] = (xs[i] - centre)` rounded to f32: the subtraction exact-ish in f64 first.
#[inline(always)]
fn offsets(dst: &mut [f32], xs: &[f64], centre: f64) {
    for (d, &x) in dst.iter_mut().zip(xs) {
        *d = (x - centre) as f32;
    }
}

/// Blocks outer (each has its own centre), source tiles inner.
#[inline(always)]
unsafe fn drive<S: Simd<T = f32>, const U: usize, const POT: bool, const MASK: bool>(
    part: &mut MixedPart<'_>,
    src: &MixedSources<'_>,
    eps2: f32,
) {
    // SAFETY: the caller's contract: this CPU has the backend's features.
    unsafe {
        let bs = U * S::LANES;
        debug_assert_eq!(BLOCK % bs, 0);
        let n = src.mass.len();
        let buf = &mut *part.buf;
        for b in (0..part.pos[0].len()).step_by(BLOCK) {
            let r = b..b + BLOCK;
            // Centre of the block's bounding box (f64), per axis; but the origin where the box
            // is wider than its distance from it (a sparse block): offsets are then never
            // larger than the coordinates, and the error never worse than plain f32's.
            let c: [f64; 3] = core::array::from_fn(|k| {
                let xs = &part.pos[k][r.clone()];
                let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
                let mid = 0.5 * (lo + hi);
                if hi - lo >= mid.abs() {
                    0.0
                } else {
                    mid
                }
            });
            for ((dst, pos), ck) in buf.targets.iter_mut().zip(&part.pos).zip(c) {
                offsets(dst, &pos[r.clone()], ck);
            }
            let mut total = [[0.0f64; BLOCK]; 4];
            for t0 in (0..n).step_by(TILE) {
                let t1 = (t0 + TILE).min(n);
                for ((dst, pos), ck) in buf.tile.iter_mut().zip(&src.pos).zip(c) {
                    offsets(dst, &pos[t0..t1], ck);
                }
                buf.sums.iter_mut().for_each(|v| v.fill(0.0));
                let len = t1 - t0;
                let tile = SourcesSoa {
                    x: &buf.tile[0][..len],
                    y: &buf.tile[1][..len],
                    z: &buf.tile[2][..len],
                    m: &src.mass[t0..t1],
                    vx: &[],
                    vy: &[],
                    vz: &[],
                };
                for v in (0..BLOCK).step_by(bs) {
                    let q = v..v + bs;
                    let [ax, ay, az, phi] = &mut buf.sums;
                    let mut blk = Block {
                        pos: [&buf.targets[0][q.clone()], &buf.targets[1][q.clone()], &buf.targets[2][q.clone()]],
                        vel: [&[], &[], &[]],
                        acc: [&mut ax[q.clone()], &mut ay[q.clone()], &mut az[q.clone()], &mut phi[q]],
                        jerk: [&mut [], &mut [], &mut []],
                    };
                    accumulate::<S, U, POT, MASK>(&mut blk, &tile, eps2);
                }
                for (tot, sum) in total.iter_mut().zip(&buf.sums) {
                    for (t, &s) in tot.iter_mut().zip(sum) {
                        *t += s as f64;
                    }
                }
            }
            for (dst, tot) in part.acc.iter_mut().zip(&total) {
                dst[r.clone()].copy_from_slice(tot);
            }
        }
    }
}

macro_rules! mixed_entry {
    ($($isa:ident => $s:ty, $u:literal $(, #[$feat:meta])?);* $(;)?) => {
        fn select(isa: Isa, pot: bool, mask: bool) -> MixedFn {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k<const P: bool, const M: bool>(part: &mut MixedPart<'_>, src: &MixedSources<'_>, eps2: f32) {
                        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features).
                        unsafe {
                            drive::<$s, $u, P, M>(part, src, eps2)
                        }
                    }
                    return crate::dispatch::by_flags!(k, pot, mask);
                }
            )*
            unsafe fn portable(part: &mut MixedPart<'_>, src: &MixedSources<'_>, eps2: f32) {
                // SAFETY: drive's contract is the caller's (the portable backend needs no feature).
                unsafe {
                    if eps2 == 0.0 {
                        drive::<Portable<f32>, 1, true, true>(part, src, eps2)
                    } else {
                        drive::<Portable<f32>, 1, true, false>(part, src, eps2)
                    }
                }
            }
            portable
        }
    };
}

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2F32, Avx512F32};

#[cfg(target_arch = "x86_64")]
mixed_entry!(
    Avx512 => Avx512F32, 1, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F32, 2, #[target_feature(enable = "avx2,fma")];
    Portable => Portable<f32>, 2;
);

#[cfg(not(target_arch = "x86_64"))]
mixed_entry!(Portable => Portable<f32>, 1;);
