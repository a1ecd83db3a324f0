//! The example programs, built against the library this test run built and run: the C
//! Plummer check (and every bad call), the C tree code on the batched call, the Fortran
//! 2003 program; the first one linked the one-line pkg-config way from an installed
//! prefix. Needs a C compiler and gfortran (the CI install script adds them).

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/<profile> holding libnbody_c.a, built with this test's features (cargo
/// test builds the library as an rlib only; the static library is built here, once).
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let mut cargo = Command::new(env!("CARGO"));
            cargo.args(["build", "-p", "nbody-capi", "--lib"]);
            if cfg!(feature = "cuda") {
                cargo.args(["--features", "cuda"]);
            }
            let status = cargo.current_dir(env!("CARGO_MANIFEST_DIR")).status().expect("cargo runs");
            assert!(status.success(), "building libnbody_c.a failed");
            let exe = std::env::current_exe().expect("the test binary's path");
            exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
        })
        .clone()
}

/// The libraries a static libnbody_c needs (Rust's runtime; libcuda when built with CUDA).
fn native() -> Vec<&'static str> {
    let mut libs = NATIVE.to_vec();
    if cfg!(feature = "cuda") {
        libs.push("-lcuda");
    }
    libs
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

const NATIVE: [&str; 7] = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];

fn build_and_run(compiler: &str, source: &str, flags: &[&str], out: &Path) -> String {
    let lib = lib_dir().join("libnbody_c.a");
    assert!(lib.is_file(), "{} missing: build nbody-capi first", lib.display());
    let status = Command::new(compiler)
        .arg("-O2")
        .args(flags)
        .arg(examples().join(source))
        .arg(&lib)
        .args(native())
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} not found ({e}): install gcc and gfortran (scripts/install-c.sh)"));
    assert!(status.success(), "{compiler} failed on {source}");
    let run = Command::new(out).output().expect("the example runs");
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{source} failed:\n{text}{}", String::from_utf8_lossy(&run.stderr));
    text
}

#[test]
fn c_plummer_matches_its_own_double_loop_and_refuses_bad_calls() {
    let dir = tempfile::tempdir().unwrap();
    let include = format!("-I{}/include", env!("CARGO_MANIFEST_DIR"));
    let text = build_and_run("cc", "plummer.c", &["-std=c11", "-D_DEFAULT_SOURCE", &include], &dir.path().join("p"));
    assert!(text.contains("passed") && !text.contains("FAIL"), "{text}");
    assert!(text.contains("targets[5] has a NaN"), "{text}");
}

#[test]
fn c_tree_code_calls_the_batched_api_once_per_force_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let include = format!("-I{}/include", env!("CARGO_MANIFEST_DIR"));
    let text = build_and_run("cc", "tree.c", &["-std=c11", "-D_DEFAULT_SOURCE", &include], &dir.path().join("t"));
    assert!(text.contains("passed"), "{text}");
}

#[test]
fn fortran_program_through_iso_c_binding() {
    let dir = tempfile::tempdir().unwrap();
    let text = build_and_run("gfortran", "plummer.f90", &[], &dir.path().join("f"));
    assert!(text.contains("passed") && text.contains("output has length 999"), "{text}");
}

/// Installed as scripts/install-capi.sh installs it, a C program links in one line.
#[test]
fn pkg_config_links_in_one_line() {
    let prefix = tempfile::tempdir().unwrap();
    let p = prefix.path();
    std::fs::create_dir_all(p.join("lib/pkgconfig")).unwrap();
    std::fs::create_dir_all(p.join("include")).unwrap();
    std::fs::copy(lib_dir().join("libnbody_c.a"), p.join("lib/libnbody_c.a")).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/nbody.h"), p.join("include/nbody.h")).unwrap();
    let template = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("nbody.pc.in")).unwrap();
    let pc = template
        .replace("@PREFIX@", &p.display().to_string())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("@PRIVATE@", &native().join(" "));
    std::fs::write(p.join("lib/pkgconfig/nbody.pc"), pc).unwrap();
    let exe = p.join("plummer");
    let script = format!(
        "cc -std=c11 -D_DEFAULT_SOURCE {} -o {} $(pkg-config --static --cflags --libs nbody)",
        examples().join("plummer.c").display(),
        exe.display()
    );
    let status = Command::new("sh")
        .args(["-c", &script])
        .env("PKG_CONFIG_PATH", p.join("lib/pkgconfig"))
        .status()
        .expect("sh runs");
    assert!(status.success(), "{script}");
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stdout));
}
