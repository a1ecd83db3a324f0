//! Every rank holds every particle; the work is split. For small systems, for codes that
//! replicate their data, and for the conformance suite, which calls an executor with
//! arrays every rank knows.

use crate::{Distributed, wire};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use nbody_core::calls::{BatchCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall, SnapCall};
use nbody_core::kernel::add_fields;
use nbody_core::projection::Projection;
use nbody_core::{Array, Bodies, Error, Executor, Field, InteractionList, Overlap, Pair, Particle, Real, validate};

/// An executor over ranks that all pass the **same** arrays: targets are cut into
/// uneven contiguous slices (rank `r` takes a share growing with `r`, so uneven and
/// empty slices are the normal case, not an edge), sources into slices aligned with the
/// overlap, the [`Distributed`] executor computes, and the slices are gathered back so
/// every rank ends with the whole output. Bad input is refused on every rank with the
/// same error any executor gives. Batched lists are split pair by pair.
///
/// Collective, like [`Distributed`].
#[derive(Debug)]
pub struct Replicated<E> {
    dist: Distributed<E>,
}

impl<E> Replicated<E> {
    /// Over the ranks of `dist`.
    pub fn new(dist: Distributed<E>) -> Self {
        Self { dist }
    }

    /// The distributed executor inside.
    pub fn distributed(&mut self) -> &mut Distributed<E> {
        &mut self.dist
    }
}

/// `r` on every rank when it succeeded on every rank; else this rank's own error, or
/// [`Error::Peer`] naming the lowest rank that failed (collective, so no rank goes on
/// alone after a failure elsewhere).
fn agree<E>(dist: &Distributed<E>, r: Result<(), Error>) -> Result<(), Error> {
    let mine = if r.is_err() { dist.rank() as i64 } else { i64::MAX };
    let mut lowest = mine;
    dist.comm().all_reduce_into(&mine, &mut lowest, SystemOperation::min());
    match (r, lowest) {
        (Err(e), _) => Err(e),
        (Ok(()), i64::MAX) => Ok(()),
        (Ok(()), rank) => Err(Error::Peer { rank: rank as usize }),
    }
}

/// Cut points `b[0] = 0 <= ... <= b[p] = n`, rank `r` weighted `r + 1`.
fn cuts(n: usize, p: usize) -> Vec<usize> {
    let total = p * (p + 1) / 2;
    (0..=p).map(|r| n * (r * (r + 1) / 2) / total).collect()
}

/// Source cut points aligned with `overlap` over target cuts `b`: the source shared with
/// each target lands on the target's rank, so every rank's overlap is local.
fn source_cuts(b: &[usize], overlap: &Overlap, n_targets: usize, n_sources: usize) -> Vec<usize> {
    let (t0, s0, len) = overlap.resolve(n_targets);
    if len == 0 {
        return cuts(n_sources, b.len() - 1).into_iter().rev().map(|c| n_sources - c).collect();
    }
    let p = b.len() - 1;
    (0..=p)
        .map(|r| match r {
            0 => 0,
            r if r == p => n_sources,
            r => s0 + b[r].clamp(t0, t0 + len) - t0,
        })
        .collect()
}

/// This rank's overlap: the shared targets of its target slice `t` whose sources lie in
/// its source slice `s` (with [`source_cuts`], all of its shared targets).
fn local_overlap(overlap: &Overlap, n_targets: usize, t: std::ops::Range<usize>, s: std::ops::Range<usize>) -> Overlap {
    let (t0, s0, len) = overlap.resolve(n_targets);
    // Target i is source s0 + i - t0: in `s` when i is in [s.start + t0 - s0, s.end + t0 - s0).
    let lo = t0.max(t.start).max((s.start + t0).saturating_sub(s0));
    let hi = (t0 + len).min(t.end).min((s.end + t0).saturating_sub(s0));
    if lo >= hi {
        return Overlap::Disjoint;
    }
    Overlap::Shared { target_start: lo - t.start, source_start: s0 + lo - t0 - s.start, len: hi - lo }
}

impl<E> Replicated<E> {
    fn slices(&self, n_t: usize, n_s: usize, overlap: &Overlap) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (p, r) = (self.dist.size(), self.dist.rank());
        let b = cuts(n_t, p);
        let c = source_cuts(&b, overlap, n_t, n_s);
        (b[r]..b[r + 1], c[r]..c[r + 1])
    }

    /// Every rank's slice of `out`, gathered back into `out` on every rank.
    fn gather<R: bytemuck::Pod>(&self, local: &[R], out: &mut [R]) {
        let b = cuts(out.len(), self.dist.size());
        let counts: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
        out.copy_from_slice(&wire::all_gather(self.dist.comm(), local, &counts));
    }
}

/// The trait's doors (every rank holds the same arrays, so every rank's checks and
/// early returns agree); the hooks split the work and run the [`Distributed`] doors.
impl<T: Real, E: Executor<T>> Executor<T> for Replicated<E> {
    fn name(&self) -> &'static str {
        "mpi-replicated"
    }

    /// The per-rank executor's, but the cells (the trait's loops on every rank) and the
    /// columns (refused).
    fn capabilities(&self) -> nbody_core::capabilities::Capabilities {
        use nbody_core::capabilities::{Capabilities, Entries, Entry};
        let inner = self.dist.inner.capabilities();
        let own = |inner: Entries, defaults: Entries| {
            let cells =
                if defaults.contains(Entry::Cells) { inner.with(Entry::Cells) } else { inner.without(Entry::Cells) };
            cells.without(Entry::Columns)
        };
        inner.map(|s, entries| own(entries, Capabilities::TRAIT_DEFAULTS.kernel(s)))
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let (t, s) = self.slices(targets.len(), sources.len(), &params.overlap);
        let local = params.with_overlap(local_overlap(&params.overlap, targets.len(), t.clone(), s.clone()));
        let mut mine = out[t.clone()].to_vec();
        self.dist.accelerations(&targets[t], &sources[s], &local, &mut mine)?;
        self.gather(&mine, out);
        Ok(())
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        let (n_t, n_s) = (targets.pos.len(), sources.pos.len());
        let (t, s) = self.slices(n_t, n_s, &params.overlap);
        let local = params.with_overlap(local_overlap(&params.overlap, n_t, t.clone(), s.clone()));
        let (mut mine, mut mine_j) = (out[t.clone()].to_vec(), jerk[t.clone()].to_vec());
        let tb = Bodies { pos: &targets.pos[t.clone()], vel: &targets.vel[t] };
        let sb = Bodies { pos: &sources.pos[s.clone()], vel: &sources.vel[s] };
        self.dist.accelerations_jerk(tb, sb, &local, &mut mine, &mut mine_j)?;
        self.gather(&mine, out);
        self.gather(&mine_j, jerk);
        Ok(())
    }

    /// Whole on every rank, by the per-rank executor's own neighbour search (every
    /// rank holds every particle; the lists are not split and gathered): a device keeps
    /// its search, and every rank ends with every target's lists.
    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        // SAFETY: the same call, the same contract (validated by the door).
        let r = unsafe { self.dist.inner_mut().accelerations_jerk_neighbours_unchecked(call) };
        agree(&self.dist, r)
    }

    /// Whole on every rank, by the per-rank executor's own snap (see the neighbour
    /// search above).
    unsafe fn accelerations_snap_unchecked(&mut self, call: SnapCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the same call, the same contract (validated by the door).
        let r = unsafe { self.dist.inner_mut().accelerations_snap_unchecked(call) };
        agree(&self.dist, r)
    }

    /// Each rank its slice of the targets with their lengths against every source (all
    /// ranks hold them all), on its own executor; the slices gathered.
    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        let b = cuts(targets.len(), self.dist.size());
        let t = b[self.dist.rank()]..b[self.dist.rank() + 1];
        let local = params.with_overlap(params.overlap.restrict_targets(targets.len(), t.clone()));
        let lengths = nbody_core::PerParticle { targets: &eps.targets[t.clone()], sources: eps.sources };
        let mut mine = out[t.clone()].to_vec();
        let outcome =
            self.dist.inner_mut().accelerations_per_particle(&targets[t], sources, lengths, &local, &mut mine);
        self.dist.agree_outcome(outcome)?;
        self.gather(&mine, out);
        Ok(())
    }

    /// Pair `k` runs on rank `k mod p` (the per-rank executor's batched path over the
    /// whole particle array); the ranks' outputs are summed.
    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        let (p, r) = (self.dist.size(), self.dist.rank());
        let pairs: Vec<Pair> = list.pairs.iter().skip(r).step_by(p).copied().collect();
        let mine = InteractionList { pairs: &pairs, source_spans: list.source_spans };
        let mut part = vec![Field::zero(); particles.len()];
        let outcome = self.dist.inner_mut().accelerations_batch(particles, &mine, params, &mut part);
        self.dist.agree_outcome(outcome)?;
        let flat: Vec<f64> = part.iter().flat_map(|f| [f.ax, f.ay, f.az, f.phi].map(Real::to_f64)).collect();
        let mut summed = vec![0.0; flat.len()];
        self.dist.comm().all_reduce_into(&flat[..], &mut summed[..], SystemOperation::sum());
        let c = T::from_f64;
        let total: Vec<Field<T>> = summed.chunks(4).map(|w| Field::new(c(w[0]), c(w[1]), c(w[2]), c(w[3]))).collect();
        add_fields(out, &total, params.potential);
        Ok(())
    }
}

impl<T: Real, E: Executor<T> + nbody_core::projection::Project<T>> nbody_core::projection::Project<T>
    for Replicated<E>
{
    /// Each rank deposits its slice of the particles; the maps are summed.
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        validate::particles(particles, Array::Particles)?;
        let b = cuts(particles.len(), self.dist.size());
        let r = self.dist.rank();
        self.dist.project(&particles[b[r]..b[r + 1]], projection, grid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_cover_and_skew() {
        assert_eq!(cuts(10, 4), vec![0, 1, 3, 6, 10]);
        assert_eq!(cuts(2, 4), vec![0, 0, 0, 1, 2]);
        assert_eq!(cuts(0, 3), vec![0, 0, 0, 0]);
    }

    #[test]
    fn shared_sources_land_with_their_targets() {
        let b = cuts(10, 3);
        let o = Overlap::Shared { target_start: 2, source_start: 5, len: 6 };
        let c = source_cuts(&b, &o, 10, 20);
        assert_eq!((c[0], c[3]), (0, 20));
        let mut covered = 0;
        for r in 0..3 {
            let local = local_overlap(&o, 10, b[r]..b[r + 1], c[r]..c[r + 1]);
            let (_, _, len) = local.resolve(b[r + 1] - b[r]);
            covered += len;
        }
        assert_eq!(covered, 6);
        let c = source_cuts(&b, &Overlap::Identical, 10, 10);
        assert_eq!(c, b);
    }
}
