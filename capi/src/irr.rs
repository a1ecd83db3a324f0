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
//! Here the prediction and every difference are f64 and the pairs are summed by the CPU
//! executor's list kernel (`nbody_cpu::lists`) on its threads (`NBODY_IRR_THREADS`, all
//! cores by default): in f64 by default, in f32 with `NBODY_IRR_PRECISION=f32` (the
//! differences still f64, so nothing is lost to large coordinates; upstream's AVX
//! version predicts and differences in f32 pairs of floats).
//!
//! Errors (a count above the list length of `open`, an address out of range, a
//! particle in its own list or at zero distance from a neighbour, a particle never set,
//! a NaN) are reported on stderr as `nbody irr: ...`, kept for `nbody_last_error`, and
//! returned as a nonzero status; the outputs are then untouched.

use crate::grape::{count, shielded, values, values_mut};
use nbody_cpu::Parallelism;
use nbody_cpu::lists::{Gathered, ListExecutor, ListSums};
use std::sync::Mutex;
use std::time::Instant;

/// A particle as the last `set_jp` left it. A mass of NaN marks one never set.
#[derive(Clone, Copy)]
struct Record {
    x: [f64; 3],
    v: [f64; 3],
    a2: [f64; 3],
    j6: [f64; 3],
    m: f64,
    t: f64,
}

impl Record {
    const UNSET: Record = Record { x: [0.0; 3], v: [0.0; 3], a2: [0.0; 3], j6: [0.0; 3], m: f64::NAN, t: 0.0 };

    /// Position and velocity at `t`, upstream's third-order predictor.
    fn predict(&self, t: f64) -> ([f64; 3], [f64; 3]) {
        let s = t - self.t;
        let x = std::array::from_fn(|k| self.x[k] + s * (self.v[k] + s * (self.a2[k] + s * self.j6[k])));
        let v = std::array::from_fn(|k| self.v[k] + 2.0 * s * (self.a2[k] + 1.5 * s * self.j6[k]));
        (x, v)
    }
}

/// Between `open` and `close`.
struct Irr {
    records: Vec<Record>,
    /// Each particle's neighbours, from 0.
    lists: Vec<Vec<u32>>,
    /// Longest list `set_list` takes (`lmax − 1`).
    longest: usize,
    f32: bool,
    executor: ListExecutor,
    profile: Profile,
}

#[derive(Default)]
struct Profile {
    calls: u64,
    targets: u64,
    interactions: u64,
    seconds: f64,
}

static STATE: Mutex<Option<Irr>> = Mutex::new(None);

fn with_open<R>(what: &str, f: impl FnOnce(&mut Irr) -> Result<R, String>) -> Result<R, String> {
    let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match guard.as_mut() {
        Some(irr) => f(irr),
        None => Err(format!("{what}: the library is not open (irr_simd_open first)")),
    }
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
        let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
            if n > u32::MAX as usize {
                return Err(format!("nmax = {n} is above the {} particles a list can name", u32::MAX));
            }
            let f32 = match from_env("NBODY_IRR_PRECISION").as_deref() {
                None | Some("f64") => false,
                Some("f32") => true,
                Some(other) => {
                    return Err(format!("NBODY_IRR_PRECISION={other}: not a precision (f64, the default, or f32)"));
                }
            };
            let threads = match from_env("NBODY_IRR_THREADS") {
                None => std::thread::available_parallelism().map_or(1, |n| n.get()),
                Some(t) => t
                    .parse::<usize>()
                    .ok()
                    .filter(|&t| (1..=1024).contains(&t))
                    .ok_or_else(|| format!("NBODY_IRR_THREADS={t}: not a thread count from 1 to 1024"))?,
            };
            let executor = ListExecutor::new(Parallelism::threads(threads));
            eprintln!(
                "nbody irr: rank {rank}: nmax {n}, lmax {lmax}, {} on {} thread(s), {}",
                if f32 { "f32 pairs" } else { "f64" },
                executor.threads(),
                executor.isa().name()
            );
            *guard = Some(Irr {
                records: vec![Record::UNSET; n],
                lists: vec![Vec::new(); n],
                longest: lmax - 1,
                f32,
                executor,
                profile: Profile::default(),
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
        let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
/// `x`, `v`, `a2`, `j6` each point to 3 values.
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
        status(with_open("irr_simd_set_jp", |irr| {
            let i = index(irr, addr, "irr_simd_set_jp")?;
            let three = |p: *const f64, what: &str| -> Result<[f64; 3], String> {
                // SAFETY: the caller's contract: 3 values.
                let s = unsafe { values(p, 3, what)? };
                Ok([s[0], s[1], s[2]])
            };
            let r = Record {
                x: three(x, "pos")?,
                v: three(v, "vel")?,
                a2: three(a2, "acc2")?,
                j6: three(j6, "jrk6")?,
                m,
                t,
            };
            let finite = r.x.iter().chain(&r.v).chain(&r.a2).chain(&r.j6).chain([&r.m, &r.t]).all(|c| c.is_finite());
            if !finite || m < 0.0 {
                return Err(format!(
                    "irr_simd_set_jp: particle {addr} is not finite or has a negative mass (m = {m}, t = {t})"
                ));
            }
            irr.records[i] = r;
            Ok(())
        }))
    })
}

/// Sets the neighbour list of particle `addr` (from 1): `list[0]` neighbours follow in
/// `list[1..]`, each from 1, at most `lmax − 1` of them.
///
/// # Safety
/// `list` points to `1 + list[0]` values.
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
        status(with_open("irr_simd_set_list", |irr| {
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
            let list = &mut irr.lists[i];
            list.clear();
            list.extend(all[1..].iter().map(|&j| j as u32 - 1));
            Ok(())
        }))
    })
}

/// What a target keeps of its gathering pass: its nearest neighbour (from 0, with r²).
type Nearest = Option<(f64, u32)>;

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
            let ni = count(ni, "irr_simd_firr_vec: ni")?;
            // SAFETY: the caller's contract: ni addresses.
            let addr = unsafe { values(addr, ni, "addr")? };
            if !ti.is_finite() {
                return Err(format!("irr_simd_firr_vec: the time {ti} is not finite"));
            }
            let targets =
                addr.iter().map(|&a| index(irr, a, "irr_simd_firr_vec")).collect::<Result<Vec<usize>, String>>()?;
            let mut out = vec![(None, ListSums::default()); ni];
            let (records, lists) = (&irr.records, &irr.lists);
            let unset = |j: usize, what: &str| {
                format!("irr_simd_firr_vec: particle {} ({what}) was never set (irr_simd_set_jp)", j + 1)
            };
            if irr.f32 {
                irr.executor
                    .sums::<f32, Nearest, String>(&mut out, |k, g| gather(records, lists, targets[k], ti, g, unset))?;
            } else {
                irr.executor
                    .sums::<f64, Nearest, String>(&mut out, |k, g| gather(records, lists, targets[k], ti, g, unset))?;
            }
            // SAFETY: the caller's contract: ni values and triples.
            let (acc, jrk, nnbid) =
                unsafe { (values_mut(acc, ni, "acc")?, values_mut(jrk, ni, "jrk")?, values_mut(nnbid, ni, "nnbid")?) };
            for (k, (nearest, sums)) in out.iter().enumerate() {
                acc[k] = sums.acc;
                jrk[k] = sums.jerk;
                nnbid[k] = nearest.map_or(0, |(_, j)| j as i32 + 1);
            }
            let p = &mut irr.profile;
            p.calls += 1;
            p.targets += ni as u64;
            p.interactions += targets.iter().map(|&i| irr.lists[i].len() as u64).sum::<u64>();
            p.seconds += start.elapsed().as_secs_f64();
            Ok(())
        }))
    })
}

/// Predicts target `i` and its list to `ti`, gathers the list relative to it, and finds
/// its nearest neighbour (in f64).
fn gather<T: nbody_core::Real>(
    records: &[Record],
    lists: &[Vec<u32>],
    i: usize,
    ti: f64,
    g: &mut Gathered<T>,
    unset: impl Fn(usize, &str) -> String,
) -> Result<Nearest, String> {
    let target = &records[i];
    if target.m.is_nan() {
        return Err(unset(i, "a target"));
    }
    let (xi, vi) = target.predict(ti);
    let mut nearest: Nearest = None;
    for &j in &lists[i] {
        let source = &records[j as usize];
        if source.m.is_nan() {
            return Err(unset(j as usize, &format!("in the list of {}", i + 1)));
        }
        let (xj, vj) = source.predict(ti);
        let dx: [f64; 3] = std::array::from_fn(|k| xj[k] - xi[k]);
        let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if !(r2 > 0.0 && r2.is_finite()) {
            return Err(format!(
                "irr_simd_firr_vec: particles {} and {} (a neighbour) are at distance² {r2} at t = {ti}: an unsoftened pair needs a finite nonzero distance",
                i + 1,
                j + 1
            ));
        }
        if nearest.is_none_or(|(best, b)| r2 < best || (r2 == best && j < b)) {
            nearest = Some((r2, j));
        }
        g.push(dx, std::array::from_fn(|k| vj[k] - vi[k]), source.m);
    }
    Ok(nearest)
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
        let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(irr) = guard.as_mut() {
            let p = std::mem::take(&mut irr.profile);
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
