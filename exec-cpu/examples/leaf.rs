//! Leaf-sized calls: time per call of `targets` x `sources` on 1 and 2 threads, back to
//! back (as a tree code issues them), against the dense rate.
//! `cargo run --release -p nbody-cpu --example leaf -- 64 1000`

use nbody_core::{Executor, Field, Params, Particle};
use nbody_cpu::{CpuExecutor, Parallelism};
use std::time::Instant;

fn per_call(e: &mut CpuExecutor, t: &[Particle<f32>], s: &[Particle<f32>], reps: usize) -> f64 {
    let params = Params::softened(0.01f32).acceleration_only();
    let mut out = vec![Field::zero(); t.len()];
    for _ in 0..reps / 10 {
        e.accelerations(t, s, &params, &mut out).unwrap();
    }
    let mut times: Vec<f64> = (0..9)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                e.accelerations(t, s, &params, &mut out).unwrap();
            }
            start.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[4]
}

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).filter_map(|x| x.parse().ok()).collect();
    let (nt, ns) = (a.first().copied().unwrap_or(64), a.get(1).copied().unwrap_or(1000));
    let (all, _) = nbody_integrators::ics::plummer::<f32>(ns.max(nt).max(16384), 1);
    for threads in [1, 2] {
        let mut e = CpuExecutor::new(Parallelism::threads(threads));
        // About 0.2 s of calls per timed set, whatever the size.
        let reps = (5e8 / (nt * ns) as f64).clamp(10.0, 20_000.0) as usize;
        let leaf = per_call(&mut e, &all[..nt], &all[..ns], reps);
        let dense = per_call(&mut e, &all[..16384], &all[..16384], 3);
        let rate = 16384.0 * 16384.0 / dense;
        println!(
            "{threads} thread(s): {nt} x {ns}: {:.2} us per call; dense rate {rate:.3e}/s; beyond the interactions {:+.2} us",
            leaf * 1e6,
            (leaf - (nt * ns) as f64 / rate) * 1e6
        );
    }
}
