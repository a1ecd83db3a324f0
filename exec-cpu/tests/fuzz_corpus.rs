//! Replays the committed fuzz corpus (fuzz/corpus/) through the fuzz targets' checks on
//! stable Rust, so CI exercises every saved input without a nightly toolchain.

use nbody_conformance::fuzz::{against_oracle, corpus, entry_points};
use nbody_core::Reference;
use nbody_cpu::{CpuExecutor, MixedExecutor, Parallelism};

#[test]
fn replay_entry_points() {
    let mut cpu = CpuExecutor::new(Parallelism::Sequential);
    let mut mixed = MixedExecutor::new(Parallelism::Sequential);
    for data in corpus("entry_points") {
        entry_points::<f32, _>(&mut Reference, &data);
        entry_points::<f64, _>(&mut Reference, &data);
        entry_points::<f32, _>(&mut cpu, &data);
        entry_points::<f64, _>(&mut cpu, &data);
        entry_points::<f64, _>(&mut mixed, &data);
    }
}

#[test]
fn replay_cpu_vs_reference() {
    let mut cpu = CpuExecutor::new(Parallelism::Sequential);
    let mut mixed = MixedExecutor::new(Parallelism::Sequential);
    for data in corpus("cpu_vs_reference") {
        against_oracle::<f32, _>(&mut cpu, &data, f32::EPSILON as f64);
        against_oracle::<f64, _>(&mut cpu, &data, f64::EPSILON);
        against_oracle::<f64, _>(&mut mixed, &data, f32::EPSILON as f64);
    }
}
