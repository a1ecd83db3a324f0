//! GRAPE-5: a j-memory of positions and masses, and forces and potentials on any number
//! of i-positions, as collisionless (tree) codes use it.
//!
//! As on the board, every j-particle in `0..n` acts on every i-position: with ε > 0 a
//! j-particle at an i-position adds −m/ε to its potential and nothing to its force
//! (codes that pass their own particles as i-positions remove that term themselves);
//! with ε = 0 such a pair is skipped. G = 1; `p` = −Σ m/√(r² + ε²). `g5_set_xmj(adr,
//! nj, xj, mj)` copies `xj[0..nj]` to addresses `adr..adr+nj` (GRAPE-5's library;
//! with `adr` = 0, as codes call it, Sapporo's reading agrees).

use super::{Engine, count, report, shielded, triples, values, values_mut};
use nbody_core::{Field, Params, Particle};
use std::sync::Mutex;

/// i-positions per pipeline batch the caller may use (any `ni` is accepted).
const PIPES: i32 = 4096;

struct Board {
    engine: Engine,
    eps: Option<f64>,
    n: Option<usize>,
    j: Vec<Particle<f64>>,
    /// The split calls' i-positions (`g5_set_xi`), computed at `g5_run` (or at
    /// `g5_get_force` if the code skipped it, as Sapporo2 allows), and their results.
    xi: Vec<[f64; 3]>,
    pending: bool,
    results: Vec<Field<f64>>,
}

impl Board {
    fn new(engine: Engine) -> Self {
        Board { engine, eps: None, n: None, j: Vec::new(), xi: Vec::new(), pending: false, results: Vec::new() }
    }

    /// Forces and potentials on `x` from j-particles `0..n` into `out`.
    fn forces(&mut self, x: &[[f64; 3]], out: &mut Vec<Field<f64>>) -> Result<(), String> {
        let n = self.n.ok_or("the number of j-particles is not set (call g5_set_n)")?;
        let eps = self.eps.ok_or("the softening is not set (call g5_set_eps_to_all)")?;
        if n > self.j.len() {
            return Err(format!("n = {n}, but only addresses below {} were set", self.j.len()));
        }
        let targets: Vec<Particle<f64>> = x.iter().map(|r| Particle::new(r[0], r[1], r[2], 0.0)).collect();
        out.clear();
        out.resize(x.len(), Field::zero());
        let params = Params::softened(eps);
        self.engine.get().accelerations(&targets, &self.j[..n], &params, out).map_err(super::describe)
    }

    /// Runs the split call's pending i-positions.
    fn run(&mut self) -> Result<(), String> {
        if self.pending {
            let (x, mut out) = (std::mem::take(&mut self.xi), std::mem::take(&mut self.results));
            let r = self.forces(&x, &mut out);
            (self.xi, self.results, self.pending) = (x, out, false);
            r?;
        }
        Ok(())
    }
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
#[unsafe(no_mangle)]
pub extern "C" fn g5_open() {
    g5_open_impl()
}

/// The work of `g5_open`, for both of its spellings.
fn g5_open_impl() {
    shielded((), || match Engine::from_env() {
        Ok(engine) => *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = Some(Board::new(engine)),
        Err(m) => {
            report(&format!("g5_open: {m}"));
        }
    })
}

/// Closes the board, freeing its memory.
#[unsafe(no_mangle)]
pub extern "C" fn g5_close() {
    g5_close_impl()
}

/// The work of `g5_close`, for both of its spellings.
fn g5_close_impl() {
    shielded((), || *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = None)
}

/// i-positions per batch (any number is accepted by `g5_calculate_force_on_x`).
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_number_of_pipelines() -> i32 {
    g5_get_number_of_pipelines_impl()
}

/// The work of `g5_get_number_of_pipelines`, for both of its spellings.
fn g5_get_number_of_pipelines_impl() -> i32 {
    PIPES
}

/// The number of j-particles (addresses `0..n`) the next calculations use.
#[unsafe(no_mangle)]
pub extern "C" fn g5_set_n(n: i32) {
    g5_set_n_impl(n)
}

/// The work of `g5_set_n`, for both of its spellings.
fn g5_set_n_impl(n: i32) {
    shielded((), || {
        with_board("g5_set_n", |b| {
            b.n = Some(count(n, "n")?);
            Ok(())
        })
    })
}

/// The softening length of every pair.
#[unsafe(no_mangle)]
pub extern "C" fn g5_set_eps_to_all(eps: f64) {
    g5_set_eps_to_all_impl(eps)
}

/// The work of `g5_set_eps_to_all`, for both of its spellings.
fn g5_set_eps_to_all_impl(eps: f64) {
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

/// The softening of every pair given as ε² (Sapporo2's spelling of
/// `g5_set_eps_to_all`). No call of the GRAPE-5 or GRAPE-6 interface carries a
/// softening per particle; the C ABI's own calls do.
#[unsafe(no_mangle)]
pub extern "C" fn g5_set_eps2_to_all(eps2: f64) {
    g5_set_eps2_to_all_impl(eps2)
}

/// The work of `g5_set_eps2_to_all`, for both of its spellings.
fn g5_set_eps2_to_all_impl(eps2: f64) {
    shielded((), || {
        with_board("g5_set_eps2_to_all", |b| {
            if !(eps2.is_finite() && eps2 >= 0.0) {
                return Err(format!("eps2 = {eps2} must be finite and not negative"));
            }
            b.eps = Some(eps2.sqrt());
            Ok(())
        })
    })
}

/// Opens the board on the GPUs `list[0..ndev]` (`ndev <= 0`: as `g5_open`). An error
/// (no such device, a build without CUDA) leaves the board closed.
///
/// # Safety
/// `list` holds `ndev` ints where `ndev > 0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_open_special(ndev: i32, list: *const i32) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_open_special_impl(ndev, list) }
}

/// The work of `g5_open_special`, for both of its spellings.
unsafe fn g5_open_special_impl(ndev: i32, list: *const i32) {
    // SAFETY: the caller's contract.
    shielded((), || match unsafe { Engine::on_devices(ndev, list) } {
        Ok(engine) => *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = Some(Board::new(engine)),
        Err(m) => {
            report(&format!("g5_open_special: {m}"));
        }
    })
}

/// j-memory size: the library's is bounded only by memory, so `i32::MAX`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_jmemsize() -> i32 {
    g5_get_jmemsize_impl()
}

/// The work of `g5_get_jmemsize`, for both of its spellings.
fn g5_get_jmemsize_impl() -> i32 {
    i32::MAX
}

/// A hardware figure without meaning here: the same as `g5_get_number_of_pipelines`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_number_of_real_pipelines() -> i32 {
    g5_get_number_of_real_pipelines_impl()
}

/// The work of `g5_get_number_of_real_pipelines`, for both of its spellings.
fn g5_get_number_of_real_pipelines_impl() -> i32 {
    PIPES
}

/// The board's PCI bus clock, without meaning here: 1 (as Sapporo2 answers).
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_pcibus_freq() -> i32 {
    g5_get_pcibus_freq_impl()
}

/// The work of `g5_get_pcibus_freq`, for both of its spellings.
fn g5_get_pcibus_freq_impl() -> i32 {
    1
}

/// As `g5_set_xmj` with the arguments in GRAPE-5's other order (masses first).
///
/// # Safety
/// `mj` holds `nj` doubles and `xj` `nj` triples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_jp(adr: i32, nj: i32, mj: *const f64, xj: *const [f64; 3]) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_set_jp_impl(adr, nj, mj, xj) }
}

/// The work of `g5_set_jp`, for both of its spellings.
unsafe fn g5_set_jp_impl(adr: i32, nj: i32, mj: *const f64, xj: *const [f64; 3]) {
    // SAFETY: forwarded.
    unsafe { set_xmj("g5_set_jp", adr, nj, xj, mj) }
}

/// The split force call, first part: `ni` i-positions (at most
/// `g5_get_number_of_pipelines()`), computed by `g5_run`.
///
/// # Safety
/// `xi` holds `ni` triples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_xi(ni: i32, xi: *const [f64; 3]) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_set_xi_impl(ni, xi) }
}

/// The work of `g5_set_xi`, for both of its spellings.
unsafe fn g5_set_xi_impl(ni: i32, xi: *const [f64; 3]) {
    shielded((), || {
        with_board("g5_set_xi", |b| {
            let ni = count(ni, "ni")?;
            if ni > PIPES as usize {
                return Err(format!("ni = {ni} is more than g5_get_number_of_pipelines() = {PIPES}"));
            }
            // SAFETY: the caller passes `ni` triples.
            let x = unsafe { triples(xi, ni, "xi")? };
            if let Some(k) = x.iter().position(|r| !r.iter().all(|c| c.is_finite())) {
                return Err(format!("i-position {k} is not finite"));
            }
            b.xi.clear();
            b.xi.extend_from_slice(x);
            b.pending = true;
            Ok(())
        })
    })
}

/// The split force call, second part: computes on the positions of `g5_set_xi`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_run() {
    g5_run_impl()
}

/// The work of `g5_run`, for both of its spellings.
fn g5_run_impl() {
    shielded((), || with_board("g5_run", Board::run))
}

/// The split force call, last part: forces `a` and potentials `p` on the `ni` positions
/// of `g5_set_xi` (computed now if `g5_run` was not called).
///
/// # Safety
/// `a` holds `ni` triples, `p` `ni` doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_get_force(ni: i32, a: *mut [f64; 3], p: *mut f64) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_get_force_impl(ni, a, p) }
}

/// The work of `g5_get_force`, for both of its spellings.
unsafe fn g5_get_force_impl(ni: i32, a: *mut [f64; 3], p: *mut f64) {
    shielded((), || {
        with_board("g5_get_force", |b| {
            b.run()?;
            let ni = count(ni, "ni")?;
            if ni != b.xi.len() || b.results.len() != ni {
                return Err(format!("ni = {ni}, but g5_set_xi gave {} positions", b.xi.len()));
            }
            // SAFETY: the caller passes `ni` of each.
            let (a, p) = unsafe { (values_mut(a, ni, "a")?, values_mut(p, ni, "p")?) };
            for (k, f) in b.results.iter().enumerate() {
                a[k] = f.acceleration();
                p[k] = f.phi;
            }
            Ok(())
        })
    })
}

/// Accepted for compatibility: the board's fixed-point range has no meaning here.
#[unsafe(no_mangle)]
pub extern "C" fn g5_set_range(xmin: f64, xmax: f64, mmin: f64) {
    g5_set_range_impl(xmin, xmax, mmin)
}

/// The work of `g5_set_range`, for both of its spellings.
fn g5_set_range_impl(xmin: f64, xmax: f64, mmin: f64) {
    let _ = (xmin, xmax, mmin);
}

/// Stores `nj` j-particles (positions `xj`, masses `mj`) at addresses `adr..adr+nj`.
///
/// # Safety
/// `xj` holds `nj` triples and `mj` `nj` doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_xmj(adr: i32, nj: i32, xj: *const [f64; 3], mj: *const f64) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_set_xmj_impl(adr, nj, xj, mj) }
}

/// The work of `g5_set_xmj`, for both of its spellings.
unsafe fn g5_set_xmj_impl(adr: i32, nj: i32, xj: *const [f64; 3], mj: *const f64) {
    // SAFETY: forwarded.
    unsafe { set_xmj("g5_set_xmj", adr, nj, xj, mj) }
}

/// `g5_set_xmj` and `g5_set_jp`, reporting as `what`.
///
/// # Safety
/// `xj` holds `nj` triples and `mj` `nj` doubles.
unsafe fn set_xmj(what: &str, adr: i32, nj: i32, xj: *const [f64; 3], mj: *const f64) {
    shielded((), || {
        with_board(what, |b| {
            let (adr, nj) = (count(adr, "adr")?, count(nj, "nj")?);
            // SAFETY: the caller passes `nj` of each.
            let (x, m) = unsafe { (triples(xj, nj, "xj")?, values(mj, nj, "mj")?) };
            if let Some(k) = (0..nj).find(|&k| !(x[k].iter().all(|c| c.is_finite()) && m[k].is_finite() && m[k] >= 0.0))
            {
                return Err(format!("j-particle {k} has a NaN, infinite or negative value"));
            }
            super::fits(what, adr, nj, b.engine.j_capacity())?;
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
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_calculate_force_on_x(x: *const [f64; 3], a: *mut [f64; 3], p: *mut f64, ni: i32) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g5_calculate_force_on_x_impl(x, a, p, ni) }
}

/// The work of `g5_calculate_force_on_x`, for both of its spellings.
unsafe fn g5_calculate_force_on_x_impl(x: *const [f64; 3], a: *mut [f64; 3], p: *mut f64, ni: i32) {
    shielded((), || {
        with_board("g5_calculate_force_on_x", |b| {
            let ni = count(ni, "ni")?;
            // SAFETY: the caller passes `ni` of each.
            let (x, a, p) = unsafe { (triples(x, ni, "x")?, values_mut(a, ni, "a")?, values_mut(p, ni, "p")?) };
            let mut out = Vec::new();
            b.forces(x, &mut out)?;
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
#[unsafe(no_mangle)]
pub extern "C" fn g5_open_() {
    g5_open_impl()
}

/// Fortran `g5_close`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_close_() {
    g5_close_impl()
}

/// Fortran `g5_get_number_of_pipelines`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_number_of_pipelines_() -> i32 {
    g5_get_number_of_pipelines_impl()
}

/// Fortran `g5_set_n`.
///
/// # Safety
/// `n` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_n_(n: *const i32) {
    // SAFETY: Fortran passes a valid reference.
    g5_set_n_impl(unsafe { *n })
}

/// Fortran `g5_set_eps_to_all`.
///
/// # Safety
/// `eps` points to a double.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_eps_to_all_(eps: *const f64) {
    // SAFETY: Fortran passes a valid reference.
    g5_set_eps_to_all_impl(unsafe { *eps })
}

/// Fortran `g5_set_range`.
///
/// # Safety
/// Each points to a double.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_range_(xmin: *const f64, xmax: *const f64, mmin: *const f64) {
    let _ = (xmin, xmax, mmin);
}

/// Fortran `g5_set_xmj`.
///
/// # Safety
/// As `g5_set_xmj`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_xmj_(adr: *const i32, nj: *const i32, xj: *const [f64; 3], mj: *const f64) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_set_xmj_impl(*adr, *nj, xj, mj) }
}

/// Fortran `g5_calculate_force_on_x`.
///
/// # Safety
/// As `g5_calculate_force_on_x`, `ni` by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_calculate_force_on_x_(x: *const [f64; 3], a: *mut [f64; 3], p: *mut f64, ni: *const i32) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_calculate_force_on_x_impl(x, a, p, *ni) }
}

/// Fortran `g5_set_eps2_to_all`.
///
/// # Safety
/// `eps2` points to a double.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_eps2_to_all_(eps2: *const f64) {
    // SAFETY: Fortran passes a valid reference.
    g5_set_eps2_to_all_impl(unsafe { *eps2 })
}

/// Fortran `g5_open_special`.
///
/// # Safety
/// `ndev` points to an int; `list` holds `*ndev` ints where it is positive.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_open_special_(ndev: *const i32, list: *const i32) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_open_special_impl(*ndev, list) }
}

/// Fortran `g5_get_jmemsize`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_jmemsize_() -> i32 {
    g5_get_jmemsize_impl()
}

/// Fortran `g5_get_number_of_real_pipelines`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_number_of_real_pipelines_() -> i32 {
    g5_get_number_of_real_pipelines_impl()
}

/// Fortran `g5_get_pcibus_freq`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_get_pcibus_freq_() -> i32 {
    g5_get_pcibus_freq_impl()
}

/// Fortran `g5_set_jp`.
///
/// # Safety
/// As `g5_set_jp`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_jp_(adr: *const i32, nj: *const i32, mj: *const f64, xj: *const [f64; 3]) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_set_jp_impl(*adr, *nj, mj, xj) }
}

/// Fortran `g5_set_xi`.
///
/// # Safety
/// As `g5_set_xi`, `ni` by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_set_xi_(ni: *const i32, xi: *const [f64; 3]) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_set_xi_impl(*ni, xi) }
}

/// Fortran `g5_run`.
#[unsafe(no_mangle)]
pub extern "C" fn g5_run_() {
    g5_run_impl()
}

/// Fortran `g5_get_force`.
///
/// # Safety
/// As `g5_get_force`, `ni` by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g5_get_force_(ni: *const i32, a: *mut [f64; 3], p: *mut f64) {
    // SAFETY: Fortran passes valid references.
    unsafe { g5_get_force_impl(*ni, a, p) }
}
