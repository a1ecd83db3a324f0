//! The resident ring: each rank's system stays in its executor's memory (a GPU's) across
//! steps, and only sources travel. A field is this rank's own pull, computed where the
//! system lives while its positions go to the next rank, then each other rank's slice
//! as it arrives, added by [`ForeignSources::add_pull`] (queued on a GPU, so the next
//! message moves while it computes). Targets never go up again (only their positions
//! come down, once per field, as the slice this rank sends), and no field comes back
//! unless asked for.

use crate::Distributed;
use crate::ring::{Buffers, pass};
use nbody_core::resident::{ForeignSources, Resident};
use nbody_core::{Bodies, Error, Field, Params, Particle, Real, Velocity};

/// This rank's part of a system spread over the ranks of a [`Distributed`] executor:
/// its executor's own resident system, every rank's count, and the ring's buffers.
#[derive(Debug)]
pub struct DistributedState<S, T: Real> {
    inner: S,
    /// `(n, n)` of every rank, agreed when the system was uploaded.
    counts: Vec<[u64; 2]>,
    fresh: bool,
    /// Whether the field held has potentials.
    potential: bool,
    own: Vec<Particle<T>>,
    buffers: Buffers<T>,
}

impl<S, T: Real> DistributedState<S, T> {
    /// This rank's resident system, as its executor holds it.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Particles on this rank.
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// True when this rank holds no particles (other ranks may).
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// Particles over all ranks.
    pub fn total(&self) -> usize {
        self.counts.iter().map(|c| c[0] as usize).sum()
    }
}

/// A system spread over the ranks, each rank's slice resident in its executor (one GPU
/// per rank): the leapfrog of [`Resident::leapfrog_step`] runs on every rank in
/// lockstep, and each field is the pull of every rank's particles, passed around the
/// ring. Collective: [`Resident::upload_state`], [`Resident::compute_field`], and
/// whatever computes a stale field ([`Resident::leapfrog_step`],
/// [`Resident::download_field`]); the other calls are each rank's own. Errors are agreed
/// as for force calls: the failing rank gets its error, the others [`Error::Peer`].
///
/// ```no_run
/// use nbody_core::resident::{OnHost, Resident};
/// use nbody_core::{Field, Params};
/// use nbody_mpi::{Distributed, Scheme};
///
/// let universe = nbody_mpi::mpi::initialize().expect("MPI initialised once");
/// let mut exec = Distributed::new(OnHost::new(nbody_core::Reference), &universe.world(), Scheme::Ring)?;
/// let (all, vel) = nbody_integrators::ics::plummer::<f64>(1024, 1);
/// let share = 1024 * exec.rank() / exec.size()..1024 * (exec.rank() + 1) / exec.size();
/// let mut s = exec.upload_state(&all[share.clone()], &vel[share.clone()])?;
/// let params = Params::softened(0.01);
/// exec.leapfrog_step(&mut s, &params, 1.0 / 256.0)?;
/// let mut field = vec![Field::zero(); share.len()];
/// exec.download_field(&mut s, &params, &mut field)?; // the pull of all 1024
/// # Ok::<(), nbody_core::Error>(())
/// ```
impl<T: Real, E: ForeignSources<T>> Resident<T> for Distributed<E> {
    type State = DistributedState<E::State, T>;

    fn upload_state(&mut self, pos: &[Particle<T>], vel: &[Velocity<T>]) -> Result<Self::State, Error> {
        let made = self.inner.upload_state(pos, vel);
        let checked = made.as_ref().map(|_| ()).map_err(|e| *e);
        let counts = self.agree(checked, pos.len(), pos.len())?;
        let inner = made?;
        Ok(DistributedState {
            inner,
            counts,
            fresh: false,
            potential: false,
            own: vec![Particle::default(); pos.len()],
            buffers: Buffers::default(),
        })
    }

    fn download_state(
        &mut self,
        s: &Self::State,
        pos: &mut [Particle<T>],
        vel: &mut [Velocity<T>],
    ) -> Result<(), Error> {
        self.inner.download_state(&s.inner, pos, vel)
    }

    fn download_field(&mut self, s: &mut Self::State, params: &Params<T>, out: &mut [Field<T>]) -> Result<(), Error> {
        if !nbody_core::resident::field_aside(s.fresh, s.potential, params) {
            if !s.fresh {
                self.compute_field(s, params)?;
            }
            return self.inner.download_field(&mut s.inner, params, out);
        }
        // A potential the held field lacks: the ring computes it for this download, and
        // the field is stale afterwards, so the next step computes its own as it would
        // have (a run's bits do not depend on when its diagnostics ran).
        let got = self.compute_field(s, params).and_then(|()| self.inner.download_field(&mut s.inner, params, out));
        s.fresh = false;
        got
    }

    fn field_is_current(s: &Self::State) -> bool {
        s.fresh
    }

    fn compute_field(&mut self, s: &mut Self::State, params: &Params<T>) -> Result<(), Error> {
        s.fresh = false;
        // This rank's positions as a source slice (a rank that fails here still passes
        // the ring, with massless particles, and the agreement below fails every rank).
        let mut outcome = self.inner.download_sources(&s.inner, &mut s.own);
        if outcome.is_err() {
            s.own.iter_mut().for_each(|p| *p = Particle::default());
        }
        let n = s.own.len() as f64;
        let (inner, state, interactions) = (&mut self.inner, &mut s.inner, &mut self.interactions);
        let compute = |step: usize, src: Bodies<'_, T>| {
            if outcome.is_err() {
                return;
            }
            *interactions += n * src.pos.len() as f64;
            outcome =
                if step == 0 { inner.compute_field(state, params) } else { inner.add_pull(state, src.pos, params) };
        };
        let own = Bodies { pos: &s.own, vel: &[] };
        let passed = pass(&self.comm, &s.counts, own, false, &mut s.buffers, compute);
        let outcome = passed.and(outcome);
        self.agree_outcome(outcome)?;
        (s.fresh, s.potential) = (true, params.potential);
        Ok(())
    }

    fn kick(&mut self, s: &mut Self::State, h: T) -> Result<(), Error> {
        self.inner.kick(&mut s.inner, h)
    }

    fn drift(&mut self, s: &mut Self::State, h: T) -> Result<(), Error> {
        s.fresh = false;
        self.inner.drift(&mut s.inner, h)
    }

    fn len(s: &Self::State) -> usize {
        s.len()
    }

    fn time(s: &Self::State) -> f64 {
        E::time(&s.inner)
    }

    fn set_time(s: &mut Self::State, t: f64) {
        E::set_time(&mut s.inner, t)
    }
}
