//! Conformance of the cell calls (`Executor::accelerations_cells` and
//! `accelerations_batch_cells`: far cells with a quadrupole as sources) against the f64
//! evaluation of the same expansion ([`nbody_core::cell::exact`]).

use crate::compare;
use crate::gen::{cases, Case};
use nbody_core::cell::{self, Cell};
use nbody_core::oracle::Exact;
use nbody_core::{Array, Error, Executor, Field, InteractionList, Overlap, Pair, Params, Particle, Real, Span};

/// Roundings per cell interaction beyond the pair kernel's, counted as that many more
/// sources in [`crate::tolerance`]: the quadrupole adds about thirty operations to the
/// pair kernel's dozen (64 ulps of slack in all).
const CELL_EXTRA_SOURCES: usize = 48;

/// Cells of up to eight consecutive source rows each (their own expansion, built in `T`).
fn cells_of<T: Real>(sources: &[Particle<T>]) -> Vec<Cell<T>> {
    sources.chunks(8).map(Cell::from_particles).collect()
}

/// Checks `got − before` for target `i` against the exact field of `cells`, with the
/// suite's comparison ([`crate::compare`]).
fn check_target<T: Real>(
    i: usize,
    target: &Particle<T>,
    cells: &[Cell<T>],
    params: &Params<T>,
    got: &Field<T>,
    before: &Field<T>,
    u: f64,
) -> Result<(), String> {
    let xi = target.position().map(|x| x.to_f64());
    let eps = params.eps.to_f64();
    let (acc, phi, acc_bound, phi_bound) = cell::exact(xi, cells, params.g.to_f64(), eps * eps);
    let exact = Exact { acc, phi, acc_bound, phi_bound, ..Exact::default() };
    compare(&[*got], &[*before], &[exact], cells.len() + CELL_EXTRA_SOURCES, params.potential, u)
        .map_err(|e| format!("target {i} (as target 0 below): {e}"))
}

/// The cell call against the exact expansion on random calls (softened and not, with
/// and without the potential, accumulating into prior outputs).
pub(crate) fn cells_match_exact<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(24, 96), |e, c: Case| {
        let targets = c.targets::<T>();
        let cells = cells_of(&c.sources::<T>());
        let params = c.params::<T>().with_overlap(Overlap::Disjoint);
        let before: Vec<Field<T>> = c.before::<T>();
        let mut out = before.clone();
        e.accelerations_cells(&targets, &cells, &params, &mut out).map_err(|err| format!("cell call failed: {err}"))?;
        for (i, t) in targets.iter().enumerate() {
            check_target(i, t, &cells, &params, &out[i], &before[i], u)?;
        }
        Ok(())
    })
}

/// The batched cell call: each target feels the cells of every pair naming it (spans
/// may overlap and repeat), checked against the exact sum over those cells.
pub(crate) fn batch_cells_match_exact<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(40, 160), |e, c: Case| {
        let particles = c.targets::<T>();
        let cells = cells_of(&c.sources::<T>());
        let (n, m) = (particles.len() as u32, cells.len() as u32);
        // Target groups of up to 7, each against up to three spans drawn from the case's
        // numbers.
        let mut pairs = Vec::new();
        let mut spans = Vec::new();
        let pick = |k: usize, modulo: u32| (c.before.get(k / 4).map_or(0.5, |r| r[k % 4]).abs() * 1e4) as u32 % modulo;
        let mut start = 0;
        while start < n {
            let end = (start + 1 + pick(start as usize, 7)).min(n);
            let first = spans.len() as u32;
            for s in 0..pick(start as usize + 1, 4) {
                let a = pick(start as usize + 2 + s as usize, m + 1);
                let b = a + pick(start as usize + 3 + s as usize, m - a + 1);
                spans.push(Span::new(a, b));
            }
            pairs.push(Pair { targets: Span::new(start, end), sources: Span::new(first, spans.len() as u32) });
            start = end;
        }
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let params = c.params::<T>().with_overlap(Overlap::Disjoint);
        let before: Vec<Field<T>> = c.before::<T>();
        let mut out = before.clone();
        e.accelerations_batch_cells(&particles, &cells, &list, &params, &mut out)
            .map_err(|err| format!("batched cell call failed: {err}"))?;
        for (i, t) in particles.iter().enumerate() {
            let named: Vec<Cell<T>> = pairs
                .iter()
                .filter(|p| p.targets.range().contains(&i))
                .flat_map(|p| list.sources_of(p).iter().flat_map(|s| cells[s.range()].iter().copied()))
                .collect();
            check_target(i, t, &named, &params, &out[i], &before[i], u)?;
        }
        Ok(())
    })
}

/// A bad cell call: what it is, its cells and parameters, the error it must give.
type BadCall<T> = (&'static str, Vec<Cell<T>>, Params<T>, Error);

/// Bad cells, a cell call with an overlap and spans past the cells are refused with
/// errors naming them, and nothing is written.
pub(crate) fn cell_bad_input<T: Real, E: Executor<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    let t = |v: f64| T::from_f64(v);
    let targets = vec![Particle::new(t(0.0), t(0.0), t(0.0), t(1.0)); 3];
    let good = Cell::new(t(2.0), t(0.0), t(0.0), t(1.0), [t(0.1), t(0.0), t(0.0), t(-0.05), t(0.0), t(-0.05)]);
    let before = vec![Field::new(t(0.5), t(0.25), t(-1.0), t(2.0)); 3];
    let params = Params::softened(t(0.01));
    let mut nan = good;
    nan.qyz = T::nan();
    let mut negative = good;
    negative.m = t(-1.0);
    let cases: [BadCall<T>; 3] = [
        ("a NaN quadrupole", vec![good, nan], params, Error::NonFinite { array: Array::Cells, index: 1 }),
        ("a negative mass", vec![negative], params, Error::NegativeMass { array: Array::Cells, index: 0 }),
        (
            "an overlap",
            vec![good],
            params.with_overlap(Overlap::Identical),
            Error::InvalidParameter {
                name: "overlap",
                requirement: "Disjoint in a cell call (cells are never targets)",
            },
        ),
    ];
    for (what, cells, p, want) in cases {
        let mut out = before.clone();
        match e.accelerations_cells(&targets, &cells, &p, &mut out) {
            Err(got) if got == want => {}
            other => return Err(format!("{what}: expected {want:?}, got {other:?}")),
        }
        if out != before {
            return Err(format!("{what}: the output changed"));
        }
    }
    let pairs = [Pair { targets: Span::new(0, 3), sources: Span::new(0, 1) }];
    let spans = [Span::new(0, 2)];
    let list = InteractionList { pairs: &pairs, source_spans: &spans };
    let mut out = before.clone();
    match e.accelerations_batch_cells(&targets, &[good], &list, &params, &mut out) {
        Err(Error::InvalidSpan { what: "source span", index: 0 }) => {}
        other => return Err(format!("a span past the cells: got {other:?}")),
    }
    if out != before {
        return Err("a span past the cells: the output changed".into());
    }
    Ok(())
}
