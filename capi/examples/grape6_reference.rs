//! The library's own block-step Hermite on the executor the GRAPE layer would use, for
//! comparing costs with `grape6_hermite.c` on the same system: writes the initial
//! conditions for the C program, then integrates them and prints the wall time.
//!
//! `cargo run --release -p nbody-capi --features cuda --example grape6_reference -- N T_END ICS [BACKEND] [run]`
//!
//! BACKEND is a backend string (`cpu` by default, `cuda`, `cuda-mixed:0`, ...). With
//! `run`, the system goes through the library's run loop (`nbody::simulation`, what
//! `nbody run --integrator block-hermite` uses), which keeps every particle on the GPU
//! when the backend has one: the fastest the library itself integrates there, a
//! stricter yardstick than `BlockHermite` over the executor.

use nbody::simulation::{Plan, open_in};
use nbody_backends::Backend;
use nbody_integrators::{BlockHermite, Scheme, State, ics};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: grape6_reference N T_END ICS [BACKEND] [run]");
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
    let backend: Backend = args.get(4).map_or("cpu", String::as_str).parse().expect("a backend string");
    let mut opened = backend.open().expect("the backend opens");
    let start = std::time::Instant::now();
    let mut s = State::new(p, v);
    if args.get(5).map(String::as_str) == Some("run") {
        let plan = Plan { integrator: Scheme::BlockHermite, dt: dt_max, eta, ..Plan::new(eps) };
        let mut run = open_in::<f64>(&plan, s, opened).expect("the run opens");
        let steps = run.sim.advance_to(t_end).expect("the run");
        let place = if run.on_device { "on the device" } else { "on the host" };
        println!(
            "library run loop (block steps, {place}) on {backend}: {steps} block steps in {:.6} s",
            start.elapsed().as_secs_f64()
        );
        return;
    }
    let mut h = BlockHermite::new(eta, dt_max, eps).expect("settings");
    let mut exec = opened.f64();
    let steps = h.advance_to(&mut s, &mut exec, t_end).expect("the run");
    let force = h.timing().force.as_secs_f64();
    println!(
        "library BlockHermite on {backend}: {steps} block steps in {:.6} s, {force:.6} s in force calls",
        start.elapsed().as_secs_f64()
    );
}
