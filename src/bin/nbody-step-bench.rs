//! Integrator cost on the CPU: the share of a step's wall time spent outside the force
//! calls (kicks, drifts, predictor, corrector, step selection), for leapfrog and
//! Hermite on a Plummer sphere. `--n N` (default 65,536), `--steps S` (default 3).

use clap::Parser;
use nbody::cpu::{CpuExecutor, Parallelism};
use nbody::integrators::{Hermite, Leapfrog, State, StepTiming, ics};

/// The integrators' share of a step outside the force calls, on the CPU.
#[derive(Parser, Debug)]
#[command(name = "nbody-step-bench")]
struct Args {
    /// Particles.
    #[arg(long, default_value_t = 65_536)]
    n: usize,
    /// Timed steps (after one warm-up step).
    #[arg(long, default_value_t = 3)]
    steps: usize,
}

fn main() {
    let Args { n, steps } = Args::parse();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut cpu = CpuExecutor::new(Parallelism::Threads(threads));
    let (p, v) = ics::plummer::<f64>(n, 1);
    let label = format!("f64, N = {n}, {threads} threads");
    let mut s = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(1.0 / 256.0, 1.0 / 64.0).expect("valid settings");
    measure("leapfrog", &label, steps, || {
        lf.step(&mut s, &mut cpu).expect("step");
        lf.timing()
    });
    let mut s = State::new(p, v);
    let mut h = Hermite::new(0.01, 1.0 / 64.0).expect("valid settings");
    measure("hermite (shared steps)", &label, steps, || {
        h.step(&mut s, &mut cpu, f64::INFINITY).expect("step");
        h.timing()
    });
}

/// One warm-up step (first force call, pool start), then `steps` timed steps; `step`
/// returns the integrator's running timing. Prints the integrator's share of a step.
fn measure(name: &str, label: &str, steps: usize, mut step: impl FnMut() -> StepTiming) {
    let before = step();
    let mut t = before;
    for _ in 0..steps {
        t = step();
    }
    let (total, force) = ((t.total - before.total).as_secs_f64(), (t.force - before.force).as_secs_f64());
    println!(
        "{name} {label}: {:.4} s/step, force {:.4} s, rest {:.3}% of the step",
        total / steps as f64,
        force / steps as f64,
        100.0 * (total - force) / total
    );
}
