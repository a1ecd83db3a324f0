//! # nbody-capi
//!
//! The C ABI of nbody, for tree and FMM codes written in C, C++ and Fortran. The header
//! `include/nbody.h` is generated from this file by cbindgen and kept in the repository
//! (a test fails when it is stale).
//!
//! - Executors are opaque handles: [`nbody_open`] takes any backend string of the
//!   registry (`"cpu:8"`, `"mixed"`, `"cuda:0"`, `"cuda-mixed:1"`, `"cuda:0,1"`; the same
//!   strings as the command's `--executor` and Python's `executor=`);
//!   [`nbody_cpu_new`], [`nbody_mixed_new`] and [`nbody_cuda_new`] are shorthands.
//!   [`nbody_executor_free`] frees one.
//! - Particles are the library's own records, `[x, y, z, m]` of `float` (16-byte
//!   aligned) or `double` (32-byte aligned), used in place; outputs are `[ax, ay, az,
//!   phi]`, velocities `[vx, vy, vz, 0]` and jerks `[jx, jy, jz, 0]` of the same shape.
//!   Every array comes with its length in records. Calls *add* into their outputs.
//! - Every call returns an [`NbodyStatus`]; [`nbody_last_error`] gives the message of
//!   the last failure on the calling thread. A null pointer, a misaligned or short
//!   buffer and a bad parameter are errors, never a crash, and no panic crosses the
//!   boundary (one is caught and reported as [`NbodyStatus::Panic`]).
//!
//! ```
//! use nbody_c::*;
//! let mut exec = std::ptr::null_mut();
//! assert_eq!(unsafe { nbody_cpu_new(1, &mut exec) }, NbodyStatus::Ok);
//! #[repr(C, align(32))]
//! struct Four([f64; 8]);
//! let ps = Four([0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
//! let mut out = Four([0.0; 8]);
//! let params = NbodyParams { g: 1.0, eps: 0.0, potential: 1, overlap: NbodyOverlap::Identical as i32, target_start: 0, source_start: 0, shared_len: 0, softening: 0 };
//! let s = unsafe { nbody_accelerations_f64(exec, ps.0.as_ptr(), 2, ps.0.as_ptr(), 2, &params, out.0.as_mut_ptr(), 2) };
//! assert_eq!(s, NbodyStatus::Ok);
//! assert_eq!(out.0[0], 1.0); // pulled towards +x
//! unsafe { nbody_executor_free(exec) };
//! ```
#![warn(missing_docs)]
// C signatures pass each array with its length: many arguments is their shape.
#![allow(clippy::too_many_arguments)]

pub mod fuzz;
pub mod gpunb;
pub mod grape;
pub mod irr;
mod run;
mod tree_run;

pub use run::*;
pub use tree_run::*;

use nbody::tree::BarnesHut;
use nbody_backends::{Backend, BackendError, BackendReal, Opened};
use nbody_core::cell::Criterion;
use nbody_core::projection::{Plane, Projecting, Projection};
use nbody_core::{
    Bodies, Error, Field, InteractionList, Jerk, Overlap, Pair, Params, Particle, PerParticle, Real, SoaRef, Span,
    Tidal, Velocity,
};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a call returns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NbodyStatus {
    /// Success.
    Ok = 0,
    /// A required pointer was null.
    NullPointer = 1,
    /// A buffer is not aligned to its record size (16 bytes for float, 32 for double).
    Misaligned = 2,
    /// A buffer is shorter (or longer) than the call needs.
    Length = 3,
    /// A coordinate, mass or velocity is NaN, infinite or (a mass) negative.
    BadInput = 4,
    /// A parameter (G, eps, overlap, span, projection, thread count) is out of range.
    BadParameter = 5,
    /// No usable device, or the library was built without CUDA.
    NoDevice = 6,
    /// The device ran out of memory; nothing was kept allocated.
    OutOfMemory = 7,
    /// A device call failed.
    Device = 8,
    /// The executor does not offer this call (e.g. float on the mixed executor).
    Unsupported = 9,
    /// An internal error (a caught panic): please report it.
    Panic = 10,
    /// A file could not be read or written, or is not what the call reads (a saved run
    /// damaged, cut short or of another format); nothing was changed.
    File = 11,
}

/// Which targets are also sources (their self term is removed with eps > 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NbodyOverlap {
    /// No target is a source.
    Disjoint = 0,
    /// Targets and sources are the same array.
    Identical = 1,
    /// `targets[target_start + k]` is `sources[source_start + k]` for `k < shared_len`.
    Shared = 2,
}

/// Parameters of a call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyParams {
    /// Gravitational constant.
    pub g: f64,
    /// Softening length (0: zero-distance pairs are masked).
    pub eps: f64,
    /// Non-zero: compute the potential too.
    pub potential: i32,
    /// Which targets are sources: an [`NbodyOverlap`] value (an int, so that any value
    /// a C caller stores is checked, not trusted).
    pub overlap: i32,
    /// With `Shared`: first shared target.
    pub target_start: usize,
    /// With `Shared`: its index among the sources.
    pub source_start: usize,
    /// With `Shared`: how many consecutive targets are shared.
    pub shared_len: usize,
    /// The softening kernel: an [`NbodySoftening`] value (0, Plummer, is what a
    /// zero-initialised struct holds).
    pub softening: i32,
}

/// The softening kernel of a call (`NbodyParams::softening`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NbodySoftening {
    /// `1 / sqrt(r² + eps²)`.
    Plummer = 0,
    /// Gadget's cubic spline: support `2.8 eps`, Newtonian beyond it (an entry point that
    /// does not take it returns `Unsupported`; `nbody info` lists those that do).
    Spline = 1,
}

// The header's values are the kernels' places in the registry.
const _: () = assert!(NbodySoftening::Plummer as usize == 0 && NbodySoftening::Spline as usize == 1);

/// The softening kernel a C value names: its place in the registry
/// (`nbody_core::registry`), which the header's `NbodySoftening` follows.
pub(crate) fn softening_of(code: i32, what: &str) -> Result<nbody_core::Softening, Failure> {
    use nbody_core::registry::Named;
    let all = <nbody_core::Softening as Named>::ALL;
    usize::try_from(code).ok().and_then(|i| all.get(i).copied()).ok_or_else(|| {
        let options: Vec<String> = all.iter().enumerate().map(|(i, k)| format!("{i} ({})", k.name())).collect();
        Failure(NbodyStatus::BadParameter, format!("{what} {code}: {}", options.join(" or ")))
    })
}

/// A half-open range `start..end` of particle indices (batched calls).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodySpan {
    /// First index.
    pub start: u32,
    /// One past the last.
    pub end: u32,
}

/// One leaf interaction: the targets `targets` feel the source spans
/// `spans[sources.start..sources.end]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyPair {
    /// Target particles.
    pub targets: NbodySpan,
    /// Indices into the span array.
    pub sources: NbodySpan,
}

/// A density-map window: plane 0 = x-y, 1 = x-z, 2 = y-z.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyProjection {
    /// 0: x-y, 1: x-z, 2: y-z.
    pub plane: i32,
    /// Window centre, horizontal.
    pub centre_h: f64,
    /// Window centre, vertical.
    pub centre_v: f64,
    /// Half the window's side.
    pub half_width: f64,
    /// Pixels per side (the grid holds pixels² doubles, row-major, top row first).
    pub pixels: usize,
}

/// An executor behind an opaque handle.
#[derive(Debug)]
pub struct NbodyExecutor {
    opened: Opened,
    /// Records gathered from the SoA entry points' arrays, reused across calls.
    soa: SoaScratch,
}

/// The AoS copies an SoA call works on (both precisions), grown as needed.
#[derive(Debug, Default)]
struct SoaScratch {
    f32: Records<f32>,
    f64: Records<f64>,
}

/// One precision's records for an SoA call.
#[derive(Debug, Default)]
struct Records<T: Real> {
    targets: Vec<Particle<T>>,
    sources: Vec<Particle<T>>,
    fields: Vec<Field<T>>,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A failure: its status and message.
struct Failure(NbodyStatus, String);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match e {
            Error::LengthMismatch { .. } => NbodyStatus::Length,
            Error::NonFinite { .. }
            | Error::OutOfRange { .. }
            | Error::NegativeMass { .. }
            | Error::NegativeSpread { .. }
            | Error::NegativeSoftening { .. }
            | Error::OverlapMismatch { .. } => NbodyStatus::BadInput,
            Error::NoDevice => NbodyStatus::NoDevice,
            Error::OutOfMemory { .. } => NbodyStatus::OutOfMemory,
            Error::Device { .. } | Error::OnDevice { .. } => NbodyStatus::Device,
            Error::Unsupported { .. } => NbodyStatus::Unsupported,
            _ => NbodyStatus::BadParameter,
        };
        Failure(status, e.to_string())
    }
}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        let status = match &e {
            BackendError::Parse { .. } | BackendError::Threads { .. } => NbodyStatus::BadParameter,
            BackendError::Precision { .. } => NbodyStatus::Unsupported,
            BackendError::NotCompiled { .. } => NbodyStatus::NoDevice,
            BackendError::Open { source, .. } => Failure::from(*source).0,
        };
        Failure(status, e.to_string())
    }
}

/// Runs `f`, records its failure (or a caught panic) as this thread's last error.
fn guard(f: impl FnOnce() -> Result<(), Failure>) -> NbodyStatus {
    let (status, message) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return NbodyStatus::Ok,
        Ok(Err(Failure(s, m))) => (s, m),
        Err(_) => {
            (NbodyStatus::Panic, "internal error (a panic was caught at the C boundary); please report it".into())
        }
    };
    set_last_error(&message);
    status
}

/// Keeps `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn null(what: &str) -> Failure {
    Failure(NbodyStatus::NullPointer, format!("{what} is a null pointer"))
}

/// Views `n` records of `R` at `ptr` (checked: null only when `n == 0`, alignment).
///
/// # Safety
/// `ptr` must point to `n` readable records (the caller's promise at the boundary).
unsafe fn records<'a, R: bytemuck::Pod>(ptr: *const R, n: usize, what: &str) -> Result<&'a [R], Failure> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null(what));
    }
    if !(ptr as usize).is_multiple_of(std::mem::align_of::<R>()) {
        return Err(Failure(
            NbodyStatus::Misaligned,
            format!("{what} is not aligned to {} bytes (use aligned_alloc)", std::mem::align_of::<R>()),
        ));
    }
    // SAFETY: non-null, aligned, and the caller promises `n` records there.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// As [`records`], mutable.
///
/// # Safety
/// `ptr` must point to `n` writable records not aliased by any other argument.
unsafe fn records_mut<'a, R: bytemuck::Pod>(ptr: *mut R, n: usize, what: &str) -> Result<&'a mut [R], Failure> {
    // SAFETY: as for `records`; the caller promises the memory is writable and unaliased.
    unsafe { records(ptr as *const R, n, what) }?;
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: checked above: non-null and aligned; the caller promises `n` records.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

fn params<T: Real>(p: *const NbodyParams) -> Result<Params<T>, Failure> {
    // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
    let p = unsafe { p.as_ref() }.ok_or_else(|| null("params"))?;
    let overlap = match p.overlap {
        x if x == NbodyOverlap::Disjoint as i32 => Overlap::Disjoint,
        x if x == NbodyOverlap::Identical as i32 => Overlap::Identical,
        x if x == NbodyOverlap::Shared as i32 => {
            Overlap::Shared { target_start: p.target_start, source_start: p.source_start, len: p.shared_len }
        }
        other => {
            return Err(Failure(
                NbodyStatus::BadParameter,
                format!("params.overlap {other}: 0 (disjoint), 1 (identical) or 2 (shared)"),
            ));
        }
    };
    let softening = softening_of(p.softening, "params.softening")?;
    let mut q =
        Params::softened(T::from_f64(p.eps)).with_g(T::from_f64(p.g)).with_overlap(overlap).with_softening(softening);
    q.potential = p.potential != 0;
    nbody_core::validate::params(&q)?;
    Ok(q)
}

fn executor<'a>(e: *mut NbodyExecutor) -> Result<&'a mut NbodyExecutor, Failure> {
    // SAFETY: a null handle is refused; otherwise it came from an nbody_*_new call.
    unsafe { e.as_mut() }.ok_or_else(|| null("executor"))
}

/// The precisions of the C calls: each reaches the handle's executor through the
/// registry (which refuses f32 on the mixed families) and has its own SoA scratch.
trait CReal: BackendReal + bytemuck::Pod {
    fn with<R>(e: &mut NbodyExecutor, f: impl FnOnce(&mut dyn Projecting<Self>) -> R) -> Result<R, Failure> {
        Ok(f(e.opened.get::<Self>()?))
    }
    /// This precision's SoA scratch.
    fn soa(s: &mut SoaScratch) -> &mut Records<Self>;
}

impl CReal for f32 {
    fn soa(s: &mut SoaScratch) -> &mut Records<f32> {
        &mut s.f32
    }
}

impl CReal for f64 {
    fn soa(s: &mut SoaScratch) -> &mut Records<f64> {
        &mut s.f64
    }
}

fn new_handle(backend: Backend, out: *mut *mut NbodyExecutor) -> Result<(), Failure> {
    if out.is_null() {
        return Err(null("out"));
    }
    let opened = backend.open()?;
    // SAFETY: `out` is non-null and points to a handle slot the caller owns.
    unsafe { *out = Box::into_raw(Box::new(NbodyExecutor { opened, soa: SoaScratch::default() })) };
    Ok(())
}

/// The CPU backends of a thread count as C passes it: 0 or 1, the calling thread only.
fn threads(threads: u32) -> Option<usize> {
    Some((threads as usize).max(1))
}

/// Opens the executor `backend` names (a NUL-terminated backend string: `"cpu"`,
/// `"cpu:8"`, `"mixed"`, `"reference"`, `"cuda:0"`, `"cuda-mixed:0"`, `"cuda:0,1"`,
/// `"cuda:all"`; see the README). The handle goes into `*out`. An unknown string or
/// more threads than the machine runs at once is `BadParameter`; a GPU backend without
/// CUDA or a device, `NoDevice`. The mixed backends take the `_f64` calls only.
///
/// ```
/// use nbody_c::*;
/// let mut exec = std::ptr::null_mut();
/// assert_eq!(unsafe { nbody_open(c"cpu:1".as_ptr(), &mut exec) }, NbodyStatus::Ok);
/// unsafe { nbody_executor_free(exec) };
/// assert_eq!(unsafe { nbody_open(c"gpu".as_ptr(), &mut exec) }, NbodyStatus::BadParameter);
/// ```
///
/// # Safety
/// `backend` must be null (an error) or a NUL-terminated string; `out` null (an error)
/// or writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_open(backend: *const c_char, out: *mut *mut NbodyExecutor) -> NbodyStatus {
    guard(|| {
        if backend.is_null() {
            return Err(null("backend"));
        }
        // SAFETY: non-null, and the caller promises a NUL-terminated string.
        let text = unsafe { CStr::from_ptr(backend) }.to_string_lossy();
        new_handle(text.parse::<Backend>()?, out)
    })
}

/// Creates a CPU executor with `threads` threads (0 or 1: the calling thread only, for
/// codes that bring their own threads; at most the cores the machine runs at once):
/// `nbody_open("cpu:<threads>")`. The handle goes into `*out`.
///
/// # Safety
/// `out` must be null (an error) or point to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_cpu_new(threads: u32, out: *mut *mut NbodyExecutor) -> NbodyStatus {
    guard(|| new_handle(Backend::Cpu { threads: self::threads(threads) }, out))
}

/// Creates the mixed-precision executor (double results, float interactions on offsets
/// from nearby block centres), `threads` as in [`nbody_cpu_new`]. Double calls only.
///
/// # Safety
/// As [`nbody_cpu_new`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_mixed_new(threads: u32, out: *mut *mut NbodyExecutor) -> NbodyStatus {
    guard(|| new_handle(Backend::Mixed { threads: self::threads(threads) }, out))
}

/// Creates a CUDA executor on device `device` (`nbody_open("cuda:<device>")`; the
/// mixed-precision kernels: `nbody_open("cuda-mixed:<device>")`). `NoDevice` when the
/// library was built without CUDA or there is no such device.
///
/// # Safety
/// As [`nbody_cpu_new`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_cuda_new(device: u32, out: *mut *mut NbodyExecutor) -> NbodyStatus {
    guard(|| {
        new_handle(
            Backend::Cuda {
                devices: nbody_backends::Devices::One(device),
                arithmetic: nbody_backends::Arithmetic::Native,
            },
            out,
        )
    })
}

/// Frees an executor (null is ignored).
///
/// # Safety
/// `e` must be null or a handle from an `nbody_*_new` call not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_executor_free(e: *mut NbodyExecutor) {
    // SAFETY: as this function's contract.
    drop(unsafe { executor_box(e) });
}

/// Takes a handle back from C (`None` for null): it is freed when dropped.
///
/// # Safety
/// `e` must be null or a handle from an `nbody_*_new` call not freed before.
unsafe fn executor_box(e: *mut NbodyExecutor) -> Option<Box<NbodyExecutor>> {
    // SAFETY: the handle came from Box::into_raw in new_handle and is taken back once.
    (!e.is_null()).then(|| unsafe { Box::from_raw(e) })
}

/// The message of the last failed call on this thread ("" if none): valid until the
/// next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The library's version, e.g. "0.1.0".
#[unsafe(no_mangle)]
pub extern "C" fn nbody_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

fn accelerations<T: CReal>(
    e: *mut NbodyExecutor,
    targets: *const T,
    n_targets: usize,
    sources: *const T,
    n_sources: usize,
    p: *const NbodyParams,
    out: *mut T,
    n_out: usize,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of 4-lane records.
        let (t, s, o) = unsafe {
            (
                records(targets.cast::<Particle<T>>(), n_targets, "targets")?,
                records(sources.cast::<Particle<T>>(), n_sources, "sources")?,
                records_mut(out.cast::<Field<T>>(), n_out, "out")?,
            )
        };
        T::with(e, |x| x.accelerations(t, s, &p, o))?.map_err(Failure::from)
    })
}

/// Adds the acceleration (and potential, if `params->potential`) of `n_sources` sources
/// on `n_targets` targets into `out` (`n_out` records, which must equal `n_targets`).
/// Arrays of `[x, y, z, m]` floats, 16-byte aligned.
///
/// # Safety
/// Each pointer must hold its count of 4-float records (or be null with a count of 0);
/// `out` must not overlap the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_f32(
    e: *mut NbodyExecutor,
    targets: *const f32,
    n_targets: usize,
    sources: *const f32,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f32,
    n_out: usize,
) -> NbodyStatus {
    accelerations(e, targets, n_targets, sources, n_sources, params, out, n_out)
}

/// [`nbody_accelerations_f32`] for doubles (records 32-byte aligned).
///
/// # Safety
/// As [`nbody_accelerations_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_f64(
    e: *mut NbodyExecutor,
    targets: *const f64,
    n_targets: usize,
    sources: *const f64,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f64,
    n_out: usize,
) -> NbodyStatus {
    accelerations(e, targets, n_targets, sources, n_sources, params, out, n_out)
}

/// The arrays of a call with a softening length per particle.
struct PerParticleArrays<T> {
    targets: *const T,
    target_eps: *const T,
    n_targets: usize,
    sources: *const T,
    source_eps: *const T,
    n_sources: usize,
    out: *mut T,
    n_out: usize,
}

fn accelerations_per_particle<T: CReal>(
    e: *mut NbodyExecutor,
    a: PerParticleArrays<T>,
    p: *const NbodyParams,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of records or values.
        let (t, te, s, se, o) = unsafe {
            (
                records(a.targets.cast::<Particle<T>>(), a.n_targets, "targets")?,
                records(a.target_eps, a.n_targets, "target_eps")?,
                records(a.sources.cast::<Particle<T>>(), a.n_sources, "sources")?,
                records(a.source_eps, a.n_sources, "source_eps")?,
                records_mut(a.out.cast::<Field<T>>(), a.n_out, "out")?,
            )
        };
        let eps = PerParticle { targets: te, sources: se };
        T::with(e, |x| x.accelerations_per_particle(t, s, eps, &p, o))?.map_err(Failure::from)
    })
}

/// [`nbody_accelerations_f32`] with a softening length per particle: `target_eps` holds
/// `n_targets` lengths and `source_eps` `n_sources` (`params->eps` is not read). A pair
/// is softened by the symmetrised rule: Plummer with eps_ij^2 = (eps_i^2 + eps_j^2) / 2,
/// the spline with the larger support; a particle that is both a target and a source
/// (`params->overlap`) must have one length.
///
/// # Safety
/// As [`nbody_accelerations_f32`]; each length array holds its count of floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_per_particle_f32(
    e: *mut NbodyExecutor,
    targets: *const f32,
    target_eps: *const f32,
    n_targets: usize,
    sources: *const f32,
    source_eps: *const f32,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f32,
    n_out: usize,
) -> NbodyStatus {
    let a = PerParticleArrays { targets, target_eps, n_targets, sources, source_eps, n_sources, out, n_out };
    accelerations_per_particle(e, a, params)
}

/// [`nbody_accelerations_per_particle_f32`] for doubles.
///
/// # Safety
/// As [`nbody_accelerations_per_particle_f32`], with 4-double records and double lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_per_particle_f64(
    e: *mut NbodyExecutor,
    targets: *const f64,
    target_eps: *const f64,
    n_targets: usize,
    sources: *const f64,
    source_eps: *const f64,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f64,
    n_out: usize,
) -> NbodyStatus {
    let a = PerParticleArrays { targets, target_eps, n_targets, sources, source_eps, n_sources, out, n_out };
    accelerations_per_particle(e, a, params)
}

/// Four plain arrays of `n` values each at `ptrs` (x, y, z, m or ax, ay, az, phi).
///
/// # Safety
/// Each pointer must hold `n` values (or be null with `n == 0`).
unsafe fn lanes<'a, T: CReal>(ptrs: [*const T; 4], n: usize, names: [&str; 4]) -> Result<[&'a [T]; 4], Failure> {
    // SAFETY: the caller's promise, for each array.
    let lane = |k: usize| unsafe { records(ptrs[k], n, names[k]) };
    Ok([lane(0)?, lane(1)?, lane(2)?, lane(3)?])
}

/// The SoA calls: the arrays are gathered into AoS records (the executor's scratch),
/// computed, and the fields added back into the four output arrays.
#[allow(clippy::too_many_arguments)]
fn accelerations_soa<T: CReal>(
    e: *mut NbodyExecutor,
    n_targets: usize,
    targets: [*const T; 4],
    n_sources: usize,
    sources: [*const T; 4],
    p: *const NbodyParams,
    out: [*mut T; 4],
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        let mut no_phi = Vec::new();
        // SAFETY: the caller promises each array holds its count of values and the
        // outputs alias nothing else.
        let (t, s, [ax, ay, az, phi]) = unsafe {
            let t = lanes(targets, n_targets, ["tx", "ty", "tz", "tm"])?;
            let s = lanes(sources, n_sources, ["sx", "sy", "sz", "sm"])?;
            let names = ["ax", "ay", "az", "phi"];
            let o = |k: usize| records_mut(out[k], n_targets, names[k]);
            let phi = if out[3].is_null() && !p.potential {
                // No potential asked for: `phi` may be null.
                no_phi.resize(n_targets, T::zero());
                no_phi.as_mut_slice()
            } else {
                o(3)?
            };
            (t, s, [o(0)?, o(1)?, o(2)?, phi])
        };
        let (t, s) = (SoaRef::new(t[0], t[1], t[2], t[3])?, SoaRef::new(s[0], s[1], s[2], s[3])?);
        let mut scratch = std::mem::take(T::soa(&mut e.soa));
        let Records { targets: taos, sources: saos, fields } = &mut scratch;
        taos.resize(n_targets, Particle::new(T::zero(), T::zero(), T::zero(), T::zero()));
        saos.resize(n_sources, Particle::new(T::zero(), T::zero(), T::zero(), T::zero()));
        t.to_aos(taos)?;
        s.to_aos(saos)?;
        fields.clear();
        fields.extend((0..n_targets).map(|i| Field::new(ax[i], ay[i], az[i], phi[i])));
        let result = T::with(e, |x| x.accelerations(taos, saos, &p, fields));
        if matches!(result, Ok(Ok(()))) {
            for (i, f) in fields.iter().enumerate() {
                (ax[i], ay[i], az[i], phi[i]) = (f.ax, f.ay, f.az, f.phi);
            }
        }
        *T::soa(&mut e.soa) = scratch;
        result?.map_err(Failure::from)
    })
}

/// [`nbody_accelerations_f32`] on plain arrays, one per coordinate (what Fortran codes
/// and many C codes keep): targets `tx, ty, tz, tm` and sources `sx, sy, sz, sm`, the
/// field added into `ax, ay, az, phi` (`phi` only if `params->potential`, and it may
/// be null otherwise). Any alignment of `float`; the arrays are gathered into the
/// executor's own records.
///
/// # Safety
/// Each target and output array must hold `n_targets` values and each source array
/// `n_sources` (or be null with a count of 0); outputs must not overlap anything else.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_soa_f32(
    e: *mut NbodyExecutor,
    n_targets: usize,
    tx: *const f32,
    ty: *const f32,
    tz: *const f32,
    tm: *const f32,
    n_sources: usize,
    sx: *const f32,
    sy: *const f32,
    sz: *const f32,
    sm: *const f32,
    params: *const NbodyParams,
    ax: *mut f32,
    ay: *mut f32,
    az: *mut f32,
    phi: *mut f32,
) -> NbodyStatus {
    accelerations_soa(e, n_targets, [tx, ty, tz, tm], n_sources, [sx, sy, sz, sm], params, [ax, ay, az, phi])
}

/// [`nbody_accelerations_soa_f32`] for doubles.
///
/// # Safety
/// As [`nbody_accelerations_soa_f32`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_accelerations_soa_f64(
    e: *mut NbodyExecutor,
    n_targets: usize,
    tx: *const f64,
    ty: *const f64,
    tz: *const f64,
    tm: *const f64,
    n_sources: usize,
    sx: *const f64,
    sy: *const f64,
    sz: *const f64,
    sm: *const f64,
    params: *const NbodyParams,
    ax: *mut f64,
    ay: *mut f64,
    az: *mut f64,
    phi: *mut f64,
) -> NbodyStatus {
    accelerations_soa(e, n_targets, [tx, ty, tz, tm], n_sources, [sx, sy, sz, sm], params, [ax, ay, az, phi])
}

/// The arrays of a jerk call.
struct JerkArrays<T> {
    targets: *const T,
    target_vel: *const T,
    n_targets: usize,
    sources: *const T,
    source_vel: *const T,
    n_sources: usize,
    out: *mut T,
    jerk: *mut T,
}

fn jerk<T: CReal>(e: *mut NbodyExecutor, a: JerkArrays<T>, p: *const NbodyParams) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of 4-lane records.
        let (t, tv, s, sv, o, j) = unsafe {
            (
                records(a.targets.cast::<Particle<T>>(), a.n_targets, "targets")?,
                records(a.target_vel.cast::<Velocity<T>>(), a.n_targets, "target_vel")?,
                records(a.sources.cast::<Particle<T>>(), a.n_sources, "sources")?,
                records(a.source_vel.cast::<Velocity<T>>(), a.n_sources, "source_vel")?,
                records_mut(a.out.cast::<Field<T>>(), a.n_targets, "out")?,
                records_mut(a.jerk.cast::<Jerk<T>>(), a.n_targets, "jerk")?,
            )
        };
        let (tb, sb) = (Bodies { pos: t, vel: tv }, Bodies { pos: s, vel: sv });
        T::with(e, |x| x.accelerations_jerk(tb, sb, &p, o, j))?.map_err(Failure::from)
    })
}

/// Adds acceleration (potential) and jerk into `out` and `jerk` (`n_targets` records
/// each). Velocities are `[vx, vy, vz, 0]` records, one per particle.
///
/// # Safety
/// Each pointer must hold its count of 4-float records; outputs must not overlap inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_jerk_f32(
    e: *mut NbodyExecutor,
    targets: *const f32,
    target_vel: *const f32,
    n_targets: usize,
    sources: *const f32,
    source_vel: *const f32,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f32,
    jerk_out: *mut f32,
) -> NbodyStatus {
    let a = JerkArrays { targets, target_vel, n_targets, sources, source_vel, n_sources, out, jerk: jerk_out };
    jerk(e, a, params)
}

/// [`nbody_jerk_f32`] for doubles.
///
/// # Safety
/// As [`nbody_jerk_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_jerk_f64(
    e: *mut NbodyExecutor,
    targets: *const f64,
    target_vel: *const f64,
    n_targets: usize,
    sources: *const f64,
    source_vel: *const f64,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f64,
    jerk_out: *mut f64,
) -> NbodyStatus {
    let a = JerkArrays { targets, target_vel, n_targets, sources, source_vel, n_sources, out, jerk: jerk_out };
    jerk(e, a, params)
}

/// The arrays of a gradient call: the call's targets and sources, and what it adds into.
struct GradientArrays<T> {
    targets: *const T,
    n_targets: usize,
    sources: *const T,
    n_sources: usize,
}

fn tidal<T: CReal>(
    e: *mut NbodyExecutor,
    a: GradientArrays<T>,
    p: *const NbodyParams,
    out: *mut T,
    tidal: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of records.
        let (t, s, o, td) = unsafe {
            (
                records(a.targets.cast::<Particle<T>>(), a.n_targets, "targets")?,
                records(a.sources.cast::<Particle<T>>(), a.n_sources, "sources")?,
                records_mut(out.cast::<Field<T>>(), a.n_targets, "out")?,
                records_mut(tidal.cast::<Tidal<T>>(), a.n_targets, "tidal")?,
            )
        };
        T::with(e, |x| x.accelerations_tidal(t, s, &p, o, td))?.map_err(Failure::from)
    })
}

/// Adds the field into `out` (as [`nbody_accelerations_f32`]) and each target's tidal
/// tensor, the gradient of its acceleration with respect to its own position, into
/// `tidal`: six floats a target, `[xx, xy, xz, yy, yz, zz]`.
///
/// # Safety
/// `targets` and `out` hold `n_targets` 4-float records (16-byte aligned), `sources`
/// `n_sources`, `tidal` `6 n_targets` floats; outputs must not overlap inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tidal_f32(
    e: *mut NbodyExecutor,
    targets: *const f32,
    n_targets: usize,
    sources: *const f32,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f32,
    tidal_out: *mut f32,
) -> NbodyStatus {
    tidal(e, GradientArrays { targets, n_targets, sources, n_sources }, params, out, tidal_out)
}

/// [`nbody_tidal_f32`] for doubles.
///
/// # Safety
/// As [`nbody_tidal_f32`], with 4-double records and doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tidal_f64(
    e: *mut NbodyExecutor,
    targets: *const f64,
    n_targets: usize,
    sources: *const f64,
    n_sources: usize,
    params: *const NbodyParams,
    out: *mut f64,
    tidal_out: *mut f64,
) -> NbodyStatus {
    tidal(e, GradientArrays { targets, n_targets, sources, n_sources }, params, out, tidal_out)
}

fn vjp<T: CReal>(
    e: *mut NbodyExecutor,
    a: GradientArrays<T>,
    p: *const NbodyParams,
    cotangents: *const T,
    target_grads: *mut T,
    source_grads: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of 4-lane records.
        let (t, s, c, gt, gs) = unsafe {
            (
                records(a.targets.cast::<Particle<T>>(), a.n_targets, "targets")?,
                records(a.sources.cast::<Particle<T>>(), a.n_sources, "sources")?,
                records(cotangents.cast::<Field<T>>(), a.n_targets, "cotangents")?,
                records_mut(target_grads.cast::<Particle<T>>(), a.n_targets, "target_grads")?,
                records_mut(source_grads.cast::<Particle<T>>(), a.n_sources, "source_grads")?,
            )
        };
        T::with(e, |x| x.vjp(t, s, &p, c, gt, gs))?.map_err(Failure::from)
    })
}

/// The vector-Jacobian product of [`nbody_accelerations_f32`]: for `cotangents` (one
/// `[cx, cy, cz, h]` record per target: `c` on its acceleration, `h` on its potential,
/// read only when `params->potential`), adds the gradients of `sum_i c_i . a_i + h_i phi_i`
/// with respect to each target's position into `target_grads` (`[gx, gy, gz, 0]`) and
/// each source's position and mass into `source_grads` (`[gx, gy, gz, gm]`). Where the
/// targets are the sources, a particle's gradient is the sum of its two records.
///
/// # Safety
/// `targets`, `cotangents` and `target_grads` hold `n_targets` 4-float records (16-byte
/// aligned), `sources` and `source_grads` `n_sources`; outputs must not overlap inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_vjp_f32(
    e: *mut NbodyExecutor,
    targets: *const f32,
    n_targets: usize,
    sources: *const f32,
    n_sources: usize,
    params: *const NbodyParams,
    cotangents: *const f32,
    target_grads: *mut f32,
    source_grads: *mut f32,
) -> NbodyStatus {
    vjp(e, GradientArrays { targets, n_targets, sources, n_sources }, params, cotangents, target_grads, source_grads)
}

/// [`nbody_vjp_f32`] for doubles.
///
/// # Safety
/// As [`nbody_vjp_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_vjp_f64(
    e: *mut NbodyExecutor,
    targets: *const f64,
    n_targets: usize,
    sources: *const f64,
    n_sources: usize,
    params: *const NbodyParams,
    cotangents: *const f64,
    target_grads: *mut f64,
    source_grads: *mut f64,
) -> NbodyStatus {
    vjp(e, GradientArrays { targets, n_targets, sources, n_sources }, params, cotangents, target_grads, source_grads)
}

fn vjp_batch<T: CReal>(
    e: *mut NbodyExecutor,
    (particles, n): (*const T, usize),
    (pairs, n_pairs, spans, n_spans): (*const NbodyPair, usize, *const NbodySpan, usize),
    p: *const NbodyParams,
    cotangents: *const T,
    grads: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of records; Pair and
        // Span are the same #[repr(C)] layouts as NbodyPair and NbodySpan.
        let (ps, pairs, spans, c, g) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                records(pairs.cast::<Pair>(), n_pairs, "pairs")?,
                records(spans.cast::<Span>(), n_spans, "spans")?,
                records(cotangents.cast::<Field<T>>(), n, "cotangents")?,
                records_mut(grads.cast::<Particle<T>>(), n, "grads")?,
            )
        };
        let list = InteractionList { pairs, source_spans: spans };
        T::with(e, |x| x.vjp_batch(ps, &list, &p, c, g))?.map_err(Failure::from)
    })
}

/// The vector-Jacobian product of [`nbody_batch_f32`]: for one cotangent record
/// `[cx, cy, cz, h]` per particle on the field the list gives it, adds each particle's
/// gradient `[gx, gy, gz, gm]` (its parts as a target and as a source together) into
/// `grads` (`n` records): a tree code's leaves, differentiated.
///
/// # Safety
/// As [`nbody_batch_f32`]; `cotangents` and `grads` hold `n` records, and `grads` does not
/// overlap the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_vjp_batch_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    cotangents: *const f32,
    grads: *mut f32,
) -> NbodyStatus {
    vjp_batch(e, (particles, n), (pairs, n_pairs, spans, n_spans), params, cotangents, grads)
}

/// [`nbody_vjp_batch_f32`] for doubles.
///
/// # Safety
/// As [`nbody_vjp_batch_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_vjp_batch_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    cotangents: *const f64,
    grads: *mut f64,
) -> NbodyStatus {
    vjp_batch(e, (particles, n), (pairs, n_pairs, spans, n_spans), params, cotangents, grads)
}

fn batch<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    p: *const NbodyParams,
    out: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: the caller promises each pointer holds its count of records; Pair and
        // Span are the same #[repr(C)] layouts as NbodyPair and NbodySpan.
        let (ps, pairs, spans, o) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                records(pairs.cast::<Pair>(), n_pairs, "pairs")?,
                records(spans.cast::<Span>(), n_spans, "spans")?,
                records_mut(out.cast::<Field<T>>(), n, "out")?,
            )
        };
        let list = InteractionList { pairs, source_spans: spans };
        T::with(e, |x| x.accelerations_batch(ps, &list, &p, o))?.map_err(Failure::from)
    })
}

/// Runs every pair of an interaction list over `n` particles in one call, adding into
/// `out` (`n` records, one per particle). The overlap in `params` is ignored: each
/// pair's follows from its spans.
///
/// # Safety
/// Each pointer must hold its count of records; `out` must not overlap the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_batch_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    out: *mut f32,
) -> NbodyStatus {
    batch(e, particles, n, pairs, n_pairs, spans, n_spans, params, out)
}

/// [`nbody_batch_f32`] for doubles.
///
/// # Safety
/// As [`nbody_batch_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_batch_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    out: *mut f64,
) -> NbodyStatus {
    batch(e, particles, n, pairs, n_pairs, spans, n_spans, params, out)
}

/// The list of a batched call: `n_pairs` pairs and `n_spans` source spans.
struct ListArrays {
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
}

fn batch_per_particle<T: CReal>(
    e: *mut NbodyExecutor,
    (particles, eps, n): (*const T, *const T, usize),
    l: ListArrays,
    p: *const NbodyParams,
    out: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: as in `batch`, and `eps` holds n values.
        let (ps, eps, pairs, spans, o) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                records(eps, n, "eps")?,
                records(l.pairs.cast::<Pair>(), l.n_pairs, "pairs")?,
                records(l.spans.cast::<Span>(), l.n_spans, "spans")?,
                records_mut(out.cast::<Field<T>>(), n, "out")?,
            )
        };
        let list = InteractionList { pairs, source_spans: spans };
        T::with(e, |x| x.accelerations_batch_per_particle(ps, eps, &list, &p, o))?.map_err(Failure::from)
    })
}

/// [`nbody_batch_f32`] with a softening length per particle (`eps`, `n` floats; the rule
/// of [`nbody_accelerations_per_particle_f32`]): a tree code's leaf work for a system of
/// several species.
///
/// # Safety
/// As [`nbody_batch_f32`]; `eps` holds `n` floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_batch_per_particle_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    eps: *const f32,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    out: *mut f32,
) -> NbodyStatus {
    batch_per_particle(e, (particles, eps, n), ListArrays { pairs, n_pairs, spans, n_spans }, params, out)
}

/// [`nbody_batch_per_particle_f32`] for doubles.
///
/// # Safety
/// As [`nbody_batch_per_particle_f32`], with 4-double records and double lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_batch_per_particle_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    eps: *const f64,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    params: *const NbodyParams,
    out: *mut f64,
) -> NbodyStatus {
    batch_per_particle(e, (particles, eps, n), ListArrays { pairs, n_pairs, spans, n_spans }, params, out)
}

/// A leaf list's cell part for [`nbody_batch_cells_f32`]: `cells` holds `n_cells`
/// 12-lane records `[x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz, spread, 0]` (centre of
/// mass, mass, traceless quadrupole, `Σ m |s|²` or 0; aligned like particle records), `ranges` one span of
/// `spans` per pair, `spans` `n_spans` ranges of the cells.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyCells {
    /// The cell records (float or double, as the call).
    pub cells: *const core::ffi::c_void,
    /// How many cells.
    pub n_cells: usize,
    /// One range of `spans` per pair of the call.
    pub ranges: *const NbodySpan,
    /// Ranges of the cells.
    pub spans: *const NbodySpan,
    /// How many spans.
    pub n_spans: usize,
}

#[allow(clippy::too_many_arguments)] // the C signature
fn batch_cells<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    cells: *const NbodyCells,
    p: *const NbodyParams,
    out: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let c = unsafe { cells.as_ref() }.ok_or_else(|| null("cells"))?;
        // SAFETY: the caller promises each pointer holds its count of records; Pair, Span
        // and Cell are the same #[repr(C)] layouts as NbodyPair, NbodySpan and the
        // 12-lane cell records.
        let (ps, pairs, spans, cell_records, ranges, cell_spans, o) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                records(pairs.cast::<Pair>(), n_pairs, "pairs")?,
                records(spans.cast::<Span>(), n_spans, "spans")?,
                records(c.cells.cast::<nbody_core::cell::Cell<T>>(), c.n_cells, "cells.cells")?,
                records(c.ranges.cast::<Span>(), n_pairs, "cells.ranges")?,
                records(c.spans.cast::<Span>(), c.n_spans, "cells.spans")?,
                records_mut(out.cast::<Field<T>>(), n, "out")?,
            )
        };
        let list = nbody_core::LeafList {
            particles: InteractionList { pairs, source_spans: spans },
            cells: ranges,
            cell_spans,
        };
        T::with(e, |x| x.accelerations_batch_cells(ps, cell_records, &list, &p, o))?.map_err(Failure::from)
    })
}

/// A tree code's whole leaf work in one call: [`nbody_batch_f32`]'s pairs over the
/// particles plus, for pair `k`, the cell spans `cells.spans[r.start..r.end]` with
/// `r = cells.ranges[k]` (far cells with a quadrupole: see `NbodyCells`), added into
/// `out` (`n` records).
///
/// # Safety
/// Each pointer must hold its count of records; `out` must not overlap the inputs.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn nbody_batch_cells_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    cells: *const NbodyCells,
    params: *const NbodyParams,
    out: *mut f32,
) -> NbodyStatus {
    batch_cells(e, particles, n, pairs, n_pairs, spans, n_spans, cells, params, out)
}

/// [`nbody_batch_cells_f32`] for doubles (cell records of 12 doubles, 32-byte aligned).
///
/// # Safety
/// As [`nbody_batch_cells_f32`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn nbody_batch_cells_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    n: usize,
    pairs: *const NbodyPair,
    n_pairs: usize,
    spans: *const NbodySpan,
    n_spans: usize,
    cells: *const NbodyCells,
    params: *const NbodyParams,
    out: *mut f64,
) -> NbodyStatus {
    batch_cells(e, particles, n, pairs, n_pairs, spans, n_spans, cells, params, out)
}

/// How a tree force takes its cells (see `nbody_tree_forces_f32`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NbodyTree {
    /// Opening angle: a cell of size s at distance d from a group is taken whole when
    /// s < theta d (finite, positive; also the relative criterion's test when no
    /// previous field is given).
    pub theta: f64,
    /// 0: the geometric test with `theta`. Positive: Gadget's relative criterion, a
    /// cell taken when G M / d^2 (s/d)^3 <= alpha |a_old| (finite), `a_old` from the
    /// previous field.
    pub alpha: f64,
}

#[allow(clippy::too_many_arguments)] // the C signature
fn tree_forces<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    n: usize,
    tree: *const NbodyTree,
    previous: *const T,
    p: *const NbodyParams,
    out: *mut T,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        let p = params::<T>(p)?;
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let t = *unsafe { tree.as_ref() }.ok_or_else(|| null("tree"))?;
        let criterion = Criterion::from_alpha((t.alpha != 0.0).then_some(t.alpha));
        // SAFETY: the caller promises n records each (previous: null or n records).
        let (ps, prev, o) = unsafe {
            (
                records(particles.cast::<Particle<T>>(), n, "particles")?,
                if previous.is_null() { None } else { Some(records(previous.cast::<Field<T>>(), n, "previous")?) },
                records_mut(out.cast::<Field<T>>(), n, "out")?,
            )
        };
        let bh = BarnesHut::for_executor(e.opened.backend().is_cuda(), t.theta).with_criterion(criterion);
        let run = |mut x: &mut dyn Projecting<T>| match prev {
            Some(prev) => bh.forces_after(ps, prev, &p, &mut x, o),
            None => bh.forces(ps, &p, &mut x, o),
        };
        T::with(e, run)?.map(|_| ()).map_err(Failure::from)
    })
}

/// Adds the Barnes-Hut tree field of `n` particles on themselves into `out` (`n`
/// records; every particle is a target and a source, so `params->overlap` is not read):
/// the tree is sorted, built and walked on the host (quadrupole cells), its leaves are
/// one batched call on the executor. `previous` (null, or the field of an earlier call
/// on the same particles, `n` records) scales `tree->alpha`'s relative criterion; without
/// it the test is the geometric one. A bad theta or alpha is `BadParameter`; nothing is
/// written on an error.
///
/// # Safety
/// Each pointer must hold its count of records (or be null where allowed); `out` must
/// not overlap the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_forces_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    n: usize,
    tree: *const NbodyTree,
    previous: *const f32,
    params: *const NbodyParams,
    out: *mut f32,
) -> NbodyStatus {
    tree_forces(e, particles, n, tree, previous, params, out)
}

/// [`nbody_tree_forces_f32`] for doubles.
///
/// # Safety
/// As [`nbody_tree_forces_f32`], with 4-double records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_tree_forces_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    n: usize,
    tree: *const NbodyTree,
    previous: *const f64,
    params: *const NbodyParams,
    out: *mut f64,
) -> NbodyStatus {
    tree_forces(e, particles, n, tree, previous, params, out)
}

fn project<T: CReal>(
    e: *mut NbodyExecutor,
    particles: *const T,
    n: usize,
    window: *const NbodyProjection,
    grid: *mut f64,
    n_grid: usize,
) -> NbodyStatus {
    guard(|| {
        let e = executor(e)?;
        // SAFETY: a null pointer is refused; otherwise the caller passes a valid struct.
        let w = unsafe { window.as_ref() }.ok_or_else(|| null("projection"))?;
        let plane = match w.plane {
            0 => Plane::XY,
            1 => Plane::XZ,
            2 => Plane::YZ,
            other => return Err(Failure(NbodyStatus::BadParameter, format!("projection plane {other}: 0, 1 or 2"))),
        };
        let proj = Projection { plane, centre: [w.centre_h, w.centre_v], half_width: w.half_width, pixels: w.pixels };
        // SAFETY: the caller promises the counts.
        let (ps, g) =
            unsafe { (records(particles.cast::<Particle<T>>(), n, "particles")?, records_mut(grid, n_grid, "grid")?) };
        T::with(e, |x| x.project(ps, &proj, g))?.map_err(Failure::from)
    })
}

/// Adds the projected mass of `n` particles into `grid` (`n_grid` = pixels² doubles).
///
/// # Safety
/// Each pointer must hold its count of records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_project_f32(
    e: *mut NbodyExecutor,
    particles: *const f32,
    n: usize,
    projection: *const NbodyProjection,
    grid: *mut f64,
    n_grid: usize,
) -> NbodyStatus {
    project(e, particles, n, projection, grid, n_grid)
}

/// [`nbody_project_f32`] for doubles.
///
/// # Safety
/// As [`nbody_project_f32`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_project_f64(
    e: *mut NbodyExecutor,
    particles: *const f64,
    n: usize,
    projection: *const NbodyProjection,
    grid: *mut f64,
    n_grid: usize,
) -> NbodyStatus {
    project(e, particles, n, projection, grid, n_grid)
}

// The C structs must stay the layouts of the Rust ones they are cast to.
const _: () = {
    assert!(std::mem::size_of::<NbodySpan>() == std::mem::size_of::<Span>());
    assert!(std::mem::size_of::<NbodyPair>() == std::mem::size_of::<Pair>());
    assert!(std::mem::align_of::<NbodyPair>() == std::mem::align_of::<Pair>());
};
