//! What `nbody run` drives: the library's simulations ([`crate::simulation`]), and
//! under MPI one whose particles are spread over the ranks.

pub(super) use crate::simulation::{InUnits, Row, Simulation, rows};
#[cfg(feature = "mpi")]
use crate::simulation::{SPLIT, split_refused as not_gathered, take_share};
#[cfg(feature = "mpi")]
use nbody_core::Error;
#[cfg(feature = "mpi")]
use nbody_core::projection::Projection;
#[cfg(feature = "mpi")]
use nbody_integrators::{Arrays, Diagnostics, Words};

/// A simulation whose particles are spread over the ranks of a [`super::team::Team`]:
/// snapshots gather every rank's rows (in rank order) onto every rank, and so do
/// checkpoints, which can resume on another number of ranks.
#[cfg(feature = "mpi")]
pub(super) struct Gathered<'a> {
    /// This rank's part.
    pub sim: Box<dyn Simulation + 'a>,
    /// The ranks.
    pub team: &'a super::team::Team,
    /// Particles over all ranks.
    pub n: usize,
}

#[cfg(feature = "mpi")]
impl Simulation for Gathered<'_> {
    fn time(&self) -> f64 {
        self.sim.time()
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        self.sim.step(until)
    }

    fn steps(&self) -> u64 {
        self.sim.steps()
    }

    fn interactions(&self) -> f64 {
        self.sim.interactions()
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        self.sim.diagnostics()
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        let mine = self.sim.snapshot()?;
        Ok(self.team.gather_rows(mine))
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.sim.project(projection, grid)
    }

    /// Every rank's shared words and every per-particle array, gathered in rank order
    /// (so particle order): `SPLIT`, the rank count, the particle count, each rank's
    /// shared words (count, words), then each array (count, words). Collective.
    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        let Some((shared, arrays)) = self.sim.save_split()? else { return Ok(None) };
        let mut w = vec![SPLIT, self.team.size() as u64, self.n as u64];
        for words in self.team.gather_words(shared) {
            w.push(words.len() as u64);
            w.extend(words);
        }
        w.push(arrays.len() as u64);
        for a in arrays {
            let all = self.team.gather_words(a).concat();
            w.push(all.len() as u64);
            w.extend(all);
        }
        Ok(Some(w))
    }

    /// This rank's share of a gathered checkpoint (see [`take_share`]).
    fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        if w.word()? != SPLIT {
            return Err(not_gathered());
        }
        let (own, mine) = take_share(w, self.team.size(), self.team.rank(), Some(self.n))?;
        let parts: Vec<&[u64]> = mine.iter().map(Vec::as_slice).collect();
        self.sim.restore_split(&mut Words::new(&own), &mut Arrays::new(&parts))
    }
}
