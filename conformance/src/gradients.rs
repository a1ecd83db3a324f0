//! Conformance checks of the gradient entry points against the f64 oracle: the tidal
//! tensor (`Executor::accelerations_tidal`) and the vector-Jacobian product
//! (`Executor::vjp`), on random calls (every overlap mode, both kernels where declared,
//! outputs that already hold values) and on a call of many sources, where one source
//! dropped or doubled is caught.

use crate::r#gen::{Case, cases};
use crate::{Path, compare, tolerance};
use nbody_core::capabilities::Entry;
use nbody_core::oracle::{self, Cotangents, GradientScales, Gradients};
use nbody_core::{Executor, Field, Params, Particle, Real, Softening, Tidal};

/// The kernels `entry` computes on `e`, each with the case's parameters.
fn kernels<T: Real, E: Executor<T>>(e: &E, entry: Entry, c: &Case) -> Vec<Params<T>> {
    let caps = e.capabilities();
    Softening::ALL.iter().filter(|&&s| caps.computes(entry, s)).map(|&s| c.params::<T>().with_softening(s)).collect()
}

/// Cotangents for a case: its target velocities on the accelerations, its outputs'
/// prior potentials on the potentials.
fn cotangents<T: Real>(c: &Case) -> Vec<Field<T>> {
    let f = T::from_f64;
    (0..c.targets.len())
        .map(|i| {
            let v = c.velocities[i];
            Field::new(f(v[0]), f(v[1]), f(v[2]), f(c.before[i][3]))
        })
        .collect()
}

/// `|got − before − want| ≤ tol · scale` plus the rounding of adding into `before`.
fn close(
    got: f64,
    before: f64,
    want: f64,
    tol: f64,
    scale: f64,
    u: f64,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    let computed = got - before;
    let allowed = tol * scale + 2.0 * u * (got.abs() + before.abs()) + 1e-300;
    if (computed - want).abs() <= allowed {
        Ok(())
    } else {
        Err(format!(
            "{}: got {computed:e}, oracle {want:e}, |diff| {:e} > allowed {allowed:e}",
            what(),
            (computed - want).abs()
        ))
    }
}

/// The tidal tensor and field of one call against the oracle.
fn check_tidal<T: Real, E: Executor<T>>(e: &mut E, c: &Case, p: &Params<T>, u: f64) -> Result<(), String> {
    let (t, s, before) = (c.targets::<T>(), c.sources::<T>(), c.before::<T>());
    let n = t.len();
    let tidal_before: Vec<Tidal<T>> =
        before.iter().map(|f| Tidal::new([f.ax, f.ay, f.az, f.phi, f.ay, f.ax])).collect();
    let (mut out, mut tidal) = (before.clone(), tidal_before.clone());
    e.accelerations_tidal(&t, &s, p, &mut out, &mut tidal).map_err(|err| format!("{} failed: {err}", e.name()))?;
    compare(&out, &before, &crate::exact(&t, &s, p).map_err(|e| e.to_string())?, Path::Pairs, p.potential, u)?;
    let mut want = vec![[0.0; 6]; n];
    oracle::tidal(&t, &s, p, &mut want).map_err(|e| e.to_string())?;
    let (zeros, mut scale, mut sink) = (vec![[0.0; 3]; n], vec![0.0; n], vec![0.0; n]);
    let (mut ss, mut sm) = (vec![0.0; s.len()], vec![0.0; s.len()]);
    let out_scales = GradientScales { tidal: &mut scale, targets: &mut sink, sources: &mut ss, masses: &mut sm };
    oracle::gradient_scales(&t, &s, p, Cotangents { acc: &zeros, phi: None }, out_scales).map_err(|e| e.to_string())?;
    let tol = tolerance(u, Path::Gradients);
    for i in 0..n {
        let (g, b) = (tidal[i].lanes(), tidal_before[i].lanes());
        for k in 0..6 {
            close(g[k].to_f64(), b[k].to_f64(), want[i][k], tol, scale[i], u, &|| {
                format!("{} target {i}, tidal lane {k}", p.softening.name())
            })?;
        }
    }
    Ok(())
}

/// The vector-Jacobian product of one call against the oracle.
fn check_vjp<T: Real, E: Executor<T>>(e: &mut E, c: &Case, p: &Params<T>, u: f64) -> Result<(), String> {
    let (t, s) = (c.targets::<T>(), c.sources::<T>());
    let (n, ns) = (t.len(), s.len());
    let cot = cotangents::<T>(c);
    let f = T::from_f64;
    let tb: Vec<Particle<T>> = (0..n).map(|i| Particle::new(f(0.5), f(-0.25), f(i as f64), f(0.125))).collect();
    let sb: Vec<Particle<T>> = (0..ns).map(|j| Particle::new(f(-1.0), f(0.75), f(0.5), f(j as f64))).collect();
    let (mut gt, mut gs) = (tb.clone(), sb.clone());
    e.vjp(&t, &s, p, &cot, &mut gt, &mut gs).map_err(|err| format!("{} vjp failed: {err}", e.name()))?;
    let acc: Vec<[f64; 3]> = cot.iter().map(|c| c.acceleration().map(|x| x.to_f64())).collect();
    let phi: Vec<f64> = cot.iter().map(|c| c.phi.to_f64()).collect();
    let cotangents = Cotangents { acc: &acc, phi: p.potential.then_some(&phi[..]) };
    let (mut wt, mut ws, mut wm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; ns], vec![0.0; ns]);
    let grads = Gradients { targets: &mut wt, sources: &mut ws, masses: &mut wm };
    oracle::vjp(&t, &s, p, cotangents, grads).map_err(|e| e.to_string())?;
    let (mut st, mut sink, mut ss, mut sm) = (vec![0.0; n], vec![0.0; n], vec![0.0; ns], vec![0.0; ns]);
    let out_scales = GradientScales { tidal: &mut sink, targets: &mut st, sources: &mut ss, masses: &mut sm };
    oracle::gradient_scales(&t, &s, p, cotangents, out_scales).map_err(|e| e.to_string())?;
    let tol = tolerance(u, Path::Gradients);
    let lanes = |q: &Particle<T>| [q.x.to_f64(), q.y.to_f64(), q.z.to_f64(), q.m.to_f64()];
    let name = p.softening.name();
    for i in 0..n {
        let (g, b) = (lanes(&gt[i]), lanes(&tb[i]));
        for k in 0..3 {
            close(g[k], b[k], wt[i][k], tol, st[i], u, &|| format!("{name} target {i}, gradient[{k}]"))?;
        }
        if g[3].to_bits() != b[3].to_bits() {
            return Err(format!("{name} target {i}: the mass lane of a target's gradient changed"));
        }
    }
    for j in 0..ns {
        let (g, b) = (lanes(&gs[j]), lanes(&sb[j]));
        for k in 0..3 {
            close(g[k], b[k], ws[j][k], tol, ss[j], u, &|| format!("{name} source {j}, gradient[{k}]"))?;
        }
        close(g[3], b[3], wm[j], tol, sm[j], u, &|| format!("{name} source {j}, mass gradient"))?;
    }
    Ok(())
}

/// Tidal tensors against the oracle on random calls, for every kernel declared.
pub(crate) fn tidal_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(24, 48), |e, c: Case| {
        for p in kernels(e, Entry::Tidal, &c) {
            check_tidal(e, &c, &p, u)?;
        }
        Ok(())
    })
}

/// Vector-Jacobian products against the oracle on random calls, for every kernel
/// declared.
pub(crate) fn vjp_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(24, 48), |e, c: Case| {
        for p in kernels(e, Entry::Vjp, &c) {
            check_vjp(e, &c, &p, u)?;
        }
        Ok(())
    })
}

/// Both on 37 targets and 3,000 sources, softened and not, with and without the
/// potential: the bounds do not grow with the source count, so a source dropped or
/// doubled fails.
pub(crate) fn gradients_many_sources<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let mut c = crate::neighbours::big_case(37, 3_000, (5, 1_234, 25));
    // Cotangents on the potentials too (they come from the outputs' prior potentials).
    c.before = (0..c.targets.len()).map(|i| [0.0, 0.0, 0.0, 0.25 - i as f64 / 64.0]).collect();
    for (eps, potential) in [(1.0 / 64.0, true), (1.0 / 64.0, false), (0.0, true)] {
        let c = Case { eps, potential, ..c.clone() };
        for p in kernels(e, Entry::Tidal, &c) {
            check_tidal(e, &c, &p, u)?;
        }
        for p in kernels(e, Entry::Vjp, &c) {
            check_vjp(e, &c, &p, u)?;
        }
    }
    Ok(())
}

/// The batched product (`Executor::vjp_batch`) against the oracle's product of each
/// (pair, span), summed per particle, on random lists (spans that overlap, repeat and
/// are empty), for every kernel declared, into gradients that already hold values.
pub(crate) fn vjp_batch_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    use crate::r#gen::{row, softening};
    use nbody_core::{InteractionList, Overlap, Span};
    use proptest::collection::vec;
    use proptest::prelude::*;
    let strategy = (
        vec(row(), 1..64),
        softening(),
        vec(any::<(u16, u16, u8)>(), 0..8),
        vec(any::<(u16, u16)>(), 1..12),
        any::<bool>(),
    );
    crate::checks::prop(e, strategy, |e, (rows, eps, pair_seeds, span_seeds, potential)| {
        let ps = crate::particles::<T>(&rows);
        let n = ps.len();
        let (pairs, spans) = crate::checks::random_list(n, &pair_seeds, &span_seeds);
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let f = T::from_f64;
        let cot: Vec<Field<T>> = rows.iter().map(|r| Field::new(f(r[1]), f(-r[0]), f(r[2]), f(r[3] - 0.5))).collect();
        let before: Vec<Particle<T>> = (0..n).map(|i| Particle::new(f(0.5), f(-0.25), f(i as f64), f(0.125))).collect();
        let caps = e.capabilities();
        for &softening in Softening::ALL.iter().filter(|&&s| caps.computes(Entry::VjpBatch, s)) {
            let mut p = Params::softened(f(eps)).with_softening(softening);
            p.potential = potential;
            let mut got = before.clone();
            e.vjp_batch(&ps, &list, &p, &cot, &mut got)
                .map_err(|err| format!("{} vjp_batch failed: {err}", e.name()))?;
            // The truth and its scales: each (pair, span)'s, added per particle.
            let (mut want, mut scale) = (vec![[0.0; 4]; n], vec![[0.0; 2]; n]);
            for pair in &pairs {
                let t = pair.targets.range();
                for s in list.sources_of(pair).iter().map(Span::range).filter(|s| !s.is_empty() && !t.is_empty()) {
                    let q = p.with_overlap(Overlap::between(t.clone(), s.clone()));
                    let (tp, sp) = (&ps[t.clone()], &ps[s.clone()]);
                    let acc: Vec<[f64; 3]> =
                        cot[t.clone()].iter().map(|c| c.acceleration().map(|x| x.to_f64())).collect();
                    let phi: Vec<f64> = cot[t.clone()].iter().map(|c| c.phi.to_f64()).collect();
                    let cots = Cotangents { acc: &acc, phi: q.potential.then_some(&phi[..]) };
                    let (nt, ns) = (t.len(), s.len());
                    let (mut wt, mut ws, mut wm) = (vec![[0.0; 3]; nt], vec![[0.0; 3]; ns], vec![0.0; ns]);
                    oracle::vjp(tp, sp, &q, cots, Gradients { targets: &mut wt, sources: &mut ws, masses: &mut wm })
                        .map_err(|e| e.to_string())?;
                    let (mut st, mut sink, mut ss, mut sm) =
                        (vec![0.0; nt], vec![0.0; nt], vec![0.0; ns], vec![0.0; ns]);
                    let out = GradientScales { tidal: &mut sink, targets: &mut st, sources: &mut ss, masses: &mut sm };
                    oracle::gradient_scales(tp, sp, &q, cots, out).map_err(|e| e.to_string())?;
                    for (k, i) in t.clone().enumerate() {
                        (0..3).for_each(|a| want[i][a] += wt[k][a]);
                        scale[i][0] += st[k];
                    }
                    for (k, j) in s.clone().enumerate() {
                        (0..3).for_each(|a| want[j][a] += ws[k][a]);
                        want[j][3] += wm[k];
                        scale[j][0] += ss[k];
                        scale[j][1] += sm[k];
                    }
                }
            }
            let tol = tolerance(u, Path::Gradients);
            let lanes = |q: &Particle<T>| [q.x.to_f64(), q.y.to_f64(), q.z.to_f64(), q.m.to_f64()];
            for i in 0..n {
                let (g, b) = (lanes(&got[i]), lanes(&before[i]));
                for k in 0..4 {
                    let sc = scale[i][(k == 3) as usize];
                    close(g[k], b[k], want[i][k], tol, sc, u, &|| {
                        format!("{} particle {i}, lane {k}", softening.name())
                    })?;
                }
            }
        }
        Ok(())
    })
}

/// The batched product of whole systems on themselves (one pair whose only source span is
/// its targets: a particle's whole gradient, as an executor may take each pair once for
/// both of its particles) against the oracle's two parts added, on systems of 1 to 900
/// particles (several of the CUDA pair kernels' tiles), softened and not, with and
/// without the potential, into gradients that already hold values.
pub(crate) fn vjp_batch_on_itself<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    use nbody_core::{InteractionList, Pair, Span};
    let f = T::from_f64;
    for (n, eps, potential) in
        [(1, 1.0 / 64.0, true), (37, 0.0, true), (700, 1.0 / 64.0, false), (900, 1.0 / 64.0, true)]
    {
        let c = crate::neighbours::big_case(n, 0, (0, 0, 0));
        let ps = c.targets::<T>();
        let cot: Vec<Field<T>> = (0..n)
            .map(|i| {
                let v = c.velocities[i];
                Field::new(f(v[0]), f(v[1]), f(v[2]), f(0.25 - i as f64 / n as f64))
            })
            .collect();
        let pairs = [Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 1) }];
        let spans = [Span::new(0, n as u32)];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let before: Vec<Particle<T>> = (0..n).map(|i| Particle::new(f(0.5), f(-0.25), f(i as f64), f(0.125))).collect();
        let case = Case { eps, potential, ..c.clone() };
        for p in kernels(e, nbody_core::capabilities::Entry::VjpBatch, &case) {
            let mut got = before.clone();
            e.vjp_batch(&ps, &list, &p, &cot, &mut got)
                .map_err(|err| format!("{} vjp_batch failed: {err}", e.name()))?;
            let q = p.with_overlap_identical();
            let acc: Vec<[f64; 3]> = cot.iter().map(|c| c.acceleration().map(|x| x.to_f64())).collect();
            let phi: Vec<f64> = cot.iter().map(|c| c.phi.to_f64()).collect();
            let cots = Cotangents { acc: &acc, phi: potential.then_some(&phi[..]) };
            let (mut wt, mut ws, mut wm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n], vec![0.0; n]);
            oracle::vjp(&ps, &ps, &q, cots, Gradients { targets: &mut wt, sources: &mut ws, masses: &mut wm })
                .map_err(|e| e.to_string())?;
            let (mut st, mut sink, mut ss, mut sm) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
            let out = GradientScales { tidal: &mut sink, targets: &mut st, sources: &mut ss, masses: &mut sm };
            oracle::gradient_scales(&ps, &ps, &q, cots, out).map_err(|e| e.to_string())?;
            let tol = tolerance(u, Path::Gradients);
            let lanes = |q: &Particle<T>| [q.x.to_f64(), q.y.to_f64(), q.z.to_f64(), q.m.to_f64()];
            let name = p.softening.name();
            for i in 0..n {
                let (g, b) = (lanes(&got[i]), lanes(&before[i]));
                for k in 0..3 {
                    close(g[k], b[k], wt[i][k] + ws[i][k], tol, st[i] + ss[i], u, &|| {
                        format!("{name} n {n} eps {eps} potential {potential}: particle {i}, gradient[{k}]")
                    })?;
                }
                close(g[3], b[3], wm[i], tol, sm[i], u, &|| {
                    format!("{name} n {n} eps {eps} potential {potential}: particle {i}, mass gradient")
                })?;
            }
        }
    }
    Ok(())
}
