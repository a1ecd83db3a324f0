//! # nbody-conformance
//!
//! The conformance and property suite, written once and run against every executor in
//! every precision, the way cubecl's `testgen_all!` works: a new executor gets the whole
//! suite from one line in its test file.
//!
//! ```no_run
//! use nbody_conformance::{run, suite};
//! use nbody_core::Reference;
//! let mut trials = suite::<f32, _>("reference/f32", || Ok(Reference));
//! trials.extend(suite::<f64, _>("reference/f64", || Ok(Reference)));
//! run(trials);
//! ```
//!
//! Each check compares against the f64 [`oracle`] with the tolerance [`tolerance`]
//! derives from the oracle's per-target error scale, or checks a physical property
//! (Newton's third law, invariances, linearity) that holds whatever the summation order.
//! If the executor cannot be created because there is no device, every check is
//! reported as *ignored*, never as passed.

// Comparisons are written `!(diff <= allowed)` on purpose: a NaN must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod accuracy;
mod cells;
mod checks;
mod declared;
pub mod fuzz;
mod r#gen;
mod gradients;
pub mod mutants;
mod neighbours;
mod per_particle;
mod snap;
mod spline;
pub mod wrappers;

pub use r#gen::Case;
pub use libtest_mimic::{self, Arguments, Failed, Trial};
use nbody_core::oracle::{self, Exact};
use nbody_core::projection::Projecting;
use nbody_core::{Error, Field, Params, Particle, Real};
pub use spline::computes_spline;
use std::sync::Arc;

/// The arithmetic a compared value went through: each has its own multiple of the unit
/// roundoff in the error model (see [`tolerance`]).
///
/// The model: a value is correct when `|value − oracle| ≤ multiple · u · scale`, where
/// `u` is the unit roundoff of the arithmetic (`f32::EPSILON` for f32 and for the
/// mixed executors' f32 interactions, near and far alike; `f64::EPSILON` for f64) and
/// `scale` is the target's own error scale from the f64 [`oracle`]: the sum of the
/// magnitudes of its terms, each widened by how far rounding the coordinates moves it.
/// The oracle sums with compensation, so its own error is about one rounding whatever
/// the number of sources. The multiple does not grow with the source count: it covers
/// the suite's largest call (37 targets against 30,025 sources) summed one source after
/// another, as the scalar reference and a GPU thread sum, and nothing more, so an
/// executor that drops or doubles one source of that call is caught (the conformance
/// crate's own tests hold it to that).
///
/// Measured on the CPU (the largest ratio `|value − oracle| / (u · scale)` over the
/// suite): the SIMD executors need 2 (f32, mixed) and 4 (f64) for pairs and 8 (f64) for
/// cells; the reference's sequential f64 sums 17.2 for the potential at 30,025 sources.
///
/// ```
/// use nbody_conformance::{tolerance, Path};
/// assert_eq!(tolerance(f32::EPSILON as f64, Path::Pairs), 64.0 * f32::EPSILON as f64);
/// assert!(tolerance(1.0, Path::Cells) > tolerance(1.0, Path::Pairs));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Plummer pairs (and ε = 0), in f32, f64 or the mixed executors' near and far
    /// sums: the difference, r², an rsqrt refined to about 2 ulp and three products per
    /// pair, summed in tiles, lanes, threads or blocks.
    Pairs,
    /// The spline kernel's polynomials inside the support, and per-particle lengths.
    Spline,
    /// Cells: the quadrupole's thirty further operations per interaction.
    Cells,
    /// The jerk, from relative velocities: one more product chain per pair.
    Jerk,
    /// The snap: two derivative orders above the acceleration, each term a chain of
    /// about twenty products.
    Snap,
    /// The gradients: the tidal tensor and the vector-Jacobian product, one derivative
    /// order above the acceleration (terms to `r⁻⁵`), times the cotangents.
    Gradients,
}

impl Path {
    /// The multiple of `u · scale` a value of this path may err by.
    pub const fn multiple(self) -> f64 {
        match self {
            Path::Pairs | Path::Spline | Path::Jerk | Path::Gradients => 64.0,
            Path::Cells => 128.0,
            Path::Snap => 256.0,
        }
    }
}

/// The relative tolerance (against the oracle's error scale) of a value of `path`
/// computed with unit roundoff `u`: the error model of [`Path`].
pub fn tolerance(u: f64, path: Path) -> f64 {
    path.multiple() * u
}

/// Builds the suite's trials for one executor and precision. `make` creates a fresh
/// executor for each check; if it returns [`Error::NoDevice`] the checks are ignored.
pub fn suite<T: Real, E: Projecting<T> + 'static>(
    prefix: &str,
    make: impl Fn() -> Result<E, Error> + Send + Sync + 'static,
) -> Vec<Trial> {
    suite_with_roundoff::<T, E>(prefix, T::epsilon().to_f64(), make)
}

/// [`suite`] for an executor whose arithmetic is less precise than its interface type:
/// tolerances use the unit roundoff `u` (e.g. `f32::EPSILON` for a mixed-precision
/// executor behind an f64 interface).
pub fn suite_with_roundoff<T: Real, E: Projecting<T> + 'static>(
    prefix: &str,
    u: f64,
    make: impl Fn() -> Result<E, Error> + Send + Sync + 'static,
) -> Vec<Trial> {
    let make = Arc::new(make);
    let no_device = matches!(make(), Err(Error::NoDevice));
    checks::all::<T, E>()
        .into_iter()
        .map(|(name, check)| {
            let make = Arc::clone(&make);
            let trial = Trial::test(format!("{prefix}::{name}"), move || {
                let mut exec = make().map_err(|e| Failed::from(format!("creating the executor: {e}")))?;
                check(&mut exec, u).map_err(Failed::from)
            });
            trial.with_ignored_flag(no_device)
        })
        .collect()
}

/// Runs the suite's check `name` on `exec` with unit roundoff `u`: for an executor set up
/// in a way the suite's fresh executors are not (a bound on its memory, a forced launch).
///
/// ```
/// let r = nbody_conformance::run_check::<f64, _>("newton_third_law", &mut nbody_core::Reference, f64::EPSILON);
/// assert!(r.is_ok());
/// assert!(nbody_conformance::run_check::<f64, _>("no such check", &mut nbody_core::Reference, 0.0).is_err());
/// ```
pub fn run_check<T: Real, E: Projecting<T>>(name: &str, exec: &mut E, u: f64) -> Result<(), String> {
    let (_, check) =
        checks::all::<T, E>().into_iter().find(|(n, _)| *n == name).ok_or_else(|| format!("no check named {name}"))?;
    check(exec, u)
}

/// Runs trials with the command line's arguments (filters, `--list`, `--ignored`) and
/// exits with the harness's status.
pub fn run(trials: Vec<Trial>) -> ! {
    let args = Arguments::from_args();
    libtest_mimic::run(&args, trials).exit()
}

/// Converts `[x, y, z, m]` rows into particles of precision `T`.
pub fn particles<T: Real>(rows: &[[f64; 4]]) -> Vec<Particle<T>> {
    rows.iter()
        .map(|r| Particle::new(T::from_f64(r[0]), T::from_f64(r[1]), T::from_f64(r[2]), T::from_f64(r[3])))
        .collect()
}

/// The oracle for a call, or the validation error it reports.
pub fn exact<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
) -> Result<Vec<Exact>, Error> {
    let mut out = vec![Exact::default(); targets.len()];
    oracle::field(targets, None, sources, None, params, &mut out)?;
    Ok(out)
}

/// Checks `got − before` against the oracle: every acceleration component (and the
/// potential when `potential`, else that `phi` is unchanged) within
/// `tolerance(u, path) · scale`, plus the rounding of adding into `before`.
pub fn compare<T: Real>(
    got: &[Field<T>],
    before: &[Field<T>],
    exact: &[Exact],
    path: Path,
    potential: bool,
    u: f64,
) -> Result<(), String> {
    let tol = tolerance(u, path);
    // Below the smallest normal number results lose their precision (and may be flushed
    // to zero): that much absolute difference is always allowed.
    let floor = 4.0 * T::min_positive_value().to_f64();
    for (i, ((g, b), e)) in got.iter().zip(before).zip(exact).enumerate() {
        let (g4, b4) = (lanes(g), lanes(b));
        for k in 0..3 {
            let computed = g4[k] - b4[k];
            let allowed = tol * e.acc_bound + 2.0 * u * (g4[k].abs() + b4[k].abs()) + floor;
            if !((computed - e.acc[k]).abs() <= allowed) {
                return Err(format!(
                    "target {i}, acceleration[{k}]: got {computed:e}, oracle {:e}, |diff| {:e} > allowed {allowed:e}",
                    e.acc[k],
                    (computed - e.acc[k]).abs()
                ));
            }
        }
        if potential {
            let computed = g4[3] - b4[3];
            let allowed = tol * e.phi_bound + 2.0 * u * (g4[3].abs() + b4[3].abs()) + floor;
            if !((computed - e.phi).abs() <= allowed) {
                return Err(format!(
                    "target {i}, potential: got {computed:e}, oracle {:e}, allowed {allowed:e}",
                    e.phi
                ));
            }
        } else if g.phi.to_bits_u64() != b.phi.to_bits_u64() {
            return Err(format!("target {i}: potential changed by an acceleration-only call"));
        }
    }
    Ok(())
}

/// The four lanes widened to f64.
pub fn lanes<T: Real>(f: &Field<T>) -> [f64; 4] {
    [f.ax.to_f64(), f.ay.to_f64(), f.az.to_f64(), f.phi.to_f64()]
}

/// Bit patterns, to check that an output was left untouched.
trait Bits {
    fn to_bits_u64(self) -> u64;
}

impl<T: Real> Bits for T {
    fn to_bits_u64(self) -> u64 {
        self.to_f64().to_bits()
    }
}

/// Per-particle relative error of the acceleration, `|a − a_ref| / |a_ref|`, over all
/// targets: (max, median). The accuracy figure the executor issues ask for.
pub fn relative_acceleration_error<T: Real>(got: &[Field<T>], exact: &[Exact]) -> (f64, f64) {
    let mut errs: Vec<f64> = got
        .iter()
        .zip(exact)
        .map(|(g, e)| {
            let d = [g.ax.to_f64() - e.acc[0], g.ay.to_f64() - e.acc[1], g.az.to_f64() - e.acc[2]];
            let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            norm(d) / norm(e.acc)
        })
        .collect();
    errs.sort_by(f64::total_cmp);
    (errs.last().copied().unwrap_or(0.0), errs.get(errs.len() / 2).copied().unwrap_or(0.0))
}

/// `mpirun` for `ranks` processes on this machine, as the MPI tests start it: more ranks
/// than cores allowed, as root too, over loopback transports only (no network
/// interfaces probed, no warnings about them).
pub fn mpirun(ranks: usize) -> std::process::Command {
    // Each mpirun its own session directory: tests run side by side, and two mpiruns
    // of one user creating the same /tmp/ompi.HOST.UID at once can fail ("File exists").
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = std::env::temp_dir().join(format!("nbody-mpirun-{}", std::process::id())).join(run.to_string());
    let _ = std::fs::create_dir_all(&base);
    let mut c = std::process::Command::new("mpirun");
    c.args(["--oversubscribe", "-n", &ranks.to_string()])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_orte_tmpdir_base", &base);
    c
}

/// Waits for `child` at most `limit`; past it the child is killed and `None` returned
/// (a hang, reported by the caller as a failure rather than waited on for ever).
pub fn wait_within(child: &mut std::process::Child, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for a child process") {
            return Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
