//! The `Integrator` trait drives every integrator exactly as its own methods do: the
//! same steps, bit for bit, through `dyn Integrator` and `dyn Executor`.

use nbody_core::{Executor, Reference};
use nbody_cpu::{CpuExecutor, Parallelism};
use nbody_integrators::{BlockHermite, DormandPrince, Hermite, Hermite6, Integrator, Leapfrog, State, ics};

/// Runs `until` through the trait (boxed, on a boxed executor) and through `direct`,
/// from the same state; both must end equal and the trait must say it reached `until`.
fn same<I: Integrator<f64> + 'static>(
    make: impl Fn() -> I,
    until: f64,
    direct: impl Fn(&mut I, &mut State<f64>, &mut CpuExecutor) -> u64,
) {
    let (p, v) = ics::plummer::<f64>(128, 3);
    let (mut a, mut b) = (State::new(p.clone(), v.clone()), State::new(p, v));
    let mut boxed: Box<dyn Integrator<f64>> = Box::new(make());
    let mut exec: Box<dyn Executor<f64>> = Box::new(CpuExecutor::new(Parallelism::Threads(2)));
    let steps = boxed.advance_to(&mut a, &mut exec, until).unwrap();
    assert!(boxed.reached(&a, until), "{}: stopped at {} before {until}", boxed.name(), a.time);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let want = direct(&mut make(), &mut b, &mut cpu);
    assert_eq!(steps, want, "{}: steps", boxed.name());
    assert_eq!(a, b, "{}: states differ", boxed.name());
    let d = boxed.diagnostics(&a, &mut Reference).unwrap();
    assert!(d.total.is_finite() && d.total < 0.0, "{}: energy {}", boxed.name(), d.total);
    // Already there: no more steps.
    assert_eq!(boxed.advance_to(&mut a, &mut exec, until).unwrap(), 0);
}

#[test]
fn leapfrog() {
    same(
        || Leapfrog::new(1.0 / 64.0, 0.05).unwrap(),
        0.25,
        |i, s, e| {
            let mut n = 0;
            while s.time < 0.25 - 0.5 / 64.0 {
                i.step(s, e).unwrap();
                n += 1;
            }
            n
        },
    );
}

#[test]
fn hermite() {
    same(|| Hermite::new(0.02, 0.05).unwrap(), 0.25, |i, s, e| i.advance_to(s, e, 0.25).unwrap() as u64);
}

#[test]
fn block_hermite() {
    same(
        || BlockHermite::new(0.02, 1.0 / 16.0, 0.05).unwrap(),
        0.25,
        |i, s, e| i.advance_to(s, e, 0.25).unwrap() as u64,
    );
}

#[test]
fn hermite6() {
    same(|| Hermite6::new(0.1, 0.05).unwrap(), 0.25, |i, s, e| i.advance_to(s, e, 0.25).unwrap() as u64);
}

#[test]
fn dormand_prince() {
    same(|| DormandPrince::new(1e-8, 1e-8, 0.05).unwrap(), 0.25, |i, s, e| i.advance_to(s, e, 0.25).unwrap() as u64);
}

/// The leapfrog written once over `Resident` (here on the host, with a CPU executor's
/// force calls) takes the host leapfrog's steps bit for bit.
#[test]
fn resident_leapfrog_is_the_host_leapfrog() {
    use nbody_core::Params;
    use nbody_core::resident::{OnHost, Resident};
    let (p, v) = ics::plummer::<f64>(128, 5);
    let dt = 1.0 / 64.0;
    let mut host = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(dt, 0.05).unwrap();
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut resident = OnHost::new(CpuExecutor::new(Parallelism::Threads(2)));
    let mut s = resident.upload_state(&p, &v).unwrap();
    let params = Params::softened(0.05);
    for _ in 0..16 {
        lf.step(&mut host, &mut cpu).unwrap();
        resident.leapfrog_step(&mut s, &params, dt).unwrap();
    }
    let (mut pos, mut vel) = (p.clone(), v.clone());
    resident.download_state(&s, &mut pos, &mut vel).unwrap();
    assert_eq!((pos, vel), (host.pos.clone(), host.vel.clone()));
    assert_eq!(OnHost::<CpuExecutor>::time(&s), host.time);
    let mut field = vec![nbody_core::Field::zero(); p.len()];
    resident.download_field(&mut s, &params, &mut field).unwrap();
    assert_eq!(field, lf.field());
    // A handle from another executor is refused, not used.
    let mut other = OnHost::new(CpuExecutor::new(Parallelism::Threads(1)));
    assert!(other.leapfrog_step(&mut s, &params, dt).is_err());
}
