//! Integrator tests with bounds the physics sets (physics_checks.rs), run with the
//! reference and the CPU executor; nbody-cuda's tests/physics.rs runs the same checks
//! on the GPU.

mod physics_checks;

use nbody_core::Reference;
use nbody_cpu::{CpuExecutor, Parallelism};
use physics_checks::*;

fn cpu() -> CpuExecutor {
    CpuExecutor::new(Parallelism::Sequential)
}

#[test]
fn kepler_e05_leapfrog_1000_steps_per_period_no_drift() {
    kepler_leapfrog(&mut Reference).expect("reference");
    kepler_leapfrog(&mut cpu()).expect("cpu");
}

#[test]
fn kepler_e05_hermite_eta_001() {
    kepler_hermite(&mut Reference).expect("reference");
    kepler_hermite(&mut cpu()).expect("cpu");
}

#[test]
fn kepler_e05_hermite_aarseth_fourth_order_and_symmetric() {
    kepler_hermite_aarseth(&mut Reference).expect("reference");
    kepler_hermite_aarseth(&mut cpu()).expect("cpu");
}

#[test]
fn figure_eight_returns_after_one_period() {
    figure_eight(&mut Reference).expect("reference");
    figure_eight(&mut cpu()).expect("cpu");
}

#[test]
fn leapfrog_forward_then_backward_returns() {
    leapfrog_reversible(&mut Reference).expect("reference");
    leapfrog_reversible(&mut cpu()).expect("cpu");
}

#[test]
fn plummer_1024_leapfrog_energy_and_momentum() {
    plummer_energy_and_momentum::<f64, _>(&mut Reference, Some(1e-12)).expect("reference f64");
    plummer_energy_and_momentum::<f64, _>(&mut cpu(), Some(1e-12)).expect("cpu f64");
    plummer_energy_and_momentum::<f32, _>(&mut Reference, None).expect("reference f32");
    plummer_energy_and_momentum::<f32, _>(&mut cpu(), None).expect("cpu f32");
}

#[test]
fn block_time_steps_plummer_and_kepler() {
    plummer_block_hermite(&mut Reference).expect("reference");
    plummer_block_hermite(&mut cpu()).expect("cpu");
    kepler_block_hermite(&mut Reference).expect("reference");
    kepler_block_hermite(&mut cpu()).expect("cpu");
}
