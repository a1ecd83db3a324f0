//! # nbody-mpi
//!
//! Direct summation across processes through MPI (rsmpi on the system's MPI library),
//! after Miki et al. 2013, section 4. [`Distributed`] wraps any per-rank executor (CPU,
//! mixed, CUDA: each rank can drive its own GPU) and is itself an [`Executor`] whose
//! calls are *collective*: each rank passes the slice of targets and sources it owns,
//! and gets the pull of **every rank's** sources on its own targets.
//!
//! Two schemes ([`Scheme`]):
//! - **ring**: source slices travel around the ranks; each step's send and receive are
//!   posted before the local kernel call, so the transfer hides behind the compute;
//! - **2-D**: `p = p_i × p_j` ranks; the `p_j` ranks of a row pool their targets, each
//!   takes the sources of its column, and the row sums its partial forces (the MPI
//!   library's all-reduce). Fewer, larger messages: better when slices are small.
//!
//! [`Scheme::Auto`] (the default) picks by the rule in [`Scheme::resolve`].
//!
//! Bad input on any rank is caught before anything is computed: the rank that holds it
//! gets its own [`Error`] (naming the index in its slice), every other rank
//! [`Error::Peer`] naming the lowest failing rank, and no rank waits for ever. A failure
//! mid-call (a device error) is agreed the same way after the exchange completes, and
//! outputs are left untouched on every rank.
//!
//! A system that stays in the ranks' executors between steps (one GPU per rank) is the
//! **resident ring**: [`Distributed`] is [`nbody_core::resident::Resident`] when its
//! executor offers [`nbody_core::resident::ForeignSources`]; each rank's targets stay
//! where they are and only source slices travel ([`DistributedState`]).
//!
//! [`Replicated`] is the other way to use many ranks: every rank holds all particles
//! (a small system, or a code that replicates its data) and the work is split; it is
//! also what runs the conformance suite against [`Distributed`] with arrays that every
//! rank knows.
//!
//! ```no_run
//! use nbody_core::{Executor, Field, Params, Particle};
//! use nbody_mpi::{Distributed, Scheme};
//!
//! let universe = nbody_mpi::mpi::initialize().expect("MPI initialised once");
//! let world = universe.world();
//! let mut exec = Distributed::new(nbody_core::Reference, &world, Scheme::Auto).unwrap();
//! // This rank's slice of the system (here: one particle per rank on a line).
//! let mine = [Particle::new(exec.rank() as f64, 0.0, 0.0, 1.0)];
//! let mut out = [Field::zero(); 1];
//! let params = Params::softened(0.01).with_overlap_identical();
//! exec.accelerations(&mine, &mine, &params, &mut out).unwrap();
//! ```
#![warn(missing_docs)]

mod grid;
mod replicated;
mod resident;
mod ring;
mod wire;

pub use mpi;
pub use replicated::Replicated;
pub use resident::DistributedState;

use mpi::collective::SystemOperation;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;
use nbody_core::calls::{BatchCall, DirectCall, JerkCall, NeighboursCall, SnapCall, TidalCall, VjpBatchCall, VjpCall};
use nbody_core::collective::Collective;
use nbody_core::kernel::{add_fields, add_jerks};
use nbody_core::projection::Projection;
use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, Params, Particle, Real, Tidal, validate,
};

/// How a [`Distributed`] executor moves sources between ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Chosen per call by [`Scheme::resolve`].
    Auto,
    /// Source slices pass around the ranks, transfer overlapping the kernel.
    Ring,
    /// `size / source_groups` rows of `source_groups` ranks: each row pools its targets,
    /// its ranks split the sources and the row sums the partial forces.
    /// `source_groups` must divide the number of ranks.
    TwoD {
        /// `p_j`: ranks per row, i.e. how many parts the sources are split into.
        source_groups: usize,
    },
}

/// Below this many sources per rank, [`Scheme::Auto`] takes the 2-D scheme (where the
/// number of ranks allows one): a ring step of fewer sources than this computes for less
/// time than a message's latency costs, so the ring's `p - 1` latencies show; the 2-D
/// scheme pays `log p` latencies in its collectives instead. From the crossover measured
/// by `nbody-mpi-bench` (README, "Across machines").
pub const RING_MIN_SOURCES_PER_RANK: usize = 2048;

impl Scheme {
    /// The scheme a call with `n_sources` sources in all, over `ranks` ranks, uses:
    /// `Ring` and `TwoD` as given; `Auto` is the ring when each rank holds at least
    /// [`RING_MIN_SOURCES_PER_RANK`] sources or `ranks` has no factor `p_j` with
    /// `1 < p_j <= sqrt(ranks)`, else 2-D with the largest such `p_j`.
    ///
    /// ```
    /// use nbody_mpi::Scheme;
    /// assert_eq!(Scheme::Auto.resolve(1 << 20, 8), Scheme::Ring);
    /// assert_eq!(Scheme::Auto.resolve(4096, 8), Scheme::TwoD { source_groups: 2 });
    /// assert_eq!(Scheme::Auto.resolve(4096, 7), Scheme::Ring); // 7 is prime
    /// ```
    pub fn resolve(self, n_sources: usize, ranks: usize) -> Scheme {
        match self {
            Scheme::Auto => match square_factor(ranks) {
                Some(p_j) if n_sources < RING_MIN_SOURCES_PER_RANK * ranks => Scheme::TwoD { source_groups: p_j },
                _ => Scheme::Ring,
            },
            other => other,
        }
    }
}

/// The largest `p_j` with `1 < p_j <= sqrt(p)` dividing `p`.
fn square_factor(p: usize) -> Option<usize> {
    (2..=p).take_while(|d| d * d <= p).filter(|d| p.is_multiple_of(*d)).last()
}

/// An executor whose calls span the ranks of an MPI communicator: each rank passes the
/// targets and sources it owns and receives the pull of all ranks' sources on its
/// targets. Every entry point is collective (every rank calls it, in the same order).
///
/// `params.overlap` describes this rank's own targets and sources (for example
/// `Overlap::Identical` when each rank passes its particles as both): the self terms
/// are removed where a rank's targets meet its own sources.
pub struct Distributed<E> {
    inner: E,
    comm: SimpleCommunicator,
    scheme: Scheme,
    /// Row and column communicators of the 2-D layout, made when the scheme can use one.
    grid: Option<grid::Grid>,
    interactions: f64,
}

impl<E> std::fmt::Debug for Distributed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Distributed")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

impl<E> Distributed<E> {
    /// Wraps `inner` (this rank's executor) for the ranks of `comm` (duplicated, so the
    /// executor's messages never mix with the caller's). Collective.
    ///
    /// A `TwoD` scheme whose `source_groups` does not divide the number of ranks is an
    /// error (on every rank alike).
    pub fn new<C: Communicator>(inner: E, comm: &C, scheme: Scheme) -> Result<Self, Error> {
        let comm = comm.duplicate();
        let size = comm.size() as usize;
        let p_j = match scheme {
            Scheme::TwoD { source_groups } => {
                if source_groups == 0 || !size.is_multiple_of(source_groups) {
                    return Err(Error::InvalidParameter {
                        name: "source_groups",
                        requirement: "a divisor of the number of ranks",
                    });
                }
                Some(source_groups)
            }
            Scheme::Auto => square_factor(size),
            Scheme::Ring => None,
        };
        let grid =
            p_j.filter(|&p_j| p_j > 1 || matches!(scheme, Scheme::TwoD { .. })).map(|p_j| grid::Grid::new(&comm, p_j));
        Ok(Self { inner, comm, scheme, grid, interactions: 0.0 })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.comm.rank() as usize
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size() as usize
    }

    /// The scheme asked for.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The per-rank executor.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The per-rank executor, e.g. for a batched call on this rank's own list.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    /// The communicator the calls run on (a duplicate of the one given).
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Pair interactions this rank's executor has computed so far.
    pub fn interactions(&self) -> f64 {
        self.interactions
    }

    /// Agrees on a per-rank outcome: `Ok` on every rank only if it is `Ok` on every rank;
    /// else each failing rank keeps its own error and the others get [`Error::Peer`]
    /// naming the lowest failing rank. Also returns every rank's `(targets, sources)` counts, so
    /// one collective serves both.
    fn agree(&self, outcome: Result<(), Error>, n_targets: usize, n_sources: usize) -> Result<Vec<[u64; 2]>, Error> {
        let mine = [u64::from(outcome.is_err()), n_targets as u64, n_sources as u64];
        let mut all = vec![0u64; 3 * self.size()];
        self.comm.all_gather_into(&mine[..], &mut all[..]);
        outcome?;
        match all.chunks(3).position(|r| r[0] != 0) {
            None => Ok(all.chunks(3).map(|r| [r[1], r[2]]).collect()),
            Some(rank) => Err(Error::Peer { rank }),
        }
    }

    /// Agrees on an outcome only (see [`Distributed::agree`]).
    fn agree_outcome(&self, outcome: Result<(), Error>) -> Result<(), Error> {
        self.agree(outcome, 0, 0).map(|_| ())
    }

    fn resolved(&self, n_sources: usize) -> Scheme {
        let s = self.scheme.resolve(n_sources, self.size());
        match s {
            Scheme::TwoD { .. } if self.grid.is_none() => Scheme::Ring,
            s => s,
        }
    }
}

impl<E> Distributed<E> {
    /// One call on this rank's slices, with every rank: agree on this rank's checks
    /// (`checked`) and everyone's counts, run the scheme, agree on its outcome, and only
    /// then add into the outputs (`jerk` when the call has one).
    #[allow(clippy::too_many_arguments)] // a call's own arguments, plus its checks
    fn collective<T: Real>(
        &mut self,
        checked: Result<(), Error>,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: Option<&mut [Jerk<T>]>,
    ) -> Result<(), Error>
    where
        E: Executor<T>,
    {
        let counts = self.agree(checked, targets.pos.len(), sources.pos.len())?;
        let n_sources: usize = counts.iter().map(|c| c[1] as usize).sum();
        let mut part = vec![Field::zero(); targets.pos.len()];
        let mut jpart = jerk.as_ref().map(|_| vec![Jerk::zero(); targets.pos.len()]);
        let scheme = self.resolved(n_sources);
        let work = ring::Work {
            inner: &mut self.inner,
            counts: &counts,
            targets,
            sources,
            params,
            part: &mut part,
            jerk: jpart.as_deref_mut(),
            interactions: &mut self.interactions,
        };
        let outcome = match scheme {
            Scheme::TwoD { .. } => self.grid.as_ref().expect("resolved only with a grid").run(work),
            _ => ring::run(&self.comm, work),
        };
        self.agree_outcome(outcome)?;
        add_fields(out, &part, params.potential);
        if let (Some(jerk), Some(jpart)) = (jerk, jpart) {
            add_jerks(jerk, &jpart);
        }
        Ok(())
    }
}

/// Why a [`Distributed`] executor refuses an entry point.
fn unsupported(operation: &'static str) -> Error {
    let reason = match operation {
        "accelerations_batch" => {
            "a list indexes one particle array, which no rank holds whole: run each rank's list on inner_mut(), or use Replicated"
        }
        "accelerations_snap" => "the snap's source accelerations are not passed between ranks yet: use Replicated",
        "accelerations_tidal" | "vjp" | "vjp_batch" => {
            "the gradients' passes are not collectives yet (each rank holds a share of the sources): use Replicated"
        }
        _ => "neighbours are not gathered across ranks yet: use Replicated, or the per-rank executor",
    };
    Error::Unsupported { operation, reason }
}

/// Overrides the doors: a rank takes part in every call, even with no targets or
/// sources of its own (the others need its sources, or its share of a collective), and
/// the ranks agree on errors. The hooks run the same collective with this rank's checks
/// taken as passed. Neighbours, interaction lists and the snap are refused alike on
/// every rank.
impl<T: Real, E: Executor<T>> Executor<T> for Distributed<E> {
    fn name(&self) -> &'static str {
        "mpi"
    }

    /// The plain and jerk calls are collectives over the inner executor's (its kernels
    /// there); the cells and per-particle calls run the trait's loops on this rank's
    /// share; neighbours, the snap, batches and columns are refused.
    fn capabilities(&self) -> nbody_core::capabilities::Capabilities {
        use nbody_core::capabilities::{Capabilities, Entries, Entry};
        let inner = self.inner.capabilities();
        let own = |inner: Entries, defaults: Entries| {
            [Entry::Accelerations, Entry::Jerk]
                .into_iter()
                .filter(|e| inner.contains(*e))
                .chain([Entry::Cells, Entry::PerParticle].into_iter().filter(|e| defaults.contains(*e)))
                .fold(Entries::NONE, Entries::with)
        };
        inner.map(|s, entries| own(entries, Capabilities::TRAIT_DEFAULTS.kernel(s)))
    }

    fn accelerations(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        let checked = validate::call(targets, sources, params, out.len());
        let (t, s) = (Bodies { pos: targets, vel: &[] }, Bodies { pos: sources, vel: &[] });
        self.collective(checked, t, s, params, out, None)
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let (t, s) = (Bodies { pos: targets, vel: &[] }, Bodies { pos: sources, vel: &[] });
        self.collective(Ok(()), t, s, params, out, None)
    }

    fn accelerations_jerk(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        let checked = validate::jerk_call(&targets, &sources, params, out.len(), jerk.len());
        self.collective(checked, targets, sources, params, out, Some(jerk))
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        self.collective(Ok(()), targets, sources, params, out, Some(jerk))
    }

    /// Refused: neighbour indices would name positions in slices other ranks hold.
    fn accelerations_jerk_neighbours(
        &mut self,
        _targets: Bodies<'_, T>,
        _sources: Bodies<'_, T>,
        _params: &Params<T>,
        _out: &mut [Field<T>],
        _jerk: &mut [Jerk<T>],
        _neighbours: &mut nbody_core::neighbours::Neighbours<'_, T>,
    ) -> Result<(), Error> {
        Err(unsupported("accelerations_jerk_neighbours"))
    }

    unsafe fn accelerations_jerk_neighbours_unchecked(
        &mut self,
        _call: NeighboursCall<'_, '_, T>,
    ) -> Result<(), Error> {
        Err(unsupported("accelerations_jerk_neighbours"))
    }

    /// Refused: the snap needs every rank's source accelerations, which the ring and
    /// the 2-D scheme do not carry (the trait's plain loops would see this rank's only).
    fn accelerations_snap(
        &mut self,
        _targets: Kinematics<'_, T>,
        _sources: Kinematics<'_, T>,
        _params: &Params<T>,
        _out: &mut [Field<T>],
        _jerk: &mut [Jerk<T>],
        _snap: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        Err(unsupported("accelerations_snap"))
    }

    unsafe fn accelerations_snap_unchecked(&mut self, _call: SnapCall<'_, T>) -> Result<(), Error> {
        Err(unsupported("accelerations_snap"))
    }

    /// Refused: the trait's loops would see this rank's sources only.
    fn accelerations_tidal(
        &mut self,
        _targets: &[Particle<T>],
        _sources: &[Particle<T>],
        _params: &Params<T>,
        _out: &mut [Field<T>],
        _tidal: &mut [Tidal<T>],
    ) -> Result<(), Error> {
        Err(unsupported("accelerations_tidal"))
    }

    unsafe fn accelerations_tidal_unchecked(&mut self, _call: TidalCall<'_, T>) -> Result<(), Error> {
        Err(unsupported("accelerations_tidal"))
    }

    /// Refused, as the tidal call is.
    fn vjp(
        &mut self,
        _targets: &[Particle<T>],
        _sources: &[Particle<T>],
        _params: &Params<T>,
        _cotangents: &[Field<T>],
        _target_grads: &mut [Particle<T>],
        _source_grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        Err(unsupported("vjp"))
    }

    unsafe fn vjp_unchecked(&mut self, _call: VjpCall<'_, T>) -> Result<(), Error> {
        Err(unsupported("vjp"))
    }

    /// Refused, as the tidal call is.
    fn vjp_batch(
        &mut self,
        _particles: &[Particle<T>],
        _list: &InteractionList<'_>,
        _params: &Params<T>,
        _cotangents: &[Field<T>],
        _grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        Err(unsupported("vjp_batch"))
    }

    unsafe fn vjp_batch_unchecked(&mut self, _call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        Err(unsupported("vjp_batch"))
    }

    /// Refused: an interaction list indexes one particle array, which no rank holds
    /// whole. Each rank's own list runs on [`Distributed::inner_mut`]; [`Replicated`]
    /// splits a list over ranks that all hold the particles.
    fn accelerations_batch(
        &mut self,
        _particles: &[Particle<T>],
        _list: &InteractionList<'_>,
        _params: &Params<T>,
        _out: &mut [Field<T>],
    ) -> Result<(), Error> {
        Err(unsupported("accelerations_batch"))
    }

    unsafe fn accelerations_batch_unchecked(&mut self, _call: BatchCall<'_, T>) -> Result<(), Error> {
        Err(unsupported("accelerations_batch"))
    }

    fn collective(&mut self) -> Option<&mut dyn Collective> {
        Some(self)
    }
}

/// Reductions over the communicator's ranks (`MPI_Allreduce`).
impl<E> Collective for Distributed<E> {
    fn min(&mut self, x: f64) -> f64 {
        let mut m = x;
        self.comm.all_reduce_into(&x, &mut m, SystemOperation::min());
        m
    }

    fn sum(&mut self, values: &mut [f64]) {
        let mine = values.to_vec();
        self.comm.all_reduce_into(&mine[..], values, SystemOperation::sum());
    }
}

impl<T: Real, E: Executor<T> + nbody_core::projection::Project<T>> nbody_core::projection::Project<T>
    for Distributed<E>
{
    /// Adds the mass of every rank's `particles` into `grid`, on every rank.
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        let mut mine = vec![0.0; grid.len()];
        let outcome = self.inner.project(particles, projection, &mut mine);
        self.agree_outcome(outcome)?;
        let mut all = vec![0.0; grid.len()];
        self.comm.all_reduce_into(&mine[..], &mut all[..], SystemOperation::sum());
        grid.iter_mut().zip(&all).for_each(|(g, a)| *g += a);
        Ok(())
    }
}

/// A communicator of the ranks with the same `color`, ordered by `key`.
fn split(comm: &SimpleCommunicator, color: usize, key: usize) -> SimpleCommunicator {
    comm.split_by_color_with_key(Color::with_value(color as i32), key as i32)
        .expect("every rank has a colour, so every rank gets a communicator")
}
