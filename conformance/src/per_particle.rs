//! A softening length per particle ([`Executor::accelerations_per_particle`] and its
//! batched form), Plummer and spline: each executor matches the oracle or refuses with
//! [`Error::Unsupported`] and leaves its outputs as they were; bad lengths are refused
//! with errors naming the array and index.

use crate::r#gen::{Case, cases};
use crate::spline::computed;
use crate::{Path, compare};
use nbody_core::oracle::{self, Exact};
use nbody_core::{
    Array, Error, Executor, Field, InteractionList, Overlap, Pair, Params, Particle, PerParticle, Real, Softening, Span,
};

/// Lengths for the case's particles: two species (one softened at up to 4 times the
/// case's ε, one at ε or, in cases with ε = 0, unsoftened), chosen by the particle's
/// mass bits so a particle that is both a target and a source has one length.
fn lengths<T: Real>(c: &Case) -> (Vec<T>, Vec<T>) {
    let of = |r: &[f64; 4]| {
        let k = (r[3] * 1024.0) as u32 + (r[0] * 65_536.0).abs() as u32;
        let eps = if c.eps == 0.0 && k.is_multiple_of(3) { 0.0 } else { c.eps.max(1.0 / 128.0) * (1 + k % 4) as f64 };
        T::from_f64(eps)
    };
    (c.targets.iter().map(of).collect(), c.sources.iter().map(of).collect())
}

/// Whether the executor declares per-particle lengths with `p`'s kernel.
fn declared<T: Real, E: Executor<T>>(e: &E, p: &Params<T>) -> bool {
    e.capabilities().computes(nbody_core::capabilities::Entry::PerParticle, p.softening)
}

pub(crate) fn per_particle_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(32, 64), |e, c: Case| {
        let (t, s, before) = (c.targets::<T>(), c.sources::<T>(), c.before::<T>());
        let (te, se) = lengths::<T>(&c);
        for &softening in Softening::ALL {
            let name = softening.name();
            let p = c.params::<T>().with_softening(softening);
            let eps = PerParticle { targets: &te, sources: &se };
            plain_matches(e, (&t, &s), eps, &p, &before, u).map_err(|err| format!("{name} per particle: {err}"))?;
            // A system on itself: one slice of particles and one of lengths as both
            // targets and sources (an executor may send them once).
            let q = p.with_overlap_identical();
            let zero = vec![Field::zero(); s.len()];
            let mut out = zero.clone();
            let on_itself = PerParticle { targets: &se, sources: &se };
            if computed(
                name,
                declared(e, &q),
                e.accelerations_per_particle(&s, &s, on_itself, &q, &mut out),
                &out,
                &zero,
            )? {
                let mut ex = vec![Exact::default(); s.len()];
                oracle::field_per_particle(&s, &s, on_itself, &q, &mut ex).map_err(|err| err.to_string())?;
                compare(&out, &zero, &ex, Path::Spline, q.potential, u)
                    .map_err(|err| format!("{name} per particle on itself: {err}"))?;
            }
            // Batched: the targets against targets and sources in one array, in two
            // source spans (the targets' own pairs inside the first: self terms removed).
            let (nt, ns) = (t.len() as u32, s.len() as u32);
            let all: Vec<Particle<T>> = t.iter().chain(&s).copied().collect();
            let all_eps: Vec<T> = te.iter().chain(&se).copied().collect();
            let pairs = [Pair { targets: Span::new(0, nt), sources: Span::new(0, 2) }];
            let spans = [Span::new(0, nt), Span::new(nt, nt + ns)];
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let before_all: Vec<Field<T>> = before.iter().copied().chain(vec![Field::zero(); s.len()]).collect();
            let mut out = before_all.clone();
            let batch = e.accelerations_batch_per_particle(&all, &all_eps, &list, &p, &mut out);
            if computed(name, declared(e, &p), batch, &out, &before_all)? {
                let q = p.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: t.len() });
                let mut ex = vec![Exact::default(); t.len()];
                let eps = PerParticle { targets: &te, sources: &all_eps };
                oracle::field_per_particle(&t, &all, eps, &q, &mut ex).map_err(|err| err.to_string())?;
                compare(&out[..t.len()], &before, &ex, Path::Spline, p.potential, u)
                    .map_err(|err| format!("{name} batched per particle: {err}"))?;
                if out[t.len()..] != before_all[t.len()..] {
                    return Err(format!("{name} batched per particle: wrote outside the pairs' targets"));
                }
            }
        }
        Ok(())
    })
}

/// One plain per-particle call from `before` against the oracle (or a refusal that left
/// `before` as it was).
fn plain_matches<T: Real, E: Executor<T>>(
    e: &mut E,
    (t, s): (&[Particle<T>], &[Particle<T>]),
    eps: PerParticle<'_, T>,
    p: &Params<T>,
    before: &[Field<T>],
    u: f64,
) -> Result<(), String> {
    let mut out = before.to_vec();
    if computed(p.softening.name(), declared(e, p), e.accelerations_per_particle(t, s, eps, p, &mut out), &out, before)?
    {
        let mut ex = vec![Exact::default(); t.len()];
        oracle::field_per_particle(t, s, eps, p, &mut ex).map_err(|err| err.to_string())?;
        compare(&out, before, &ex, Path::Spline, p.potential, u)?;
    }
    Ok(())
}

/// Equal lengths give what `Params::eps` gives: the per-particle path is the same
/// physics, not a neighbour of it.
pub(crate) fn per_particle_equal_lengths<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(24, 48), |e, c: Case| {
        let (t, s, before) = (c.targets::<T>(), c.sources::<T>(), c.before::<T>());
        let p = c.params::<T>();
        let (te, se) = (vec![p.eps; t.len()], vec![p.eps; s.len()]);
        let mut out = before.clone();
        let eps = PerParticle { targets: &te, sources: &se };
        if computed(
            "equal lengths",
            declared(e, &p),
            e.accelerations_per_particle(&t, &s, eps, &p, &mut out),
            &out,
            &before,
        )? {
            let ex = crate::exact(&t, &s, &p).map_err(|err| err.to_string())?;
            compare(&out, &before, &ex, Path::Spline, p.potential, u).map_err(|err| format!("equal lengths: {err}"))?;
        }
        Ok(())
    })
}

/// A negative, NaN or infinite length, a length array of the wrong size and a shared
/// particle with two lengths are refused with errors naming them; nothing is written.
pub(crate) fn per_particle_bad_input<T: Real, E: Executor<T>>(e: &mut E, _u: f64) -> Result<(), String> {
    let t = |v: f64| T::from_f64(v);
    let ps: Vec<Particle<T>> = (0..3).map(|k| Particle::new(t(k as f64), t(0.0), t(0.0), t(1.0))).collect();
    let before = vec![Field::new(t(0.5), t(0.25), t(-1.0), t(2.0)); 3];
    let good = vec![t(0.01); 3];
    let params = Params::softened(t(0.0));
    let with = |k: usize, v: T| {
        let mut l = good.clone();
        l[k] = v;
        l
    };
    let cases: [BadLengths<T>; 5] = [
        ("a negative target length", with(1, t(-0.5)), good.clone(), params, neg(Array::TargetSoftening, 1)),
        ("a NaN source length", good.clone(), with(2, T::nan()), params, non_finite(Array::SourceSoftening, 2)),
        (
            "an infinite source length",
            good.clone(),
            with(0, T::infinity()),
            params,
            non_finite(Array::SourceSoftening, 0),
        ),
        (
            "too few source lengths",
            good.clone(),
            good[..2].to_vec(),
            params,
            Error::LengthMismatch { what: "source softening lengths", expected: 3, found: 2 },
        ),
        (
            "a shared particle with two lengths",
            good.clone(),
            with(1, t(0.02)),
            params.with_overlap_identical(),
            Error::OverlapMismatch { target: 1, source: 1 },
        ),
    ];
    for (what, te, se, p, want) in cases {
        let mut out = before.clone();
        match e.accelerations_per_particle(&ps, &ps, PerParticle { targets: &te, sources: &se }, &p, &mut out) {
            Err(got) if got == want => {}
            other => return Err(format!("{what}: expected {want:?}, got {other:?}")),
        }
        if out != before {
            return Err(format!("{what}: the output changed"));
        }
    }
    let pairs = [Pair { targets: Span::new(0, 3), sources: Span::new(0, 1) }];
    let list = InteractionList { pairs: &pairs, source_spans: &[Span::new(0, 3)] };
    let mut out = before.clone();
    let want = neg(Array::Softening, 2);
    match e.accelerations_batch_per_particle(&ps, &with(2, t(-1.0)), &list, &params, &mut out) {
        Err(got) if got == want && out == before => Ok(()),
        other => Err(format!("a batched negative length: expected {want:?} and no output, got {other:?}")),
    }
}

/// What a bad call names, its target and source lengths, its parameters, the error.
type BadLengths<T> = (&'static str, Vec<T>, Vec<T>, Params<T>, Error);

fn neg(array: Array, index: usize) -> Error {
    Error::NegativeSoftening { array, index }
}

fn non_finite(array: Array, index: usize) -> Error {
    Error::NonFinite { array, index }
}

/// Many source tiles whose lengths differ from tile to tile (runs of 300 sources: tiny,
/// unsoftened, a support of 0.3 that holds many pairs, 1/64), targets of four lengths
/// with shared particles keeping theirs, and few targets against many sources (an
/// executor may split the sources among blocks): both kernels, potential on, against
/// the oracle. Executors that bound a tile's pairs by its largest support meet every
/// case of that bound here.
pub(crate) fn per_particle_many_tiles<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    // Target lengths repeating every 4 targets (where a kernel gives each thread targets a
    // multiple of 4 apart, each thread holds one length) and in runs of 3 (every thread
    // several).
    for (n_t, n_s, shared, run) in [(700, 2_600, (10, 1_000, 40), 1), (37, 30_000, (5, 12_345, 25), 3)] {
        let c = crate::neighbours::big_case(n_t, n_s, shared);
        let (t, s, before) = (c.targets::<T>(), c.sources::<T>(), c.before::<T>());
        let te: Vec<T> = (0..t.len()).map(|i| T::from_f64([0.0, 1.0 / 512.0, 1.0 / 32.0, 0.2][i / run % 4])).collect();
        let (t0, s0, len) = shared;
        let se: Vec<T> = (0..s.len())
            .map(|j| match j.checked_sub(s0) {
                Some(k) if k < len => te[t0 + k],
                _ => T::from_f64([1.0 / 1024.0, 0.0, 0.3, 1.0 / 64.0][(j / 300) % 4]),
            })
            .collect();
        for &softening in Softening::ALL {
            let p = c.params::<T>().with_softening(softening);
            let eps = PerParticle { targets: &te, sources: &se };
            plain_matches(e, (&t, &s), eps, &p, &before, u)
                .map_err(|err| format!("{} per particle, {n_t} x {}: {err}", softening.name(), s.len()))?;
        }
    }
    Ok(())
}
