//! Integrator cost on the CPU: the share of a step's wall time spent outside the force
//! calls (kicks, drifts, predictor, corrector, step selection), for leapfrog and
//! Hermite on a Plummer sphere. `--n N` (default 65,536), `--steps S` (default 3).

use nbody::cpu::{CpuExecutor, Parallelism};
use nbody::integrators::{ics, Hermite, Leapfrog, State};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n, steps) = (arg("--n", 65_536), arg("--steps", 3));
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut cpu = CpuExecutor::new(Parallelism::Threads(threads));
    let (p, v) = ics::plummer::<f64>(n, 1);
    let mut s = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(1.0 / 256.0, 1.0 / 64.0).expect("valid settings");
    lf.step(&mut s, &mut cpu).expect("step"); // warm-up: first force call and pool start
    let before = lf.timing();
    for _ in 0..steps {
        lf.step(&mut s, &mut cpu).expect("step");
    }
    let t = lf.timing();
    let (total, force) = ((t.total - before.total).as_secs_f64(), (t.force - before.force).as_secs_f64());
    println!(
        "leapfrog f64, N = {n}, {threads} threads: {:.4} s/step, force {:.4} s, rest {:.3}% of the step",
        total / steps as f64,
        force / steps as f64,
        100.0 * (total - force) / total
    );
    let mut s = State::new(p, v);
    let mut h = Hermite::new(0.01, 1.0 / 64.0).expect("valid settings");
    h.step(&mut s, &mut cpu, f64::INFINITY).expect("step");
    let before = h.timing();
    for _ in 0..steps {
        h.step(&mut s, &mut cpu, f64::INFINITY).expect("step");
    }
    let t = h.timing();
    let (total, force) = ((t.total - before.total).as_secs_f64(), (t.force - before.force).as_secs_f64());
    println!(
        "hermite (shared steps) f64, N = {n}, {threads} threads: {:.4} s/step, force {:.4} s, rest {:.3}% of the step",
        total / steps as f64,
        force / steps as f64,
        100.0 * (total - force) / total
    );
}
