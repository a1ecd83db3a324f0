//! A tree leapfrog behind an opaque handle ([`NbodyTreeRun`]): the library's run
//! (`nbody::simulation`) with the tree's settings, so a C code steps a system with tree
//! forces as the command does, on the device when its executor is one GPU. It is
//! [`crate::run::NbodyRun`] with the leapfrog and the tree chosen.

use crate::run::{self, NbodyRun, owning};
use crate::{CReal, Failure, NbodyExecutor, NbodyStatus, NbodyTree, guard, null};
use core::ffi::c_char;
use nbody::integrators::Scheme;
use nbody::simulation::{Gravity, Plan, Precision};

/// A system stepped by a leapfrog with Barnes-Hut forces (see `nbody_tree_run_new_f64`).
#[derive(Debug)]
pub struct NbodyTreeRun(NbodyRun);

fn handle<'a>(r: *mut NbodyTreeRun) -> Result<&'a mut NbodyRun, Failure> {
    // SAFETY: a null handle is refused; otherwise it came from nbody_tree_run_new_*.
    unsafe { r.as_mut() }.map(|r| &mut r.0).ok_or_else(|| null("run"))
}

#[allow(clippy::too_many_arguments)] // the C signature
fn new_run<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    velocities: *const T,
    n: usize,
    tree: *const NbodyTree,
    eps: f64,
    soft: i32,
    dt: f64,
    out: *mut *mut NbodyTreeRun,
) -> NbodyStatus {
    let make_run = |opened| {
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let t = *unsafe { tree.as_ref() }.ok_or_else(|| null("tree"))?;
        let positive = |x: f64| (x != 0.0).then_some(x);
        let gravity = Gravity::of(nbody::simulation::Solver::Tree, Some(t.theta), positive(t.alpha))?;
        let plan = Plan {
            integrator: Scheme::Leapfrog,
            gravity,
            precision: Precision::of::<T>(),
            softening: crate::softening_of(soft, "softening")?,
            dt,
            ..Plan::new(eps)
        };
        plan.check()?;
        Ok(NbodyTreeRun(run::make::<T>(opened, particles, velocities, n, plan)?))
    };
    // SAFETY: the caller's handle and slot, as `owning` requires.
    unsafe { owning(e, out, make_run) }
}

/// Starts a leapfrog of fixed step `dt` over `n` particles (`[x, y, z, m]` records) and
/// their velocities (`[vx, vy, vz, _]` records; the fourth lane is not read) at time 0,
/// its forces from a Barnes-Hut tree with quadrupole cells (`tree`: theta and, if
/// positive, the relative criterion's alpha) softened by `eps` (`softening`: 0 Plummer,
/// 1 the spline). The run owns the executor `e` from then on: `e` is freed by
/// [`nbody_tree_run_free`], or here if this call fails, and must not be used again. On
/// one GPU with the native kernels (`"cuda:0"`) and Plummer softening the whole step runs
/// on the device (sort, build, walk, leaves, kicks and drifts); on any other executor
/// the tree is built and walked on the host and its leaves run on the executor
/// ([`nbody_tree_run_on_device`] says which). Particles and velocities are copied.
///
/// # Safety
/// `e` must be null or a handle not freed before; each array must hold `n` records
/// (16-byte aligned); `out` null (an error) or writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_new_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    velocities: *const f32,
    n: usize,
    tree: *const NbodyTree,
    eps: f64,
    softening: i32,
    dt: f64,
    out: *mut *mut NbodyTreeRun,
) -> NbodyStatus {
    new_run(e, particles, velocities, n, tree, eps, softening, dt, out)
}

/// [`nbody_tree_run_new_f32`] for doubles (32-byte aligned records). The mixed backends
/// take this one only.
///
/// ```
/// use nbody_c::*;
/// #[repr(C, align(32))]
/// struct Records([f64; 8]);
/// let ps = Records([-0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5]);
/// let vs = Records([0.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0]);
/// let (mut exec, mut run) = (std::ptr::null_mut(), std::ptr::null_mut());
/// assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec) }, NbodyStatus::Ok);
/// let tree = NbodyTree { theta: 0.5, alpha: 0.0 };
/// let s = unsafe { nbody_tree_run_new_f64(exec, ps.0.as_ptr(), vs.0.as_ptr(), 2, &tree, 0.0, 0, 1.0 / 256.0, &mut run) };
/// assert_eq!(s, NbodyStatus::Ok);
/// assert_eq!(unsafe { nbody_tree_run_evolve(run, 1.0) }, NbodyStatus::Ok);
/// let (mut kinetic, mut potential) = (0.0, 0.0);
/// assert_eq!(unsafe { nbody_tree_run_energies(run, &mut kinetic, &mut potential) }, NbodyStatus::Ok);
/// assert!((kinetic + potential + 0.125).abs() < 1e-4); // a circular binary's energy
/// unsafe { nbody_tree_run_free(run) };
/// ```
///
/// # Safety
/// As [`nbody_tree_run_new_f32`], with 32-byte aligned records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_new_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    velocities: *const f64,
    n: usize,
    tree: *const NbodyTree,
    eps: f64,
    softening: i32,
    dt: f64,
    out: *mut *mut NbodyTreeRun,
) -> NbodyStatus {
    new_run(e, particles, velocities, n, tree, eps, softening, dt, out)
}

/// Steps until the time is within half a step of `until` (nothing if it already is).
/// On an error the run stops where the failing step began and stays usable.
///
/// # Safety
/// `run` must be null (an error) or a handle from `nbody_tree_run_new_*` not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_evolve(run: *mut NbodyTreeRun, until: f64) -> NbodyStatus {
    guard(|| run::evolve(handle(run)?, until))
}

/// The simulated time and the steps taken so far (either pointer may be null).
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `time` and `steps` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_time(run: *mut NbodyTreeRun, time: *mut f64, steps: *mut u64) -> NbodyStatus {
    guard(|| run::time_of(handle(run)?, time, steps))
}

/// 1 when the run's whole step is on the GPU (the device tree), 0 when the tree is
/// built on the host, -1 for a null handle.
///
/// # Safety
/// As [`nbody_tree_run_evolve`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_on_device(run: *const NbodyTreeRun) -> i32 {
    // SAFETY: null or a live handle, the caller promises.
    unsafe { run.as_ref() }.map_or(-1, |r| i32::from(r.0.run.on_device))
}

/// Copies the particles (`[x, y, z, m]`) and velocities (`[vx, vy, vz, 0]`) now into
/// `particles` and `velocities` (`n` records each, `n` the run's count; either may be
/// null), from the GPU when the tree lives there. A run made in doubles refuses this
/// call (`Unsupported`): use [`nbody_tree_run_state_f64`].
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; each non-null array must hold `n` writable records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_state_f32(
    run: *mut NbodyTreeRun,
    particles: *mut f32,
    velocities: *mut f32,
    n: usize,
) -> NbodyStatus {
    guard(|| run::state(handle(run)?, particles, velocities, n))
}

/// [`nbody_tree_run_state_f32`] for a run made in doubles.
///
/// # Safety
/// As [`nbody_tree_run_state_f32`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_state_f64(
    run: *mut NbodyTreeRun,
    particles: *mut f64,
    velocities: *mut f64,
    n: usize,
) -> NbodyStatus {
    guard(|| run::state(handle(run)?, particles, velocities, n))
}

/// The kinetic energy and the potential energy now, the potential from the tree's field
/// (½ Σ m φ, G = 1; a tree force is computed only if the particles moved since the last
/// one). Either pointer may be null.
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `kinetic` and `potential` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_energies(
    run: *mut NbodyTreeRun,
    kinetic: *mut f64,
    potential: *mut f64,
) -> NbodyStatus {
    guard(|| {
        let d = run::diagnostics(handle(run)?)?;
        // SAFETY: each pointer is null (skipped) or writable, the caller promises.
        unsafe {
            if let Some(p) = kinetic.as_mut() {
                *p = d.kinetic;
            }
            if let Some(p) = potential.as_mut() {
                *p = d.potential;
            }
        }
        Ok(())
    })
}

/// Frees a run and the executor it owns (null is ignored).
///
/// # Safety
/// `run` must be null or a handle from `nbody_tree_run_new_*` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_free(run: *mut NbodyTreeRun) {
    if !run.is_null() {
        // SAFETY: the handle came from Box::into_raw in `owning` and is freed once.
        drop(unsafe { Box::from_raw(run) });
    }
}

/// Writes `run` to `path`: its settings, precision, time, steps, particles, velocities
/// and the last force (the leapfrog's half kick), so [`nbody_tree_run_load`] continues it
/// bit for bit. The file is written beside `path` and renamed when complete: a run
/// stopped mid-write leaves the previous file whole. A run on the device tree is copied
/// down first and loads on one GPU only; a host tree's loads on any other executor.
///
/// ```
/// use nbody_c::*;
/// #[repr(C, align(32))]
/// struct Records([f64; 8]);
/// let ps = Records([-0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5]);
/// let vs = Records([0.0, -0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0]);
/// let (mut exec, mut run) = (std::ptr::null_mut(), std::ptr::null_mut());
/// assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec) }, NbodyStatus::Ok);
/// let tree = NbodyTree { theta: 0.5, alpha: 0.0 };
/// let s = unsafe { nbody_tree_run_new_f64(exec, ps.0.as_ptr(), vs.0.as_ptr(), 2, &tree, 0.0, 0, 1.0 / 256.0, &mut run) };
/// assert_eq!(s, NbodyStatus::Ok);
/// let dir = std::env::temp_dir().join(format!("nbody-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = std::ffi::CString::new(dir.join("run.tree").to_str().unwrap()).unwrap();
/// assert_eq!(unsafe { nbody_tree_run_save(run, path.as_ptr()) }, NbodyStatus::Ok);
/// let (mut exec2, mut again) = (std::ptr::null_mut(), std::ptr::null_mut());
/// assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec2) }, NbodyStatus::Ok);
/// assert_eq!(unsafe { nbody_tree_run_load(exec2, path.as_ptr(), &mut again) }, NbodyStatus::Ok);
/// unsafe { nbody_tree_run_free(run) };
/// unsafe { nbody_tree_run_free(again) };
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `path` null (an error) or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_save(run: *mut NbodyTreeRun, path: *const c_char) -> NbodyStatus {
    guard(|| run::save(handle(run)?, path))
}

/// Continues a run [`nbody_tree_run_save`] wrote to `path` on the executor `e` (which
/// the new run owns from then on: freed by [`nbody_tree_run_free`], or here if this call
/// fails), in the precision it was saved in: stepping it gives the same bits as the
/// saved run would have. A file that cannot be read, is damaged (its checksum), cut
/// short or of another format is `NBODY_STATUS_FILE`, naming the file; a run saved on the
/// device tree needs one GPU (`"cuda:0"`), a host tree's any other executor.
///
/// # Safety
/// `e` must be null or a handle not freed before; `path` null (an error) or a
/// NUL-terminated string; `out` null (an error) or writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_load(
    e: *mut NbodyExecutor,
    path: *const c_char,
    out: *mut *mut NbodyTreeRun,
) -> NbodyStatus {
    // SAFETY: the caller's handle and slot, as `owning` requires.
    unsafe { owning(e, out, |opened| load_file(opened, path)) }
}

/// [`nbody_tree_run_load`]'s work once the executor is taken: a saved run of the tree.
fn load_file(opened: nbody_backends::Opened, path: *const c_char) -> Result<NbodyTreeRun, Failure> {
    let run = run::load(opened, path)?;
    match run.plan.gravity {
        Gravity::Tree { .. } => Ok(NbodyTreeRun(run)),
        Gravity::Direct => {
            Err(Failure(NbodyStatus::File, "a saved direct-summation run: load it with nbody_run_load".into()))
        }
    }
}
