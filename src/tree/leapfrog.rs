//! The leapfrog over the tree: forces from [`BarnesHut`] on any executor, as an
//! [`Integrator`], so every driver that steps integrators (the command, Python) steps it.

use super::BarnesHut;
use nbody_core::stepping::{KickDrift, kick, kick_drift_kick};
use nbody_core::{Error, Executor, Field, Params, Real, Softening};
use nbody_integrators::{Checkpoint, Diagnostics, Integrator, Sink, Source, State, diagnostics};

/// Kick-drift-kick with a fixed step whose forces are a Barnes-Hut tree's (built and
/// walked on the host, the leaves on the executor). It keeps the last field, so a step
/// costs one tree force, and with [`nbody_core::cell::Criterion::Relative`] that field scales the next
/// force's opening test. Energies ([`Integrator::diagnostics`]) use the tree's potential.
///
/// ```
/// use nbody::core::Reference;
/// use nbody::integrators::{ics, Integrator, State};
/// use nbody::tree::{BarnesHut, TreeLeapfrog};
/// let (p, v) = ics::plummer::<f64>(500, 1);
/// let mut s = State::new(p, v);
/// let mut lf = TreeLeapfrog::new(BarnesHut::for_cpu(0.5), 1.0 / 128.0, 0.01)?;
/// let e0 = lf.diagnostics(&s, &mut Reference)?.total;
/// lf.advance_to(&mut s, &mut Reference, 0.125)?;
/// let e1 = lf.diagnostics(&s, &mut Reference)?.total;
/// assert!(((e1 - e0) / e0).abs() < 1e-3);
/// # Ok::<(), nbody::Error>(())
/// ```
#[derive(Debug)]
pub struct TreeLeapfrog<T: Real> {
    bh: BarnesHut,
    dt: f64,
    params: Params<T>,
    /// The field at the current positions when `fresh`; at the last ones otherwise (the
    /// relative criterion's scale) when `computed`.
    field: Vec<Field<T>>,
    spare: Vec<Field<T>>,
    fresh: bool,
    computed: bool,
    /// Particle and cell interactions summed over every force.
    interactions: f64,
}

impl<T: Real> TreeLeapfrog<T> {
    /// A leapfrog of step `dt` (finite, non-zero) with forces from `bh` softened by
    /// `eps` (Plummer unless [`TreeLeapfrog::with_softening`] says otherwise).
    pub fn new(bh: BarnesHut, dt: f64, eps: T) -> Result<Self, Error> {
        if !(dt.is_finite() && dt != 0.0) {
            return Err(Error::InvalidParameter { name: "dt", requirement: "finite and non-zero" });
        }
        bh.check()?;
        let params = Params::softened(eps).with_overlap_identical();
        nbody_core::validate::params(&params)?;
        Ok(Self {
            bh,
            dt,
            params,
            field: Vec::new(),
            spare: Vec::new(),
            fresh: false,
            computed: false,
            interactions: 0.0,
        })
    }

    /// The same leapfrog with the softening kernel `softening` for every force.
    pub fn with_softening(mut self, softening: Softening) -> Self {
        self.params.softening = softening;
        self
    }

    /// The tree's settings.
    pub fn tree(&self) -> &BarnesHut {
        &self.bh
    }

    /// Particle and cell interactions summed over every force so far.
    pub fn interactions(&self) -> f64 {
        self.interactions
    }

    fn force<E: Executor<T> + ?Sized>(&mut self, s: &State<T>, e: &mut E) -> Result<(), Error> {
        let n = s.len();
        std::mem::swap(&mut self.field, &mut self.spare);
        self.field.clear();
        self.field.resize(n, Field::zero());
        let last = (self.computed && self.spare.len() == n).then_some(&self.spare[..]);
        (self.fresh, self.computed) = (false, false);
        // The geometric test does not read the last field.
        let mut e = e;
        let stats = match last {
            Some(last) => self.bh.forces_after(&s.pos, last, &self.params, &mut e, &mut self.field)?,
            None => self.bh.forces(&s.pos, &self.params, &mut e, &mut self.field)?,
        };
        (self.fresh, self.computed) = (true, true);
        self.interactions += (stats.interactions + stats.cell_interactions) as f64;
        Ok(())
    }
}

/// A host system as [`kick_drift_kick`] steps it.
struct Stepping<'a, T: Real, E: ?Sized> {
    lf: &'a mut TreeLeapfrog<T>,
    s: &'a mut State<T>,
    e: &'a mut E,
}

impl<T: Real, E: Executor<T> + ?Sized> KickDrift<T> for Stepping<'_, T, E> {
    fn field_is_current(&self) -> bool {
        self.lf.fresh && self.lf.field.len() == self.s.len()
    }

    fn compute_field(&mut self) -> Result<(), Error> {
        self.lf.force(self.s, self.e)
    }

    fn kick(&mut self, h: T) -> Result<(), Error> {
        kick(&mut self.s.vel, &self.lf.field, h);
        Ok(())
    }

    fn drift(&mut self, h: T) -> Result<(), Error> {
        nbody_core::stepping::drift(&mut self.s.pos, &self.s.vel, h);
        self.lf.fresh = false;
        Ok(())
    }
}

impl<T: Real> Integrator<T> for TreeLeapfrog<T> {
    fn name(&self) -> &'static str {
        "leapfrog over a tree"
    }

    fn reached(&self, s: &State<T>, until: f64) -> bool {
        // A fixed step lands within half a step of `until`.
        s.time >= until - 0.5 * self.dt.abs()
    }

    fn step_towards(&mut self, s: &mut State<T>, e: &mut dyn Executor<T>, _until: f64) -> Result<u64, Error> {
        let dt = self.dt;
        kick_drift_kick(&mut Stepping { lf: self, s, e }, dt)?;
        s.time += dt;
        Ok(1)
    }

    fn diagnostics(&mut self, s: &State<T>, e: &mut dyn Executor<T>) -> Result<Diagnostics, Error> {
        if !self.fresh || self.field.len() != s.len() {
            self.force(s, e)?;
        }
        Ok(diagnostics(s, &self.field))
    }
}

/// The step, whether the field is current and whether it holds a force, and the field
/// (the next kick's, and the relative criterion's scale): a resumed run is bit for bit
/// the same.
impl<T: Real> Checkpoint for TreeLeapfrog<T> {
    fn save_to(&self, out: &mut Sink<'_>) {
        for w in [self.dt.to_bits(), u64::from(self.fresh), u64::from(self.computed)] {
            out.word(w);
        }
        out.fields(&self.field);
    }

    fn restore_from(&mut self, from: &mut Source<'_, '_, '_>) -> Result<(), Error> {
        self.dt = from.f64()?;
        (self.fresh, self.computed) = (from.flag()?, from.flag()?);
        self.field = from.fields()?;
        Ok(())
    }
}
