//! GRAPE-5: a j-memory of positions and masses, and forces and potentials on any number
//! of i-positions, as collisionless (tree) codes use it.
//!
//! As on the board, every j-particle in `0..n` acts on every i-position: with ε > 0 a
//! j-particle at an i-position adds −m/ε to its potential and nothing to its force
//! (codes that pass their own particles as i-positions remove that term themselves);
//! with ε = 0 such a pair is skipped. G = 1; `p` = −Σ m/√(r² + ε²). `g5_set_xmj(adr,
//! nj, xj, mj)` copies `xj[0..nj]` to addresses `adr..adr+nj` (GRAPE-5's library;
//! with `adr` = 0, as codes call it, Sapporo's reading agrees).

use super::{count, report, shielded, triples, values, values_mut, Engine};
use nbody_core::{Field, Params, Particle};
use std::sync::Mutex;

/// i-positions per pipeline batch the caller may use (any `ni` is accepted).
const PIPES: i32 = 4096;

struct Board {
    engine: Engine,
    eps: Option<f64>,
    n: Option<usize>,
    j: Vec<Particle<f64>>,
}

static BOARD: Mutex<Option<Board>> = Mutex::new(None);

fn with_board(what: &str, f: impl FnOnce(&mut Board) -> Result<(), String>) {
    let mut board = BOARD.lock().unwrap_or_else(|p| p.into_inner());
    let r = match board.as_mut() {
        Some(b) => f(b),
        None => Err("the board is not open (call g5_open first)".into()),
    };
    if let Err(m) = r {
        report(&format!("{what}: {m}"));
    }
}

/// Opens the board (chooses the executor, see the module docs of `grape`).
#[no_mangle]
pub extern "C" fn g5_open() {
    shielded((), || match Engine::from_env() {
        Ok(engine) => {
            *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = Some(Board { engine, eps: None, n: None, j: Vec::new() })
        }
        Err(m) => {
            report(&format!("g5_open: {m}"));
        }
    })
}

/// Closes the board, freeing its memory.
#[no_mangle]
pub extern "C" fn g5_close() {
    shielded((), || *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = None)
}

/// i-positions per batch (any number is accepted by `g5_calculate_force_on_x`).
#[no_mangle]
pub extern "C" fn g5_get_number_of_pipelines() -> i32 {
    PIPES
}

/// The number of j-particles (addresses `0..n`) the next calculations use.
#[no_mangle]
pub extern "C" fn g5_set_n(n: i32) {
    shielded((), || {
        with_board("g5_set_n", |b| {
            b.n = Some(count(n, "n")?);
            Ok(())
        })
    })
}

/// The softening length of every pair.
#[no_mangle]
pub extern "C" fn g5_set_eps_to_all(eps: f64) {
    shielded((), || {
        with_board("g5_set_eps_to_all", |b| {
            if !(eps.is_finite() && eps >= 0.0) {
                return Err(format!("eps = {eps} must be finite and not negative"));
            }
            b.eps = Some(eps);
            Ok(())
        })
    })
}

/// Accepted for compatibility: the board's fixed-point range has no meaning here.
#[no_mangle]
pub extern "C" fn g5_set_range(xmin: f64, xmax: f64, mmin: f64) {
    let _ = (xmin, xmax, mmin);
}

/// Stores `nj` j-particles (positions `xj`, masses `mj`) at addresses `adr..adr+nj`.
///
/// # Safety
/// `xj` holds `nj` triples and `mj` `nj` doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_set_xmj(adr: i32, nj: i32, xj: *const [f64; 3], mj: *const f64) {
    shielded((), || {
        with_board("g5_set_xmj", |b| {
            let (adr, nj) = (count(adr, "adr")?, count(nj, "nj")?);
            // SAFETY: the caller passes `nj` of each.
            let (x, m) = unsafe { (triples(xj, nj, "xj")?, values(mj, nj, "mj")?) };
            if let Some(k) = (0..nj).find(|&k| !(x[k].iter().all(|c| c.is_finite()) && m[k].is_finite() && m[k] >= 0.0))
            {
                return Err(format!("j-particle {k} has a NaN, infinite or negative value"));
            }
            if b.j.len() < adr + nj {
                b.j.resize(adr + nj, Particle::new(0.0, 0.0, 0.0, 0.0));
            }
            for k in 0..nj {
                b.j[adr + k] = Particle::new(x[k][0], x[k][1], x[k][2], m[k]);
            }
            Ok(())
        })
    })
}

/// Forces `a` and potentials `p` on `ni` positions `x` from j-particles `0..n`
/// (overwritten, not added).
///
/// # Safety
/// `x` and `a` hold `ni` triples, `p` `ni` doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_calculate_force_on_x(x: *const [f64; 3], a: *mut [f64; 3], p: *mut f64, ni: i32) {
    shielded((), || {
        with_board("g5_calculate_force_on_x", |b| {
            let ni = count(ni, "ni")?;
            let n = b.n.ok_or("the number of j-particles is not set (call g5_set_n)")?;
            let eps = b.eps.ok_or("the softening is not set (call g5_set_eps_to_all)")?;
            if n > b.j.len() {
                return Err(format!("n = {n}, but only addresses below {} were set", b.j.len()));
            }
            // SAFETY: the caller passes `ni` of each.
            let (x, a, p) = unsafe { (triples(x, ni, "x")?, values_mut(a, ni, "a")?, values_mut(p, ni, "p")?) };
            let targets: Vec<Particle<f64>> = x.iter().map(|r| Particle::new(r[0], r[1], r[2], 0.0)).collect();
            let mut out = vec![Field::zero(); ni];
            let params = Params::softened(eps);
            b.engine.get().accelerations(&targets, &b.j[..n], &params, &mut out).map_err(super::describe)?;
            for (k, f) in out.iter().enumerate() {
                a[k] = f.acceleration();
                p[k] = f.phi;
            }
            Ok(())
        })
    })
}

// Fortran spellings: trailing underscore, every argument by reference.

/// Fortran `g5_open`.
#[no_mangle]
pub extern "C" fn g5_open_() {
    g5_open()
}

/// Fortran `g5_close`.
#[no_mangle]
pub extern "C" fn g5_close_() {
    g5_close()
}

/// Fortran `g5_get_number_of_pipelines`.
#[no_mangle]
pub extern "C" fn g5_get_number_of_pipelines_() -> i32 {
    g5_get_number_of_pipelines()
}

/// Fortran `g5_set_n`.
///
/// # Safety
/// `n` points to an int.
#[no_mangle]
pub unsafe extern "C" fn g5_set_n_(n: *const i32) {
    // SAFETY: Fortran passes a valid reference.
    g5_set_n(unsafe { *n })
}

/// Fortran `g5_set_eps_to_all`.
///
/// # Safety
/// `eps` points to a double.
#[no_mangle]
pub unsafe extern "C" fn g5_set_eps_to_all_(eps: *const f64) {
    // SAFETY: Fortran passes a valid reference.
    g5_set_eps_to_all(unsafe { *eps })
}

/// Fortran `g5_set_range`.
///
/// # Safety
/// Each points to a double.
#[no_mangle]
pub unsafe extern "C" fn g5_set_range_(xmin: *const f64, xmax: *const f64, mmin: *const f64) {
    let _ = (xmin, xmax, mmin);
}

/// Fortran `g5_set_xmj`.
///
/// # Safety
/// As `g5_set_xmj`, scalars by reference.
#[no_mangle]
pub unsafe extern "C" fn g5_set_xmj_(adr: *const i32, nj: *const i32, xj: *const [f64; 3], mj: *const f64) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_set_xmj(*adr, *nj, xj, mj) }
}

/// Fortran `g5_calculate_force_on_x`.
///
/// # Safety
/// As `g5_calculate_force_on_x`, `ni` by reference.
#[no_mangle]
pub unsafe extern "C" fn g5_calculate_force_on_x_(x: *const [f64; 3], a: *mut [f64; 3], p: *mut f64, ni: *const i32) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_calculate_force_on_x(x, a, p, *ni) }
}
