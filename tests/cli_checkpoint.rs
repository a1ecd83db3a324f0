//! Runs killed with SIGKILL at several moments and resumed with `--resume` write the
//! same snapshots and energy.csv, bit for bit, as uninterrupted runs, for every
//! integrator; a damaged checkpoint is reported in one line and the one before it used.
//!
//! Here on the CPU executor (two threads). The same binary runs the device paths on a
//! GPU machine (the device-resident leapfrog on one GPU and on several, the
//! device-resident Hermite with shared and block steps), where the command is staged
//! beside it: `NBODY_BIN=./nbody NBODY_CHECKPOINT_EXECUTORS=cuda,cuda:0,0
//! ./cli-checkpoint` (`scripts/gpu-session.sh checkpoint`).

mod common;

use common::{has_checkpoint, outputs};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The command under test: this build's, or `NBODY_BIN` (a staged one).
fn nbody() -> String {
    std::env::var("NBODY_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_nbody").to_string())
}

/// The backends to test (`NBODY_CHECKPOINT_EXECUTORS`, comma-separated between
/// backends; `cuda:0,0` stays whole): two CPU threads by default.
fn executors() -> Vec<String> {
    let list = std::env::var("NBODY_CHECKPOINT_EXECUTORS").unwrap_or_else(|_| "cpu:2".into());
    let mut out: Vec<String> = Vec::new();
    for part in list.split(',') {
        match out.last_mut() {
            Some(last) if part.chars().all(|c| c.is_ascii_digit()) && last.contains(':') => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// The run's arguments; `integrator` "tree" is the leapfrog over the tree with the
/// relative criterion (whose next force depends on the saved field).
fn args(executor: &str, integrator: &str, out: &str) -> Vec<String> {
    let n = std::env::var("NBODY_CHECKPOINT_N").unwrap_or_else(|_| "600".into());
    let tree = integrator == "tree";
    let integrator = if tree { "leapfrog" } else { integrator };
    let mut a: Vec<String> = [
        "run",
        "--n",
        &n,
        "--t-end",
        "0.5",
        "--energy-every",
        "0.015625",
        "--snapshot-every",
        "0.125",
        "--checkpoint-every",
        "0.03125",
        "--executor",
        executor,
        "--quiet",
        "--integrator",
        integrator,
        "--out",
        out,
    ]
    .map(String::from)
    .to_vec();
    if tree {
        a.extend(["--gravity", "tree", "--alpha", "0.003"].map(String::from));
    }
    a
}

/// Runs `a` in `dir`; kills it after `after` if given, once its output folder `out`
/// holds a checkpoint (on a fast device the whole run may take less than starting it,
/// so a kill by the clock alone would land before the first). True when it finished
/// by itself.
fn run(dir: &Path, a: &[String], after: Option<Duration>) -> bool {
    let out = a.iter().position(|x| x == "--out" || x == "--resume").map(|i| dir.join(&a[i + 1]));
    let mut child =
        Command::new(nbody()).args(a).current_dir(dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{a:?} failed");
            return true;
        }
        if after.is_some_and(|t| start.elapsed() >= t) && out.as_deref().is_some_and(has_checkpoint) {
            child.kill().unwrap(); // SIGKILL: nothing is flushed or finished
            child.wait().unwrap();
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn killed_and_resumed_runs_equal_uninterrupted_ones_bit_for_bit() {
    // NBODY_CHECKPOINT_INTEGRATORS (comma-separated) narrows the integrators.
    let only = std::env::var("NBODY_CHECKPOINT_INTEGRATORS").unwrap_or_default();
    for (executor, integrator) in executors()
        .iter()
        .flat_map(|e| ["leapfrog", "hermite", "block-hermite", "rk", "tree"].map(|i| (e.as_str(), i)))
        .filter(|(_, i)| only.is_empty() || only.split(',').any(|o| o == *i))
    {
        let label = format!("{executor} {integrator}");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let start = Instant::now();
        assert!(run(d, &args(executor, integrator, "full"), None));
        let whole = start.elapsed();
        let want = outputs(&d.join("full"));
        assert_eq!(want.iter().filter(|f| f.0.starts_with("snapshot")).count(), 5);
        // Kills at fixed pseudo-random fractions of the whole run; each resume may be
        // killed again; a kill before the first checkpoint starts over (the last two
        // fractions give a loaded machine, whose starts are slow, a late chance).
        let mut kills = [0.45, 0.3, 0.7, 0.2, 0.85, 0.95].into_iter();
        let mut finished = false;
        let mut resumed = 0;
        let mut kills_done = Vec::new();
        while !finished {
            let after = kills.next().map(|f| whole.mul_f64(f));
            kills_done.push((has_checkpoint(&d.join("part")), after));
            finished = if has_checkpoint(&d.join("part")) {
                resumed += 1;
                run(d, &["run", "--resume", "part", "--quiet"].map(String::from), after)
            } else {
                run(d, &args(executor, integrator, "part"), after)
            };
        }
        assert!(resumed >= 1, "{label}: no kill landed after a checkpoint");
        let got = outputs(&d.join("part"));
        assert_eq!(got.len(), want.len(), "{label}: files");
        for ((name, a), (_, b)) in got.iter().zip(&want) {
            if a != b {
                let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
                let first = a.lines().zip(b.lines()).find(|(x, y)| x != y);
                panic!("{label}: {name} differs from the uninterrupted run's ({first:?}; kills {kills_done:?})");
            }
        }
        println!("{label}: resumed {resumed} times, {} files equal", got.len());
    }
}

#[test]
fn a_damaged_checkpoint_is_reported_and_the_one_before_used() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(run(d, &args("cpu:2", "leapfrog", "full"), None));
    // An interrupted run with two checkpoints: killed after the middle of its run time.
    let a = args("cpu:2", "leapfrog", "part");
    let mut checkpoints = Vec::new();
    for f in [0.5, 0.6, 0.7, 0.8, 0.9, 0.95] {
        // The probe's folder too: a second try would find the first one's outputs, which
        // the command refuses to write over.
        let _ = std::fs::remove_dir_all(d.join("part"));
        let _ = std::fs::remove_dir_all(d.join("probe"));
        let start = Instant::now();
        assert!(run(d, &args("cpu:2", "leapfrog", "probe"), None));
        let whole = start.elapsed();
        run(d, &a, Some(whole.mul_f64(f)));
        checkpoints = std::fs::read_dir(d.join("part"))
            .map(|r| {
                r.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "nbck"))
                    .collect()
            })
            .unwrap_or_default();
        if checkpoints.len() == 2 && !d.join("part/summary.txt").exists() {
            break;
        }
    }
    assert_eq!(checkpoints.len(), 2, "no interrupted run with two checkpoints");
    checkpoints.sort();
    let newest = &checkpoints[1];
    let bytes = std::fs::read(newest).unwrap();
    std::fs::write(newest, &bytes[..bytes.len() / 2]).unwrap();
    let o = Command::new(nbody()).args(["run", "--resume", "part", "--quiet"]).current_dir(d).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("checksum") && err.contains("using the one before it"), "{err}");
    assert!(
        outputs(&d.join("part")) == outputs(&d.join("full")),
        "resumed from the older checkpoint, the outputs differ"
    );
}
