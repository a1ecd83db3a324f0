//! A system on the host, stepped by any integrator over any executor's forces.

use super::split::{SPLIT, Share, take_share};
use super::{Row, Simulation, rows};
use nbody_core::forward::Counted;
use nbody_core::neighbours::{Nearest, Neighbours, Within};
use nbody_core::projection::{Project, Projecting, Projection};
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Params, Real};
use nbody_integrators::{Arrays, Checkpoint, Diagnostics, Integrator, State, Words};

/// A system on the host, any integrator, any executor.
pub struct Host<T: Real, E: ?Sized> {
    state: State<T>,
    integrator: Box<dyn Integrator<T> + Send>,
    exec: Counted<Box<E>>,
    steps: u64,
}

impl<T: Real, E: ?Sized> std::fmt::Debug for Host<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Host {{ {}, {} particles, t = {} }}", self.integrator.name(), self.state.len(), self.state.time)
    }
}

impl<T: Real, E: Projecting<T> + ?Sized> Host<T, E> {
    /// A simulation of `state` advanced by `integrator` with forces from `exec`.
    pub fn new(state: State<T>, integrator: Box<dyn Integrator<T> + Send>, exec: Box<E>) -> Self {
        Self { state, integrator, exec: Counted::new(exec), steps: 0 }
    }

    /// For a distributed executor: each call's sources are this rank's share of `n`.
    pub fn with_all_sources(mut self, n: usize) -> Self {
        self.exec.all_sources = Some(n);
        self
    }
}

impl<T: Real, E: Projecting<T> + ?Sized> Simulation for Host<T, E> {
    fn time(&self) -> f64 {
        self.state.time
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        let (s, e) = (&mut self.state, &mut self.exec);
        if !self.integrator.reached(s, until) {
            self.steps += self.integrator.step_towards(s, e, until)?;
        }
        Ok(self.integrator.reached(s, until))
    }

    fn steps(&self) -> u64 {
        self.steps
    }

    fn interactions(&self) -> f64 {
        self.exec.interactions
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        self.integrator.diagnostics(&self.state, &mut self.exec)
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        Ok(rows(&self.state.pos, &self.state.vel))
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.exec.project(&self.state.pos, projection, grid)
    }

    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        let mut w = vec![self.steps, self.exec.interactions.to_bits()];
        self.state.save(&mut w);
        self.integrator.save(&mut w);
        Ok(Some(w))
    }

    /// Also takes a checkpoint gathered from MPI ranks (the whole system, in one process).
    fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        self.steps = w.word()?;
        if self.steps == SPLIT {
            let (own, all) = take_share(w, 1, 0, None)?;
            let parts: Vec<&[u64]> = all.iter().map(Vec::as_slice).collect();
            return self.restore_split(&mut Words::new(&own), &mut Arrays::new(&parts));
        }
        self.exec.interactions = w.f64()?;
        self.state.restore(w)?;
        self.integrator.restore(w)
    }

    fn touching(&mut self, radii: &[f64]) -> Result<Vec<[u32; 2]>, Error> {
        touching(&mut self.exec, &self.state, radii)
    }

    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        let (mut shared, mut arrays) = (vec![self.steps, self.exec.interactions.to_bits()], Vec::new());
        self.state.save_split(&mut shared, &mut arrays);
        self.integrator.save_split(&mut shared, &mut arrays);
        Ok(Some((shared, arrays)))
    }

    fn restore_split(&mut self, w: &mut Words<'_>, a: &mut Arrays<'_>) -> Result<(), Error> {
        self.steps = w.word()?;
        self.exec.interactions = w.f64()?;
        self.state.restore_split(w, a)?;
        self.integrator.restore_split(w, a)
    }
}

/// Pairs `(i, j)`, `i < j`, of `s` whose unsoftened distance is below `radii[i] +
/// radii[j]`, from the neighbour search of `exec` (on the GPU for a CUDA executor):
/// every particle asks for the sources within its radius plus the largest radius, a few
/// slots each; a particle whose list overflows is searched again on its own.
pub(super) fn touching<T: Real>(
    exec: &mut (impl Executor<T> + ?Sized),
    s: &State<T>,
    radii: &[f64],
) -> Result<Vec<[u32; 2]>, Error> {
    /// Slots per particle: contacts are rare, so lists are short.
    const SLOTS: usize = 8;
    let n = s.pos.len();
    if radii.len() != n {
        return Err(Error::InvalidParameter { name: "radii", requirement: "one per particle" });
    }
    if radii.iter().any(|r| !(r.is_finite() && *r >= 0.0)) {
        return Err(Error::InvalidParameter { name: "radii", requirement: "finite and not negative" });
    }
    let largest = radii.iter().copied().fold(0.0, f64::max);
    // A margin over the contact distance, so rounding in `T` loses no pair; the test
    // below is in f64.
    let reach = |r: f64| (r + largest) * (1.0 + 1e-3);
    let radius2: Vec<T> = radii.iter().map(|&r| T::from_f64(reach(r) * reach(r))).collect();
    let (mut indices, mut counts) = (vec![0u32; n * SLOTS], vec![0u32; n]);
    let mut nearest = vec![Nearest::none(); n];
    let mut nb = Neighbours {
        nearest: &mut nearest,
        within: Some(Within { radius2: &radius2, capacity: SLOTS, indices: &mut indices, counts: &mut counts }),
        index_offset: 0,
    };
    let (mut field, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
    // Forces are thrown away; a unit softening keeps coincident particles finite.
    let params = Params::softened(T::one()).with_overlap_identical();
    let bodies = Bodies { pos: &s.pos, vel: &s.vel };
    exec.accelerations_jerk_neighbours(bodies, bodies, &params, &mut field, &mut jerk, &mut nb)?;
    let within = nb.within.as_ref().expect("asked for lists");
    let x = |i: usize| s.pos[i].position().map(Real::to_f64);
    let touch = |i: usize, j: usize| {
        let (a, b) = (x(i), x(j));
        let d2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        d2 < (radii[i] + radii[j]).powi(2)
    };
    let mut pairs = Vec::new();
    for i in 0..n {
        if within.overflowed(i) {
            pairs.extend((i + 1..n).filter(|&j| touch(i, j)).map(|j| [i as u32, j as u32]));
        } else {
            let mut mine: Vec<u32> =
                within.list(i).iter().copied().filter(|&j| j as usize > i && touch(i, j as usize)).collect();
            mine.sort_unstable();
            pairs.extend(mine.into_iter().map(|j| [i as u32, j]));
        }
    }
    Ok(pairs)
}
