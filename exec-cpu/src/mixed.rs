//! Mixed precision: positions and sums in f64, each interaction in f32 on coordinates
//! relative to the centre of its target block.
//!
//! Plain f32 loses `|x| · 2^-24` of every coordinate, so its error grows with the
//! distance of the system from the origin. Here each block of 16 targets converts the
//! sources, tile by tile, to f32 offsets from the block's centre (f64 subtraction, then
//! rounding): the rounding is relative to the offsets, not to the absolute positions, and
//! a system shifted by 1e4 keeps the error it had at the origin. Blocks are formed from
//! the targets in Morton order, so most are compact; sources are taken in Morton order
//! too, so most tiles are compact and far from a given block.
//!
//! A rounded offset errs by `2^-24 |offset|`, which is not small beside a close pair's
//! separation when the block is wide (16 targets of a Morton run can straddle a jump of
//! the curve: 4.0e-6 on the 65,536-body Plummer sphere shifted by 1e4 with rounded
//! offsets alone). And however exact its separation, a pair in f32 errs by a few 2^-24 of
//! its pull, which is far from small beside the net pull of a target whose nearest
//! neighbour pulls many times harder than the whole system (clustered, mass-spread
//! systems: 5.5e-6 with close pairs in double-single f32). So sources nearer a block
//! than half its reach (its targets' largest distance from the centre), found by the
//! boxes of chunks of 16 sources, are taken in f64 on the coordinates themselves (with
//! `1/r` to 2^-33 or better rather than to its last bit: the pairs' errors are weighed
//! against f32's, and on AVX2 this skips the last Newton step); the rest in f32, whose
//! float separations err by at most `6 * 2^-24 |d|` (see `is_far`).
//!
//! Few targets need those near sources in f64, and at small N they are a third of all
//! pairs. So a softened call takes them in f32 first, each pair adding an estimate of its
//! rounding error, and a target takes them again in f64, on its own, only when its
//! estimate exceeds `TOLERANCE` of its pull (see `drive`). The chunk that holds a target's own
//! source always runs in f64: its pair at zero distance has no error, but the estimate
//! cannot tell it from a very close pair, which has.
//! Partial sums of f32 runs are f32 and are added into f64 sums.

use crate::Parallelism;
use crate::dispatch::Isa;
use crate::kernel::{Block, ErrorEstimate, SourcesSoa, accumulate_split};
use crate::simd::{Portable, Short, Simd};
use core::ops::Range;
use nbody_core::calls::{DirectCall, JerkCall, NeighboursCall};
use nbody_core::kernel::self_potential;
use nbody_core::layout::morton_order;
use nbody_core::{Error, Executor, Field, Particle, validate};

/// The mixed-precision CPU executor (an `Executor<f64>`). The jerk kernel runs in full
/// f64 (through [`crate::CpuExecutor`]): Hermite integrators need its accuracy.
///
/// Its range is f32's on the offsets: systems wider than [`MAX_EXTENT`] are refused.
/// Without softening, pairs at zero distance are skipped, and so are pairs taken in f32
/// whose separation's square is below the smallest normal f32 (about 1e-19; pairs that
/// close are taken in f64 unless all 16 targets of a block are that close together).
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
    /// Sources x, y, z (f64) and masses (f32), in Morton order, and the bounding box of
    /// each tile of them (lo x, y, z, hi x, y, z).
    src: [Vec<f64>; 3],
    mass: Vec<f32>,
    mass64: Vec<f64>,
    boxes: Vec<[f64; 6]>,
    /// The box of each chunk of [`CHUNK`] sources (chunks do not straddle tiles).
    chunk_boxes: Vec<[f64; 6]>,
    /// Targets in Morton order: slot k of the padded arrays holds target `order[k]`.
    order: Vec<u32>,
    /// Sources in Morton order (when they are not the targets).
    src_order: Vec<u32>,
    /// Per thread: a relative source tile (x, y, z) and a block's relative targets and sums.
    threads: Vec<ThreadBuf>,
}

#[derive(Default, Clone, Debug)]
struct ThreadBuf {
    tile: [Vec<f32>; 3],
    targets: [Vec<f32>; 3],
    sums: [Vec<f32>; 4],
    sums64: [Vec<f64>; 4],
    /// A block's error estimates (see `drive`) and the runs they cover.
    err: Vec<f32>,
    estimated: Vec<Range<usize>>,
}

/// One thread's share: whole blocks of targets and their f64 sums.
pub(crate) struct MixedPart<'a> {
    pos: [&'a [f64]; 3],
    acc: [&'a mut [f64]; 4],
    buf: &'a mut ThreadBuf,
}

/// Sources as the mixed kernel reads them: in Morton order, with each tile's and each
/// chunk's box.
pub(crate) struct MixedSources<'a> {
    pos: [&'a [f64]; 3],
    mass: &'a [f32],
    mass64: &'a [f64],
    boxes: &'a [[f64; 6]],
    chunk_boxes: &'a [[f64; 6]],
    /// The targets are these sources: block `b..b + BLOCK` meets itself in the chunk
    /// that starts at `b`.
    identical: bool,
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

    /// Refuses a system wider than [`MAX_EXTENT`]. The spline softening runs in f64 on
    /// the CPU executor it carries (the mixed kernels are Plummer's).
    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, f64>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        if validate::plummer_only(params, "cpu-mixed").is_err() {
            // SAFETY: the same call, the same contract.
            return unsafe { self.full.accelerations_unchecked(DirectCall { targets, sources, params, out }) };
        }
        validate::mixed_extent(targets, sources)?;
        let eps32 = params.eps as f32;
        let eps2 = eps32 * eps32;
        // The f32 kernel decides masking; the self term follows the same decision.
        let masked = eps2 == 0.0;
        let kernel = select(self.full.isa(), params.potential, masked);
        let parts = self.full.threads().min(targets.len().div_ceil(BLOCK)).max(1);
        let s = &mut self.scratch;
        stage(s, targets, sources, parts);
        let Scratch { tpos, acc, src, mass, mass64, boxes, chunk_boxes, threads, .. } = s;
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
        let identical = core::ptr::eq(targets, sources);
        let srcs = MixedSources { pos: [&src[0], &src[1], &src[2]], mass, mass64, boxes, chunk_boxes, identical };
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
                // Remove the self term as the f64 path computed it (a particle is always
                // near its own block): m / eps with eps rounded to f32, as the kernels use it.
                f.phi += self_potential(sources[s0 + i - t0].m, eps2 as f64);
            }
            nbody_core::kernel::finish(params.g, &f, params.potential, &mut out[i]);
        }
        Ok(())
    }

    /// In f64, by the CPU executor it carries.
    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, f64>) -> Result<(), Error> {
        // SAFETY: the same call, the same contract.
        unsafe { self.full.accelerations_jerk_unchecked(call) }
    }

    /// In f64, by the CPU executor it carries (neighbours found in its force pass).
    unsafe fn accelerations_jerk_neighbours_unchecked(
        &mut self,
        call: NeighboursCall<'_, '_, f64>,
    ) -> Result<(), Error> {
        // SAFETY: the same call, the same contract.
        unsafe { self.full.accelerations_jerk_neighbours_unchecked(call) }
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

/// Sources per tile, each tile with its box; a far tile's f32 sums go into the f64
/// totals once.
const TILE: usize = 512;
/// Sources per chunk of a near tile: each chunk with its own box, in f64 where it is near
/// the block and in f32 otherwise. Small, so that the boxes are tight and few sources
/// take the slower f64 path. As long as a block, so that a block of targets that are the
/// sources meets itself in one chunk.
const CHUNK: usize = 16;
const _: () = assert!(CHUNK == BLOCK && TILE.is_multiple_of(CHUNK));
/// Sources nearer a block than `NEAR` times its reach are taken in f64 (see `is_far`):
/// these hold every target's nearest neighbours, whose pulls can be many times the net
/// pull, where f32's rounding of a pair would show.
const NEAR: f64 = 0.5;
/// A softened call keeps a target's near sources in f32 while its error estimate (see
/// `drive`) stays below this fraction of its pull. On the clustered test's systems
/// (worst relative error over every target, bound 2e-6) 1e-5 gives the same worst error
/// as near sources always in f64, and 2e-5 exceeds the bound; 17 of the 4,096 targets of
/// a Plummer sphere take their near sources again in f64.
const TOLERANCE: f64 = 1e-5;
/// The estimate's constant: a float separation errs by up to `2^-24 (|t - c| + |s - c| +
/// |d|) <= 2^-24 (2 |d| + 2 reach)` and the weight `m / r³` by a few 2^-24, so a pair's
/// pull errs by up to `2^-24 m/r³ (8 |d| + 8 reach)`, whose square is at most
/// `128 · 2^-48 (m/r³)² (d² + reach²)`. The squares are summed (rounding errors are
/// independent), and the estimate is the root of the sum.
const ERROR_UNIT2: f64 = 128.0 / (16_777_216.0 * 16_777_216.0);
/// Sources per inner f32 sum in the kernel (two-level sums; see `accumulate_split`). On a
/// clustered, mass-spread system the targets at the blobs' centres have small net pulls
/// summed from large opposed ones, and one f32 sum over a tile's sources cost them most
/// of their error (65,536 particles, two Plummer blobs, log-normal masses, every target
/// against f64: max 3.8e-6 with one sum per tile, 2.4e-6 with runs of 32, 1.3e-6 with 8).
const SUM_RUN: usize = 8;
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
    // The sum is over all sources, so their order is ours to choose.
    let order = if core::ptr::eq(targets, sources) {
        &s.order
    } else {
        morton_order(sources, &mut s.src_order);
        &s.src_order
    };
    for (k, v) in s.src.iter_mut().enumerate() {
        v.clear();
        v.extend(order.iter().map(|&i| sources[i as usize].position()[k]));
    }
    s.mass64.clear();
    s.mass64.extend(order.iter().map(|&i| sources[i as usize].m));
    s.mass.clear();
    s.mass.extend(s.mass64.iter().map(|&m| m as f32));
    boxes_of_runs(&mut s.boxes, &s.src, TILE);
    boxes_of_runs(&mut s.chunk_boxes, &s.src, CHUNK);
    if s.threads.len() < parts {
        s.threads.resize(parts, ThreadBuf::default());
    }
    for t in &mut s.threads[..parts] {
        t.tile.iter_mut().for_each(|v| v.resize(TILE, 0.0));
        t.targets.iter_mut().for_each(|v| v.resize(BLOCK, 0.0));
        t.sums.iter_mut().for_each(|v| v.resize(BLOCK, 0.0));
        t.sums64.iter_mut().for_each(|v| v.resize(BLOCK, 0.0));
        t.err.resize(BLOCK, 0.0);
    }
}

/// `dst[i] = (xs[i] - centre)` rounded to f32 (the subtraction in f64 first).
#[inline(always)]
fn offsets(dst: &mut [f32], xs: &[f64], centre: f64) {
    for (d, &x) in dst.iter_mut().zip(xs) {
        *d = (x - centre) as f32;
    }
}

/// The bounding box of points given by their coordinates: lo x, y, z, hi x, y, z.
#[inline(always)]
fn bounding_box(xyz: [&[f64]; 3]) -> [f64; 6] {
    let mut b = [f64::INFINITY, f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    for (k, xs) in xyz.into_iter().enumerate() {
        for &x in xs {
            b[k] = b[k].min(x);
            b[k + 3] = b[k + 3].max(x);
        }
    }
    b
}

/// `boxes` becomes the bounding box of each run of `size` points of `xyz` (the last run
/// may be shorter).
fn boxes_of_runs(boxes: &mut Vec<[f64; 6]>, xyz: &[Vec<f64>; 3], size: usize) {
    let n = xyz[0].len();
    boxes.clear();
    boxes.extend((0..n).step_by(size).map(|a| {
        let b = (a + size).min(n);
        bounding_box(xyz.each_ref().map(|v| &v[a..b]))
    }));
}

/// How a run of a tile's sources is taken: in f32 (far from the block), in f64, or in
/// f32 with an error estimate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    Far,
    Exact,
    Estimated,
}

/// Whether sources in the box `tile` are at least `near` (`near2` its square) from the
/// block's box: then a float separation errs by at most
/// `2^-24 (|s - c| + |t - c| + |d|) <= 2^-24 (2 |d| + 2 reach)`, that is at most
/// `6 * 2^-24 |d|` with `near` = `reach` / 2 (`reach`: the targets' largest distance from
/// the centre `c`). A box touching the block's is never far (even for a block of one
/// point, whose reach is 0), so every particle meets itself in f64.
#[inline(always)]
fn is_far(tile: &[f64; 6], block: &[f64; 6], near2: f64) -> bool {
    let gap2: f64 = (0..3)
        .map(|k| {
            let gap = (tile[k] - block[k + 3]).max(block[k] - tile[k + 3]).max(0.0);
            gap * gap
        })
        .sum();
    gap2 > 0.0 && gap2 >= near2
}

/// Blocks outer (each has its own centre), source tiles inner: a far tile in f32 on
/// float offsets, a near one chunk by chunk, each chunk far enough in f32 and the rest in
/// f64.
#[inline(always)]
unsafe fn drive<S, const U: usize, D, const UD: usize, const POT: bool, const MASK: bool>(
    part: &mut MixedPart<'_>,
    src: &MixedSources<'_>,
    eps2: f32,
) where
    S: Simd<T = f32>,
    D: Simd<T = f64>,
{
    // SAFETY: the caller's contract: this CPU has the backends' features.
    unsafe {
        let (bs, bd) = (U * S::LANES, UD * D::LANES);
        debug_assert_eq!(BLOCK % bs, 0);
        debug_assert_eq!(BLOCK % bd, 0);
        let eps2_64 = eps2 as f64;
        let n = src.mass.len();
        let buf = &mut *part.buf;
        for b in (0..part.pos[0].len()).step_by(BLOCK) {
            let r = b..b + BLOCK;
            // The block's box and its centre: every decision below depends on the
            // particles' relative positions only, so a shifted system gets the same
            // error.
            let bbox = bounding_box(part.pos.each_ref().map(|v| &v[r.clone()]));
            let c: [f64; 3] = core::array::from_fn(|k| 0.5 * (bbox[k] + bbox[k + 3]));
            let reach2 = (0..BLOCK)
                .map(|i| (0..3).map(|k| (part.pos[k][b + i] - c[k]).powi(2)).sum::<f64>())
                .fold(0.0, f64::max);
            for (dst, k) in buf.targets.iter_mut().zip(0..3) {
                offsets(dst, &part.pos[k][r.clone()], c[k]);
            }
            let mut total = [[0.0f64; BLOCK]; 4];
            let targets = part.pos.each_ref().map(|p| &p[r.clone()]);
            let near2 = reach2 * NEAR * NEAR;
            // Softened, the near sources run in f32 into `near`, and each pair adds
            // (m/r³)² (r² + reach²) to its target's estimate (see ERROR_UNIT2), except
            // where they may hold a target's own point (its own chunk when the targets are
            // the sources, else any chunk whose box touches the block's): those in f64.
            // Unsoftened, a pair too close for f32 would be dropped, so all run in f64.
            let mut near = [[0.0f64; BLOCK]; 4];
            buf.err.fill(0.0);
            buf.estimated.clear();
            for (t0, tile_box) in (0..n).step_by(TILE).zip(src.boxes) {
                let t1 = (t0 + TILE).min(n);
                // The tile's runs: all of it in f32 when it is the block's reach away; else
                // chunk by chunk, each chunk in f32 on its own (short f32 sums: near a
                // block, large pulls cancel in them) or in f64. Each kernel has one
                // call site: with two, the inliner leaves the kernels' closures outlined,
                // without the target features.
                let mut runs = [(0, 0, Run::Far); TILE / CHUNK];
                let mut len: usize = 1;
                runs[0] = (t0, t1, Run::Far);
                if !is_far(tile_box, &bbox, reach2) {
                    len = 0;
                    for (c0, chunk_box) in (t0..t1).step_by(CHUNK).zip(&src.chunk_boxes[t0 / CHUNK..]) {
                        let c1 = (c0 + CHUNK).min(t1);
                        let own = if src.identical { c0 == b } else { !is_far(chunk_box, &bbox, 0.0) };
                        let run = match is_far(chunk_box, &bbox, near2) {
                            true => Run::Far,
                            false if MASK || own => Run::Exact,
                            false => Run::Estimated,
                        };
                        // Consecutive f64 chunks join into one run.
                        match len.checked_sub(1).map(|l| &mut runs[l]) {
                            Some(last) if run == Run::Exact && last.2 == run => last.1 = c1,
                            _ => {
                                runs[len] = (c0, c1, run);
                                len += 1;
                            }
                        }
                    }
                }
                for &(s0, s1, run) in &runs[..len] {
                    if run == Run::Exact {
                        exact::<Short<D>, UD, POT, MASK>(&mut buf.sums64, targets, src, s0..s1, eps2_64, &mut total);
                        continue;
                    }
                    let estimated = run == Run::Estimated;
                    let (dst, estimate) = if estimated { (&mut near, Some(reach2 as f32)) } else { (&mut total, None) };
                    float::<S, U, POT, MASK>(buf, src, s0..s1, c, eps2, dst, estimate);
                    if estimated {
                        match buf.estimated.last_mut() {
                            Some(last) if last.end == s0 => last.end = s1,
                            _ => buf.estimated.push(s0..s1),
                        }
                    }
                }
            }
            // A target whose estimate exceeds TOLERANCE of its pull (or is not finite) takes
            // the estimated runs again in f64, alone: few do (17 of 4,096 on the Plummer
            // sphere), and their blocks' other targets keep their f32 sums.
            for i in 0..BLOCK {
                let a2: f64 = (0..3).map(|k| (total[k][i] + near[k][i]).powi(2)).sum();
                let e2 = ERROR_UNIT2 * buf.err[i] as f64;
                if e2.is_nan() || e2 > TOLERANCE * TOLERANCE * a2 {
                    let redone = exact_one::<POT>(targets.map(|t| t[i]), src, &buf.estimated, eps2_64);
                    for (k, v) in redone.into_iter().enumerate() {
                        near[k][i] = v;
                    }
                }
            }
            add_into(&mut total, &near);
            for (dst, tot) in part.acc.iter_mut().zip(&total) {
                dst[r.clone()].copy_from_slice(tot);
            }
        }
    }
}

/// Sources `s` in f32 on offsets from the block's centre `c` (its targets' offsets are
/// in `buf.targets`), summed in f32 and then added into `total`; with `estimate` (the
/// square of the block's reach), each pair's error term is added into `buf.err`.
///
/// # Safety
/// This CPU has the backend's features.
#[inline(always)]
unsafe fn float<S: Simd<T = f32>, const U: usize, const POT: bool, const MASK: bool>(
    buf: &mut ThreadBuf,
    src: &MixedSources<'_>,
    s: Range<usize>,
    c: [f64; 3],
    eps2: f32,
    total: &mut [[f64; BLOCK]; 4],
    estimate: Option<f32>,
) {
    let len = s.len();
    for (dst, (pos, ck)) in buf.tile.iter_mut().zip(src.pos.iter().zip(c)) {
        offsets(&mut dst[..len], &pos[s.clone()], ck);
    }
    let tile = SourcesSoa::positions(buf.tile.each_ref().map(|v| &v[..len]), &src.mass[s]);
    let bs = U * S::LANES;
    for v in (0..BLOCK).step_by(bs) {
        let q = v..v + bs;
        let [ax, ay, az, phi] = &mut buf.sums;
        let mut blk = Block::plain(
            buf.targets.each_ref().map(|t| &t[q.clone()]),
            [&mut ax[q.clone()], &mut ay[q.clone()], &mut az[q.clone()], &mut phi[q.clone()]],
        );
        let estimate = estimate.map(|base| ErrorEstimate { sums: &mut buf.err[q.clone()], base });
        // SAFETY: the caller's contract; every slice of the block holds `bs` values.
        unsafe { accumulate_split::<S, U, POT, MASK, false, false, SUM_RUN>(&mut blk, &tile, eps2, estimate) };
    }
    add_into(total, &buf.sums);
}

/// Sources `s` in f64 on the coordinates themselves against the block's `targets`
/// (`D` is [`Short`]: `1/r` to 2^-33 or better), added into `total` (`sums` is scratch
/// for one block).
///
/// # Safety
/// This CPU has the backend's features.
#[inline(always)]
unsafe fn exact<D: Simd<T = f64>, const UD: usize, const POT: bool, const MASK: bool>(
    sums: &mut [Vec<f64>; 4],
    targets: [&[f64]; 3],
    src: &MixedSources<'_>,
    s: Range<usize>,
    eps2: f64,
    total: &mut [[f64; BLOCK]; 4],
) {
    let tile = SourcesSoa::positions(src.pos.map(|v| &v[s.clone()]), &src.mass64[s]);
    let bd = UD * D::LANES;
    for v in (0..BLOCK).step_by(bd) {
        let q = v..v + bd;
        let [ax, ay, az, phi] = sums;
        let mut blk = Block::plain(
            targets.map(|t| &t[q.clone()]),
            [&mut ax[q.clone()], &mut ay[q.clone()], &mut az[q.clone()], &mut phi[q.clone()]],
        );
        // SAFETY: the caller's contract; every slice of the block holds `bd` values.
        unsafe { accumulate_split::<D, UD, POT, MASK, false, false, 0>(&mut blk, &tile, eps2, None) };
    }
    add_into(total, sums);
}

/// One target at `xi` against the sources of `runs` in f64, with `1/r` exact (softened
/// calls only); its sums in the kernels' order (ax, ay, az, phi), phi zero without `POT`.
fn exact_one<const POT: bool>(xi: [f64; 3], src: &MixedSources<'_>, runs: &[Range<usize>], eps2: f64) -> [f64; 4] {
    let mut f = Field::zero();
    for j in runs.iter().flat_map(|s| s.clone()) {
        let p = Particle::new(src.pos[0][j], src.pos[1][j], src.pos[2][j], src.mass64[j]);
        nbody_core::kernel::pair(xi, &p, eps2, false, &mut f);
    }
    [f.ax, f.ay, f.az, if POT { f.phi } else { 0.0 }]
}

/// Adds a block's partial sums into its f64 totals.
#[inline(always)]
fn add_into<T: Copy + Into<f64>, A: AsRef<[T]>>(total: &mut [[f64; BLOCK]; 4], sums: &[A; 4]) {
    for (tot, sum) in total.iter_mut().zip(sums) {
        for (t, &s) in tot.iter_mut().zip(sum.as_ref()) {
            *t += s.into();
        }
    }
}

macro_rules! mixed_entry {
    ($($isa:ident => $s:ty, $u:literal, $d:ty, $ud:literal $(, #[$feat:meta])?);* $(;)?) => {
        fn select(isa: Isa, pot: bool, mask: bool) -> MixedFn {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k<const P: bool, const M: bool>(part: &mut MixedPart<'_>, src: &MixedSources<'_>, eps2: f32) {
                        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features).
                        unsafe {
                            drive::<$s, $u, $d, $ud, P, M>(part, src, eps2)
                        }
                    }
                    return crate::dispatch::by_flags!(k, pot, mask);
                }
            )*
            unsafe fn portable(part: &mut MixedPart<'_>, src: &MixedSources<'_>, eps2: f32) {
                // SAFETY: drive's contract is the caller's (the portable backend needs no feature).
                unsafe {
                    if eps2 == 0.0 {
                        drive::<Portable<f32>, 1, Portable<f64>, 1, true, true>(part, src, eps2)
                    } else {
                        drive::<Portable<f32>, 1, Portable<f64>, 1, true, false>(part, src, eps2)
                    }
                }
            }
            portable
        }
    };
}

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2F32, Avx2F64, Avx512F32, Avx512F64};

#[cfg(target_arch = "x86_64")]
mixed_entry!(
    Avx512 => Avx512F32, 1, Avx512F64, 2, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F32, 2, Avx2F64, 4, #[target_feature(enable = "avx2,fma")];
    Portable => Portable<f32>, 2, Portable<f64>, 2;
);

#[cfg(not(target_arch = "x86_64"))]
mixed_entry!(Portable => Portable<f32>, 1, Portable<f64>, 1;);
