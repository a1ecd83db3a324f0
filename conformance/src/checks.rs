//! The checks of the suite. Each takes a fresh executor and returns a message on failure.

use crate::r#gen::{Case, cases, coordinate, mass, row, softening};
use crate::{Path, compare, exact, lanes, particles, tolerance};
use nbody_core::oracle::{self, Exact};
use nbody_core::projection::Projecting;
use nbody_core::{
    Array, Bodies, Error, Executor, Field, InteractionList, Jerk, Overlap, Pair, Params, Particle, Real, Span,
    Velocity, validate,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::cell::RefCell;

/// One check of the suite.
pub(crate) type Check<E> = fn(&mut E, f64) -> Result<(), String>;

/// Cases per property: enough to hit every overlap mode, both softening paths and
/// sizes from empty to a few tiles, and fast on the reference in debug builds.
const CASES: u32 = 64;

/// Every check, by name.
pub(crate) fn all<T: Real, E: Projecting<T>>() -> Vec<(&'static str, Check<E>)> {
    vec![
        ("matches_oracle", matches_oracle::<T, E>),
        // Second, and cheap (six particles): a refused declared entry is caught here
        // rather than after every other check (the mutation test runs in that order).
        ("capabilities_hold", crate::declared::capabilities_hold::<T, E>),
        ("jerk_matches_oracle", jerk_matches_oracle::<T, E>),
        ("masked_coincident_pairs", masked_coincident_pairs::<T, E>),
        ("self_interaction_subtraction", self_interaction_subtraction::<T, E>),
        ("newton_third_law", newton_third_law::<T, E>),
        ("translation_invariance", translation_invariance::<T, E>),
        ("permutation_invariance", permutation_invariance::<T, E>),
        ("linearity_in_source_masses", linearity_in_source_masses::<T, E>),
        ("chunked_sources_accumulate", chunked_sources_accumulate::<T, E>),
        ("massless_padding", massless_padding::<T, E>),
        ("two_body_closed_form", two_body_closed_form::<T, E>),
        ("batch_matches_pairwise", batch_matches_pairwise::<T, E>),
        ("bad_input_is_an_error", bad_input_is_an_error::<T, E>),
        ("empty_inputs", empty_inputs::<T, E>),
        ("numeric_edges_stay_finite", numeric_edges_stay_finite::<T, E>),
        ("density_map_matches_deposit", density_map_matches_deposit::<T, E>),
        ("neighbours_match_oracle", crate::neighbours::neighbours_match_oracle::<T, E>),
        ("neighbour_bad_input", crate::neighbours::neighbour_bad_input::<T, E>),
        ("neighbours_few_targets_many_sources", crate::neighbours::neighbours_few_targets_many_sources::<T, E>),
        ("jerk_many_targets", crate::neighbours::jerk_many_targets::<T, E>),
        ("snap_matches_oracle", crate::snap::snap_matches_oracle::<T, E>),
        ("cells_match_exact", crate::cells::cells_match_exact::<T, E>),
        ("batch_cells_match_exact", crate::cells::batch_cells_match_exact::<T, E>),
        ("cell_bad_input", crate::cells::cell_bad_input::<T, E>),
        ("spline_matches_oracle", crate::spline::spline_matches_oracle::<T, E>),
        ("per_particle_matches_oracle", crate::per_particle::per_particle_matches_oracle::<T, E>),
        ("per_particle_equal_lengths", crate::per_particle::per_particle_equal_lengths::<T, E>),
        ("per_particle_bad_input", crate::per_particle::per_particle_bad_input::<T, E>),
        ("per_particle_many_tiles", crate::per_particle::per_particle_many_tiles::<T, E>),
        ("few_targets_many_sources", few_targets_many_sources::<T, E>),
        ("tidal_matches_oracle", crate::gradients::tidal_matches_oracle::<T, E>),
        ("vjp_matches_oracle", crate::gradients::vjp_matches_oracle::<T, E>),
        ("gradients_many_sources", crate::gradients::gradients_many_sources::<T, E>),
        ("vjp_batch_matches_oracle", crate::gradients::vjp_batch_matches_oracle::<T, E>),
        ("vjp_batch_on_itself", crate::gradients::vjp_batch_on_itself::<T, E>),
    ]
}

thread_local! {
    /// Whether [`prop`] shrinks a failing case (off while mutants run).
    static SHRINK: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Runs `f` with [`prop`] not shrinking failing cases (a mutant run wants to know that a
/// check fails, not its smallest case); shrinking is back on afterwards, however `f` ends.
pub(crate) fn without_shrinking<R>(f: impl FnOnce() -> R) -> R {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            SHRINK.with(|s| s.set(true));
        }
    }
    SHRINK.with(|s| s.set(false));
    let _restore = Restore;
    f()
}

/// Runs `f` on `CASES` values of `strategy`, from a fixed seed so failures reproduce.
pub(crate) fn prop<S: Strategy, X>(
    exec: &mut X,
    strategy: S,
    f: impl Fn(&mut X, S::Value) -> Result<(), String>,
) -> Result<(), String> {
    let max_shrink_iters = if SHRINK.with(|s| s.get()) { Config::default().max_shrink_iters } else { 0 };
    let config = Config { cases: CASES, failure_persistence: None, max_shrink_iters, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let exec = RefCell::new(exec);
    runner.run(&strategy, |v| f(&mut exec.borrow_mut(), v).map_err(TestCaseError::fail)).map_err(|e| e.to_string())
}

fn call<T: Real, E: Projecting<T>>(
    e: &mut E,
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    before: &[Field<T>],
) -> Result<Vec<Field<T>>, String> {
    let mut out = before.to_vec();
    e.accelerations(targets, sources, params, &mut out).map_err(|err| format!("{} failed: {err}", e.name()))?;
    Ok(out)
}

fn zeros<T: Real>(n: usize) -> Vec<Field<T>> {
    vec![Field::zero(); n]
}

fn oracle_of<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
) -> Result<Vec<Exact>, String> {
    exact(targets, sources, params).map_err(|e| format!("oracle refused a valid case: {e}"))
}

/// `|a − b|` within `tol · (bound_a + bound_b)` for every lane (phi only if `potential`).
fn close<T: Real>(
    what: &str,
    a: &[Field<T>],
    b: &[Field<T>],
    bounds: &[(f64, f64)],
    tol: f64,
    potential: bool,
) -> Result<(), String> {
    for (i, ((fa, fb), &(acc_bound, phi_bound))) in a.iter().zip(b).zip(bounds).enumerate() {
        let (la, lb) = (lanes(fa), lanes(fb));
        for k in 0..if potential { 4 } else { 3 } {
            let bound = if k == 3 { phi_bound } else { acc_bound };
            let diff = (la[k] - lb[k]).abs();
            if !(diff <= tol * bound) {
                return Err(format!(
                    "{what}: target {i}, lane {k}: {:e} vs {:e}, |diff| {diff:e} > {:e}",
                    la[k],
                    lb[k],
                    tol * bound
                ));
            }
        }
    }
    Ok(())
}

fn bounds(a: &[Exact], b: &[Exact]) -> Vec<(f64, f64)> {
    a.iter().zip(b).map(|(x, y)| (x.acc_bound + y.acc_bound, x.phi_bound + y.phi_bound)).collect()
}

fn matches_oracle<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    prop(e, cases(48, 96), |e, c: Case| {
        let (t, s, p, before) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>(), c.before::<T>());
        let out = call(e, &t, &s, &p, &before)?;
        compare(&out, &before, &oracle_of(&t, &s, &p)?, Path::Pairs, p.potential, u)
    })
}

fn jerk_matches_oracle<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    prop(e, cases(32, 64), |e, c: Case| {
        let (t, s, p, before) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>(), c.before::<T>());
        let (tv, sv) = c.velocities::<T>();
        let (tv, sv) = (&tv[..], &sv[..]);
        let mut out = before.clone();
        let mut jerk = vec![Jerk::zero(); t.len()];
        e.accelerations_jerk(Bodies { pos: &t, vel: tv }, Bodies { pos: &s, vel: sv }, &p, &mut out, &mut jerk)
            .map_err(|err| err.to_string())?;
        let mut ex = vec![Exact::default(); t.len()];
        oracle::field(&t, Some(tv), &s, Some(sv), &p, &mut ex).map_err(|err| err.to_string())?;
        compare(&out, &before, &ex, Path::Pairs, p.potential, u)?;
        let tol = tolerance(u, Path::Jerk);
        for (i, (j, x)) in jerk.iter().zip(&ex).enumerate() {
            for (k, got) in j.components().into_iter().enumerate() {
                let diff = (got.to_f64() - x.jerk[k]).abs();
                if !(diff <= tol * x.jerk_bound) {
                    return Err(format!("target {i}, jerk[{k}]: got {got}, oracle {:e}, |diff| {diff:e}", x.jerk[k]));
                }
            }
        }
        Ok(())
    })
}

fn masked_coincident_pairs<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    // eps = 0 and every target duplicated among the sources, once as itself and once as
    // a separate copy: zero-distance pairs must add nothing, and nothing may be NaN.
    prop(e, vec(row(), 1..40), |e, rows| {
        let t = particles::<T>(&rows);
        let mut s = t.clone();
        s.extend_from_slice(&t);
        let p = Params::softened(T::zero()).with_overlap(Overlap::Shared {
            target_start: 0,
            source_start: 0,
            len: t.len(),
        });
        let out = call(e, &t, &s, &p, &zeros(t.len()))?;
        if let Some(i) = out.iter().position(|f| !lanes(f).iter().all(|x| x.is_finite())) {
            return Err(format!("target {i} has a non-finite output {:?}", out[i]));
        }
        compare(&out, &zeros(t.len()), &oracle_of(&t, &s, &p)?, Path::Pairs, true, u)
    })
}

fn self_interaction_subtraction<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    // phi with targets = sources equals the explicit i != j sum, computed by leaving
    // particle i out of the sources.
    let strategy = (vec(row(), 2..24), (1u32..=64).prop_map(|k| k as f64 / 256.0));
    prop(e, strategy, |e, (rows, eps)| {
        let ps = particles::<T>(&rows);
        let p = Params::softened(T::from_f64(eps));
        let all = call(e, &ps, &ps, &p.with_overlap_identical(), &zeros(ps.len()))?;
        let ex = oracle_of(&ps, &ps, &p.with_overlap_identical())?;
        for i in 0..ps.len() {
            let mut others = ps.clone();
            others.remove(i);
            let alone = call(e, &ps[i..=i], &others, &p, &zeros(1))?;
            let diff = (all[i].phi.to_f64() - alone[0].phi.to_f64()).abs();
            let allowed = 2.0 * tolerance(u, Path::Pairs) * ex[i].phi_bound;
            if !(diff <= allowed) {
                return Err(format!(
                    "target {i}: phi {} with subtraction, {} as the i != j sum",
                    all[i].phi, alone[0].phi
                ));
            }
        }
        Ok(())
    })
}

fn newton_third_law<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    prop(e, (vec(row(), 0..80), softening()), |e, (rows, eps)| {
        let ps = particles::<T>(&rows);
        let p = Params::softened(T::from_f64(eps)).with_overlap_identical();
        let out = call(e, &ps, &ps, &p, &zeros(ps.len()))?;
        let ex = oracle_of(&ps, &ps, &p)?;
        let scale: f64 = ps.iter().zip(&ex).map(|(q, x)| q.m.to_f64() * x.acc_bound).sum();
        for k in 0..3 {
            let total: f64 = ps.iter().zip(&out).map(|(q, f)| q.m.to_f64() * lanes(f)[k]).sum();
            if !(total.abs() <= tolerance(u, Path::Pairs) * scale) {
                return Err(format!("sum of m a[{k}] = {total:e}, allowed {:e}", tolerance(u, Path::Pairs) * scale));
            }
        }
        Ok(())
    })
}

fn translation_invariance<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    // Integer shifts keep 2^-16-grid coordinates exact in f32: the shifted system is
    // exactly a translate, so only the executor's rounding may differ.
    prop(e, (cases(32, 64), [-8i32..=8, -8i32..=8, -8i32..=8]), |e, (c, shift)| {
        let (t, s, p) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>());
        let moved = |ps: &[Particle<T>]| -> Vec<Particle<T>> {
            let d = shift.map(|k| T::from_f64(k as f64));
            ps.iter().map(|q| Particle::new(q.x + d[0], q.y + d[1], q.z + d[2], q.m)).collect()
        };
        let (t2, s2) = (moved(&t), moved(&s));
        let a = call(e, &t, &s, &p, &zeros(t.len()))?;
        let b = call(e, &t2, &s2, &p, &zeros(t.len()))?;
        let bnd = bounds(&oracle_of(&t, &s, &p)?, &oracle_of(&t2, &s2, &p)?);
        close("shifted", &a, &b, &bnd, tolerance(u, Path::Pairs), p.potential)
    })
}

/// A permutation of `0..n` from `seed` (Fisher-Yates with a linear congruential stream).
fn permutation(n: usize, mut seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        idx.swap(i, (seed >> 33) as usize % (i + 1));
    }
    idx
}

fn permutation_invariance<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    prop(e, (cases(32, 64), any::<u64>()), |e, (c, seed)| {
        let (t, s) = (c.targets::<T>(), c.sources::<T>());
        let p = c.params::<T>().with_overlap(Overlap::Disjoint);
        let (pt, ps) = (permutation(t.len(), seed), permutation(s.len(), seed ^ 0x5555));
        let t2: Vec<_> = pt.iter().map(|&i| t[i]).collect();
        let s2: Vec<_> = ps.iter().map(|&i| s[i]).collect();
        let a = call(e, &t, &s, &p, &zeros(t.len()))?;
        let b = call(e, &t2, &s2, &p, &zeros(t.len()))?;
        let b_back: Vec<_> = {
            let mut v = zeros::<T>(t.len());
            for (k, &i) in pt.iter().enumerate() {
                v[i] = b[k];
            }
            v
        };
        let ex = oracle_of(&t, &s, &p)?;
        close("permuted", &a, &b_back, &bounds(&ex, &ex), tolerance(u, Path::Pairs), p.potential)
    })
}

fn linearity_in_source_masses<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    // a(m) = a(m1) + a(m2) with m = m1 + m2 split exactly, and a(2m) = 2 a(m).
    prop(e, (cases(32, 64), vec(0u32..=1024, 160)), |e, (c, split)| {
        let (t, s) = (c.targets::<T>(), c.sources::<T>());
        let p = c.params::<T>().with_overlap(Overlap::Disjoint);
        let part = |f: &dyn Fn(usize, f64) -> f64| -> Vec<Particle<T>> {
            s.iter().enumerate().map(|(j, q)| Particle::new(q.x, q.y, q.z, T::from_f64(f(j, q.m.to_f64())))).collect()
        };
        // m1 = m * k / 1024 rounded to the 2^-20 grid: exact in f32, and so is m - m1.
        let m1 = part(&|j, m| ((m * split[j % split.len()] as f64 / 1024.0) * 1_048_576.0).floor() / 1_048_576.0);
        let m2: Vec<_> = s.iter().zip(&m1).map(|(q, a)| Particle::new(q.x, q.y, q.z, q.m - a.m)).collect();
        let double = part(&|_, m| 2.0 * m);
        let whole = call(e, &t, &s, &p, &zeros(t.len()))?;
        let mut sum = call(e, &t, &m1, &p, &zeros(t.len()))?;
        e.accelerations(&t, &m2, &p, &mut sum).map_err(|err| err.to_string())?;
        let ex = oracle_of(&t, &s, &p)?;
        let tol = 2.0 * tolerance(u, Path::Pairs);
        close("split masses", &whole, &sum, &bounds(&ex, &ex), tol, p.potential)?;
        let twice: Vec<Field<T>> =
            whole.iter().map(|f| Field::new(f.ax + f.ax, f.ay + f.ay, f.az + f.az, f.phi + f.phi)).collect();
        let doubled = call(e, &t, &double, &p, &zeros(t.len()))?;
        close("doubled masses", &twice, &doubled, &bounds(&ex, &ex), tol, p.potential)
    })
}

fn chunked_sources_accumulate<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    prop(e, (cases(32, 96), vec(any::<u16>(), 0..5)), |e, (c, cuts)| {
        let (t, s, p) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>());
        let mut edges: Vec<usize> = cuts.iter().map(|&k| k as usize % (s.len() + 1)).collect();
        edges.extend([0, s.len()]);
        edges.sort_unstable();
        let one = call(e, &t, &s, &p, &zeros(t.len()))?;
        let mut chunked = zeros::<T>(t.len());
        for w in edges.windows(2) {
            let q = p.with_overlap(p.overlap.restrict_sources(t.len(), w[0]..w[1]));
            e.accelerations(&t, &s[w[0]..w[1]], &q, &mut chunked).map_err(|err| err.to_string())?;
        }
        let ex = oracle_of(&t, &s, &p)?;
        close("chunked", &one, &chunked, &bounds(&ex, &ex), 2.0 * tolerance(u, Path::Pairs), p.potential)
    })
}

fn massless_padding<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let pad = vec((coordinate(), coordinate(), coordinate()), 1..40);
    prop(e, (cases(32, 64), pad), |e, (c, pad)| {
        let (t, s, p) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>());
        let (t0, s0, len) = p.overlap.resolve(t.len());
        let p = p.with_overlap(Overlap::Shared { target_start: t0, source_start: s0, len });
        let mut padded = s.clone();
        padded.extend(
            pad.iter().map(|&(x, y, z)| Particle::new(T::from_f64(x), T::from_f64(y), T::from_f64(z), T::zero())),
        );
        // Also a massless copy of each target: coincident, so masked when eps = 0.
        padded.extend(t.iter().map(|q| Particle::new(q.x, q.y, q.z, T::zero())));
        let a = call(e, &t, &s, &p, &zeros(t.len()))?;
        let b = call(e, &t, &padded, &p, &zeros(t.len()))?;
        let ex = oracle_of(&t, &s, &p)?;
        close("padded", &a, &b, &bounds(&ex, &ex), tolerance(u, Path::Pairs), p.potential)
    })
}

fn two_body_closed_form<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let strategy = ((coordinate(), coordinate(), coordinate()), mass(), mass(), softening());
    prop(e, strategy, |e, ((x, y, z), m1, m2, eps)| {
        if x == 0.0 && y == 0.0 && z == 0.0 {
            return Ok(()); // coincident: covered by masked_coincident_pairs
        }
        let ps = particles::<T>(&[[0.0, 0.0, 0.0, m1], [x, y, z, m2]]);
        let g = 0.5;
        let p = Params::softened(T::from_f64(eps)).with_g(T::from_f64(g)).with_overlap_identical();
        let out = call(e, &ps, &ps, &p, &zeros(2))?;
        let r2 = x * x + y * y + z * z + eps * eps;
        let (inv_r, inv_r3) = (1.0 / r2.sqrt(), r2.powf(-1.5));
        // a_1 = G m2 d / r^3, a_2 = -G m1 d / r^3, phi_k = -G m_other / r.
        let want = [
            [g * m2 * x * inv_r3, g * m2 * y * inv_r3, g * m2 * z * inv_r3, -g * m2 * inv_r],
            [-g * m1 * x * inv_r3, -g * m1 * y * inv_r3, -g * m1 * z * inv_r3, -g * m1 * inv_r],
        ];
        for (i, (f, w)) in out.iter().zip(want).enumerate() {
            let scale = w.iter().map(|v| v.abs()).fold(0.0, f64::max);
            for (k, (got, want)) in lanes(f).into_iter().zip(w).enumerate() {
                if !((got - want).abs() <= 64.0 * u * scale + 8.0 * u * g * (m1 + m2) / eps.max(1e-3)) {
                    return Err(format!("particle {i}, lane {k}: got {got:e}, closed form {want:e}"));
                }
            }
        }
        Ok(())
    })
}

/// An interaction list over `n` particles from random seeds: spans that overlap, repeat
/// and are empty, and pairs of a target span against a run of them (`span_seeds` not
/// empty).
pub(crate) fn random_list(
    n: usize,
    pair_seeds: &[(u16, u16, u8)],
    span_seeds: &[(u16, u16)],
) -> (Vec<Pair>, Vec<Span>) {
    let span = |a: u16, b: u16| {
        let (a, b) = (a as u32 % (n as u32 + 1), b as u32 % (n as u32 + 1));
        Span::new(a.min(b), a.max(b))
    };
    let spans: Vec<Span> = span_seeds.iter().map(|&(a, b)| span(a, b)).collect();
    let pairs = pair_seeds
        .iter()
        .map(|&(a, b, k)| {
            let first = k as u32 % spans.len() as u32;
            let count = (k as u32 / 7) % (spans.len() as u32 - first + 1);
            Pair { targets: span(a, b), sources: Span::new(first, first + count) }
        })
        .collect();
    (pairs, spans)
}

fn batch_matches_pairwise<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let strategy =
        (vec(row(), 1..96), softening(), vec(any::<(u16, u16, u8)>(), 0..12), vec(any::<(u16, u16)>(), 1..16));
    prop(e, strategy, |e, (rows, eps, pair_seeds, span_seeds)| {
        let ps = particles::<T>(&rows);
        let n = ps.len();
        let (pairs, spans) = random_list(n, &pair_seeds, &span_seeds);
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let p = Params::softened(T::from_f64(eps));
        let mut out = zeros::<T>(n);
        e.accelerations_batch(&ps, &list, &p, &mut out).map_err(|err| err.to_string())?;
        // The truth: the oracle of each (pair, span), summed per particle.
        let mut truth = vec![Exact::default(); n];
        for pair in &pairs {
            let tr = pair.targets.range();
            for s in list.sources_of(pair) {
                let q = p.with_overlap(Overlap::between(tr.clone(), s.range()));
                let ex = oracle_of(&ps[tr.clone()], &ps[s.range()], &q)?;
                for (k, x) in ex.iter().enumerate() {
                    let t = &mut truth[tr.start + k];
                    for c in 0..3 {
                        t.acc[c] += x.acc[c];
                    }
                    t.phi += x.phi;
                    t.acc_bound += x.acc_bound;
                    t.phi_bound += x.phi_bound;
                }
            }
        }
        compare(&out, &zeros(n), &truth, Path::Pairs, true, u)
    })
}

/// Runs `f` on a poisoned output and checks it returns `want` and leaves the output as
/// it was.
fn refuses<T: Real>(
    what: &str,
    want: Error,
    n: usize,
    f: impl FnOnce(&mut [Field<T>]) -> Result<(), Error>,
) -> Result<(), String> {
    let poison = Field::new(T::from_f64(1.5), T::from_f64(-2.5), T::from_f64(3.5), T::from_f64(-4.5));
    let mut out = vec![poison; n];
    match f(&mut out) {
        Err(got) if got == want => {}
        other => return Err(format!("{what}: expected Err({want:?}), got {other:?}")),
    }
    if out.iter().any(|o| *o != poison) {
        return Err(format!("{what}: the output was modified by a refused call"));
    }
    Ok(())
}

fn bad_input_is_an_error<T: Real, E: Projecting<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    let good =
        particles::<T>(&[[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.5]]);
    let p = Params::softened(T::from_f64(0.1));
    let with = |i: usize, q: Particle<T>| {
        let mut v = good.clone();
        v[i] = q;
        v
    };
    let (nan, inf) = (T::nan(), T::infinity());
    let n = good.len();
    refuses::<T>("short output", Error::LengthMismatch { what: "output", expected: n, found: n - 1 }, n - 1, |o| {
        e.accelerations(&good, &good, &p, o)
    })?;
    let bad = with(2, Particle::new(T::zero(), nan, T::zero(), T::one()));
    refuses::<T>("NaN target", Error::NonFinite { array: Array::Targets, index: 2 }, n, |o| {
        e.accelerations(&bad, &good, &p, o)
    })?;
    let bad = with(1, Particle::new(T::zero(), T::zero(), T::zero(), inf));
    refuses::<T>("infinite source mass", Error::NonFinite { array: Array::Sources, index: 1 }, n, |o| {
        e.accelerations(&good, &bad, &p, o)
    })?;
    let bad = with(3, Particle::new(T::zero(), T::zero(), T::zero(), -T::one()));
    refuses::<T>("negative mass", Error::NegativeMass { array: Array::Sources, index: 3 }, n, |o| {
        e.accelerations(&good, &bad, &p, o)
    })?;
    let eps_err = Error::InvalidParameter { name: "eps", requirement: "finite and non-negative" };
    refuses::<T>("negative eps", eps_err, n, |o| e.accelerations(&good, &good, &Params::softened(-T::one()), o))?;
    refuses::<T>("NaN eps", eps_err, n, |o| e.accelerations(&good, &good, &Params::softened(nan), o))?;
    let huge = validate::range::<T>();
    let square_err = Error::InvalidParameter { name: "eps", requirement: "below 2^61 (f32) or 2^509 (f64)" };
    refuses::<T>("eps whose square could overflow", square_err, n, |o| {
        e.accelerations(&good, &good, &Params::softened(huge), o)
    })?;
    // A finite coordinate whose square could overflow r² (x = range, or -range).
    let mut far = good.clone();
    far[2].y = -huge;
    refuses::<T>(
        "a coordinate whose square could overflow",
        Error::OutOfRange { array: Array::Sources, index: 2 },
        n,
        |o| e.accelerations(&good, &far, &p, o),
    )?;
    let g_err = Error::InvalidParameter { name: "G", requirement: "finite and non-negative" };
    refuses::<T>("infinite G", g_err, n, |o| e.accelerations(&good, &good, &p.with_g(inf), o))?;
    let ident = p.with_overlap_identical();
    refuses::<T>(
        "identical overlap, lengths differ",
        Error::LengthMismatch { what: "sources (overlap Identical)", expected: n, found: n - 1 },
        n,
        |o| e.accelerations(&good, &good[..n - 1], &ident, o),
    )?;
    let shared = p.with_overlap(Overlap::Shared { target_start: 1, source_start: 2, len: 3 });
    refuses::<T>(
        "overlap past the sources",
        Error::OverlapOutOfRange { array: Array::Sources, end: 5, len: n },
        n,
        |o| e.accelerations(&good, &good, &shared, o),
    )?;
    let shifted = p.with_overlap(Overlap::Shared { target_start: 0, source_start: 1, len: 2 });
    refuses::<T>("overlap naming different particles", Error::OverlapMismatch { target: 0, source: 1 }, n, |o| {
        e.accelerations(&good, &good, &shifted, o)
    })?;
    let v = vec![Velocity::new(T::zero(), T::zero(), T::zero()); n];
    let mut bad_v = v.clone();
    bad_v[3] = Velocity::new(T::zero(), T::zero(), nan);
    let mut jerk = vec![Jerk::zero(); n];
    refuses::<T>("NaN source velocity", Error::NonFinite { array: Array::SourceVelocities, index: 3 }, n, |o| {
        e.accelerations_jerk(Bodies { pos: &good, vel: &v }, Bodies { pos: &good, vel: &bad_v }, &p, o, &mut jerk)
    })?;
    refuses::<T>(
        "short target velocities",
        Error::LengthMismatch { what: "target velocities", expected: n, found: n - 1 },
        n,
        |o| {
            e.accelerations_jerk(
                Bodies { pos: &good, vel: &v[..n - 1] },
                Bodies { pos: &good, vel: &v },
                &p,
                o,
                &mut jerk,
            )
        },
    )?;
    let mut moving = v.clone();
    moving[2] = Velocity::new(T::one(), T::zero(), T::zero());
    refuses::<T>("shared particle with two velocities", Error::OverlapMismatch { target: 2, source: 2 }, n, |o| {
        e.accelerations_jerk(Bodies { pos: &good, vel: &v }, Bodies { pos: &good, vel: &moving }, &ident, o, &mut jerk)
    })?;
    if jerk.iter().any(|j| *j != Jerk::zero()) {
        return Err("a refused jerk call modified the jerk output".into());
    }
    bad_sources_of_a_leaf(e)?;
    let spans = [Span::new(0, 2), Span::new(1, n as u32 + 1)];
    let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 2) }];
    let list = InteractionList { pairs: &pairs, source_spans: &spans };
    refuses::<T>("span past the particles", Error::InvalidSpan { what: "source span", index: 1 }, n, |o| {
        e.accelerations_batch(&good, &list, &p, o)
    })?;
    let pairs = [Pair { targets: Span::new(3, 1), sources: Span::new(0, 1) }];
    let list = InteractionList { pairs: &pairs, source_spans: &spans[..1] };
    refuses::<T>("reversed target span", Error::InvalidSpan { what: "pair targets", index: 0 }, n, |o| {
        e.accelerations_batch(&good, &list, &p, o)
    })
}

/// A leaf's shape (few targets, many sources: executors may split the sources over
/// threads and check each run as they copy it): the first bad source is named wherever
/// it lies, before an overlap's mismatch, and nothing is written.
fn bad_sources_of_a_leaf<T: Real, E: Projecting<T>>(e: &mut E) -> Result<(), String> {
    let ns = 3_000;
    let sources: Vec<Particle<T>> = (0..ns)
        .map(|i| {
            let f = i as f64;
            Particle::new(T::from_f64(f.sin()), T::from_f64(f.cos()), T::from_f64(f * 1e-3), T::from_f64(1e-3))
        })
        .collect();
    let targets = &sources[..8];
    let p = Params::softened(T::from_f64(0.1));
    let v = vec![Velocity::new(T::zero(), T::zero(), T::zero()); ns];
    let mut jerk = vec![Jerk::zero(); targets.len()];
    for (late, early) in [(2_999, 2_000), (1_600, 1_400), (2_500, 5)] {
        let mut bad = sources.clone();
        bad[late].y = T::nan();
        let want = Error::NonFinite { array: Array::Sources, index: late };
        refuses::<T>("a leaf's NaN source", want, targets.len(), |o| e.accelerations(targets, &bad, &p, o))?;
        refuses::<T>("a leaf's NaN source (jerk)", want, targets.len(), |o| {
            e.accelerations_jerk(Bodies { pos: targets, vel: &v[..8] }, Bodies { pos: &bad, vel: &v }, &p, o, &mut jerk)
        })?;
        bad[early].m = -T::one();
        let want = Error::NegativeMass { array: Array::Sources, index: early };
        refuses::<T>("a leaf's first bad source", want, targets.len(), |o| e.accelerations(targets, &bad, &p, o))?;
    }
    // A bad source inside the overlap is named as bad, not as a mismatch.
    let mut bad = sources.clone();
    bad[3].x = T::infinity();
    let shared = p.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: 8 });
    let want = Error::NonFinite { array: Array::Sources, index: 3 };
    refuses::<T>("a bad source in the overlap", want, targets.len(), |o| e.accelerations(targets, &bad, &shared, o))?;
    if jerk.iter().any(|j| *j != Jerk::zero()) {
        return Err("a refused leaf call modified the jerk output".into());
    }
    Ok(())
}

fn empty_inputs<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let ps = particles::<T>(&[[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]]);
    let p = Params::softened(T::from_f64(0.1));
    call(e, &[], &ps, &p, &[])?;
    let before = vec![Field::new(T::one(), T::one(), T::one(), T::one()); 2];
    let out = call(e, &ps, &[], &p, &before)?;
    if out != before {
        return Err(format!("no sources changed the output: {out:?}"));
    }
    let one = call(e, &ps[..1], &ps[..1], &p.with_overlap_identical(), &zeros(1))?;
    if lanes(&one[0]).iter().any(|x| x.abs() > 8.0 * u * 10.0) {
        return Err(format!("a lone particle feels {:?}", one[0]));
    }
    Ok(())
}

/// The edges of the input policy's finite range, and beyond it where the kernel still
/// must not produce NaN: huge coordinates (1e18 in f32), coordinates near 1e-18 (with
/// eps in range), subnormal separations (masked when they square to zero), eps so small
/// that eps² underflows (masked), eps tiny against separations, coincident particles.
fn numeric_edges_stay_finite<T: Real, E: Projecting<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    let f32_like = T::NAME == "f32";
    let tiny = if f32_like { 1e-40 } else { 1e-310 }; // subnormal in T
    let big = if f32_like { 1e18 } else { 1e150 }; // r² stays finite
    let cases: Vec<(&str, Vec<[f64; 4]>, f64)> = vec![
        (
            "coordinates at the finite range, eps 1e-3",
            vec![[1e6, -1e6, 1e6, 1e6], [-1e6, 1e6, -1e6, 1e6], [1e6, 1e6, 1e6, 1.0]],
            1e-3,
        ),
        ("huge coordinates, eps 0", vec![[big, 0.0, 0.0, 1.0], [-big, 0.0, 0.0, 1.0], [0.0, big, 0.0, 1.0]], 0.0),
        ("subnormal separation, eps 0", vec![[0.0, 0.0, 0.0, 1.0], [tiny, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]], 0.0),
        (
            "eps whose square underflows, coincident pair",
            vec![[0.5, 0.5, 0.5, 1.0], [0.5, 0.5, 0.5, 1.0], [-0.5, 0.0, 0.0, 1.0]],
            tiny,
        ),
        ("separation 1e-3 and eps 0", vec![[0.0, 0.0, 0.0, 1.0], [1e-3, 0.0, 0.0, 1.0]], 0.0),
        (
            "coordinates near 1e-18, eps 1e-3",
            vec![[1e-18, 0.0, 0.0, 1.0], [-1e-18, 1e-18, 0.0, 1.0], [0.0, 0.0, 3e-18, 1.0]],
            1e-3,
        ),
        (
            "eps 1e-30, tiny against separations of 1",
            vec![[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0]],
            1e-30,
        ),
    ];
    for (what, rows, eps) in cases {
        let ps = particles::<T>(&rows);
        for overlap in [Overlap::Disjoint, Overlap::Identical] {
            let p = Params::softened(T::from_f64(eps)).with_overlap(overlap);
            let mut out = zeros::<T>(ps.len());
            // Only the huge coordinates may be refused, and only as beyond a
            // mixed-precision executor's f32 offsets; NaN or infinity in an accepted
            // result is never right.
            match e.accelerations(&ps, &ps, &p, &mut out) {
                Ok(()) => {}
                Err(Error::InvalidParameter { name: "coordinates", .. }) if what.starts_with("huge") => continue,
                Err(err) => return Err(format!("{what} ({overlap:?}): refused: {err}")),
            }
            if let Some(i) = out.iter().position(|f| !lanes(f).iter().all(|x| x.is_finite())) {
                return Err(format!("{what} ({overlap:?}): target {i} has non-finite output {:?}", out[i]));
            }
        }
    }
    Ok(())
}

/// The executor's density map equals the plain deposit (to summation order), for
/// systems below and above any parallel threshold, and a bad window is an error.
fn density_map_matches_deposit<T: Real, E: Projecting<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    use nbody_core::projection::{Plane, Projection};
    // A fixed scramble of the index: uniform enough, and the same on every run.
    let u = |k: u64| (k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    for (n, plane) in [(0usize, Plane::XY), (1000, Plane::XZ), (70_000, Plane::YZ)] {
        let ps: Vec<Particle<T>> = (0..n as u64)
            .map(|i| {
                let c = |k: u64| T::from_f64(3.0 * u(4 * i + k) - 1.5);
                Particle::new(c(0), c(1), c(2), T::from_f64(2.0 * u(4 * i + 3)))
            })
            .collect();
        let proj = Projection { plane, centre: [0.1, -0.2], half_width: 1.0, pixels: 37 };
        let mut want = vec![0.5; 37 * 37];
        proj.deposit(&ps, &mut want).map_err(|err| err.to_string())?;
        let mut got = vec![0.5; 37 * 37];
        e.project(&ps, &proj, &mut got).map_err(|err| format!("{} failed: {err}", e.name()))?;
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            if (g - w).abs() > 1e-12 * w.abs().max(1.0) {
                return Err(format!("n = {n}: cell {k}: {g} vs deposit {w}"));
            }
        }
    }
    let bad = Projection { plane: Plane::XY, centre: [0.0, 0.0], half_width: f64::NAN, pixels: 4 };
    let mut grid = vec![0.0; 16];
    match e.project(&particles::<T>(&[[0.0, 0.0, 0.0, 1.0]]), &bad, &mut grid) {
        Err(Error::InvalidParameter { .. }) if grid.iter().all(|&g| g == 0.0) => Ok(()),
        other => Err(format!("a NaN window gave {other:?}")),
    }
}

/// One call of 37 targets against 30,025 sources, with and without the potential and
/// softening: where executors split the sources over threads or thread blocks.
fn few_targets_many_sources<T: Real, E: Projecting<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let c = crate::neighbours::big_case(37, 30_000, (5, 12_345, 25));
    for (eps, potential) in [(1.0 / 64.0, true), (1.0 / 64.0, false), (0.0, true)] {
        let c = Case { eps, potential, ..c.clone() };
        let (t, s, p, before) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>(), c.before::<T>());
        let out = call(e, &t, &s, &p, &before)?;
        compare(&out, &before, &oracle_of(&t, &s, &p)?, Path::Pairs, p.potential, u)?;
    }
    Ok(())
}
