//! The `nbody` binary, driven as a user drives it: every promised file, `accel` against
//! the reference, each kind of bad input with its one-line error and exit code, `info`,
//! settings files and Ctrl-C.

use nbody::cli::files::{read_table, write_table};
use nbody::cli::plot::{PLOT_SIZE, density_image_size};
use nbody::{Executor, Field, Params, Particle, Reference};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn nbody(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nbody")).args(args).current_dir(dir).output().expect("the binary starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the command in `dir`, requires it to succeed and returns its standard output.
fn nbody_ok(args: &[&str], dir: &Path) -> String {
    let o = nbody(args, dir);
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A CSV the command wrote (header line, then numbers), as rows.
fn csv_rows(path: &Path) -> Vec<Vec<f64>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records().map(|rec| rec.unwrap().iter().map(|f| f.parse().unwrap()).collect()).collect()
}

/// Decodes a PNG: (width, height, distinct colours).
fn png_facts(path: &Path) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("png exists"));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png data");
    let px = info.color_type.samples();
    let mut colours: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    colours.sort_unstable();
    colours.dedup();
    (info.width, info.height, colours.len())
}

#[test]
fn default_run_writes_every_promised_file() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = nbody_ok(&["--n", "256", "--t-end", "0.125", "--pixels", "64", "--quiet"], dir.path());
    for setting in ["ic = \"plummer\"", "n = 256", "integrator = \"leapfrog\"", "executor = \"cpu\"", "t-end = 0.125"] {
        assert!(stdout.contains(setting), "setting {setting} not echoed:\n{stdout}");
    }
    for summary in ["energy error", "momentum change", "wall time", "interactions"] {
        assert!(stdout.contains(summary), "summary lacks {summary}:\n{stdout}");
    }
    let out = dir.path().join("nbody-out");
    for f in ["settings.toml", "summary.txt", "energy.csv", "snapshot-00000.npy", "snapshot-00001.npy"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let snap = read_table(&out.join("snapshot-00001.npy")).unwrap();
    assert_eq!((snap.rows(), snap.columns), (256, 7));
    assert!(snap.values.iter().all(|x| x.is_finite()));
    let energy = csv_rows(&out.join("energy.csv"));
    // t-end / 128 between samples, at most one a step (32 of 1/256), plus the start.
    assert_eq!(energy.len(), 33);
    assert!(energy.windows(2).all(|w| w[1][0] > w[0][0]), "energy samples out of order or repeated");
    let max_err = energy.iter().map(|r| r[5].abs()).fold(0.0, f64::max);
    assert!(max_err < 1e-3, "energy error {max_err}");
    for (f, size) in [
        ("density-start.png", density_image_size(2, 64)),
        ("density-end.png", density_image_size(2, 64)),
        ("energy-error.png", PLOT_SIZE),
    ] {
        let (w, h, colours) = png_facts(&out.join(f));
        assert_eq!((w, h), size, "{f}");
        assert!(colours > 4, "{f} is blank ({colours} colours)");
    }
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn every_integrator_and_precision_runs_from_a_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [("hermite", "f64"), ("block-hermite", "f32"), ("hermite6", "f64"), ("rk", "f64"), ("leapfrog", "f32")];
    // Every integrator of the registry, each by its one name.
    let mut named: Vec<&str> = runs.iter().map(|r| r.0).collect();
    named.sort();
    let mut registry: Vec<&str> = nbody::integrators::Scheme::ALL.iter().map(|s| s.name()).collect();
    registry.sort();
    assert_eq!(named, registry);
    for (integrator, precision) in runs {
        let toml = format!(
            "ic = \"figure8\"\nintegrator = \"{integrator}\"\nprecision = \"{precision}\"\nt-end = 0.25\ndt = 0.001\npixels = 32\nout = \"out-{integrator}\"\nexecutor = \"cpu\"\n"
        );
        std::fs::write(dir.path().join("run.toml"), toml).unwrap();
        let o = nbody(&["run", "--config", "run.toml", "--quiet"], dir.path());
        assert!(o.status.success(), "{integrator}: {}", stderr(&o));
        let energy = csv_rows(&dir.path().join(format!("out-{integrator}/energy.csv")));
        let last = energy.last().unwrap();
        assert!((last[0] - 0.25).abs() < 1e-3, "{integrator} ended at t = {}", last[0]);
        let bound = if precision == "f32" { 1e-4 } else { 1e-6 };
        assert!(last[5].abs() < bound, "{integrator}: energy error {}", last[5]);
    }
}

#[test]
fn accel_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = nbody::integrators::ics::plummer::<f64>(300, 7);
    let (tgt, _) = nbody::integrators::ics::plummer::<f64>(40, 8);
    let flat = |ps: &[Particle<f64>]| -> Vec<f64> { ps.iter().flat_map(|p| [p.x, p.y, p.z, p.m]).collect() };
    write_table(&dir.path().join("src.csv"), &["x", "y", "z", "m"], &flat(&src)).unwrap();
    write_table(&dir.path().join("tgt.npy"), &["x", "y", "z", "m"], &flat(&tgt)).unwrap();
    type Case<'a> = (&'a [&'a str], &'a [Particle<f64>], Params<f64>);
    let spline = Params::softened(0.01).with_softening(nbody::Softening::Spline);
    let cases: [Case<'_>; 3] = [
        (&["--out", "self.npy"], &src, Params::softened(0.01).with_overlap_identical()),
        (&["--targets", "tgt.npy", "--out", "tgt-out.csv"], &tgt, Params::softened(0.01)),
        (&["--softening", "spline", "--out", "spline.npy"], &src, spline.with_overlap_identical()),
    ];
    for (extra, targets, params) in cases {
        let mut args = vec!["accel", "--sources", "src.csv", "--eps", "0.01"];
        args.extend_from_slice(extra);
        let o = nbody(&args, dir.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let path = dir.path().join(extra[extra.len() - 1]);
        let got: Vec<f64> = if path.extension().unwrap() == "csv" {
            csv_rows(&path).concat()
        } else {
            let t = read_table(&path).unwrap();
            assert_eq!(t.columns, 4);
            t.values
        };
        assert_eq!(got.len(), 4 * targets.len());
        let mut want = vec![Field::zero(); targets.len()];
        Reference.accelerations(targets, &src, &params, &mut want).unwrap();
        for (g, w) in got.chunks(4).zip(&want) {
            for (a, b) in g.iter().zip([w.ax, w.ay, w.az, w.phi]) {
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
            }
        }
    }
}

/// A last `eps` column gives each particle its own softening: `nbody accel` matches the
/// reference's per-particle call; a negative length names its line, and `nbody run`
/// refuses such a file rather than drop the column.
#[test]
fn accel_reads_a_softening_per_particle() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = nbody::integrators::ics::plummer::<f64>(200, 5);
    let eps: Vec<f64> = (0..src.len()).map(|i| if i % 4 == 0 { 0.2 } else { 0.01 }).collect();
    let rows: Vec<f64> = src.iter().zip(&eps).flat_map(|(p, &e)| [p.x, p.y, p.z, p.m, e]).collect();
    write_table(&dir.path().join("src.csv"), &["x", "y", "z", "m", "eps"], &rows).unwrap();
    let o = nbody(&["accel", "--sources", "src.csv", "--out", "out.npy"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let got = read_table(&dir.path().join("out.npy")).unwrap().values;
    let mut want = vec![Field::zero(); src.len()];
    let lengths = nbody::PerParticle { targets: &eps, sources: &eps };
    Reference
        .accelerations_per_particle(&src, &src, lengths, &Params::softened(0.0).with_overlap_identical(), &mut want)
        .unwrap();
    for (g, w) in got.chunks(4).zip(&want) {
        for (a, b) in g.iter().zip([w.ax, w.ay, w.az, w.phi]) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
    let mut bad = rows.clone();
    bad[5 * 3 + 4] = -0.5;
    write_table(&dir.path().join("bad.csv"), &["x", "y", "z", "m", "eps"], &bad).unwrap();
    let o = nbody(&["accel", "--sources", "bad.csv", "--out", "bad.npy"], dir.path());
    assert!(
        !o.status.success() && stderr(&o).contains("line 5, column 5 (eps): negative softening length -0.5"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("bad.npy").exists());
    let o = nbody(&["run", "--ic", "file", "--input", "src.csv", "--t-end", "0.01", "--quiet"], dir.path());
    assert!(!o.status.success() && stderr(&o).contains("`nbody run` takes one softening"), "{}", stderr(&o));
}

/// Every backend this build and machine offer (as `nbody info` lists them) runs
/// `nbody accel --executor BACKEND` and a short `nbody run`, and agrees with the reference.
#[test]
fn every_offered_backend_runs_through_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = nbody::integrators::ics::plummer::<f64>(200, 9);
    let flat: Vec<f64> = src.iter().flat_map(|p| [p.x, p.y, p.z, p.m]).collect();
    write_table(&dir.path().join("src.csv"), &["x", "y", "z", "m"], &flat).unwrap();
    let mut want = vec![Field::zero(); src.len()];
    Reference.accelerations(&src, &src, &Params::softened(0.01).with_overlap_identical(), &mut want).unwrap();
    let info = String::from_utf8_lossy(&nbody(&["info"], dir.path()).stdout).into_owned();
    for offer in nbody_backends::offered() {
        let b = offer.backend.to_string();
        assert!(info.contains(&format!("  {b} ")), "nbody info does not list {b}:\n{info}");
        let o =
            nbody(&["accel", "--sources", "src.csv", "--eps", "0.01", "--out", "o.npy", "--executor", &b], dir.path());
        assert!(o.status.success(), "{b}: {}", stderr(&o));
        let got = read_table(&dir.path().join("o.npy")).unwrap().values;
        let tol = if b.contains("mixed") { 2e-5 } else { 1e-12 };
        for (g, w) in got.chunks(4).zip(&want) {
            let scale = (w.ax * w.ax + w.ay * w.ay + w.az * w.az).sqrt();
            for (a, x) in g[..3].iter().zip([w.ax, w.ay, w.az]) {
                assert!((a - x).abs() <= tol * scale, "{b}: {a} vs {x}");
            }
        }
        let o = nbody(&["run", "--n", "64", "--t-end", "0.01", "--quiet", "--out", "r", "--executor", &b], dir.path());
        assert!(o.status.success(), "run --executor {b}: {}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("executor = \"{b}\"")), "{b}");
        std::fs::remove_dir_all(dir.path().join("r")).unwrap();
    }
}

/// Each bad input: its exit code, and one stderr line containing `needle`.
#[test]
fn bad_input_gives_one_clear_line_and_an_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("nan.csv"), "x,y,z,m\n0,0,0,1\n1,0,0,nan\n").unwrap();
    std::fs::write(d.join("cols.csv"), "0,0,0,1\n1,0,0\n").unwrap();
    std::fs::write(d.join("six.csv"), "0,0,0,1,2,3\n").unwrap();
    std::fs::write(d.join("text.csv"), "0,0,0,1\n1,zero,0,1\n").unwrap();
    std::fs::write(d.join("neg.csv"), "0,0,0,1\n1,0,0,-2\n").unwrap();
    std::fs::write(d.join("empty.csv"), "# nothing\n").unwrap();
    std::fs::write(d.join("junk.npy"), "not numpy at all").unwrap();
    std::fs::write(d.join("bad.toml"), "n = 100\nsteps = 3\n").unwrap();
    std::fs::write(d.join("euler.toml"), "integrator = \"euler\"\n").unwrap();
    std::fs::write(d.join("ok.csv"), "0,0,0,1\n1,0,0,1\n").unwrap();
    let cases: &[(&[&str], u8, &str)] = &[
        (&["accel", "--sources", "missing.csv", "--out", "o.npy"], 1, "missing.csv"),
        (&["accel", "--sources", "nan.csv", "--out", "o.npy"], 1, "nan.csv: line 3, column 4 (m)"),
        (&["accel", "--sources", "cols.csv", "--out", "o.npy"], 1, "cols.csv: line 2: 3 columns"),
        (&["accel", "--sources", "six.csv", "--out", "o.npy"], 1, "six.csv: line 1: 6 columns"),
        (
            &["accel", "--sources", "text.csv", "--out", "o.npy"],
            1,
            "text.csv: line 2, column 2 (y): \"zero\" is not a number",
        ),
        (&["accel", "--sources", "neg.csv", "--out", "o.npy"], 1, "neg.csv: line 2, column 4 (m): negative mass"),
        (&["accel", "--sources", "empty.csv", "--out", "o.npy"], 1, "empty.csv: no particles"),
        (&["accel", "--sources", "junk.npy", "--out", "o.npy"], 1, "junk.npy: not a valid .npy file"),
        (&["accel", "--sources", "ok.csv", "--out", "o.txt"], 1, "o.txt: unknown file type"),
        (&["accel", "--sources", "ok.csv", "--out", "o.npy", "--eps", "-1"], 1, "--eps must be"),
        (&["run", "--dt", "-0.1"], 1, "--dt must be positive"),
        (&["--n", "0"], 1, "--n must be at least 1"),
        (&["run", "--t-end", "nan"], 1, "--t-end must be positive"),
        (&["run", "--ic", "file", "--input", "nan.csv"], 1, "nan.csv: line 3"),
        (&["run", "--config", "bad.toml"], 1, "unknown field `steps`"),
        (&["run", "--frobnicate"], 2, "--frobnicate"),
        (&["run", "--n", "lots"], 2, "'lots'"),
        (
            &["run", "--integrator", "euler"],
            2,
            "'euler' for '--integrator <INTEGRATOR>': one of leapfrog, hermite, block-hermite, hermite6, rk",
        ),
        (&["run", "--config", "euler.toml"], 1, "must be one of leapfrog, hermite, block-hermite, hermite6, rk"),
        (&["run", "--n", "16", "--integrator", "hermite6", "--precision", "f32"], 1, "hermite6 needs --precision f64"),
        (&["bench", "--flops", "17"], 2, "not a named convention"),
        (&["run", "--devices", "0,1"], 1, "--devices picks GPUs: it needs --executor cuda"),
        (&["run", "--n", "100000000000"], 1, "particles (f64, Leapfrog, cpu) needs about"),
        (&["run", "--t-end", "1e300"], 1, "is lost against --t-end 1e300"),
        (&["run", "--t-end", "1e10", "--dt", "1e-3"], 1, "more than 2^40"),
        (&["run", "--n", "64", "--integrator", "hermite", "--t-end", "1e300"], 1, "would take about"),
        (&["run", "--executor", "cuda", "--devices", "0,x"], 1, "--devices must be all or device ordinals"),
        (&["run", "--executor", "cuda-mixed", "--precision", "f32"], 1, "cuda-mixed:0 computes f64 results"),
        (&["run", "--executor", "mixed", "--precision", "f32"], 1, "--executor mixed computes f64 results"),
        (&["run", "--executor", "cpu:100000", "--n", "64"], 1, "this machine runs"),
        (&["run", "--threads", "100000", "--n", "64"], 1, "this machine runs"),
        (&["run", "--executor", "cpu:1", "--threads", "2"], 1, "disagree"),
        (&["run", "--executor", "gpu"], 2, "unknown family"),
        (&["accel", "--sources", "ok.csv", "--out", "o.npy", "--executor", "cpu:100000"], 1, "this machine runs"),
        (&["run", "--executor", "cuda-mixed", "--devices", "0"], 1, "--devices picks GPUs: it needs --executor cuda"),
    ];
    for &(args, code, needle) in cases {
        let o = nbody(args, d);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code as i32), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.contains(needle), "{args:?}: {err:?} does not name {needle:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!d.join("o.npy").exists(), "{args:?} wrote an output");
    }
}

#[test]
fn cuda_without_a_device_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["cuda", "cuda-mixed"] {
        let o = nbody(&["run", "--executor", kind, "--n", "64", "--t-end", "0.01"], dir.path());
        if cfg!(feature = "cuda") && o.status.success() {
            continue; // a machine with a GPU: nothing to refuse
        }
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("error: --executor {kind}:0: ")), "{err}");
        assert!(o.stdout.is_empty(), "printed before refusing");
    }
}

#[test]
fn info_lists_the_cpu_executor() {
    let text = nbody_ok(&["info"], Path::new("."));
    assert!(text.contains("cpu ") && text.contains("CPU SIMD features detected"), "{text}");
}

#[test]
fn bench_writes_table_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let text = nbody_ok(&["bench", "--sizes", "32,64", "--seconds", "0", "--out", "b"], dir.path());
    assert!(text.contains("scalar") && text.contains("mixed"), "{text}");
    assert!(text.contains("cpu f32 spline:") && text.contains("cpu f64 cells:"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("b/bench.json")).unwrap()).unwrap();
    let rows = json["results"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["interactions_per_second"].as_f64().unwrap() > 0.0));
    assert!(rows.len() >= 10);
    for kernel in ["plummer", "spline", "cells"] {
        assert!(
            rows.iter().any(|r| r["kernel"] == kernel && r["n"] == if kernel == "cells" { 8 } else { 64 }),
            "{kernel}"
        );
    }
    let (w, h, colours) = png_facts(&dir.path().join("b/bench.png"));
    assert_eq!((w, h), PLOT_SIZE);
    assert!(colours > 4);
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_after_the_current_step_and_still_writes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_nbody"))
        .args(["--n", "512", "--t-end", "100000", "--pixels", "32", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = dir.path().join("nbody-out");
    let start = Instant::now();
    while !out.join("density-start.png").exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Stopped by Ctrl-C"), "{stdout}");
    for f in ["summary.txt", "energy.csv", "energy-error.png", "density-end.png", "snapshot-00001.npy"] {
        assert!(out.join(f).is_file(), "{f} missing after Ctrl-C");
    }
    let snap = read_table(&out.join("snapshot-00001.npy")).unwrap();
    assert_eq!(snap.rows(), 512);
}

/// Starts `nbody` in `dir` with `args`, output piped.
fn spawn(args: &[&str], dir: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_nbody"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &std::process::Child, sig: &str) {
    assert!(Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success());
}

/// A second run into a folder that a run is writing is refused in one line naming the
/// holder; a folder holding a finished run's outputs is refused unless --overwrite (which
/// replaces them) or --resume.
#[test]
fn an_output_folder_belongs_to_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = spawn(&["--n", "512", "--t-end", "100000", "--quiet", "--executor", "cpu:1"], dir.path());
    let out = dir.path().join("nbody-out");
    let start = Instant::now();
    while !out.join("settings.toml").exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = nbody(&["--n", "64", "--t-end", "0.01", "--seed", "2", "--quiet"], dir.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("being written by another run") && err.contains(&format!("process {}", first.id())), "{err}");
    signal(&first, "-TERM");
    assert_eq!(first.wait_with_output().unwrap().status.code(), Some(130));
    let settings = std::fs::read_to_string(out.join("settings.toml")).unwrap();
    assert!(settings.contains("seed = 1"), "the refused run wrote into the folder:\n{settings}");

    let o = nbody(&["--n", "64", "--t-end", "0.01", "--seed", "2", "--quiet"], dir.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("holds another run's outputs") && err.contains("--overwrite"), "{err}");
    let o = nbody(&["--n", "64", "--t-end", "0.01", "--seed", "2", "--quiet", "--overwrite"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let settings = std::fs::read_to_string(out.join("settings.toml")).unwrap();
    assert!(settings.contains("seed = 2"), "{settings}");
    let snapshots = std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok());
    let snapshots: Vec<String> = snapshots.filter(|n| n.starts_with("snapshot-")).collect();
    assert_eq!(snapshots.len(), 2, "only this run's start and end: {snapshots:?}");
}

/// SIGTERM asks for a stop after the current step; a second SIGTERM ends the run at
/// once, even in the middle of a step that would take far longer.
#[test]
fn a_second_sigterm_stops_a_long_step_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // The reference loops on 40,000 bodies: each force call takes many seconds.
    let args = ["--n", "40000", "--t-end", "1", "--quiet", "--executor", "reference"];
    let child = spawn(&args, dir.path());
    let out = dir.path().join("nbody-out");
    let start = Instant::now();
    while !out.join("settings.toml").exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&child, "-TERM");
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    signal(&child, "-TERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(asked.elapsed() < Duration::from_secs(10), "took {:?} after the second SIGTERM", asked.elapsed());
    let names = std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok());
    for name in names {
        assert!(!name.starts_with(".tmp"), "half-written file {name} left behind");
    }
}

/// Test particles from a file: massless, after the system, on the orbits the massive
/// bodies give them (a circular orbit around the Kepler pair's centre of mass, far
/// outside it, keeps its radius; one at rest on the pair's axis falls along it), and a
/// file with a massive "test particle" is refused.
#[test]
fn test_particles_orbit_the_system_and_must_be_massless() {
    let dir = tempfile::tempdir().unwrap();
    let v = (1.0f64 / 8.0).sqrt(); // circular speed at r = 8 around a unit mass
    std::fs::write(dir.path().join("probes.csv"), format!("x,y,z,m,vx,vy,vz\n8,0,0,0,0,{v},0\n0,0,6,0,0,0,0\n"))
        .unwrap();
    let o = nbody(
        &["run", "--ic", "kepler", "--eccentricity", "0", "--test-particles", "probes.csv", "--integrator", "hermite"]
            .iter()
            .chain(&["--eta", "0.01", "--t-end", "2", "--quiet", "--out", "out"])
            .copied()
            .collect::<Vec<_>>(),
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let snap = read_table(&dir.path().join("out/snapshot-00001.npy")).unwrap();
    assert_eq!((snap.rows(), snap.columns), (4, 7));
    let row = |i: usize| &snap.values[i * 7..i * 7 + 7];
    assert_eq!((row(2)[3], row(3)[3]), (0.0, 0.0), "test particles stay massless and last");
    let r = row(2)[0].hypot(row(2)[1]);
    assert!((r - 8.0).abs() < 0.05, "the far probe drifted to r = {r}");
    // The probe on the pair's axis, at rest, falls along it: z shrinks, x and y stay 0.
    assert!(row(3)[0].abs() < 1e-9 && row(3)[1].abs() < 1e-9 && row(3)[2] < 6.0 && row(3)[5] < 0.0, "{:?}", row(3));
    let summary = std::fs::read_to_string(dir.path().join("out/summary.txt")).unwrap();
    assert!(summary.contains("test particles        probes.csv"), "{summary}");

    std::fs::write(dir.path().join("heavy.csv"), "x,y,z,m\n3,0,0,0.001\n").unwrap();
    let o = nbody(&["run", "--ic", "kepler", "--test-particles", "heavy.csv", "--out", "bad"], dir.path());
    // A bad file's contents exit 1, as a bad --input does.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("heavy.csv: test particle 1 has mass 0.001"), "{}", stderr(&o));
}

/// `--softening spline` runs on the CPU, is echoed and saved with the settings, and
/// changes the physics only where pairs come within its support: its initial energy
/// differs from Plummer's at the same eps, and the run conserves energy as well.
#[test]
fn spline_softening_runs_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let run = |softening: &str, out: &str| {
        let args =
            ["--n", "256", "--t-end", "0.0625", "--eps", "0.05", "--softening", softening, "--out", out, "--quiet"];
        let o = nbody(&args, dir.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let settings = std::fs::read_to_string(dir.path().join(out).join("settings.toml")).unwrap();
        assert!(settings.contains(&format!("softening = \"{softening}\"")), "{settings}");
        csv_rows(&dir.path().join(out).join("energy.csv"))
    };
    let (spline, plummer) = (run("spline", "s"), run("plummer", "p"));
    // Column 3: potential energy; column 5: relative energy error.
    assert!((spline[0][3] - plummer[0][3]).abs() > 1e-6 * plummer[0][3].abs(), "{} {}", spline[0][3], plummer[0][3]);
    let worst = spline.iter().map(|r| r[5].abs()).fold(0.0, f64::max);
    assert!(worst < 1e-3, "spline energy error {worst}");
    let o = nbody(&["--n", "16", "--softening", "gaussian"], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `--gravity tree` steps the leapfrog over a Barnes-Hut tree: its energies come from
/// the tree's potential (within a few 1e-4 of direct summation's at the start), it
/// conserves energy as a leapfrog should, the summary says where the forces came from,
/// the settings file keeps theta and alpha, and the tree's options are refused where
/// they mean nothing.
#[test]
fn tree_gravity_runs_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], out: &str| {
        let mut args = vec!["run", "--n", "2000", "--t-end", "0.125", "--executor", "cpu:2", "--out", out, "--quiet"];
        args.extend(extra);
        let o = nbody(&args, dir.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let summary = std::fs::read_to_string(dir.path().join(out).join("summary.txt")).unwrap();
        let settings = std::fs::read_to_string(dir.path().join(out).join("settings.toml")).unwrap();
        (csv_rows(&dir.path().join(out).join("energy.csv")), summary, settings)
    };
    let (direct, _, _) = run(&[], "direct");
    let (tree, summary, settings) = run(&["--gravity", "tree", "--theta", "0.6"], "tree");
    assert!(summary.contains("theta 0.6; energies from the tree's potential"), "{summary}");
    assert!(settings.contains("gravity = \"tree\"") && settings.contains("theta = 0.6"), "{settings}");
    // Column 3: potential energy; column 5: relative energy error.
    let w = (tree[0][3] - direct[0][3]).abs() / direct[0][3].abs();
    assert!(w > 0.0 && w < 1e-3, "tree potential energy off direct summation's by {w:e}");
    let worst = tree.iter().map(|r| r[5].abs()).fold(0.0, f64::max);
    assert!(worst < 1e-4, "tree energy error {worst:e}");
    let (relative, summary, settings) = run(&["--gravity", "tree", "--alpha", "0.002"], "relative");
    assert!(summary.contains("relative criterion alpha 0.002"), "{summary}");
    assert!(settings.contains("alpha = 0.002"), "{settings}");
    let worst = relative.iter().map(|r| r[5].abs()).fold(0.0, f64::max);
    assert!(worst < 1e-3, "relative criterion energy error {worst:e}");
    for (args, says) in [
        (vec!["run", "--n", "64", "--theta", "0.5"], "need --gravity tree"),
        (vec!["run", "--n", "64", "--gravity", "tree", "--integrator", "hermite"], "leapfrog only"),
        (vec!["run", "--n", "64", "--gravity", "tree", "--theta", "-1"], "--theta must be positive"),
        (vec!["run", "--n", "64", "--gravity", "tree", "--alpha", "0"], "--alpha must be positive"),
    ] {
        let o = nbody(&args, dir.path());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// `--units au,msun,yr`: the Earth, started on a circular orbit at 1 AU with the
/// circular speed in AU/yr, is back where it started after one year, and every output
/// says its units.
#[test]
fn an_orbit_in_au_solar_masses_and_years_takes_a_year() {
    let dir = tempfile::tempdir().unwrap();
    let g = nbody::units::Units::parse("au,msun,yr").unwrap().g();
    let m_earth = 3.003_489_6e-6;
    let v = (g * (1.0 + m_earth)).sqrt(); // circular speed at 1 AU, in AU/yr
    let path = dir.path().join("orbit.csv");
    std::fs::write(&path, format!("x,y,z,m,vx,vy,vz\n0,0,0,1,0,{},0\n1,0,0,{m_earth},0,{v},0\n", -m_earth * v))
        .unwrap();
    let args = ["--input", "orbit.csv", "--units", "au,msun,yr", "--t-end", "1", "--dt", "0.0009765625"];
    let o =
        nbody(&[&args[..], &["--eps", "0", "--executor", "cpu:1", "--quiet", "--pixels", "64"]].concat(), dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("nbody-out");
    let end = read_table(&out.join("snapshot-00001.npy")).unwrap();
    let (sun, earth) = (&end.values[0..7], &end.values[7..14]);
    let d: Vec<f64> = (0..3).map(|k| earth[k] - sun[k]).collect();
    // One year of the orbit (its period with these constants is 1 + 1.6e-5 years: the
    // Julian year against the orbit of G M_sun): back to (1, 0, 0) to 1e-3 AU.
    let miss = ((d[0] - 1.0).powi(2) + d[1].powi(2) + d[2].powi(2)).sqrt();
    assert!(miss < 1e-3, "the Earth is {miss} AU from where it started: {d:?}");
    let speed = (earth[4].powi(2) + earth[5].powi(2) + earth[6].powi(2)).sqrt();
    assert!((speed / (2.0 * std::f64::consts::PI) - 1.0).abs() < 1e-3, "speed {speed} AU/yr");
    let energy = std::fs::read_to_string(out.join("energy.csv")).unwrap();
    let header = energy.lines().next().unwrap();
    assert!(header.starts_with("time [yr],steps,kinetic [msun au^2/yr^2]"), "{header}");
    let rows = csv_rows(&out.join("energy.csv"));
    assert!((rows.last().unwrap()[0] - 1.0).abs() < 1e-12);
    // Settings keep the run's units; the summary names them.
    let settings = std::fs::read_to_string(out.join("settings.toml")).unwrap();
    assert!(settings.contains("units = \"au,msun,yr\"") && settings.contains("t-end = 1.0"), "{settings}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(summary.contains("units                 au,msun,yr (G = 3.947"), "{summary}");
    // A unit the command does not know: one line naming it.
    let o = nbody(&["--units", "au,msun,fortnight", "--quiet"], dir.path());
    assert!(!o.status.success() && stderr(&o).contains("unknown time unit \"fortnight\""), "{}", stderr(&o));
}
