//! Sums over neighbour lists of a Hermite code's particles: every target has a list of
//! its own, a few hundred sources that no other target shares (an Ahmad–Cohen code's
//! irregular force, NBODY6++'s `irr_simd`), and every source is first predicted to the
//! target's time from its last correction. Lanes are sources: each vector of a list is
//! gathered from records anywhere in memory ([`Simd::gather`]), predicted and differenced
//! in f64 against the target, and summed; a target's sums are reduced once at its end.

use crate::dispatch::Isa;
use crate::simd::{Portable, Simd};
use crate::team::Team;
use crate::{Parallelism, run_parts};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A particle as a Hermite code keeps it between corrections: position, mass, velocity,
/// the time of its last correction, half its acceleration and a sixth of its jerk (the
/// predictor's coefficients, as NBODY6 stores `F` and `FDOT`). 128 bytes, two whole
/// cache lines, so that a list's sources cost two lines each.
///
/// ```
/// use nbody_cpu::lists::Taylor;
/// let p = Taylor { x: [1.0, 0.0, 0.0], m: 1.0, v: [0.0, 1.0, 0.0], t: 0.0, ..Taylor::default() };
/// let (x, v) = p.predict(0.5);
/// assert_eq!((x, v), ([1.0, 0.5, 0.0], [0.0, 1.0, 0.0]));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(64))]
pub struct Taylor {
    /// Position.
    pub x: [f64; 3],
    /// Mass.
    pub m: f64,
    /// Velocity.
    pub v: [f64; 3],
    /// Time the coefficients hold at.
    pub t: f64,
    /// Acceleration / 2.
    pub a2: [f64; 3],
    #[doc(hidden)]
    pub _pad0: f64,
    /// Jerk / 6.
    pub j6: [f64; 3],
    #[doc(hidden)]
    pub _pad1: f64,
}

/// f64 offsets of the rows of four in a [`Taylor`] (x and m, v and t, a/2, j/6), for
/// the gathers.
const X: usize = 0;
const V: usize = 4;
const A2: usize = 8;
const J6: usize = 12;
const STRIDE: usize = 16;

impl Taylor {
    /// Position and velocity at `t`: `x + s (v + s (a/2 + s j/6))` and
    /// `v + 2 s (a/2 + 1.5 s j/6)`, `s = t − t₀`.
    pub fn predict(&self, t: f64) -> ([f64; 3], [f64; 3]) {
        let s = t - self.t;
        let x = std::array::from_fn(|k| self.x[k] + s * (self.v[k] + s * (self.a2[k] + s * self.j6[k])));
        let v = std::array::from_fn(|k| self.v[k] + 2.0 * s * (self.a2[k] + 1.5 * s * self.j6[k]));
        (x, v)
    }
}

/// A list's pull on its target, all at the call's time: the unsoftened acceleration
/// `Σ m dx/r³` and its time derivative `Σ m (dv − 3 (dx·dv) dx/r²)/r³` (G = 1), and the
/// nearest source.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListSums {
    /// Acceleration.
    pub acc: [f64; 3],
    /// Jerk.
    pub jerk: [f64; 3],
    /// The nearest source (its index; the lower one at equal distance), if any.
    pub nearest: Option<u32>,
}

/// Why a call stopped: the pair of `target` (an index into the call's targets) and its
/// list's source `source` is at zero or no finite distance (coincident, or a record
/// that holds no finite particle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadPair {
    /// Index into the call's targets.
    pub target: usize,
    /// The source's index.
    pub source: u32,
}

/// A list kernel entry point: one target (`records[i]`, its `list`) at time `ti`; `Err`
/// holds the list position of a pair at no finite nonzero distance.
type TaylorFn = unsafe fn(&[Taylor], &[u32], usize, f64) -> Result<ListSums, usize>;

/// One target's list, a vector of sources at a time.
///
/// # Safety
/// This CPU has the backend's features; `i` and every listed index are inside `records`,
/// whose length fits an `i32` offset in f64s.
#[inline(always)]
unsafe fn taylor_target<S: Simd<T = f64>>(
    records: &[Taylor],
    list: &[u32],
    i: usize,
    ti: f64,
) -> Result<ListSums, usize> {
    // SAFETY: the caller's contract; every gather reads a field of a record inside `records`.
    unsafe {
        let base = records.as_ptr().cast::<f64>();
        // Every record of the list is asked for before the first is used, so that their
        // cache misses overlap (as upstream's irr.avx.cpp does): a list's sources lie
        // anywhere in memory, and waiting for each in turn would cost most of the call.
        for &j in list {
            prefetch(records.as_ptr().add(j as usize));
        }
        let (tv, one, two, half3, minus3) = (S::splat(ti), S::splat(1.0), S::splat(2.0), S::splat(1.5), S::splat(-3.0));
        // The predictor's increments, `s (v + s (a/2 + s j/6))` and `2 s (a/2 + 1.5 s j/6)`,
        // by the same operations for the target (in every lane) as for the sources, so
        // that the differences are formed as (x_j − x_i) + (Δ_j − Δ_i): a source that is
        // a copy of the target is at exactly zero distance, whatever the roundings.
        let increments = |s: S::V, v: S::V, a2: S::V, j6: S::V| {
            (S::mul(s, S::fma(s, S::fma(s, j6, a2), v)), S::mul(S::mul(two, s), S::fma(S::mul(half3, s), j6, a2)))
        };
        let target = &records[i];
        let si = S::splat(ti - target.t);
        let mut own = [(S::splat(0.0), S::splat(0.0)); 3];
        for (a, o) in own.iter_mut().enumerate() {
            *o = increments(si, S::splat(target.v[a]), S::splat(target.a2[a]), S::splat(target.j6[a]));
        }
        let (xi, vi) = (target.x.map(|c| S::splat(c)), target.v.map(|c| S::splat(c)));
        let mut sums = [S::splat(0.0); 6];
        let mut best = (f64::INFINITY, u32::MAX);
        let (mut idx, mut r2s, mut off) = ([0i32; 16], [0.0f64; 16], [0.0f64; 16]);
        for k in (0..list.len()).step_by(S::LANES) {
            let n = S::LANES.min(list.len() - k);
            // A short last vector fills its lanes with the target itself, made massless
            // and moved to unit distance (exactly zero terms).
            for l in 0..S::LANES {
                let j = if l < n { list[k + l] as usize } else { i };
                idx[l] = (j * STRIDE) as i32;
                off[l] = if l < n { 0.0 } else { 1.0 };
            }
            let rows = |field: usize| S::gather_rows(base.add(field), idx.as_ptr());
            let ([x0, x1, x2, mass], [v0, v1, v2, t]) = (rows(X), rows(V));
            let ([a0, a1, a2, _], [j0, j1, j2, _]) = (rows(A2), rows(J6));
            let (x, v, acc2, jerk6) = ([x0, x1, x2], [v0, v1, v2], [a0, a1, a2], [j0, j1, j2]);
            let s = S::sub(tv, t);
            let (mut d, mut w) = ([S::splat(0.0); 3], [S::splat(0.0); 3]);
            for a in 0..3 {
                let (x, v) = (x[a], v[a]);
                let (dx, dv) = increments(s, v, acc2[a], jerk6[a]);
                d[a] = S::fma(S::sub(dx, own[a].0), one, S::sub(x, xi[a]));
                w[a] = S::fma(S::sub(dv, own[a].1), one, S::sub(v, vi[a]));
            }
            let r2 = S::fma(d[2], d[2], S::fma(d[1], d[1], S::mul(d[0], d[0])));
            S::store(r2s.as_mut_ptr(), r2);
            for (l, (&r, &j)) in r2s[..n].iter().zip(&list[k..k + n]).enumerate() {
                // NaN fails both comparisons.
                if !(r > 0.0 && r < f64::INFINITY) {
                    return Err(k + l);
                }
                if r < best.0 || (r == best.0 && j < best.1) {
                    best = (r, j);
                }
            }
            let (r2, m) = if n < S::LANES {
                let o = S::load(off.as_ptr());
                (S::fma(o, one, r2), S::fnma(o, mass, mass))
            } else {
                (r2, mass)
            };
            let rv = S::fma(d[2], w[2], S::fma(d[1], w[1], S::mul(d[0], w[0])));
            let rinv = S::rsqrt::<false>(r2);
            let rinv2 = S::mul(rinv, rinv);
            let weight = S::mul(S::mul(m, rinv), rinv2);
            let alpha = S::mul(S::mul(minus3, rinv2), rv);
            for a in 0..3 {
                sums[a] = S::fma(weight, d[a], sums[a]);
                sums[3 + a] = S::fma(weight, S::fma(alpha, d[a], w[a]), sums[3 + a]);
            }
        }
        let mut lanes = [0.0f64; 16];
        let mut total = [0.0; 6];
        for (t, s) in total.iter_mut().zip(sums) {
            S::store(lanes.as_mut_ptr(), s);
            *t = lanes[..S::LANES].iter().sum();
        }
        Ok(ListSums {
            acc: [total[0], total[1], total[2]],
            jerk: [total[3], total[4], total[5]],
            nearest: (best.1 != u32::MAX).then_some(best.1),
        })
    }
}

/// Asks for both cache lines of the record at `r` (a hint: nothing is read, nothing
/// can fault).
#[inline(always)]
fn prefetch(r: *const Taylor) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint, whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(r.cast());
            _mm_prefetch::<_MM_HINT_T0>(r.cast::<i8>().wrapping_add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// The entry point for `isa`.
fn taylor_kernel(isa: Isa) -> TaylorFn {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::{Avx2F64, Avx512F64};
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(r: &[Taylor], l: &[u32], i: usize, t: f64) -> Result<ListSums, usize> {
            // SAFETY: taylor_target's contract is the caller's.
            unsafe { taylor_target::<Avx512F64>(r, l, i, t) }
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(r: &[Taylor], l: &[u32], i: usize, t: f64) -> Result<ListSums, usize> {
            // SAFETY: taylor_target's contract is the caller's.
            unsafe { taylor_target::<Avx2F64>(r, l, i, t) }
        }
        match isa {
            Isa::Avx512 => return avx512,
            Isa::Avx2 => return avx2,
            Isa::Portable => {}
        }
    }
    unsafe fn portable(r: &[Taylor], l: &[u32], i: usize, t: f64) -> Result<ListSums, usize> {
        // SAFETY: the portable backend needs no feature; the rest is the caller's contract.
        unsafe { taylor_target::<Portable<f64>>(r, l, i, t) }
    }
    portable
}

/// Targets per part of a call: enough that a part outweighs the threads' handshake.
const TARGETS_PER_PART: usize = 4;

/// Sums over each target's own list of [`Taylor`] records, on a bounded team of threads.
///
/// ```
/// use nbody_cpu::Parallelism;
/// use nbody_cpu::lists::{ListExecutor, ListSums, Taylor};
///
/// let at = |x: f64| Taylor { x: [x, 0.0, 0.0], m: 1.0, ..Taylor::default() };
/// let records = [at(0.0), at(2.0), at(-4.0)];
/// let lists = ListExecutor::new(Parallelism::Sequential);
/// let mut out = [ListSums::default()];
/// lists.sums(&records, &[(0, &[1, 2][..])], 0.0, &mut out).unwrap();
/// assert_eq!(out[0].acc, [0.25 - 1.0 / 16.0, 0.0, 0.0]);
/// assert_eq!(out[0].nearest, Some(1));
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

    /// For every target `(i, list)`: `records[i]` and every source `records[j]` of its
    /// list predicted to `t`, and the list's sums into `out` (as long as `targets`). A
    /// target's result depends on its list alone, whatever the threads.
    ///
    /// # Panics
    /// If an index is outside `records`, if `records` holds more than 2²⁷ particles
    /// (the gathers' offsets are `i32`), or if `out` is not as long as `targets`.
    ///
    /// # Errors
    /// The first pair found at no finite nonzero distance; `out` is then partly written.
    pub fn sums(
        &self,
        records: &[Taylor],
        targets: &[(usize, &[u32])],
        t: f64,
        out: &mut [ListSums],
    ) -> Result<(), BadPair> {
        assert_eq!(out.len(), targets.len(), "one output per target");
        assert!(records.len() <= (i32::MAX as usize) / STRIDE, "at most 2^27 records");
        for &(i, list) in targets {
            assert!(
                i < records.len() && list.iter().all(|&j| (j as usize) < records.len()),
                "an index outside the records"
            );
        }
        let kernel = taylor_kernel(self.isa);
        let failed = AtomicBool::new(false);
        let first = Mutex::new(None);
        let per_part = TARGETS_PER_PART.max(out.len().div_ceil(4 * self.threads()));
        let parts: Vec<(usize, &mut [ListSums])> =
            out.chunks_mut(per_part).enumerate().map(|(p, c)| (p * per_part, c)).collect();
        run_parts(self.team.as_ref(), parts, |(start, chunk)| {
            for (k, slot) in chunk.iter_mut().enumerate() {
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                let (i, list) = targets[start + k];
                // The next target's record and list, while this one is summed.
                if let Some(&(next, next_list)) = targets.get(start + k + 1) {
                    prefetch(records.as_ptr().wrapping_add(next));
                    prefetch(next_list.as_ptr().cast());
                }
                // SAFETY: the kernel is for an instruction set this CPU has; the indices were checked above.
                match unsafe { kernel(records, list, i, t) } {
                    Ok(s) => *slot = s,
                    Err(at) => {
                        failed.store(true, Ordering::Relaxed);
                        let bad = BadPair { target: start + k, source: list[at] };
                        let mut f = first.lock().unwrap_or_else(|p| p.into_inner());
                        if f.is_none_or(|b: BadPair| bad.target < b.target) {
                            *f = Some(bad);
                        }
                        return;
                    }
                }
            }
        });
        match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(bad) => Err(bad),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(j: usize) -> Taylor {
        let f = j as f64;
        Taylor {
            x: [0.3 + f.sin(), -0.7 + 0.1 * f, (1.3 * f).cos()],
            m: 0.5 + 0.01 * f,
            v: [f.cos(), 0.2, -0.1 * f],
            t: 0.01 * (j % 5) as f64,
            a2: [0.1 * f.sin(), -0.2, 0.05],
            j6: [0.3, 0.1 * f.cos(), -0.4],
            ..Taylor::default()
        }
    }

    /// Every backend against a scalar f64 loop, lists of every length up to past two
    /// AVX-512 vectors (so each short last vector is met), in a scrambled order.
    #[test]
    fn every_backend_sums_a_list_as_the_scalar_loop() {
        let records: Vec<Taylor> = (0..64).map(record).collect();
        let t = 0.07;
        for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable].into_iter().filter(|i| i.is_available()) {
            for n in 0..40usize {
                let list: Vec<u32> = (0..n).map(|k| (1 + (k * 37) % 63) as u32).collect();
                let (xi, vi) = records[0].predict(t);
                let (mut want, mut scale) = (ListSums::default(), ListSums::default());
                let mut best = f64::INFINITY;
                for &j in &list {
                    let (xj, vj) = records[j as usize].predict(t);
                    let d: [f64; 3] = std::array::from_fn(|c| xj[c] - xi[c]);
                    let v: [f64; 3] = std::array::from_fn(|c| vj[c] - vi[c]);
                    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    let rv = d[0] * v[0] + d[1] * v[1] + d[2] * v[2];
                    let w = records[j as usize].m / (r2 * r2.sqrt());
                    for c in 0..3 {
                        want.acc[c] += w * d[c];
                        want.jerk[c] += w * (v[c] - 3.0 * rv / r2 * d[c]);
                        scale.acc[c] += (w * d[c]).abs();
                        scale.jerk[c] += (w * v[c]).abs() + (w * 3.0 * rv / r2 * d[c]).abs();
                    }
                    if r2 < best {
                        (best, want.nearest) = (r2, Some(j));
                    }
                }
                let lists = ListExecutor::with_isa(Parallelism::Sequential, isa);
                let mut out = [ListSums::default()];
                lists.sums(&records, &[(0, &list)], t, &mut out).unwrap();
                assert_eq!(out[0].nearest, want.nearest);
                // Against the sum of the terms' sizes: a few roundings.
                for c in 0..3 {
                    for (got, want, scale) in
                        [(out[0].acc[c], want.acc[c], scale.acc[c]), (out[0].jerk[c], want.jerk[c], scale.jerk[c])]
                    {
                        assert!((got - want).abs() <= 1e-15 * scale, "{isa:?} n={n}: {got} against {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_pair_at_zero_distance_stops_the_call() {
        let mut records: Vec<Taylor> = (0..100).map(record).collect();
        records[57] = records[3];
        records[60].x[0] = f64::NAN;
        let lists = ListExecutor::new(Parallelism::Threads(2));
        let all: Vec<u32> = (0..100).collect();
        let targets: Vec<(usize, &[u32])> =
            (0..100).map(|i| (i, if i == 3 { &all[50..58] } else { &all[0..0] })).collect();
        let mut out = vec![ListSums::default(); 100];
        assert_eq!(lists.sums(&records, &targets, 0.1, &mut out), Err(BadPair { target: 3, source: 57 }));
        let nan: Vec<(usize, &[u32])> = vec![(1, &all[59..61])];
        assert_eq!(lists.sums(&records, &nan, 0.1, &mut out[..1]), Err(BadPair { target: 0, source: 60 }));
    }
}
