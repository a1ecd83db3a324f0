//! Compiles kernels/gravity.cu with nvcc into one fatbin: SASS for sm_90 (H100/H200)
//! plus compute_60 PTX that the driver JIT-compiles on any older GPU with f64 atomics.

use std::path::{Path, PathBuf};
use std::process::Command;

fn nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        return Some(PathBuf::from(p));
    }
    let mut candidates: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|root| Path::new(&root).join("bin/nvcc"))
        .collect();
    candidates.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nvcc")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

fn main() {
    let source = "kernels/gravity.cu";
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-changed=kernels/args.h");
    println!("cargo:rerun-if-env-changed=NVCC");
    let Some(nvcc) = nvcc() else {
        panic!(
            "nbody-cuda needs nvcc (the CUDA toolkit) to compile {source}, and none was found in $NVCC, \
             $CUDA_PATH/bin, /usr/local/cuda/bin or $PATH. On Debian run scripts/install-cuda.sh \
             (package nvidia-cuda-toolkit from non-free); elsewhere install the CUDA toolkit, or build \
             without the `cuda` feature / without the nbody-cuda crate."
        )
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("gravity.fatbin");
    let status = Command::new(&nvcc)
        .args(["-fatbin", "-O3", "-ftz=true", "-std=c++14"])
        .args(["-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_60,code=compute_60"])
        .arg("-o")
        .arg(&out)
        .arg(source)
        .status()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", nvcc.display()));
    assert!(status.success(), "nvcc failed to compile {source} (status {status})");
}
