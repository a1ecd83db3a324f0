//! Replays the committed fuzz corpus (fuzz/corpus/) through the fuzz targets' checks on
//! stable Rust, so CI exercises every saved input without a nightly toolchain.

use nbody_conformance::fuzz::{against_oracle, entry_points};
use nbody_core::Reference;
use nbody_cpu::{CpuExecutor, MixedExecutor, Parallelism};
use std::path::Path;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))).collect()
}

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
