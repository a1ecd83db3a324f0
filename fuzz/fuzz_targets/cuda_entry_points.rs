//! The `entry_points` and `cpu_vs_reference` checks on the CUDA executor: every entry
//! point on arbitrary input is an error or a result, never a panic, finite in the finite
//! range, and agrees with the f64 oracle on valid input. One executor (one CUDA context)
//! serves every input. Built without AddressSanitizer (see Cargo.toml).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbody_conformance::fuzz::{against_oracle, entry_points};
use nbody_cuda::CudaExecutor;
use std::sync::Mutex;

static GPU: Mutex<Option<CudaExecutor>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut slot = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = slot.get_or_insert_with(|| CudaExecutor::new().expect("a CUDA device"));
    entry_points::<f32, _>(gpu, data);
    entry_points::<f64, _>(gpu, data);
    against_oracle::<f32, _>(gpu, data, f32::EPSILON as f64);
    against_oracle::<f64, _>(gpu, data, f64::EPSILON);
});
