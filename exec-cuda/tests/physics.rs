//! The integrator checks of nbody-integrators (its tests/physics_checks.rs, included
//! here) run on the GPU. Without a device they are reported as ignored.

#[path = "../../integrators/tests/physics_checks.rs"]
mod physics_checks;

use nbody_conformance::{Failed, Trial, run};
use nbody_core::Error;
use nbody_core::{Particle, Velocity};
use nbody_cuda::{CudaExecutor, CudaMixedExecutor};
use nbody_integrators::{BlockHermite, Hermite, State, ics};
use nbody_integrators::{HermiteCheckpoint, ResidentHermite, Steps};
use physics_checks::*;

fn on_gpu(check: impl FnOnce(&mut CudaExecutor) -> Result<(), String>) -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(|e| Failed::from(e.to_string()))?;
    check(&mut gpu).map_err(Failed::from)
}

fn on_mixed(check: impl FnOnce(&mut CudaExecutor) -> Result<(), String>) -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(|e| Failed::from(e.to_string()))?;
    check(mixed.executor()).map_err(Failed::from)
}

fn main() {
    let has_device = !matches!(CudaExecutor::new(), Err(Error::NoDevice));
    type Check = fn() -> Result<(), Failed>;
    let checks: Vec<(&str, Check)> = vec![
        ("kepler_e05_leapfrog_1000_steps_per_period_no_drift", || on_gpu(kepler_leapfrog)),
        ("kepler_e05_hermite_eta_001", || on_gpu(kepler_hermite)),
        ("kepler_e05_hermite_aarseth_fourth_order_and_symmetric", || on_gpu(kepler_hermite_aarseth)),
        ("figure_eight_returns_after_one_period", || on_gpu(figure_eight)),
        ("leapfrog_forward_then_backward_returns", || on_gpu(leapfrog_reversible)),
        ("plummer_1024_leapfrog_f64_energy_and_momentum", || {
            on_gpu(|g| plummer_energy_and_momentum::<f64, _>(g, Some(1e-12)))
        }),
        ("plummer_1024_leapfrog_f32_energy", || on_gpu(|g| plummer_energy_and_momentum::<f32, _>(g, None))),
        ("block_time_steps_plummer", || on_gpu(plummer_block_hermite)),
        ("block_time_steps_kepler", || on_gpu(kepler_block_hermite)),
        ("device_block_hermite_agrees_with_block_hermite", || on_gpu(device_block_hermite)),
        ("kepler_hermite6_sixth_order", || on_gpu(kepler_hermite6_sixth_order)),
        ("device_shared_hermite_agrees_with_hermite", || on_gpu(device_shared_hermite)),
        ("device_hermite_resumes_bit_for_bit_shared_and_block", || on_gpu(device_hermite_resumes)),
        ("mixed_device_hermite_resumes_bit_for_bit", || on_mixed(device_hermite_resumes)),
        ("hermite_kernels_equal_the_rules_bit_for_bit", || on_gpu(hermite_kernels_follow_the_rules)),
        // The mixed-precision kernels (f32 interactions, f64 sums): the same schemes,
        // ending where the f64 reference ends to f32-interaction accuracy.
        ("mixed_device_block_hermite_agrees_with_block_hermite", || {
            on_mixed(|g| device_block_hermite_within(g, 1e-5, 20))
        }),
        ("mixed_device_shared_hermite_agrees_with_hermite", || on_mixed(|g| device_shared_hermite_within(g, 1e-5, 2))),
        ("mixed_plummer_1024_leapfrog_energy_and_momentum", || {
            let mut mixed = CudaMixedExecutor::new().map_err(|e| Failed::from(e.to_string()))?;
            plummer_energy_and_momentum::<f64, _>(&mut mixed, Some(1e-6)).map_err(Failed::from)
        }),
    ];
    let trials = checks
        .into_iter()
        .map(|(name, f)| Trial::test(format!("cuda::{name}"), f).with_ignored_flag(!has_device))
        .collect();
    run(trials);
}

/// Largest difference in position or velocity over the particles, and the largest
/// coordinate (for scale).
fn largest_difference(a: &State<f64>, p: &[Particle<f64>], v: &[Velocity<f64>]) -> (f64, f64) {
    let mut worst: f64 = 0.0;
    for i in 0..p.len() {
        let d = [a.pos[i].x - p[i].x, a.pos[i].y - p[i].y, a.pos[i].z - p[i].z];
        let dv = [a.vel[i].vx - v[i].vx, a.vel[i].vy - v[i].vy, a.vel[i].vz - v[i].vz];
        worst = d.into_iter().chain(dv).fold(worst, |m, x| m.max(x.abs()));
    }
    let scale = p.iter().map(|q| q.x.abs().max(q.y.abs()).max(q.z.abs())).fold(0.0, f64::max);
    (worst, scale)
}

/// The device-resident block-step Hermite takes BlockHermite's block steps (on the
/// reference executor) and ends where it ends: the same scheme, summed in another order.
fn device_block_hermite(gpu: &mut CudaExecutor) -> Result<(), String> {
    device_block_hermite_within(gpu, 1e-8, 50)
}

/// [`device_block_hermite`] with the largest difference allowed (relative to the largest
/// coordinate) and the block steps allowed to differ by one in `slack`.
fn device_block_hermite_within(gpu: &mut CudaExecutor, tolerance: f64, slack: usize) -> Result<(), String> {
    let (p, v) = ics::plummer::<f64>(512, 5);
    let (eta, dt_max, eps, t_end) = (0.02, 1.0 / 16.0, 1.0 / 64.0, 0.25);
    let mut host = State::new(p.clone(), v.clone());
    let mut reference = BlockHermite::new(eta, dt_max, eps).map_err(|e| e.to_string())?;
    let mut cpu = nbody_core::Reference;
    let host_steps = reference.advance_to(&mut host, &mut cpu, t_end).map_err(|e| e.to_string())?;
    let mut dev =
        ResidentHermite::new(gpu, &p, &v, 0.0, eta, eps, Steps::Block { dt_max }).map_err(|e| e.to_string())?;
    while dev.time() < t_end {
        dev.step(gpu, t_end).map_err(|e| e.to_string())?;
    }
    if !dev.synchronized() {
        return Err("not every particle is at t_end".into());
    }
    let (mut pd, mut vd) = (p.clone(), v.clone());
    dev.download(gpu, &mut pd, &mut vd).map_err(|e| e.to_string())?;
    let (worst, scale) = largest_difference(&host, &pd, &vd);
    let steps = dev.steps() as usize;
    if steps.abs_diff(host_steps) > host_steps / slack || worst.is_nan() || worst > tolerance * scale {
        return Err(format!(
            "device {steps} block steps, host {host_steps}; largest difference {worst:e} (scale {scale})"
        ));
    }
    Ok(())
}

/// The device-resident shared-step Hermite against nbody-integrators' Hermite.
fn device_shared_hermite(gpu: &mut CudaExecutor) -> Result<(), String> {
    device_shared_hermite_within(gpu, 1e-9, 0)
}

/// [`device_shared_hermite`] with the largest difference allowed (relative to the
/// largest coordinate) and the steps allowed to differ by `slack`.
fn device_shared_hermite_within(gpu: &mut CudaExecutor, tolerance: f64, slack: usize) -> Result<(), String> {
    let (p, v) = ics::plummer::<f64>(512, 6);
    let (eta, eps, t_end) = (0.02, 1.0 / 64.0, 0.125);
    let mut host = State::new(p.clone(), v.clone());
    let mut reference = Hermite::new(eta, eps).map_err(|e| e.to_string())?;
    let mut cpu = nbody_core::Reference;
    let mut host_steps = 0;
    while host.time < t_end {
        let left = t_end - host.time;
        reference.step(&mut host, &mut cpu, left).map_err(|e| e.to_string())?;
        host_steps += 1;
    }
    let mut dev = ResidentHermite::new(gpu, &p, &v, 0.0, eta, eps, Steps::Shared).map_err(|e| e.to_string())?;
    while dev.time() < t_end {
        dev.step(gpu, t_end).map_err(|e| e.to_string())?;
    }
    let (mut pd, mut vd) = (p.clone(), v.clone());
    dev.download(gpu, &mut pd, &mut vd).map_err(|e| e.to_string())?;
    let (worst, scale) = largest_difference(&host, &pd, &vd);
    let steps = dev.steps() as usize;
    if steps.abs_diff(host_steps) > slack || worst.is_nan() || worst > tolerance * scale {
        return Err(format!("device {steps} steps, host {host_steps}; largest difference {worst:e} (scale {scale})"));
    }
    Ok(())
}

/// A device Hermite integration checkpointed mid-run (block steps: with particles on
/// several levels and not synchronized) and resumed on a fresh integration continues
/// exactly as the uninterrupted one: every position, velocity, derivative, time, step
/// and level equal, bit for bit.
fn device_hermite_resumes(gpu: &mut CudaExecutor) -> Result<(), String> {
    let (p, v) = ics::plummer::<f64>(512, 3);
    let eps = 1.0 / 64.0;
    for steps in [Steps::Shared, Steps::Block { dt_max: 1.0 / 16.0 }] {
        let e = |e: Error| format!("{steps:?}: {e}");
        let mut whole = ResidentHermite::new(gpu, &p, &v, 0.0, 0.02, eps, steps).map_err(e)?;
        for _ in 0..7 {
            whole.step(gpu, 0.5).map_err(e)?;
        }
        let saved: HermiteCheckpoint<f64> = whole.checkpoint(gpu).map_err(e)?;
        if let Steps::Block { .. } = steps
            && saved.levels.iter().filter(|l| !l.is_empty()).count() < 2
        {
            return Err(format!("{steps:?}: the checkpoint should hold several levels"));
        }
        let mut resumed = ResidentHermite::resume(gpu, &saved, 0.02, eps, steps).map_err(e)?;
        for _ in 0..9 {
            whole.step(gpu, 0.5).map_err(e)?;
            resumed.step(gpu, 0.5).map_err(e)?;
        }
        let (a, b) = (whole.checkpoint(gpu).map_err(e)?, resumed.checkpoint(gpu).map_err(e)?);
        if a != b {
            let first = (0..a.records.len())
                .find(|&i| a.records.pos[i] != b.records.pos[i] || a.records.vel[i] != b.records.vel[i]);
            return Err(format!(
                "{steps:?}: resumed run differs (time {} vs {}, first particle {first:?})",
                a.time, b.time
            ));
        }
        let mut bad = saved.clone();
        bad.records.t.pop();
        if ResidentHermite::resume(gpu, &bad, 0.02, eps, steps).is_ok() {
            return Err(format!("{steps:?}: a checkpoint short of one time was taken"));
        }
    }
    Ok(())
}

/// The device's predictor and corrector (shared and block steps) on random states give
/// exactly what `nbody_integrators::rules` gives: the scheme has one definition.
fn hermite_kernels_follow_the_rules(gpu: &mut CudaExecutor) -> Result<(), String> {
    use nbody_cuda::{KernelCase, hermite_kernels};
    use nbody_integrators::rules;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut r = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let (t, eta, dt_max) = (0.375, 0.02, 0.125);
    let mut cases: Vec<KernelCase> = (0..4096)
        .map(|k| {
            let mut v3 = |s: f64| [s * r(), s * r(), s * r()];
            // Times on the block grid below t, steps from dt_max / 2^12 to dt_max.
            let dt = dt_max / f64::powi(2.0, k % 13);
            KernelCase { x: v3(10.0), v: v3(1.0), a0: v3(3.0), j0: v3(30.0), a1: v3(3.0), j1: v3(30.0), t0: t - dt }
        })
        .collect();
    // A particle without force: the criterion gives no finite step.
    cases[0].a0 = [0.0; 3];
    cases[0].a1 = [0.0; 3];
    cases[0].j0 = [0.0; 3];
    cases[0].j1 = [0.0; 3];
    let got = hermite_kernels(gpu, &cases, t, eta, dt_max).map_err(|e| e.to_string())?;
    let dt_min = dt_max / 1_099_511_627_776.0;
    for (k, (c, g)) in cases.iter().zip(&got).enumerate() {
        let h = t - c.t0;
        let (px, pv) = rules::predict(c.x, c.v, c.a0, c.j0, h);
        let (x1, v1, a2, a3) = rules::correct([c.x, c.v, c.a0, c.j0, c.a1, c.j1], h);
        let want = rules::next_step(eta, h, c.a1, c.j1, a2, a3);
        let block = rules::block_step(want, h, t, dt_max, dt_min);
        let same = |a: [f64; 3], b: [f64; 3]| a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits());
        if !(same(px, g.px) && same(pv, g.pv) && same(x1, g.x1) && same(v1, g.v1)) {
            return Err(format!(
                "case {k}: predictor or corrector differs: {c:?} gave {g:?}, rules {px:?} {pv:?} {x1:?} {v1:?}"
            ));
        }
        if want.to_bits() != g.want.to_bits() || block.to_bits() != g.block.to_bits() {
            return Err(format!("case {k}: steps differ: device {} and {}, rules {want} and {block}", g.want, g.block));
        }
    }
    Ok(())
}
