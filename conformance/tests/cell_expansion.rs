//! The cell expansion against direct summation of the cell's own particles: its error
//! falls at the order the expansion promises (third for monopole plus quadrupole about
//! the centre of mass, second for the monopole alone) as the target moves away, and,
//! softened, as the cell shrinks at a target a few softening lengths away (where the
//! spread's term is the difference between third order and second).

use nbody_core::cell::{Cell, cell};
use nbody_core::{Field, Particle, kernel};
use proptest::prelude::*;

/// Directions spread over the sphere (a Fibonacci lattice).
fn directions(n: usize) -> Vec<[f64; 3]> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|k| {
            let z = 1.0 - 2.0 * (k as f64 + 0.5) / n as f64;
            let r = (1.0 - z * z).sqrt();
            [r * (golden * k as f64).cos(), r * (golden * k as f64).sin(), z]
        })
        .collect()
}

/// The largest relative acceleration error over the directions at distance `d` from
/// the centre of mass: of the expansion, and of the monopole alone.
fn worst_errors(particles: &[Particle<f64>], c: &Cell<f64>, d: f64) -> (f64, f64) {
    let mono = Cell::new(c.x, c.y, c.z, c.m, [0.0; 6]);
    worst_pair(particles, c, &mono, d, 0.0)
}

/// The largest relative acceleration errors of cells `c` and `other` (of the same
/// particles) over the directions at distance `d` from `c`'s centre, softened by `eps2`.
fn worst_pair(particles: &[Particle<f64>], c: &Cell<f64>, other: &Cell<f64>, d: f64, eps2: f64) -> (f64, f64) {
    let (mut quad_err, mut mono_err) = (0.0f64, 0.0f64);
    for u in directions(64) {
        let xi = [c.x + d * u[0], c.y + d * u[1], c.z + d * u[2]];
        let mut direct = Field::zero();
        for p in particles {
            kernel::pair(xi, p, eps2, true, &mut direct);
        }
        let (mut q, mut m) = (Field::zero(), Field::zero());
        cell(xi, c, eps2, &mut q);
        cell(xi, other, eps2, &mut m);
        let norm = |a: [f64; 3]| (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        let diff =
            |f: &Field<f64>| norm([f.ax - direct.ax, f.ay - direct.ay, f.az - direct.az]) / norm(direct.acceleration());
        quad_err = quad_err.max(diff(&q));
        mono_err = mono_err.max(diff(&m));
    }
    (quad_err, mono_err)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_expansion_converges_at_third_order(
        rows in prop::collection::vec((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0, 0.1f64..1.0), 3..24),
        offset in (-100.0f64..100.0, -100.0f64..100.0, -100.0f64..100.0),
    ) {
        let particles: Vec<Particle<f64>> =
            rows.iter().map(|r| Particle::new(r.0 + offset.0, r.1 + offset.1, r.2 + offset.2, r.3)).collect();
        let c = Cell::from_particles(&particles);
        let (q20, m20) = worst_errors(&particles, &c, 20.0);
        let (q40, m40) = worst_errors(&particles, &c, 40.0);
        let (q80, m80) = worst_errors(&particles, &c, 80.0);
        // Doubling the distance divides the error by 2³ (by 2⁴ where the octupole
        // vanishes by symmetry), the monopole's by 2².
        // (A ratio means something only above rounding.)
        for (near, far) in [(q20, q40), (q40, q80)].into_iter().filter(|(_, far)| *far > 1e-13) {
            prop_assert!((5.5..20.0).contains(&(near / far)), "quadrupole error ratio {} ({near:e} / {far:e})", near / far);
        }
        for (near, far) in [(m20, m40), (m40, m80)].into_iter().filter(|(_, far)| *far > 1e-13) {
            prop_assert!((3.0..5.5).contains(&(near / far)), "monopole error ratio {} ({near:e} / {far:e})", near / far);
        }
        // And the quadrupole pays: well below the monopole's error at the farthest
        // distance. (The gap is the cell's quadrupole over its octupole times the
        // distance, so a nearly isotropic cell's is small near it: at 40 one random cell
        // of 15 particles was only 4.9 times better.)
        prop_assert!(q80 < m80 / 4.0, "quadrupole {q80:e}, monopole {m80:e} at 80");
    }

    #[test]
    fn softened_the_expansion_stays_third_order_through_its_spread(
        rows in prop::collection::vec((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0, 0.1f64..1.0), 3..24),
    ) {
        // A target two softening lengths from cells of the same shape at sizes 0.1, 0.05
        // and 0.025 (eps = 1): the softened kernel is not harmonic, and only with the
        // spread is the second-order term whole, so halving the cell divides the error
        // by 2³ (the octupole); without it by 2² (the dropped ε² S / r⁵).
        let at = |size: f64| -> (f64, f64) {
            let ps: Vec<Particle<f64>> = rows.iter().map(|r| Particle::new(size * r.0, size * r.1, size * r.2, r.3)).collect();
            let c = Cell::from_particles(&ps);
            worst_pair(&ps, &c, &c.with_spread(0.0), 2.0, 1.0)
        };
        let errors = [at(0.1), at(0.05), at(0.025)];
        for w in errors.windows(2).filter(|w| w[1].0 > 1e-13) {
            let ratio = w[0].0 / w[1].0;
            prop_assert!((5.5..20.0).contains(&ratio), "with the spread: ratio {ratio} ({:e} / {:e})", w[0].0, w[1].0);
        }
        for w in errors.windows(2) {
            let ratio = w[0].1 / w[1].1;
            prop_assert!((3.0..5.5).contains(&ratio), "without the spread: ratio {ratio} ({:e} / {:e})", w[0].1, w[1].1);
        }
        prop_assert!(errors[2].0 < errors[2].1 / 4.0, "with the spread {:e}, without {:e}", errors[2].0, errors[2].1);
    }
}

#[test]
fn a_cell_of_one_particle_is_that_particle_softened_or_not() {
    let p = [Particle::new(0.3f64, -0.2, 0.7, 2.5)];
    let c = Cell::from_particles(&p);
    assert_eq!(c.quadrupole(), [0.0; 6]);
    for eps2 in [0.0, 0.01] {
        let xi = [1.0, 2.0, -0.5];
        let (mut direct, mut via_cell) = (Field::zero(), Field::zero());
        kernel::pair(xi, &p[0], eps2, true, &mut direct);
        cell(xi, &c, eps2, &mut via_cell);
        for (a, b) in
            [(direct.ax, via_cell.ax), (direct.ay, via_cell.ay), (direct.az, via_cell.az), (direct.phi, via_cell.phi)]
        {
            assert!((a - b).abs() <= 1e-15 * a.abs(), "{a} vs {b}");
        }
    }
}
