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

/// Adds the pull of every rank's `sources` on this rank's `targets` into `part` (and
/// `jerk`, when asked: then the velocities travel too). `counts[r]` is rank `r`'s
/// `(targets, sources)`. A kernel failure stops the computing, not the passing, so no
/// rank waits for ever; the first failure is returned.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<T: Real, E: Executor<T>>(
    comm: &SimpleCommunicator,
    inner: &mut E,
    counts: &[[u64; 2]],
    targets: Bodies<'_, T>,
    sources: Bodies<'_, T>,
    params: &Params<T>,
    part: &mut [Field<T>],
    mut jerk: Option<&mut [Jerk<T>]>,
    interactions: &mut f64,
) -> Result<(), Error> {
    let (p, r) = (comm.size() as usize, comm.rank() as usize);
    let with_vel = jerk.is_some();
    let n_of = |q: usize| counts[q % p][1] as usize;
    let largest = (0..p).map(n_of).max().unwrap_or(0);
    check_count::<Particle<T>>(largest)?;
    let mut outcome = Ok(());
    let mut compute = |pos: &[Particle<T>], vel: &[Velocity<T>], overlap: Overlap| {
        if outcome.is_err() || pos.is_empty() || targets.pos.is_empty() {
            return;
        }
        let params = params.with_overlap(overlap);
        *interactions += targets.pos.len() as f64 * pos.len() as f64;
        outcome = match jerk.as_deref_mut() {
            Some(j) => inner.accelerations_jerk(targets, Bodies { pos, vel }, &params, part, j),
            None => inner.accelerations(targets.pos, pos, &params, part),
        };
    };
    if p == 1 {
        compute(sources.pos, sources.vel, params.overlap);
        return outcome;
    }
    let (next, prev) = (comm.process_at_rank(((r + 1) % p) as i32), comm.process_at_rank(((r + p - 1) % p) as i32));
    let vel_len = |n: usize| if with_vel { n } else { 0 };
    let (mut held, mut incoming) = (vec![Particle::<T>::default(); largest], vec![Particle::<T>::default(); largest]);
    let (mut held_v, mut incoming_v) =
        (vec![Velocity::<T>::default(); vel_len(largest)], vec![Velocity::<T>::default(); vel_len(largest)]);
    // Step k computes on the slice of rank r - k; all but the last pass it on.
    for k in 0..p {
        let here = n_of(r + p - k);
        let arriving = n_of(r + 2 * p - k - 1);
        let (send, send_v): (&[Particle<T>], &[Velocity<T>]) =
            if k == 0 { (sources.pos, sources.vel) } else { (&held[..here], &held_v[..vel_len(here)]) };
        let overlap = if k == 0 { params.overlap } else { Overlap::Disjoint };
        if k + 1 == p {
            compute(send, send_v, overlap);
            break;
        }
        mpi::request::scope(|scope| {
            let recv = prev.immediate_receive_into_with_tag(scope, bytes_mut(&mut incoming[..arriving]), POSITIONS);
            let sent = next.immediate_send_with_tag(scope, bytes(send), POSITIONS);
            let vel_reqs = with_vel.then(|| {
                (
                    prev.immediate_receive_into_with_tag(scope, bytes_mut(&mut incoming_v[..arriving]), VELOCITIES),
                    next.immediate_send_with_tag(scope, bytes(send_v), VELOCITIES),
                )
            });
            compute(send, send_v, overlap);
            recv.wait();
            sent.wait();
            if let Some((rv, sv)) = vel_reqs {
                rv.wait();
                sv.wait();
            }
        });
        std::mem::swap(&mut held, &mut incoming);
        std::mem::swap(&mut held_v, &mut incoming_v);
    }
    outcome
}
