//! `nbody run` across MPI ranks, driven through the real `mpirun` with 1 to 4 ranks:
//! the energy rows equal one process's, rank 0 alone writes and prints, bad input is
//! reported once, a rank that fails (error, panic, kill -9) stops the whole job within
//! seconds, and Ctrl-C stops every rank after the same step with every file written.

mod common;

use common::outputs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NBODY: &str = env!("CARGO_BIN_EXE_nbody");

/// `mpirun -n ranks nbody args` in `dir`: oversubscribed (more ranks than cores), as
/// root too, on loopback transports only.
fn mpirun(ranks: usize, args: &[&str], dir: &Path) -> Command {
    let mut c = nbody_conformance::mpirun(ranks);
    c.arg(NBODY).args(args).current_dir(dir);
    c
}

fn alone(args: &[&str], dir: &Path) -> Output {
    Command::new(NBODY).args(args).current_dir(dir).output().expect("nbody starts")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn energy_rows(path: &Path) -> Vec<Vec<f64>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.records().map(|rec| rec.unwrap().iter().map(|f| f.parse().unwrap()).collect()).collect()
}

/// The run on `ranks` ranks writes the energy rows one process writes: same times and
/// step counts, kinetic, potential and total energy within 1e-12 relative.
fn same_energy_rows(args: &[&str], ranks: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let mut one = args.to_vec();
    one.extend(["--out", "one", "--quiet"]);
    let o = alone(&one, dir.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let want = energy_rows(&dir.path().join("one/energy.csv"));
    for &p in ranks {
        let out = format!("mpi{p}");
        let mut many = args.to_vec();
        many.extend(["--out", &out, "--quiet"]);
        let o = mpirun(p, &many, dir.path()).output().expect("mpirun starts");
        assert!(o.status.success(), "{p} ranks: {}", text(&o.stderr));
        let stdout = text(&o.stdout);
        assert_eq!(stdout.matches("Done.").count(), 1, "{p} ranks: rank 0 alone prints the summary:\n{stdout}");
        assert!(stdout.contains(&format!("on each of {p} MPI ranks")), "{stdout}");
        let got = energy_rows(&dir.path().join(&out).join("energy.csv"));
        assert_eq!(got.len(), want.len(), "{p} ranks: energy rows");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g[0], g[1]), (w[0], w[1]), "{p} ranks: time and steps");
            for k in 2..5 {
                let rel = (g[k] - w[k]).abs() / w[k].abs();
                assert!(rel <= 1e-12, "{p} ranks, t = {}: column {k}: {} vs {} (rel {rel:e})", g[0], g[k], w[k]);
            }
        }
        let files: Vec<String> = std::fs::read_dir(dir.path().join(&out))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files.len(), 8, "{p} ranks: exactly the files of a one-process run: {files:?}");
    }
}

#[test]
fn leapfrog_energy_rows_equal_one_process() {
    same_energy_rows(&["--n", "600", "--t-end", "0.125", "--precision", "f64", "--threads", "1"], &[1, 2, 3, 4]);
}

#[test]
fn shared_step_hermite_energy_rows_equal_one_process() {
    same_energy_rows(
        &["--n", "500", "--t-end", "0.125", "--integrator", "hermite", "--precision", "f64", "--threads", "1"],
        &[2, 4],
    );
}

#[test]
fn block_hermite_and_fewer_particles_than_ranks() {
    same_energy_rows(
        &["--n", "300", "--t-end", "0.125", "--integrator", "block-hermite", "--precision", "f64", "--threads", "1"],
        &[3],
    );
    // Three bodies on four ranks: one rank owns none.
    same_energy_rows(&["--ic", "figure8", "--t-end", "0.25", "--dt", "0.001", "--eps", "0", "--threads", "1"], &[4]);
}

#[test]
fn bad_input_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.csv"), "0,0,0,1\n1,nan,0,1\n0,1,0,1\n").unwrap();
    let cases = [
        &["--ic", "file", "--input", "bad.csv"][..],
        &["--dt", "-1"][..],
        &["--integrator", "rk"][..],
        &["--integrator", "hermite6"][..],
    ];
    for args in cases {
        let o = mpirun(3, args, dir.path()).output().unwrap();
        assert!(!o.status.success(), "{args:?} was accepted");
        let err = text(&o.stderr);
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: one report, not one per rank:\n{err}");
    }
}

/// Waits for `child` at most `limit`; kills it and fails if it is still running.
fn finishes_within(mut child: Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    nbody_conformance::wait_within(&mut child, limit)
        .unwrap_or_else(|| panic!("{what}: still running after {limit:?} (a hang)"))
}

#[test]
fn a_failing_rank_stops_every_rank_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    // Uninterrupted, this run takes minutes.
    let args = ["--n", "1500", "--t-end", "1000", "--quiet", "--threads", "1"];
    for kind in ["error", "panic", "kill"] {
        let child = mpirun(4, &args, dir.path())
            .env("NBODY_FAULT", format!("2:10:{kind}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = finishes_within(child, Duration::from_secs(60), kind);
        assert!(!status.success(), "{kind}: the job succeeded");
    }
}

#[test]
fn ctrl_c_stops_every_rank_after_one_step_and_writes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--n", "1500", "--t-end", "1000", "--quiet", "--threads", "1", "--out", "stopped"];
    let child = mpirun(3, &args, dir.path()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let out = dir.path().join("stopped");
    let start = Instant::now();
    while !out.join("snapshot-00000.npy").exists() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    finishes_within(child, Duration::from_secs(30), "after Ctrl-C");
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary written");
    assert!(summary.contains("Stopped by Ctrl-C"), "{summary}");
    for f in ["energy.csv", "energy-error.png", "density-end.png", "snapshot-00001.npy"] {
        assert!(out.join(f).is_file(), "{f} missing after Ctrl-C");
    }
}

#[test]
fn info_names_the_mpi_library_and_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun(3, &["info"], dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("Open MPI") && stdout.contains("ranks in this job: 3"), "{stdout}");
    assert!(!stdout.contains('\0'), "the library's name keeps its C terminator:\n{stdout:?}");
    assert_eq!(stdout.matches("backends (--executor").count(), 1, "rank 0 alone prints:\n{stdout}");
    let o = alone(&["info"], dir.path());
    assert!(text(&o.stdout).contains("ranks in this job: 1"));
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A run across 3 ranks killed with SIGKILL (one rank, after its checkpoints) resumes
/// from rank 0's gathered checkpoint: on 3 ranks it writes the uninterrupted run's
/// snapshots and energy rows bit for bit; on 2 ranks, and in one process, it finishes
/// with the same rows to within the summation order's rounding.
#[test]
fn killed_runs_resume_bit_for_bit_and_on_other_rank_counts() {
    for integrator in ["leapfrog", "hermite", "block-hermite"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let args = |out: &str| -> Vec<String> {
            ["--n", "600", "--t-end", "0.25", "--energy-every", "0.015625", "--snapshot-every", "0.125"]
                .into_iter()
                .chain(["--checkpoint-every", "0.03125", "--precision", "f64", "--threads", "1", "--quiet"])
                .chain(["--integrator", integrator, "--out", out])
                .map(String::from)
                .collect()
        };
        let o = mpirun(3, &strs(&args("full")), d).output().unwrap();
        assert!(o.status.success(), "{integrator}: {}", text(&o.stderr));
        let want = outputs(&d.join("full"));
        // Killed at 60% of the steps: past a checkpoint, before the end.
        let steps = energy_rows(&d.join("full/energy.csv")).last().unwrap()[1];
        let fault = format!("1:{}:kill", (0.6 * steps) as u64);
        let o = mpirun(3, &strs(&args("part")), d).env("NBODY_FAULT", fault).output().unwrap();
        assert!(!o.status.success(), "{integrator}: the killed run succeeded");
        let checkpoints = std::fs::read_dir(d.join("part"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".nbck"))
            .count();
        assert!(checkpoints >= 1, "{integrator}: no checkpoint before the kill");
        for (ranks, copy) in [(2, "part2"), (1, "part1"), (3, "part")] {
            if copy != "part" {
                let _ = std::fs::create_dir(d.join(copy));
                for e in std::fs::read_dir(d.join("part")).unwrap() {
                    let p = e.unwrap().path();
                    if p.file_name().unwrap() != ".nbody-lock" {
                        std::fs::copy(&p, d.join(copy).join(p.file_name().unwrap())).unwrap();
                    }
                }
            }
            let resume = ["run", "--resume", copy, "--quiet"];
            let o = if ranks == 1 { alone(&resume, d) } else { mpirun(ranks, &resume, d).output().unwrap() };
            assert!(o.status.success(), "{integrator} on {ranks} ranks: {}", text(&o.stderr));
            let got = outputs(&d.join(copy));
            assert_eq!(got.len(), want.len(), "{integrator} on {ranks} ranks: files");
            if ranks == 3 {
                for ((name, a), (_, b)) in got.iter().zip(&want) {
                    assert!(a == b, "{integrator}: {name} differs from the uninterrupted run's");
                }
                continue;
            }
            let (g, w) = (energy_rows(&d.join(copy).join("energy.csv")), energy_rows(&d.join("full/energy.csv")));
            assert_eq!(g.len(), w.len(), "{integrator} on {ranks} ranks: energy rows");
            for (g, w) in g.iter().zip(&w) {
                assert_eq!(g[0], w[0], "{integrator} on {ranks} ranks: times");
                let rel = (g[4] - w[4]).abs() / w[4].abs();
                assert!(rel <= 1e-9, "{integrator} on {ranks} ranks, t = {}: total energy {} vs {}", g[0], g[4], w[4]);
            }
        }
    }
}
