//! A tree leapfrog behind an opaque handle ([`NbodyTreeRun`]): the facade's
//! [`nbody::tree::TreeRun`], so a C code steps a system with tree forces as the command
//! does, on the device when its executor is one GPU.

use crate::{CReal, Failure, NbodyExecutor, NbodyStatus, NbodyTree, executor_box, guard, null, records, records_mut};
use core::ffi::{CStr, c_char};
use nbody::integrators::{Checkpoint, State, Words, seal, unseal};
use nbody::tree::TreeRun;
use nbody_core::cell::Criterion;
use nbody_core::{Particle, Softening, Velocity};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A system stepped by a leapfrog with Barnes-Hut forces (see `nbody_tree_run_new_f64`).
#[derive(Debug)]
pub struct NbodyTreeRun {
    run: Precision,
    /// What the run was made with, for [`nbody_tree_run_save`].
    settings: Settings,
}

/// A run's settings as `nbody_tree_run_new_*` took them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Settings {
    theta: f64,
    alpha: f64,
    eps: f64,
    softening: i32,
    dt: f64,
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
    crate::softening_of(s, "softening")
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
    let make_run = |opened| {
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let t = *unsafe { tree.as_ref() }.ok_or_else(|| null("tree"))?;
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
        let settings = Settings { theta: t.theta, alpha: t.alpha, eps, softening: soft, dt };
        Ok(NbodyTreeRun { run: T::wrap(make::<T>(opened, state, settings)?), settings })
    };
    // SAFETY: the caller's handle and slot, as `owning` requires.
    unsafe { owning(e, out, make_run) }
}

/// Takes the executor `e` (freed whatever fails after), checks the handle slot `out`, and
/// stores there the run `f` makes on the executor.
///
/// # Safety
/// `e` null or a handle not freed before; `out` null or writable storage for a pointer.
unsafe fn owning(
    e: *mut NbodyExecutor,
    out: *mut *mut NbodyTreeRun,
    f: impl FnOnce(nbody_backends::Opened) -> Result<NbodyTreeRun, Failure>,
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

/// A run over `state` with `s`'s settings on the executor `opened`.
fn make<T: RunReal>(opened: nbody_backends::Opened, state: State<T>, s: Settings) -> Result<TreeRun<T>, Failure> {
    let criterion = Criterion::from_alpha((s.alpha != 0.0).then_some(s.alpha));
    let soft = softening(s.softening)?;
    Ok(TreeRun::with_softening(opened, state, (s.theta, criterion), s.dt, T::from_f64(s.eps), soft)?)
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
    guard(|| {
        let r = handle(run)?;
        each!(&mut r.run, x => x.advance_to(until).map(|_| ()).map_err(Failure::from))
    })
}

/// The simulated time and the steps taken so far (either pointer may be null).
///
/// # Safety
/// As [`nbody_tree_run_evolve`]; `time` and `steps` null or writable.
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_run_free(run: *mut NbodyTreeRun) {
    if !run.is_null() {
        // SAFETY: the handle came from Box::into_raw in new_run and is freed once.
        drop(unsafe { Box::from_raw(run) });
    }
}

/// The first bytes of a saved run, then the format's version.
const SAVED_MAGIC: &[u8; 8] = b"NBODYTRE";
const SAVED_VERSION: u64 = 1;

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
    guard(|| {
        let r = handle(run)?;
        let path = path_of(path)?;
        let (bits, words) = match &mut r.run {
            Precision::F32(x) => (32u64, x.save()?),
            Precision::F64(x) => (64u64, x.save()?),
        };
        let s = r.settings;
        let head = [
            SAVED_VERSION,
            bits,
            s.theta.to_bits(),
            s.alpha.to_bits(),
            s.eps.to_bits(),
            s.softening as u64,
            s.dt.to_bits(),
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
    })
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

/// [`nbody_tree_run_load`]'s work once the executor is taken.
fn load_file(opened: nbody_backends::Opened, path: *const c_char) -> Result<NbodyTreeRun, Failure> {
    let path = path_of(path)?;
    let bytes = std::fs::read(&path).map_err(|e| file_error(&path, "reading the run", e))?;
    let bad = |why: &str| file_error(&path, "not a run nbody_tree_run_save wrote", why);
    if bytes.len() < 8 + 9 * 8 + 8 || &bytes[..8] != SAVED_MAGIC || bytes.len() % 8 != 0 {
        return Err(bad("wrong start or size"));
    }
    let body = unseal(&bytes).ok_or_else(|| bad("damaged (its checksum does not match)"))?;
    let all: Vec<u64> = body[8..].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
    let (head, words) = all.split_at(8);
    if head[0] != SAVED_VERSION {
        return Err(bad("written by another version of the format"));
    }
    if head[7] != words.len() as u64 {
        return Err(bad("cut short"));
    }
    let f = f64::from_bits;
    let settings =
        Settings { theta: f(head[2]), alpha: f(head[3]), eps: f(head[4]), softening: head[5] as i32, dt: f(head[6]) };
    let run = match head[1] {
        32 => Precision::F32(load::<f32>(opened, settings, words)?),
        64 => Precision::F64(load::<f64>(opened, settings, words)?),
        _ => return Err(bad("unknown precision")),
    };
    Ok(NbodyTreeRun { run, settings })
}

/// A run made over the saved particles, then given the saved run's words.
fn load<T: RunReal>(opened: nbody_backends::Opened, settings: Settings, words: &[u64]) -> Result<TreeRun<T>, Failure> {
    // The words: where the tree lived, steps, then the state (TreeRun::save).
    let mut w = Words::new(words);
    w.word()?;
    w.word()?;
    let mut state = State::<T>::new(Vec::new(), Vec::new());
    state.restore(&mut w)?;
    let mut run = make::<T>(opened, state, settings)?;
    let mut w = Words::new(words);
    run.restore(&mut w)?;
    if !w.is_done() {
        return Err(Failure(NbodyStatus::File, "the saved run has words left over (another format or damage)".into()));
    }
    Ok(run)
}
