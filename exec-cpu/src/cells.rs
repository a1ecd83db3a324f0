//! The cell kernel (far cells with a quadrupole as sources, `nbody_core::cell`) in
//! vectors: lanes are targets, each cell is broadcast once and serves a whole vector.

use crate::dispatch::Isa;
use crate::simd::{Portable, Simd};
use nbody_core::Real;
use nbody_core::cell::Cell;

/// Cells summed in the working precision before the sums go to f64 (as the pair
/// kernel's tiles: rounding grows with sqrt of this, not of a leaf's whole list).
const RUN: usize = 512;

/// Targets `[x, y, z]`, SoA, each a whole number of vectors long (padding lanes are
/// computed and ignored), and the f64 sums `[ax, ay, az, phi]` the cells' field (without
/// G) is added into.
#[derive(Debug)]
pub struct CellTargets<'a, T> {
    pub pos: [&'a [T]; 3],
    pub sums: [&'a mut [f64]; 4],
}

/// An entry point: adds the field of `cells` with Plummer softening `eps2`.
pub(crate) type CellFn<T> = unsafe fn(&mut CellTargets<'_, T>, &[Cell<T>], T);

/// The field of `cells` at every target, vector by vector: the same operations as
/// `nbody_core::cell::cell`, fused where the hardware fuses.
///
/// # Safety
///
/// This CPU has the backend's features, and every target array is a whole number of
/// `S::LANES` long.
#[inline(always)]
unsafe fn add_cells<S: Simd>(t: &mut CellTargets<'_, S::T>, cells: &[Cell<S::T>], eps2: S::T) {
    let l = S::LANES;
    let s = |v: f64| S::T::from_f64(v);
    let mut lanes = [[s(0.0); 16]; 4];
    // SAFETY: the caller's contract: the features are there and each block of `l`
    // targets lies inside the arrays; `lanes` holds 16 >= l values per sum.
    unsafe {
        let (e2, half, five, zero) = (S::splat(eps2), S::splat(s(0.5)), S::splat(s(5.0)), S::splat(s(0.0)));
        for b in (0..t.pos[0].len()).step_by(l) {
            let x = S::load(t.pos[0].as_ptr().add(b));
            let y = S::load(t.pos[1].as_ptr().add(b));
            let z = S::load(t.pos[2].as_ptr().add(b));
            for run in cells.chunks(RUN) {
                let (mut ax, mut ay, mut az, mut phi) = (zero, zero, zero, zero);
                for c in run {
                    let dx = S::sub(x, S::splat(c.x));
                    let dy = S::sub(y, S::splat(c.y));
                    let dz = S::sub(z, S::splat(c.z));
                    let r2 = S::fma(dx, dx, S::fma(dy, dy, S::fma(dz, dz, e2)));
                    // Masked: a target on an unsoftened cell's centre feels nothing.
                    let rinv = S::rsqrt::<true>(r2);
                    let rinv2 = S::mul(rinv, rinv);
                    let (qxy, qxz, qyz) = (S::splat(c.qxy), S::splat(c.qxz), S::splat(c.qyz));
                    let qdx = S::fma(S::splat(c.qxx), dx, S::fma(qxy, dy, S::mul(qxz, dz)));
                    let qdy = S::fma(qxy, dx, S::fma(S::splat(c.qyy), dy, S::mul(qyz, dz)));
                    let qdz = S::fma(qxz, dx, S::fma(qyz, dy, S::mul(S::splat(c.qzz), dz)));
                    // d·Q·d less the spread's softened share ε² S (`Cell::spread`).
                    let dqd = S::fma(dx, qdx, S::fma(dy, qdy, S::fnma(e2, S::splat(c.spread), S::mul(dz, qdz))));
                    let m_rinv = S::mul(S::splat(c.m), rinv);
                    let rinv5 = S::mul(S::mul(rinv2, rinv2), rinv);
                    let quad_phi = S::mul(S::mul(half, dqd), rinv5);
                    // a = −(M/r³ + 5/2 dQd/r⁷) d + Q d / r⁵
                    let radial = S::mul(rinv2, S::fma(five, quad_phi, m_rinv));
                    ax = S::fnma(radial, dx, S::fma(qdx, rinv5, ax));
                    ay = S::fnma(radial, dy, S::fma(qdy, rinv5, ay));
                    az = S::fnma(radial, dz, S::fma(qdz, rinv5, az));
                    phi = S::sub(S::sub(phi, m_rinv), quad_phi);
                }
                for (k, v) in [ax, ay, az, phi].into_iter().enumerate() {
                    S::store(lanes[k].as_mut_ptr(), v);
                    for (total, v) in t.sums[k][b..b + l].iter_mut().zip(&lanes[k][..l]) {
                        *total += v.to_f64();
                    }
                }
            }
        }
    }
}

/// The widest vector length any backend uses: callers pad targets to a multiple of it.
pub(crate) const PAD: usize = 16;

/// Defines `$name(isa)`: the entry point for `$t` compiled for `isa`.
macro_rules! cell_entry_points {
    ($name:ident, $t:ty, $avx512:ident, $avx2:ident) => {
        pub(crate) fn $name(isa: Isa) -> CellFn<$t> {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512(t: &mut CellTargets<'_, $t>, cells: &[Cell<$t>], eps2: $t) {
                    // SAFETY: the feature is enabled here; the caller pads to PAD.
                    unsafe { add_cells::<crate::simd::$avx512>(t, cells, eps2) }
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2(t: &mut CellTargets<'_, $t>, cells: &[Cell<$t>], eps2: $t) {
                    // SAFETY: as above.
                    unsafe { add_cells::<crate::simd::$avx2>(t, cells, eps2) }
                }
                match isa {
                    Isa::Avx512 => return avx512,
                    Isa::Avx2 => return avx2,
                    Isa::Portable => {}
                }
            }
            unsafe fn plain(t: &mut CellTargets<'_, $t>, cells: &[Cell<$t>], eps2: $t) {
                // SAFETY: the portable backend needs no feature; the caller pads to PAD.
                unsafe { add_cells::<Portable<$t>>(t, cells, eps2) }
            }
            let _ = isa;
            plain
        }
    };
}

cell_entry_points!(f32_cell_kernel, f32, Avx512F32, Avx2F32);
cell_entry_points!(f64_cell_kernel, f64, Avx512F64, Avx2F64);
