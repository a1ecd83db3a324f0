//! The 2-D layout: ranks in `p_i` rows of `p_j`. Rank `(i, j)` pools the targets of
//! row `i` and the sources of column `j`, computes that block, and row `i` sums its
//! partial forces, so each rank's sources are split `p_j` ways (Miki et al. 2013,
//! section 4.2; the sum is the MPI library's all-reduce, recursive doubling or better).

use crate::ring::Work;
use crate::wire::{all_gather, check_count};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Overlap, Particle, Real};

/// The row and column communicators of one rank.
pub(crate) struct Grid {
    row: SimpleCommunicator,
    col: SimpleCommunicator,
    p_j: usize,
    i: usize,
    j: usize,
}

impl Grid {
    /// Collective over `comm`, whose size `p_j` divides.
    pub(crate) fn new(comm: &SimpleCommunicator, p_j: usize) -> Self {
        let r = comm.rank() as usize;
        let (i, j) = (r / p_j, r % p_j);
        Self { row: crate::split(comm, i, j), col: crate::split(comm, j, i), p_j, i, j }
    }

    /// As [`crate::ring::run`], over the grid.
    pub(crate) fn run<T: Real, E: Executor<T>>(&self, work: Work<'_, T, E>) -> Result<(), Error> {
        let Work { inner, counts, targets, sources, params, part, jerk, interactions } = work;
        let p_i = counts.len() / self.p_j;
        let row_targets: Vec<usize> = (0..self.p_j).map(|jj| counts[self.i * self.p_j + jj][0] as usize).collect();
        let col_sources: Vec<usize> = (0..p_i).map(|ii| counts[ii * self.p_j + self.j][1] as usize).collect();
        for &n in row_targets.iter().chain(&col_sources) {
            check_count::<Particle<T>>(n)?;
        }
        let pooled_t = all_gather(&self.row, targets.pos, &row_targets);
        let pooled_s = all_gather(&self.col, sources.pos, &col_sources);
        let with_vel = jerk.is_some();
        let (pooled_tv, pooled_sv) = if with_vel {
            (all_gather(&self.row, targets.vel, &row_targets), all_gather(&self.col, sources.vel, &col_sources))
        } else {
            (Vec::new(), Vec::new())
        };
        // Where this rank's own targets and sources sit in the pooled arrays: its overlap
        // moves there (the pooled targets of its row meet the pooled sources of its
        // column exactly in this rank's own particles).
        let t_off: usize = row_targets[..self.j].iter().sum();
        let s_off: usize = col_sources[..self.i].iter().sum();
        let overlap = match params.overlap {
            Overlap::Disjoint => Overlap::Disjoint,
            o => {
                let (t0, s0, len) = o.resolve(targets.pos.len());
                Overlap::Shared { target_start: t_off + t0, source_start: s_off + s0, len }
            }
        };
        let params = params.with_overlap(overlap);
        let n = pooled_t.len();
        let mut field = vec![Field::zero(); n];
        let mut jerks = vec![Jerk::zero(); if with_vel { n } else { 0 }];
        let outcome = if n == 0 || pooled_s.is_empty() {
            Ok(())
        } else {
            *interactions += n as f64 * pooled_s.len() as f64;
            let t = Bodies { pos: &pooled_t, vel: &pooled_tv };
            let s = Bodies { pos: &pooled_s, vel: &pooled_sv };
            if with_vel {
                inner.accelerations_jerk(t, s, &params, &mut field, &mut jerks)
            } else {
                inner.accelerations(&pooled_t, &pooled_s, &params, &mut field)
            }
        };
        // The row sums its partial forces whatever happened (a failed rank adds zeros),
        // so no rank waits; the caller agrees on the outcome afterwards.
        let width = if with_vel { 7 } else { 4 };
        let mut flat = vec![0.0f64; width * n];
        if outcome.is_ok() {
            for (k, f) in field.iter().enumerate() {
                flat[width * k..width * k + 4].copy_from_slice(&[f.ax, f.ay, f.az, f.phi].map(Real::to_f64));
                if with_vel {
                    let j = &jerks[k];
                    flat[width * k + 4..width * k + 7].copy_from_slice(&[j.jx, j.jy, j.jz].map(Real::to_f64));
                }
            }
        }
        let mut summed = vec![0.0f64; flat.len()];
        self.row.all_reduce_into(&flat[..], &mut summed[..], SystemOperation::sum());
        let mine = &summed[width * t_off..width * (t_off + targets.pos.len())];
        let c = T::from_f64;
        for (k, f) in part.iter_mut().enumerate() {
            let w = &mine[width * k..width * (k + 1)];
            *f = Field::new(c(w[0]), c(w[1]), c(w[2]), c(w[3]));
        }
        if let Some(jerk) = jerk {
            for (k, j) in jerk.iter_mut().enumerate() {
                let w = &mine[width * k + 4..width * k + 7];
                *j = Jerk::new(c(w[0]), c(w[1]), c(w[2]));
            }
        }
        outcome
    }
}
