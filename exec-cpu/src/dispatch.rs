//! Instruction-set detection and the kernel entry points compiled for each.

use crate::kernel::{Block, SourcesSoa, TILE, accumulate_jerk, accumulate_split, scan_tile};
use crate::scratch::{GatherFn, Part, gather};
use crate::simd::{Portable, Simd};
use nbody_core::{Particle, Real, Softening, Velocity};

/// The instruction set a kernel is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F (16 f32 / 8 f64 lanes).
    Avx512,
    /// AVX2 with FMA (8 f32 / 4 f64 lanes).
    Avx2,
    /// Plain Rust the compiler vectorizes for the build target.
    Portable,
}

impl Isa {
    /// The best instruction set this CPU has.
    ///
    /// ```
    /// let isa = nbody_cpu::Isa::detect();
    /// assert!(isa.is_available());
    /// ```
    pub fn detect() -> Isa {
        [Isa::Avx512, Isa::Avx2].into_iter().find(|i| i.is_available()).unwrap_or(Isa::Portable)
    }

    /// Whether this CPU can run it.
    pub fn is_available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            Isa::Portable => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Itself if available, else the best available.
    pub fn available_or_best(self) -> Isa {
        if self.is_available() { self } else { Isa::detect() }
    }

    /// Name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }
}

/// A kernel entry point: adds the sources' pull into one part's sums.
pub(crate) type KernelFn<T> = unsafe fn(&mut Part<'_, T>, &SourcesSoa<'_, T>, T);

/// [`gather`] compiled for `isa`: the copy and the check are a leaf call's largest cost
/// after its interactions, and SSE2 runs them at a quarter of AVX-512's width.
pub(crate) fn gather_fn<T: Real>(isa: Isa) -> GatherFn<T> {
    unsafe fn plain<T: Real>(p: &[Particle<T>], v: &[Velocity<T>], l: &mut [&mut [T]; 7]) -> bool {
        gather(p, v, l)
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512<T: Real>(p: &[Particle<T>], v: &[Velocity<T>], l: &mut [&mut [T]; 7]) -> bool {
            gather(p, v, l)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<T: Real>(p: &[Particle<T>], v: &[Velocity<T>], l: &mut [&mut [T]; 7]) -> bool {
            gather(p, v, l)
        }
        match isa {
            Isa::Avx512 => return avx512::<T>,
            Isa::Avx2 => return avx2::<T>,
            Isa::Portable => {}
        }
    }
    plain::<T>
}

/// Tiles outer, blocks inner: each L1-sized source tile serves every block of the part.
#[inline(always)]
unsafe fn drive<S: Simd, const U: usize, const POT: bool, const MASK: bool, const SPLINE: bool, const EACH: bool>(
    part: &mut Part<'_, S::T>,
    src: &SourcesSoa<'_, S::T>,
    eps2: S::T,
) {
    // SAFETY: the caller's contract: this CPU has the backend's features, and every part holds whole blocks.
    unsafe {
        let bs = U * S::LANES;
        for t0 in (0..src.len()).step_by(TILE) {
            let tile = src.slice(t0, (t0 + TILE).min(src.len()));
            for b in (0..part.len()).step_by(bs) {
                let r = b..b + bs;
                let [ax, ay, az, phi] = &mut part.acc;
                let mut blk = Block {
                    pos: [&part.pos[0][r.clone()], &part.pos[1][r.clone()], &part.pos[2][r.clone()]],
                    eps: if EACH { &part.eps[r.clone()] } else { &[] },
                    vel: [&[], &[], &[]],
                    acc: [&mut ax[r.clone()], &mut ay[r.clone()], &mut az[r.clone()], &mut phi[r]],
                    jerk: [&mut [], &mut [], &mut []],
                };
                accumulate_split::<S, U, POT, MASK, SPLINE, EACH, 0>(&mut blk, &tile, eps2, None);
                add_into(&part.acc, &mut part.total, b, bs);
            }
        }
    }
}

/// Adds one tile's block sums (working precision) into the f64 totals.
#[inline(always)]
fn add_into<T: Real, const N: usize>(sums: &[&mut [T]; N], totals: &mut [&mut [f64]], b: usize, bs: usize) {
    for (s, t) in sums.iter().zip(totals.iter_mut()) {
        for (t, s) in t[b..b + bs].iter_mut().zip(&s[b..b + bs]) {
            *t += Real::to_f64(*s);
        }
    }
}

/// As [`drive`], for the jerk kernel (one vector of targets per block).
#[inline(always)]
unsafe fn drive_jerk<S: Simd, const POT: bool, const MASK: bool, const SPLINE: bool>(
    part: &mut Part<'_, S::T>,
    src: &SourcesSoa<'_, S::T>,
    eps2: S::T,
) {
    // SAFETY: the caller's contract: this CPU has the backend's features, and every part holds whole blocks.
    unsafe {
        let bs = S::LANES;
        if let Some(search) = &mut part.search {
            search.found.nearest.clear();
            search.found.nearest.resize(part.pos[0].len(), (S::T::from_f64(f64::INFINITY), u32::MAX));
        }
        for t0 in (0..src.len()).step_by(TILE) {
            let tile = src.slice(t0, (t0 + TILE).min(src.len()));
            for b in (0..part.len()).step_by(bs) {
                let r = b..b + bs;
                let [ax, ay, az, phi] = &mut part.acc;
                let [jx, jy, jz] = &mut part.jerk;
                let mut blk = Block {
                    pos: [&part.pos[0][r.clone()], &part.pos[1][r.clone()], &part.pos[2][r.clone()]],
                    eps: &[],
                    vel: [&part.vel[0][r.clone()], &part.vel[1][r.clone()], &part.vel[2][r.clone()]],
                    acc: [&mut ax[r.clone()], &mut ay[r.clone()], &mut az[r.clone()], &mut phi[r.clone()]],
                    jerk: [&mut jx[r.clone()], &mut jy[r.clone()], &mut jz[r]],
                };
                accumulate_jerk::<S, POT, MASK, SPLINE>(&mut blk, &tile, eps2);
                if let Some(search) = &mut part.search {
                    match bs {
                        16 => scan_tile::<S::T, 16>(part.pos, search, b, &tile, t0),
                        8 => scan_tile::<S::T, 8>(part.pos, search, b, &tile, t0),
                        4 => scan_tile::<S::T, 4>(part.pos, search, b, &tile, t0),
                        _ => (b..b + bs).for_each(|l| scan_tile::<S::T, 1>(part.pos, search, l, &tile, t0)),
                    }
                }
                add_into(&part.acc, &mut part.total[..4], b, bs);
                add_into(&part.jerk, &mut part.total[4..], b, bs);
            }
        }
    }
}

/// The monomorphization of `$k::<POT, MASK>` for run-time flags.
macro_rules! by_flags {
    ($k:ident, $pot:expr, $mask:expr) => {
        match ($pot, $mask) {
            (false, false) => $k::<false, false>,
            (false, true) => $k::<false, true>,
            (true, false) => $k::<true, false>,
            (true, true) => $k::<true, true>,
        }
    };
}
pub(crate) use by_flags;

/// `$k::<POT, MASK, SPLINE>` for run-time flags: the spline kernels never mask (a lane
/// at zero distance is inside the support and takes the spline's value instead). The
/// per-particle kernels take the same map: their spline masks in its exact path (a pair
/// of two unsoftened particles is Newtonian, and may sit at zero distance;
/// `accumulate_split` sends such pairs there), so it has no masked variant either.
macro_rules! by_kernel {
    ($k:ident, $pot:expr, $mask:expr, $softening:expr) => {
        match ($pot, $mask, $softening) {
            (false, false, Softening::Plummer) => $k::<false, false, false>,
            (false, true, Softening::Plummer) => $k::<false, true, false>,
            (true, false, Softening::Plummer) => $k::<true, false, false>,
            (true, true, Softening::Plummer) => $k::<true, true, false>,
            (false, _, Softening::Spline) => $k::<false, false, true>,
            (true, _, Softening::Spline) => $k::<true, false, true>,
        }
    };
}

/// Defines `$name::<POT, MASK>` entry points for backend `$s` with `$u` vectors per block,
/// compiled with `$feat`, plus a selector over the two flags.
macro_rules! entry_points {
    ($t:ty, $select:ident, $select_jerk:ident, $select_each:ident, $( $isa:ident => $s:ty, $u:literal $(, #[$feat:meta])? );* $(;)?) => {
        /// For the spline the kernel's `eps2` argument is the spline's support.
        pub(crate) fn $select(isa: Isa, pot: bool, mask: bool, softening: Softening) -> KernelFn<$t> {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k<const P: bool, const M: bool, const SP: bool>(part: &mut Part<'_, $t>, src: &SourcesSoa<'_, $t>, eps2: $t) {
                        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features, parts hold whole blocks).
                        unsafe {
                            drive::<$s, $u, P, M, SP, false>(part, src, eps2)
                        }
                    }
                    return by_kernel!(k, pot, mask, softening);
                }
            )*
            unreachable_isa(isa, softening)
        }

        /// The kernels with a softening per particle (the part's and the sources'
        /// lengths, see `Block::eps`; the `eps2` argument is not read).
        pub(crate) fn $select_each(isa: Isa, pot: bool, mask: bool, softening: Softening) -> KernelFn<$t> {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k<const P: bool, const M: bool, const SP: bool>(part: &mut Part<'_, $t>, src: &SourcesSoa<'_, $t>, eps2: $t) {
                        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features, parts hold whole blocks and their lengths).
                        unsafe {
                            drive::<$s, $u, P, M, SP, true>(part, src, eps2)
                        }
                    }
                    return by_kernel!(k, pot, mask, softening);
                }
            )*
            unreachable_each(isa, softening)
        }

        /// For the spline the kernel's `eps2` argument is the spline's support.
        pub(crate) fn $select_jerk(isa: Isa, pot: bool, mask: bool, softening: Softening) -> KernelFn<$t> {
            $(
                if isa == Isa::$isa {
                    $(#[$feat])?
                    unsafe fn k<const P: bool, const M: bool, const SP: bool>(part: &mut Part<'_, $t>, src: &SourcesSoa<'_, $t>, eps2: $t) {
                        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features, parts hold whole blocks).
                        unsafe {
                            drive_jerk::<$s, P, M, SP>(part, src, eps2)
                        }
                    }
                    return by_kernel!(k, pot, mask, softening);
                }
            )*
            unreachable_isa(isa, softening)
        }
    };
}

/// Only reached for an instruction set of another architecture, which `Isa::detect`
/// never returns there; the portable kernel is always a correct answer.
fn unreachable_isa<T: Real>(_isa: Isa, softening: Softening) -> KernelFn<T> {
    unsafe fn k<T: Real>(part: &mut Part<'_, T>, src: &SourcesSoa<'_, T>, eps2: T) {
        // SAFETY: drive's contract is the caller's (this CPU has the entry point's features, parts hold whole blocks).
        unsafe {
            if eps2 == T::zero() {
                drive::<Portable<T>, 1, true, true, false, false>(part, src, eps2)
            } else {
                drive::<Portable<T>, 1, true, false, false, false>(part, src, eps2)
            }
        }
    }
    unsafe fn s<T: Real>(part: &mut Part<'_, T>, src: &SourcesSoa<'_, T>, h: T) {
        // SAFETY: as above.
        unsafe { drive::<Portable<T>, 1, true, false, true, false>(part, src, h) }
    }
    match softening {
        Softening::Plummer => k::<T>,
        Softening::Spline => s::<T>,
    }
}

/// As [`unreachable_isa`], for the per-particle kernels.
fn unreachable_each<T: Real>(_isa: Isa, softening: Softening) -> KernelFn<T> {
    unsafe fn k<T: Real>(part: &mut Part<'_, T>, src: &SourcesSoa<'_, T>, eps2: T) {
        // SAFETY: drive's contract is the caller's (as above, with the lengths).
        unsafe { drive::<Portable<T>, 1, true, true, false, true>(part, src, eps2) }
    }
    unsafe fn s<T: Real>(part: &mut Part<'_, T>, src: &SourcesSoa<'_, T>, eps2: T) {
        // SAFETY: as above.
        unsafe { drive::<Portable<T>, 1, true, false, true, true>(part, src, eps2) }
    }
    match softening {
        Softening::Plummer => k::<T>,
        Softening::Spline => s::<T>,
    }
}

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2F32, Avx2F64, Avx512F32, Avx512F64};

#[cfg(target_arch = "x86_64")]
entry_points!(f32, f32_kernel, f32_jerk_kernel, f32_each_kernel,
    Avx512 => Avx512F32, 2, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F32, 2, #[target_feature(enable = "avx2,fma")];
    Portable => Portable<f32>, 1;
);

#[cfg(target_arch = "x86_64")]
entry_points!(f64, f64_kernel, f64_jerk_kernel, f64_each_kernel,
    Avx512 => Avx512F64, 2, #[target_feature(enable = "avx512f")];
    Avx2 => Avx2F64, 2, #[target_feature(enable = "avx2,fma")];
    Portable => Portable<f64>, 1;
);

#[cfg(not(target_arch = "x86_64"))]
entry_points!(f32, f32_kernel, f32_jerk_kernel, f32_each_kernel, Portable => Portable<f32>, 1;);

#[cfg(not(target_arch = "x86_64"))]
entry_points!(f64, f64_kernel, f64_jerk_kernel, f64_each_kernel, Portable => Portable<f64>, 1;);
