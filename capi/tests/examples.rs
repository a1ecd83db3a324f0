//! The example programs, built against the library this test run built and run: the C
//! Plummer check (and every bad call), the C tree code on the batched call, the C tree
//! leapfrog (nbody_tree_run_*), the Fortran
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
            if !cfg!(debug_assertions) {
                cargo.arg("--release"); // beside this test binary, in target/release
            }
            let status = cargo.current_dir(env!("CARGO_MANIFEST_DIR")).status().expect("cargo runs");
            assert!(status.success(), "building libnbody_c.a failed");
            let exe = std::env::current_exe().expect("the test binary's path");
            exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
        })
        .clone()
}

/// The libraries a static libnbody_c needs (Rust's runtime; with CUDA, libcuda and the
/// C++ runtime that CUB's sort, bundled with the static CUDA runtime, was compiled against).
fn native() -> Vec<&'static str> {
    let mut libs = NATIVE.to_vec();
    if cfg!(feature = "cuda") {
        libs.extend(["-lcuda", "-lstdc++"]);
    }
    libs
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

const NATIVE: [&str; 7] = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];

fn build_and_run(compiler: &str, source: &str, flags: &[&str], out: &Path) -> String {
    build_and_run_with(compiler, source, flags, out, &[]).0
}

/// As [`build_and_run`], passing `args` and returning stderr too. GRAPE programs run on
/// two CPU threads where the machine has two (a backend refuses more threads than cores).
fn build_and_run_with(compiler: &str, source: &str, flags: &[&str], out: &Path, args: &[&str]) -> (String, String) {
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
    let run = Command::new(out)
        .args(args)
        .env("NBODY_GRAPE_EXECUTOR", "cpu")
        .env("NBODY_GPUNB_EXECUTOR", "cpu:1")
        .env("NBODY_GRAPE_THREADS", nbody_backends::available_threads().min(2).to_string())
        .output()
        .expect("the example runs");
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{source} failed:\n{text}{err}");
    (text, err)
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
fn c_tree_leapfrog_keeps_its_energy_and_refuses_bad_calls() {
    let dir = tempfile::tempdir().unwrap();
    let include = format!("-I{}/include", env!("CARGO_MANIFEST_DIR"));
    let flags = ["-std=c11", "-D_DEFAULT_SOURCE", &include];
    let (text, _) = build_and_run_with("cc", "tree_run.c", &flags, &dir.path().join("r"), &["cpu", "2048", "16"]);
    assert!(text.contains("host tree") && text.contains("all checks passed"), "{text}");
    assert!(text.contains("n is 2047, the run holds 2048 particles") && text.contains("theta"), "{text}");
    assert!(
        text.contains("loaded and stepped 4 more: the same bits")
            && text.contains("nbody_tree_run_save wrote: wrong start or size"),
        "{text}"
    );
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

fn include() -> String {
    format!("-I{}/include", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn grape5_program_matches_its_own_double_loop_and_survives_bad_calls() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-std=c11", "-D_DEFAULT_SOURCE", &include()];
    let (text, err) = build_and_run_with("cc", "grape5_forces.c", &flags, &dir.path().join("g5"), &[]);
    assert!(text.contains("passed"), "{text}{err}");
    assert!(err.contains("nbody grape: g5_calculate_force_on_x: targets[0] has a NaN"), "{err}");
    assert!(err.contains("eps = -1 must be finite"), "{err}");
    assert!(err.contains("the board is not open"), "{err}");
}

/// AMUSE's NBODY6++ regular-force calls through its Fortran names (the AMUSE archive's
/// source, capi/gpunb/amuse.c, compiled in) against the program's own double loop; a
/// call past the i-particle limit stops the program with status 70 and the message.
#[test]
fn gpunb_program_through_amuses_names_matches_its_double_loop_and_stops_on_bad_calls() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shim = root.join("gpunb/amuse.c");
    let (inc, stop) = (include(), format!("-I{}", root.join("gpunb").display()));
    let flags = ["-std=c11", "-D_DEFAULT_SOURCE", &inc, &stop, shim.to_str().unwrap()];
    let exe = dir.path().join("gpunb");
    let (text, err) = build_and_run_with("cc", "gpunb_amuse.c", &flags, &exe, &[]);
    assert!(text.contains("lists 700/700"), "{text}{err}");
    let worst = |key: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in {text}"));
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number")
    };
    assert!(worst("worst") < 1e-13 && worst("potential") < 1e-13, "{text}");
    let bad = Command::new(&exe).arg("bad").env("NBODY_GPUNB_EXECUTOR", "cpu:1").output().expect("it runs");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(70), "{err}");
    assert!(err.contains("ni = 1025, where a call takes 1 to 1024"), "{err}");
    assert!(!String::from_utf8_lossy(&bad.stdout).contains("not stopped"));
}

/// A block-step Hermite code written against GRAPE-6 (forces, jerks and neighbours from
/// g6calc_*, j-particles predicted by the library) takes the same block steps and ends
/// where the library's own BlockHermite ends, on the same CPU executor.
#[test]
fn grape6_hermite_program_agrees_with_the_librarys_block_hermite() {
    grape6_against_block_hermite(256, 0.25, None);
}

/// The cost of the GRAPE-6 path against the library's own block Hermite (wall time of
/// both, printed; run by hand: `cargo test --release -p nbody-capi --test examples --
/// --ignored --nocapture`). Agreement is asserted as in the test above.
#[test]
#[ignore = "a measurement: run by hand in release"]
fn grape6_cost_against_block_hermite() {
    grape6_against_block_hermite(4096, 0.125, Some("bench"));
    grape6_against_block_hermite(4096, 0.125, Some("bench-nb"));
}

/// `bench`: None to check everything, or the program's timing mode.
fn grape6_against_block_hermite(n: usize, t_end: f64, bench: Option<&str>) {
    use nbody_integrators::{BlockHermite, State, ics};
    let (eta, dt_max, eps) = (0.02, 1.0 / 16.0, 1.0 / 64.0);
    let (p, v) = ics::plummer::<f64>(n, 7);
    let dir = tempfile::tempdir().unwrap();
    let mut ics_text = format!("{n}\n");
    for (p, v) in p.iter().zip(&v) {
        ics_text += &format!("{} {} {} {} {} {} {}\n", p.x, p.y, p.z, p.m, v.vx, v.vy, v.vz);
    }
    let ics_path = dir.path().join("ics.txt");
    std::fs::write(&ics_path, ics_text).unwrap();
    let flags = ["-std=c11", "-D_DEFAULT_SOURCE", &include()];
    let mut args = vec![ics_path.to_str().unwrap().to_string()];
    args.extend([eta, dt_max, eps, t_end].map(|x| x.to_string()));
    if let Some(mode) = bench {
        args.push(mode.into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (text, err) = build_and_run_with("cc", "grape6_hermite.c", &flags, &dir.path().join("g6"), &args);
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("a summary line").split_whitespace().collect();
    assert_eq!((head[0], head[4], head[5]), ("steps", "failures", "0"), "{text}{err}");
    let c_steps: usize = head[1].parse().unwrap();
    let c_state: Vec<[f64; 6]> = lines
        .map(|l| {
            let v: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2], v[3], v[4], v[5]]
        })
        .collect();
    assert_eq!(c_state.len(), n);

    let mut s = State::new(p, v);
    let mut h = BlockHermite::new(eta, dt_max, eps).unwrap();
    let mut exec = nbody_cpu::CpuExecutor::new(nbody_cpu::Parallelism::threads(2));
    let started = std::time::Instant::now();
    let steps = h.advance_to(&mut s, &mut exec, t_end).unwrap();
    eprintln!(
        "N = {n}: library BlockHermite {steps} block steps in {:.3} s; GRAPE-6 program ({}) {c_steps} steps in {} s",
        started.elapsed().as_secs_f64(),
        bench.unwrap_or("checking"),
        head[7]
    );
    assert_eq!(steps, c_steps, "block steps differ");
    let scale = s.pos.iter().map(|p| p.x.abs().max(p.y.abs()).max(p.z.abs())).fold(0.0, f64::max);
    let worst = (0..n)
        .map(|i| {
            let (p, v, c) = (&s.pos[i], &s.vel[i], &c_state[i]);
            let d = [p.x - c[0], p.y - c[1], p.z - c[2]].map(f64::abs);
            let dv = [v.vx - c[3], v.vy - c[4], v.vz - c[5]].map(f64::abs);
            d.into_iter().chain(dv).fold(0.0, f64::max)
        })
        .fold(0.0, f64::max);
    eprintln!("largest difference from the library's run: {worst:e}");
    assert!(worst <= 1e-9 * scale, "largest difference {worst:e} (positions up to {scale})");
}
