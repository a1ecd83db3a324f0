//! The library's own block-step Hermite on the executor the GRAPE layer would use, for
//! comparing costs with `grape6_hermite.c` on the same system: writes the initial
//! conditions for the C program, then integrates them and prints the wall time.
//!
//! `cargo run --release -p nbody-capi --features cuda --example grape6_reference -- N T_END ICS [cuda|cpu|cuda-device]`
//!
//! `cuda-device` runs the library's device-resident block Hermite (`DeviceHermite`, what
//! `nbody run --integrator block-hermite --executor cuda` uses) instead: the fastest
//! the library itself integrates on that GPU, a stricter yardstick than `BlockHermite`
//! over the executor.

use nbody_core::Executor;
use nbody_integrators::{BlockHermite, State, ics};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: grape6_reference N T_END ICS [cuda|cpu|cuda-device]");
        std::process::exit(2);
    }
    let (n, t_end): (usize, f64) = (args[1].parse().expect("N"), args[2].parse().expect("T_END"));
    let (eta, dt_max, eps) = (0.02, 1.0 / 16.0, 1.0 / 64.0);
    let (p, v) = ics::plummer::<f64>(n, 7);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&args[3]).expect("the ICs file"));
    writeln!(f, "{n}").unwrap();
    for (p, v) in p.iter().zip(&v) {
        writeln!(f, "{} {} {} {} {} {} {}", p.x, p.y, p.z, p.m, v.vx, v.vy, v.vz).unwrap();
    }
    drop(f);
    #[cfg(feature = "cuda")]
    if args.get(4).map(String::as_str) == Some("cuda-device") {
        let mut gpu = nbody_cuda::CudaExecutor::new().expect("a GPU");
        let steps = nbody_cuda::Steps::Block { dt_max };
        let start = std::time::Instant::now();
        let mut h = nbody_cuda::DeviceHermite::new(&mut gpu, &p, &v, 0.0, eta, eps, steps).expect("the upload");
        while h.time() < t_end {
            h.step(&mut gpu, t_end).expect("a block step");
        }
        println!(
            "library DeviceHermite (block steps) on cuda: {} block steps in {:.6} s",
            h.steps(),
            start.elapsed().as_secs_f64()
        );
        return;
    }
    let mut exec: Box<dyn Executor<f64>> = match args.get(4).map(String::as_str) {
        #[cfg(feature = "cuda")]
        Some("cuda") => Box::new(nbody_cuda::CudaExecutor::new().expect("a GPU")),
        _ => Box::new(nbody_cpu::CpuExecutor::new(nbody_cpu::Parallelism::threads(
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        ))),
    };
    let mut s = State::new(p, v);
    let mut h = BlockHermite::new(eta, dt_max, eps).expect("settings");
    let start = std::time::Instant::now();
    let steps = h.advance_to(&mut s, &mut exec, t_end).expect("the run");
    let force = h.timing().force.as_secs_f64();
    println!(
        "library BlockHermite on {}: {steps} block steps in {:.6} s, {force:.6} s in force calls",
        exec.name(),
        start.elapsed().as_secs_f64()
    );
}
