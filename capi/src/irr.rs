//! NBODY6++GPU's irregular-force library ("irr_simd", upstream's src/Main/irr.avx.cpp
//! and irr.sse.cpp): the unsoftened force and jerk on a block of i-particles from their
//! own neighbour lists, every particle predicted to the block's time from its last
//! correction. The Fortran names (`irr_simd_open_`, `irr_simd_set_jp_`,
//! `irr_simd_set_list_`, `irr_simd_firr_vec_`, `irr_simd_profile_`, `irr_simd_close_`)
//! live in `capi/gpunb/irr.c` (`libnbody_irr_nbody6pp.a`, built by
//! `scripts/build-gpunb.sh`) over the C names here (`nbody_irr_*`, scalars by value, a
//! status returned).
//!
//! Upstream's semantics, read from irr.avx.cpp:
//! - `set_jp(addr, x, v, a/2, j/6, m, t)` stores particle `addr` (from 1) as corrected at
//!   `t`; NBODY6++ passes its `F` and `FDOT`, which are already a/2 and j/6.
//! - `set_list(addr, list)`: `list[0]` is the count, then the neighbours (from 1).
//! - `firr_vec(ti, ni, addr, acc, jrk, nnbid)`: every particle involved is predicted to
//!   `ti`, `x + s (v + s (a/2 + s j/6))` and `v + 2 s (a/2 + 1.5 s j/6)` with
//!   `s = ti − t`; then `acc = Σ m dx/r³` and `jrk = Σ m (dv − 3 (dx·dv) dx/r²)/r³`
//!   over the list, unsoftened (G = 1), and `nnbid` the nearest neighbour (from 1; the
//!   lower index at equal distance; 0 for an empty list, where upstream returns garbage).
//!
//! Here the CPU executor's list kernel (`nbody_cpu::lists`) gathers, predicts and sums
//! every list in f64 vectors; upstream's AVX version predicts and sums in f32
//! (positions as pairs of floats), to about 1e-6 of the force. Threads: the archive's
//! `irr_simd_firr_vec_`, built with OpenMP, shares each block over the code's OpenMP
//! threads (`nbody_irr_firr_part`), as upstream does; `nbody_irr_firr_vec` itself runs
//! on `NBODY_IRR_THREADS` threads of the executor (1 by default). As upstream's arrays
//! allow, `set_jp` and `set_list` of distinct particles may run on several threads at
//! once (NBODY6++ calls them from its OpenMP loops).
//!
//! Errors (a count above the list length of `open`, an address out of range, a
//! particle in its own list or at zero distance from a neighbour, a particle never set,
//! a NaN) are reported on stderr as `nbody irr: ...`, kept for `nbody_last_error`, and
//! returned as a nonzero status; the outputs are then untouched.

use crate::grape::{count, shielded, values, values_mut};
use nbody_cpu::Parallelism;
use nbody_cpu::lists::{ListExecutor, ListSums, Taylor};
use std::sync::{Mutex, RwLock};
use std::time::Instant;

/// A record never set: NaN everywhere, so that a list naming it fails its distance check.
const UNSET: Taylor = Taylor {
    x: [f64::NAN; 3],
    m: f64::NAN,
    v: [f64::NAN; 3],
    t: f64::NAN,
    a2: [f64::NAN; 3],
    _pad0: 0.0,
    j6: [f64::NAN; 3],
    _pad1: 0.0,
};

/// Between `open` and `close`.
struct Irr {
    /// Written by `set_jp` under the shared lock: NBODY6++ sets distinct particles from
    /// its OpenMP threads at once (as upstream's library allows), never while a block's
    /// forces are summed.
    records: Shared<Taylor>,
    /// Each particle's neighbours, from 0; written by `set_list` as `records` by `set_jp`.
    lists: Shared<Vec<u32>>,
    /// Longest list `set_list` takes (`lmax − 1`).
    longest: usize,
    /// `NBODY_IRR_THREADS` threads, for `firr_vec` (exclusive); `firr_part` runs on the
    /// caller's thread.
    executor: ListExecutor,
    profile: Mutex<Profile>,
}

#[derive(Default)]
struct Profile {
    calls: u64,
    targets: u64,
    interactions: u64,
    seconds: f64,
}

/// Values that callers on several threads write at once, each its own: `set_jp` and
/// `set_list` of distinct particles, as upstream's `irr_simd` allows (its arrays are
/// plain memory). The C functions' safety contracts carry the rule.
struct Shared<T>(Box<[std::cell::UnsafeCell<T>]>);

// SAFETY: every access follows the callers' contract above: one writer per element, and
// no reader of an element while it is written.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T: Clone> Shared<T> {
    fn new(value: T, n: usize) -> Self {
        Self((0..n).map(|_| std::cell::UnsafeCell::new(value.clone())).collect())
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    /// # Safety
    /// No other thread reads or writes element `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut(&self, i: usize) -> &mut T {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.0[i].get() }
    }
    /// # Safety
    /// No other thread writes any element meanwhile.
    unsafe fn all(&self) -> &[T] {
        // SAFETY: UnsafeCell<T> has T's layout; no writer, by the caller's contract.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast::<T>(), self.0.len()) }
    }
}

/// Written by everything that changes it (and by `firr_vec`, whose threads are the
/// executor's); read by `firr_part`, which the caller's threads run side by side.
static STATE: RwLock<Option<Irr>> = RwLock::new(None);

fn not_open(what: &str) -> String {
    format!("{what}: the library is not open (irr_simd_open first)")
}

fn with_open<R>(what: &str, f: impl FnOnce(&mut Irr) -> Result<R, String>) -> Result<R, String> {
    let mut guard = STATE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.as_mut().map_or_else(|| Err(not_open(what)), f)
}

fn with_open_shared<R>(what: &str, f: impl FnOnce(&Irr) -> Result<R, String>) -> Result<R, String> {
    let guard = STATE.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.as_ref().map_or_else(|| Err(not_open(what)), f)
}

fn status(r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("nbody irr: {message}");
            crate::set_last_error(&message);
            -1
        }
    }
}

fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Opens the library for particles `1..=nmax` and lists of at most `lmax − 1`
/// neighbours (NBODY6++'s `LIST(LMAX, NMAX)` columns: the count, then the neighbours).
/// Opening it when it is open is said on stderr and changes nothing, as upstream does.
///
/// ```
/// use nbody_c::irr::*;
/// assert_eq!(nbody_irr_open(100, 601, 0), 0);
/// assert_eq!(nbody_irr_close(0), 0);
/// ```
#[unsafe(no_mangle)]
pub extern "C" fn nbody_irr_open(nmax: i32, lmax: i32, rank: i32) -> i32 {
    shielded(-1, || {
        let mut guard = STATE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.is_some() {
            eprintln!("nbody irr: irr_simd_open: it is already open");
            return 0;
        }
        status((|| {
            let n = count(nmax, "nmax")?;
            let lmax = count(lmax, "lmax")?;
            if lmax == 0 {
                return Err("lmax = 0: a list needs a slot for its count".into());
            }
            if n > 1 << 27 {
                return Err(format!("nmax = {n} is above the 2^27 particles the list kernel addresses"));
            }
            // One by default: the Fortran names share a block over the code's own
            // OpenMP threads (nbody_irr_firr_part), beside which a team of ours would
            // only wait for cores.
            let threads = match from_env("NBODY_IRR_THREADS") {
                None => 1,
                Some(t) => t
                    .parse::<usize>()
                    .ok()
                    .filter(|&t| (1..=1024).contains(&t))
                    .ok_or_else(|| format!("NBODY_IRR_THREADS={t}: not a thread count from 1 to 1024"))?,
            };
            let executor = ListExecutor::new(Parallelism::threads(threads));
            eprintln!(
                "nbody irr: rank {rank}: nmax {n}, lmax {lmax}, f64 on {} thread(s), {}",
                executor.threads(),
                executor.isa().name()
            );
            *guard = Some(Irr {
                records: Shared::new(UNSET, n),
                lists: Shared::new(Vec::new(), n),
                longest: lmax - 1,
                executor,
                profile: Mutex::new(Profile::default()),
            });
            Ok(())
        })())
    })
}

/// Closes the library (its particles and lists are dropped); closing it when it is not
/// open is said on stderr, as upstream does.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_irr_close(rank: i32) -> i32 {
    shielded(-1, || {
        let mut guard = STATE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.take().is_none() {
            eprintln!("nbody irr: irr_simd_close: it is not open (rank {rank})");
        }
        0
    })
}

/// Index (from 0) of the particle `addr` (from 1) names.
fn index(irr: &Irr, addr: i32, what: &str) -> Result<usize, String> {
    usize::try_from(addr)
        .ok()
        .filter(|&a| (1..=irr.records.len()).contains(&a))
        .map(|a| a - 1)
        .ok_or_else(|| format!("{what}: address {addr} is outside 1..={}", irr.records.len()))
}

/// Stores particle `addr` (from 1): position, velocity, half its acceleration, a sixth
/// of its jerk, its mass and the time they hold at.
///
/// # Safety
/// `x`, `v`, `a2`, `j6` each point to 3 values. Calls for distinct particles may run on
/// several threads at once (NBODY6++ sets them from its OpenMP loops), but not beside a
/// call for the same particle or a force call.
///
/// ```
/// use nbody_c::irr::*;
/// assert_eq!(nbody_irr_open(10, 601, 0), 0);
/// let (x, v, z) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0; 3]);
/// assert_eq!(unsafe { nbody_irr_set_jp(1, x.as_ptr(), v.as_ptr(), z.as_ptr(), z.as_ptr(), 1e-3, 0.0) }, 0);
/// assert_ne!(unsafe { nbody_irr_set_jp(11, x.as_ptr(), v.as_ptr(), z.as_ptr(), z.as_ptr(), 1e-3, 0.0) }, 0);
/// assert_eq!(nbody_irr_close(0), 0);
/// ```
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_irr_set_jp(
    addr: i32,
    x: *const f64,
    v: *const f64,
    a2: *const f64,
    j6: *const f64,
    m: f64,
    t: f64,
) -> i32 {
    shielded(-1, || {
        status(with_open_shared("irr_simd_set_jp", |irr| {
            let i = index(irr, addr, "irr_simd_set_jp")?;
            let three = |p: *const f64, what: &str| -> Result<[f64; 3], String> {
                // SAFETY: the caller's contract: 3 values.
                let s = unsafe { values(p, 3, what)? };
                Ok([s[0], s[1], s[2]])
            };
            let r = Taylor {
                x: three(x, "pos")?,
                v: three(v, "vel")?,
                a2: three(a2, "acc2")?,
                j6: three(j6, "jrk6")?,
                m,
                t,
                ..Taylor::default()
            };
            let finite = r.x.iter().chain(&r.v).chain(&r.a2).chain(&r.j6).chain([&r.m, &r.t]).all(|c| c.is_finite());
            if !finite || m < 0.0 {
                return Err(format!(
                    "irr_simd_set_jp: particle {addr} is not finite or has a negative mass (m = {m}, t = {t})"
                ));
            }
            // SAFETY: the caller's contract: no other thread sets this particle or sums
            // forces meanwhile.
            unsafe { *irr.records.get_mut(i) = r };
            Ok(())
        }))
    })
}

/// Sets the neighbour list of particle `addr` (from 1): `list[0]` neighbours follow in
/// `list[1..]`, each from 1, at most `lmax − 1` of them.
///
/// # Safety
/// `list` points to `1 + list[0]` values. As [`nbody_irr_set_jp`]: calls for distinct
/// particles may run on several threads at once, not beside a force call.
///
/// ```
/// use nbody_c::irr::*;
/// assert_eq!(nbody_irr_open(10, 4, 0), 0);
/// assert_eq!(unsafe { nbody_irr_set_list(1, [2, 5, 7].as_ptr()) }, 0);
/// assert_ne!(unsafe { nbody_irr_set_list(1, [1, 1].as_ptr()) }, 0); // itself
/// assert_ne!(unsafe { nbody_irr_set_list(1, [4, 2, 3, 4, 5].as_ptr()) }, 0); // over lmax − 1
/// assert_eq!(nbody_irr_close(0), 0);
/// ```
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_irr_set_list(addr: i32, list: *const i32) -> i32 {
    shielded(-1, || {
        status(with_open_shared("irr_simd_set_list", |irr| {
            let i = index(irr, addr, "irr_simd_set_list")?;
            // SAFETY: the caller's contract: the count, then as many neighbours.
            let n = count(unsafe { values(list, 1, "nblist")? }[0], "irr_simd_set_list: the count")?;
            if n > irr.longest {
                return Err(format!(
                    "irr_simd_set_list: particle {addr} has {n} neighbours, above the {} a list holds (lmax − 1)",
                    irr.longest
                ));
            }
            // SAFETY: as above.
            let all = unsafe { values(list, 1 + n, "nblist")? };
            for &j in &all[1..] {
                let k =
                    index(irr, j, "irr_simd_set_list").map_err(|e| format!("{e} (a neighbour of particle {addr})"))?;
                if k == i {
                    return Err(format!("irr_simd_set_list: particle {addr} is in its own list"));
                }
            }
            // Checked whole before the old list goes.
            // SAFETY: the caller's contract: no other thread sets this list or sums forces
            // meanwhile.
            let list = unsafe { irr.lists.get_mut(i) };
            list.clear();
            list.extend(all[1..].iter().map(|&j| j as u32 - 1));
            Ok(())
        }))
    })
}

/// The irregular force on particles `addr[0..ni]` (from 1) at time `ti`: `acc`, `jrk`
/// from their lists, `nnbid` their nearest neighbours (from 1; 0 for an empty list).
///
/// # Safety
/// `addr` and `nnbid` hold `ni` values, `acc` and `jrk` `ni` triples.
///
/// ```
/// use nbody_c::irr::*;
/// assert_eq!(nbody_irr_open(3, 601, 0), 0);
/// let z = [0.0; 3];
/// for (a, x) in [(1, [0.0, 0.0, 0.0]), (2, [2.0, 0.0, 0.0]), (3, [0.0, -4.0, 0.0])] {
///     assert_eq!(unsafe { nbody_irr_set_jp(a, x.as_ptr(), z.as_ptr(), z.as_ptr(), z.as_ptr(), 1.0, 0.0) }, 0);
/// }
/// assert_eq!(unsafe { nbody_irr_set_list(1, [2, 2, 3].as_ptr()) }, 0);
/// let (mut acc, mut jrk, mut nn) = ([[0.0; 3]], [[0.0; 3]], [0]);
/// let s = unsafe { nbody_irr_firr_vec(0.0, 1, [1].as_ptr(), acc.as_mut_ptr(), jrk.as_mut_ptr(), nn.as_mut_ptr()) };
/// assert_eq!((s, acc[0], nn[0]), (0, [0.25, -1.0 / 16.0, 0.0], 2));
/// assert_eq!(nbody_irr_close(0), 0);
/// ```
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_irr_firr_vec(
    ti: f64,
    ni: i32,
    addr: *const i32,
    acc: *mut [f64; 3],
    jrk: *mut [f64; 3],
    nnbid: *mut i32,
) -> i32 {
    shielded(-1, || {
        status(with_open("irr_simd_firr_vec", |irr| {
            let start = Instant::now();
            forces(irr, &irr.executor, ti, ni, addr, acc, jrk, nnbid)?;
            irr.profile.get_mut().unwrap_or_else(|p| p.into_inner()).called(start.elapsed().as_secs_f64());
            Ok(())
        }))
    })
}

/// As [`nbody_irr_firr_vec`], on the calling thread alone, and callable from several
/// threads at once (each with its own share of a block): the Fortran name's OpenMP
/// threads call it, so that the block runs on the code's own threads as upstream's
/// does (a second team of threads would wait for cores the code's spinning OpenMP
/// threads hold). A call counts its targets in the profile; [`nbody_irr_called`] counts
/// the block.
///
/// # Safety
/// As [`nbody_irr_firr_vec`]; the shares of concurrent calls do not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_irr_firr_part(
    ti: f64,
    ni: i32,
    addr: *const i32,
    acc: *mut [f64; 3],
    jrk: *mut [f64; 3],
    nnbid: *mut i32,
) -> i32 {
    shielded(-1, || {
        status(with_open_shared("irr_simd_firr_vec", |irr| {
            let alone = ListExecutor::with_isa(Parallelism::Sequential, irr.executor.isa());
            forces(irr, &alone, ti, ni, addr, acc, jrk, nnbid)
        }))
    })
}

/// Counts one block of [`nbody_irr_firr_part`] calls that took `seconds`, for the profile.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_irr_called(seconds: f64) -> i32 {
    shielded(-1, || {
        status(with_open_shared("irr_simd_firr_vec", |irr| {
            irr.profile.lock().unwrap_or_else(|p| p.into_inner()).called(seconds);
            Ok(())
        }))
    })
}

impl Profile {
    fn called(&mut self, seconds: f64) {
        self.calls += 1;
        self.seconds += seconds;
    }
}

/// The irregular force of `addr[..ni]` on `executor` (the targets counted in the profile).
#[allow(clippy::too_many_arguments)]
fn forces(
    irr: &Irr,
    executor: &ListExecutor,
    ti: f64,
    ni: i32,
    addr: *const i32,
    acc: *mut [f64; 3],
    jrk: *mut [f64; 3],
    nnbid: *mut i32,
) -> Result<(), String> {
    let ni = count(ni, "irr_simd_firr_vec: ni")?;
    // SAFETY: the caller's contract: ni addresses.
    let addr = unsafe { values(addr, ni, "addr")? };
    if !ti.is_finite() {
        return Err(format!("irr_simd_firr_vec: the time {ti} is not finite"));
    }
    // SAFETY: the callers' contract: nothing is set while forces are summed.
    let (records, lists) = unsafe { (irr.records.all(), irr.lists.all()) };
    let targets = addr
        .iter()
        .map(|&a| {
            let i = index(irr, a, "irr_simd_firr_vec")?;
            if records[i].m.is_nan() {
                return Err(format!("irr_simd_firr_vec: particle {a} was never set (irr_simd_set_jp)"));
            }
            Ok((i, lists[i].as_slice()))
        })
        .collect::<Result<Vec<(usize, &[u32])>, String>>()?;
    let mut out = vec![ListSums::default(); ni];
    executor.sums(records, &targets, ti, &mut out).map_err(|bad| {
        let (i, j) = (targets[bad.target].0 + 1, bad.source as usize + 1);
        if records[j - 1].m.is_nan() {
            format!("irr_simd_firr_vec: particle {j} (in the list of {i}) was never set (irr_simd_set_jp)")
        } else {
            format!(
                "irr_simd_firr_vec: particles {i} and {j} (a neighbour) are at no finite nonzero distance at t = {ti}: an unsoftened pair needs one"
            )
        }
    })?;
    // SAFETY: the caller's contract: ni values and triples.
    let (acc, jrk, nnbid) =
        unsafe { (values_mut(acc, ni, "acc")?, values_mut(jrk, ni, "jrk")?, values_mut(nnbid, ni, "nnbid")?) };
    for (k, sums) in out.iter().enumerate() {
        acc[k] = sums.acc;
        jrk[k] = sums.jerk;
        nnbid[k] = sums.nearest.map_or(0, |j| j as i32 + 1);
    }
    let interactions = targets.iter().map(|(_, l)| l.len() as u64).sum::<u64>();
    let mut p = irr.profile.lock().unwrap_or_else(|p| p.into_inner());
    p.targets += ni as u64;
    p.interactions += interactions;
    Ok(())
}

/// Prints the calls, targets, neighbours and seconds since the last print to stderr, as
/// upstream's `irr_simd_profile_` does, and starts counting again.
///
/// ```
/// assert_eq!(nbody_c::irr::nbody_irr_profile(0), 0); // open or not
/// ```
#[unsafe(no_mangle)]
pub extern "C" fn nbody_irr_profile(rank: i32) -> i32 {
    shielded(-1, || {
        let guard = STATE.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(irr) = guard.as_ref() {
            let p = std::mem::take(&mut *irr.profile.lock().unwrap_or_else(|p| p.into_inner()));
            if p.calls > 0 {
                eprintln!(
                    "[R.{rank} nbody Irr.F] Ncall: {} <NI>: {} <NB>: {:.3} grav: {:.6} s, {:.3} usec, {:.3e} interactions/s",
                    p.calls,
                    p.targets / p.calls,
                    p.interactions as f64 / p.targets.max(1) as f64,
                    p.seconds,
                    1e6 * p.seconds / p.calls as f64,
                    p.interactions as f64 / p.seconds.max(1e-300)
                );
            }
        }
        0
    })
}
