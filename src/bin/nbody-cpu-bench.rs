//! CPU benchmark: interactions per second against N for every kernel variant (instruction
//! set x precision x threads, and mixed precision), beside a plain scalar loop compiled
//! in the same binary. Acceleration only, N_i = N_j = N, Plummer sphere; median of
//! repeated runs after a warm-up. `--sizes a,b` picks sizes, `--json PATH` writes JSON.

use clap::Parser;
use nbody::bench::{median_time, scalar_loop};
use nbody::core::{Executor, Field, Params};
use nbody::cpu::{CpuExecutor, Isa, MixedExecutor, Parallelism};
use serde_json::json;

/// Every CPU kernel variant against N, beside a plain scalar loop.
#[derive(Parser, Debug)]
#[command(name = "nbody-cpu-bench")]
struct Args {
    /// Sizes N (targets = sources), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1024,4096,16384")]
    sizes: Vec<usize>,
    /// Seconds of timed calls per point (the median is reported).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Writes the results as JSON here.
    #[arg(long, value_name = "PATH")]
    json: Option<String>,
}

fn main() {
    let args = Args::parse();
    let (sizes, budget) = (args.sizes.clone(), args.seconds);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "CPU: {} logical cores, best ISA {}; acceleration only; median of runs after a warm-up",
        cores,
        Isa::detect().name()
    );
    println!("{:>8} {:>10} {:>6} {:>8} {:>14} {:>9}", "N", "variant", "prec", "threads", "interact/s", "GFLOP/s20");
    let mut rows = Vec::new();
    let mut report = |n: usize, variant: &str, prec: &str, threads: usize, secs: f64| {
        let rate = (n * n) as f64 / secs;
        println!("{n:>8} {variant:>10} {prec:>6} {threads:>8} {rate:>14.3e} {:>9.1}", rate * 20.0 * 1e-9);
        rows.push(json!({"n": n, "variant": variant, "precision": prec, "threads": threads,
            "seconds": secs, "interactions_per_second": rate, "gflops_20": rate * 20e-9}));
    };
    for &n in &sizes {
        let (p32, _) = nbody::integrators::ics::plummer::<f32>(n, 1);
        let (p64, _) = nbody::integrators::ics::plummer::<f64>(n, 1);
        let mut o32 = vec![Field::zero(); n];
        let mut o64 = vec![Field::zero(); n];
        let par32 = Params::softened(1.0f32 / 256.0).acceleration_only();
        let par64 = Params::softened(1.0f64 / 256.0).acceleration_only();
        for threads in [1, 2].into_iter().filter(|&t| t <= cores.max(2)) {
            let par = Parallelism::threads(threads);
            for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable].into_iter().filter(|i| i.is_available()) {
                let mut cpu = CpuExecutor::with_isa(par, isa);
                let t = median_time(budget, || cpu.accelerations(&p32, &p32, &par32, &mut o32).unwrap());
                report(n, isa.name(), "f32", threads, t);
                let t = median_time(budget, || cpu.accelerations(&p64, &p64, &par64, &mut o64).unwrap());
                report(n, isa.name(), "f64", threads, t);
            }
            let mut mixed = MixedExecutor::new(par);
            let t = median_time(budget, || mixed.accelerations(&p64, &p64, &par64, &mut o64).unwrap());
            report(n, "mixed", "f64/f32", threads, t);
        }
        let t = median_time(budget, || scalar_loop(&p32, 1.0 / 65_536.0, &mut o32));
        report(n, "scalar", "f32", 1, t);
        let t = median_time(budget, || scalar_loop(&p64, 1.0 / 65_536.0, &mut o64));
        report(n, "scalar", "f64", 1, t);
    }
    if let Some(path) = args.json {
        let doc = json!({"commit": option_env!("NBODY_COMMIT").unwrap_or("unknown"), "cores": cores,
            "isa": Isa::detect().name(), "timing": "median wall time of repeated calls after one warm-up", "results": rows});
        if let Err(e) = std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap_or_default()) {
            eprintln!("error: writing {path}: {e}");
            std::process::exit(1);
        }
    }
}
