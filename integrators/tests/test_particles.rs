//! Test particles: massless particles after the massive ones feel every massive particle,
//! exert nothing, and cost N x N_massive interactions; a test particle's Kepler orbit
//! around a point mass converges at each integrator's order.

use nbody_core::forward::Counted;
use nbody_core::{Reference, Velocity};
use nbody_integrators::{BlockHermite, Criterion, DormandPrince, Hermite, Hermite6, Leapfrog, State, ics};

const PERIOD: f64 = 2.0 * std::f64::consts::PI;

/// A unit point mass at rest and a test particle on an e = 0.5 orbit of semi-major axis
/// 1 (period 2 pi), starting at apocentre (1.5, 0, 0).
fn kepler() -> State<f64> {
    let (p, v) = ics::kepler::<f64>(0.5, 1.0, 0.0);
    assert_eq!((p[0].m, p[1].m), (1.0, 0.0));
    State::new(p, v)
}

/// Distance from the starting point after one period, with the point mass checked to
/// have stayed exactly at rest.
fn miss(s: &State<f64>) -> f64 {
    assert_eq!(s.pos[0].position(), [0.0; 3], "the test particle moved the point mass");
    assert_eq!(s.vel[0].components(), [0.0; 3]);
    (s.pos[1].x - 1.5).hypot(s.pos[1].y).hypot(s.pos[1].z)
}

/// The observed order of a scheme: `miss(h)` is the error after one period with the step
/// halved `h` times; the order is log2 of the ratio of the errors at h = 0 and h = 1.
fn order_of(miss: impl Fn(u32) -> f64) -> f64 {
    let (coarse, fine) = (miss(0), miss(1));
    eprintln!("misses {coarse:e}, {fine:e}");
    (coarse / fine).log2()
}

#[test]
fn leapfrog_converges_at_second_order() {
    let order = order_of(|halvings| {
        let steps = 4000 << halvings;
        let mut s = kepler();
        let mut lf = Leapfrog::new(PERIOD / steps as f64, 0.0).unwrap();
        for _ in 0..steps {
            lf.step(&mut s, &mut Reference).unwrap();
        }
        miss(&s)
    });
    assert!((1.8..2.2).contains(&order), "leapfrog: order {order}");
}

#[test]
fn hermite_converges_at_fourth_order() {
    let order = order_of(|halvings| {
        let eta = 0.004 / f64::from(1 << halvings);
        let mut s = kepler();
        let mut h = Hermite::new(eta, 0.0).unwrap().with_criterion(Criterion::AccelerationOverJerk);
        h.advance_to(&mut s, &mut Reference, PERIOD).unwrap();
        miss(&s)
    });
    assert!((3.5..4.6).contains(&order), "Hermite: order {order}");
}

#[test]
fn sixth_order_and_adaptive_integrators_keep_the_orbit() {
    let mut s = kepler();
    let mut h6 = Hermite6::new(0.1, 0.0).unwrap();
    h6.advance_to(&mut s, &mut Reference, PERIOD).unwrap();
    assert!(miss(&s) < 1e-8, "Hermite 6: {:e}", miss(&s));
    let mut s = kepler();
    let mut rk = DormandPrince::new(1e-10, 1e-12, 0.0).unwrap();
    rk.advance_to(&mut s, &mut Reference, PERIOD).unwrap();
    assert!(miss(&s) < 1e-7, "Runge-Kutta: {:e}", miss(&s));
    // Block steps: dt_max = 2 pi / 8, so the period is a block time.
    let mut a = kepler();
    BlockHermite::new(0.005, PERIOD / 8.0, 0.0).unwrap().advance_to(&mut a, &mut Reference, PERIOD).unwrap();
    assert!(miss(&a) < 1e-5, "block Hermite: {:e}", miss(&a));
    assert_eq!(a.pos[0].position(), [0.0; 3]);
}

#[test]
fn test_particles_cost_n_times_the_massive_ones() {
    let (p, v) = ics::plummer::<f64>(10, 3);
    let tests: Vec<[f64; 3]> =
        (0..90).map(|k| [0.1 * (k as f64).sin(), 0.2 * (k as f64).cos(), k as f64 / 90.0]).collect();
    let mut s =
        State::with_test_particles(p.clone(), v.clone(), &tests, vec![Velocity::new(0.0, 0.0, 0.0); 90]).unwrap();
    assert_eq!((s.len(), s.massive()), (100, 10));
    let mut e = Counted::new(Reference);
    let mut lf = Leapfrog::new(1e-3, 0.01).unwrap();
    for _ in 0..5 {
        lf.step(&mut s, &mut e).unwrap();
    }
    // One force call to start and one per step, each 100 targets x 10 sources.
    assert_eq!(e.interactions, 6.0 * 100.0 * 10.0);
    let mut e = Counted::new(Reference);
    let mut b = BlockHermite::new(0.02, 1.0 / 64.0, 0.01).unwrap();
    let mut s2 = s.clone();
    let steps = b.advance_to(&mut s2, &mut e, 1.0 / 64.0).unwrap();
    assert!(
        e.interactions <= ((steps + 1) * 100 * 10) as f64,
        "{} interactions in {steps} block steps",
        e.interactions
    );
    // The massive particles move exactly as they would without the test particles.
    let mut alone = State::new(p, v);
    let mut lf = Leapfrog::new(1e-3, 0.01).unwrap();
    for _ in 0..5 {
        lf.step(&mut alone, &mut Reference).unwrap();
    }
    assert_eq!(&s.pos[..10], &alone.pos[..]);
    assert_eq!(&s.vel[..10], &alone.vel[..]);
    // A test particle feels them: it moved.
    assert!(s.pos[50..].iter().zip(&tests[40..]).any(|(q, t)| q.position() != *t));
}
