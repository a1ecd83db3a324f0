//! The executor's [`Capabilities`] hold both ways: every entry point it declares for a
//! kernel computes (and matches the oracle), and every other one refuses with
//! [`Error::Unsupported`] before touching its outputs. The other checks read the same
//! declaration, so a refusal passes only where it is declared.

use crate::{Path, compare, exact, particles};
use nbody_core::capabilities::{Capabilities, Entry};
use nbody_core::cell::Cell;
use nbody_core::columns::ColumnsCall;
use nbody_core::neighbours::{Nearest, Neighbours};
use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, LeafList, Pair, Params, Particle, PerParticle,
    Real, Softening, Span, Tidal, Velocity,
};

/// Six particles, the system on itself: each entry point once per kernel.
pub(crate) fn capabilities_hold<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let caps: Capabilities = e.capabilities();
    let rows: Vec<[f64; 4]> = (0..6)
        .map(|i| {
            let k = i as f64;
            [0.25 * k, 0.5 * (k * 0.7).sin(), -0.125 * k, 1.0 + 0.25 * k]
        })
        .collect();
    let ps = particles::<T>(&rows);
    let vel: Vec<Velocity<T>> =
        (0..6).map(|i| Velocity::new(T::from_f64(0.1 * i as f64), T::zero(), T::from_f64(-0.2))).collect();
    for &softening in Softening::ALL {
        let p = Params::softened(T::from_f64(0.05)).with_softening(softening).with_overlap_identical();
        let truth = exact(&ps, &ps, &p).map_err(|err| err.to_string())?;
        for entry in Entry::ALL {
            let declared = caps.computes(entry, softening);
            let what = format!("{} {}", softening.name(), entry.name());
            let before = vec![Field::new(T::one(), T::zero(), T::zero(), T::one()); ps.len()];
            let mut out = before.clone();
            let result = call(e, entry, &ps, &vel, &p, &mut out);
            match (declared, result) {
                (true, Ok(())) if entry == Entry::Snap => {
                    // No snap oracle here (snap.rs checks it): the field must match.
                    compare(&out, &before, &truth, Path::Pairs, true, u).map_err(|m| format!("{what}: {m}"))?
                }
                (true, Ok(())) => compare(&out, &before, &truth, Path::Spline, true, u)
                    .map_err(|m| format!("{what}: declared, computed wrong: {m}"))?,
                (true, Err(err)) => return Err(format!("{what}: declared in capabilities(), but the call gave {err}")),
                (false, Err(Error::Unsupported { .. })) if out == before => {}
                (false, Err(Error::Unsupported { .. })) => {
                    return Err(format!("{what}: refused, but changed the output"));
                }
                (false, r) => {
                    return Err(format!(
                        "{what}: not declared in capabilities(), so it must be Unsupported; the call gave {r:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Marks `out` changed when a refused call (`Unsupported`) changed its other outputs
/// (`got` against `before`), so that the caller's "refused, but changed the output"
/// check sees it.
fn mark_if_changed<T: Real, X: PartialEq>(r: &Result<(), Error>, got: &[X], before: &[X], out: &mut [Field<T>]) {
    if let (Err(Error::Unsupported { .. }), true, Some(o)) = (r, got != before, out.first_mut()) {
        o.ax = o.ax + T::one();
    }
}

/// Calls `entry` for `ps` on itself (with `p`'s kernel and ε) into `out`.
fn call<T: Real, E: Executor<T>>(
    e: &mut E,
    entry: Entry,
    ps: &[Particle<T>],
    vel: &[Velocity<T>],
    p: &Params<T>,
    out: &mut [Field<T>],
) -> Result<(), Error> {
    let n = ps.len();
    let body = Bodies { pos: ps, vel };
    let (mut jerk, mut snap) = (vec![Jerk::zero(); n], vec![Jerk::zero(); n]);
    let whole = [Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 1) }];
    let spans = [Span::new(0, n as u32)];
    let list = InteractionList { pairs: &whole, source_spans: &spans };
    match entry {
        Entry::Accelerations => e.accelerations(ps, ps, p, out),
        Entry::Jerk => e.accelerations_jerk(body, body, p, out, &mut jerk),
        Entry::Neighbours => {
            let mut nearest = vec![Nearest::none(); n];
            let mut nb = Neighbours { nearest: &mut nearest, within: None, index_offset: 0 };
            e.accelerations_jerk_neighbours(body, body, p, out, &mut jerk, &mut nb)
        }
        Entry::Snap => {
            let acc = vec![Field::zero(); n];
            let kin = Kinematics { pos: ps, vel, acc: &acc };
            e.accelerations_snap(kin, kin, p, out, &mut jerk, &mut snap)
        }
        Entry::Batch => e.accelerations_batch(ps, &list, p, out),
        Entry::Cells => {
            // Each particle as a cell of its own (no quadrupole), in a leaf list whose
            // particle part is empty: the same field as the particles, self pairs
            // excepted, so a target's own cell is left out by giving each target the
            // cells of the others.
            let cells: Vec<Cell<T>> = ps.iter().map(|q| Cell::from_particles(core::slice::from_ref(q))).collect();
            let pairs: Vec<Pair> =
                (0..n as u32).map(|i| Pair { targets: Span::new(i, i + 1), sources: Span::new(0, 0) }).collect();
            let cell_ranges: Vec<Span> = (0..n as u32).map(|i| Span::new(2 * i, 2 * i + 2)).collect();
            let cell_spans: Vec<Span> =
                (0..n as u32).flat_map(|i| [Span::new(0, i), Span::new(i + 1, n as u32)]).collect();
            let leaves = LeafList {
                particles: InteractionList { pairs: &pairs, source_spans: &[] },
                cells: &cell_ranges,
                cell_spans: &cell_spans,
            };
            e.accelerations_batch_cells(ps, &cells, &leaves, &p.with_overlap(nbody_core::Overlap::Disjoint), out)
        }
        Entry::PerParticle => {
            let eps = vec![p.eps; n];
            e.accelerations_per_particle(ps, ps, PerParticle { targets: &eps, sources: &eps }, p, out)
        }
        Entry::Tidal => {
            let before = vec![Tidal::new([T::one(); 6]); n];
            let mut tidal = before.clone();
            let r = e.accelerations_tidal(ps, ps, p, out, &mut tidal);
            // A refusal leaves the tensors too (gradients.rs checks their values).
            mark_if_changed(&r, &tidal, &before, out);
            r
        }
        Entry::Vjp => {
            // The product leaves the field alone: the field is added after it computed (as
            // the other entry points add theirs); gradients.rs checks its values.
            let cot = vec![Field::new(T::one(), T::zero(), T::zero(), T::one()); n];
            let before = vec![Particle::new(T::one(), T::one(), T::one(), T::one()); n];
            let (mut gt, mut gs) = (before.clone(), before.clone());
            let r = e.vjp(ps, ps, p, &cot, &mut gt, &mut gs);
            mark_if_changed(&r, &gt, &before, out);
            mark_if_changed(&r, &gs, &before, out);
            if r.is_ok() {
                e.accelerations(ps, ps, p, out)?;
            }
            r
        }
        Entry::VjpBatch => {
            // As the product's entry: the field added after it computed.
            let cot = vec![Field::new(T::one(), T::zero(), T::zero(), T::one()); n];
            let before = vec![Particle::new(T::one(), T::one(), T::one(), T::one()); n];
            let mut g = before.clone();
            let r = e.vjp_batch(ps, &list, &p.with_overlap(nbody_core::Overlap::Disjoint), &cot, &mut g);
            mark_if_changed(&r, &g, &before, out);
            if r.is_ok() {
                e.accelerations(ps, ps, p, out)?;
            }
            r
        }
        Entry::Columns => {
            let x: Vec<[T; 3]> = ps.iter().map(|q| [q.x, q.y, q.z]).collect();
            let m: Vec<T> = ps.iter().map(|q| q.m).collect();
            let mut acc: Vec<[T; 3]> = out.iter().map(|f| [f.ax, f.ay, f.az]).collect();
            let mut phi: Vec<T> = out.iter().map(|f| f.phi).collect();
            let r =
                e.field_columns(ColumnsCall { positions: &x, masses: &m, targets: None }, p, &mut acc, Some(&mut phi));
            // Columns write, not add: put the prior contents back under the result so the
            // comparison is the same as the other entry points'.
            if r.is_ok() {
                for (o, (a, f)) in out.iter_mut().zip(acc.iter().zip(&phi)) {
                    *o = Field::new(o.ax + a[0], o.ay + a[1], o.az + a[2], o.phi + *f);
                }
            }
            r
        }
    }
}
