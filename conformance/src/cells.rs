//! Conformance of the cell calls (`Executor::accelerations_cells` and
//! `accelerations_batch_cells`: far cells with a quadrupole as sources) against the f64
//! evaluation of the same expansion ([`nbody_core::cell::exact`]).

use crate::exact;
use crate::r#gen::{Case, cases};
use crate::{Path, compare};
use nbody_core::cell::{self, Cell};
use nbody_core::kernel::Softened;
use nbody_core::oracle::Exact;
use nbody_core::{
    Array, Error, Executor, Field, InteractionList, LeafList, Overlap, Pair, Params, Particle, Real, Span,
};

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
    let kernel = Softened::of(&params.cast::<f64>());
    let (acc, phi, acc_bound, phi_bound) = cell::exact(xi, cells, params.g.to_f64(), &kernel);
    let exact = Exact { acc, phi, acc_bound, phi_bound, ..Exact::default() };
    compare(&[*got], &[*before], &[exact], Path::Cells, params.potential, u)
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

/// The batched cell call (a leaf list): each target feels the particle spans and the
/// cells of every pair naming it (spans may overlap, repeat and hold the target
/// itself), checked against the oracle of the particle spans plus the exact sum over
/// those cells.
pub(crate) fn batch_cells_match_exact<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(40, 160), |e, c: Case| {
        let particles = c.targets::<T>();
        let cells = cells_of(&c.sources::<T>());
        let (n, m) = (particles.len() as u32, cells.len() as u32);
        // Target groups of up to 7, each against up to three particle spans and three
        // cell spans drawn from the case's numbers.
        let (mut pairs, mut spans, mut ranges, mut cell_spans) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let pick = |k: usize, modulo: u32| (c.before.get(k / 4).map_or(0.5, |r| r[k % 4]).abs() * 1e4) as u32 % modulo;
        let draw = |k: usize, count: u32, len: u32, into: &mut Vec<Span>| -> Span {
            let first = into.len() as u32;
            for s in 0..count {
                let a = pick(k + 2 * s as usize, len + 1);
                into.push(Span::new(a, a + pick(k + 2 * s as usize + 1, len - a + 1)));
            }
            Span::new(first, into.len() as u32)
        };
        let mut start = 0;
        while start < n {
            let k = start as usize;
            let end = (start + 1 + pick(k, 7)).min(n);
            let sources = draw(k + 3, pick(k + 1, 4), n, &mut spans);
            ranges.push(draw(k + 5, pick(k + 2, 4), m, &mut cell_spans));
            pairs.push(Pair { targets: Span::new(start, end), sources });
            start = end;
        }
        let list = LeafList {
            particles: InteractionList { pairs: &pairs, source_spans: &spans },
            cells: &ranges,
            cell_spans: &cell_spans,
        };
        // Any overlap: a batched call's overlaps follow from its spans.
        let params = c.params::<T>();
        let before: Vec<Field<T>> = c.before::<T>();
        let mut out = before.clone();
        e.accelerations_batch_cells(&particles, &cells, &list, &params, &mut out)
            .map_err(|err| format!("batched cell call failed: {err}"))?;
        for (i, t) in particles.iter().enumerate() {
            let mut truth = Exact::default();
            let mut named = Vec::new();
            for (k, p) in pairs.iter().enumerate().filter(|(_, p)| p.targets.range().contains(&i)) {
                for s in list.particles.sources_of(p) {
                    let q = params.with_overlap(Overlap::between(i..i + 1, s.range()));
                    let x = exact(core::slice::from_ref(t), &particles[s.range()], &q)
                        .map_err(|err| format!("oracle refused a valid case: {err}"))?[0];
                    add(&mut truth, x.acc, x.phi, x.acc_bound, x.phi_bound);
                }
                named.extend(list.cells_of(k).iter().flat_map(|s| cells[s.range()].iter().copied()));
            }
            let xi = t.position().map(|x| x.to_f64());
            let kernel = Softened::of(&params.cast::<f64>());
            let (acc, phi, acc_bound, phi_bound) = cell::exact(xi, &named, params.g.to_f64(), &kernel);
            add(&mut truth, acc, phi, acc_bound, phi_bound);
            compare(&out[i..i + 1], &before[i..i + 1], &[truth], Path::Cells, params.potential, u)
                .map_err(|err| format!("particle {i} (as target 0 below): {err}"))?;
        }
        Ok(())
    })
}

/// Adds a field and its error scales into `truth`.
fn add(truth: &mut Exact, acc: [f64; 3], phi: f64, acc_bound: f64, phi_bound: f64) {
    for (t, a) in truth.acc.iter_mut().zip(acc) {
        *t += a;
    }
    truth.phi += phi;
    truth.acc_bound += acc_bound;
    truth.phi_bound += phi_bound;
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
    let spans = [Span::new(0, 3)];
    let particles = InteractionList { pairs: &pairs, source_spans: &spans };
    let bad_lists: [(&str, &[Span], &[Span], Error); 3] = [
        (
            "a span past the cells",
            &[Span::new(0, 1)],
            &[Span::new(0, 2)],
            Error::InvalidSpan { what: "cell span", index: 0 },
        ),
        (
            "a pair past the cell spans",
            &[Span::new(0, 2)],
            &[Span::new(0, 1)],
            Error::InvalidSpan { what: "pair cells", index: 0 },
        ),
        (
            "no cell range for a pair",
            &[],
            &[Span::new(0, 1)],
            Error::LengthMismatch { what: "cell ranges (one per pair)", expected: 1, found: 0 },
        ),
    ];
    for (what, ranges, cell_spans, want) in bad_lists {
        let list = LeafList { particles, cells: ranges, cell_spans };
        let mut out = before.clone();
        match e.accelerations_batch_cells(&targets, &[good], &list, &params, &mut out) {
            Err(got) if got == want => {}
            other => return Err(format!("{what}: expected {want:?}, got {other:?}")),
        }
        if out != before {
            return Err(format!("{what}: the output changed"));
        }
    }
    Ok(())
}
