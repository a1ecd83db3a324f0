//! Drop-in GRAPE interfaces: the GRAPE-6 (`g6_*`, `g6calc_*`) and GRAPE-5 (`g5_*`)
//! functions that Sapporo2 and Phantom-GRAPE export, with their C spellings (scalars by
//! value) and Fortran spellings (trailing underscore, every argument by pointer), so a
//! code written for a GRAPE board links against `libnbody_c` unchanged. Prototypes:
//! `include/grape6.h` and `include/grape5.h` (not in `nbody.h`: GRAPE codes bring
//! their own declarations).
//!
//! Each function's work is a private `*_impl` that both spellings call: a Fortran
//! spelling that called the exported C name would, in a program that defines the C
//! names itself over the Fortran ones (AMUSE's ph4 does, in its grape.cc), land back in
//! the program's wrapper and recurse without end.
//!
//! Both run in double precision with G = 1 on the backend `NBODY_GRAPE_EXECUTOR` names,
//! in the registry's grammar (the command's `--executor` strings): `cpu` or `cpu:N`
//! (the default without CUDA; without `:N`, `NBODY_GRAPE_THREADS` threads, default
//! every core; both naming different counts is an error), `mixed`, `reference`, `cuda` / `cuda:N` (the default when the library
//! has CUDA and finds a device), `cuda-mixed` / `cuda-mixed:N` (the GPU's
//! mixed-precision kernels), or `cuda:0,1` / `cuda:all` (several GPUs as one executor;
//! the device j-memory is then not used). A failure (bad input, no device) is printed once to stderr as
//! `nbody grape: ...`, kept for `nbody_last_error`, and returned as -1 where the call
//! returns an int; GRAPE's `void` calls report it at the next call that returns one.
//! A board's j-memory is fixed at open (`NBODY_GRAPE_JMEM` particles, default 2^24):
//! a j-particle at an address past it is such a failure, never an allocation.

pub mod grape5;
pub mod grape6;

use nbody_backends::{Backend, Opened};
use nbody_core::{Error, Executor};

/// The executor behind a GRAPE interface: a backend of the registry, opened once.
pub(crate) struct Engine(Opened, usize);

/// The j-memory of a board when `NBODY_GRAPE_JMEM` does not set it: addresses are
/// `0..DEFAULT_J_MEMORY`, as a GRAPE board's j-memory bounds its addresses.
pub(crate) const DEFAULT_J_MEMORY: usize = 1 << 24;

/// The j-memory a board opens with, in particles: `NBODY_GRAPE_JMEM` or
/// [`DEFAULT_J_MEMORY`]. A j-particle set at an address past it is an error, never an
/// allocation sized by the address.
fn j_memory() -> Result<usize, String> {
    match std::env::var("NBODY_GRAPE_JMEM") {
        Ok(t) => match t.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("NBODY_GRAPE_JMEM={t}: not a positive particle count")),
        },
        Err(_) => Ok(DEFAULT_J_MEMORY),
    }
}

/// `Ok` when `count` j-particles from `address` fit a j-memory of `capacity`.
pub(crate) fn fits(what: &str, address: usize, count: usize, capacity: usize) -> Result<(), String> {
    if address.checked_add(count).is_none_or(|end| end > capacity) {
        return Err(format!(
            "{what}: address {address} (+{count}) is past the j-memory of {capacity} particles (NBODY_GRAPE_JMEM sets it at open)"
        ));
    }
    Ok(())
}

impl Engine {
    /// The j-memory this board opened with, in particles.
    pub(crate) fn j_capacity(&self) -> usize {
        self.1
    }

    /// The executor `NBODY_GRAPE_EXECUTOR` names (see the module docs).
    pub(crate) fn from_env() -> Result<Self, String> {
        Self::named_by("NBODY_GRAPE_EXECUTOR", "NBODY_GRAPE_THREADS")
    }

    /// The executor the variable `executor` names in the registry's grammar, with
    /// `threads` threads where it names none: a GPU when there is one and `executor` is
    /// unset, the CPU one otherwise.
    pub(crate) fn named_by(executor: &str, threads: &str) -> Result<Self, String> {
        let threads_var = threads;
        let threads = match std::env::var(threads_var) {
            Ok(t) => {
                Some(t.trim().parse::<usize>().map_err(|_| format!("{threads_var}={t}: not a thread count"))?.max(1))
            }
            Err(_) => None,
        };
        let which = std::env::var(executor).unwrap_or_default();
        let named = |b: Backend| b.and_threads(threads).and_then(|b| b.open());
        let opened = match which.trim() {
            "" => match "cuda".parse::<Backend>().map(|b| b.open()) {
                Ok(Ok(gpu)) => Ok(gpu),
                _ => named(Backend::Cpu { threads: None }),
            },
            text => named(text.parse().map_err(|e| format!("{executor}: {e}"))?),
        };
        let capacity = j_memory()?;
        opened.map(|o| Engine(o, capacity)).map_err(|e| format!("{executor}: {e}"))
    }

    /// The GPUs `list` names (`g5_open_special`, `g6_open_special`: a device list in
    /// the registry's `cuda:0,1` grammar), or [`Engine::from_env`] when the list is
    /// empty (`ndev <= 0`), as Sapporo2 lets its driver choose then.
    ///
    /// # Safety
    /// `list` holds `ndev` ints where `ndev > 0`.
    pub(crate) unsafe fn on_devices(ndev: i32, list: *const i32) -> Result<Self, String> {
        if ndev <= 0 {
            return Self::from_env();
        }
        // SAFETY: the caller's contract.
        let devices = unsafe { values(list, ndev as usize, "list")? };
        let text = format!("cuda:{}", devices.iter().map(i32::to_string).collect::<Vec<_>>().join(","));
        let backend: Backend = text.parse().map_err(|e| format!("devices {devices:?}: {e}"))?;
        let capacity = j_memory()?;
        backend.open().map(|o| Engine(o, capacity)).map_err(|e| format!("devices {devices:?} ({text}): {e}"))
    }

    /// The opened executor (for the device j-memory).
    pub(crate) fn executor(&mut self) -> &mut nbody_backends::Executor {
        self.0.executor_mut()
    }

    pub(crate) fn get(&mut self) -> &mut dyn Executor<f64> {
        self.0.f64()
    }

    /// The opened backend (for another precision, or its device line).
    pub(crate) fn opened(&mut self) -> &mut Opened {
        &mut self.0
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
