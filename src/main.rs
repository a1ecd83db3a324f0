//! The `nbody` command. Until the full CLI lands, running it with no arguments computes
//! the forces in a Plummer sphere with the fastest CPU executor and prints what it found
//! and how fast.

use nbody::cpu::{CpuExecutor, Parallelism};
use nbody::{Executor, Field, Params};
use std::time::Instant;

fn main() {
    let n = 16_384;
    let (bodies, velocities) = nbody::integrators::ics::plummer::<f64>(n, 2026);
    let params = Params::softened(1.0 / 64.0).with_overlap_identical();
    let mut field = vec![Field::zero(); n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut cpu = CpuExecutor::new(Parallelism::Threads(threads));
    let start = Instant::now();
    if let Err(e) = cpu.accelerations(&bodies, &bodies, &params, &mut field) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let seconds = start.elapsed().as_secs_f64();
    let potential: f64 = 0.5 * bodies.iter().zip(&field).map(|(b, f)| b.m * f.phi).sum::<f64>();
    let kinetic: f64 = bodies
        .iter()
        .zip(&velocities)
        .map(|(b, v)| 0.5 * b.m * v.components().iter().map(|c| c * c).sum::<f64>())
        .sum();
    let force: [f64; 3] =
        core::array::from_fn(|k| bodies.iter().zip(&field).map(|(b, f)| b.m * f.acceleration()[k]).sum());
    println!(
        "Plummer sphere, N = {n}, eps = 1/64, f64, CPU executor ({}, {} threads)",
        cpu.isa().name(),
        cpu.threads()
    );
    println!(
        "  interactions        {:.3e} in {:.3} s = {:.3e} interactions/s",
        (n * n) as f64,
        seconds,
        (n * n) as f64 / seconds
    );
    println!("  kinetic energy      {kinetic:.5}");
    println!("  potential energy    {potential:.5}   (softened; -0.5 for a point-mass Plummer sphere)");
    println!("  total energy        {:.5}   (-0.25 in standard units)", kinetic + potential);
    println!("  virial ratio 2T/|W| {:.4}", 2.0 * kinetic / potential.abs());
    println!("  net force sum m a   [{:.1e}, {:.1e}, {:.1e}]   (Newton's third law: ~0)", force[0], force[1], force[2]);
}
