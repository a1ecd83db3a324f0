//! Conformance checks of neighbour finding (`Executor::accelerations_jerk_neighbours`).
//!
//! The oracle is the f64 squared distance of every pair, exact here because the cases'
//! coordinates are multiples of 2⁻¹⁶ (differences and squares fit in f64's mantissa).
//! An executor's distance may round in its own precision, so a source whose distance is
//! within a few roundings of the nearest (or of the radius) may go either way; anything
//! else must match exactly.

use crate::r#gen::{Case, cases};
use crate::{Path, compare, tolerance};
use nbody_core::neighbours::{Nearest, Neighbours, Within};
use nbody_core::oracle::{self, Exact};
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Real};
use proptest::prelude::*;

/// Relative slack on a squared distance: a few roundings of the executor's arithmetic
/// (unit roundoff `u`: `T`'s, or f32's for a mixed-precision executor).
fn slack(u: f64) -> f64 {
    8.0 * u
}

/// Squared distances from every target to every source, `f64::INFINITY` for a target's
/// own particle.
fn distances(c: &Case) -> Vec<Vec<f64>> {
    let (t0, s0, len) = c.overlap.resolve(c.targets.len());
    c.targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            c.sources
                .iter()
                .enumerate()
                .map(|(j, s)| {
                    let own = i >= t0 && i < t0 + len && j == s0 + i - t0;
                    if own { f64::INFINITY } else { (0..3).map(|k| (s[k] - t[k]) * (s[k] - t[k])).sum() }
                })
                .collect()
        })
        .collect()
}

/// The buffers of one call, with prior contents (results accumulate over calls).
struct Buffers<T: Real> {
    nearest: Vec<Nearest<T>>,
    radius2: Vec<T>,
    capacity: usize,
    indices: Vec<u32>,
    counts: Vec<u32>,
}

/// Prior contents: every third target already has a nearest (an index no call reports)
/// and one list entry.
const PRIOR: u32 = 4_000_000;

impl<T: Real> Buffers<T> {
    fn new(n: usize, capacity: usize, seed: u32) -> Self {
        let mut b = Buffers {
            nearest: vec![Nearest::none(); n],
            radius2: (0..n).map(|i| T::from_f64(((seed as usize + 5 * i) % 17) as f64 / 16.0)).collect(),
            capacity,
            indices: vec![u32::MAX - 1; n * capacity],
            counts: vec![0; n],
        };
        for i in (0..n).step_by(3) {
            b.nearest[i] = Nearest { index: PRIOR + i as u32, r2: T::from_f64(((seed as usize + i) % 9) as f64 / 8.0) };
            if capacity > 0 {
                b.indices[i * capacity] = PRIOR + i as u32;
            }
            b.counts[i] = 1;
        }
        b
    }

    fn neighbours(&mut self, index_offset: u32) -> Neighbours<'_, T> {
        Neighbours {
            nearest: &mut self.nearest,
            within: Some(Within {
                radius2: &self.radius2,
                capacity: self.capacity,
                indices: &mut self.indices,
                counts: &mut self.counts,
            }),
            index_offset,
        }
    }
}

/// Nearest source and radius lists agree with the f64 distances; forces and jerks with
/// the oracle; prior contents are merged, not overwritten.
pub(crate) fn neighbours_match_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let strategy = (cases(40, 600), 0usize..12, any::<u32>());
    crate::checks::prop(e, strategy, |e, (c, capacity, seed)| check_case(e, &c, capacity, seed, u))
}

/// One call of few targets against many sources (a block step's active particles, or a
/// tree leaf against a long list): the case where executors split the sources over
/// threads or thread blocks and combine the pieces.
pub(crate) fn neighbours_few_targets_many_sources<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let c = big_case(37, 30_000, (5, 12_345, 25));
    for (eps, capacity) in [(1.0 / 64.0, 40), (0.0, 3)] {
        check_case(e, &Case { eps, ..c.clone() }, capacity, 7, u)?;
    }
    Ok(())
}

/// Many targets (more than a GPU kernel's few-target variants take), with and without
/// neighbours: the jerk and the neighbours against the oracle.
pub(crate) fn jerk_many_targets<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    let c = big_case(1_100, 1_200, (40, 300, 1_000));
    check_case(e, &c, 6, 11, u)?;
    let (t, s, p) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>());
    let (tv, sv) = c.velocities::<T>();
    let mut out = c.before::<T>();
    let mut jerk = vec![Jerk::zero(); t.len()];
    e.accelerations_jerk(Bodies { pos: &t, vel: &tv }, Bodies { pos: &s, vel: &sv }, &p, &mut out, &mut jerk)
        .map_err(|err| format!("{} failed: {err}", e.name()))?;
    let mut ex = vec![Exact::default(); t.len()];
    oracle::field(&t, Some(&tv), &s, Some(&sv), &p, &mut ex).map_err(|err| err.to_string())?;
    compare(&out, &c.before::<T>(), &ex, Path::Pairs, p.potential, u)?;
    let tol = tolerance(u, Path::Jerk);
    for (i, (j, x)) in jerk.iter().zip(&ex).enumerate() {
        for (k, got) in j.components().into_iter().enumerate() {
            if !((got.to_f64() - x.jerk[k]).abs() <= tol * x.jerk_bound) {
                return Err(format!("target {i}, jerk[{k}]: got {got}, oracle {:e}", x.jerk[k]));
            }
        }
    }
    Ok(())
}

/// A deterministic case: `n_t` targets, `n_s` further sources, and targets
/// `shared.0..shared.0 + shared.2` inserted among the sources at `shared.1`. Coordinates
/// on the 2^-16 grid in [-1, 1] (exact distances), masses in (0, 1], softening 1/64.
pub(crate) fn big_case(n_t: usize, n_s: usize, (t0, s0, len): (usize, usize, usize)) -> Case {
    let mut state = 0x2545_f491_4f6c_dd1du64 ^ (n_t as u64);
    let mut next = move |k: i64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as i64 % k) as f64
    };
    let mut row = || {
        [next(131_073) - 65_536.0, next(131_073) - 65_536.0, next(131_073) - 65_536.0, next(1024) + 1.0]
            .map(|x| x / 65_536.0)
    };
    let targets: Vec<[f64; 4]> = (0..n_t).map(|_| row()).collect();
    let mut sources: Vec<[f64; 4]> = (0..n_s).map(|_| row()).collect();
    sources.splice(s0..s0, targets[t0..t0 + len].iter().copied());
    let velocities = (0..targets.len() + sources.len())
        .map(|_| [next(2001) - 1000.0, next(2001) - 1000.0, next(2001) - 1000.0].map(|v| v / 1000.0))
        .collect();
    Case {
        before: vec![[0.0; 4]; targets.len()],
        targets,
        sources,
        eps: 1.0 / 64.0,
        g: 1.0,
        potential: true,
        overlap: nbody_core::Overlap::Shared { target_start: t0, source_start: s0, len },
        velocities,
    }
}

/// One neighbour call on case `c` checked against the oracle (see the module docs).
fn check_case<T: Real, E: Executor<T>>(e: &mut E, c: &Case, capacity: usize, seed: u32, u: f64) -> Result<(), String> {
    let (t, s, p, before) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>(), c.before::<T>());
    let (tv, sv) = c.velocities::<T>();
    let (n, offset) = (t.len(), seed % 1000);
    let mut out = before.clone();
    let mut jerk = vec![Jerk::zero(); n];
    let prior = Buffers::<T>::new(n, capacity, seed);
    let mut b = Buffers::<T>::new(n, capacity, seed);
    let r = e.accelerations_jerk_neighbours(
        Bodies { pos: &t, vel: &tv },
        Bodies { pos: &s, vel: &sv },
        &p,
        &mut out,
        &mut jerk,
        &mut b.neighbours(offset),
    );
    r.map_err(|err| format!("{} failed: {err}", e.name()))?;
    let mut ex = vec![Exact::default(); n];
    oracle::field(&t, Some(&tv), &s, Some(&sv), &p, &mut ex).map_err(|err| err.to_string())?;
    compare(&out, &before, &ex, Path::Pairs, p.potential, u)?;
    let tol = tolerance(u, Path::Jerk);
    for (i, (j, x)) in jerk.iter().zip(&ex).enumerate() {
        for (k, got) in j.components().into_iter().enumerate() {
            if !((got.to_f64() - x.jerk[k]).abs() <= tol * x.jerk_bound) {
                return Err(format!("target {i}, jerk[{k}]: got {got}, oracle {:e}", x.jerk[k]));
            }
        }
    }
    let d = distances(c);
    for (i, d) in d.iter().enumerate() {
        check_nearest(i, d, prior.nearest[i], b.nearest[i], offset, slack(u))?;
        let list = (&b.indices[i * capacity..(i + 1) * capacity], b.counts[i]);
        let before = (&prior.indices[i * capacity..(i + 1) * capacity], prior.counts[i]);
        check_list(i, d, b.radius2[i].to_f64(), before, list, offset, slack(u))?;
    }
    Ok(())
}

fn check_nearest<T: Real>(
    i: usize,
    d: &[f64],
    prior: Nearest<T>,
    got: Nearest<T>,
    offset: u32,
    slack: f64,
) -> Result<(), String> {
    let best = d.iter().copied().fold(prior.r2.to_f64(), f64::min);
    let fail = |why: &str| Err(format!("target {i}: nearest {got:?} ({why}); closest at r2 = {best}, prior {prior:?}"));
    if got == prior {
        // Kept: no source may be clearly closer.
        return if d.iter().all(|&r2| r2 >= prior.r2.to_f64() * (1.0 - slack)) {
            Ok(())
        } else {
            fail("kept the prior")
        };
    }
    let Some(j) = got.index.checked_sub(offset).map(|j| j as usize).filter(|&j| j < d.len()) else {
        return fail("not a source index");
    };
    if !d[j].is_finite() {
        return fail("its own particle");
    }
    if (got.r2.to_f64() - d[j]).abs() > slack * d[j] {
        return fail("distance differs from the source's");
    }
    if d[j] > best * (1.0 + slack) + f64::MIN_POSITIVE {
        return fail("not the closest");
    }
    Ok(())
}

fn check_list(
    i: usize,
    d: &[f64],
    h2: f64,
    (prior, prior_count): (&[u32], u32),
    (slots, count): (&[u32], u32),
    offset: u32,
    slack: f64,
) -> Result<(), String> {
    let capacity = slots.len();
    let kept = (prior_count as usize).min(capacity);
    let fail = |why: String| Err(format!("target {i} (h2 = {h2}, capacity {capacity}): {why}; got {slots:?}"));
    if slots[..kept] != prior[..kept] {
        return fail("prior entries were changed".into());
    }
    let new = &slots[kept..(count as usize).min(capacity)];
    let mut seen = std::collections::BTreeSet::new();
    for &k in new {
        let Some(j) = k.checked_sub(offset).map(|j| j as usize).filter(|&j| j < d.len()) else {
            return fail(format!("{k} is not a source index"));
        };
        if !(d[j] <= h2 * (1.0 + slack)) || !seen.insert(j) {
            return fail(format!("source {j} (r2 = {}) listed wrongly or twice", d[j]));
        }
    }
    let must = d.iter().filter(|&&r2| r2 < h2 * (1.0 - slack)).count();
    let may = d.iter().filter(|&&r2| r2 <= h2 * (1.0 + slack)).count();
    let found = (count - prior_count) as usize;
    if found < must || found > may {
        return fail(format!("count {found}, between {must} and {may} expected"));
    }
    if count as usize <= capacity {
        if new.len() != found {
            return fail("stored entries differ from the count".into());
        }
        if d.iter().enumerate().any(|(j, &r2)| r2 < h2 * (1.0 - slack) && !seen.contains(&j)) {
            return fail("a source well inside the radius is missing".into());
        }
        if new.windows(2).any(|w| w[0] >= w[1]) {
            return fail("entries are not in increasing order".into());
        }
    }
    Ok(())
}

/// Bad neighbour buffers are refused before anything is written.
pub(crate) fn neighbour_bad_input<T: Real, E: Executor<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    let rows = [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], [0.0, 2.0, 0.0, 1.0]];
    let ps = crate::particles::<T>(&rows);
    let vs = vec![nbody_core::Velocity::new(T::zero(), T::zero(), T::zero()); 3];
    let b = Bodies { pos: &ps, vel: &vs };
    let p = nbody_core::Params::softened(T::from_f64(0.1)).with_overlap_identical();
    let mut attempt = |n_near: usize, h2: T, slots: usize, offset: u32| -> Result<(), Error> {
        let mut out = vec![Field::zero(); 3];
        let mut jerk = vec![Jerk::zero(); 3];
        let mut near = vec![Nearest::none(); n_near];
        let (radius2, mut indices, mut counts) = (vec![h2; 3], vec![7u32; slots], vec![0u32; 3]);
        let mut nb = Neighbours {
            nearest: &mut near,
            within: Some(Within { radius2: &radius2, capacity: 2, indices: &mut indices, counts: &mut counts }),
            index_offset: offset,
        };
        let r = e.accelerations_jerk_neighbours(b, b, &p, &mut out, &mut jerk, &mut nb);
        let untouched = out.iter().all(|f| *f == Field::zero())
            && near.iter().all(|x| *x == Nearest::none())
            && indices.iter().all(|&k| k == 7)
            && counts.iter().all(|&k| k == 0);
        if r.is_err() && !untouched {
            return Err(Error::InvalidParameter { name: "test", requirement: "outputs untouched on error" });
        }
        r
    };
    let one = T::one();
    let expect = |what: &str, r: Result<(), Error>, want: Error| match r {
        Err(got) if got == want => Ok(()),
        other => Err(format!("{what}: expected {want}, got {other:?}")),
    };
    expect(
        "short nearest",
        attempt(2, one, 6, 0),
        Error::LengthMismatch { what: "nearest neighbours", expected: 3, found: 2 },
    )?;
    expect(
        "short list",
        attempt(3, one, 5, 0),
        Error::LengthMismatch { what: "neighbour list slots", expected: 6, found: 5 },
    )?;
    let radius = Error::InvalidParameter { name: "neighbour radius", requirement: "finite and not negative" };
    expect("negative radius", attempt(3, -one, 6, 0), radius)?;
    expect("NaN radius", attempt(3, T::nan(), 6, 0), radius)?;
    let offset = Error::InvalidParameter { name: "index_offset", requirement: "index_offset + sources below 2^32 - 1" };
    expect("offset overflow", attempt(3, one, 6, u32::MAX - 1), offset)?;
    attempt(3, one, 6, 0).map_err(|err| format!("a good call failed: {err}"))
}
