//! The trait's doors: they validate, return early on empty input, and only then call a
//! hook; an executor that implements only the hooks gets every check for free.

use nbody_core::calls::{DirectCall, JerkCall};
use nbody_core::neighbours::{Nearest, Neighbours};
use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, Pair, Params, Particle, Reference, Span,
    Velocity,
};

/// Counts hook calls and hands the work to the reference's hooks.
#[derive(Default)]
struct Hooks {
    calls: usize,
}

impl Executor<f64> for Hooks {
    fn name(&self) -> &'static str {
        "hooks"
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, f64>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        assert!(!targets.is_empty() && !sources.is_empty(), "a door passed empty input to a hook");
        self.calls += 1;
        // SAFETY: our caller met the contract, which is the reference's too.
        unsafe { Reference.accelerations_unchecked(DirectCall { targets, sources, params, out }) }
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, f64>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        assert!(!targets.pos.is_empty() && !sources.pos.is_empty(), "a door passed empty input to a hook");
        self.calls += 1;
        // SAFETY: as above.
        unsafe { Reference.accelerations_jerk_unchecked(JerkCall { targets, sources, params, out, jerk }) }
    }
}

/// Positions, velocities and accelerations of five bodies.
type System = (Vec<Particle<f64>>, Vec<Velocity<f64>>, Vec<Field<f64>>);

fn bodies() -> System {
    let p = (0..5).map(|i| Particle::new(i as f64, 0.5 * i as f64, -0.25, 1.0 + i as f64)).collect();
    let v = (0..5).map(|i| Velocity::new(0.1 * i as f64, 0.0, -0.2)).collect();
    let a = (0..5).map(|i| Field::new(0.3, -0.1 * i as f64, 0.0, 0.0)).collect();
    (p, v, a)
}

/// Bad input of every kind is refused by the door, before any hook runs and with the
/// outputs untouched; the errors are those the reference gives.
#[test]
fn doors_refuse_bad_input_before_the_hook() {
    let (mut p, v, _) = bodies();
    p[3].m = -1.0;
    let params = Params::softened(0.1).with_overlap_identical();
    let mut h = Hooks::default();
    let mut out = vec![Field::new(7.0, 7.0, 7.0, 7.0); 5];
    let want = Reference.accelerations(&p, &p, &params, &mut out.clone());
    assert_eq!(h.accelerations(&p, &p, &params, &mut out), want);
    assert!(matches!(want, Err(Error::NegativeMass { index: 3, .. })));
    let b = Bodies { pos: &p, vel: &v };
    let mut jerk = vec![Jerk::zero(); 5];
    assert!(h.accelerations_jerk(b, b, &params, &mut out, &mut jerk).is_err());
    let (good, ..) = bodies();
    let short = Bodies { pos: &good, vel: &v[..4] };
    assert!(matches!(
        h.accelerations_jerk(short, short, &params, &mut out, &mut jerk),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(h.accelerations(&good, &good, &Params::softened(f64::NAN), &mut out).is_err());
    assert_eq!(h.calls, 0);
    assert!(out.iter().all(|f| *f == Field::new(7.0, 7.0, 7.0, 7.0)));
    assert!(jerk.iter().all(|j| *j == Jerk::zero()));
}

/// Empty targets or sources: `Ok` with nothing computed and no hook called.
#[test]
fn doors_return_early_on_empty_input() {
    let (p, v, a) = bodies();
    let mut h = Hooks::default();
    let params = Params::softened(0.1);
    let mut out = vec![Field::zero(); 5];
    h.accelerations(&p, &[], &params, &mut out).unwrap();
    h.accelerations(&[], &p, &params, &mut []).unwrap();
    let (b, none) = (Bodies { pos: &p, vel: &v }, Bodies { pos: &[], vel: &[] });
    let mut jerk = vec![Jerk::zero(); 5];
    h.accelerations_jerk(b, none, &params, &mut out, &mut jerk).unwrap();
    let mut near = vec![Nearest::none(); 5];
    let mut nb = Neighbours { nearest: &mut near, within: None, index_offset: 0 };
    h.accelerations_jerk_neighbours(b, none, &params, &mut out, &mut jerk, &mut nb).unwrap();
    let k = Kinematics { pos: &p, vel: &v, acc: &a };
    let knone = Kinematics { pos: &[], vel: &[], acc: &[] };
    let mut snap = vec![Jerk::zero(); 5];
    h.accelerations_snap(k, knone, &params, &mut out, &mut jerk, &mut snap).unwrap();
    let spans = [Span::new(2, 2)];
    let pairs = [Pair { targets: Span::new(0, 5), sources: Span::new(0, 1) }];
    h.accelerations_batch(&p, &InteractionList { pairs: &pairs, source_spans: &spans }, &params, &mut out).unwrap();
    h.accelerations_batch(&p, &InteractionList { pairs: &[], source_spans: &[] }, &params, &mut out).unwrap();
    assert_eq!(h.calls, 0);
    assert!(out.iter().all(|f| *f == Field::zero()) && near.iter().all(|n| n.index == Nearest::<f64>::none().index));
}

/// With only the two hooks written, every entry point (neighbours, snap, batch by their
/// provided hooks) gives what the reference gives, bit for bit.
#[test]
fn two_hooks_give_every_entry_point() {
    let (p, v, a) = bodies();
    let params = Params::softened(0.1).with_overlap_identical();
    let run = |e: &mut dyn Executor<f64>| {
        let b = Bodies { pos: &p, vel: &v };
        let k = Kinematics { pos: &p, vel: &v, acc: &a };
        let (mut out, mut jerk, mut snap) = (vec![Field::zero(); 5], vec![Jerk::zero(); 5], vec![Jerk::zero(); 5]);
        e.accelerations(&p, &p, &params, &mut out).unwrap();
        e.accelerations_jerk(b, b, &params, &mut out, &mut jerk).unwrap();
        let mut near = vec![Nearest::none(); 5];
        let mut nb = Neighbours { nearest: &mut near, within: None, index_offset: 0 };
        e.accelerations_jerk_neighbours(b, b, &params, &mut out, &mut jerk, &mut nb).unwrap();
        e.accelerations_snap(k, k, &params, &mut out, &mut jerk, &mut snap).unwrap();
        let spans = [Span::new(0, 3), Span::new(3, 5)];
        let pairs = [Pair { targets: Span::new(0, 5), sources: Span::new(0, 2) }];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        e.accelerations_batch(&p, &list, &params, &mut out).unwrap();
        (out, jerk, snap, near.iter().map(|n| n.index).collect::<Vec<_>>())
    };
    let mut h = Hooks::default();
    assert_eq!(run(&mut h), run(&mut Reference));
    // accelerations, jerk, neighbours, and one per non-empty source span of the batch.
    assert_eq!(h.calls, 5);
}

/// `columns::first_bad` names what `validate::particles` names on the same values packed
/// into records, wherever the bad value sits and whichever kind comes first.
#[test]
fn columns_name_bad_values_as_packed_records_do() {
    use nbody_core::columns::{ColumnsCall, first_bad};
    use nbody_core::{Array, validate};
    let bad_values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, -0.0];
    for n in [1usize, 2, 7] {
        for at in 0..n {
            for lane in 0..4 {
                for &v in &bad_values {
                    // A second, later offender of the other kind, which must not be named.
                    let mut rows: Vec<[f64; 3]> = (0..n).map(|i| [i as f64, 0.5, -0.25]).collect();
                    let mut m = vec![1.0; n];
                    if lane < 3 {
                        rows[at][lane] = v;
                    } else {
                        m[at] = v;
                    }
                    if at + 1 < n {
                        m[n - 1] = -2.0;
                    }
                    let packed: Vec<Particle<f64>> =
                        rows.iter().zip(&m).map(|(r, &w)| Particle::new(r[0], r[1], r[2], w)).collect();
                    let call = ColumnsCall { positions: &rows, masses: &m, targets: None };
                    assert_eq!(
                        first_bad(&call),
                        validate::particles(&packed, Array::Particles).err(),
                        "{n} {at} {lane} {v}"
                    );
                }
            }
        }
    }
    // Targets are named before the particles, as `validate::call` checks them first.
    let (rows, m, points) = ([[0.0; 3]], [-1.0], [[0.0, 0.0, f64::NAN]]);
    let call = ColumnsCall { positions: &rows, masses: &m, targets: Some(&points) };
    assert_eq!(first_bad(&call), Some(Error::NonFinite { array: Array::Targets, index: 0 }));
}

/// A wrapper forwards `field_columns` to the executor inside (its `before` sees the call
/// as an acceleration call), and an executor without the door answers Unsupported.
#[test]
fn columns_are_forwarded_and_refused_by_default() {
    use nbody_core::columns::ColumnsCall;
    use nbody_core::forward::Counted;
    let mut e = Counted::new(Reference);
    let (rows, m, points) = ([[0.0f64; 3], [1.0, 0.0, 0.0]], [1.0, 1.0], [[0.0f64; 3]; 3]);
    let call = ColumnsCall { positions: &rows, masses: &m, targets: Some(&points) };
    let mut acc = [[0.0; 3]; 3];
    let r = e.field_columns(call, &Params::softened(0.1), &mut acc, None);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    assert_eq!(e.interactions, 6.0);
    assert_eq!(acc, [[0.0; 3]; 3]);
}

/// A system on itself (one slice for both sides) is checked once and meets itself; two
/// arrays are still checked one by one and compared over the overlap, where -0 and +0 are
/// the same number though not the same bits.
#[test]
fn one_slice_for_both_sides_is_checked_once() {
    use nbody_core::{Array, PerParticle, validate};
    let (mut p, v, _) = bodies();
    let params = Params::softened(0.1).with_overlap_identical();
    assert_eq!(validate::call(&p, &p, &params, 5), Ok(()));
    p[3].y = f64::NAN;
    assert_eq!(validate::call(&p, &p, &params, 5), Err(Error::NonFinite { array: Array::Targets, index: 3 }));
    p[3].y = 0.0;
    let mut copy = p.clone();
    p[0].z = 0.0;
    copy[0].z = -0.0;
    assert_eq!(validate::call(&p, &copy, &params, 5), Ok(()));
    copy[4].m += 1.0;
    assert_eq!(validate::call(&p, &copy, &params, 5), Err(Error::OverlapMismatch { target: 4, source: 4 }));
    // The same holds for softening lengths and velocities.
    let eps = [0.1, 0.2, 0.1, 0.2, 0.1];
    assert_eq!(validate::per_particle_call(&p, &p, &PerParticle { targets: &eps, sources: &eps }, &params, 5), Ok(()));
    let bad = [0.1, 0.2, -0.1, 0.2, 0.1];
    assert_eq!(
        validate::per_particle_call(&p, &p, &PerParticle { targets: &bad, sources: &bad }, &params, 5),
        Err(Error::NegativeSoftening { array: Array::TargetSoftening, index: 2 })
    );
    let other = [0.1, 0.2, 0.1, 0.3, 0.1];
    assert_eq!(
        validate::per_particle_call(&p, &p, &PerParticle { targets: &eps, sources: &other }, &params, 5),
        Err(Error::OverlapMismatch { target: 3, source: 3 })
    );
    let shifted =
        Params::softened(0.1).with_overlap(nbody_core::Overlap::Shared { target_start: 0, source_start: 1, len: 2 });
    assert_eq!(
        validate::per_particle_call(&p[..3], &p, &PerParticle { targets: &eps[..3], sources: &eps }, &shifted, 3),
        Err(Error::OverlapMismatch { target: 0, source: 1 })
    );
    let b = Bodies { pos: &p, vel: &v };
    assert_eq!(validate::jerk_call(&b, &b, &params, 5, 5), Ok(()));
    let mut w = v.clone();
    w[1].vx += 1.0;
    assert_eq!(
        validate::jerk_call(&b, &Bodies { pos: &p, vel: &w }, &params, 5, 5),
        Err(Error::OverlapMismatch { target: 1, source: 1 })
    );
}
