//! Every entry point of every CPU-side executor, on arbitrary particles, sizes and
//! parameters: an error or a result, never a panic; finite output in the finite range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbody_conformance::fuzz::entry_points;
use nbody_core::Reference;
use nbody_cpu::{CpuExecutor, MixedExecutor, Parallelism};

fuzz_target!(|data: &[u8]| {
    entry_points::<f32, _>(&mut Reference, data);
    entry_points::<f64, _>(&mut Reference, data);
    let mut cpu = CpuExecutor::new(Parallelism::Sequential);
    entry_points::<f32, _>(&mut cpu, data);
    entry_points::<f64, _>(&mut cpu, data);
    entry_points::<f64, _>(&mut MixedExecutor::new(Parallelism::Sequential), data);
});
