//! Gadget HDF5 snapshots from `nbody run --format hdf5`, read back by h5py (Debian's,
//! scripts/install-hdf5.sh) field by field against the .npy snapshot of the same run, and
//! read by the command itself as initial conditions.

use nbody::cli::files::read_table;
use std::path::Path;
use std::process::{Command, Output};

fn nbody(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nbody")).args(args).current_dir(dir).output().expect("the binary starts")
}

fn run_ok(args: &[&str], dir: &Path) {
    let o = nbody(args, dir);
    assert!(o.status.success(), "nbody {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A Python with h5py: Debian's first (what the install script provides), then PATH's.
fn python_with_h5py() -> &'static str {
    ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Command::new(p).args(["-c", "import h5py"]).output().is_ok_and(|o| o.status.success()))
        .expect("no Python with h5py: run scripts/install-hdf5.sh")
}

const CHECK: &str = r#"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
ref = np.load(sys.argv[2])
h = f["Header"].attrs
n = len(ref)
assert list(h["NumPart_ThisFile"]) == [0, n, 0, 0, 0, 0], h["NumPart_ThisFile"]
assert list(h["NumPart_Total"]) == [0, n, 0, 0, 0, 0]
assert list(h["MassTable"]) == [0.0] * 6
assert h["Time"] == float(sys.argv[3]), h["Time"]
assert h["BoxSize"] >= 2 * np.abs(ref[:, :3]).max()
assert h["NumFilesPerSnapshot"] == 1 and h["Redshift"] == 0.0
p = f["PartType1"]
assert set(p.keys()) == {"Coordinates", "Velocities", "Masses", "ParticleIDs"}, list(p.keys())
assert p["Coordinates"].shape == (n, 3) and p["Coordinates"].dtype == np.float64
assert np.array_equal(p["Coordinates"][:], ref[:, 0:3])
assert np.array_equal(p["Masses"][:], ref[:, 3])
assert np.array_equal(p["Velocities"][:], ref[:, 4:7])
assert np.array_equal(p["ParticleIDs"][:], np.arange(1, n + 1))
print("h5py read", n, "particles at t =", h["Time"])
"#;

#[test]
fn hdf5_snapshots_hold_what_the_npy_ones_do_and_read_back_as_initial_conditions() {
    let dir = tempfile::tempdir().unwrap();
    let common = ["--n", "300", "--t-end", "0.0625", "--pixels", "64", "--quiet", "--executor", "cpu:1"];
    run_ok(&[&common[..], &["--out", "npy"]].concat(), dir.path());
    run_ok(&[&common[..], &["--out", "h5", "--format", "hdf5"]].concat(), dir.path());
    let (h5, npy) = (dir.path().join("h5"), dir.path().join("npy"));
    assert!(!h5.join("snapshot-00001.npy").exists());
    for (k, t) in [(0, "0"), (1, "0.0625")] {
        let (a, b) = (h5.join(format!("snapshot-0000{k}.hdf5")), npy.join(format!("snapshot-0000{k}.npy")));
        let o = Command::new(python_with_h5py()).args(["-c", CHECK]).arg(&a).arg(&b).arg(t).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}{}", text, String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("h5py read 300 particles"), "{text}");
        // The command reads its own snapshot back: the same numbers as the .npy one.
        assert_eq!(read_table(&a).unwrap().values, read_table(&b).unwrap().values);
    }
    // A snapshot as initial conditions.
    let input = h5.join("snapshot-00001.hdf5");
    run_ok(
        &["--input", input.to_str().unwrap(), "--t-end", "0.03125", "--quiet", "--out", "again", "--executor", "cpu:1"],
        dir.path(),
    );
    let again = read_table(&dir.path().join("again/snapshot-00000.npy")).unwrap();
    assert_eq!(again.values, read_table(&input).unwrap().values);
    // A damaged file: one line naming it.
    std::fs::write(dir.path().join("bad.hdf5"), b"HDF? no").unwrap();
    let o = nbody(&["--input", "bad.hdf5", "--quiet", "--out", "bad"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("bad.hdf5: not a readable HDF5 file"), "{err}");

    // Physical units: Gadget's unit attributes, the time in the run's unit.
    run_ok(&[&common[..], &["--out", "units", "--format", "hdf5", "--units", "kpc,1e10msun,gyr"]].concat(), dir.path());
    let units = r#"
import sys, h5py
h = h5py.File(sys.argv[1], "r")["Header"].attrs
p = h5py.File(sys.argv[1], "r")["Parameters"].attrs
assert abs(h["UnitLength_in_cm"] / 3.0857e21 - 1) < 1e-4, h["UnitLength_in_cm"]
assert abs(h["UnitMass_in_g"] / 1.98841e43 - 1) < 1e-5, h["UnitMass_in_g"]
assert abs(h["UnitVelocity_in_cm_per_s"] / 97779.2 - 1) < 1e-4, h["UnitVelocity_in_cm_per_s"]
assert p["UnitLength_in_cm"] == h["UnitLength_in_cm"]
assert abs(h["Time"] - 0.0625) < 1e-12, h["Time"]
print("units ok")
"#;
    let snap = dir.path().join("units/snapshot-00001.hdf5");
    let o = Command::new(python_with_h5py()).args(["-c", units]).arg(&snap).output().unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
}
