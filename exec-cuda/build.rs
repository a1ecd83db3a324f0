//! Compiles kernels/gravity.cu (which includes the kernels by job, kernels/*.cuh) with
//! nvcc into one fatbin: SASS for sm_90 (H100/H200)
//! plus compute_60 PTX that the driver JIT-compiles on any older GPU with f64 atomics.
//! Compiles kernels/sort.cu (CUB's radix sort and scan, for the device tree) into a
//! static library linked with the static CUDA runtime, so a binary needs no libcudart
//! at run time, only the driver.
//!
//! With `NBODY_NVCC_CACHE` naming a folder, each output is kept there under a key of the
//! kernels' sources, the flags and nvcc's version, and taken from there when the key
//! matches: the debug, release and wheel builds of one CI run compile the kernels once.

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
    // gravity.cu includes the kernels by job from the same folder.
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-env-changed=NVCC");
    let Some(nvcc) = nvcc() else {
        panic!(
            "nbody-cuda needs nvcc (the CUDA toolkit) to compile {source}, and none was found in $NVCC, \
             $CUDA_PATH/bin, /usr/local/cuda/bin or $PATH. On Debian run scripts/install-cuda.sh \
             (package nvidia-cuda-toolkit from non-free); elsewhere install the CUDA toolkit, or build \
             without the `cuda` feature / without the nbody-cuda crate."
        )
    };
    println!("cargo:rerun-if-env-changed=NBODY_NVCC_CACHE");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("gravity.fatbin");
    let flags = ["-fatbin", "-O3", "-ftz=true", "-std=c++14"];
    cached(&nvcc, &flags, source, &out, || compile(&nvcc, &flags, source, &out));
    cub_library(&nvcc, out.parent().expect("OUT_DIR"));
}

/// nvcc `flags` and the gencode pairs on `source`, into `out`.
fn compile(nvcc: &Path, flags: &[&str], source: &str, out: &Path) {
    let status = Command::new(nvcc)
        .args(flags)
        .args(GENCODE)
        .arg("-o")
        .arg(out)
        .arg(source)
        .status()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", nvcc.display()));
    assert!(status.success(), "nvcc failed to compile {source} (status {status})");
}

/// Puts nvcc's output for `source` at `out`: from `NBODY_NVCC_CACHE` when an entry's key
/// (every file of kernels/, the flags, the gencode pairs and `nvcc --version`) matches,
/// else by `compile`, whose output is then stored there (written whole, then renamed).
fn cached(nvcc: &Path, flags: &[&str], source: &str, out: &Path, compile: impl FnOnce()) {
    use std::hash::{Hash, Hasher};
    let Some(dir) = std::env::var_os("NBODY_NVCC_CACHE").map(PathBuf::from) else {
        return compile();
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let version = Command::new(nvcc).arg("--version").output().map(|o| o.stdout).unwrap_or_default();
    (version, flags, GENCODE, source).hash(&mut h);
    let mut files: Vec<PathBuf> =
        std::fs::read_dir("kernels").expect("the kernels folder").filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in &files {
        (f, std::fs::read(f).expect("reading a kernel source")).hash(&mut h);
    }
    let name = out.file_name().expect("an output file").to_string_lossy();
    let entry = dir.join(format!("{:016x}-{name}", h.finish()));
    if std::fs::copy(&entry, out).is_ok() {
        return;
    }
    compile();
    let _ = std::fs::create_dir_all(&dir);
    let partial = dir.join(format!("{}.partial-{}", entry.display(), std::process::id()));
    if std::fs::copy(out, &partial).is_ok() {
        let _ = std::fs::rename(&partial, &entry);
    }
}

/// The gencode pairs both compilations use.
const GENCODE: [&str; 4] = ["-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_60,code=compute_60"];

/// kernels/sort.cu as `libnbody_cub.a`, linked with the static CUDA runtime (found
/// beside nvcc, under $CUDA_PATH or in the system library folders).
fn cub_library(nvcc: &Path, dir: &Path) {
    let source = "kernels/sort.cu";
    println!("cargo:rerun-if-changed={source}");
    let object = dir.join("sort.o");
    let flags = ["-c", "-O3", "-std=c++14", "-Xcompiler", "-fPIC"];
    cached(nvcc, &flags, source, &object, || compile(nvcc, &flags, source, &object));
    let archive = dir.join("libnbody_cub.a");
    let _ = std::fs::remove_file(&archive);
    let status = Command::new("ar")
        .arg("crs")
        .arg(&archive)
        .arg(&object)
        .status()
        .unwrap_or_else(|e| panic!("could not run ar: {e}"));
    assert!(status.success(), "ar failed to archive {} (status {status})", object.display());
    let mut folders: Vec<PathBuf> =
        ["CUDA_PATH", "CUDA_HOME"].iter().filter_map(std::env::var_os).map(|r| Path::new(&r).join("lib64")).collect();
    if let Some(bin) = nvcc.canonicalize().ok().as_deref().and_then(Path::parent) {
        folders.push(bin.join("../lib64"));
    }
    folders.extend(["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"].map(PathBuf::from));
    let Some(runtime) = folders.iter().find(|d| d.join("libcudart_static.a").is_file()) else {
        panic!("nbody-cuda links CUB's sort with libcudart_static.a, which none of {folders:?} holds")
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=nbody_cub");
    println!("cargo:rustc-link-search=native={}", runtime.display());
    println!("cargo:rustc-link-lib=static=cudart_static");
    for lib in ["stdc++", "dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}
