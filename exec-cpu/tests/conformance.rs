//! The conformance suite against the CPU executor: every instruction set this CPU has,
//! both precisions, sequential and two threads. Instruction sets the CPU lacks are
//! reported as ignored.

use nbody_conformance::{run, suite, suite_with_roundoff, Trial};
use nbody_core::Error;
use nbody_cpu::{CpuExecutor, Isa, MixedExecutor, Parallelism};

fn main() {
    let mut trials: Vec<Trial> = Vec::new();
    for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable] {
        for (par, tag) in [(Parallelism::Sequential, "seq"), (Parallelism::Threads(2), "par2")] {
            let make =
                move || if isa.is_available() { Ok(CpuExecutor::with_isa(par, isa)) } else { Err(Error::NoDevice) };
            trials.extend(suite::<f32, _>(&format!("cpu-{}-{tag}/f32", isa.name()), make));
            trials.extend(suite::<f64, _>(&format!("cpu-{}-{tag}/f64", isa.name()), make));
            let mixed =
                move || if isa.is_available() { Ok(MixedExecutor::with_isa(par, isa)) } else { Err(Error::NoDevice) };
            trials.extend(suite_with_roundoff::<f64, _>(
                &format!("cpu-{}-{tag}/mixed", isa.name()),
                f32::EPSILON as f64,
                mixed,
            ));
        }
    }
    run(trials);
}
