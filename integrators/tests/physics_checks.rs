//! The integrator checks, with bounds the physics sets, written once for any executor:
//! `physics.rs` runs them on the reference and the CPU executor, and nbody-cuda's
//! `tests/physics.rs` includes this file to run them on the GPU.

#![allow(dead_code)]

use nbody_core::{Executor, Real};
use nbody_integrators::{Criterion, DormandPrince, Hermite, Hermite6, Leapfrog, State, ics};
use std::f64::consts::PI;

/// Max |x - y| over positions.
pub(crate) fn max_position_difference(a: &State<f64>, b: &State<f64>) -> f64 {
    a.pos
        .iter()
        .zip(&b.pos)
        .flat_map(|(p, q)| (0..3).map(move |k| (p.position()[k] - q.position()[k]).abs()))
        .fold(0.0, f64::max)
}

/// Leapfrog, e = 0.5, 1000 steps a period, 10 periods. The energy error of a symplectic
/// integrator oscillates with the orbit (largest at pericentre: 1.05e-4 here) and returns
/// at the same phase; it must not grow from period to period.
pub(crate) fn kepler_leapfrog<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
    let mut s = State::new(p, v);
    let period = 2.0 * PI;
    let mut lf = Leapfrog::new(period / 1000.0, 0.0).map_err(|x| x.to_string())?;
    let e0 = lf.diagnostics(&s, e).map_err(|x| x.to_string())?.total;
    let (mut within, mut at_end) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let mut worst: f64 = 0.0;
        for _ in 0..1000 {
            lf.step(&mut s, e).map_err(|x| x.to_string())?;
            let d = lf.diagnostics(&s, e).map_err(|x| x.to_string())?;
            worst = worst.max(((d.total - e0) / e0).abs());
        }
        within.push(worst);
        at_end.push(((lf.diagnostics(&s, e).map_err(|x| x.to_string())?.total - e0) / e0).abs());
    }
    if at_end.iter().any(|&x| x >= 1e-5) {
        return Err(format!("leapfrog Kepler |dE/E| at the end of each period: {at_end:?}"));
    }
    if within[9] > 1.01 * within[0] || within.iter().any(|&x| x >= 2e-4) {
        return Err(format!("energy error within each period drifts or is too large: {within:?}"));
    }
    Ok(())
}

/// Max |dE/E| at the end of each of 10 periods of the e = 0.5 Kepler orbit.
fn kepler_hermite_error<E: Executor<f64>>(h: &mut Hermite<f64>, e: &mut E) -> Result<f64, String> {
    kepler_energy_error(e, |s, e, t| h.advance_to(s, e, t), kepler_energy)
}

/// Total energy of a softening-free state (G = 1).
fn kepler_energy<E: Executor<f64>>(s: &State<f64>, e: &mut E) -> Result<f64, nbody_core::Error> {
    let mut field = vec![nbody_core::Field::zero(); s.len()];
    e.accelerations(&s.pos, &s.pos, &nbody_core::Params::softened(0.0).with_overlap_identical(), &mut field)?;
    Ok(nbody_integrators::diagnostics(s, &field).total)
}

/// Largest |dE/E| at the ends of the first 10 periods of the e = 0.5 Kepler orbit, with
/// `advance(state, executor, t)` stepping to time t.
fn kepler_energy_error<E: Executor<f64>>(
    e: &mut E,
    mut advance: impl FnMut(&mut State<f64>, &mut E, f64) -> Result<usize, nbody_core::Error>,
    energy: impl Fn(&State<f64>, &mut E) -> Result<f64, nbody_core::Error>,
) -> Result<f64, String> {
    let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
    let mut s = State::new(p, v);
    let e0 = energy(&s, e).map_err(|x| x.to_string())?;
    let mut worst: f64 = 0.0;
    for k in 1..=10 {
        advance(&mut s, e, 2.0 * PI * k as f64).map_err(|x| x.to_string())?;
        let e1 = energy(&s, e).map_err(|x| x.to_string())?;
        worst = worst.max(((e1 - e0) / e0).abs());
    }
    Ok(worst)
}

/// Hermite 4 (Makino & Aarseth's P(EC) scheme), e = 0.5, 10 periods, eta = 0.01 as the
/// step's fraction of the acceleration time scale (dt = eta |a| / |a'|): |dE/E| < 1e-9
/// at every period end (7.2e-10 measured).
pub(crate) fn kepler_hermite<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let mut h = Hermite::new(0.01, 0.0).map_err(|x| x.to_string())?.with_criterion(Criterion::AccelerationOverJerk);
    let err = kepler_hermite_error(&mut h, e)?;
    if err < 1e-9 { Ok(()) } else { Err(format!("Hermite Kepler |dE/E| = {err:e} at eta 0.01 (|a|/|a'| criterion)")) }
}

/// The same orbit with Aarseth's criterion (eta inside the square root, so eta = 0.01 is
/// a 10x longer step): fourth order (a quarter of eta, half the step, cuts the error at
/// least 16x), and with time-symmetric steps and P(EC)^2 the error stops drifting.
pub(crate) fn kepler_hermite_aarseth<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let run = |eta: f64, e: &mut E| -> Result<f64, String> {
        kepler_hermite_error(&mut Hermite::new(eta, 0.0).map_err(|x| x.to_string())?, e)
    };
    let (coarse, fine) = (run(0.01, e)?, run(0.0025, e)?);
    if !(coarse < 5e-5 && fine * 16.0 < coarse) {
        return Err(format!("Hermite (Aarseth) Kepler |dE/E|: {coarse:e} at eta 0.01, {fine:e} at eta 0.0025"));
    }
    let mut sym =
        Hermite::new(0.01, 0.0).map_err(|x| x.to_string())?.with_corrector_iterations(2).with_symmetric_steps(1);
    let err = kepler_hermite_error(&mut sym, e)?;
    if err * 10.0 < coarse {
        Ok(())
    } else {
        Err(format!("time-symmetric P(EC)^2 Hermite: |dE/E| {err:e}, plain {coarse:e}"))
    }
}

pub(crate) fn figure_eight<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let (p, v) = ics::figure_eight::<f64>();
    let start = State::new(p.clone(), v.clone());
    let mut s = start.clone();
    Hermite::new(0.0025, 0.0)
        .map_err(|x| x.to_string())?
        .advance_to(&mut s, e, ics::FIGURE_EIGHT_PERIOD)
        .map_err(|x| x.to_string())?;
    let dh = max_position_difference(&s, &start);
    let mut s = start.clone();
    DormandPrince::new(1e-12, 1e-12, 0.0)
        .map_err(|x| x.to_string())?
        .advance_to(&mut s, e, ics::FIGURE_EIGHT_PERIOD)
        .map_err(|x| x.to_string())?;
    let drk = max_position_difference(&s, &start);
    if dh < 1e-6 && drk < 1e-6 {
        Ok(())
    } else {
        Err(format!("figure-eight after one period: Hermite off by {dh:e}, Runge-Kutta by {drk:e}"))
    }
}

pub(crate) fn leapfrog_reversible<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let (p, v) = ics::plummer::<f64>(64, 5);
    let start = State::new(p, v);
    let mut s = start.clone();
    let mut lf = Leapfrog::new(1.0 / 256.0, 1.0 / 64.0).map_err(|x| x.to_string())?;
    for _ in 0..256 {
        lf.step(&mut s, e).map_err(|x| x.to_string())?;
    }
    lf.reverse();
    for _ in 0..256 {
        lf.step(&mut s, e).map_err(|x| x.to_string())?;
    }
    let d = max_position_difference(&s, &start);
    if d < 1e-10 { Ok(()) } else { Err(format!("forward then backward is off by {d:e}")) }
}

pub(crate) fn plummer_energy_and_momentum<T: Real, E: Executor<T>>(
    e: &mut E,
    momentum_bound: Option<f64>,
) -> Result<(), String> {
    let (p, v) = ics::plummer::<T>(1024, 8);
    let mut s = State::new(p, v);
    let mut lf = Leapfrog::new(1.0 / 256.0, T::from_f64(1.0 / 64.0)).map_err(|x| x.to_string())?;
    let d0 = lf.diagnostics(&s, e).map_err(|x| x.to_string())?;
    let speed_scale: f64 = s
        .pos
        .iter()
        .zip(&s.vel)
        .map(|(p, v)| Real::to_f64(p.m) * v.components().iter().map(|c| Real::to_f64(*c).abs()).sum::<f64>())
        .sum();
    for _ in 0..256 {
        lf.step(&mut s, e).map_err(|x| x.to_string())?;
    }
    let d1 = lf.diagnostics(&s, e).map_err(|x| x.to_string())?;
    let de = ((d1.total - d0.total) / d0.total).abs();
    if de >= 1e-4 {
        return Err(format!("{}: Plummer |dE/E| = {de:e}", T::NAME));
    }
    if let Some(bound) = momentum_bound {
        let dp = (0..3).map(|k| (d1.momentum[k] - d0.momentum[k]).abs()).fold(0.0, f64::max) / speed_scale;
        if dp >= bound {
            return Err(format!("{}: momentum changed by {dp:e} relative", T::NAME));
        }
    }
    Ok(())
}

/// Block steps on a Plummer sphere: energy is conserved as with shared steps, and most
/// block steps move only part of the system (N_i < N_j).
pub(crate) fn plummer_block_hermite<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let (p, v) = ics::plummer::<f64>(512, 9);
    let mut s = State::new(p, v);
    let dt_max = 1.0 / 64.0;
    let mut h = nbody_integrators::BlockHermite::new(0.01, dt_max, 1.0 / 64.0).map_err(|x| x.to_string())?;
    let e0 = h.diagnostics(&s, e).map_err(|x| x.to_string())?.total;
    let steps = h.advance_to(&mut s, e, 16.0 * dt_max).map_err(|x| x.to_string())?;
    let de = ((h.diagnostics(&s, e).map_err(|x| x.to_string())?.total - e0) / e0).abs();
    let active = h.mean_active_fraction();
    println!(
        "block Hermite, Plummer N = 512: {steps} block steps, mean active fraction {active:.3}, |dE/E| = {de:.2e}"
    );
    if de >= 1e-6 {
        return Err(format!("block Hermite |dE/E| = {de:e}"));
    }
    if active >= 0.9 {
        return Err(format!("block steps moved {active:.2} of the particles on average: no individual steps"));
    }
    Ok(())
}

/// Block steps on the Kepler orbit (both bodies share every step) match the shared-step
/// integrator's accuracy.
pub(crate) fn kepler_block_hermite<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
    let mut s = State::new(p, v);
    let dt_max = 2.0 * PI / 16.0;
    let mut h = nbody_integrators::BlockHermite::new(0.0025, dt_max, 0.0).map_err(|x| x.to_string())?;
    let e0 = h.diagnostics(&s, e).map_err(|x| x.to_string())?.total;
    h.advance_to(&mut s, e, 160.0 * dt_max).map_err(|x| x.to_string())?;
    let de = ((h.diagnostics(&s, e).map_err(|x| x.to_string())?.total - e0) / e0).abs();
    if de < 5e-6 { Ok(()) } else { Err(format!("block Hermite Kepler |dE/E| = {de:e} after 10 periods")) }
}

/// Largest distance from its start of either body after one period of the e = 0.5
/// Kepler orbit (semi-major axis 1, period 2 pi), with `h`.
fn kepler_hermite6_return<E: Executor<f64>>(mut h: Hermite6<f64>, e: &mut E) -> Result<f64, String> {
    let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
    let mut s = State::new(p.clone(), v);
    h.advance_to(&mut s, e, 2.0 * PI).map_err(|x| x.to_string())?;
    Ok(s.pos.iter().zip(&p).map(|(a, b)| ((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt()).fold(0.0, f64::max))
}

/// Hermite 6 (Nitadori & Makino 2008) converges at sixth order: on fixed steps over one
/// period of the e = 0.5 Kepler orbit, halving the step cuts the return error by about
/// 2^6 = 64 (69 measured; at least 40 asked); with adaptive steps at eta = 0.1 the energy error over
/// 10 periods stays below 1e-9.
pub(crate) fn kepler_hermite6_sixth_order<E: Executor<f64>>(e: &mut E) -> Result<(), String> {
    let run = |steps: f64, e: &mut E| {
        kepler_hermite6_return(Hermite6::fixed(2.0 * PI / steps, 0.0).map_err(|x| x.to_string())?, e)
    };
    let (coarse, fine) = (run(400.0, e)?, run(800.0, e)?);
    if !(coarse / fine > 40.0 && coarse < 1e-5) {
        return Err(format!("Hermite6 return error {coarse:e} at 400 steps, {fine:e} at 800: ratio {}", coarse / fine));
    }
    let mut h = Hermite6::new(0.1, 0.0).map_err(|x| x.to_string())?;
    let worst = kepler_energy_error(e, |s, e, t| h.advance_to(s, e, t), kepler_energy)?;
    let ratio = coarse / fine;
    eprintln!(
        "Hermite6: return errors {coarse:e}, {fine:e} (ratio {ratio:.1}); eta 0.1: |dE/E| {worst:e}, {} steps",
        h.steps()
    );
    if worst < 1e-9 {
        Ok(())
    } else {
        Err(format!("Hermite6 eta 0.1: |dE/E| {worst:e} over 10 periods ({} steps)", h.steps()))
    }
}
