//! Wrappers reach the executor inside: a [`Probe`] overrides every hook and records
//! which ones ran; [`every_door_reaches`] calls each door of a wrapper around a probe
//! and fails when a call ended anywhere but the probe's own hook for it (the trait's
//! default host loops, say, instead of a device's neighbour search).

use nbody_core::calls::{BatchCall, DirectCall, JerkCall, NeighboursCall, SnapCall};
use nbody_core::neighbours::{Nearest, Neighbours};
use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, Pair, Params, Particle, Reference, Span,
    Velocity,
};
use std::sync::{Arc, Mutex};

/// The hooks a probe saw, in order.
pub type Log = Arc<Mutex<Vec<&'static str>>>;

/// An executor that overrides every hook, records it, and computes with the reference.
#[derive(Debug, Default, Clone)]
pub struct Probe {
    /// The hooks reached so far.
    pub log: Log,
}

impl Probe {
    fn saw(&self, hook: &'static str) {
        self.log.lock().expect("probe log").push(hook);
    }
}

impl Executor<f64> for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, f64>) -> Result<(), Error> {
        self.saw("accelerations");
        // SAFETY: our caller met the contract, which is the reference's too.
        unsafe { Reference.accelerations_unchecked(call) }
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, f64>) -> Result<(), Error> {
        self.saw("jerk");
        // SAFETY: as above.
        unsafe { Reference.accelerations_jerk_unchecked(call) }
    }

    unsafe fn accelerations_jerk_neighbours_unchecked(
        &mut self,
        call: NeighboursCall<'_, '_, f64>,
    ) -> Result<(), Error> {
        self.saw("neighbours");
        // SAFETY: as above.
        unsafe { Reference.accelerations_jerk_neighbours_unchecked(call) }
    }

    unsafe fn accelerations_snap_unchecked(&mut self, call: SnapCall<'_, f64>) -> Result<(), Error> {
        self.saw("snap");
        // SAFETY: as above.
        unsafe { Reference.accelerations_snap_unchecked(call) }
    }

    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, f64>) -> Result<(), Error> {
        self.saw("batch");
        // SAFETY: as above.
        unsafe { Reference.accelerations_batch_unchecked(call) }
    }
}

/// Calls every door of `wrapper` (made around `probe`) once and checks that each call
/// reached exactly the probe's own hook for it, in order, and gave the reference's
/// answer. Returns a message naming the first door that went elsewhere.
///
/// ```
/// use nbody_conformance::wrappers::{every_door_reaches, Probe};
/// let probe = Probe::default();
/// let log = probe.log.clone();
/// every_door_reaches(Box::new(probe), &log).unwrap();
/// ```
pub fn every_door_reaches(mut wrapper: impl Executor<f64>, log: &Log) -> Result<(), String> {
    let inputs = Inputs::new();
    for (k, door) in DOORS.iter().enumerate() {
        inputs.call(&mut wrapper, k).map_err(|e| format!("{door}: {e}"))?;
    }
    let seen = log.lock().map_err(|_| "probe log poisoned".to_owned())?.clone();
    let want = DOORS;
    if seen != want {
        return Err(format!("{}: the doors reached {seen:?}, not the probe's own hooks {want:?}", wrapper.name()));
    }
    let (n, p) = (inputs.pos.len(), Params::softened(0.05).with_overlap_identical());
    let list = inputs.list();
    let mut reference = vec![Field::zero(); n];
    Reference.accelerations_batch(&inputs.pos, &list, &p, &mut reference).map_err(|e| e.to_string())?;
    let mut again = vec![Field::zero(); n];
    wrapper.accelerations_batch(&inputs.pos, &list, &p, &mut again).map_err(|e| e.to_string())?;
    if again != reference {
        return Err(format!("{}: the batch differs from the reference", wrapper.name()));
    }
    Ok(())
}

/// What a wrapper that splits its calls (over MPI ranks, say) does with each door.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// The call reaches the inner executor's own hook for it (perhaps several times,
    /// once per piece) and nothing else.
    Reaches,
    /// The wrapper refuses the call with [`Error::Unsupported`], before any work.
    Refused,
}

/// The doors in the order [`doors_reach`] calls them.
pub const DOORS: [&str; 5] = ["accelerations", "jerk", "neighbours", "snap", "batch"];

/// Calls each door of `wrapper` (made around a [`Probe`] whose log is `log`) and
/// checks it against `expect` (one entry per [`DOORS`] entry): a door that reaches the
/// inner executor succeeds with nothing but its own hook in the log; a refused door is
/// [`Error::Unsupported`] and reaches nothing. Returns how often each door reached the
/// probe: a wrapper that cuts a call into pieces (a ring over ranks) may reach it
/// several times, or not at all on a rank with no share, so under mpirun each rank
/// checks its own probe and the caller sums the counts over the ranks (each door that
/// reaches must reach somewhere).
///
/// ```
/// use nbody_conformance::wrappers::{doors_reach, Door, Probe};
/// let probe = Probe::default();
/// let log = probe.log.clone();
/// let counts = doors_reach(Box::new(probe), &log, [Door::Reaches; 5]).unwrap();
/// assert_eq!(counts, [1; 5]);
/// ```
pub fn doors_reach(mut wrapper: impl Executor<f64>, log: &Log, expect: [Door; 5]) -> Result<[usize; 5], String> {
    let mut counts = [0; 5];
    let inputs = Inputs::new();
    for (k, door) in DOORS.iter().enumerate() {
        log.lock().map_err(|_| "probe log poisoned".to_owned())?.clear();
        let r = inputs.call(&mut wrapper, k);
        let seen = log.lock().map_err(|_| "probe log poisoned".to_owned())?.clone();
        let name = wrapper.name();
        match (expect[k], r) {
            (Door::Reaches, Ok(())) if seen.iter().all(|s| s == door) => counts[k] = seen.len(),
            (Door::Reaches, r) => {
                return Err(format!("{name}: {door} gave {r:?} and reached {seen:?}, not the probe's own {door}"));
            }
            (Door::Refused, Err(Error::Unsupported { .. })) if seen.is_empty() => {}
            (Door::Refused, r) => {
                return Err(format!("{name}: {door} should be refused before any work: {r:?}, reached {seen:?}"));
            }
        }
    }
    Ok(counts)
}

/// The six particles every door is called with.
struct Inputs {
    pos: Vec<Particle<f64>>,
    vel: Vec<Velocity<f64>>,
    acc: Vec<Field<f64>>,
    pairs: [Pair; 1],
    spans: [Span; 1],
}

impl Inputs {
    fn new() -> Self {
        let n = 6;
        Self {
            pos: (0..n)
                .map(|i| Particle::new(i as f64, 0.5 * (i as f64).sin(), -0.25 * i as f64, 1.0 + i as f64))
                .collect(),
            vel: (0..n).map(|i| Velocity::new(0.1 * i as f64, 0.0, -0.2)).collect(),
            acc: (0..n).map(|i| Field::new(0.3, -0.1 * i as f64, 0.0, 0.0)).collect(),
            pairs: [Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 1) }],
            spans: [Span::new(0, n as u32)],
        }
    }

    fn list(&self) -> InteractionList<'_> {
        InteractionList { pairs: &self.pairs, source_spans: &self.spans }
    }

    /// Calls door `k` of [`DOORS`] on `wrapper` with fresh outputs.
    fn call(&self, wrapper: &mut impl Executor<f64>, k: usize) -> Result<(), Error> {
        let n = self.pos.len();
        let p = Params::softened(0.05).with_overlap_identical();
        let body = Bodies { pos: &self.pos, vel: &self.vel };
        let kin = Kinematics { pos: &self.pos, vel: &self.vel, acc: &self.acc };
        let mut out = vec![Field::zero(); n];
        let (mut jerk, mut snap) = (vec![Jerk::zero(); n], vec![Jerk::zero(); n]);
        let mut nearest = vec![Nearest::none(); n];
        let mut nb = Neighbours { nearest: &mut nearest, within: None, index_offset: 0 };
        match k {
            0 => wrapper.accelerations(&self.pos, &self.pos, &p, &mut out),
            1 => wrapper.accelerations_jerk(body, body, &p, &mut out, &mut jerk),
            2 => wrapper.accelerations_jerk_neighbours(body, body, &p, &mut out, &mut jerk, &mut nb),
            3 => wrapper.accelerations_snap(kin, kin, &p, &mut out, &mut jerk, &mut snap),
            _ => wrapper.accelerations_batch(&self.pos, &self.list(), &p, &mut out),
        }
    }
}
