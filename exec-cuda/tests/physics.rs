//! The integrator checks of nbody-integrators (its tests/physics_checks.rs, included
//! here) run on the GPU. Without a device they are reported as ignored.

#[path = "../../integrators/tests/physics_checks.rs"]
mod physics_checks;

use nbody_conformance::{run, Failed, Trial};
use nbody_core::Error;
use nbody_cuda::CudaExecutor;
use physics_checks::*;

fn on_gpu(check: impl FnOnce(&mut CudaExecutor) -> Result<(), String>) -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(|e| Failed::from(e.to_string()))?;
    check(&mut gpu).map_err(Failed::from)
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
    ];
    let trials = checks
        .into_iter()
        .map(|(name, f)| Trial::test(format!("cuda::{name}"), f).with_ignored_flag(!has_device))
        .collect();
    run(trials);
}
