//! The CPU executor (f32, f64, mixed) against the f64 oracle on arbitrary valid input,
//! within the conformance suite's tolerance.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbody_conformance::fuzz::against_oracle;
use nbody_cpu::{CpuExecutor, MixedExecutor, Parallelism};

fuzz_target!(|data: &[u8]| {
    let mut cpu = CpuExecutor::new(Parallelism::Sequential);
    against_oracle::<f32, _>(&mut cpu, data, f32::EPSILON as f64);
    against_oracle::<f64, _>(&mut cpu, data, f64::EPSILON);
    against_oracle::<f64, _>(&mut MixedExecutor::new(Parallelism::Sequential), data, f32::EPSILON as f64);
});
