//! Sums over neighbour lists: every target has a list of its own, a few hundred sources
//! that no other target shares (an Ahmad–Cohen code's irregular force, NBODY6++'s
//! `irr_simd`). The caller gathers each list relative to its target, as it predicts the
//! sources to the target's time; the executor sums it with its vector backends on its
//! threads. Lanes are sources here: a list is too short to tile, and a target's sums
//! are reduced once at its end.
//!
//! The differences are formed by the caller in f64, so a list summed in f32 loses
//! nothing to large coordinates: only each pair's own arithmetic is f32.

use crate::dispatch::Isa;
use crate::simd::{Portable, Simd};
use crate::team::Team;
use crate::{CpuReal, Parallelism};
use nbody_core::Real;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One target's sources: positions and velocities relative to the target (source minus
/// target) and masses, SoA.
///
/// ```
/// let mut g = nbody_cpu::lists::Gathered::<f32>::new();
/// g.push([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], 0.5);
/// assert_eq!(g.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Gathered<T> {
    /// dx, dy, dz, dvx, dvy, dvz.
    rel: [Vec<T>; 6],
    m: Vec<T>,
}

impl<T: Real> Gathered<T> {
    /// An empty list.
    pub fn new() -> Self {
        Self { rel: Default::default(), m: Vec::new() }
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.rel.iter_mut().for_each(Vec::clear);
        self.m.clear();
    }

    /// Adds a source at `dx` from the target (source minus target), moving at `dv`
    /// relative to it, of mass `m`. The pair is unsoftened: `dx` must not be zero.
    pub fn push(&mut self, dx: [f64; 3], dv: [f64; 3], m: f64) {
        for (k, c) in dx.into_iter().chain(dv).enumerate() {
            self.rel[k].push(T::from_f64(c));
        }
        self.m.push(T::from_f64(m));
    }

    /// Sources in the list.
    pub fn len(&self) -> usize {
        self.m.len()
    }

    /// Whether it holds no source.
    pub fn is_empty(&self) -> bool {
        self.m.is_empty()
    }

    /// Pads it to whole vectors of `lanes` with massless sources at unit distance
    /// (their weight is exactly 0, where a zero distance would give 0 · ∞).
    fn pad(&mut self, lanes: usize) {
        while !self.m.len().is_multiple_of(lanes) {
            self.push([1.0, 0.0, 0.0], [0.0; 3], 0.0);
        }
    }
}

/// A list's pull on its target: the unsoftened acceleration `Σ m dx/r³` and its time
/// derivative `Σ m (dv − 3 (dx·dv) dx/r²)/r³` (G = 1), summed per lane in the working
/// precision and across lanes in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListSums {
    /// Acceleration.
    pub acc: [f64; 3],
    /// Jerk.
    pub jerk: [f64; 3],
}

/// A list kernel entry point; the list is padded to whole vectors.
pub(crate) type ListFn<T> = unsafe fn(&Gathered<T>) -> ListSums;

/// The pairs of one padded list, a vector of sources at a time.
///
/// # Safety
/// This CPU has the backend's features, and the list holds whole vectors.
#[inline(always)]
unsafe fn sum_list<S: Simd>(g: &Gathered<S::T>) -> ListSums {
    // SAFETY: the caller's contract; every load reads LANES values inside the padded columns.
    unsafe {
        let zero = S::splat(S::T::from_f64(0.0));
        let minus3 = S::splat(S::T::from_f64(-3.0));
        let mut sums = [zero; 6];
        let at = |c: &Vec<S::T>, k: usize| S::load(c.as_ptr().add(k));
        for k in (0..g.len()).step_by(S::LANES) {
            let [dx, dy, dz, vx, vy, vz] = [0, 1, 2, 3, 4, 5].map(|c| at(&g.rel[c], k));
            let r2 = S::fma(dz, dz, S::fma(dy, dy, S::mul(dx, dx)));
            let rv = S::fma(dz, vz, S::fma(dy, vy, S::mul(dx, vx)));
            let rinv = S::rsqrt::<false>(r2);
            let rinv2 = S::mul(rinv, rinv);
            let w = S::mul(S::mul(at(&g.m, k), rinv), rinv2);
            let alpha = S::mul(S::mul(minus3, rinv2), rv);
            for (c, (d, v)) in [(dx, vx), (dy, vy), (dz, vz)].into_iter().enumerate() {
                sums[c] = S::fma(w, d, sums[c]);
                sums[3 + c] = S::fma(w, S::fma(alpha, d, v), sums[3 + c]);
            }
        }
        let mut lanes = [S::T::from_f64(0.0); 16];
        let mut total = [0.0; 6];
        for (t, s) in total.iter_mut().zip(sums) {
            S::store(lanes.as_mut_ptr(), s);
            *t = lanes[..S::LANES].iter().map(|x| x.to_f64()).sum();
        }
        ListSums { acc: [total[0], total[1], total[2]], jerk: [total[3], total[4], total[5]] }
    }
}

/// Defines `$select(isa) -> ListFn<$t>` over the backends listed.
macro_rules! list_entry_points {
    ($t:ty, $select:ident, $( $isa:ident => $s:ty $(, #[$feat:meta])? );* $(;)?) => {
        pub(crate) fn $select(isa: Isa) -> ListFn<$t> {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k(g: &Gathered<$t>) -> ListSums {
                        // SAFETY: sum_list's contract is the caller's.
                        unsafe { sum_list::<$s>(g) }
                    }
                    return k;
                }
            )*
            unsafe fn portable(g: &Gathered<$t>) -> ListSums {
                // SAFETY: the portable backend needs no feature; the list is padded.
                unsafe { sum_list::<Portable<$t>>(g) }
            }
            portable
        }
    };
}

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2F32, Avx2F64, Avx512F32, Avx512F64};

#[cfg(target_arch = "x86_64")]
list_entry_points!(f32, f32_list_kernel,
    Avx512 => Avx512F32, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F32, #[target_feature(enable = "avx2,fma")];
);
#[cfg(target_arch = "x86_64")]
list_entry_points!(f64, f64_list_kernel,
    Avx512 => Avx512F64, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F64, #[target_feature(enable = "avx2,fma")];
);
#[cfg(not(target_arch = "x86_64"))]
list_entry_points!(f32, f32_list_kernel,);
#[cfg(not(target_arch = "x86_64"))]
list_entry_points!(f64, f64_list_kernel,);

/// Lanes of the backend `isa` selects for `T` (how far a list is padded).
fn lanes<T: Real>(isa: Isa) -> usize {
    let wide = if std::mem::size_of::<T>() == 4 { 2 } else { 1 };
    match isa {
        Isa::Avx512 => 8 * wide,
        Isa::Avx2 => 4 * wide,
        Isa::Portable => 8,
    }
}

/// Targets per part of a call: enough that a part outweighs the threads' handshake.
const TARGETS_PER_PART: usize = 4;

/// Sums over each target's own list, on a bounded team of threads.
///
/// ```
/// use nbody_cpu::Parallelism;
/// use nbody_cpu::lists::{ListExecutor, ListSums};
///
/// let lists = ListExecutor::new(Parallelism::Sequential);
/// // Two targets, each pulled by one unit mass at distance 2 along x.
/// let mut out = vec![((), ListSums::default()); 2];
/// lists.sums::<f64, (), ()>(&mut out, |_, g| {
///     g.push([2.0, 0.0, 0.0], [0.0; 3], 1.0);
///     Ok(())
/// })?;
/// assert_eq!(out[1].1.acc, [0.25, 0.0, 0.0]);
/// # Ok::<(), ()>(())
/// ```
#[derive(Debug)]
pub struct ListExecutor {
    isa: Isa,
    team: Option<Team>,
}

impl ListExecutor {
    /// The best instruction set of this CPU, `parallelism`'s threads.
    pub fn new(parallelism: Parallelism) -> Self {
        Self::with_isa(parallelism, Isa::detect())
    }

    /// A given instruction set (the best available if this CPU lacks it).
    pub fn with_isa(parallelism: Parallelism, isa: Isa) -> Self {
        let team = match parallelism {
            Parallelism::Threads(n) if n > 1 => Some(Team::new(n)),
            _ => None,
        };
        Self { isa: isa.available_or_best(), team }
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Threads a call uses.
    pub fn threads(&self) -> usize {
        self.team.as_ref().map_or(1, Team::threads)
    }

    /// For every target `k < out.len()`: `gather(k, g)` fills the empty list `g` with
    /// target `k`'s sources and returns what the caller keeps of that pass (its nearest
    /// source, say), stored in `out[k].0`; the list's sums go to `out[k].1`. Each
    /// target's result depends on its list alone, whatever the threads.
    ///
    /// Stops at the first error `gather` returns and gives it back; `out` is then partly
    /// written.
    pub fn sums<T: CpuReal, X: Send, E: Send>(
        &self,
        out: &mut [(X, ListSums)],
        gather: impl Fn(usize, &mut Gathered<T>) -> Result<X, E> + Sync,
    ) -> Result<(), E> {
        let kernel = T::list_kernel(self.isa);
        let lanes = lanes::<T>(self.isa);
        let failed = AtomicBool::new(false);
        let error = Mutex::new(None);
        let per_part = TARGETS_PER_PART.max(out.len().div_ceil(4 * self.threads()));
        let parts: Vec<(usize, &mut [(X, ListSums)])> =
            out.chunks_mut(per_part).enumerate().map(|(p, c)| (p * per_part, c)).collect();
        crate::run_parts(self.team.as_ref(), parts, |(first, chunk)| {
            let mut g = Gathered::new();
            for (k, slot) in chunk.iter_mut().enumerate() {
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                g.clear();
                match gather(first + k, &mut g) {
                    Ok(kept) => {
                        g.pad(lanes);
                        // SAFETY: the kernel was chosen for an instruction set this CPU has, and the list is padded.
                        *slot = (kept, unsafe { kernel(&g) });
                    }
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        return;
                    }
                }
            }
        });
        match error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Source = ([f64; 3], [f64; 3], f64);

    fn fill<T: Real>(src: &[Source], g: &mut Gathered<T>) -> Result<(), ()> {
        src.iter().for_each(|&(d, v, m)| g.push(d, v, m));
        Ok(())
    }

    /// Every backend against a scalar f64 loop, lists of every length up to past two
    /// AVX-512 vectors (so each padding case is met).
    #[test]
    fn every_backend_sums_a_list_as_the_scalar_loop() {
        for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable].into_iter().filter(|i| i.is_available()) {
            for n in 0..40usize {
                let src: Vec<Source> = (0..n)
                    .map(|j| {
                        let f = j as f64;
                        ([0.3 + f.sin(), -0.7 + 0.1 * f, (1.3 * f).cos()], [f.cos(), 0.2, -0.1 * f], 0.5 + 0.01 * f)
                    })
                    .collect();
                let (mut want, mut scale) = (ListSums::default(), ListSums::default());
                for &(d, v, m) in &src {
                    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    let rv = d[0] * v[0] + d[1] * v[1] + d[2] * v[2];
                    let w = m / (r2 * r2.sqrt());
                    for c in 0..3 {
                        want.acc[c] += w * d[c];
                        want.jerk[c] += w * (v[c] - 3.0 * rv / r2 * d[c]);
                        scale.acc[c] += (w * d[c]).abs();
                        scale.jerk[c] += (w * v[c]).abs() + (w * 3.0 * rv / r2 * d[c]).abs();
                    }
                }
                let lists = ListExecutor::with_isa(Parallelism::Sequential, isa);
                let mut out64 = vec![((), ListSums::default())];
                let mut out32 = vec![((), ListSums::default())];
                lists.sums::<f64, _, ()>(&mut out64, |_, g| fill(&src, g)).unwrap();
                lists.sums::<f32, _, ()>(&mut out32, |_, g| fill(&src, g)).unwrap();
                // Against the sum of the terms' sizes: a few roundings of the precision.
                for c in 0..3 {
                    for (got, want, scale, tol) in [
                        (out64[0].1.acc[c], want.acc[c], scale.acc[c], 1e-15),
                        (out64[0].1.jerk[c], want.jerk[c], scale.jerk[c], 1e-15),
                        (out32[0].1.acc[c], want.acc[c], scale.acc[c], 5e-7),
                        (out32[0].1.jerk[c], want.jerk[c], scale.jerk[c], 5e-7),
                    ] {
                        assert!((got - want).abs() <= tol * scale, "{isa:?} n={n}: {got} against {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_first_error_stops_the_call() {
        let lists = ListExecutor::new(Parallelism::Threads(2));
        let mut out = vec![(0usize, ListSums::default()); 100];
        let r = lists.sums::<f64, usize, String>(&mut out, |k, g| {
            if k == 57 {
                return Err(format!("target {k}"));
            }
            g.push([1.0, 0.0, 0.0], [0.0; 3], 1.0);
            Ok(k)
        });
        assert_eq!(r, Err("target 57".to_string()));
    }
}
