//! The processes a command runs on: this one alone, or (built with the `mpi` feature and
//! started by `mpirun`) the ranks of an MPI job. Rank 0 owns the files and the terminal;
//! every collective step of a run goes through here, so the run loop reads the same
//! for one process and for many.

use super::files::Row;

/// One process, or the ranks of an MPI job.
pub struct Team {
    #[cfg(feature = "mpi")]
    mpi: Option<Mpi>,
    fault: Option<Fault>,
}

/// A failure the tests inject (`NBODY_FAULT=rank:step:error|panic|kill`): that rank
/// fails that way once its run has taken that many steps. How the tests check that the
/// other ranks stop within seconds instead of waiting for ever.
#[derive(Clone, Copy, Debug)]
struct Fault {
    rank: usize,
    step: u64,
    kind: FaultKind,
}

#[derive(Clone, Copy, Debug)]
enum FaultKind {
    Error,
    Panic,
    Kill,
}

impl Fault {
    fn from_env() -> Option<Self> {
        let v = std::env::var("NBODY_FAULT").ok()?;
        let mut it = v.split(':');
        let rank = it.next()?.parse().ok()?;
        let step = it.next()?.parse().ok()?;
        let kind = match it.next()? {
            "error" => FaultKind::Error,
            "panic" => FaultKind::Panic,
            "kill" => FaultKind::Kill,
            _ => return None,
        };
        Some(Self { rank, step, kind })
    }
}

#[cfg(feature = "mpi")]
struct Mpi {
    // Dropped last: finalises MPI.
    world: nbody_mpi::mpi::topology::SimpleCommunicator,
    _universe: nbody_mpi::mpi::environment::Universe,
}

/// An error already reported by another rank (or one this rank must not repeat): the
/// command exits with an error without printing it.
#[derive(Debug)]
pub struct ReportedElsewhere;

impl std::fmt::Display for ReportedElsewhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reported by another rank")
    }
}

impl std::error::Error for ReportedElsewhere {}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Team {{ rank: {}, size: {} }}", self.rank(), self.size())
    }
}

impl Team {
    /// This process alone.
    pub fn solo() -> Self {
        Self {
            #[cfg(feature = "mpi")]
            mpi: None,
            fault: Fault::from_env(),
        }
    }

    /// The MPI job this process was started in by `mpirun` (Open MPI, MPICH and PMIx
    /// launchers announce themselves in the environment), else this process alone. A
    /// panic on any rank then aborts the whole job, so no rank waits for a dead one.
    pub fn start() -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun()
            && let Some(universe) = nbody_mpi::mpi::initialize()
        {
            let world = universe.world();
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                hook(info);
                abort_job(101);
            }));
            return Self { mpi: Some(Mpi { world, _universe: universe }), fault: Fault::from_env() };
        }
        Self::solo()
    }

    /// This process's rank (0 alone).
    pub fn rank(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::traits::Communicator;
            return m.world.rank() as usize;
        }
        0
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::traits::Communicator;
            return m.world.size() as usize;
        }
        1
    }

    /// True on the rank that writes files and prints.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The world communicator, when running under MPI.
    #[cfg(feature = "mpi")]
    pub fn world(&self) -> Option<&nbody_mpi::mpi::topology::SimpleCommunicator> {
        self.mpi.as_ref().map(|m| &m.world)
    }

    /// True on every rank if `flag` is true on any (collective).
    pub fn any(&self, flag: bool) -> bool {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::collective::SystemOperation;
            use nbody_mpi::mpi::traits::CommunicatorCollectives;
            let mut any = 0u8;
            m.world.all_reduce_into(&u8::from(flag), &mut any, SystemOperation::max());
            return any != 0;
        }
        flag
    }

    /// `x` summed over the ranks (collective).
    pub fn sum(&self, x: f64) -> f64 {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::collective::SystemOperation;
            use nbody_mpi::mpi::traits::CommunicatorCollectives;
            let mut s = 0.0;
            m.world.all_reduce_into(&x, &mut s, SystemOperation::sum());
            return s;
        }
        x
    }

    /// Runs `f` on rank 0 and tells every rank whether it succeeded: rank 0 gets its
    /// result (its error is the one reported), the others `ReportedElsewhere` when it
    /// failed (collective).
    pub fn on_root<R>(&self, f: impl FnOnce() -> anyhow::Result<R>) -> anyhow::Result<Option<R>> {
        let result = if self.is_root() { Some(f()) } else { None };
        let failed = matches!(result, Some(Err(_)));
        if self.any(failed) {
            return Err(match result {
                Some(Err(e)) => e,
                _ => ReportedElsewhere.into(),
            });
        }
        Ok(result.map(|r| r.unwrap_or_else(|_| unreachable!("failures returned above"))))
    }

    /// Rank 0's rows on every rank (collective; `rows` is read on rank 0 only).
    pub fn broadcast_rows(&self, rows: Vec<Row>) -> Vec<Row> {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::traits::{Communicator, Root};
            let root = m.world.process_at_rank(0);
            let mut n = rows.len() as u64;
            root.broadcast_into(&mut n);
            let mut flat: Vec<f64> = if self.is_root() { rows.concat() } else { vec![0.0; 7 * n as usize] };
            root.broadcast_into(&mut flat[..]);
            return flat.chunks_exact(7).map(|r| core::array::from_fn(|k| r[k])).collect();
        }
        rows
    }

    /// Every rank's rows, in rank order, on every rank (collective).
    pub fn gather_rows(&self, mine: Vec<Row>) -> Vec<Row> {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::datatype::PartitionMut;
            use nbody_mpi::mpi::traits::CommunicatorCollectives;
            let mut counts = vec![0i32; self.size()];
            m.world.all_gather_into(&(7 * mine.len() as i32), &mut counts[..]);
            let displs: Vec<i32> = counts.iter().scan(0, |a, &c| Some(std::mem::replace(a, *a + c))).collect();
            let mut all = vec![0.0f64; counts.iter().map(|&c| c as usize).sum()];
            {
                let mut part = PartitionMut::new(&mut all[..], counts, &displs[..]);
                m.world.all_gather_varcount_into(&mine.concat()[..], &mut part);
            }
            return all.chunks_exact(7).map(|r| core::array::from_fn(|k| r[k])).collect();
        }
        mine
    }

    /// Every rank's words, in rank order, on every rank (collective).
    pub fn gather_words(&self, mine: Vec<u64>) -> Vec<Vec<u64>> {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self.mpi {
            use nbody_mpi::mpi::datatype::PartitionMut;
            use nbody_mpi::mpi::traits::CommunicatorCollectives;
            let mut counts = vec![0i32; self.size()];
            m.world.all_gather_into(&(mine.len() as i32), &mut counts[..]);
            let displs: Vec<i32> = counts.iter().scan(0, |a, &c| Some(std::mem::replace(a, *a + c))).collect();
            let mut all = vec![0u64; counts.iter().map(|&c| c as usize).sum()];
            {
                let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
                m.world.all_gather_varcount_into(&mine[..], &mut part);
            }
            return counts.iter().zip(&displs).map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec()).collect();
        }
        vec![mine]
    }

    /// Fails here if the tests asked this rank to (see `NBODY_FAULT`).
    #[doc(hidden)]
    pub fn fault_point(&self, steps: u64) -> anyhow::Result<()> {
        match self.fault {
            Some(f) if f.rank == self.rank() && steps >= f.step => match f.kind {
                FaultKind::Error => anyhow::bail!("injected failure after {steps} steps (NBODY_FAULT)"),
                FaultKind::Panic => panic!("injected panic after {steps} steps (NBODY_FAULT)"),
                FaultKind::Kill => {
                    // As a batch system or the OOM killer would: SIGKILL, no clean-up.
                    let _ = std::process::Command::new("kill").args(["-9", &std::process::id().to_string()]).status();
                    std::thread::sleep(std::time::Duration::from_secs(60));
                    anyhow::bail!("kill -9 did not kill this process")
                }
            },
            _ => Ok(()),
        }
    }

    /// This rank's share `start..end` of `n` particles (contiguous, even to one).
    pub fn share(&self, n: usize) -> std::ops::Range<usize> {
        let (r, p) = (self.rank(), self.size());
        n * r / p..n * (r + 1) / p
    }

    /// Ends the job after an error on this rank: under MPI every rank is stopped (a rank
    /// left waiting in a collective would hang); alone, nothing to do.
    pub fn fail(&self, code: i32) {
        #[cfg(feature = "mpi")]
        if self.size() > 1 {
            abort_job(code);
        }
        let _ = code;
    }
}

#[cfg(feature = "mpi")]
fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

#[cfg(feature = "mpi")]
fn abort_job(code: i32) {
    use nbody_mpi::mpi::traits::Communicator;
    if nbody_mpi::mpi::environment::is_initialized() && !nbody_mpi::mpi::environment::is_finalized() {
        nbody_mpi::mpi::topology::SimpleCommunicator::world().abort(code);
    }
}
