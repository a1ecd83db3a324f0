//! The ring: each rank's source slice visits every rank. A step posts the send of the
//! slice in hand to the next rank and the receive of the next slice from the previous
//! one, then computes on the slice in hand, so the transfer hides behind the kernel
//! (Miki et al. 2013, section 4.1).

use crate::wire::{bytes, bytes_mut, check_count};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Overlap, Params, Particle, Real, Velocity};

const POSITIONS: i32 = 11;
const VELOCITIES: i32 = 12;

/// The two slices a ring step holds (the one in hand and the one arriving), kept between
/// calls by a resident system so a step does not allocate.
#[derive(Debug, Default)]
pub(crate) struct Buffers<T: Real> {
    pos: [Vec<Particle<T>>; 2],
    vel: [Vec<Velocity<T>>; 2],
}

impl<T: Real> Buffers<T> {
    /// Room for `n` particles in each slice (and velocities when `with_vel`).
    fn reserve(&mut self, n: usize, with_vel: bool) {
        for p in &mut self.pos {
            p.resize(n.max(p.len()), Particle::default());
        }
        let nv = if with_vel { n } else { 0 };
        for v in &mut self.vel {
            v.resize(nv.max(v.len()), Velocity::default());
        }
    }
}

/// One collective call's work on this rank: the executor inside, every rank's
/// `(targets, sources)` counts, this rank's targets and sources, the parameters, and
/// where the pull (`part`, and `jerk` when asked) and the interactions computed are added.
pub(crate) struct Work<'w, T: Real, E> {
    pub inner: &'w mut E,
    pub counts: &'w [[u64; 2]],
    pub targets: Bodies<'w, T>,
    pub sources: Bodies<'w, T>,
    pub params: &'w Params<T>,
    pub part: &'w mut [Field<T>],
    pub jerk: Option<&'w mut [Jerk<T>]>,
    pub interactions: &'w mut f64,
}

/// Adds the pull of every rank's `sources` on this rank's `targets` into `part` (and
/// `jerk`, when asked: then the velocities travel too). `counts[r]` is rank `r`'s
/// `(targets, sources)`. A kernel failure stops the computing, not the passing, so no
/// rank waits for ever; the first failure is returned.
pub(crate) fn run<T: Real, E: Executor<T>>(comm: &SimpleCommunicator, work: Work<'_, T, E>) -> Result<(), Error> {
    let Work { inner, counts, targets, sources, params, part, mut jerk, interactions } = work;
    let with_vel = jerk.is_some();
    let mut outcome = Ok(());
    let compute = |step: usize, src: Bodies<'_, T>| {
        if outcome.is_err() || src.pos.is_empty() || targets.pos.is_empty() {
            return;
        }
        let params = params.with_overlap(if step == 0 { params.overlap } else { Overlap::Disjoint });
        *interactions += targets.pos.len() as f64 * src.pos.len() as f64;
        outcome = match jerk.as_deref_mut() {
            Some(j) => inner.accelerations_jerk(targets, src, &params, part, j),
            None => inner.accelerations(targets.pos, src.pos, &params, part),
        };
    };
    pass(comm, counts, sources, with_vel, &mut Buffers::default(), compute)?;
    outcome
}

/// Passes every rank's source slice (`counts[r][1]` particles on rank `r`; this rank's
/// is `own`, with its velocities when `with_vel`) around the ring: `compute(k, slice)`
/// runs once per step `k` on rank `r - k`'s slice (`k = 0`: `own`), after that step's
/// send and receive are posted, so they travel while it computes. Every step passes
/// whatever `compute` does, so a rank whose computing failed still passes its slices
/// and no rank waits for ever.
pub(crate) fn pass<T: Real>(
    comm: &SimpleCommunicator,
    counts: &[[u64; 2]],
    own: Bodies<'_, T>,
    with_vel: bool,
    buffers: &mut Buffers<T>,
    mut compute: impl FnMut(usize, Bodies<'_, T>),
) -> Result<(), Error> {
    let (p, r) = (comm.size() as usize, comm.rank() as usize);
    let n_of = |q: usize| counts[q % p][1] as usize;
    let largest = (0..p).map(n_of).max().unwrap_or(0);
    check_count::<Particle<T>>(largest)?;
    if p == 1 {
        compute(0, own);
        return Ok(());
    }
    let (next, prev) = (comm.process_at_rank(((r + 1) % p) as i32), comm.process_at_rank(((r + p - 1) % p) as i32));
    let vel_len = |n: usize| if with_vel { n } else { 0 };
    buffers.reserve(largest, with_vel);
    let Buffers { pos: [held, incoming], vel: [held_v, incoming_v] } = buffers;
    // Step k computes on the slice of rank r - k; all but the last pass it on.
    for k in 0..p {
        let here = n_of(r + p - k);
        let arriving = n_of(r + 2 * p - k - 1);
        let send = if k == 0 { own } else { Bodies { pos: &held[..here], vel: &held_v[..vel_len(here)] } };
        if k + 1 == p {
            compute(k, send);
            break;
        }
        mpi::request::scope(|scope| {
            let recv = prev.immediate_receive_into_with_tag(scope, bytes_mut(&mut incoming[..arriving]), POSITIONS);
            let sent = next.immediate_send_with_tag(scope, bytes(send.pos), POSITIONS);
            let vel_reqs = with_vel.then(|| {
                (
                    prev.immediate_receive_into_with_tag(scope, bytes_mut(&mut incoming_v[..arriving]), VELOCITIES),
                    next.immediate_send_with_tag(scope, bytes(send.vel), VELOCITIES),
                )
            });
            compute(k, send);
            recv.wait();
            sent.wait();
            if let Some((rv, sv)) = vel_reqs {
                rv.wait();
                sv.wait();
            }
        });
        std::mem::swap(held, incoming);
        std::mem::swap(held_v, incoming_v);
    }
    Ok(())
}
