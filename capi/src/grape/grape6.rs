//! GRAPE-6: j-particle memory with prediction done by the library, forces, jerks,
//! potentials, nearest neighbours and neighbour lists on blocks of i-particles.
//!
//! The user code stores each particle's state at its own time (`g6_set_j_particle`),
//! sets the block time (`g6_set_ti`) and asks for the forces on its active particles
//! (`g6calc_firsthalf` then `g6calc_lasthalf`/`lasthalf2`). On a GPU the j-particles
//! are kept on the device too (`nbody_backends::JMemory`; a set marks the address, the
//! next force call sends the marked ones) and force calls predict and compute there,
//! neighbours included; without a GPU the library predicts every
//! j-particle to the block time (`x + v dt + a dt²/2 + j dt³/6`, `v + a dt + j dt²/2`;
//! the `k18` term is accepted and unused, as in Sapporo), except that an i-particle
//! whose index names a j-particle is taken at the position and velocity the code
//! passed, both as target and as source: its pair with itself then cancels exactly, and
//! every other particle feels it where the code says it is. Results follow GRAPE-6: G
//! = 1, `pot` = −Σ m/r over the other particles, the nearest neighbour excludes the
//! particle itself, and a neighbour list (sources with unsoftened r² ≤ h²) includes it.

use super::{Engine, count, report, shielded, triples, values, values_mut};
use nbody_backends::{JCall, JMemory, JSearch};
use nbody_core::jmemory::PackedLists;
use nbody_core::neighbours::{Nearest, Neighbours, Within};
use nbody_core::{Bodies, Field, Jerk, Overlap, Params, Particle, Velocity};
use std::collections::HashMap;
use std::sync::Mutex;

/// The i-particles a call may hold (GRAPE-6 codes size their blocks by `g6_npipes`).
/// Large, because each call predicts the whole j-memory (on the host path it also sends
/// it), so a block step cut into many calls repeats that work.
const PIPES: i32 = 1 << 16;
/// Neighbour-list slots per i-particle at first; a call that overflows them is repeated
/// with enough (up to [`MAX_NEIGHBOURS`]).
const FIRST_SLOTS: usize = 256;
/// Beyond this many neighbours a list is reported as overflowed.
const MAX_NEIGHBOURS: usize = 65_536;

#[derive(Clone, Copy)]
struct JParticle {
    id: i32,
    t: f64,
    mass: f64,
    x: [f64; 3],
    v: [f64; 3],
    a: [f64; 3],
    j: [f64; 3],
}

/// What the last `g6calc_firsthalf` computed, in the order of its i-particles.
#[derive(Default)]
struct Results {
    acc: Vec<[f64; 3]>,
    jerk: Vec<[f64; 3]>,
    pot: Vec<f64>,
    nearest: Vec<i32>,
    lists: Lists,
    overflow: bool,
    /// Whether `nearest`, `lists` and `overflow` were computed.
    neighbours: bool,
}

/// Every i-particle's neighbour list (ids, increasing), end to end: one allocation per
/// call however many i-particles it has.
struct Lists {
    /// Where each list begins in `ids`, and where the last one ends.
    start: Vec<usize>,
    ids: Vec<i32>,
}

impl Default for Lists {
    fn default() -> Self {
        Lists::empty(0)
    }
}

impl Lists {
    /// `n` empty lists.
    fn empty(n: usize) -> Self {
        Lists { start: vec![0; n + 1], ids: Vec::new() }
    }

    /// No list yet, room for `lists` of `ids` ids in all.
    fn with_capacity(lists: usize, ids: usize) -> Self {
        let mut start = Vec::with_capacity(lists + 1);
        start.push(0);
        Lists { start, ids: Vec::with_capacity(ids) }
    }

    /// Appends the next list: `found` (ids in any order) and the particle's own id if
    /// `own` (GRAPE-6 lists hold the particle itself, r² = 0 ≤ h²).
    fn push(&mut self, found: impl ExactSizeIterator<Item = i32>, own: Option<i32>) {
        let from = self.ids.len();
        // Most lists hold the particle alone.
        if found.len() > 0 {
            self.ids.extend(found);
            let list = &mut self.ids[from..];
            // Ids usually follow addresses, so the found ones come sorted: sort only if not.
            if !list.is_sorted() {
                list.sort_unstable();
            }
        }
        if let Some(id) = own {
            let at = from + self.ids[from..].partition_point(|&x| x < id);
            self.ids.insert(at, id);
        }
        self.start.push(self.ids.len());
    }

    fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    fn get(&self, k: usize) -> Option<&[i32]> {
        Some(&self.ids[*self.start.get(k)?..*self.start.get(k + 1)?])
    }
}

/// The last call's inputs as the executor takes them, kept so that neighbours can be
/// found on demand when the force pass skipped them (and its buffers reused).
#[derive(Default)]
struct Call {
    tpos: Vec<Particle<f64>>,
    tvel: Vec<Velocity<f64>>,
    spos: Vec<Particle<f64>>,
    svel: Vec<Velocity<f64>>,
    radius2: Vec<f64>,
    params: Option<Params<f64>>,
    /// Position in the call of each i-particle's result, i-particles first that are
    /// j-particles; the source slots' ids; the i-particles' ids and radii.
    order: Vec<usize>,
    shared: usize,
    sid: Vec<i32>,
    ids: Vec<i32>,
    h2: Vec<f64>,
}

/// The inputs of the last `g6calc_firsthalf`, kept when it ran on the device j-memory,
/// so that neighbours asked for afterwards can be found on the host path.
struct Inputs {
    nj: usize,
    ids: Vec<i32>,
    xi: Vec<[f64; 3]>,
    vi: Vec<[f64; 3]>,
    h2: Vec<f64>,
    eps2: f64,
}

impl Inputs {
    fn of(a: &Args<'_>) -> Self {
        Inputs { nj: a.nj, ids: a.ids.to_vec(), xi: a.xi.to_vec(), vi: a.vi.to_vec(), h2: a.h2.to_vec(), eps2: a.eps2 }
    }

    fn args(&self) -> Args<'_> {
        Args { nj: self.nj, ids: &self.ids, xi: &self.xi, vi: &self.vi, h2: &self.h2, eps2: self.eps2 }
    }
}

/// A firsthalf call's arguments, checked: `nj` addresses, and per i-particle its id,
/// position, velocity and squared neighbour radius.
struct Args<'a> {
    nj: usize,
    ids: &'a [i32],
    xi: &'a [[f64; 3]],
    vi: &'a [[f64; 3]],
    h2: &'a [f64],
    eps2: f64,
}

/// Checks a firsthalf call's arguments against the board.
///
/// # Safety
/// `index`, `h2` hold `ni` values and `xi`, `vi` `ni` triples (GRAPE-6's contract), valid
/// for `'a`.
#[allow(clippy::too_many_arguments)]
unsafe fn checked<'a>(
    b: &Board,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: f64,
    h2: *const f64,
) -> Result<Args<'a>, String> {
    let (nj, ni) = (count(nj, "nj")?, count(ni, "ni")?);
    if ni > PIPES as usize {
        return Err(format!("ni = {ni} is more than g6_npipes() = {PIPES}"));
    }
    if nj > b.j.len() {
        return Err(format!("nj = {nj} but only addresses below {} were set", b.j.len()));
    }
    if !(eps2.is_finite() && eps2 >= 0.0) {
        return Err(format!("eps2 = {eps2} must be finite and not negative"));
    }
    // SAFETY: the caller's contract.
    let (ids, xi, vi, h2) =
        unsafe { (values(index, ni, "index")?, triples(xi, ni, "xi")?, triples(vi, ni, "vi")?, values(h2, ni, "h2")?) };
    Ok(Args { nj, ids, xi, vi, h2, eps2 })
}

/// The j-memory on the GPU, when the engine is one.
type DeviceJ = Option<JMemory>;

/// The j-memory address of each particle id: a table for the ids codes use (0 up to a
/// few million: a force call looks up every i-particle, so a hash per lookup cost a
/// tenth of a block step at N = 65,536), a map for any others.
#[derive(Default)]
struct Addresses {
    dense: Vec<u32>,
    sparse: HashMap<i32, usize>,
}

/// Ids below this go in the table (4 bytes each).
const DENSE_IDS: i32 = 1 << 24;
const NO_ADDRESS: u32 = u32::MAX;

impl Addresses {
    fn get(&self, id: i32) -> Option<usize> {
        if (0..DENSE_IDS).contains(&id) {
            self.dense.get(id as usize).filter(|&&a| a != NO_ADDRESS).map(|&a| a as usize)
        } else {
            self.sparse.get(&id).copied()
        }
    }

    fn insert(&mut self, id: i32, address: usize) {
        if (0..DENSE_IDS).contains(&id) && address < NO_ADDRESS as usize {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, NO_ADDRESS);
            }
            self.dense[i] = address as u32;
        } else {
            self.sparse.insert(id, address);
        }
    }

    fn remove(&mut self, id: i32) {
        if let Some(a) = self.dense.get_mut(id.max(0) as usize).filter(|_| (0..DENSE_IDS).contains(&id)) {
            *a = NO_ADDRESS;
        }
        self.sparse.remove(&id);
    }

    fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
    }
}

struct Board {
    engine: Engine,
    /// On a GPU: the j-particles kept on the device too (each set is written into the
    /// next force call's upload as it arrives), so force calls predict them there and
    /// send only the i-particles.
    device: DeviceJ,
    inputs: Option<Inputs>,
    ti: f64,
    j: Vec<Option<JParticle>>,
    /// The id at each address of `j` (-1: none): what the neighbour results are mapped
    /// through, 4 bytes an address (a lookup per neighbour in `j` itself missed the cache
    /// at every random address: 0.2 s of a 65,536-body run).
    id_at: Vec<i32>,
    /// Address of each id in `j`, kept as particles are set.
    address_of: Addresses,
    last: Result<Results, String>,
    call: Option<Call>,
    /// Whether the code asked for neighbours since the last force call; the next call
    /// finds them in its force pass only then (the first one never does: a code that
    /// wants them pays for that one call twice).
    asked: bool,
}

/// Open boards with their cluster ids: one or two, searched in a line (codes call
/// `g6_set_j_particle` once per particle per step, so this lookup is on the hot path).
static BOARDS: Mutex<Vec<(i32, Board)>> = Mutex::new(Vec::new());

fn with_board<R>(cluster: i32, f: impl FnOnce(&mut Board) -> Result<R, String>) -> Result<R, String> {
    let mut boards = BOARDS.lock().unwrap_or_else(|p| p.into_inner());
    let board = boards
        .iter_mut()
        .find(|(id, _)| *id == cluster)
        .map(|(_, b)| b)
        .ok_or_else(|| format!("cluster {cluster} is not open (call g6_open first)"))?;
    f(board)
}

fn status(r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(m) => report(&m),
    }
}

/// Opens cluster `id`: chooses the executor (see the module docs of `grape`).
#[unsafe(no_mangle)]
pub extern "C" fn g6_open(id: i32) -> i32 {
    g6_open_impl(id)
}

/// The work of `g6_open`, for both of its spellings.
fn g6_open_impl(id: i32) -> i32 {
    shielded(-1, || status(Engine::from_env().map(|engine| open(id, engine))))
}

/// Opens cluster 0 on the GPUs `list[0..ndev]` (`ndev <= 0`: as `g6_open(0)`), as
/// Sapporo2's `g6_open_special`. Returns 0, or -1 (no such device, a build without CUDA).
///
/// # Safety
/// `list` holds `ndev` ints where `ndev > 0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_open_special(ndev: i32, list: *const i32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6_open_special_impl(ndev, list) }
}

/// The work of `g6_open_special`, for both of its spellings.
unsafe fn g6_open_special_impl(ndev: i32, list: *const i32) -> i32 {
    // SAFETY: the caller's contract.
    shielded(-1, || status(unsafe { Engine::on_devices(ndev, list) }.map(|engine| open(0, engine))))
}

/// Opens cluster `id` on `engine` (replacing one open under that id).
fn open(id: i32, mut engine: Engine) {
    let board = Board {
        device: device_j(&mut engine),
        inputs: None,
        engine,
        ti: 0.0,
        j: Vec::new(),
        id_at: Vec::new(),
        address_of: Addresses::default(),
        last: Err("no force was computed yet".into()),
        call: None,
        asked: false,
    };
    let mut boards = BOARDS.lock().unwrap_or_else(|p| p.into_inner());
    boards.retain(|(open, _)| *open != id);
    boards.push((id, board));
}

/// Closes cluster `id`, freeing its memory.
#[unsafe(no_mangle)]
pub extern "C" fn g6_close(id: i32) -> i32 {
    g6_close_impl(id)
}

/// The work of `g6_close`, for both of its spellings.
fn g6_close_impl(id: i32) -> i32 {
    shielded(-1, || {
        let mut boards = BOARDS.lock().unwrap_or_else(|p| p.into_inner());
        let open = boards.len();
        boards.retain(|(open, _)| *open != id);
        status(if boards.len() < open { Ok(()) } else { Err(format!("cluster {id} is not open")) })
    })
}

/// How many i-particles one `g6calc_firsthalf` may take.
#[unsafe(no_mangle)]
pub extern "C" fn g6_npipes() -> i32 {
    g6_npipes_impl()
}

/// The work of `g6_npipes`, for both of its spellings.
fn g6_npipes_impl() -> i32 {
    PIPES
}

/// Sets the block time the j-particles are predicted to.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_ti(id: i32, ti: f64) -> i32 {
    g6_set_ti_impl(id, ti)
}

/// The work of `g6_set_ti`, for both of its spellings.
fn g6_set_ti_impl(id: i32, ti: f64) -> i32 {
    shielded(-1, || {
        status(with_board(id, |b| {
            if !ti.is_finite() {
                return Err(format!("g6_set_ti: ti = {ti} is not finite"));
            }
            b.ti = ti;
            Ok(())
        }))
    })
}

fn read3(p: *const f64, what: &str) -> Result<[f64; 3], String> {
    // SAFETY: the caller passes three doubles (GRAPE's double[3] arguments).
    let s = unsafe { values(p, 3, what) }?;
    Ok([s[0], s[1], s[2]])
}

/// Stores particle `index` (its id) at j-memory `address`: its time `tj`, mass,
/// position `x`, velocity `v`, `a2` = a/2, `j6` = jerk/6 (`k18` and `dtj` unused).
///
/// # Safety
/// `k18`, `j6`, `a2`, `v`, `x` each point to three doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_j_particle(
    id: i32,
    address: i32,
    index: i32,
    tj: f64,
    dtj: f64,
    mass: f64,
    k18: *const f64,
    j6: *const f64,
    a2: *const f64,
    v: *const f64,
    x: *const f64,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6_set_j_particle_impl(id, address, index, tj, dtj, mass, k18, j6, a2, v, x) }
}

/// The work of `g6_set_j_particle`, for both of its spellings.
unsafe fn g6_set_j_particle_impl(
    id: i32,
    address: i32,
    index: i32,
    tj: f64,
    dtj: f64,
    mass: f64,
    k18: *const f64,
    j6: *const f64,
    a2: *const f64,
    v: *const f64,
    x: *const f64,
) -> i32 {
    let _ = (dtj, k18);
    shielded(-1, || {
        status(with_board(id, |b| {
            let address = count(address, "g6_set_j_particle: address")?;
            let (j6, a2, v, x) = (read3(j6, "j6")?, read3(a2, "a2")?, read3(v, "v")?, read3(x, "x")?);
            let finite = [tj, mass].iter().chain(&j6).chain(&a2).chain(&v).chain(&x).all(|c| c.is_finite());
            if !finite || mass < 0.0 {
                return Err(format!(
                    "g6_set_j_particle: particle {index} at address {address} has a NaN, infinite or negative value"
                ));
            }
            super::fits("g6_set_j_particle", address, 1, b.engine.j_capacity())?;
            if address >= b.j.len() {
                b.j.resize(address + 1, None);
                b.id_at.resize(address + 1, -1);
            }
            // The map changes only when an address takes a new id (codes rewrite each
            // particle at its own address every step: no hashing then).
            match b.j[address] {
                Some(old) if old.id == index => {}
                Some(old) => {
                    b.address_of.remove(old.id);
                    b.address_of.insert(index, address);
                }
                None => {
                    b.address_of.insert(index, address);
                }
            }
            let p = JParticle { id: index, t: tj, mass, x, v, a: a2.map(|c| 2.0 * c), j: j6.map(|c| 6.0 * c) };
            b.j[address] = Some(p);
            b.id_at[address] = index;
            feed(&mut b.device, address, &p)
        }))
    })
}

/// Nothing to do: j-particles are stored as they are set.
#[unsafe(no_mangle)]
pub extern "C" fn g6_initialize_jp_buffer(id: i32, size: i32) -> i32 {
    g6_initialize_jp_buffer_impl(id, size)
}

/// The work of `g6_initialize_jp_buffer`, for both of its spellings.
fn g6_initialize_jp_buffer_impl(id: i32, size: i32) -> i32 {
    let _ = size;
    shielded(-1, || status(with_board(id, |_| Ok(()))))
}

/// GRAPE-6 scales its fixed-point time format by 2^-`tunit`; the library computes in
/// floating point, so the unit is accepted and has no effect (Sapporo2 does the same).
/// Returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_tunit(tunit: i32) -> i32 {
    g6_set_tunit_impl(tunit)
}

/// The work of `g6_set_tunit`, for both of its spellings.
fn g6_set_tunit_impl(tunit: i32) -> i32 {
    let _ = tunit;
    0
}

/// GRAPE-6 scales its fixed-point positions by 2^-`xunit`; accepted and without effect,
/// as [`g6_set_tunit`]. Returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_xunit(xunit: i32) -> i32 {
    g6_set_xunit_impl(xunit)
}

/// The work of `g6_set_xunit`, for both of its spellings.
fn g6_set_xunit_impl(xunit: i32) -> i32 {
    let _ = xunit;
    0
}

/// Resets a GRAPE-6 board's force FPGAs; there are none, so this only checks that
/// cluster `id` is open (0, or -1 when it is not). The j-memory is kept, as on the
/// board.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset_fofpga(id: i32) -> i32 {
    g6_reset_fofpga_impl(id)
}

/// The work of `g6_reset_fofpga`, for both of its spellings.
fn g6_reset_fofpga_impl(id: i32) -> i32 {
    shielded(-1, || status(with_board(id, |_| Ok(()))))
}

/// Nothing to do: j-particles are stored as they are set.
#[unsafe(no_mangle)]
pub extern "C" fn g6_flush_jp_buffer(id: i32) -> i32 {
    g6_flush_jp_buffer_impl(id)
}

/// The work of `g6_flush_jp_buffer`, for both of its spellings.
fn g6_flush_jp_buffer_impl(id: i32) -> i32 {
    shielded(-1, || status(with_board(id, |_| Ok(()))))
}

/// Empties the j-memory and the last results of cluster `id`.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset(id: i32) -> i32 {
    g6_reset_impl(id)
}

/// The work of `g6_reset`, for both of its spellings.
fn g6_reset_impl(id: i32) -> i32 {
    shielded(-1, || {
        status(with_board(id, |b| {
            b.j.clear();
            b.id_at.clear();
            b.address_of.clear();
            b.call = None;
            b.inputs = None;
            if let Some(d) = &mut b.device {
                d.clear(b.engine.executor()).map_err(super::describe)?;
            }
            b.last = Err("no force was computed yet".into());
            Ok(())
        }))
    })
}

/// Starts the force calculation on `ni` i-particles (ids `index`, positions `xi`,
/// velocities `vi`, squared neighbour radii `h2`) from j-memory addresses `0..nj`, with
/// softening `eps2` = ε². `aold`, `j6old` and `phiold` are unused (GRAPE-6 scales its
/// fixed-point format with them). The results wait for `g6calc_lasthalf`.
///
/// # Safety
/// `index`, `h2` hold `ni` values; `xi`, `vi` (and the unused old values, which may be
/// null) `ni` triples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_firsthalf(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    aold: *const [f64; 3],
    j6old: *const [f64; 3],
    phiold: *const f64,
    eps2: f64,
    h2: *const f64,
) {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6calc_firsthalf_impl(id, nj, ni, index, xi, vi, aold, j6old, phiold, eps2, h2) }
}

/// The work of `g6calc_firsthalf`, for both of its spellings.
unsafe fn g6calc_firsthalf_impl(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    aold: *const [f64; 3],
    j6old: *const [f64; 3],
    phiold: *const f64,
    eps2: f64,
    h2: *const f64,
) {
    let _ = (aold, j6old, phiold);
    shielded((), || {
        let r = with_board(id, |b| {
            let neighbours = std::mem::replace(&mut b.asked, false);
            // SAFETY: the caller passes `ni` of each (GRAPE-6's contract).
            let args = match unsafe { checked(b, nj, ni, index, xi, vi, eps2, h2) } {
                Ok(a) => a,
                Err(m) => {
                    b.last = Err(m.clone());
                    return Err(m);
                }
            };
            if b.device.is_some() {
                b.call = None;
                b.last = on_device(b, &args, neighbours);
                return b.last.as_ref().map(|_| ()).map_err(Clone::clone);
            }
            b.inputs = None;
            let old = b.call.take().unwrap_or_default();
            let call = prepare(b, old, &args);
            b.last = run(&mut b.engine, &call, neighbours);
            b.call = Some(call);
            b.last.as_ref().map(|_| ()).map_err(Clone::clone)
        });
        if let Err(m) = r {
            report(&format!("g6calc_firsthalf: {m}"));
        }
    })
}

/// Per i-particle, the address below `nj` of the j-particle its id names, or -1 (an id
/// that appears twice names it only the first time): the particles whose pair with
/// themselves is left out.
fn own_addresses(b: &Board, ids: &[i32], nj: usize) -> Vec<i32> {
    let mut taken = vec![false; nj];
    ids.iter()
        .map(|&id| match b.address_of.get(id).filter(|&a| a < nj) {
            Some(a) if !std::mem::replace(&mut taken[a], true) => a as i32,
            _ => -1,
        })
        .collect()
}

/// Lays a checked firsthalf call out for the executor (the host path: every j-particle
/// predicted here).
fn prepare(b: &Board, mut c: Call, a: &Args<'_>) -> Call {
    let Args { nj, ids, xi, vi, h2, eps2 } = *a;
    let ni = ids.len();
    let address_of = |id: &i32| b.address_of.get(*id).filter(|&a| a < nj);
    // Targets: the i-particles that are j-particles first (they lead the sources too, so
    // the overlap is one shared run), then the others.
    // The buffers of the previous call are reused: a block step allocates nothing.
    let own = own_addresses(b, ids, nj);
    let mut taken = vec![false; nj];
    own.iter().filter(|&&a| a >= 0).for_each(|&a| taken[a as usize] = true);
    let mut order = std::mem::take(&mut c.order);
    order.clear();
    order.extend((0..ni).filter(|&i| own[i] >= 0));
    let shared = order.len();
    order.extend((0..ni).filter(|&i| own[i] < 0));
    let particle = |x: [f64; 3], m: f64| Particle::new(x[0], x[1], x[2], m);
    let velocity = |v: [f64; 3]| Velocity::new(v[0], v[1], v[2]);
    let mass_of = |i: usize| address_of(&ids[i]).and_then(|a| b.j[a]).map_or(0.0, |p| p.mass);
    let (mut tpos, mut tvel, mut spos, mut svel, mut sid) = (c.tpos, c.tvel, c.spos, c.svel, c.sid);
    tpos.clear();
    spos.clear();
    tvel.clear();
    svel.clear();
    sid.clear();
    tpos.extend(order.iter().map(|&i| particle(xi[i], mass_of(i))));
    tvel.extend(order.iter().map(|&i| velocity(vi[i])));
    spos.extend_from_slice(&tpos[..shared]);
    svel.extend_from_slice(&tvel[..shared]);
    sid.extend(order[..shared].iter().map(|&i| ids[i]));
    for (a, p) in b.j[..nj].iter().enumerate() {
        let Some(p) = p.filter(|_| !taken[a]) else { continue };
        let dt = b.ti - p.t;
        let x: [f64; 3] = std::array::from_fn(|k| p.x[k] + dt * (p.v[k] + dt * (0.5 * p.a[k] + dt * p.j[k] / 6.0)));
        let v: [f64; 3] = std::array::from_fn(|k| p.v[k] + dt * (p.a[k] + 0.5 * dt * p.j[k]));
        spos.push(particle(x, p.mass));
        svel.push(velocity(v));
        sid.push(p.id);
    }
    let mut radius2 = c.radius2;
    radius2.clear();
    radius2.extend(order.iter().map(|&i| h2[i]));
    let (mut own_ids, mut own_h2) = (c.ids, c.h2);
    own_ids.clear();
    own_ids.extend_from_slice(ids);
    own_h2.clear();
    own_h2.extend_from_slice(h2);
    let params =
        Params::softened(eps2.sqrt()).with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: shared });
    let params = Some(params);
    Call { tpos, tvel, spos, svel, radius2, params, order, shared, sid, ids: own_ids, h2: own_h2 }
}

/// Writes a j-particle just set into the device j-memory's next upload.
fn feed(device: &mut DeviceJ, address: usize, p: &JParticle) -> Result<(), String> {
    match device {
        Some(d) => d
            .set(address, nbody_core::jmemory::JParticle { x: p.x, m: p.mass, v: p.v, a: p.a, j: p.j, t: p.t })
            .map_err(super::describe),
        None => Ok(()),
    }
}

/// The j-memory on the engine's GPU (none on other executors, or if it cannot be made:
/// the host path then serves every call).
fn device_j(engine: &mut Engine) -> DeviceJ {
    JMemory::on(engine.executor())
}

/// A firsthalf call on the device j-memory: only the i-particles go up; results in the
/// code's order (neighbours too if `neighbours`: nearest and lists by address, mapped to
/// ids, lists with the particle itself as GRAPE-6 has them). Its inputs are kept for
/// neighbours asked for afterwards.
fn on_device(b: &mut Board, args: &Args<'_>, neighbours: bool) -> Result<Results, String> {
    let Args { nj, ids, xi, vi, h2, eps2 } = *args;
    let ni = ids.len();
    let own = own_addresses(b, ids, nj);
    let mass = |a: i32| if a >= 0 { b.j[a as usize].map_or(0.0, |p| p.mass) } else { 0.0 };
    let tpos: Vec<Particle<f64>> = own.iter().zip(xi).map(|(&a, x)| Particle::new(x[0], x[1], x[2], mass(a))).collect();
    let tvel: Vec<Velocity<f64>> = vi.iter().map(|v| Velocity::new(v[0], v[1], v[2])).collect();
    let targets = Bodies { pos: &tpos, vel: &tvel };
    let (mut field, mut jerk) = (vec![Field::zero(); ni], vec![Jerk::zero(); ni]);
    // Kept for neighbours asked for later (not needed when this pass finds them).
    b.inputs = (!neighbours).then(|| Inputs::of(args));
    let mut r = Results {
        acc: Vec::new(),
        jerk: Vec::new(),
        pot: Vec::new(),
        nearest: vec![-1; ni],
        lists: Lists::empty(ni),
        overflow: false,
        neighbours,
    };
    if neighbours {
        // Slots as on the host path: the search is repeated with more when a list
        // overflowed them. Only the entries found come back from the device.
        let mut slots = FIRST_SLOTS;
        let packed = loop {
            let search = JSearch::Lists { radius2: h2, capacity: slots, ahead: None, exclude: false, inside: None };
            let packed = forces_on_device(b, nj, targets, &own, eps2.sqrt(), &mut field, &mut jerk, search)?
                .ok_or("the device found no lists")?;
            let most = packed.counts.iter().copied().max().unwrap_or(0) as usize;
            if most <= slots || slots >= MAX_NEIGHBOURS {
                break packed;
            }
            slots = most.min(MAX_NEIGHBOURS);
        };
        let id_at = |a: u32| b.id_at[a as usize];
        r.lists = Lists::with_capacity(ni, packed.entries.len() + ni);
        for i in 0..ni {
            r.nearest[i] = packed.nearest[i].map_or(-1, id_at);
            let own_id = (own[i] >= 0 && h2[i] >= 0.0).then_some(ids[i]);
            r.lists.push(packed.list(i).iter().map(|&a| id_at(a)), own_id);
            r.overflow |= packed.overflowed(i);
        }
    } else {
        forces_on_device(b, nj, targets, &own, eps2.sqrt(), &mut field, &mut jerk, JSearch::Nothing)?;
    }
    r.acc = field.iter().map(|f| f.acceleration()).collect();
    r.jerk = jerk.iter().map(|j| j.components()).collect();
    r.pot = field.iter().map(|f| f.phi).collect();
    Ok(r)
}

/// Computes on the device j-memory (the lists packed, with `JSearch::Lists`).
#[allow(clippy::too_many_arguments)]
fn forces_on_device(
    b: &mut Board,
    nj: usize,
    targets: Bodies<'_, f64>,
    own: &[i32],
    eps: f64,
    field: &mut [Field<f64>],
    jerk: &mut [Jerk<f64>],
    search: JSearch<'_, '_>,
) -> Result<Option<PackedLists>, String> {
    let d = b.device.as_mut().ok_or("no device j-memory")?;
    let (exec, call) = (b.engine.executor(), JCall { nj, time: b.ti, targets, own, eps });
    d.forces(exec, call, field, jerk, search).map_err(super::describe)
}

/// Runs a prepared call, finding neighbours in the force pass if `neighbours`.
fn run(engine: &mut Engine, c: &Call, neighbours: bool) -> Result<Results, String> {
    let (n, ni) = (c.order.len(), c.ids.len());
    let params = c.params.ok_or("no call was prepared")?;
    let targets = Bodies { pos: &c.tpos, vel: &c.tvel };
    let sources = Bodies { pos: &c.spos, vel: &c.svel };
    let (mut field, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
    let mut r = Results {
        acc: vec![[0.0; 3]; ni],
        jerk: vec![[0.0; 3]; ni],
        pot: vec![0.0; ni],
        nearest: vec![-1; ni],
        lists: Lists::empty(ni),
        overflow: false,
        neighbours,
    };
    if !neighbours {
        engine.get().accelerations_jerk(targets, sources, &params, &mut field, &mut jerk).map_err(super::describe)?;
        for (k, &i) in c.order.iter().enumerate() {
            (r.acc[i], r.pot[i], r.jerk[i]) = (field[k].acceleration(), field[k].phi, jerk[k].components());
        }
        return Ok(r);
    }
    let mut slots = FIRST_SLOTS;
    let (nearest, counts, indices) = loop {
        field.iter_mut().for_each(|f| *f = Field::zero());
        jerk.iter_mut().for_each(|j| *j = Jerk::zero());
        let mut nearest = vec![Nearest::none(); n];
        let (mut indices, mut counts) = (vec![0u32; n * slots], vec![0u32; n]);
        let mut nb = Neighbours {
            nearest: &mut nearest,
            within: Some(Within { radius2: &c.radius2, capacity: slots, indices: &mut indices, counts: &mut counts }),
            index_offset: 0,
        };
        engine
            .get()
            .accelerations_jerk_neighbours(targets, sources, &params, &mut field, &mut jerk, &mut nb)
            .map_err(super::describe)?;
        let most = counts.iter().copied().max().unwrap_or(0) as usize;
        if most <= slots || slots >= MAX_NEIGHBOURS {
            break (nearest, counts, indices);
        }
        slots = most.min(MAX_NEIGHBOURS);
    };
    // Lists in the code's order of i-particles (the call's order puts shared ones first).
    let mut at = vec![0; ni];
    for (k, &i) in c.order.iter().enumerate() {
        (r.acc[i], r.pot[i], r.jerk[i]) = (field[k].acceleration(), field[k].phi, jerk[k].components());
        if nearest[k].is_some() {
            r.nearest[i] = c.sid[nearest[k].index as usize];
        }
        at[i] = k;
    }
    r.lists = Lists::with_capacity(ni, ni);
    for (i, &k) in at.iter().enumerate() {
        let stored = (counts[k] as usize).min(slots);
        let found = indices[k * slots..k * slots + stored].iter().map(|&s| c.sid[s as usize]);
        r.lists.push(found, (k < c.shared && c.h2[i] >= 0.0).then_some(c.ids[i]));
        r.overflow |= counts[k] as usize > stored;
    }
    Ok(r)
}

/// The last call's results with neighbours: found now if its force pass skipped them
/// (the call is repeated with them; its forces come out the same). Marks them asked
/// for, so the next force pass finds them.
fn with_neighbours(b: &mut Board) -> Result<&Results, String> {
    b.asked = true;
    // A force call that ran on the device j-memory without neighbours: again with them.
    if matches!((&b.last, &b.inputs), (Ok(r), Some(_)) if !r.neighbours)
        && let Some(inputs) = b.inputs.take()
    {
        b.last = on_device(b, &inputs.args(), true);
    }
    let fresh = match (&b.last, &b.call) {
        (Ok(r), Some(call)) if !r.neighbours => Some(run(&mut b.engine, call, true)),
        _ => None,
    };
    if let Some(r) = fresh {
        b.last = r;
    }
    b.last.as_ref().map_err(Clone::clone)
}

/// Copies the results of the last `g6calc_firsthalf` on `ni` i-particles.
///
/// # Safety
/// `acc`, `jerk` hold `ni` triples, `pot` `ni` doubles, `nearest` (if not null) `ni` ints.
unsafe fn lasthalf(
    id: i32,
    ni: i32,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
    nearest: *mut i32,
) -> Result<(), String> {
    with_board(id, |b| {
        let r = if nearest.is_null() { b.last.as_ref().map_err(Clone::clone) } else { with_neighbours(b) };
        let r = r.map_err(|m| format!("g6calc_lasthalf: the force call failed: {m}"))?;
        let ni = count(ni, "ni")?;
        if ni != r.acc.len() {
            return Err(format!("g6calc_lasthalf: ni = {ni}, but g6calc_firsthalf had {}", r.acc.len()));
        }
        // SAFETY: the caller passes `ni` of each.
        unsafe {
            values_mut(acc, ni, "acc")?.copy_from_slice(&r.acc);
            values_mut(jerk, ni, "jerk")?.copy_from_slice(&r.jerk);
            values_mut(pot, ni, "pot")?.copy_from_slice(&r.pot);
            if !nearest.is_null() {
                values_mut(nearest, ni, "nnb")?.copy_from_slice(&r.nearest);
            }
        }
        Ok(())
    })
}

/// The accelerations, jerks and potentials of the last `g6calc_firsthalf` (the other
/// arguments repeat it and are not read again). Returns 0, or -1 if it failed.
///
/// # Safety
/// `acc`, `jerk` hold `ni` triples, `pot` `ni` doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6calc_lasthalf_impl(id, nj, ni, index, xi, vi, eps2, h2, acc, jerk, pot) }
}

/// The work of `g6calc_lasthalf`, for both of its spellings.
unsafe fn g6calc_lasthalf_impl(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
) -> i32 {
    let _ = (nj, index, xi, vi, eps2, h2);
    // SAFETY: forwarded from the caller.
    shielded(-1, || status(unsafe { lasthalf(id, ni, acc, jerk, pot, std::ptr::null_mut()) }))
}

/// As `g6calc_lasthalf`, plus each i-particle's nearest neighbour's index in `nnb`
/// (-1 when there is no other particle).
///
/// # Safety
/// As `g6calc_lasthalf`; `nnb` holds `ni` ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf2(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
    nnb: *mut i32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6calc_lasthalf2_impl(id, nj, ni, index, xi, vi, eps2, h2, acc, jerk, pot, nnb) }
}

/// The work of `g6calc_lasthalf2`, for both of its spellings.
unsafe fn g6calc_lasthalf2_impl(
    id: i32,
    nj: i32,
    ni: i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
    nnb: *mut i32,
) -> i32 {
    let _ = (nj, index, xi, vi, eps2, h2);
    if nnb.is_null() {
        return report("g6calc_lasthalf2: nnb is a null pointer");
    }
    // SAFETY: forwarded from the caller.
    shielded(-1, || status(unsafe { lasthalf(id, ni, acc, jerk, pot, nnb) }))
}

/// Makes the last call's neighbour lists readable; returns 1 if a list overflowed the
/// library's limit (65,536), else 0 (-1 on error).
#[unsafe(no_mangle)]
pub extern "C" fn g6_read_neighbour_list(id: i32) -> i32 {
    g6_read_neighbour_list_impl(id)
}

/// The work of `g6_read_neighbour_list`, for both of its spellings.
fn g6_read_neighbour_list_impl(id: i32) -> i32 {
    shielded(-1, || match with_board(id, |b| b.last.as_ref().map(|r| i32::from(r.overflow)).map_err(Clone::clone)) {
        Ok(o) => o,
        Err(m) => report(&format!("g6_read_neighbour_list: {m}")),
    })
}

/// Copies i-particle `ipipe`'s neighbour list (indices, increasing) into `list`, at most
/// `maxlength`, and its full length into `*n_neighbours`; returns 1 if it did not fit.
///
/// # Safety
/// `n_neighbours` points to an int, `list` to `maxlength` ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_get_neighbour_list(
    id: i32,
    ipipe: i32,
    maxlength: i32,
    n_neighbours: *mut i32,
    list: *mut i32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { g6_get_neighbour_list_impl(id, ipipe, maxlength, n_neighbours, list) }
}

/// The work of `g6_get_neighbour_list`, for both of its spellings.
unsafe fn g6_get_neighbour_list_impl(
    id: i32,
    ipipe: i32,
    maxlength: i32,
    n_neighbours: *mut i32,
    list: *mut i32,
) -> i32 {
    shielded(-1, || {
        let r = with_board(id, |b| {
            let r = with_neighbours(b)?;
            let i = count(ipipe, "ipipe")?;
            let got = r.lists.get(i).ok_or_else(|| format!("ipipe = {i}, but the last call had {}", r.lists.len()))?;
            let max = count(maxlength, "maxlength")?;
            // SAFETY: the caller passes one int and `maxlength` ints.
            let (n, out) = unsafe { (values_mut(n_neighbours, 1, "n_neighbours")?, values_mut(list, max, "list")?) };
            n[0] = got.len() as i32;
            let k = got.len().min(max);
            out[..k].copy_from_slice(&got[..k]);
            Ok(i32::from(got.len() > max))
        });
        r.unwrap_or_else(|m| report(&format!("g6_get_neighbour_list: {m}")))
    })
}

// Fortran spellings: trailing underscore, every argument by reference.

/// GRAPE-6's neighbour-list sort mode: lists here always come sorted (increasing
/// index), so every mode is accepted and changes nothing. Returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_neighbour_list_sort_mode(mode: i32) -> i32 {
    g6_set_neighbour_list_sort_mode_impl(mode)
}

/// The work of `g6_set_neighbour_list_sort_mode`, for both of its spellings.
fn g6_set_neighbour_list_sort_mode_impl(mode: i32) -> i32 {
    let _ = mode;
    0
}

/// GRAPE-6's overflow test mode (flags on the hardware's fixed-point accumulators for
/// acceleration, jerk and potential): the library computes in floating point and has no
/// such overflow, so the mode is accepted and changes nothing. Returns 0.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_overflow_flag_test_mode(aflag: i32, jflag: i32, pflag: i32) -> i32 {
    g6_set_overflow_flag_test_mode_impl(aflag, jflag, pflag)
}

/// The work of `g6_set_overflow_flag_test_mode`, for both of its spellings.
fn g6_set_overflow_flag_test_mode_impl(aflag: i32, jflag: i32, pflag: i32) -> i32 {
    let _ = (aflag, jflag, pflag);
    0
}

/// Fortran `g6_set_neighbour_list_sort_mode` (nothing is read).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_neighbour_list_sort_mode_(mode: *const i32) -> i32 {
    let _ = mode;
    0
}

/// Fortran `g6_set_overflow_flag_test_mode` (nothing is read: Sapporo2's spelling
/// passes only a cluster id, GRAPE-6's three flags).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_overflow_flag_test_mode_(aflag: *const i32, jflag: *const i32, pflag: *const i32) -> i32 {
    let _ = (aflag, jflag, pflag);
    0
}

/// Fortran `g6_open_special`.
///
/// # Safety
/// `ndev` points to an int; `list` holds `*ndev` ints where it is positive.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_open_special_(ndev: *const i32, list: *const i32) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6_open_special_impl(*ndev, list) }
}

/// Fortran `g6_open`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_open_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_open_impl(unsafe { *id })
}

/// Fortran `g6_close`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_close_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_close_impl(unsafe { *id })
}

/// Fortran `g6_npipes`.
#[unsafe(no_mangle)]
pub extern "C" fn g6_npipes_() -> i32 {
    g6_npipes_impl()
}

/// Fortran `g6_set_ti`.
///
/// # Safety
/// Both point to valid values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_ti_(id: *const i32, ti: *const f64) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6_set_ti_impl(*id, *ti) }
}

/// Fortran `g6_set_j_particle`.
///
/// # Safety
/// Scalars point to valid values, vectors to three doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_j_particle_(
    id: *const i32,
    address: *const i32,
    index: *const i32,
    tj: *const f64,
    dtj: *const f64,
    mass: *const f64,
    k18: *const f64,
    j6: *const f64,
    a2: *const f64,
    v: *const f64,
    x: *const f64,
) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6_set_j_particle_impl(*id, *address, *index, *tj, *dtj, *mass, k18, j6, a2, v, x) }
}

/// Fortran `g6_initialize_jp_buffer`.
///
/// # Safety
/// Both point to ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_initialize_jp_buffer_(id: *const i32, size: *const i32) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6_initialize_jp_buffer_impl(*id, *size) }
}

/// Fortran `g6_flush_jp_buffer`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_flush_jp_buffer_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_flush_jp_buffer_impl(unsafe { *id })
}

/// Fortran `g6_set_tunit`. The unit is never read: the GRAPE-6 library passes an
/// `int *`, Sapporo2 declares a `double *`, and both are accepted.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_tunit_(tunit: *const core::ffi::c_void) -> i32 {
    let _ = tunit;
    0
}

/// Fortran `g6_set_xunit` (see [`g6_set_tunit_`]).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_xunit_(xunit: *const core::ffi::c_void) -> i32 {
    let _ = xunit;
    0
}

/// Fortran `g6_reset_fofpga`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_reset_fofpga_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_reset_fofpga_impl(unsafe { *id })
}

/// Fortran `g6_reset`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_reset_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_reset_impl(unsafe { *id })
}

/// Fortran `g6calc_firsthalf`.
///
/// # Safety
/// As `g6calc_firsthalf`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_firsthalf_(
    id: *const i32,
    nj: *const i32,
    ni: *const i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    aold: *const [f64; 3],
    j6old: *const [f64; 3],
    phiold: *const f64,
    eps2: *const f64,
    h2: *const f64,
) {
    // SAFETY: Fortran passes valid references.
    unsafe { g6calc_firsthalf_impl(*id, *nj, *ni, index, xi, vi, aold, j6old, phiold, *eps2, h2) }
}

/// Fortran `g6calc_lasthalf`.
///
/// # Safety
/// As `g6calc_lasthalf`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf_(
    id: *const i32,
    nj: *const i32,
    ni: *const i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: *const f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6calc_lasthalf_impl(*id, *nj, *ni, index, xi, vi, *eps2, h2, acc, jerk, pot) }
}

/// Fortran `g6calc_lasthalf2`.
///
/// # Safety
/// As `g6calc_lasthalf2`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf2_(
    id: *const i32,
    nj: *const i32,
    ni: *const i32,
    index: *const i32,
    xi: *const [f64; 3],
    vi: *const [f64; 3],
    eps2: *const f64,
    h2: *const f64,
    acc: *mut [f64; 3],
    jerk: *mut [f64; 3],
    pot: *mut f64,
    nnb: *mut i32,
) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6calc_lasthalf2_impl(*id, *nj, *ni, index, xi, vi, *eps2, h2, acc, jerk, pot, nnb) }
}

/// Fortran `g6_read_neighbour_list`.
///
/// # Safety
/// `id` points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_read_neighbour_list_(id: *const i32) -> i32 {
    // SAFETY: Fortran passes a valid reference.
    g6_read_neighbour_list_impl(unsafe { *id })
}

/// Fortran `g6_get_neighbour_list`.
///
/// # Safety
/// As `g6_get_neighbour_list`, scalars by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_get_neighbour_list_(
    id: *const i32,
    ipipe: *const i32,
    maxlength: *const i32,
    n_neighbours: *mut i32,
    list: *mut i32,
) -> i32 {
    // SAFETY: Fortran passes valid references.
    unsafe { g6_get_neighbour_list_impl(*id, *ipipe, *maxlength, n_neighbours, list) }
}
