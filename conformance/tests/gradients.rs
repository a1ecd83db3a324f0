//! The oracle's tidal tensor and vector-Jacobian product (`nbody_core::oracle::{tidal,
//! vjp}`) against central finite differences of the oracle's own field, in f64, to 1e-7
//! relative: random particles and cotangents, Plummer softening with and without ε and the
//! spline, targets the sources themselves or another set.

use nbody_core::oracle::{self, Cotangents, Exact, Gradients};
use nbody_core::{Params, Particle, Softening};
use proptest::prelude::*;

/// `L = Σ_i c_i · a_i + h_i φ_i` from the oracle's field.
fn loss(targets: &[Particle<f64>], sources: &[Particle<f64>], p: &Params<f64>, c: &[[f64; 3]], h: &[f64]) -> f64 {
    let mut out = vec![Exact::default(); targets.len()];
    oracle::field(targets, None, sources, None, p, &mut out).unwrap();
    out.iter().enumerate().map(|(i, e)| (0..3).map(|a| c[i][a] * e.acc[a]).sum::<f64>() + h[i] * e.phi).sum()
}

/// Central difference of `f` in one lane moved by `step`.
fn central(f: impl Fn(f64) -> f64, step: f64) -> f64 {
    (f(step) - f(-step)) / (2.0 * step)
}

fn close(got: f64, want: f64, scale: f64) -> bool {
    (got - want).abs() <= 1e-7 * (want.abs() + scale)
}

fn particles(raw: &[(f64, f64, f64, f64)]) -> Vec<Particle<f64>> {
    raw.iter().map(|&(x, y, z, m)| Particle::new(x, y, z, m)).collect()
}

fn separated(a: &[Particle<f64>], b: &[Particle<f64>], identical: bool) -> bool {
    a.iter().enumerate().all(|(i, p)| {
        b.iter().enumerate().all(|(j, q)| {
            (identical && i == j) || {
                let d = [p.x - q.x, p.y - q.y, p.z - q.z];
                d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > 0.01
            }
        })
    })
}

fn params(soft: u8, identical: bool) -> Params<f64> {
    let p = match soft {
        0 => Params::softened(0.0),
        1 => Params::softened(0.05),
        _ => Params::softened(0.1).with_softening(Softening::Spline),
    };
    if identical { p.with_overlap_identical() } else { p }
}

const BODY: (std::ops::Range<f64>, std::ops::Range<f64>, std::ops::Range<f64>, std::ops::Range<f64>) =
    (-1.0..1.0, -1.0..1.0, -1.0..1.0, 0.1..2.0);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn vjp_is_the_gradient_of_the_cotangents_sum(
        raw in prop::collection::vec(BODY, 2..10),
        other in prop::collection::vec(BODY, 1..6),
        cots in prop::collection::vec((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0), 10),
        soft in 0u8..3,
        identical in prop::bool::ANY,
        with_phi in prop::bool::ANY,
    ) {
        let sources = particles(&raw);
        let targets = if identical { sources.clone() } else { particles(&other) };
        prop_assume!(separated(&targets, &sources, identical));
        let p = params(soft, identical);
        let n = targets.len();
        let c: Vec<[f64; 3]> = cots[..n].iter().map(|&(x, y, z, _)| [x, y, z]).collect();
        let h: Vec<f64> = cots[..n].iter().map(|&(.., w)| if with_phi { w } else { 0.0 }).collect();
        let (mut gt, mut gs, mut gm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; sources.len()], vec![0.0; sources.len()]);
        let cot = Cotangents { acc: &c, phi: with_phi.then_some(&h[..]) };
        oracle::vjp(&targets, &sources, &p, cot, Gradients { targets: &mut gt, sources: &mut gs, masses: &mut gm }).unwrap();
        // The gradients' scale: the size of the terms they sum.
        let scale = gt.iter().chain(&gs).flatten().chain(&gm).fold(1e-3f64, |s, v| s.max(v.abs()));
        let step = 1e-5;
        for j in 0..sources.len() {
            for a in 0..4 {
                let moved = |e: f64| {
                    let mut s = sources.clone();
                    let lane = match a { 0 => &mut s[j].x, 1 => &mut s[j].y, 2 => &mut s[j].z, _ => &mut s[j].m };
                    *lane += e;
                    let t = if identical { s.clone() } else { targets.clone() };
                    loss(&t, &s, &p, &c, &h)
                };
                let numeric = central(moved, step);
                // Moving a particle of one array moves a target too when they are one.
                let got = match a {
                    3 => gm[j],
                    _ => gs[j][a] + if identical { gt[j][a] } else { 0.0 },
                };
                prop_assert!(close(got, numeric, scale), "source {j} lane {a}: {got:e} against {numeric:e} ({soft}, identical {identical})");
            }
        }
        if !identical {
            for (i, grad) in gt.iter().enumerate() {
                for (a, &got) in grad.iter().enumerate() {
                    let moved = |e: f64| {
                        let mut t = targets.clone();
                        match a { 0 => t[i].x += e, 1 => t[i].y += e, _ => t[i].z += e }
                        loss(&t, &sources, &p, &c, &h)
                    };
                    let numeric = central(moved, step);
                    prop_assert!(close(got, numeric, scale), "target {i} lane {a}: {got:e} against {numeric:e}");
                }
            }
        }
    }

    #[test]
    fn tidal_tensor_is_the_accelerations_gradient(
        raw in prop::collection::vec(BODY, 1..10),
        other in prop::collection::vec(BODY, 1..6),
        soft in 0u8..3,
    ) {
        let (sources, targets) = (particles(&raw), particles(&other));
        prop_assume!(separated(&targets, &sources, false));
        let p = params(soft, false);
        let mut t = vec![[0.0; 6]; targets.len()];
        oracle::tidal(&targets, &sources, &p, &mut t).unwrap();
        let scale = t.iter().flatten().fold(1e-3f64, |s, v| s.max(v.abs()));
        let lane = |a: usize, b: usize| [[0, 1, 2], [1, 3, 4], [2, 4, 5]][a][b];
        for i in 0..targets.len() {
            for b in 0..3 {
                let acc = |e: f64| {
                    let mut moved = targets[i];
                    match b { 0 => moved.x += e, 1 => moved.y += e, _ => moved.z += e }
                    let mut out = [Exact::default()];
                    oracle::field(&[moved], None, &sources, None, &p, &mut out).unwrap();
                    out[0].acc
                };
                for a in 0..3 {
                    let numeric = central(|e| acc(e)[a], 1e-5);
                    let got = t[i][lane(a, b)];
                    prop_assert!(close(got, numeric, scale), "target {i} T[{a}][{b}]: {got:e} against {numeric:e} ({soft})");
                }
            }
        }
    }
}

/// Bad input: cotangents of the wrong length, a NaN cotangent (named by index), a
/// negative mass; the gradients are left as they were.
#[test]
fn bad_input_is_an_error_with_the_outputs_untouched() {
    use nbody_core::{Array, Error};
    let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    let p = Params::softened(0.01).with_overlap_identical();
    let (mut gt, mut gs, mut gm) = ([[7.0; 3]; 2], [[7.0; 3]; 2], [7.0; 2]);
    let mut call = |targets: &[Particle<f64>], acc: &[[f64; 3]]| {
        let grads = Gradients { targets: &mut gt, sources: &mut gs, masses: &mut gm };
        oracle::vjp(targets, targets, &p, Cotangents { acc, phi: None }, grads)
    };
    assert!(matches!(call(&ps, &[[0.0; 3]]), Err(Error::LengthMismatch { .. })));
    assert_eq!(
        call(&ps, &[[0.0; 3], [f64::NAN, 0.0, 0.0]]),
        Err(Error::NonFinite { array: Array::Cotangents, index: 1 })
    );
    let negative = [ps[0], Particle::new(1.0, 0.0, 0.0, -1.0)];
    assert!(call(&negative, &[[0.0; 3]; 2]).is_err());
    assert_eq!((gt, gs, gm), ([[7.0; 3]; 2], [[7.0; 3]; 2], [7.0; 2]));
}
