//! The resident Hermite driver over the host's twin of a device system (`OnHost`) against
//! the host integrators: the same rules, so the same steps and the same orbits to
//! round-off (the host integrators sum the sources in another order: active first). The GPU
//! runs the same driver over its own system (exec-cuda's physics tests).

use nbody_core::resident::OnHost;
use nbody_core::{Particle, Reference, Velocity};
use nbody_integrators::{BlockHermite, Hermite, ResidentHermite, State, Steps, ics};

/// The largest coordinate difference between the host state and the resident one.
fn largest_difference(host: &State<f64>, pos: &[Particle<f64>], vel: &[Velocity<f64>]) -> f64 {
    let mut worst = 0.0f64;
    for i in 0..pos.len() {
        for (a, b) in host.pos[i].position().iter().zip(pos[i].position()) {
            worst = worst.max((a - b).abs());
        }
        for (a, b) in host.vel[i].components().iter().zip(vel[i].components()) {
            worst = worst.max((a - b).abs());
        }
    }
    worst
}

/// The resident integration of `(p, v)` to `host.time` (where the host integrator took
/// the same system in `host_steps` steps) takes as many steps and ends where it did.
fn resident_matches(
    (p, v): (&[Particle<f64>], &[Velocity<f64>]),
    host: &State<f64>,
    host_steps: usize,
    (eta, eps): (f64, f64),
    steps: Steps,
) {
    let mut exec = OnHost::new(Reference);
    let mut h = ResidentHermite::new(&mut exec, p, v, 0.0, eta, eps, steps).unwrap();
    while h.time() < host.time {
        h.step(&mut exec, host.time).unwrap();
    }
    assert!(h.synchronized());
    assert_eq!(h.steps() as usize, host_steps);
    let (mut pos, mut vel) = (p.to_vec(), v.to_vec());
    h.download(&mut exec, &mut pos, &mut vel).unwrap();
    let worst = largest_difference(host, &pos, &vel);
    assert!(worst < 1e-13, "largest difference {worst:e}");
}

#[test]
fn block_steps_take_the_host_integrators_steps() {
    let (p, v) = ics::plummer::<f64>(256, 5);
    let (eta, dt_max, eps, t_end) = (0.02, 1.0 / 16.0, 1.0 / 64.0, 0.25);
    let mut host = State::new(p.clone(), v.clone());
    let host_steps = BlockHermite::new(eta, dt_max, eps).unwrap().advance_to(&mut host, &mut Reference, t_end).unwrap();
    resident_matches((&p, &v), &host, host_steps, (eta, eps), Steps::Block { dt_max });
}

#[test]
fn shared_steps_take_the_host_integrators_steps() {
    let (p, v) = ics::plummer::<f64>(256, 6);
    let (eta, eps, t_end) = (0.02, 1.0 / 64.0, 0.125);
    let mut host = State::new(p.clone(), v.clone());
    let mut reference = Hermite::new(eta, eps).unwrap();
    let mut host_steps = 0;
    while host.time < t_end {
        let left = t_end - host.time;
        reference.step(&mut host, &mut Reference, left).unwrap();
        host_steps += 1;
    }
    resident_matches((&p, &v), &host, host_steps as usize, (eta, eps), Steps::Shared);
}

#[test]
fn a_system_belongs_to_the_executor_that_holds_it_and_bad_input_is_refused() {
    let (p, v) = ics::plummer::<f64>(16, 1);
    let (mut a, mut b) = (OnHost::new(Reference), OnHost::new(Reference));
    let mut h = ResidentHermite::new(&mut a, &p, &v, 0.0, 0.02, 0.01, Steps::Shared).unwrap();
    assert!(h.step(&mut b, 0.1).is_err());
    assert!(ResidentHermite::new(&mut a, &p, &v[..15], 0.0, 0.02, 0.01, Steps::Shared).is_err());
    assert!(ResidentHermite::new(&mut a, &p, &v, 0.0, -1.0, 0.01, Steps::Shared).is_err());
    assert!(ResidentHermite::new(&mut a, &p, &v, 0.0, 0.02, 0.01, Steps::Block { dt_max: f64::NAN }).is_err());
    let mut bad = p.clone();
    bad[3].x = f64::NAN;
    assert!(ResidentHermite::new(&mut a, &bad, &v, 0.0, 0.02, 0.01, Steps::Shared).is_err());
    let mut fast = v.clone();
    fast[2].vy = f64::NAN;
    assert!(ResidentHermite::new(&mut a, &p, &fast, 0.0, 0.02, 0.01, Steps::Shared).is_err());
    // A checkpoint is checked as the particles are.
    let mut saved = h.checkpoint(&mut a).unwrap();
    saved.records.vel[5][0] = f64::INFINITY;
    assert!(ResidentHermite::resume(&mut a, &saved, 0.02, 0.01, Steps::Shared).is_err());
}
