//! The CPU executors compute the spline softening (the conformance suite also accepts a
//! refusal; these executors must not refuse).

use nbody_conformance::computes_spline;
use nbody_core::{Executor, Field, Params, Particle, Softening};
use nbody_cpu::{CpuExecutor, Isa, MixedExecutor, Parallelism};

#[test]
fn every_cpu_executor_computes_the_spline() {
    for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable].into_iter().filter(|i| i.is_available()) {
        let mut e = CpuExecutor::with_isa(Parallelism::Threads(2), isa);
        computes_spline::<f32, _>(&mut e).unwrap();
        computes_spline::<f64, _>(&mut e).unwrap();
    }
    computes_spline::<f64, _>(&mut MixedExecutor::new(Parallelism::Threads(2))).unwrap();
}

/// A pair inside the support feels the spline's finite pull, one beyond it Newton's;
/// the potential of a particle on itself is removed exactly (−m/ε for the pair only).
#[test]
fn spline_inside_and_beyond_its_support() {
    let eps = 0.1f64;
    let ps = [Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(0.14, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    let p = Params::softened(eps).with_softening(Softening::Spline).with_overlap_identical();
    let mut out = vec![Field::zero(); 3];
    CpuExecutor::new(Parallelism::Sequential).accelerations(&ps, &ps, &p, &mut out).unwrap();
    // Particle 0: at u = 0.14 / 0.28 = 1/2 from particle 1 (inside h), exactly
    // Newtonian from particle 2.
    let (w, g, _) = nbody_core::kernel::spline(0.14f64 * 0.14, 0.28, 1.0 / 0.28);
    let want_ax = g * 0.14 + 1.0;
    assert!((out[0].ax - want_ax).abs() < 1e-12 * want_ax, "{} against {want_ax}", out[0].ax);
    assert!((out[0].phi + w + 1.0).abs() < 1e-12, "{} against {}", out[0].phi, -(w + 1.0));
    // The spline is softer than Newton inside h and equals it beyond.
    assert!(g * 0.14 < 1.0 / (0.14 * 0.14));
}
