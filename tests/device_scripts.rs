//! The device scripts gate: scripts/gate.sh's `step` stops a script at its first failing
//! check (a failing pipeline inside `bash -c` included), and the last line is
//! `N passed, N failed` with a non-zero exit whenever anything failed or did not run to
//! its end. Every device script sources it and marks its end with `gate_done`.

use std::path::Path;
use std::process::Command;

/// Runs `body` in bash after sourcing gate.sh: (exit code, last line of stdout).
fn gated(body: &str) -> (i32, String) {
    let gate = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gate.sh");
    let script = format!(". '{}'\n{body}\n", gate.display());
    let out = Command::new("bash").arg("-c").arg(&script).output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = stdout.lines().last().unwrap_or("").to_string();
    (out.status.code().unwrap_or(-1), last)
}

#[test]
fn every_step_passing_exits_zero() {
    assert_eq!(gated("step one true\nstep two bash -c 'true | cat'\ngate_done"), (0, "2 passed, 0 failed".into()));
}

#[test]
fn the_first_failing_step_stops_the_script() {
    let (rc, last) = gated("step one true\nstep two false\nstep three touch /nonexistent/never\ngate_done");
    assert_eq!((rc, last.as_str()), (1, "1 passed, 1 failed"));
}

#[test]
fn a_failing_pipeline_inside_bash_c_fails_its_step() {
    // The pipeline's last command succeeds; only pipefail, passed on to the child, sees
    // the failure before it.
    let (rc, last) = gated("step tee bash -c 'false | tee /dev/null'\ngate_done");
    assert_eq!((rc, last.as_str()), (1, "0 passed, 1 failed"));
}

#[test]
fn a_script_that_dies_outside_a_step_fails() {
    let (rc, last) = gated("step one true\nexit 3");
    assert_eq!((rc, last.as_str()), (1, "1 passed, 1 failed"));
    // Stopping early without an error still fails: the checks after it never ran.
    let (rc, last) = gated("step one true\nexit 0");
    assert_eq!((rc, last.as_str()), (1, "1 passed, 1 failed"));
}

#[test]
fn every_device_script_is_gated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in [
        "scripts/gpu-session.sh",
        "scripts/two-gpu-session.sh",
        "scripts/mpi-session.sh",
        "scripts/sanitize-gpu.sh",
        // Their go.sh, written by the staging scripts.
        "scripts/stage-amuse-gpu.sh",
        "scripts/stage-grape-gpu.sh",
    ] {
        let text = std::fs::read_to_string(root.join(script)).expect("a device script");
        let sources = text.lines().any(|l| l.trim_start().starts_with(". ") && l.contains("gate.sh"));
        assert!(sources, "{script} does not source gate.sh");
        assert!(text.lines().any(|l| l.trim() == "gate_done"), "{script} does not mark its end with gate_done");
    }
    let check = std::fs::read_to_string(root.join("python/gpu_check.py")).expect("gpu_check.py");
    assert!(check.contains("sys.exit(1)"), "gpu_check.py must exit non-zero when a check fails");
}
