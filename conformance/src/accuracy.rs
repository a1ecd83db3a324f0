//! Accuracy figures on a 65,536-particle Plummer sphere (softening 1/256), against the
//! f64 oracle on every 64th particle (1,024 targets; the oracle on all would take
//! minutes): the per-particle relative acceleration error, max and median.

use crate::{exact, relative_acceleration_error, Failed};
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
    if max < bound {
        Ok(())
    } else {
        Err(format!("{name}: max relative error {max:e} >= {bound:e}").into())
    }
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
