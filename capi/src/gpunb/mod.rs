//! NBODY6++'s regular-force library ("gpunb"): the unsoftened regular force, its jerk,
//! the potential and the neighbour lists of blocks of i-particles against every
//! j-particle, with the neighbours left out of the force, as NBODY6++GPU and NBODY6/GPU
//! call it from Fortran (`gpunb_open_`, `gpunb_send_`, `gpunb_regf_`, `gpupot_`).
//!
//! The same Fortran names carry different signatures in different codes, so this module
//! exports one implementation under C names of its own (`nbody_gpunb_*`, scalars by
//! value, a status returned), and a tiny C file per code (`capi/gpunb/*.c`, built into
//! `libnbody_gpunb_<code>.a` by `scripts/build-gpunb.sh`) defines that code's Fortran
//! names over them. `include/gpunb.h` declares both; docs/embedding.md says which
//! archive each code takes.
//!
//! The rules, read from upstream's kernels (gpunb.velocity.cu, gpunb.gpu.cu):
//! - j is a neighbour of i when `min(|dx|², |dx + dtr_i dv|²) < h2_i` (with `dx`, `dv`
//!   the relative position and velocity; without `dtr` the first term alone), or
//!   `< m_j h2_i` where the code asks for the mass-scaled sphere (`m_flag`). The particle
//!   itself is its own neighbour (r² = 0) whenever its sphere is not empty.
//! - Neighbours are left out of the sums: `acc = Σ m dx/r³`, `jrk = Σ m (dv − 3 (dx·dv)
//!   dx/r²)/r³` and `pot = +Σ m/r` over the others. A coincident particle outside an
//!   empty sphere (h2 = 0) is left out too, where upstream would add an infinity.
//! - `list[i*lmax]` is the count, then the j indices (from 0, in the order sent,
//!   increasing). A count above `nnbmax` (or above the `lmax − 1` slots) is an overflow:
//!   the count is written as `−count` (NBODY6++) or `−1` (NBODY6), and the code shrinks
//!   the sphere and calls again. Upstream also overflows when one of its 28 j-blocks
//!   holds more than 256 neighbours, an artefact of its kernel that a list here does
//!   not have: a list is complete up to `nnbmax`.
//!
//! How: the backend `NBODY_GPUNB_EXECUTOR` names (the registry's strings, a GPU when
//! there is one and it is unset, else the CPU) computes every target's full field and
//! jerk. On a GPU (f64 or mixed) the j-particles stay on the device between `send` and
//! the calls (`JMemory`), and the same pass lists each target's candidates (those within
//! its sphere's radius now or looked ahead by its `dtr`, with a small margin over the
//! roundings) and leaves them out of its sums (`JSearch::Lists` with `ahead` and
//! `exclude`), marking those within the radius by the same margin as surely
//! neighbours (`inside`); the rules are applied to the other candidates in f64 and the
//! terms of those that are no neighbours put back. Elsewhere, beside the executor's call on the
//! host's threads, the candidates come from cells (`grid`): those within the sphere's
//! radius now, from cells of the positions, and those within it at the look-ahead, from
//! cells of the positions looked ahead by its `dtr` (`x + dtr v`, one set of cells per
//! step, kept across sends while the particles stay within a quarter cell); the rules are
//! applied to the candidates in f64 and the neighbours' terms taken back out of the sums
//! in f64. Precision: f64 by default, mixed
//! with a mixed backend (`mixed`, `cuda-mixed`), f32 with `NBODY_GPUNB_PRECISION=f32`
//! (absolute positions in f32, as upstream; the neighbours' terms are then removed as f32
//! computes them, and what is left of their rounding is about 1e-7 of their size).
//!
//! Errors (a count above a limit, nj above nbmax, a NaN) are reported on stderr as
//! `nbody gpunb: ...`, kept for `nbody_last_error`, and returned as a nonzero status;
//! the outputs are then untouched.

mod grid;

use crate::grape::{Engine, count, shielded, triples, values, values_mut};
use grid::Grid;
use nbody_backends::{JCall, JMemory, JSearch};
use nbody_core::jmemory::PackedLists;
use nbody_core::{Bodies, Field, Jerk, Params, Particle, Real, Velocity, kernel};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// `flags` bit of [`nbody_gpunb_regf`]: the sphere scales with the source's mass
/// (`min(r², r²_predicted) < m_j h2_i`), NBODY6++GPU's `m_flag` and NBODY6's rule.
pub const NBODY_GPUNB_MASS_SCALED: i32 = 1;
/// `flags` bit of [`nbody_gpunb_regf`]: an overflowed list's count is written as −1
/// (NBODY6) instead of −count (NBODY6++).
pub const NBODY_GPUNB_OVERFLOW_MINUS_ONE: i32 = 2;

/// The library's state: the engine (opened at the first call that needs it, dropped at
/// close) and what `open` and `send` set.
#[derive(Default)]
struct State {
    engine: Option<Engine>,
    open: Option<Open>,
    profile: Profile,
}

/// Between `open` and `close`.
struct Open {
    nbmax: usize,
    /// The last `send`.
    sources: Sources,
    /// The j-particles on the GPU, where the engine has one.
    device: Option<JMemory>,
    /// Whether f32 was asked for (`NBODY_GPUNB_PRECISION`).
    f32: bool,
    /// The j-particles in cells, at their positions (key 0) and at their positions
    /// looked ahead by each regular step `dtr` asked for (`x + dtr v`, key: the step's
    /// bits), built at the first call that needs them and kept across sends while the
    /// particles stay near where they were.
    cells: HashMap<u64, Cells>,
}

/// A grid and the points it was built from (the positions looked ahead by `step`);
/// `drift` is the farthest any point but the `movers` has moved since, added to every
/// search's reach; the movers (gone farther, a fast escaper) are looked at by every
/// search instead of in their cells.
struct Cells {
    step: f64,
    /// The call that last used them (the least recently used go first).
    used: u64,
    grid: Grid,
    at: Vec<[f64; 3]>,
    drift: f64,
    movers: Vec<u32>,
    moved: Vec<bool>,
}

/// Look-ahead steps whose cells are kept at once (the least recently used go first).
const STEPS_KEPT: usize = 8;

/// How far a look-ahead of `step` can bring a j-particle towards i-particle `v`.
fn widening(src: &Sources, step: f64, v: [f64; 3]) -> f64 {
    step.abs() * (norm(sub(v, src.centre)) + src.speed)
}

impl Cells {
    fn new(src: &Sources, step: f64, size: f64) -> Cells {
        let at = src.ahead(step);
        Cells {
            step,
            used: 0,
            grid: Grid::new(&at, size),
            moved: vec![false; at.len()],
            at,
            drift: 0.0,
            movers: vec![],
        }
    }

    /// After a send: whether the cells still serve (all but a few points within a
    /// quarter cell of where they were, and as many), with the drift and the movers.
    fn follow(&mut self, src: &Sources) -> bool {
        let now = src.ahead(self.step);
        if now.len() != self.at.len() {
            return false;
        }
        let limit = 0.25 * self.grid.size();
        let (mut drift, mut movers) = (0.0f64, Vec::new());
        for (j, (p, q)) in now.iter().zip(&self.at).enumerate() {
            let d = norm(sub(*p, *q));
            if d > limit {
                movers.push(j as u32);
            } else {
                drift = drift.max(d);
            }
        }
        if movers.len() > MOVERS.max(now.len() / 512) {
            return false;
        }
        self.moved.fill(false);
        movers.iter().for_each(|&j| self.moved[j as usize] = true);
        (self.drift, self.movers) = (drift, movers);
        true
    }

    /// Every point within `r` of `x` now (and others), each once.
    fn around(&self, x: [f64; 3], r: f64, mut f: impl FnMut(u32)) {
        self.grid.around(x, (r + self.drift) * (1.0 + 1e-9), |j| {
            if !self.moved[j as usize] {
                f(j)
            }
        });
        self.movers.iter().for_each(|&j| f(j));
    }
}

impl Sources {
    /// The positions looked ahead by `step`: `x + step v`.
    fn ahead(&self, step: f64) -> Vec<[f64; 3]> {
        self.pos.iter().zip(&self.vel).map(|(p, v)| [p.x + step * v.vx, p.y + step * v.vy, p.z + step * v.vz]).collect()
    }
}

/// The j-particles as sent, the largest mass (the mass-scaled sphere's reach) and the
/// velocities' spread (how far a look-ahead can carry a pair together).
#[derive(Default)]
struct Sources {
    pos: Vec<Particle<f64>>,
    vel: Vec<Velocity<f64>>,
    /// The mean velocity, and the largest speed about it.
    centre: [f64; 3],
    speed: f64,
    /// The largest mass.
    mmax: f64,
}

/// What `nbody_gpunb_profile` prints: calls and seconds since the last print.
#[derive(Default)]
struct Profile {
    sends: u64,
    calls: u64,
    targets: u64,
    interactions: f64,
    send_s: f64,
    /// Whole calls; of which the full sums and, beside them on the host, the lists.
    force_s: f64,
    sums_s: f64,
    lists_s: f64,
    grids: u64,
    /// Calls since the library opened (not reset by a print).
    call: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<R>(f: impl FnOnce(&mut State) -> Result<R, String>) -> Result<R, String> {
    let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(State::default))
}

impl State {
    fn engine(&mut self) -> Result<&mut Engine, String> {
        if self.engine.is_none() {
            self.engine = Some(Engine::named_by("NBODY_GPUNB_EXECUTOR", "NBODY_GPUNB_THREADS")?);
        }
        Ok(self.engine.as_mut().expect("opened just above"))
    }
}

/// Reports a failure: one line on stderr, kept for `nbody_last_error`; returns -1.
fn report(message: &str) -> i32 {
    eprintln!("nbody gpunb: {message}");
    crate::set_last_error(message);
    -1
}

fn status(r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(m) => report(&m),
    }
}

fn precision_is_f32() -> Result<bool, String> {
    match std::env::var("NBODY_GPUNB_PRECISION").as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("f64") => Ok(false),
        Ok("f32") => Ok(true),
        Ok(other) => Err(format!(
            "NBODY_GPUNB_PRECISION={other}: not a precision (f64, the default, or f32; mixed is a backend: NBODY_GPUNB_EXECUTOR=cuda-mixed or mixed)"
        )),
    }
}

/// Opens the backend (`NBODY_GPUNB_EXECUTOR`) if it is not yet, and prints which one
/// to stderr, as upstream prints its device. Returns 0, or -1 on failure.
///
/// ```
/// unsafe { std::env::set_var("NBODY_GPUNB_EXECUTOR", "cpu:1") }; // before any thread reads it
/// assert_eq!(nbody_c::gpunb::nbody_gpunb_devinit(0), 0);
/// ```
#[unsafe(no_mangle)]
pub extern "C" fn nbody_gpunb_devinit(rank: i32) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            if s.engine.is_none() {
                let engine = s.engine()?;
                let what = engine.opened().device_line().unwrap_or_else(|| engine.opened().backend().to_string());
                eprintln!("nbody gpunb: rank {rank} on {what}");
            }
            Ok(())
        }))
    })
}

/// Opens the library for at most `nbmax` j-particles. Opening it when it is open is
/// said on stderr and changes nothing, as upstream does.
///
/// ```
/// use nbody_c::gpunb::*;
/// unsafe { std::env::set_var("NBODY_GPUNB_EXECUTOR", "cpu:1") }; // before any thread reads it
/// assert_eq!(nbody_gpunb_open(1000), 0);
/// assert_eq!(nbody_gpunb_close(), 0);
/// ```
#[unsafe(no_mangle)]
pub extern "C" fn nbody_gpunb_open(nbmax: i32) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            let nbmax = count(nbmax, "nbmax")?;
            if s.open.is_some() {
                // As upstream: said, and nothing changes.
                eprintln!("nbody gpunb: gpunb_open: it is already open");
                return Ok(());
            }
            let f32 = precision_is_f32()?;
            let engine = s.engine()?;
            if f32 {
                engine.opened().get::<f32>().map_err(|e| format!("NBODY_GPUNB_PRECISION=f32: {e}"))?;
            }
            // The device keeps the j-particles in f64 records; f32 sends them each call.
            let device = if f32 { None } else { JMemory::on(engine.executor()) };
            s.open = Some(Open { nbmax, sources: Sources::default(), device, f32, cells: HashMap::new() });
            Ok(())
        }))
    })
}

/// Closes the library and its backend (the next `open` reads `NBODY_GPUNB_EXECUTOR`
/// again); closing it when it is not open is said on stderr, as upstream does.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_gpunb_close() -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            if s.open.take().is_none() {
                eprintln!("nbody gpunb: gpunb_close: it is not open");
            }
            // The next open reads NBODY_GPUNB_EXECUTOR again.
            s.engine = None;
            Ok(())
        }))
    })
}

/// Sends the j-particles: `nj` masses, positions and velocities (at most the `nbmax` of
/// `open`). Every later `regf` sums over these.
///
/// # Safety
/// `m` holds `nj` values, `x` and `v` `nj` triples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_gpunb_send(nj: i32, m: *const f64, x: *const [f64; 3], v: *const [f64; 3]) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            let start = Instant::now();
            let open = s.open.as_mut().ok_or("gpunb_send: the library is not open (gpunb_open first)")?;
            let n = count(nj, "nj")?;
            if n > open.nbmax {
                return Err(format!("gpunb_send: nj = {n} is above the nbmax = {} of gpunb_open", open.nbmax));
            }
            // SAFETY: the caller's contract.
            let (m, x, v) = unsafe { (values(m, n, "mj")?, triples(x, n, "xj")?, triples(v, n, "vj")?) };
            for j in 0..n {
                if !(m[j].is_finite() && m[j] >= 0.0) {
                    return Err(format!("gpunb_send: mj[{j}] = {} is not a finite mass >= 0", m[j]));
                }
                if let Some(bad) = x[j].iter().chain(&v[j]).find(|c| !c.is_finite()) {
                    return Err(format!("gpunb_send: particle {j} has a non-finite coordinate ({bad})"));
                }
            }
            let src = &mut open.sources;
            // Into the last send's memory: fresh arrays would cost a page fault every
            // 4 KiB of every send (NBODY6++ sends every regular block).
            src.pos.clear();
            src.pos.extend((0..n).map(|j| Particle::new(x[j][0], x[j][1], x[j][2], m[j])));
            src.vel.clear();
            src.vel.extend(v.iter().map(|v| Velocity::new(v[0], v[1], v[2])));
            let mean = |k: usize| if n == 0 { 0.0 } else { v.iter().map(|v| v[k]).sum::<f64>() / n as f64 };
            src.centre = [mean(0), mean(1), mean(2)];
            src.speed = v.iter().map(|v| norm(sub(*v, src.centre))).fold(0.0, f64::max);
            src.mmax = m.iter().copied().fold(0.0, f64::max);
            // The cells stay while all but a few particles are within a quarter cell of
            // where they were (NBODY6++ sends each regular block, when few have moved
            // far); a new count (a KS pair made or ended renumbers the particles) or many
            // movers build them again.
            let src = &open.sources;
            open.cells.retain(|_, c| c.follow(src));
            if let Some(device) = open.device.as_mut() {
                let exec = s.engine.as_mut().ok_or("gpunb_send: no backend")?.executor();
                device.replace(exec, &src.pos, &src.vel).map_err(|e| format!("gpunb_send: {e}"))?;
            }
            s.profile.sends += 1;
            s.profile.send_s += start.elapsed().as_secs_f64();
            Ok(())
        }))
    })
}

/// The rules of one code's `gpunb_regf_` (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Rules {
    nimax: usize,
    mass_scaled: bool,
    overflow_minus_one: bool,
}

/// One call's inputs, checked, and its rules.
struct Block<'a> {
    rules: Rules,
    /// The most neighbours a list holds.
    limit: usize,
    h2: &'a [f64],
    dtr: Option<&'a [f64]>,
    x: &'a [[f64; 3]],
    v: &'a [[f64; 3]],
}

/// What one call computes: per i-particle the sums and its neighbours (increasing).
struct Regular {
    acc: Vec<[f64; 3]>,
    jerk: Vec<[f64; 3]>,
    pot: Vec<f64>,
    lists: Vec<Vec<u32>>,
}

/// The regular force on `ni` i-particles (at most `nimax`; `flags` of
/// [`NBODY_GPUNB_MASS_SCALED`] and [`NBODY_GPUNB_OVERFLOW_MINUS_ONE`]): their squared
/// neighbour radii `h2`, regular steps `dtr` (null: no velocity criterion), positions
/// and velocities in; acceleration, jerk, potential (`pot` may be null) and the lists
/// (`lmax` ints per i-particle, at most `nnbmax` neighbours) out. See the module docs
/// for the rules. Returns 0, or -1 with the outputs untouched.
///
/// ```
/// use nbody_c::gpunb::*;
/// unsafe { std::env::set_var("NBODY_GPUNB_EXECUTOR", "cpu:1") }; // before any thread reads it
/// let (m, x, v) = ([1.0, 1.0], [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], [[0.0; 3]; 2]);
/// assert_eq!(nbody_gpunb_open(2), 0);
/// assert_eq!(unsafe { nbody_gpunb_send(2, m.as_ptr(), x.as_ptr(), v.as_ptr()) }, 0);
/// let (h2, dtr) = ([0.25], [0.0]);
/// let (mut acc, mut jrk, mut pot, mut list) = ([[0.0; 3]], [[0.0; 3]], [0.0], [0; 4]);
/// let status = unsafe {
///     nbody_gpunb_regf(1024, 0, 1, h2.as_ptr(), dtr.as_ptr(), x.as_ptr(), v.as_ptr(),
///         acc.as_mut_ptr(), jrk.as_mut_ptr(), pot.as_mut_ptr(), 4, 3, list.as_mut_ptr())
/// };
/// assert_eq!(status, 0);
/// assert_eq!((acc[0][0], pot[0]), (0.25, 0.5)); // the other one, 2 away
/// assert_eq!(&list[..2], &[1, 0]); // itself, its only neighbour
/// assert_eq!(nbody_gpunb_close(), 0);
/// ```
///
/// # Safety
/// `h2` (and `dtr` unless null) hold `ni` values, `xi`, `vi`, `acc` and `jrk` `ni`
/// triples, `pot` (unless null) `ni` values, `list` `ni * lmax` ints; the outputs are
/// writable and not aliased by the inputs.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nbody_gpunb_regf(
    nimax: i32,
    flags: i32,
    ni: i32,
    h2: *const f64,
    dtr: *const f64,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    acc: *mut [f64; 3],
    jrk: *mut [f64; 3],
    pot: *mut f64,
    lmax: i32,
    nnbmax: i32,
    list: *mut i32,
) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            let start = Instant::now();
            let rules = Rules {
                nimax: count(nimax, "nimax")?,
                mass_scaled: flags & NBODY_GPUNB_MASS_SCALED != 0,
                overflow_minus_one: flags & NBODY_GPUNB_OVERFLOW_MINUS_ONE != 0,
            };
            let n = count(ni, "ni")?;
            if n == 0 || n > rules.nimax {
                return Err(format!("gpunb_regf: ni = {n}, where a call takes 1 to {} i-particles", rules.nimax));
            }
            let lmax = count(lmax, "lmax")?;
            if lmax == 0 {
                return Err("gpunb_regf: lmax = 0 leaves no room for a list's count".into());
            }
            let nnbmax = count(nnbmax, "nnbmax")?;
            // SAFETY: the caller's contract.
            let block = unsafe {
                Block {
                    rules,
                    limit: nnbmax.min(lmax - 1),
                    h2: values(h2, n, "h2")?,
                    dtr: if dtr.is_null() { None } else { Some(values(dtr, n, "dtr")?) },
                    x: triples(xi, n, "xi")?,
                    v: triples(vi, n, "vi")?,
                }
            };
            block.check()?;
            // SAFETY: the caller's contract (writable, unaliased).
            let (acc, jrk, list) = unsafe {
                (
                    values_mut(acc, n, "acc")?,
                    values_mut(jrk, n, "jrk")?,
                    values_mut(list, n.checked_mul(lmax).ok_or("ni * lmax overflows")?, "list")?,
                )
            };
            // SAFETY: as above.
            let mut pot = if pot.is_null() { None } else { Some(unsafe { values_mut(pot, n, "pot")? }) };
            let State { engine, open, profile } = s;
            let open = open.as_mut().ok_or("gpunb_regf: the library is not open (gpunb_open first)")?;
            let engine = engine.as_mut().ok_or("gpunb_regf: no backend")?;
            let r = regular(engine, open, &block, profile)?;
            for i in 0..n {
                acc[i] = r.acc[i];
                jrk[i] = r.jerk[i];
                if let Some(p) = pot.as_deref_mut() {
                    p[i] = r.pot[i];
                }
                let slots = &mut list[i * lmax..(i + 1) * lmax];
                let found = &r.lists[i];
                if found.len() > nnbmax.min(lmax - 1) {
                    slots[0] = if rules.overflow_minus_one { -1 } else { -(found.len() as i32) };
                } else {
                    slots[0] = found.len() as i32;
                    for (slot, &j) in slots[1..].iter_mut().zip(found) {
                        *slot = j as i32;
                    }
                }
            }
            profile.calls += 1;
            profile.targets += n as u64;
            profile.interactions += (n * open.sources.pos.len()) as f64;
            profile.force_s += start.elapsed().as_secs_f64();
            Ok(())
        }))
    })
}

impl Block<'_> {
    fn check(&self) -> Result<(), String> {
        for i in 0..self.h2.len() {
            if !(self.h2[i].is_finite() && self.h2[i] >= 0.0) {
                return Err(format!("gpunb_regf: h2[{i}] = {} is not a finite value >= 0", self.h2[i]));
            }
            if let Some(t) = self.dtr.map(|d| d[i]).filter(|t| !t.is_finite()) {
                return Err(format!("gpunb_regf: dtr[{i}] = {t} is not finite"));
            }
            if let Some(bad) = self.x[i].iter().chain(&self.v[i]).find(|c| !c.is_finite()) {
                return Err(format!("gpunb_regf: i-particle {i} has a non-finite coordinate ({bad})"));
            }
        }
        Ok(())
    }
}

/// Particles that may leave their cells before the cells are built again (more than
/// this, or one in 512, builds them again).
const MOVERS: usize = 64;

/// What the rules make of one i-particle: its neighbours (increasing) and the sum of
/// their terms, to be taken out of the full sums.
struct Excluded {
    list: Vec<u32>,
    acc: [f64; 3],
    jerk: [f64; 3],
    pot: f64,
}

/// The sums and lists of one call.
fn regular(engine: &mut Engine, open: &mut Open, b: &Block<'_>, profile: &mut Profile) -> Result<Regular, String> {
    let n = b.h2.len();
    let Open { sources: src, device, f32, cells, .. } = open;
    if let Some(d) = device.as_mut() {
        return regular_on_device(engine, d, src, b, profile);
    }
    let f32 = *f32;
    // Cells about the size of this call's spheres (NBODY6++ keeps some hundred
    // neighbours in each), at the positions and at each look-ahead step asked for.
    let mut size: Vec<f64> = (0..n).map(|i| size_of(src, b, i)).collect();
    size.sort_unstable_by(f64::total_cmp);
    let size = size[size.len() / 2];
    // Cells far from this call's size (the spheres shrink as the cluster settles) cost
    // either many cells or many particles a search: built again.
    if cells.values().any(|c| !(0.5..=2.0).contains(&(c.grid.size() / size))) {
        cells.clear();
    }
    // A step gets cells of its own where the look-ahead can carry a pair farther than
    // the sphere's radius; below that, the position cells searched a little wider serve.
    let mut steps = vec![0.0];
    if let Some(d) = b.dtr {
        steps.extend((0..n).filter(|&i| widening(src, d[i], b.v[i]) > size_of(src, b, i)).map(|i| d[i]));
    }
    steps.sort_unstable_by(f64::total_cmp);
    steps.dedup();
    profile.call += 1;
    for &step in &steps {
        let c = cells.entry(step.to_bits()).or_insert_with(|| {
            profile.grids += 1;
            Cells::new(src, step, size)
        });
        c.used = profile.call;
    }
    while cells.len() > STEPS_KEPT + 1 {
        let oldest = cells.iter().filter(|(_, c)| c.step != 0.0).min_by_key(|(_, c)| c.used).map(|(&k, _)| k);
        cells.remove(&oldest.expect("more cells than the position cells"));
    }
    let cells = &*cells;
    let src = &*src;
    let mut r = Regular { acc: vec![[0.0; 3]; n], jerk: vec![[0.0; 3]; n], pot: vec![0.0; n], lists: vec![] };
    // The lists on the host's threads while the full sums run beside them.
    let (excluded, sums) = std::thread::scope(|scope| {
        let lists = scope.spawn(|| {
            let start = Instant::now();
            let e = on_threads(n, |i| neighbours_of(src, cells, b, i, f32));
            (e, start.elapsed().as_secs_f64())
        });
        let start = Instant::now();
        let sums = if f32 { full_sums_f32(engine, src, b, &mut r) } else { full_sums(engine, src, b, &mut r) };
        (lists.join(), sums.map(|()| start.elapsed().as_secs_f64()))
    });
    let (excluded, lists_s) = excluded.map_err(|_| "gpunb_regf: the neighbour search panicked".to_string())?;
    profile.sums_s += sums?;
    profile.lists_s += lists_s;
    take_out(&mut r, excluded);
    Ok(r)
}

/// Relative margin of the device's candidate radii over the spheres: far above the
/// roundings of its distances (f64, or a mixed executor's float separations), so every
/// neighbour by upstream's rules is a candidate; the rules themselves are applied in f64.
const CANDIDATE_MARGIN: f64 = 1e-5;

/// [`regular`] on a GPU: in one pass each target's candidates (the sources within its
/// sphere's radius, now or looked ahead by its `dtr`, with [`CANDIDATE_MARGIN`]) and the
/// sums over every other source (the candidates left out exactly, as massless); then on
/// the calling thread the rules on the candidates the device did not mark as surely
/// inside, and the terms of those that are no neighbours (the margin's few; with the
/// mass-scaled sphere, which the device searches at the heaviest mass, more) put back. A target with more candidates than its slots
/// (an overflowing list, whose count upstream reports) gets them all from [`long_lists`].
fn regular_on_device(
    engine: &mut Engine,
    device: &mut JMemory,
    src: &Sources,
    b: &Block<'_>,
    profile: &mut Profile,
) -> Result<Regular, String> {
    let n = b.h2.len();
    let mut r = Regular { acc: vec![[0.0; 3]; n], jerk: vec![[0.0; 3]; n], pot: vec![0.0; n], lists: vec![] };
    if src.pos.is_empty() {
        r.lists = vec![vec![]; n];
        return Ok(r);
    }
    let start = Instant::now();
    // How far each target's look-ahead can carry a pair (the margins' second part).
    let looks: Vec<f64> = (0..n).map(|i| widening(src, b.dtr.map_or(0.0, |d| d[i]), b.v[i])).collect();
    let radius2: Vec<f64> = (0..n)
        .map(|i| {
            let reach = size_of(src, b, i) * (1.0 + CANDIDATE_MARGIN) + CANDIDATE_MARGIN * looks[i];
            reach * reach
        })
        .collect();
    // Within the sphere's radius by the same margin, the device marks a candidate as
    // surely a neighbour (its entry carries PackedLists::INSIDE), and the host takes it
    // as it is: only the few candidates near the sphere's edge are looked at again. Not
    // with the mass-scaled sphere, whose radius is the source's.
    let inside: Option<Vec<f64>> = (!b.rules.mass_scaled).then(|| {
        (0..n)
            .map(|i| {
                let reach = b.h2[i].sqrt() * (1.0 - CANDIDATE_MARGIN) - CANDIDATE_MARGIN * looks[i];
                if reach > 0.0 { reach * reach } else { -1.0 }
            })
            .collect()
    });
    let capacity = b.limit + b.limit / 4 + 16;
    let all: Vec<usize> = (0..n).collect();
    let radii = Radii { candidates: &radius2, inside: inside.as_deref() };
    let ((field, jerk), packed) = device_pass(engine, device, src, b, (&all, radii), capacity, true)?;
    let long = long_lists(engine, device, src, b, radii, &packed)?;
    profile.sums_s += start.elapsed().as_secs_f64();
    let start = Instant::now();
    // On the calling thread: with the device's marks the rules look at the few
    // candidates near the edge only (a millisecond a call at N = 262,144), and threads
    // started beside NBODY6++'s spinning OpenMP threads wait for cores (on an H200 node
    // the same work took 5 ms a call on 16 threads).
    let excluded: Vec<Excluded> = (0..n)
        .map(|i| {
            let list = if packed.overflowed(i) { &long[i][..] } else { packed.list(i) };
            apply_rules(src, b, i, (false, Sums::Candidates), list.iter().copied())
        })
        .collect();
    profile.lists_s += start.elapsed().as_secs_f64();
    for i in 0..n {
        r.acc[i] = field[i].acceleration();
        r.jerk[i] = jerk[i].components();
        r.pot[i] = -field[i].phi;
    }
    take_out(&mut r, excluded);
    Ok(r)
}

/// The most bytes of list slots a pass of [`long_lists`] asks of the device.
const LONG_LIST_BYTES: usize = 256 << 20;

/// The whole candidate lists of the targets that had more candidates than slots (lists
/// that overflow, whose counts upstream reports), from a second pass over them alone
/// with room for every candidate (the device counted them); empty for the others.
fn long_lists(
    engine: &mut Engine,
    device: &mut JMemory,
    src: &Sources,
    b: &Block<'_>,
    radii: Radii<'_>,
    packed: &PackedLists,
) -> Result<Vec<Vec<u32>>, String> {
    let n = b.h2.len();
    let mut long = vec![vec![]; n];
    let over: Vec<usize> = (0..n).filter(|&i| packed.overflowed(i)).collect();
    let Some(room) = over.iter().map(|&i| packed.counts[i] as usize).max() else {
        return Ok(long);
    };
    for part in over.chunks((LONG_LIST_BYTES / (4 * room)).max(1)) {
        let (_, again) = device_pass(engine, device, src, b, (part, radii), room, false)?;
        for (k, &i) in part.iter().enumerate() {
            if again.overflowed(k) {
                return Err("gpunb_regf: the device found more candidates in a second pass than in the first".into());
            }
            long[i] = again.list(k).to_vec();
        }
    }
    Ok(long)
}

/// Each i-particle's squared radii: of its candidates, and within which a candidate is
/// surely a neighbour (`None`: none marked).
#[derive(Clone, Copy)]
struct Radii<'a> {
    candidates: &'a [f64],
    inside: Option<&'a [f64]>,
}

/// One device pass over the call's i-particles `pick` with their radii (indexed as the
/// call's): their fields, jerks and candidate lists in `capacity` slots each, the
/// candidates left out of the sums with `exclude`.
fn device_pass(
    engine: &mut Engine,
    device: &mut JMemory,
    src: &Sources,
    b: &Block<'_>,
    (pick, radii): (&[usize], Radii<'_>),
    capacity: usize,
    exclude: bool,
) -> Result<(Pass, PackedLists), String> {
    let k = pick.len();
    let (tpos, tvel) = targets_of(b, pick);
    let select = |v: &[f64]| pick.iter().map(|&i| v[i]).collect::<Vec<f64>>();
    let (r2, dt, inside) = (select(radii.candidates), b.dtr.map(select), radii.inside.map(select));
    let own = vec![-1; k];
    let (mut field, mut jerk) = (vec![Field::zero(); k], vec![Jerk::zero(); k]);
    let call = JCall { nj: src.pos.len(), time: 0.0, targets: Bodies { pos: &tpos, vel: &tvel }, own: &own, eps: 0.0 };
    let search = JSearch::Lists { radius2: &r2, capacity, ahead: dt.as_deref(), exclude, inside: inside.as_deref() };
    let packed = device
        .forces(engine.executor(), call, &mut field, &mut jerk, search)
        .map_err(|e| format!("gpunb_regf: {e}"))?
        .ok_or("gpunb_regf: the device returned no lists")?;
    Ok(((field, jerk), packed))
}

/// A device pass's fields and jerks.
type Pass = (Vec<Field<f64>>, Vec<Jerk<f64>>);

/// Takes the neighbours' terms out of the full sums in `r` and keeps the lists.
fn take_out(r: &mut Regular, excluded: Vec<Excluded>) {
    for (i, e) in excluded.into_iter().enumerate() {
        for k in 0..3 {
            r.acc[i][k] -= e.acc[k];
            r.jerk[i][k] -= e.jerk[k];
        }
        r.pot[i] -= e.pot;
        r.lists.push(e.list);
    }
}

/// `f(i)` for `i` in `0..n` on the library's threads (`NBODY_GPUNB_THREADS`, else every
/// core), in order.
fn on_threads<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let threads = std::env::var("NBODY_GPUNB_THREADS")
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or_else(nbody_backends::available_threads)
        .clamp(1, n.div_ceil(16).max(1));
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let per = n.div_ceil(threads);
    std::thread::scope(|scope| {
        let f = &f;
        let parts: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || (t * per..((t + 1) * per).min(n)).map(f).collect::<Vec<R>>()))
            .collect();
        parts.into_iter().flat_map(|h| h.join().expect("a neighbour thread panicked")).collect()
    })
}

/// The radius of i-particle `i`'s sphere (with the mass-scaled sphere, the heaviest
/// particle's).
fn size_of(src: &Sources, b: &Block<'_>, i: usize) -> f64 {
    (b.h2[i] * if b.rules.mass_scaled { src.mmax } else { 1.0 }).sqrt()
}

/// The rules (see the module docs) on the j-particles that can be neighbours of
/// i-particle `i`: those within the sphere's radius of it now, from the cells of the
/// positions, and those within it at the look-ahead, from the cells of the positions
/// looked ahead by its `dtr` (or, for a short look-ahead, from the position cells
/// searched as much wider as the look-ahead can carry a pair: `dtr (|v_i − c| + max_j
/// |v_j − c|)`, c the mean velocity).
fn neighbours_of(src: &Sources, cells: &HashMap<u64, Cells>, b: &Block<'_>, i: usize, f32: bool) -> Excluded {
    let reach = size_of(src, b, i);
    let step = b.dtr.map_or(0.0, |d| d[i]);
    let mut candidates = Vec::new();
    match cells.get(&step.to_bits()).filter(|_| step != 0.0) {
        Some(ahead) => {
            cells[&0f64.to_bits()].around(b.x[i], reach, |j| candidates.push(j));
            let y = [b.x[i][0] + step * b.v[i][0], b.x[i][1] + step * b.v[i][1], b.x[i][2] + step * b.v[i][2]];
            ahead.around(y, reach, |j| candidates.push(j));
            candidates.sort_unstable();
            candidates.dedup();
        }
        None => {
            let wider = reach + widening(src, step, b.v[i]);
            cells[&0f64.to_bits()].around(b.x[i], wider, |j| candidates.push(j));
            candidates.sort_unstable();
        }
    }
    apply_rules(src, b, i, (f32, Sums::Full), candidates.into_iter())
}

/// Whose terms a call's sums hold.
#[derive(Clone, Copy, PartialEq)]
enum Sums {
    /// Every source's (the executor's full sums): the neighbours' are to be taken out.
    Full,
    /// Every source's but the candidates' (the device left them out): those of the
    /// candidates that are no neighbours are to be put back.
    Candidates,
}

/// The rules on i-particle `i`'s `candidates` (increasing): its neighbours, and the sum
/// of the terms to take out of `sums` (negative where terms are put back) as the
/// executor's precision computes them (`f32`). A candidate the device marked
/// [`PackedLists::INSIDE`] is a neighbour without a look.
fn apply_rules(
    src: &Sources,
    b: &Block<'_>,
    i: usize,
    (f32, sums): (bool, Sums),
    candidates: impl Iterator<Item = u32>,
) -> Excluded {
    let mut e = Excluded { list: vec![], acc: [0.0; 3], jerk: [0.0; 3], pot: 0.0 };
    for j in candidates {
        if j & PackedLists::INSIDE != 0 {
            // Surely a neighbour (the device's mark), already out of the sums.
            debug_assert!(sums == Sums::Candidates);
            e.list.push(j & !PackedLists::INSIDE);
            continue;
        }
        let (p, v) = (&src.pos[j as usize], &src.vel[j as usize]);
        let dx = sub([p.x, p.y, p.z], b.x[i]);
        let dv = sub([v.vx, v.vy, v.vz], b.v[i]);
        let r2 = dot(dx, dx);
        let ahead = b.dtr.map_or(r2, |d| {
            let q = [dx[0] + d[i] * dv[0], dx[1] + d[i] * dv[1], dx[2] + d[i] * dv[2]];
            dot(q, q)
        });
        let sphere = if b.rules.mass_scaled { p.m * b.h2[i] } else { b.h2[i] };
        let neighbour = r2.min(ahead) < sphere;
        if neighbour {
            e.list.push(j);
        }
        // A coincident one is in no sum (its term is masked).
        let sign = match (sums, neighbour) {
            (Sums::Full, true) => 1.0,
            (Sums::Candidates, false) => -1.0,
            _ => continue,
        };
        if r2 > 0.0 {
            let (a, jk, phi) = if f32 { pair::<f32>(p, v, b.x[i], b.v[i]) } else { pair::<f64>(p, v, b.x[i], b.v[i]) };
            for k in 0..3 {
                e.acc[k] += sign * a[k];
                e.jerk[k] += sign * jk[k];
            }
            e.pot += sign * phi;
        }
    }
    e
}

/// One source's acceleration, jerk and potential (+m/r) on a target, as the executors'
/// kernel (`kernel::pair_jerk`, unsoftened, coincident pairs masked) computes them in
/// `T`: inputs rounded to `T`, so an f32 executor's term is the one taken back out.
fn pair<T: Real>(p: &Particle<f64>, v: &Velocity<f64>, xi: [f64; 3], vi: [f64; 3]) -> ([f64; 3], [f64; 3], f64) {
    let (mut field, mut jerk) = (Field::<T>::zero(), Jerk::<T>::zero());
    let src = Particle::new(T::from_f64(p.x), T::from_f64(p.y), T::from_f64(p.z), T::from_f64(p.m));
    let vj = Velocity::new(T::from_f64(v.vx), T::from_f64(v.vy), T::from_f64(v.vz));
    let (xi, vi) = (xi.map(T::from_f64), vi.map(T::from_f64));
    kernel::pair_jerk(xi, vi, &src, &vj, T::zero(), true, &mut field, &mut jerk);
    let f64_of = |x: T| Real::to_f64(x);
    (field.acceleration().map(f64_of), jerk.components().map(f64_of), -f64_of(field.phi))
}

/// Full sums over every source (unsoftened; a coincident source left out) into `r`, pot
/// as +Σ m/r, through the executor with the sources sent (the host's path).
fn full_sums(engine: &mut Engine, src: &Sources, b: &Block<'_>, r: &mut Regular) -> Result<(), String> {
    let n = b.h2.len();
    if src.pos.is_empty() {
        return Ok(());
    }
    let (tpos, tvel) = targets_of(b, &(0..n).collect::<Vec<_>>());
    let targets = Bodies { pos: &tpos, vel: &tvel };
    let (mut field, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
    let sources = Bodies { pos: &src.pos, vel: &src.vel };
    engine
        .get()
        .accelerations_jerk(targets, sources, &Params::softened(0.0), &mut field, &mut jerk)
        .map_err(|e| format!("gpunb_regf: {e}"))?;
    for i in 0..n {
        r.acc[i] = field[i].acceleration();
        r.jerk[i] = jerk[i].components();
        r.pot[i] = -field[i].phi;
    }
    Ok(())
}

/// A call's i-particles `pick` as massless targets.
fn targets_of(b: &Block<'_>, pick: &[usize]) -> (Vec<Particle<f64>>, Vec<Velocity<f64>>) {
    (
        pick.iter().map(|&i| Particle::new(b.x[i][0], b.x[i][1], b.x[i][2], 0.0)).collect(),
        pick.iter().map(|&i| Velocity::new(b.v[i][0], b.v[i][1], b.v[i][2])).collect(),
    )
}

/// [`full_sums`] in f32, with the sources sent each call.
fn full_sums_f32(engine: &mut Engine, src: &Sources, b: &Block<'_>, r: &mut Regular) -> Result<(), String> {
    let n = b.h2.len();
    if src.pos.is_empty() {
        return Ok(());
    }
    let p32 = |x: [f64; 3], m: f64| Particle::new(x[0] as f32, x[1] as f32, x[2] as f32, m as f32);
    let v32 = |v: [f64; 3]| Velocity::new(v[0] as f32, v[1] as f32, v[2] as f32);
    let tpos: Vec<Particle<f32>> = b.x.iter().map(|&x| p32(x, 0.0)).collect();
    let tvel: Vec<Velocity<f32>> = b.v.iter().map(|&v| v32(v)).collect();
    let spos: Vec<Particle<f32>> = src.pos.iter().map(|p| p32([p.x, p.y, p.z], p.m)).collect();
    let svel: Vec<Velocity<f32>> = src.vel.iter().map(|v| v32([v.vx, v.vy, v.vz])).collect();
    let (mut field, mut jerk) = (vec![Field::<f32>::zero(); n], vec![Jerk::<f32>::zero(); n]);
    let exec = engine.opened().get::<f32>().map_err(|e| format!("gpunb_regf: {e}"))?;
    let (t, s) = (Bodies { pos: &tpos, vel: &tvel }, Bodies { pos: &spos, vel: &svel });
    exec.accelerations_jerk(t, s, &Params::softened(0.0), &mut field, &mut jerk)
        .map_err(|e| format!("gpunb_regf: {e}"))?;
    for i in 0..n {
        r.acc[i] = field[i].acceleration().map(f64::from);
        r.jerk[i] = jerk[i].components().map(f64::from);
        r.pot[i] = -f64::from(field[i].phi);
    }
    Ok(())
}

/// NBODY6++'s `gpupot_`: the potential `+Σ m_j/r` over every other particle (coincident
/// ones left out) of particles `istart..istart+ni-1` (counted from 1) of the `n` given,
/// into `pot[0..ni]`. Needs no `open`.
///
/// ```
/// use nbody_c::gpunb::nbody_gpunb_potential;
/// unsafe { std::env::set_var("NBODY_GPUNB_EXECUTOR", "cpu:1") }; // before any thread reads it
/// let (m, x) = ([1.0, 2.0], [[0.0, 0.0, 0.0], [4.0, 0.0, 0.0]]);
/// let mut pot = [0.0; 2];
/// assert_eq!(unsafe { nbody_gpunb_potential(1, 2, 2, m.as_ptr(), x.as_ptr(), pot.as_mut_ptr()) }, 0);
/// assert_eq!(pot, [0.5, 0.25]);
/// ```
///
/// # Safety
/// `m` holds `n` values and `x` `n` triples; `pot` has room for `ni` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nbody_gpunb_potential(
    istart: i32,
    ni: i32,
    n: i32,
    m: *const f64,
    x: *const [f64; 3],
    pot: *mut f64,
) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            let (ni, n) = (count(ni, "ni")?, count(n, "n")?);
            let first = usize::try_from(istart)
                .ok()
                .filter(|&f| f >= 1)
                .ok_or(format!("gpupot: istart = {istart} (counted from 1)"))?;
            if first - 1 + ni > n {
                return Err(format!("gpupot: particles {first}..{} are past the n = {n} given", first - 1 + ni));
            }
            // SAFETY: the caller's contract.
            let (m, x, pot) = unsafe { (values(m, n, "m")?, triples(x, n, "x")?, values_mut(pot, ni, "pot")?) };
            for j in 0..n {
                if !(m[j].is_finite() && m[j] >= 0.0) || x[j].iter().any(|c| !c.is_finite()) {
                    return Err(format!("gpupot: particle {j} is not finite (mass {}, position {:?})", m[j], x[j]));
                }
            }
            if ni == 0 {
                return Ok(());
            }
            let all: Vec<Particle<f64>> = (0..n).map(|j| Particle::new(x[j][0], x[j][1], x[j][2], m[j])).collect();
            let mut field = vec![Field::zero(); ni];
            let targets = &all[first - 1..first - 1 + ni];
            s.engine()?
                .get()
                .accelerations(targets, &all, &Params::softened(0.0), &mut field)
                .map_err(|e| format!("gpupot: {e}"))?;
            for (p, f) in pot.iter_mut().zip(&field) {
                *p = -f.phi;
            }
            Ok(())
        }))
    })
}

/// Prints the calls and seconds since the last print to stderr, as upstream's
/// `gpunb_profile_` does, and starts counting again.
#[unsafe(no_mangle)]
pub extern "C" fn nbody_gpunb_profile(rank: i32) -> i32 {
    shielded(-1, || {
        status(with_state(|s| {
            let p = std::mem::take(&mut s.profile);
            s.profile.call = p.call;
            if p.calls > 0 {
                eprintln!(
                    "[R.{rank} nbody gpunb] Nsend {} Ngrav {} <Ni> {} send(s) {:.6} grav(s) {:.6} (sums {:.6}, lists beside them {:.6}, grids {}) rate {:.3e} interactions/s",
                    p.sends,
                    p.calls,
                    p.targets / p.calls,
                    p.send_s,
                    p.force_s,
                    p.sums_s,
                    p.lists_s,
                    p.grids,
                    p.interactions / p.force_s.max(1e-300)
                );
            }
            Ok(())
        }))
    })
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}
