//! # nbody-cpu
//!
//! The CPU executor: tiled SIMD kernels (AVX-512 or AVX2+FMA chosen at run time from
//! the CPU's features, a portable fallback that the compiler vectorizes), threads over
//! target blocks with the thread count given by the caller, and a mixed-precision mode
//! (positions and sums in f64, each interaction in f32 relative to its target block).
//!
//! ```
//! use nbody_core::{Executor, Field, Params};
//! use nbody_cpu::{CpuExecutor, Parallelism};
//!
//! let (bodies, _) = nbody_integrators::ics::plummer::<f32>(2048, 1);
//! let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
//! let mut field = vec![Field::zero(); bodies.len()];
//! cpu.accelerations(&bodies, &bodies, &Params::softened(0.01).with_overlap_identical(), &mut field)?;
//! assert!(field.iter().all(|f| f.phi < 0.0));
//! # Ok::<(), nbody_core::Error>(())
//! ```

#![warn(missing_docs)]

mod cells;
mod dispatch;
mod gradients;
mod kernel;
pub mod lists;
mod mixed;
mod scratch;
mod simd;
mod team;

pub use dispatch::Isa;
pub use mixed::{MAX_EXTENT, MixedExecutor};

use nbody_core::calls::{
    BatchCall, BatchCellsCall, BatchPerParticleCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall,
    TidalCall, VjpBatchCall, VjpCall,
};
use nbody_core::kernel::Softened;
use nbody_core::neighbours::Neighbours;
use nbody_core::{
    Bodies, Error, Executor, Field, Jerk, Overlap, Params, Particle, PerParticle, Real, Softening, validate,
};
use scratch::Scratch;

/// How many threads a call may use. A tree code that already calls the kernel from its
/// own threads passes `Sequential`; nothing here starts threads unless asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parallelism {
    /// The calling thread only.
    Sequential,
    /// A pool of this many threads, owned by the executor and reused across calls.
    Threads(usize),
}

impl Parallelism {
    /// `threads` threads in all: `Sequential` for 0 or 1.
    ///
    /// ```
    /// use nbody_cpu::Parallelism;
    /// assert_eq!(Parallelism::threads(1), Parallelism::Sequential);
    /// assert_eq!(Parallelism::threads(4), Parallelism::Threads(4));
    /// ```
    pub fn threads(threads: usize) -> Self {
        if threads <= 1 { Parallelism::Sequential } else { Parallelism::Threads(threads) }
    }
}

/// The CPU executor. Keeps its scratch (SoA copies, accumulators) and its thread pool
/// across calls, so the hot path does not allocate once sizes stop growing.
#[derive(Debug)]
pub struct CpuExecutor {
    isa: Isa,
    pool: Option<team::Team>,
    threads: usize,
    s32: Scratch<f32>,
    s64: Scratch<f64>,
    /// Sequential executors, one per thread, for batched calls (made on first use).
    workers: Vec<CpuExecutor>,
}

impl CpuExecutor {
    /// An executor using the best instruction set this CPU has.
    pub fn new(parallelism: Parallelism) -> Self {
        Self::with_isa(parallelism, Isa::detect())
    }

    /// An executor forced to one instruction set; falls back to the best available if
    /// this CPU lacks it (see [`CpuExecutor::isa`]).
    pub fn with_isa(parallelism: Parallelism, isa: Isa) -> Self {
        let threads = match parallelism {
            Parallelism::Sequential => 1,
            Parallelism::Threads(n) => n.max(1),
        };
        let pool = (threads > 1).then(|| team::Team::new(threads));
        Self {
            isa: isa.available_or_best(),
            pool,
            threads,
            s32: Scratch::default(),
            s64: Scratch::default(),
            workers: Vec::new(),
        }
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Threads a call uses.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

/// Below this many sources per thread a call of few targets runs on fewer threads: a
/// part must outweigh the threads' handshake (about a microsecond).
const SOURCES_PER_PART: usize = 256;

/// A batched product's span on itself from this many particles runs on every thread (a
/// tree's leaf, a few hundred at most, stays on the calling thread).
const WHOLE_ON_THREADS: usize = 2048;

/// Runs `f` on every part: the calling thread and the team's spinning workers take
/// parts in turn (inline without a team). No thread is woken on the critical path of a
/// call that follows another within the workers' spin time (team.rs).
fn run_parts<P: Send>(pool: Option<&team::Team>, parts: Vec<P>, f: impl Fn(P) + Sync) {
    match pool {
        Some(team) if parts.len() > 1 => {
            let n = parts.len();
            let slots: Vec<std::sync::Mutex<Option<P>>> =
                parts.into_iter().map(|p| std::sync::Mutex::new(Some(p))).collect();
            let next = std::sync::atomic::AtomicUsize::new(0);
            team.run(n.min(team.threads()), &|_| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if k >= n {
                    break;
                }
                if let Some(part) = slots[k].lock().ok().and_then(|mut p| p.take()) {
                    f(part);
                }
            });
        }
        _ => parts.into_iter().for_each(f),
    }
}

/// The precisions the CPU kernels exist for.
pub trait CpuReal: Real {
    #[doc(hidden)]
    fn scratch<'a>(s32: &'a mut Scratch<f32>, s64: &'a mut Scratch<f64>) -> &'a mut Scratch<Self>;
    #[doc(hidden)]
    fn kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<Self>;
    #[doc(hidden)]
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<Self>;
    #[doc(hidden)]
    fn cell_kernel(isa: Isa) -> cells::CellFn<Self>;
    /// The kernel with a softening per particle.
    fn each_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<Self>;
    #[doc(hidden)]
    fn gradient_passes(isa: Isa, masked: bool) -> gradients::Passes<Self>;
}

impl CpuReal for f32 {
    fn scratch<'a>(s32: &'a mut Scratch<f32>, _: &'a mut Scratch<f64>) -> &'a mut Scratch<f32> {
        s32
    }
    fn gradient_passes(isa: Isa, masked: bool) -> gradients::Passes<f32> {
        gradients::f32_passes(isa, masked)
    }
    fn kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f32> {
        dispatch::f32_kernel(isa, potential, masked, softening)
    }
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f32> {
        dispatch::f32_jerk_kernel(isa, potential, masked, softening)
    }
    fn each_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f32> {
        dispatch::f32_each_kernel(isa, potential, masked, softening)
    }
    fn cell_kernel(isa: Isa) -> cells::CellFn<f32> {
        cells::f32_cell_kernel(isa)
    }
}

impl CpuReal for f64 {
    fn scratch<'a>(_: &'a mut Scratch<f32>, s64: &'a mut Scratch<f64>) -> &'a mut Scratch<f64> {
        s64
    }
    fn gradient_passes(isa: Isa, masked: bool) -> gradients::Passes<f64> {
        gradients::f64_passes(isa, masked)
    }
    fn kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f64> {
        dispatch::f64_kernel(isa, potential, masked, softening)
    }
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f64> {
        dispatch::f64_jerk_kernel(isa, potential, masked, softening)
    }
    fn each_kernel(isa: Isa, potential: bool, masked: bool, softening: Softening) -> dispatch::KernelFn<f64> {
        dispatch::f64_each_kernel(isa, potential, masked, softening)
    }
    fn cell_kernel(isa: Isa) -> cells::CellFn<f64> {
        cells::f64_cell_kernel(isa)
    }
}

impl CpuExecutor {
    /// The gradient passes of a call's kernel: the vector kernels for Plummer, the
    /// core's scalar terms for the spline.
    fn gradient_kernel<T: CpuReal>(&self, params: &Params<T>) -> gradients::Kernel<T> {
        match Softened::of(params) {
            Softened::Plummer { masked, .. } => gradients::Kernel::Vector(T::gradient_passes(self.isa, masked)),
            k => gradients::Kernel::Scalar(k),
        }
    }

    /// The shared path of both entry points: stage SoA copies, run the kernel over
    /// target blocks on every thread, then add `G ·` sums (and the self term) into the
    /// outputs. The source particles are checked while they are copied (the caller
    /// checked the rest); `Err` if one fails, before any output is written.
    #[allow(clippy::too_many_arguments)]
    fn run<T: CpuReal>(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        lengths: Option<PerParticle<'_, T>>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: Option<&mut [Jerk<T>]>,
        neighbours: Option<&mut Neighbours<'_, T>>,
    ) -> Result<(), BadSources> {
        let with_jerk = jerk.is_some();
        // The kernel family: a spline that softens nothing runs as masked Plummer.
        let softened = Softened::of(params);
        let family = softened.softening();
        let kernel = if let Some(eps) = lengths {
            // Plummer masks when the two smallest lengths soften nothing.
            let least = |l: &[T]| l.iter().fold(T::infinity(), |a, &e| a.min(T::from_f64(0.5) * e * e));
            let masked = least(eps.targets) + least(eps.sources) < T::min_positive_value();
            T::each_kernel(self.isa, params.potential, masked, params.softening)
        } else if with_jerk {
            T::jerk_kernel(self.isa, params.potential, params.masked(), family)
        } else {
            T::kernel(self.isa, params.potential, params.masked(), family)
        };
        // Enough target blocks for every thread: split the targets. Few targets and many
        // sources (a tree code's leaf): split the sources, so every thread still works.
        let blocks = targets.pos.len().div_ceil(scratch::BLOCK);
        let by_sources = blocks < 2 * self.threads && sources.pos.len() >= SOURCES_PER_PART * self.threads;
        let parts = if by_sources { self.threads } else { self.threads.min(blocks) }.max(1);
        // Plummer's ε² or the spline's support.
        let eps2 = softened.argument();
        let Self { pool, s32, s64, .. } = self;
        let pool = if parts > 1 { pool.as_ref() } else { None };
        let scratch = T::scratch(s32, s64);
        let search = neighbours.as_ref().map(|nb| (&params.overlap, nb.within.as_ref().map(|w| w.radius2)));
        let gather = dispatch::gather_fn::<T>(self.isa);
        // SAFETY: `gather` suits this CPU (dispatch checked its features).
        if !unsafe { scratch.stage(targets, sources, with_jerk, parts, by_sources, search, gather) } {
            return Err(BadSources);
        }
        scratch.stage_lengths(lengths.map(|l| (l, params.softening)));
        let work = scratch.split(sources);
        let bad = std::sync::atomic::AtomicBool::new(false);
        let run = |(mut part, src): (scratch::Part<'_, T>, scratch::Sources<'_, T>)| {
            // SAFETY: `gather` suits this CPU (dispatch checked its features).
            match unsafe { src.stage(gather) } {
                // SAFETY: so does `kernel`, and every part holds whole blocks (`stage`
                // padded the targets).
                Some(src) => unsafe { kernel(&mut part, &src, eps2) },
                None => bad.store(true, std::sync::atomic::Ordering::Relaxed),
            }
        };
        run_parts(pool, work, run);
        if bad.into_inner() {
            return Err(BadSources);
        }
        let (t0, s0, len) = params.overlap.resolve(targets.pos.len());
        for (i, o) in out.iter_mut().enumerate() {
            let mut sums = scratch.sums(i);
            if i >= t0 && i < t0 + len {
                let own = Softened::own(params, lengths.map(|l| l.targets[i]));
                sums.phi = sums.phi + own.self_potential(sources.pos[s0 + i - t0].m);
            }
            nbody_core::kernel::finish(params.g, &sums, params.potential, o);
        }
        if let Some(jerk) = jerk {
            for (i, j) in jerk.iter_mut().enumerate() {
                nbody_core::kernel::finish_jerk(params.g, &scratch.jerk_sums(i), j);
            }
        }
        if let Some(nb) = neighbours {
            let n = targets.pos.len();
            for (first, found) in scratch.found() {
                for (k, &(r2, j)) in found.nearest.iter().enumerate().take(n.saturating_sub(first)) {
                    if j != u32::MAX {
                        nb.nearest[first + k].offer(nb.index_offset + j, r2);
                    }
                }
                if let Some(w) = &mut nb.within {
                    for &(k, j) in &found.pairs {
                        w.push(first + k as usize, nb.index_offset + j);
                    }
                }
            }
        }
        Ok(())
    }
}

impl CpuExecutor {
    /// The batched call on validated input (`eps`: a softening length per particle).
    fn batch<T: CpuReal>(
        &mut self,
        particles: &[Particle<T>],
        eps: Option<&[T]>,
        list: &nbody_core::InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) {
        let cuts = balanced_cuts(particles.len(), list, self.threads);
        while self.workers.len() < cuts.len().saturating_sub(1) {
            self.workers.push(CpuExecutor::with_isa(Parallelism::Sequential, self.isa));
        }
        let chunks = BatchChunk::cut(&cuts, out, list);
        let work: Vec<_> = chunks.into_iter().zip(self.workers.iter_mut()).collect();
        let none: &[nbody_core::Velocity<T>] = &[];
        run_parts(self.pool.as_ref(), work, |(chunk, worker)| {
            // Each piece runs once over its whole source list, gathered into one array:
            // per-span calls would pay the staging of a call for every 32 sources.
            let (mut gathered, mut gathered_eps): (Vec<Particle<T>>, Vec<T>) = (Vec::new(), Vec::new());
            for (t, spans) in &chunk.pieces {
                gathered.clear();
                gathered_eps.clear();
                for s in spans.iter() {
                    gathered.extend_from_slice(&particles[s.range()]);
                    if let Some(e) = eps {
                        gathered_eps.extend_from_slice(&e[s.range()]);
                    }
                }
                if gathered.is_empty() {
                    continue;
                }
                let q = params.with_overlap(nbody_core::Overlap::Disjoint);
                let targets = Bodies { pos: &particles[t.clone()], vel: none };
                let sources = Bodies { pos: &gathered, vel: none };
                let lengths = eps.map(|e| PerParticle { targets: &e[t.clone()], sources: &gathered_eps });
                let out = &mut chunk.out[t.start - chunk.start..t.end - chunk.start];
                // The batch was checked whole; the copy's check cannot fail here.
                if worker.run(targets, sources, lengths, &q, out, None, None).is_err() {
                    continue;
                }
                // Targets that are in their own source spans: remove the self terms the
                // softened kernel counted (once per span holding them).
                if !params.potential {
                    continue;
                }
                for s in spans.iter() {
                    for i in t.start.max(s.start as usize)..t.end.min(s.end as usize) {
                        let own = Softened::own(params, eps.map(|e| e[i]));
                        let o = &mut out[i - t.start];
                        o.phi = o.phi + params.g * own.self_potential(particles[i].m);
                    }
                }
            }
        });
    }
}

/// A source failed `validate::particles` while it was copied.
struct BadSources;

/// A copy's failed source check, named as the whole check (`full`) names it (the
/// copy's check and `validate::particles` agree bit for bit, so `full` does fail).
fn named(run: Result<(), BadSources>, full: impl Fn() -> Result<(), Error>) -> Result<(), Error> {
    run.map_err(|_| full().err().unwrap_or(Error::NonFinite { array: nbody_core::Array::Sources, index: 0 }))
}

/// A batched call's share for one thread: a contiguous run of particle indices (whose
/// outputs the thread owns) and the pieces of pairs whose targets fall in it.
struct BatchChunk<'a, T: Real> {
    start: usize,
    out: &'a mut [Field<T>],
    pieces: Vec<(core::ops::Range<usize>, &'a [nbody_core::Span])>,
}

/// A thread's staging for the cell kernel: targets as padded SoA, f64 sums.
struct CellScratch<T: Real> {
    pos: [Vec<T>; 3],
    sums: [Vec<f64>; 4],
    /// A piece's cells gathered into one run: a tree list's spans are mostly single
    /// cells, and each kernel call pays for loading the targets and storing the sums.
    cells: Vec<nbody_core::cell::Cell<T>>,
}

impl<T: Real> Default for CellScratch<T> {
    fn default() -> Self {
        Self { pos: Default::default(), sums: Default::default(), cells: Vec::new() }
    }
}

impl<T: CpuReal> CellScratch<T> {
    /// Adds the field of every run of cells at `targets` into `out` (`G` applied, the
    /// potential only if asked).
    ///
    /// # Safety
    ///
    /// `kernel` runs on this CPU.
    unsafe fn run(
        &mut self,
        kernel: cells::CellFn<T>,
        targets: &[Particle<T>],
        runs: &[&[nbody_core::cell::Cell<T>]],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) {
        if runs.is_empty() {
            return;
        }
        let softened = Softened::of(params);
        // The vector cell kernel is Plummer's; every other kernel's cells in the core's
        // scalar code.
        if softened.softening() != nbody_core::Softening::Plummer {
            for (t, o) in targets.iter().zip(out.iter_mut()) {
                let mut sums = Field::zero();
                for c in runs.iter().flat_map(|r| r.iter()) {
                    nbody_core::cell::cell_softened(t.position(), c, &softened, &mut sums);
                }
                nbody_core::kernel::finish(params.g, &sums, params.potential, o);
            }
            return;
        }
        let padded = targets.len().div_ceil(cells::PAD) * cells::PAD;
        for (k, lane) in self.pos.iter_mut().enumerate() {
            lane.clear();
            lane.extend(targets.iter().map(|p| p.position()[k]));
            lane.resize(padded, T::zero());
        }
        for s in self.sums.iter_mut() {
            s.clear();
            s.resize(padded, 0.0);
        }
        let [x, y, z] = &self.pos;
        let [ax, ay, az, phi] = &mut self.sums;
        let mut t = cells::CellTargets { pos: [x, y, z], sums: [ax, ay, az, phi] };
        let gathered = if runs.len() == 1 {
            runs[0]
        } else {
            self.cells.clear();
            runs.iter().for_each(|r| self.cells.extend_from_slice(r));
            &self.cells
        };
        // SAFETY: the caller's contract, and every lane is padded to whole vectors.
        unsafe { kernel(&mut t, gathered, params.eps2()) };
        let g = params.g.to_f64();
        for (i, o) in out.iter_mut().enumerate() {
            let f = |k: usize| T::from_f64(g * self.sums[k][i]);
            let phi = if params.potential { o.phi + f(3) } else { o.phi };
            *o = Field::new(o.ax + f(0), o.ay + f(1), o.az + f(2), phi);
        }
    }
}

impl<'a, T: Real> BatchChunk<'a, T> {
    /// `out` cut at `cuts` (one chunk per run), each with the pieces of the pairs of
    /// `list` whose targets fall in its run.
    fn cut(cuts: &[usize], out: &'a mut [Field<T>], list: &nbody_core::InteractionList<'a>) -> Vec<Self> {
        let mut chunks: Vec<Self> = Vec::with_capacity(cuts.len());
        let mut rest = out;
        for w in cuts.windows(2) {
            let (head, tail) = core::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            rest = tail;
            chunks.push(BatchChunk { start: w[0], out: head, pieces: Vec::new() });
        }
        for p in list.pairs {
            let t = p.targets.range();
            for c in chunks.iter_mut() {
                let (a, b) = (t.start.max(c.start), t.end.min(c.start + c.out.len()));
                if a < b {
                    c.pieces.push((a..b, &list.source_spans[p.sources.range()]));
                }
            }
        }
        chunks
    }
}

/// Cuts `0..n` into `parts` runs of about equal work, where particle i costs the number
/// of sources its pairs give it.
fn balanced_cuts(n: usize, list: &nbody_core::InteractionList<'_>, parts: usize) -> Vec<usize> {
    let mut diff = vec![0i64; n + 1];
    for p in list.pairs {
        let w = list.sources_of(p).iter().map(|s| s.len() as i64).sum::<i64>();
        diff[p.targets.start as usize] += w;
        diff[p.targets.end as usize] -= w;
    }
    let mut work = Vec::with_capacity(n);
    let mut level = 0i64;
    for d in &diff[..n] {
        level += d;
        work.push(level.max(0) as u64);
    }
    let total: u64 = work.iter().sum();
    let mut cuts = vec![0];
    let mut acc = 0u64;
    for (i, w) in work.iter().enumerate() {
        acc += w;
        if cuts.len() < parts && acc * parts as u64 >= total * cuts.len() as u64 {
            cuts.push(i + 1);
        }
    }
    cuts.push(n);
    cuts.dedup();
    cuts
}

impl<T: CpuReal> Executor<T> for CpuExecutor {
    fn name(&self) -> &'static str {
        "cpu"
    }

    /// The plain, jerk and neighbour hooks check the sources while they copy them.
    fn hooks_check_sources(&self) -> bool {
        true
    }

    /// Checks the sources as it copies them, so it may be called by a door that has not.
    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let none: &[nbody_core::Velocity<T>] = &[];
        let n_out = out.len();
        let run = self.run(
            Bodies { pos: targets, vel: none },
            Bodies { pos: sources, vel: none },
            None,
            params,
            out,
            None,
            None,
        );
        named(run, || validate::call(targets, sources, params, n_out))
    }

    /// The SIMD kernel with the lengths in a lane of their own beside the coordinates.
    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        let none: &[nbody_core::Velocity<T>] = &[];
        let (t, s) = (Bodies { pos: targets, vel: none }, Bodies { pos: sources, vel: none });
        let n_out = out.len();
        let run = self.run(t, s, Some(eps), params, out, None, None);
        named(run, || validate::per_particle_call(targets, sources, &eps, params, n_out))
    }

    /// Checks the sources as it copies them, so it may be called by a door that has not.
    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        let (n_out, n_jerk) = (out.len(), jerk.len());
        let run = self.run(targets, sources, None, params, out, Some(jerk), None);
        named(run, || validate::jerk_call(&targets, &sources, params, n_out, n_jerk))
    }

    /// Finds neighbours in the jerk kernel's pass: each source tile, while in L1, is
    /// scanned for the block's nearest and within-radius sources right after its forces.
    /// Checks the sources as it copies them.
    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        let NeighboursCall { targets, sources, params, out, jerk, neighbours } = call;
        let (n_out, n_jerk) = (out.len(), jerk.len());
        let run = self.run(targets, sources, None, params, out, Some(jerk), Some(neighbours));
        named(run, || validate::jerk_call(&targets, &sources, params, n_out, n_jerk))
    }

    /// A vector of targets against every source on every thread (Plummer in the SIMD
    /// kernels, the spline in the core's scalar terms).
    unsafe fn accelerations_tidal_unchecked(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        gradients::tidal(self.pool.as_ref(), self.gradient_kernel(call.params), call);
        Ok(())
    }

    /// The targets' pass as the tidal call's, then a vector of sources against every
    /// target (its cotangents broadcast), on every thread.
    unsafe fn vjp_unchecked(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        gradients::vjp(self.pool.as_ref(), self.gradient_kernel(call.params), call);
        Ok(())
    }

    /// Each pair and source span through the SIMD product on the calling thread (one
    /// leaf's pair is too small to share among threads); a span on itself as each
    /// particle's whole gradient in one pass (`gradients::vjp_whole`: no target and
    /// source parts to cancel), on every thread from [`WHOLE_ON_THREADS`] particles.
    unsafe fn vjp_batch_unchecked(&mut self, call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        let VjpBatchCall { particles, list, params, cotangents, grads } = call;
        let kernel = self.gradient_kernel(params);
        let (mut tg, mut sg) = (Vec::new(), Vec::new());
        let add = |into: &mut [Particle<T>], part: &[Particle<T>]| {
            for (g, d) in into.iter_mut().zip(part) {
                *g = Particle::new(g.x + d.x, g.y + d.y, g.z + d.z, g.m + d.m);
            }
        };
        for pair in list.pairs {
            let t = pair.targets.range();
            for s in list.sources_of(pair).iter().map(|s| s.range()).filter(|s| !s.is_empty() && !t.is_empty()) {
                if s == t {
                    let pool = if t.len() >= WHOLE_ON_THREADS { self.pool.as_ref() } else { None };
                    let (p, c) = (&particles[t.clone()], &cotangents[t.clone()]);
                    gradients::vjp_whole(pool, kernel, p, params, c, &mut grads[t.clone()]);
                    continue;
                }
                let q = params.with_overlap(Overlap::between(t.clone(), s.clone()));
                tg.clear();
                tg.resize(t.len(), Particle::zero());
                sg.clear();
                sg.resize(s.len(), Particle::zero());
                let call = VjpCall {
                    targets: &particles[t.clone()],
                    sources: &particles[s.clone()],
                    params: &q,
                    cotangents: &cotangents[t.clone()],
                    target_grads: &mut tg,
                    source_grads: &mut sg,
                };
                gradients::vjp(None, kernel, call);
                add(&mut grads[t.clone()], &tg);
                add(&mut grads[s], &sg);
            }
        }
        Ok(())
    }

    /// Spreads the pairs over the threads: the particle range is cut into runs of equal
    /// work, each thread owns the outputs of its run (no atomics), and pairs straddling
    /// a cut are split there.
    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        self.batch(particles, None, list, params, out);
        Ok(())
    }

    /// As [`Executor::accelerations_batch_unchecked`], with the lengths gathered beside
    /// the sources.
    unsafe fn accelerations_batch_per_particle_unchecked(
        &mut self,
        call: BatchPerParticleCall<'_, T>,
    ) -> Result<(), Error> {
        let BatchPerParticleCall { particles, eps, list, params, out } = call;
        self.batch(particles, Some(eps), list, params, out);
        Ok(())
    }

    /// Cells in vectors ([`cells`]), targets split over the threads.
    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        let CellsCall { targets, cells, params, out } = call;
        let kernel = T::cell_kernel(self.isa);
        let parts = self.threads.min(targets.len().div_ceil(256)).max(1);
        let chunk = targets.len().div_ceil(parts);
        let work: Vec<_> = targets.chunks(chunk).zip(out.chunks_mut(chunk)).collect();
        run_parts(self.pool.as_ref(), work, |(t, o)| {
            let mut staged = CellScratch::default();
            // SAFETY: the kernel is this CPU's, and staging pads to whole vectors.
            unsafe { staged.run(kernel, t, &[cells], params, o) };
        });
        Ok(())
    }

    /// The particle part as [`Executor::accelerations_batch`]; the cells with the
    /// particle range cut into runs of equal cell work, one per thread, each owning its
    /// outputs.
    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        let BatchCellsCall { particles, cells, list, params, out } = call;
        // SAFETY: the door validated the whole leaf list, its particle part included.
        unsafe { self.accelerations_batch_unchecked(BatchCall { particles, list: &list.particles, params, out })? };
        let pairs: Vec<nbody_core::Pair> = list.cell_pairs().collect();
        let cell_list = nbody_core::InteractionList { pairs: &pairs, source_spans: list.cell_spans };
        let cuts = balanced_cuts(particles.len(), &cell_list, self.threads);
        let chunks = BatchChunk::cut(&cuts, out, &cell_list);
        let kernel = T::cell_kernel(self.isa);
        run_parts(self.pool.as_ref(), chunks, |chunk| {
            let mut staged = CellScratch::default();
            let mut runs: Vec<&[nbody_core::cell::Cell<T>]> = Vec::new();
            for (t, spans) in &chunk.pieces {
                runs.clear();
                runs.extend(spans.iter().filter(|s| !s.is_empty()).map(|s| &cells[s.range()]));
                let out = &mut chunk.out[t.start - chunk.start..t.end - chunk.start];
                // SAFETY: the kernel is this CPU's, and staging pads to whole vectors.
                unsafe { staged.run(kernel, &particles[t.clone()], &runs, params, out) };
            }
        });
        Ok(())
    }
}

impl<T: CpuReal> nbody_core::projection::Project<T> for CpuExecutor {
    /// Each thread deposits a contiguous run of particles into its own grid; the grids
    /// are then added in a fixed order, so the map does not depend on scheduling.
    fn project(
        &mut self,
        particles: &[Particle<T>],
        projection: &nbody_core::projection::Projection,
        grid: &mut [f64],
    ) -> Result<(), Error> {
        projection.validate(grid.len())?;
        validate::particles(particles, nbody_core::Array::Particles)?;
        // Below this a thread's private grid costs more to clear and add than it saves.
        const PER_THREAD: usize = 1 << 15;
        let parts = self.threads.min(particles.len() / PER_THREAD).max(1);
        if parts == 1 {
            projection.deposit_validated(particles, grid);
            return Ok(());
        }
        let chunk = particles.len().div_ceil(parts);
        let mut partial = vec![vec![0.0; grid.len()]; parts];
        let work: Vec<_> = particles.chunks(chunk).zip(partial.iter_mut()).collect();
        run_parts(self.pool.as_ref(), work, |(ps, g)| projection.deposit_validated(ps, g));
        for g in &partial {
            for (a, b) in grid.iter_mut().zip(g) {
                *a += b;
            }
        }
        Ok(())
    }
}
