//! A simulation behind an opaque handle ([`NbodyRun`]): the library's run
//! (`nbody::simulation`), so a C code steps a system with any integrator and either
//! gravity solver exactly as the command and Python do, on the device where the
//! executor keeps the particles there. The tree leapfrog's handle
//! ([`crate::tree_run`]) is the same run with the tree's settings.

use crate::{CReal, Failure, NbodyExecutor, NbodyStatus, executor_box, guard, null, records, records_mut};
use core::ffi::{CStr, c_char};
use nbody::integrators::{Diagnostics, Scheme, Words, seal, unseal};
use nbody::simulation::{self, Gravity, Plan, Precision, Solver};
use nbody_core::cell::Criterion;
use nbody_core::registry::{Named, lookup, names};
use nbody_core::{Particle, Softening, Velocity};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A running simulation (see `nbody_run_new_f64`).
#[derive(Debug)]
pub struct NbodyRun {
    pub(crate) run: simulation::Run,
    /// What the run was made with, for [`nbody_run_save`].
    pub(crate) plan: Plan,
}

/// How a run steps (`nbody_run_settings_default` gives the defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyRunSettings {
    /// The integrator's name: "leapfrog", "hermite", "block-hermite", "hermite6" or "rk"
    /// (null: "leapfrog").
    pub integrator: *const c_char,
    /// The gravity solver: "direct" or "tree" (null: "direct"; the tree steps with the
    /// leapfrog only).
    pub gravity: *const c_char,
    /// The tree's opening angle (0: 0.5).
    pub theta: f64,
    /// The tree's relative criterion (0: the geometric test at `theta`).
    pub alpha: f64,
    /// An `NbodySoftening` value.
    pub softening: i32,
    /// Softening length.
    pub eps: f64,
    /// The leapfrog's step; block Hermite's largest step (a power of two).
    pub dt: f64,
    /// The Hermite schemes' accuracy parameter.
    pub eta: f64,
    /// Runge-Kutta's tolerance.
    pub tolerance: f64,
}

/// Conserved quantities of a run now (G = 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NbodyDiagnostics {
    /// Kinetic energy.
    pub kinetic: f64,
    /// Potential energy (½ Σ m φ; the tree's potential for a tree run).
    pub potential: f64,
    /// Their sum.
    pub total: f64,
    /// Total momentum.
    pub momentum: [f64; 3],
    /// Total angular momentum about the origin.
    pub angular_momentum: [f64; 3],
    /// Centre of mass.
    pub centre_of_mass: [f64; 3],
    /// 2T / |W|.
    pub virial_ratio: f64,
}

impl From<Diagnostics> for NbodyDiagnostics {
    fn from(d: Diagnostics) -> Self {
        NbodyDiagnostics {
            kinetic: d.kinetic,
            potential: d.potential,
            total: d.total,
            momentum: d.momentum,
            angular_momentum: d.angular_momentum,
            centre_of_mass: d.centre_of_mass,
            virial_ratio: d.virial_ratio,
        }
    }
}

/// The defaults: the leapfrog over direct summation, Plummer softening 1/64, dt 1/256,
/// eta 0.02, tolerance 1e-8.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_run_settings_default() -> NbodyRunSettings {
    let p = Plan::new(1.0 / 64.0);
    NbodyRunSettings {
        integrator: core::ptr::null(),
        gravity: core::ptr::null(),
        theta: 0.0,
        alpha: 0.0,
        softening: 0,
        eps: p.eps,
        dt: p.dt,
        eta: p.eta,
        tolerance: p.tolerance,
    }
}

/// A registry's value from a C string (`None` for null), or an error naming `what` and
/// every name.
fn named<K: Named>(s: *const c_char, what: &str) -> Result<Option<K>, Failure> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(s) }.to_str().unwrap_or("");
    lookup::<K>(text)
        .map(Some)
        .ok_or_else(|| Failure(NbodyStatus::BadParameter, format!("{what} {text:?}: must be one of {}", names::<K>())))
}

impl NbodyRunSettings {
    /// The library's plan in `precision`.
    pub(crate) fn plan(&self, precision: Precision) -> Result<Plan, Failure> {
        let integrator = named::<Scheme>(self.integrator, "integrator")?.unwrap_or(Scheme::Leapfrog);
        let solver = named::<Solver>(self.gravity, "gravity")?.unwrap_or(Solver::Direct);
        let positive = |x: f64| (x != 0.0).then_some(x);
        let gravity = match solver {
            Solver::Direct => Gravity::Direct,
            Solver::Tree => Gravity::of(solver, positive(self.theta), positive(self.alpha))?,
        };
        let softening = crate::softening_of(self.softening, "softening")?;
        let plan = Plan {
            integrator,
            gravity,
            precision,
            softening,
            eps: self.eps,
            dt: self.dt,
            eta: self.eta,
            tolerance: self.tolerance,
        };
        plan.check()?;
        Ok(plan)
    }
}

fn handle<'a>(r: *mut NbodyRun) -> Result<&'a mut NbodyRun, Failure> {
    // SAFETY: a null handle is refused; otherwise it came from nbody_run_new_*.
    unsafe { r.as_mut() }.ok_or_else(|| null("run"))
}

/// Takes the executor `e` (freed whatever fails after), checks the handle slot `out`, and
/// stores there the run `f` makes on the executor.
///
/// # Safety
/// `e` null or a handle not freed before; `out` null or writable storage for a pointer.
pub(crate) unsafe fn owning<R>(
    e: *mut NbodyExecutor,
    out: *mut *mut R,
    f: impl FnOnce(nbody_backends::Opened) -> Result<R, Failure>,
) -> NbodyStatus {
    // SAFETY: the caller passes a handle from nbody_open or null (refused below).
    let exec = unsafe { executor_box(e) };
    guard(|| {
        let exec = exec.ok_or_else(|| null("executor"))?;
        if out.is_null() {
            return Err(null("out"));
        }
        let run = f(exec.opened)?;
        // SAFETY: `out` is non-null and points to a handle slot the caller owns.
        unsafe { *out = Box::into_raw(Box::new(run)) };
        Ok(())
    })
}

/// The run over `n` C records at `particles` and `velocities` (the fourth lane of a
/// velocity is not read), stepped as `plan` says on `opened`.
pub(crate) fn make<T: CReal>(
    opened: nbody_backends::Opened,
    particles: *const T,
    velocities: *const T,
    n: usize,
    plan: Plan,
) -> Result<NbodyRun, Failure> {
    // SAFETY: the caller promises n 4-lane records at each pointer.
    let (pos, vel) = unsafe {
        (
            records(particles.cast::<Particle<T>>(), n, "particles")?,
            records(velocities.cast::<Velocity<T>>(), n, "velocities")?,
        )
    };
    let rows: Vec<simulation::Row> = simulation::rows(pos, vel);
    Ok(NbodyRun { run: simulation::open(&plan, &rows, 0.0, opened)?, plan })
}

fn new_run<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    velocities: *const T,
    n: usize,
    settings: *const NbodyRunSettings,
    out: *mut *mut NbodyRun,
) -> NbodyStatus {
    let make_run = |opened| {
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let s = unsafe { settings.as_ref() }.ok_or_else(|| null("settings"))?;
        make::<T>(opened, particles, velocities, n, s.plan(Precision::of::<T>())?)
    };
    // SAFETY: the caller's handle and slot, as `owning` requires.
    unsafe { owning(e, out, make_run) }
}

/// Starts a run at time 0 over `n` particles (`[x, y, z, m]` records) and their
/// velocities (`[vx, vy, vz, _]` records; the fourth lane is not read), stepped as
/// `settings` says with forces from the executor `e`. Where the executor can keep the
/// particles (one GPU or several with the native kernels and Plummer softening: the
/// leapfrog, Hermite with shared or block steps, the tree's leapfrog) they stay on the
/// device between steps ([`nbody_run_on_device`] says so); otherwise the integrator
/// steps on the host over the executor's forces. The same settings give the same
/// energies here as `nbody run` and Python's `Simulation`. The run owns `e` from then
/// on: `e` is freed by [`nbody_run_free`], or here if this call fails. Bad settings are
/// `NBODY_STATUS_BAD_PARAMETER` (or `UNSUPPORTED`) naming the setting.
///
/// # Safety
/// `e` must be null or a handle not freed before; each array must hold `n` records
/// (16-byte aligned); `settings` null (an error) or a valid struct whose strings are
/// null or NUL-terminated; `out` null (an error) or writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_new_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    velocities: *const f32,
    n: usize,
    settings: *const NbodyRunSettings,
    out: *mut *mut NbodyRun,
) -> NbodyStatus {
    new_run(e, particles, velocities, n, settings, out)
}

/// [`nbody_run_new_f32`] for doubles (32-byte aligned records). The mixed backends take
/// this one only.
///
/// ```
/// use nbody_c::*;
/// #[repr(C, align(32))]
/// struct Records([f64; 8]);
/// let ps = Records([-0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5]);
/// let vs = Records([0.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0]);
/// let (mut exec, mut run) = (std::ptr::null_mut(), std::ptr::null_mut());
/// assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec) }, NbodyStatus::Ok);
/// let settings = NbodyRunSettings { integrator: c"hermite6".as_ptr(), eps: 0.0, ..nbody_run_settings_default() };
/// let s = unsafe { nbody_run_new_f64(exec, ps.0.as_ptr(), vs.0.as_ptr(), 2, &settings, &mut run) };
/// assert_eq!(s, NbodyStatus::Ok);
/// assert_eq!(unsafe { nbody_run_evolve(run, 1.0) }, NbodyStatus::Ok);
/// let mut d = NbodyDiagnostics::default();
/// assert_eq!(unsafe { nbody_run_diagnostics(run, &mut d) }, NbodyStatus::Ok);
/// assert!((d.total + 0.125).abs() < 1e-9); // a circular binary's energy, kept
/// unsafe { nbody_run_free(run) };
/// ```
///
/// # Safety
/// As [`nbody_run_new_f32`], with 32-byte aligned records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_new_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    velocities: *const f64,
    n: usize,
    settings: *const NbodyRunSettings,
    out: *mut *mut NbodyRun,
) -> NbodyStatus {
    new_run(e, particles, velocities, n, settings, out)
}

/// Steps until `until` is reached (a fixed step: within half a step of it; nothing if it
/// already is). On an error the run stops where the failing step began and stays usable.
///
/// # Safety
/// `run` must be null (an error) or a handle from `nbody_run_new_*` not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_evolve(run: *mut NbodyRun, until: f64) -> NbodyStatus {
    guard(|| evolve(handle(run)?, until))
}

pub(crate) fn evolve(r: &mut NbodyRun, until: f64) -> Result<(), Failure> {
    r.run.sim.advance_to(until).map(|_| ()).map_err(Failure::from)
}

/// The simulated time and the steps taken so far (either pointer may be null).
///
/// # Safety
/// As [`nbody_run_evolve`]; `time` and `steps` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_time(run: *mut NbodyRun, time: *mut f64, steps: *mut u64) -> NbodyStatus {
    guard(|| time_of(handle(run)?, time, steps))
}

pub(crate) fn time_of(r: &NbodyRun, time: *mut f64, steps: *mut u64) -> Result<(), Failure> {
    // SAFETY: each pointer is null (skipped) or writable, the caller promises.
    unsafe {
        if let Some(p) = time.as_mut() {
            *p = r.run.sim.time();
        }
        if let Some(p) = steps.as_mut() {
            *p = r.run.sim.steps();
        }
    }
    Ok(())
}

/// 1 when the run's particles live on the GPU between steps, 0 when they are stepped on
/// the host, -1 for a null handle.
///
/// # Safety
/// As [`nbody_run_evolve`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_on_device(run: *const NbodyRun) -> i32 {
    // SAFETY: null or a live handle, the caller promises.
    unsafe { run.as_ref() }.map_or(-1, |r| i32::from(r.run.on_device))
}

pub(crate) fn state<T: CReal>(
    r: &mut NbodyRun,
    particles: *mut T,
    velocities: *mut T,
    n: usize,
) -> Result<(), Failure> {
    if r.plan.precision != Precision::of::<T>() {
        return Err(Failure(
            NbodyStatus::Unsupported,
            format!("this run is not in {}: use the other precision's call", T::NAME),
        ));
    }
    let rows = r.run.sim.snapshot()?;
    if n != rows.len() {
        return Err(Failure(NbodyStatus::Length, format!("n is {n}, the run holds {} particles", rows.len())));
    }
    // SAFETY: the caller promises n writable records at each non-null pointer.
    let (p, v) = unsafe {
        (
            if particles.is_null() {
                None
            } else {
                Some(records_mut(particles.cast::<Particle<T>>(), n, "particles")?)
            },
            if velocities.is_null() {
                None
            } else {
                Some(records_mut(velocities.cast::<Velocity<T>>(), n, "velocities")?)
            },
        )
    };
    // The rows came from `T`, so these conversions are exact.
    let c = T::from_f64;
    if let Some(p) = p {
        p.iter_mut().zip(&rows).for_each(|(p, r)| *p = Particle::new(c(r[0]), c(r[1]), c(r[2]), c(r[3])));
    }
    if let Some(v) = v {
        v.iter_mut().zip(&rows).for_each(|(v, r)| *v = Velocity::new(c(r[4]), c(r[5]), c(r[6])));
    }
    Ok(())
}

/// Copies the particles (`[x, y, z, m]`) and velocities (`[vx, vy, vz, 0]`) now into
/// `particles` and `velocities` (`n` records each, `n` the run's count; either may be
/// null), from the GPU where they live there. A run made in doubles refuses this call
/// (`Unsupported`): use [`nbody_run_state_f64`].
///
/// # Safety
/// As [`nbody_run_evolve`]; each non-null array must hold `n` writable records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_state_f32(
    run: *mut NbodyRun,
    particles: *mut f32,
    velocities: *mut f32,
    n: usize,
) -> NbodyStatus {
    guard(|| state(handle(run)?, particles, velocities, n))
}

/// [`nbody_run_state_f32`] for a run made in doubles.
///
/// # Safety
/// As [`nbody_run_state_f32`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_state_f64(
    run: *mut NbodyRun,
    particles: *mut f64,
    velocities: *mut f64,
    n: usize,
) -> NbodyStatus {
    guard(|| state(handle(run)?, particles, velocities, n))
}

/// Energies, momenta, centre of mass and virial ratio now, as `nbody run` writes them to
/// energy.csv (one force evaluation, or the tree's field when the particles have not
/// moved since the last one).
///
/// # Safety
/// As [`nbody_run_evolve`]; `out` null (an error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_diagnostics(run: *mut NbodyRun, out: *mut NbodyDiagnostics) -> NbodyStatus {
    guard(|| {
        let d = diagnostics(handle(run)?)?;
        // SAFETY: null is refused; otherwise writable, the caller promises.
        *unsafe { out.as_mut() }.ok_or_else(|| null("out"))? = d;
        Ok(())
    })
}

pub(crate) fn diagnostics(r: &mut NbodyRun) -> Result<NbodyDiagnostics, Failure> {
    Ok(r.run.sim.diagnostics()?.into())
}

/// Frees a run and the executor it owns (null is ignored).
///
/// # Safety
/// `run` must be null or a handle from `nbody_run_new_*` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_free(run: *mut NbodyRun) {
    if !run.is_null() {
        // SAFETY: the handle came from Box::into_raw in `owning` and is freed once.
        drop(unsafe { Box::from_raw(run) });
    }
}

/// The first bytes of a saved run, then the format's version.
const SAVED_MAGIC: &[u8; 8] = b"NBODYRUN";
const SAVED_VERSION: u64 = 1;
/// Words before the run's own: the version, the precision's bits, nine of the plan's
/// and the count of the run's words.
const HEAD: usize = 12;

/// A C path as a Rust one.
fn path_of(path: *const c_char) -> Result<PathBuf, Failure> {
    // SAFETY: a null pointer is refused; otherwise the caller passes a C string.
    let c = unsafe { path.as_ref().map(|_| CStr::from_ptr(path)) }.ok_or_else(|| null("path"))?;
    let text = c.to_str().map_err(|_| Failure(NbodyStatus::BadParameter, "path is not UTF-8".into()))?;
    Ok(PathBuf::from(text))
}

fn file_error(path: &Path, what: &str, e: impl std::fmt::Display) -> Failure {
    Failure(NbodyStatus::File, format!("{}: {what}: {e}", path.display()))
}

/// Where a value stands in its registry, as a word.
fn index<K: Named>(k: K) -> u64 {
    K::ALL.iter().position(|&x| x == k).unwrap_or(0) as u64
}

/// The registry's value at `i`.
fn at<K: Named>(i: u64) -> Option<K> {
    K::ALL.get(usize::try_from(i).ok()?).copied()
}

/// Writes `run` to `path`: its settings, precision and everything the next step needs,
/// so [`nbody_run_load`] continues it bit for bit. The file is written beside `path` and
/// renamed when complete: a run stopped mid-write leaves the previous file whole. A run
/// whose particles live on the GPU is copied down first and loads on one GPU only; a
/// host one loads on any executor that steps on the host.
///
/// # Safety
/// As [`nbody_run_evolve`]; `path` null (an error) or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_save(run: *mut NbodyRun, path: *const c_char) -> NbodyStatus {
    guard(|| save(handle(run)?, path))
}

pub(crate) fn save(r: &mut NbodyRun, path: *const c_char) -> Result<(), Failure> {
    let path = path_of(path)?;
    let words = r.run.save()?;
    let p = r.plan;
    let (theta, alpha) = match p.gravity {
        Gravity::Direct => (0.0, 0.0),
        Gravity::Tree { theta, criterion: Criterion::Geometric } => (theta, 0.0),
        Gravity::Tree { theta, criterion: Criterion::Relative { alpha } } => (theta, alpha),
    };
    let head: [u64; HEAD] = [
        SAVED_VERSION,
        match p.precision {
            Precision::F32 => 32,
            Precision::F64 => 64,
        },
        index(p.integrator),
        index(p.gravity.solver()),
        theta.to_bits(),
        alpha.to_bits(),
        index::<Softening>(p.softening),
        p.eps.to_bits(),
        p.dt.to_bits(),
        p.eta.to_bits(),
        p.tolerance.to_bits(),
        words.len() as u64,
    ];
    let mut bytes = SAVED_MAGIC.to_vec();
    bytes.extend(head.iter().chain(&words).flat_map(|w| w.to_le_bytes()));
    seal(&mut bytes);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.part-{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(file_error(&path, "writing the run", e));
    }
    Ok(())
}

/// Continues a run [`nbody_run_save`] wrote to `path` on the executor `e` (which the new
/// run owns from then on: freed by [`nbody_run_free`], or here if this call fails), in the
/// precision and with the settings it was saved with: stepping it gives the same bits as
/// the saved run would have. A file that cannot be read, is damaged (its checksum), cut
/// short or of another format is `NBODY_STATUS_FILE`, naming the file.
///
/// ```
/// use nbody_c::*;
/// #[repr(C, align(32))]
/// struct Records([f64; 8]);
/// let ps = Records([-0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5]);
/// let vs = Records([0.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0]);
/// let open = || {
///     let mut exec = std::ptr::null_mut();
///     assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec) }, NbodyStatus::Ok);
///     exec
/// };
/// let settings = NbodyRunSettings { integrator: c"hermite".as_ptr(), eps: 0.0, ..nbody_run_settings_default() };
/// let (mut run, mut again) = (std::ptr::null_mut(), std::ptr::null_mut());
/// assert_eq!(unsafe { nbody_run_new_f64(open(), ps.0.as_ptr(), vs.0.as_ptr(), 2, &settings, &mut run) }, NbodyStatus::Ok);
/// assert_eq!(unsafe { nbody_run_evolve(run, 0.5) }, NbodyStatus::Ok);
/// let dir = std::env::temp_dir().join(format!("nbody-run-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = std::ffi::CString::new(dir.join("run.nbody").to_str().unwrap()).unwrap();
/// assert_eq!(unsafe { nbody_run_save(run, path.as_ptr()) }, NbodyStatus::Ok);
/// assert_eq!(unsafe { nbody_run_load(open(), path.as_ptr(), &mut again) }, NbodyStatus::Ok);
/// let (mut a, mut b) = (NbodyDiagnostics::default(), NbodyDiagnostics::default());
/// for (r, d) in [(run, &mut a), (again, &mut b)] {
///     assert_eq!(unsafe { nbody_run_evolve(r, 1.0) }, NbodyStatus::Ok);
///     assert_eq!(unsafe { nbody_run_diagnostics(r, d) }, NbodyStatus::Ok);
/// }
/// assert_eq!(a, b);
/// unsafe { nbody_run_free(run) };
/// unsafe { nbody_run_free(again) };
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Safety
/// `e` must be null or a handle not freed before; `path` null (an error) or a
/// NUL-terminated string; `out` null (an error) or writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_run_load(
    e: *mut NbodyExecutor,
    path: *const c_char,
    out: *mut *mut NbodyRun,
) -> NbodyStatus {
    // SAFETY: the caller's handle and slot, as `owning` requires.
    unsafe { owning(e, out, |opened| load(opened, path)) }
}

/// [`nbody_run_load`]'s work once the executor is taken.
pub(crate) fn load(opened: nbody_backends::Opened, path: *const c_char) -> Result<NbodyRun, Failure> {
    let path = path_of(path)?;
    let bytes = std::fs::read(&path).map_err(|e| file_error(&path, "reading the run", e))?;
    let bad = |why: &str| file_error(&path, "not a run nbody_run_save or nbody_tree_run_save wrote", why);
    if bytes.len() < 8 + (HEAD + 1) * 8 || &bytes[..8] != SAVED_MAGIC || bytes.len() % 8 != 0 {
        return Err(bad("wrong start or size"));
    }
    let body = unseal(&bytes).ok_or_else(|| bad("damaged (its checksum does not match)"))?;
    let all: Vec<u64> = body[8..].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
    let (head, words) = all.split_at(HEAD);
    if head[0] != SAVED_VERSION {
        return Err(bad("written by another version of the format"));
    }
    if head[11] != words.len() as u64 {
        return Err(bad("cut short"));
    }
    let f = f64::from_bits;
    let precision = match head[1] {
        32 => Precision::F32,
        64 => Precision::F64,
        _ => return Err(bad("unknown precision")),
    };
    let (integrator, solver, softening) = (at::<Scheme>(head[2]), at::<Solver>(head[3]), at::<Softening>(head[6]));
    let (Some(integrator), Some(solver), Some(softening)) = (integrator, solver, softening) else {
        return Err(bad("unknown settings"));
    };
    let gravity = match solver {
        Solver::Direct => Gravity::Direct,
        Solver::Tree => Gravity::of(solver, Some(f(head[4])), (head[5] != 0).then(|| f(head[5])))?,
    };
    let plan = Plan {
        integrator,
        gravity,
        precision,
        softening,
        eps: f(head[7]),
        dt: f(head[8]),
        eta: f(head[9]),
        tolerance: f(head[10]),
    };
    // Made over no particles, then given the saved ones and the integrator's state back.
    let mut run = simulation::open(&plan, &[], 0.0, opened)?;
    let mut w = Words::new(words);
    run.restore(&mut w)?;
    if !w.is_done() {
        return Err(bad("words left over (another format or damage)"));
    }
    Ok(NbodyRun { run, plan })
}
