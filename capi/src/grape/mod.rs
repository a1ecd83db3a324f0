//! Drop-in GRAPE interfaces: the GRAPE-6 (`g6_*`, `g6calc_*`) and GRAPE-5 (`g5_*`)
//! functions that Sapporo2 and Phantom-GRAPE export, with their C spellings (scalars by
//! value) and Fortran spellings (trailing underscore, every argument by pointer), so a
//! code written for a GRAPE board links against `libnbody_c` unchanged. Prototypes:
//! `include/grape6.h` and `include/grape5.h` (not in `nbody.h`: GRAPE codes bring
//! their own declarations).
//!
//! Both run in double precision with G = 1 on the executor `NBODY_GRAPE_EXECUTOR`
//! names: `cpu` (the default without CUDA; `NBODY_GRAPE_THREADS` threads, default every
//! core), `mixed`, `cuda` / `cuda:N` (the default when the library has CUDA and finds a
//! device), or `cuda-mixed` / `cuda-mixed:N` (the GPU's mixed-precision kernels). A failure (bad input, no device) is printed once to stderr as
//! `nbody grape: ...`, kept for `nbody_last_error`, and returned as -1 where the call
//! returns an int; GRAPE's `void` calls report it at the next call that returns one.

pub mod grape5;
pub mod grape6;

use nbody_core::{Error, Executor};
use nbody_cpu::{CpuExecutor, MixedExecutor, Parallelism};

/// The executor behind a GRAPE interface (boxed: they differ in size).
pub(crate) enum Engine {
    Cpu(Box<CpuExecutor>),
    Mixed(Box<MixedExecutor>),
    #[cfg(feature = "cuda")]
    Cuda(Box<nbody_cuda::CudaExecutor>),
}

impl Engine {
    /// The executor `NBODY_GRAPE_EXECUTOR` names (see the module docs).
    pub(crate) fn from_env() -> Result<Self, String> {
        let threads = match std::env::var("NBODY_GRAPE_THREADS") {
            Ok(t) => t.trim().parse::<usize>().map_err(|_| format!("NBODY_GRAPE_THREADS={t}: not a thread count"))?,
            Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let which = std::env::var("NBODY_GRAPE_EXECUTOR").unwrap_or_default();
        match which.trim() {
            "cpu" => Ok(Engine::Cpu(Box::new(CpuExecutor::new(Parallelism::threads(threads))))),
            "mixed" => Ok(Engine::Mixed(Box::new(MixedExecutor::new(Parallelism::threads(threads))))),
            "" => Ok(Self::default_device()
                .unwrap_or_else(|| Engine::Cpu(Box::new(CpuExecutor::new(Parallelism::threads(threads)))))),
            cuda if cuda.starts_with("cuda") => Self::cuda(cuda),
            other => Err(format!("NBODY_GRAPE_EXECUTOR={other}: use cpu, mixed, cuda[:N] or cuda-mixed[:N]")),
        }
    }

    #[cfg(feature = "cuda")]
    fn default_device() -> Option<Self> {
        nbody_cuda::CudaExecutor::new().ok().map(|e| Engine::Cuda(Box::new(e)))
    }

    #[cfg(not(feature = "cuda"))]
    fn default_device() -> Option<Self> {
        None
    }

    #[cfg(feature = "cuda")]
    fn cuda(name: &str) -> Result<Self, String> {
        // cuda-mixed[:N]: the same executor running its mixed-precision kernels.
        let (mixed, plain) = match name.strip_prefix("cuda-mixed") {
            Some(rest) => (true, format!("cuda{rest}")),
            None => (false, name.to_owned()),
        };
        if plain != "cuda" && !plain.starts_with("cuda:") {
            return Err(format!("NBODY_GRAPE_EXECUTOR={name}: use cpu, mixed, cuda[:N] or cuda-mixed[:N]"));
        }
        let ordinal = match plain.strip_prefix("cuda:") {
            Some(n) => n.parse::<u32>().map_err(|_| format!("NBODY_GRAPE_EXECUTOR={name}: not a device number"))?,
            None => 0,
        };
        let opened = if mixed {
            nbody_cuda::CudaMixedExecutor::on_device(ordinal).map(nbody_cuda::CudaMixedExecutor::into_executor)
        } else {
            nbody_cuda::CudaExecutor::on_device(ordinal)
        };
        opened.map(|e| Engine::Cuda(Box::new(e))).map_err(|e| format!("{name}: {e}"))
    }

    #[cfg(not(feature = "cuda"))]
    fn cuda(name: &str) -> Result<Self, String> {
        Err(format!("NBODY_GRAPE_EXECUTOR={name}: this libnbody_c was built without CUDA"))
    }

    pub(crate) fn get(&mut self) -> &mut dyn Executor<f64> {
        match self {
            Engine::Cpu(e) => e.as_mut(),
            Engine::Mixed(e) => e.as_mut(),
            #[cfg(feature = "cuda")]
            Engine::Cuda(e) => e.as_mut(),
        }
    }
}

/// Reports a failure the GRAPE way: one line on stderr, kept for `nbody_last_error`.
pub(crate) fn report(message: &str) -> i32 {
    eprintln!("nbody grape: {message}");
    crate::set_last_error(message);
    -1
}

/// Turns a library error into a GRAPE failure message.
pub(crate) fn describe(e: Error) -> String {
    e.to_string()
}

/// Views `n` triples at `p` (null only when `n == 0`).
///
/// # Safety
/// `p` must point to `n` readable `[f64; 3]`.
pub(crate) unsafe fn triples<'a>(p: *const [f64; 3], n: usize, what: &str) -> Result<&'a [[f64; 3]], String> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(format!("{what} is a null pointer"));
    }
    // SAFETY: non-null; the caller promises `n` triples (doubles are 8-byte aligned in C).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Views `n` values at `p` (null only when `n == 0`).
///
/// # Safety
/// `p` must point to `n` readable values.
pub(crate) unsafe fn values<'a, V>(p: *const V, n: usize, what: &str) -> Result<&'a [V], String> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(format!("{what} is a null pointer"));
    }
    // SAFETY: non-null; the caller promises `n` values.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// As [`values`], writable.
///
/// # Safety
/// `p` must point to `n` writable values not aliased by another argument.
pub(crate) unsafe fn values_mut<'a, V>(p: *mut V, n: usize, what: &str) -> Result<&'a mut [V], String> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(format!("{what} is a null pointer"));
    }
    // SAFETY: non-null; the caller promises `n` writable values.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A count passed as a C int: not negative.
pub(crate) fn count(n: i32, what: &str) -> Result<usize, String> {
    usize::try_from(n).map_err(|_| format!("{what} = {n} is negative"))
}

/// Runs `f` with a panic caught (reported like any failure).
pub(crate) fn shielded<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        report("internal error (a panic was caught at the C boundary); please report it");
        fallback
    })
}
