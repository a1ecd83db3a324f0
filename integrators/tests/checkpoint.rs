//! Every integrator stopped after some steps and restored into a fresh one continues
//! bit for bit (same executor, same thread count).

use nbody_core::Real;
use nbody_cpu::{CpuExecutor, Parallelism};
use nbody_integrators::{BlockHermite, Checkpoint, DormandPrince, Hermite, Hermite6, Leapfrog, State, Words, ics};

fn continues_bit_for_bit<T: Real, I: Checkpoint>(
    make: impl Fn() -> I,
    step: impl Fn(&mut I, &mut State<T>, &mut CpuExecutor),
) {
    let (p, v) = ics::plummer::<T>(200, 5);
    let mut exec = CpuExecutor::new(Parallelism::Threads(2));
    let (mut a, mut integ) = (State::new(p.clone(), v.clone()), make());
    for _ in 0..5 {
        step(&mut integ, &mut a, &mut exec);
    }
    let mut words = Vec::new();
    a.save(&mut words);
    integ.save(&mut words);
    let (mut b, mut again) = (State::new(Vec::new(), Vec::new()), make());
    let mut w = Words::new(&words);
    b.restore(&mut w).unwrap();
    again.restore(&mut w).unwrap();
    assert!(w.is_done());
    assert_eq!(a, b);
    for _ in 0..5 {
        step(&mut integ, &mut a, &mut exec);
        step(&mut again, &mut b, &mut exec);
    }
    assert_eq!(a, b, "diverged after a restore");
    // A truncated checkpoint is an error, not a panic.
    let mut cut = Words::new(&words[..words.len() / 2]);
    let mut c = State::<T>::new(Vec::new(), Vec::new());
    assert!(c.restore(&mut cut).and_then(|_| make().restore(&mut cut)).is_err());
}

#[test]
fn leapfrog() {
    continues_bit_for_bit::<f64, _>(|| Leapfrog::new(1.0 / 256.0, 0.01).unwrap(), |i, s, e| i.step(s, e).unwrap());
    continues_bit_for_bit::<f32, _>(|| Leapfrog::new(1.0 / 256.0, 0.01).unwrap(), |i, s, e| i.step(s, e).unwrap());
}

#[test]
fn hermite() {
    continues_bit_for_bit::<f64, _>(
        || Hermite::new(0.02, 0.01).unwrap(),
        |i, s, e| i.step(s, e, 1.0).map(drop).unwrap(),
    );
}

#[test]
fn block_hermite() {
    continues_bit_for_bit::<f64, _>(
        || BlockHermite::new(0.02, 1.0 / 64.0, 0.01).unwrap(),
        |i, s, e| i.step(s, e).map(drop).unwrap(),
    );
}

#[test]
fn dormand_prince() {
    continues_bit_for_bit::<f64, _>(
        || DormandPrince::new(1e-8, 1e-8, 0.01).unwrap(),
        |i, s, e| {
            let t = s.time + 1.0 / 128.0;
            i.advance_to(s, e, t).unwrap();
        },
    );
}

#[test]
fn hermite6() {
    continues_bit_for_bit::<f64, _>(
        || Hermite6::new(0.1, 0.01).unwrap(),
        |i, s, e| i.step(s, e, 1.0).map(drop).unwrap(),
    );
}
