//! Accuracy figures on a 65,536-particle Plummer sphere (softening 1/256), against the
//! f64 oracle on every 64th particle (1,024 targets; the oracle on all would take
//! minutes): the per-particle relative acceleration error, max and median.

use crate::{Failed, exact, relative_acceleration_error};
use nbody_core::oracle::Exact;
use nbody_core::{Executor, Field, Overlap, Params, Particle, Real};

/// Targets compared against the oracle: every 64th.
const STRIDE: usize = 64;

/// The sphere the figures are measured on, in `T`.
pub fn plummer<T: Real>() -> Vec<Particle<T>> {
    nbody_integrators::ics::plummer::<T>(SPHERE_N, SPHERE_SEED).0
}

/// The sphere's size and seed.
const SPHERE_N: usize = 65_536;
const SPHERE_SEED: u64 = 3;

/// [`plummer`] in Morton order.
fn plummer_in_morton_order() -> Vec<Particle<f64>> {
    let (p, v) = nbody_integrators::ics::plummer::<f64>(SPHERE_N, SPHERE_SEED);
    nbody_integrators::ics::morton_sorted(&p, &v).0
}

/// Max and median per-particle relative acceleration error of `exec` on `bodies`.
pub fn error<T: Real, E: Executor<T>>(exec: &mut E, bodies: &[Particle<T>]) -> Result<(f64, f64), Failed> {
    error_against(exec, bodies, bodies)
}

/// As [`error`], against the oracle of `truth` (the same particles before rounding to
/// `T`), so that the rounding of the inputs counts too.
pub fn error_against<T: Real, U: Real, E: Executor<T>>(
    exec: &mut E,
    bodies: &[Particle<T>],
    truth_bodies: &[Particle<U>],
) -> Result<(f64, f64), Failed> {
    let params = Params::softened(T::from_f64(1.0 / 256.0)).with_overlap_identical();
    let mut out = vec![Field::zero(); bodies.len()];
    exec.accelerations(bodies, bodies, &params, &mut out).map_err(|e| e.to_string())?;
    let picks: Vec<usize> = (0..bodies.len()).step_by(STRIDE).collect();
    let got: Vec<Field<T>> = picks.iter().map(|&i| out[i]).collect();
    let mut truth = Vec::with_capacity(picks.len());
    for &i in &picks {
        let p = params.cast::<U>().with_overlap(Overlap::Shared { target_start: 0, source_start: i, len: 1 });
        truth.extend(exact(&truth_bodies[i..=i], truth_bodies, &p).map_err(|e| e.to_string())?);
    }
    Ok(relative_acceleration_error(&got, &truth))
}

/// `b` moved by 1e4 on every axis.
fn shifted(b: &[Particle<f64>]) -> Vec<Particle<f64>> {
    b.iter().map(|p| Particle::new(p.x + 1e4, p.y + 1e4, p.z + 1e4, p.m)).collect()
}

/// The same sphere in Morton order, at the origin and shifted by 1e4: the max error
/// below `bound` in both. The mixed executors take their float path for most source
/// tiles in this order, and their f32 partial sums then hold close neighbours together
/// (the CPU's, with rounded offsets only and tiles of 512, was at 4.0e-6 here).
pub fn mixed_in_morton_order<E: Executor<f64>>(mixed: &mut E, bound: f64) -> Result<(), Failed> {
    let sorted = plummer_in_morton_order();
    let name = mixed.name();
    check(&format!("{name} in Morton order at the origin"), error(mixed, &sorted)?, bound)?;
    check(&format!("{name} in Morton order shifted by 1e4"), error(mixed, &shifted(&sorted))?, bound)
}

/// Prints the figures and fails when the max is not below `bound`.
pub fn check(name: &str, (max, median): (f64, f64), bound: f64) -> Result<(), Failed> {
    println!("{name}: max relative acceleration error {max:.3e}, median {median:.3e} (bound {bound:e})");
    if max < bound { Ok(()) } else { Err(format!("{name}: max relative error {max:e} >= {bound:e}").into()) }
}

/// The mixed-precision figures: the max error below `bound` at the origin and with the
/// sphere shifted by 1e4 on every axis, and shifted at most twice the error at the
/// origin. Prints plain f32's error on the shifted sphere beside them when `plain` is
/// given (reported, not asserted).
pub fn mixed_at_origin_and_shifted<E: Executor<f64>, F: Executor<f32>>(
    mixed: &mut E,
    plain: Option<&mut F>,
    bound: f64,
) -> Result<(), Failed> {
    let b = plummer::<f64>();
    let shifted = shifted(&b);
    let at_origin = error(mixed, &b)?;
    let far = error(mixed, &shifted)?;
    let name = mixed.name();
    check(&format!("{name} at the origin"), at_origin, bound)?;
    check(&format!("{name} shifted by 1e4"), far, bound)?;
    if let Some(plain) = plain {
        let shifted32: Vec<_> = shifted.iter().map(|p| p.cast::<f32>()).collect();
        let (max, median) = error_against(plain, &shifted32, &shifted)?;
        println!("plain f32 shifted by 1e4: max relative error {max:.3e}, median {median:.3e}");
    }
    if far.0 <= 2.0 * at_origin.0 {
        Ok(())
    } else {
        Err(format!("shifted error {:e} is more than twice the error at the origin {:e}", far.0, at_origin.0).into())
    }
}

/// A clustered, mass-spread system of [`SPHERE_N`] particles in the generator's order:
/// two Plummer spheres, one of scale 1 and a denser one of scale 1/4 three units away,
/// one after the other, with log-normal masses (sigma 1.5, a spread over about four
/// decades) summing to 1. The kind of system the mixed executors exist for; unlike the
/// Plummer sphere, its particles at the blobs' centres have small net pulls summed from
/// large opposed ones, so the rounding of long f32 sums shows there.
pub fn clustered(seed: u64) -> Vec<Particle<f64>> {
    let half = SPHERE_N / 2;
    let (a, _) = nbody_integrators::ics::plummer::<f64>(half, 11);
    let (b, _) = nbody_integrators::ics::plummer::<f64>(SPHERE_N - half, 12);
    let mut rng = SplitMix(seed);
    let mut all: Vec<Particle<f64>> = a
        .iter()
        .map(|p| (p.x, p.y, p.z))
        .chain(b.iter().map(|p| (3.0 + 0.25 * p.x, 0.25 * p.y, 0.25 * p.z)))
        .map(|(x, y, z)| Particle::new(x, y, z, (1.5 * rng.normal()).exp()))
        .collect();
    let total: f64 = all.iter().map(|p| p.m).sum();
    all.iter_mut().for_each(|p| p.m /= total);
    all
}

/// The mixed-precision figures on [`clustered`] systems (seeds 1 and 3, the worst of
/// four), over every target (the worst are a few particles with small net pulls, which a
/// sample misses): the max error below `bound` in the generator's order, in Morton order
/// and shuffled (a file's order), each at the origin and shifted by 1e4 on every axis, and in the
/// generator's order with the targets a copy of the sources. The truth is `reference`'s field
/// (an f64 executor, itself within 1e-13 of the oracle: the f64 accuracy checks), once,
/// permuted for each order; a shift does not change it beyond 1e-12.
pub fn mixed_on_clustered<E: Executor<f64>, R: Executor<f64>>(
    mixed: &mut E,
    reference: &mut R,
    bound: f64,
) -> Result<(), Failed> {
    let name = mixed.name();
    for seed in [1, 3] {
        let generated = clustered(seed);
        let params = Params::softened(1.0 / 256.0).with_overlap_identical();
        let mut truth = vec![Field::zero(); generated.len()];
        reference.accelerations(&generated, &generated, &params, &mut truth).map_err(|e| e.to_string())?;
        let mut shuffled: Vec<u32> = (0..generated.len() as u32).collect();
        let mut rng = SplitMix(0x0bad_5eed);
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        let identity: Vec<u32> = (0..generated.len() as u32).collect();
        let mut morton = Vec::new();
        nbody_core::layout::morton_order(&generated, &mut morton);
        for (order, perm) in [("generated", identity), ("Morton", morton), ("shuffled", shuffled)] {
            let bodies = nbody_core::layout::gather(&generated, &perm);
            let want = as_exact(&nbody_core::layout::gather(&truth, &perm));
            // Once with the targets a copy of the sources (not the same slice), which an
            // executor cannot tell from other targets that share points with the sources.
            let copy = order == "generated";
            let cases = [("at the origin", bodies.clone(), false), ("shifted by 1e4", shifted(&bodies), false)]
                .into_iter()
                .chain(copy.then(|| ("at the origin, the targets a copy", bodies.clone(), true)));
            for (at, bodies, copy) in cases {
                let mut got = vec![Field::zero(); bodies.len()];
                let copied;
                let targets = if copy {
                    copied = bodies.clone();
                    &copied
                } else {
                    &bodies
                };
                mixed.accelerations(targets, &bodies, &params, &mut got).map_err(|e| e.to_string())?;
                let figures = relative_acceleration_error(&got, &want);
                check(&format!("{name} clustered {seed}, {order} order, {at}, every target"), figures, bound)?;
            }
        }
    }
    Ok(())
}

/// A 4,096-body Plummer sphere with every particle three times over (the copies at the
/// same points, as the targets too): the mixed executor's pairs at zero distance outside a
/// target's own chunk (groups of three straddle its 16-source chunks) must come out as
/// the oracle's, which has them pull nothing and add `-m / eps` to the potential.
/// Max relative acceleration error and max relative potential error below `bound`.
pub fn mixed_with_coincident_copies<E: Executor<f64>, R: Executor<f64>>(
    mixed: &mut E,
    reference: &mut R,
    bound: f64,
) -> Result<(), Failed> {
    let (sphere, _) = nbody_integrators::ics::plummer::<f64>(4096, 5);
    let bodies: Vec<Particle<f64>> = sphere.iter().flat_map(|&p| [p; 3]).collect();
    let params = Params::softened(1.0 / 256.0).with_overlap_identical();
    let mut truth = vec![Field::zero(); bodies.len()];
    reference.accelerations(&bodies, &bodies, &params, &mut truth).map_err(|e| e.to_string())?;
    let mut got = vec![Field::zero(); bodies.len()];
    mixed.accelerations(&bodies, &bodies, &params, &mut got).map_err(|e| e.to_string())?;
    let want = as_exact(&truth);
    let name = mixed.name();
    check(&format!("{name} with coincident copies"), relative_acceleration_error(&got, &want), bound)?;
    let phi = got.iter().zip(&truth).map(|(g, t)| ((g.phi - t.phi) / t.phi).abs()).fold(0.0, f64::max);
    match phi < bound {
        true => Ok(()),
        false => {
            Err(format!("{name} with coincident copies: max relative potential error {phi:e} >= {bound:e}").into())
        }
    }
}

/// An f64 executor's field as the truth that [`relative_acceleration_error`] reads.
fn as_exact(fields: &[Field<f64>]) -> Vec<Exact> {
    fields.iter().map(|f| Exact { acc: [f.ax, f.ay, f.az], phi: f.phi, ..Exact::default() }).collect()
}

/// SplitMix64: a seeded stream for the clustered system's masses and order.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * core::f64::consts::PI * v).cos()
    }
}
