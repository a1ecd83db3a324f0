//! The spline softening ([`Softening::Spline`]) at every entry point: each executor
//! either matches the oracle (the cells: the exact expansion) or refuses with
//! [`Error::Unsupported`] and leaves its outputs as they were. The snap call has no
//! spline oracle and must refuse.

use crate::r#gen::{Case, cases};
use crate::{Path, compare, exact, tolerance};
use nbody_core::capabilities::Entry;
use nbody_core::cell::{self, Cell};
use nbody_core::kernel::Softened;
use nbody_core::oracle::{self, Exact};
use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, LeafList, Overlap, Pair, Params, Particle, Real,
    Softening, Span,
};

/// `Ok(true)` when the call computed and the executor declares `entry` for the call's
/// kernel; `Ok(false)` when it refused, untouched, an entry point it does not declare;
/// `Err` otherwise: a declared entry point that refuses, an undeclared one that changed
/// the output, a refusal that changed it, any other error.
pub(crate) fn computed<T: Real>(
    what: &str,
    declared: bool,
    result: Result<(), Error>,
    out: &[Field<T>],
    before: &[Field<T>],
) -> Result<bool, String> {
    match (declared, result) {
        (true, Ok(())) => Ok(true),
        (false, Ok(())) if out == before => Ok(false),
        (false, Ok(())) => Err(format!("{what}: computed, but the executor does not declare it in capabilities()")),
        (true, Err(Error::Unsupported { .. })) => {
            Err(format!("{what}: refused as Unsupported, but the executor declares it in capabilities()"))
        }
        (false, Err(Error::Unsupported { .. })) if out == before => Ok(false),
        (false, Err(Error::Unsupported { .. })) => Err(format!("{what}: refused but changed the output")),
        (_, Err(other)) => Err(format!("{what}: failed: {other}")),
    }
}

/// Every jerk component within the tolerance of the oracle's.
fn jerks_close<T: Real>(jerk: &[Jerk<T>], ex: &[Exact], u: f64) -> Result<(), String> {
    let tol = tolerance(u, Path::Jerk);
    for (i, (j, x)) in jerk.iter().zip(ex).enumerate() {
        for (k, got) in j.components().into_iter().enumerate() {
            let diff = (got.to_f64() - x.jerk[k]).abs();
            if !(diff <= tol * x.jerk_bound) {
                return Err(format!(
                    "spline jerk: target {i}, jerk[{k}]: got {got}, oracle {:e}, |diff| {diff:e}",
                    x.jerk[k]
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn spline_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(32, 64), |e, c: Case| {
        let (t, s, before) = (c.targets::<T>(), c.sources::<T>(), c.before::<T>());
        let p = c.params::<T>().with_softening(Softening::Spline);
        // With ε = 0 the spline is Newtonian: every Plummer entry point computes it.
        let kernel = if p.masked() { Softening::Plummer } else { Softening::Spline };
        let caps = e.capabilities();
        let declares = |entry| caps.computes(entry, kernel);
        // Plain call.
        let mut out = before.clone();
        if computed(
            "spline accelerations",
            declares(Entry::Accelerations),
            e.accelerations(&t, &s, &p, &mut out),
            &out,
            &before,
        )? {
            let ex = exact(&t, &s, &p).map_err(|err| err.to_string())?;
            compare(&out, &before, &ex, Path::Spline, p.potential, u)
                .map_err(|err| format!("spline accelerations: {err}"))?;
        }
        // Jerk.
        let (tv, sv) = c.velocities::<T>();
        let mut out = before.clone();
        let mut jerk = vec![Jerk::zero(); t.len()];
        let (tb, sb) = (Bodies { pos: &t, vel: &tv }, Bodies { pos: &s, vel: &sv });
        if computed(
            "spline jerk",
            declares(Entry::Jerk),
            e.accelerations_jerk(tb, sb, &p, &mut out, &mut jerk),
            &out,
            &before,
        )? {
            let mut ex = vec![Exact::default(); t.len()];
            oracle::field(&t, Some(&tv), &s, Some(&sv), &p, &mut ex).map_err(|err| err.to_string())?;
            compare(&out, &before, &ex, Path::Spline, p.potential, u).map_err(|err| format!("spline jerk: {err}"))?;
            jerks_close(&jerk, &ex, u)?;
        }
        // Batched: the targets against targets and sources in one array (their own
        // pairs inside the span: self terms removed).
        let (nt, ns) = (t.len() as u32, s.len() as u32);
        let all: Vec<Particle<T>> = t.iter().chain(&s).copied().collect();
        let pairs = [Pair { targets: Span::new(0, nt), sources: Span::new(0, 1) }];
        let spans = [Span::new(0, nt + ns)];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let before_all: Vec<Field<T>> = before.iter().copied().chain(vec![Field::zero(); s.len()]).collect();
        let mut out = before_all.clone();
        if computed(
            "spline batch",
            declares(Entry::Batch),
            e.accelerations_batch(&all, &list, &p, &mut out),
            &out,
            &before_all,
        )? {
            let q = p.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: t.len() });
            let ex = exact(&t, &all, &q).map_err(|err| err.to_string())?;
            compare(&out[..t.len()], &before, &ex, Path::Spline, p.potential, u)
                .map_err(|err| format!("spline batch: {err}"))?;
        }
        // Cells (of eight sources each) in a leaf list beside no particles.
        let cells: Vec<Cell<T>> = s.chunks(8).map(Cell::from_particles).collect();
        let ranges = [Span::new(0, 1)];
        let cell_spans = [Span::new(0, cells.len() as u32)];
        let no_particles = [Span::new(0, 0)];
        let leaves = LeafList {
            particles: InteractionList { pairs: &pairs, source_spans: &no_particles },
            cells: &ranges,
            cell_spans: &cell_spans,
        };
        let mut out = before.clone();
        let p_cells = p.with_overlap(Overlap::Disjoint);
        if computed(
            "spline cells",
            declares(Entry::Cells),
            e.accelerations_batch_cells(&t, &cells, &leaves, &p_cells, &mut out),
            &out,
            &before,
        )? {
            let kernel = Softened::of(&p_cells.cast::<f64>());
            for (i, ti) in t.iter().enumerate() {
                let xi = ti.position().map(|x| x.to_f64());
                let (acc, phi, acc_bound, phi_bound) = cell::exact(xi, &cells, p.g.to_f64(), &kernel);
                let x = Exact { acc, phi, acc_bound, phi_bound, ..Exact::default() };
                compare(&out[i..i + 1], &before[i..i + 1], &[x], Path::Cells, p.potential, u)
                    .map_err(|err| format!("spline cells, target {i}: {err}"))?;
            }
        }
        // Snap: no oracle for the spline; only a refusal is right (ε = 0 is Newtonian).
        if !p.masked() {
            let acc: Vec<Field<T>> = vec![Field::zero(); t.len().max(s.len())];
            let (tk, sk) = (
                Kinematics { pos: &t, vel: &tv, acc: &acc[..t.len()] },
                Kinematics { pos: &s, vel: &sv, acc: &acc[..s.len()] },
            );
            let (mut out, mut jerk, mut snap) =
                (before.clone(), vec![Jerk::zero(); t.len()], vec![Jerk::zero(); t.len()]);
            let call = e.accelerations_snap(tk, sk, &p, &mut out, &mut jerk, &mut snap);
            if !t.is_empty() && !s.is_empty() && !matches!(call, Err(Error::Unsupported { .. })) {
                return Err(format!("spline snap: expected Unsupported, got {call:?}"));
            }
        }
        Ok(())
    })
}

/// The same as `Params`' spline at ε > 0 for a caller that wants to know an executor
/// computes it (not only that it may refuse): `Ok` when the plain call computes.
pub fn computes_spline<T: Real, E: Executor<T>>(e: &mut E) -> Result<(), Error> {
    let ps = [Particle::new(T::zero(), T::zero(), T::zero(), T::one())];
    let q = [Particle::new(T::from_f64(0.01), T::zero(), T::zero(), T::one())];
    let mut out = [Field::zero()];
    let p: Params<T> = Params::softened(T::from_f64(0.1)).with_softening(Softening::Spline);
    e.accelerations(&ps, &q, &p, &mut out)
}
