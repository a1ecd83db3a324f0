//! A tree leapfrog behind an opaque handle ([`NbodyTreeRun`]): the facade's
//! [`nbody::tree::TreeRun`], so a C code steps a system with tree forces as the command
//! does, on the device when its executor is one GPU.

use crate::{executor_box, guard, null, records, records_mut, CReal, Failure, NbodyExecutor, NbodyStatus, NbodyTree};
use nbody::integrators::State;
use nbody::tree::TreeRun;
use nbody_core::cell::Criterion;
use nbody_core::{Particle, Softening, Velocity};

/// A system stepped by a leapfrog with Barnes-Hut forces (see `nbody_tree_run_new_f64`).
#[derive(Debug)]
pub struct NbodyTreeRun {
    run: Precision,
}

#[derive(Debug)]
enum Precision {
    F32(TreeRun<f32>),
    F64(TreeRun<f64>),
}

/// Runs `f` on the run whichever its precision.
macro_rules! each {
    ($run:expr, $r:ident => $body:expr) => {
        match $run {
            Precision::F32($r) => $body,
            Precision::F64($r) => $body,
        }
    };
}

/// The precisions a run is made in.
trait RunReal: CReal {
    fn wrap(run: TreeRun<Self>) -> Precision;
    fn unwrap(run: &mut Precision) -> Option<&mut TreeRun<Self>>;
}

impl RunReal for f32 {
    fn wrap(run: TreeRun<f32>) -> Precision {
        Precision::F32(run)
    }
    fn unwrap(run: &mut Precision) -> Option<&mut TreeRun<f32>> {
        match run {
            Precision::F32(r) => Some(r),
            Precision::F64(_) => None,
        }
    }
}

impl RunReal for f64 {
    fn wrap(run: TreeRun<f64>) -> Precision {
        Precision::F64(run)
    }
    fn unwrap(run: &mut Precision) -> Option<&mut TreeRun<f64>> {
        match run {
            Precision::F64(r) => Some(r),
            Precision::F32(_) => None,
        }
    }
}

fn handle<'a>(r: *mut NbodyTreeRun) -> Result<&'a mut NbodyTreeRun, Failure> {
    // SAFETY: a null handle is refused; otherwise it came from nbody_tree_run_new_*.
    unsafe { r.as_mut() }.ok_or_else(|| null("run"))
}

fn softening(s: i32) -> Result<Softening, Failure> {
    match s {
        0 => Ok(Softening::Plummer),
        1 => Ok(Softening::Spline),
        other => Err(Failure(NbodyStatus::BadParameter, format!("softening {other}: 0 (plummer) or 1 (spline)"))),
    }
}

#[allow(clippy::too_many_arguments)] // the C signature
fn new_run<T: RunReal>(
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
    // The executor is taken first, so it is freed whatever fails after.
    // SAFETY: the caller passes a handle from nbody_open or null (refused below).
    let exec = unsafe { executor_box(e) };
    guard(|| {
        let exec = exec.ok_or_else(|| null("executor"))?;
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let t = *unsafe { tree.as_ref() }.ok_or_else(|| null("tree"))?;
        let criterion = Criterion::from_alpha((t.alpha != 0.0).then_some(t.alpha));
        // SAFETY: the caller promises n 4-lane records at each pointer.
        let (pos, vel) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                records(velocities.cast::<Velocity<T>>(), n, "velocities")?,
            )
        };
        // The padding lane of a C velocity record is not read.
        let vel = vel.iter().map(|v| Velocity::new(v.vx, v.vy, v.vz)).collect();
        let state = State::new(pos.to_vec(), vel);
        let run =
            TreeRun::with_softening(exec.opened, state, (t.theta, criterion), dt, T::from_f64(eps), softening(soft)?)?;
        // SAFETY: `out` is non-null and points to a handle slot the caller owns.
        unsafe { *out = Box::into_raw(Box::new(NbodyTreeRun { run: T::wrap(run) })) };
        Ok(())
    })
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
#[no_mangle]
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
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_evolve(run: *mut NbodyTreeRun, until: f64) -> NbodyStatus {
    guard(|| {
        let r = handle(run)?;
        each!(&mut r.run, x => x.advance_to(until).map(|_| ()).map_err(Failure::from))
    })
}

/// The simulated time and the steps taken so far (either pointer may be null).
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `time` and `steps` null or writable.
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_time(run: *mut NbodyTreeRun, time: *mut f64, steps: *mut u64) -> NbodyStatus {
    guard(|| {
        let r = handle(run)?;
        let (t, n) = each!(&r.run, x => (x.time(), x.steps()));
        // SAFETY: each pointer is null (skipped) or writable, the caller promises.
        unsafe {
            if let Some(p) = time.as_mut() {
                *p = t;
            }
            if let Some(p) = steps.as_mut() {
                *p = n;
            }
        }
        Ok(())
    })
}

/// 1 when the run's whole step is on the GPU (the device tree), 0 when the tree is
/// built on the host, -1 for a null handle.
///
/// # Safety
/// As [`nbody_tree_run_evolve`].
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_on_device(run: *const NbodyTreeRun) -> i32 {
    // SAFETY: null or a live handle, the caller promises.
    match unsafe { run.as_ref() } {
        Some(r) => i32::from(each!(&r.run, x => x.on_device())),
        None => -1,
    }
}

fn state<T: RunReal>(run: *mut NbodyTreeRun, particles: *mut T, velocities: *mut T, n: usize) -> NbodyStatus {
    guard(|| {
        let r = T::unwrap(&mut handle(run)?.run).ok_or_else(|| {
            Failure(NbodyStatus::Unsupported, format!("this run is not in {}: use the other precision's call", T::NAME))
        })?;
        if n != r.len() {
            return Err(Failure(NbodyStatus::Length, format!("n is {n}, the run holds {} particles", r.len())));
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
        let s = r.state()?;
        if let Some(p) = p {
            p.copy_from_slice(&s.pos);
        }
        if let Some(v) = v {
            v.copy_from_slice(&s.vel);
        }
        Ok(())
    })
}

/// Copies the particles (`[x, y, z, m]`) and velocities (`[vx, vy, vz, 0]`) now into
/// `particles` and `velocities` (`n` records each, `n` the run's count; either may be
/// null), from the GPU when the tree lives there. A run made in doubles refuses this
/// call (`Unsupported`): use [`nbody_tree_run_state_f64`].
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; each non-null array must hold `n` writable records.
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_state_f32(
    run: *mut NbodyTreeRun,
    particles: *mut f32,
    velocities: *mut f32,
    n: usize,
) -> NbodyStatus {
    state(run, particles, velocities, n)
}

/// [`nbody_tree_run_state_f32`] for a run made in doubles.
///
/// # Safety
/// As [`nbody_tree_run_state_f32`].
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_state_f64(
    run: *mut NbodyTreeRun,
    particles: *mut f64,
    velocities: *mut f64,
    n: usize,
) -> NbodyStatus {
    state(run, particles, velocities, n)
}

/// The kinetic energy and the potential energy now, the potential from the tree's field
/// (½ Σ m φ, G = 1; a tree force is computed only if the particles moved since the last
/// one). Either pointer may be null.
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `kinetic` and `potential` null or writable.
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_energies(
    run: *mut NbodyTreeRun,
    kinetic: *mut f64,
    potential: *mut f64,
) -> NbodyStatus {
    guard(|| {
        let r = handle(run)?;
        let d = each!(&mut r.run, x => x.diagnostics())?;
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
#[no_mangle]
pub unsafe extern "C" fn nbody_tree_run_free(run: *mut NbodyTreeRun) {
    if !run.is_null() {
        // SAFETY: the handle came from Box::into_raw in new_run and is freed once.
        drop(unsafe { Box::from_raw(run) });
    }
}
