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

mod dispatch;
mod kernel;
mod mixed;
mod scratch;
mod simd;

pub use dispatch::Isa;
pub use mixed::MixedExecutor;

use nbody_core::kernel::self_potential;
use nbody_core::{validate, Bodies, Error, Executor, Field, Jerk, Params, Particle, Real};
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

/// The CPU executor. Keeps its scratch (SoA copies, accumulators) and its thread pool
/// across calls, so the hot path does not allocate once sizes stop growing.
pub struct CpuExecutor {
    isa: Isa,
    pool: Option<rayon::ThreadPool>,
    threads: usize,
    s32: Scratch<f32>,
    s64: Scratch<f64>,
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
        // A pool that cannot start (no threads allowed) leaves the executor sequential.
        let pool = (threads > 1).then(|| rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok()).flatten();
        let threads = if pool.is_some() { threads } else { 1 };
        Self { isa: isa.available_or_best(), pool, threads, s32: Scratch::default(), s64: Scratch::default() }
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

/// Runs `f` on every part, each on a thread of the pool (or inline without one).
/// Measured against running the first part on the calling thread (rayon's
/// `in_place_scope`), this was faster at N = 1,024 on the 2-core machine.
fn run_parts<P: Send>(pool: Option<&rayon::ThreadPool>, parts: Vec<P>, f: impl Fn(P) + Sync) {
    match pool {
        Some(pool) if parts.len() > 1 => pool.scope(|s| {
            for part in parts {
                let f = &f;
                s.spawn(move |_| f(part));
            }
        }),
        _ => parts.into_iter().for_each(f),
    }
}

/// The precisions the CPU kernels exist for.
pub trait CpuReal: Real {
    #[doc(hidden)]
    fn scratch<'a>(s32: &'a mut Scratch<f32>, s64: &'a mut Scratch<f64>) -> &'a mut Scratch<Self>;
    #[doc(hidden)]
    fn kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<Self>;
    #[doc(hidden)]
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<Self>;
}

impl CpuReal for f32 {
    fn scratch<'a>(s32: &'a mut Scratch<f32>, _: &'a mut Scratch<f64>) -> &'a mut Scratch<f32> {
        s32
    }
    fn kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<f32> {
        dispatch::f32_kernel(isa, potential, masked)
    }
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<f32> {
        dispatch::f32_jerk_kernel(isa, potential, masked)
    }
}

impl CpuReal for f64 {
    fn scratch<'a>(_: &'a mut Scratch<f32>, s64: &'a mut Scratch<f64>) -> &'a mut Scratch<f64> {
        s64
    }
    fn kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<f64> {
        dispatch::f64_kernel(isa, potential, masked)
    }
    fn jerk_kernel(isa: Isa, potential: bool, masked: bool) -> dispatch::KernelFn<f64> {
        dispatch::f64_jerk_kernel(isa, potential, masked)
    }
}

impl CpuExecutor {
    /// The shared path of both entry points: stage SoA copies, run the kernel over
    /// target blocks on every thread, then add `G ·` sums (and the self term) into the
    /// outputs.
    fn run<T: CpuReal>(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: Option<&mut [Jerk<T>]>,
    ) {
        let with_jerk = jerk.is_some();
        let kernel = if with_jerk {
            T::jerk_kernel(self.isa, params.potential, params.masked())
        } else {
            T::kernel(self.isa, params.potential, params.masked())
        };
        let parts = self.threads.min(targets.pos.len().div_ceil(scratch::BLOCK)).max(1);
        let eps2 = params.eps2();
        let Self { pool, s32, s64, .. } = self;
        let scratch = T::scratch(s32, s64);
        scratch.stage(targets, sources, with_jerk, parts);
        let (work, src) = scratch.split();
        let run = |mut part: scratch::Part<'_, T>| {
            // SAFETY: `kernel` suits this CPU (dispatch checked its features) and every
            // part holds whole blocks (`stage` padded the targets).
            unsafe { kernel(&mut part, &src, eps2) }
        };
        run_parts(pool.as_ref(), work, run);
        let (t0, s0, len) = params.overlap.resolve(targets.pos.len());
        for (i, o) in out.iter_mut().enumerate() {
            let mut sums = scratch.sums(i);
            if !params.masked() && i >= t0 && i < t0 + len {
                sums.phi = sums.phi + self_potential(sources.pos[s0 + i - t0].m, eps2);
            }
            nbody_core::kernel::finish(params.g, &sums, params.potential, o);
        }
        if let Some(jerk) = jerk {
            for (i, j) in jerk.iter_mut().enumerate() {
                nbody_core::kernel::finish_jerk(params.g, &scratch.jerk_sums(i), j);
            }
        }
    }
}

impl<T: CpuReal> Executor<T> for CpuExecutor {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn accelerations(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate::call(targets, sources, params, out.len())?;
        if targets.is_empty() || sources.is_empty() {
            return Ok(());
        }
        let none: &[nbody_core::Velocity<T>] = &[];
        self.run(Bodies { pos: targets, vel: none }, Bodies { pos: sources, vel: none }, params, out, None);
        Ok(())
    }

    fn accelerations_jerk(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        validate::jerk_call(&targets, &sources, params, out.len(), jerk.len())?;
        if targets.pos.is_empty() || sources.pos.is_empty() {
            return Ok(());
        }
        self.run(targets, sources, params, out, Some(jerk));
        Ok(())
    }
}
