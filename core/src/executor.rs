//! The contract every executor meets.

use crate::calls::{
    BatchCall, BatchCellsCall, BatchPerParticleCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall,
    SnapCall, TidalCall, VjpBatchCall, VjpCall,
};
use crate::cell::Cell;
use crate::neighbours::Neighbours;
use crate::{Array, Error, Field, Jerk, Overlap, Params, Particle, Real, Tidal, Velocity, validate};
use core::ops::Range;

/// Positions and velocities of one set of bodies, for the jerk kernel.
///
/// ```
/// use nbody_core::{Bodies, Particle, Velocity};
/// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
/// let v = [Velocity::new(1.0, 0.0, 0.0)];
/// let b = Bodies { pos: &p, vel: &v };
/// assert_eq!(b.pos.len(), b.vel.len());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Bodies<'a, T: Real> {
    /// Positions and masses.
    pub pos: &'a [Particle<T>],
    /// Velocities, one per particle.
    pub vel: &'a [Velocity<T>],
}

/// Positions, velocities and accelerations of one set of bodies, for the snap kernel
/// (sixth-order Hermite). Accelerations are [`Field`]s; their `phi` is not read.
///
/// ```
/// use nbody_core::{Field, Kinematics, Particle, Velocity};
/// let (p, v, a) = ([Particle::new(0.0f64, 0.0, 0.0, 1.0)], [Velocity::new(1.0, 0.0, 0.0)], [Field::zero()]);
/// let k = Kinematics { pos: &p, vel: &v, acc: &a };
/// assert_eq!(k.acc.len(), 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Kinematics<'a, T: Real> {
    /// Positions and masses.
    pub pos: &'a [Particle<T>],
    /// Velocities, one per particle.
    pub vel: &'a [Velocity<T>],
    /// Accelerations, one per particle.
    pub acc: &'a [Field<T>],
}

/// Softening lengths ε, one per target and one per source, for
/// [`Executor::accelerations_per_particle`] (multi-species runs: dark matter and stars,
/// each with its own length). A pair is softened by the symmetrised rule: Plummer with
/// `ε_ij² = (ε_i² + ε_j²) / 2`, the spline with `h_ij = max(h_i, h_j)` as Gadget does
/// (see [`crate::kernel::Softened::between`]). `Params::eps` is not read.
///
/// ```
/// use nbody_core::PerParticle;
/// let (t, s) = ([0.01f32, 0.02], [0.05f32]);
/// let eps = PerParticle { targets: &t, sources: &s };
/// assert_eq!(eps.sources.len(), 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct PerParticle<'a, T> {
    /// One length per target.
    pub targets: &'a [T],
    /// One length per source.
    pub sources: &'a [T],
}

/// A half-open index range `start..end` into a particle array, `Pod` so that an
/// interaction list can be copied to a device as it is.
///
/// ```
/// use nbody_core::Span;
/// let s = Span::new(3, 7);
/// assert_eq!((s.len(), s.range()), (4, 3..7));
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Span {
    /// First index.
    pub start: u32,
    /// One past the last index.
    pub end: u32,
}

impl Span {
    /// `start..end`.
    pub const fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }

    /// Number of indices (0 when reversed).
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    /// True when it holds no index.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As a `usize` range.
    pub const fn range(&self) -> core::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    fn fits(&self, n: usize) -> bool {
        self.start <= self.end && self.end as usize <= n
    }
}

/// One leaf interaction: the targets `targets` receive the pull of every particle in the
/// source spans `source_spans[sources.start..sources.end]` of an [`InteractionList`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Pair {
    /// Target particles (indices into the particle array).
    pub targets: Span,
    /// Which source spans (indices into `InteractionList::source_spans`).
    pub sources: Span,
}

/// Many (target group, source list) pairs over one particle array: the shape a tree
/// code's walk emits for its leaves. Several pairs may name the same targets; their
/// contributions add up.
///
/// ```
/// use nbody_core::{InteractionList, Pair, Span};
/// // targets 0..2 feel particles 0..4; targets 2..4 feel particles 0..1 and 3..4
/// let spans = [Span::new(0, 4), Span::new(0, 1), Span::new(3, 4)];
/// let pairs = [
///     Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) },
///     Pair { targets: Span::new(2, 4), sources: Span::new(1, 3) },
/// ];
/// let list = InteractionList { pairs: &pairs, source_spans: &spans };
/// assert!(list.validate(4).is_ok());
/// assert_eq!(list.interactions(), 2 * 4 + 2 * 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InteractionList<'a> {
    /// The pairs.
    pub pairs: &'a [Pair],
    /// The source spans the pairs index.
    pub source_spans: &'a [Span],
}

impl InteractionList<'_> {
    /// Checks every span lies inside a particle array of length `n`.
    pub fn validate(&self, n: usize) -> Result<(), Error> {
        self.validate_in(n, n)
    }

    /// Checks every pair's targets lie inside `targets` indices and every source span
    /// inside `sources` (a cell list: particles as targets, spans of cells as sources).
    pub fn validate_in(&self, targets: usize, sources: usize) -> Result<(), Error> {
        for (index, s) in self.source_spans.iter().enumerate() {
            if !s.fits(sources) {
                return Err(Error::InvalidSpan { what: "source span", index });
            }
        }
        for (index, p) in self.pairs.iter().enumerate() {
            if !p.targets.fits(targets) {
                return Err(Error::InvalidSpan { what: "pair targets", index });
            }
            if !p.sources.fits(self.source_spans.len()) {
                return Err(Error::InvalidSpan { what: "pair sources", index });
            }
        }
        Ok(())
    }

    /// The source spans of one pair (the list must be valid).
    pub fn sources_of(&self, pair: &Pair) -> &[Span] {
        &self.source_spans[pair.sources.range()]
    }

    /// Total pair interactions the list asks for.
    pub fn interactions(&self) -> usize {
        self.pairs.iter().map(|p| p.targets.len() * self.sources_of(p).iter().map(Span::len).sum::<usize>()).sum()
    }
}

/// A tree walk's whole leaf work: an [`InteractionList`] over the particles, and for each
/// of its pairs a range of cell spans (indices into a cell array, see [`crate::cell`]):
/// each target group feels its particle spans and its far cells in one call
/// ([`Executor::accelerations_batch_cells`]).
///
/// ```
/// use nbody_core::{InteractionList, LeafList, Pair, Span};
/// // targets 0..2 feel particles 0..4 and cells 0..3; targets 2..4 feel particles 2..4 only
/// let spans = [Span::new(0, 4), Span::new(2, 4)];
/// let pairs = [
///     Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) },
///     Pair { targets: Span::new(2, 4), sources: Span::new(1, 2) },
/// ];
/// let (cells, cell_spans) = ([Span::new(0, 1), Span::new(1, 1)], [Span::new(0, 3)]);
/// let list = LeafList { particles: InteractionList { pairs: &pairs, source_spans: &spans }, cells: &cells, cell_spans: &cell_spans };
/// assert!(list.validate(4, 3).is_ok());
/// assert_eq!((list.particles.interactions(), list.cell_interactions()), (2 * 4 + 2 * 2, 2 * 3));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LeafList<'a> {
    /// The pairs (target group, particle source spans) and their spans.
    pub particles: InteractionList<'a>,
    /// For pair `k` of `particles.pairs`, which of `cell_spans` it feels: one entry per
    /// pair.
    pub cells: &'a [Span],
    /// Ranges of the cell array.
    pub cell_spans: &'a [Span],
}

impl LeafList<'_> {
    /// Checks the particle list against `n_particles`, one cell range per pair, each
    /// inside `cell_spans`, and every cell span inside `n_cells` cells.
    pub fn validate(&self, n_particles: usize, n_cells: usize) -> Result<(), Error> {
        self.particles.validate(n_particles)?;
        validate::length("cell ranges (one per pair)", self.particles.pairs.len(), self.cells.len())?;
        for (index, s) in self.cell_spans.iter().enumerate() {
            if !s.fits(n_cells) {
                return Err(Error::InvalidSpan { what: "cell span", index });
            }
        }
        for (index, c) in self.cells.iter().enumerate() {
            if !c.fits(self.cell_spans.len()) {
                return Err(Error::InvalidSpan { what: "pair cells", index });
            }
        }
        Ok(())
    }

    /// The cell spans of pair `k` (the list must be valid).
    pub fn cells_of(&self, k: usize) -> &[Span] {
        &self.cell_spans[self.cells[k].range()]
    }

    /// The pairs as an [`InteractionList`] whose source spans index the cells.
    pub fn cell_pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.particles.pairs.iter().zip(self.cells).map(|(p, c)| Pair { targets: p.targets, sources: *c })
    }

    /// Total particle-cell interactions the list asks for.
    pub fn cell_interactions(&self) -> usize {
        (0..self.cells.len())
            .map(|k| self.particles.pairs[k].targets.len() * self.cells_of(k).iter().map(Span::len).sum::<usize>())
            .sum()
    }
}

/// A direct-summation executor: computes `Σ_j` of the softened kernel for each target
/// and **adds** it into the output, so a tree code can call once per source list.
///
/// Every executor produces what [`crate::Reference`] produces, to the tolerance the
/// conformance suite (the `nbody-conformance` crate) holds it to, and returns an
/// [`Error`] for every bad input before touching the output.
///
/// # One front door, unchecked hooks
///
/// The entry points callers use ([`Executor::accelerations`] and its siblings) are
/// provided: each validates its input ([`crate::validate`]), returns at once when
/// there is nothing to compute, and only then calls the matching `*_unchecked` hook,
/// which is what an executor implements. The hooks are `unsafe`: they may assume the
/// checks passed (a bad overlap that reached a device kernel would read out of
/// bounds), so only a door, or a hook forwarding to another executor's hook, calls
/// them. A hook may still fail (a device error, a rule of its own such as a mixed
/// executor's extent) and then leaves the outputs untouched.
///
/// Two kinds of executor override the doors themselves, and say so: one that checks
/// sources while it copies them (the CPU executor, where a separate pass would cost as
/// much as a leaf's interactions), and one whose calls are collective across processes
/// (MPI: every rank must take part even with nothing of its own to compute, and the
/// ranks agree on errors). A wrapper that forwards to another executor forwards the
/// doors as well as the hooks, so that such overrides are kept.
///
/// The self term of the softened potential (a target that is also a source pulls on
/// itself with `m / ε`) is removed by each hook, not by the door: an executor removes
/// what its own kernel added ([`crate::kernel::self_potential`] in its own precision and
/// reciprocal square root), which cancels exactly.
///
/// Static dispatch: code generic over `E: Executor<T>` swaps executors at compile time.
///
/// ```
/// use nbody_core::{Executor, Field, Params, Particle, Real, Reference};
///
/// fn total_ax<T: Real, E: Executor<T>>(exec: &mut E, bodies: &[Particle<T>]) -> T {
///     let mut out = vec![Field::zero(); bodies.len()];
///     let params = Params::softened(T::from_f64(0.01)).with_overlap_identical();
///     exec.accelerations(bodies, bodies, &params, &mut out).unwrap();
///     out.iter().fold(T::zero(), |sum, f| sum + f.ax)
/// }
/// let bodies = [Particle::new(-1.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// assert!(total_ax(&mut Reference, &bodies).abs() < 1e-15); // Newton's third law
/// ```
///
/// An executor of its own implements the two required hooks (here by handing the work
/// to the reference, whose hooks may be called because ours were called by a door):
///
/// ```
/// use nbody_core::calls::{DirectCall, JerkCall};
/// use nbody_core::{Error, Executor, Field, Params, Particle, Reference};
///
/// struct Loud;
/// impl Executor<f64> for Loud {
///     fn name(&self) -> &'static str {
///         "loud"
///     }
///     unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, f64>) -> Result<(), Error> {
///         println!("{} x {}", call.targets.len(), call.sources.len());
///         // SAFETY: our caller met the contract, which is the reference's too.
///         unsafe { Reference.accelerations_unchecked(call) }
///     }
///     unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, f64>) -> Result<(), Error> {
///         // SAFETY: as above.
///         unsafe { Reference.accelerations_jerk_unchecked(call) }
///     }
/// }
/// let p = [Particle::new(0.0, 0.0, 0.0, 1.0)];
/// let mut out = [Field::zero()];
/// // The door refuses what the hook must never see.
/// assert!(Loud.accelerations(&p, &p, &Params::softened(-1.0), &mut out).is_err());
/// Loud.accelerations(&p, &p, &Params::softened(0.1).with_overlap_identical(), &mut out)?;
/// assert_eq!(out[0].ax, 0.0);
/// # Ok::<(), Error>(())
/// ```
pub trait Executor<T: Real> {
    /// A short name for reports, e.g. `"reference"`.
    fn name(&self) -> &'static str;

    /// What this executor computes: for each softening kernel, the entry points that
    /// compute it; every other call with that kernel is [`Error::Unsupported`]. The
    /// conformance suite holds an executor to it both ways. Default: what the trait's
    /// own hooks compute ([`crate::capabilities::Capabilities::TRAIT_DEFAULTS`]); an
    /// executor that refuses anything, or adds the columns, says so here.
    ///
    /// ```
    /// use nbody_core::capabilities::{Capabilities, Entry};
    /// use nbody_core::{Executor, Reference, Softening};
    /// assert!(Executor::<f32>::capabilities(&Reference).computes(Entry::Jerk, Softening::Spline));
    /// ```
    fn capabilities(&self) -> crate::capabilities::Capabilities {
        crate::capabilities::Capabilities::TRAIT_DEFAULTS
    }

    /// Whether the plain, jerk and neighbour hooks check the sources themselves, as they
    /// copy them: their doors then make every check but the sources' and leave those to
    /// the hook, which must fail on a bad source as the door would (the door names the
    /// error by the whole check). Saves a pass over the sources. Default: false.
    fn hooks_check_sources(&self) -> bool {
        false
    }

    /// Adds the acceleration (and, if `params.potential`, the potential) that `sources`
    /// exert on each of `targets` into `out` (`out.len() == targets.len()`).
    ///
    /// The door: [`validate::call`], nothing on empty input, then
    /// [`Executor::accelerations_unchecked`].
    fn accelerations(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        let n = out.len();
        let run = validate::door(
            self.hooks_check_sources(),
            || validate::call_but_sources(targets, sources, params, n),
            || validate::call(targets, sources, params, n),
            targets.is_empty() || sources.is_empty(),
        )?;
        if !run {
            return Ok(());
        }
        // SAFETY: validated just above (the sources by the hook where it says so), and
        // neither set is empty.
        unsafe { self.accelerations_unchecked(DirectCall { targets, sources, params, out }) }
    }

    /// The work of [`Executor::accelerations`].
    ///
    /// # Safety
    ///
    /// [`validate::call`]`(targets, sources, params, out.len())` returned `Ok`, and
    /// neither `targets` nor `sources` is empty.
    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error>;

    /// [`Executor::accelerations`] plus the jerk (for Hermite integrators), added into
    /// `jerk`. The potential follows `params.potential`.
    ///
    /// The door: [`validate::jerk_call`], nothing on empty input, then
    /// [`Executor::accelerations_jerk_unchecked`].
    fn accelerations_jerk(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        if !validate::jerk_door(self.hooks_check_sources(), &targets, &sources, params, out.len(), jerk.len())? {
            return Ok(());
        }
        // SAFETY: validated just above (the sources by the hook where it says so), and
        // neither set is empty.
        unsafe { self.accelerations_jerk_unchecked(JerkCall { targets, sources, params, out, jerk }) }
    }

    /// The work of [`Executor::accelerations_jerk`].
    ///
    /// # Safety
    ///
    /// [`validate::jerk_call`]`(&targets, &sources, params, out.len(), jerk.len())`
    /// returned `Ok`, and neither set is empty.
    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error>;

    /// [`Executor::accelerations_jerk`] plus neighbour information (the nearest source
    /// of each target, and optionally the sources within a radius; see
    /// [`crate::neighbours`]), merged into `neighbours`. Bad input of any kind leaves every
    /// output untouched.
    ///
    /// The door: `neighbours.validate`, [`validate::jerk_call`], nothing on empty input,
    /// then [`Executor::accelerations_jerk_neighbours_unchecked`].
    ///
    /// ```
    /// use nbody_core::neighbours::{Nearest, Neighbours};
    /// use nbody_core::{Bodies, Executor, Field, Jerk, Params, Particle, Reference, Velocity};
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
    /// let v = [Velocity::new(0.0, 0.0, 0.0); 2];
    /// let b = Bodies { pos: &p, vel: &v };
    /// let (mut out, mut jerk, mut near) = ([Field::zero(); 2], [Jerk::zero(); 2], [Nearest::none(); 2]);
    /// let mut nb = Neighbours { nearest: &mut near, within: None, index_offset: 0 };
    /// let params = Params::softened(0.01).with_overlap_identical();
    /// Reference.accelerations_jerk_neighbours(b, b, &params, &mut out, &mut jerk, &mut nb)?;
    /// assert_eq!((near[0].index, near[0].r2, near[1].index), (1, 4.0, 0));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_jerk_neighbours(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        neighbours: &mut Neighbours<'_, T>,
    ) -> Result<(), Error> {
        neighbours.validate(targets.pos.len(), sources.pos.len())?;
        if !validate::jerk_door(self.hooks_check_sources(), &targets, &sources, params, out.len(), jerk.len())? {
            return Ok(());
        }
        // SAFETY: validated just above (the sources by the hook where it says so), and
        // neither set is empty.
        unsafe {
            self.accelerations_jerk_neighbours_unchecked(NeighboursCall {
                targets,
                sources,
                params,
                out,
                jerk,
                neighbours,
            })
        }
    }

    /// The work of [`Executor::accelerations_jerk_neighbours`]. The default runs the
    /// jerk hook, then [`crate::neighbours::search`]; executors override it to find
    /// neighbours in the force pass itself.
    ///
    /// # Safety
    ///
    /// What [`Executor::accelerations_jerk_unchecked`] asks, and
    /// `neighbours.validate(targets.pos.len(), sources.pos.len())` returned `Ok`.
    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        let NeighboursCall { targets, sources, params, out, jerk, neighbours } = call;
        // SAFETY: our caller's contract includes the jerk hook's.
        unsafe { self.accelerations_jerk_unchecked(JerkCall { targets, sources, params, out, jerk })? };
        crate::neighbours::search(targets.pos, sources.pos, &params.overlap, neighbours);
        Ok(())
    }

    /// [`Executor::accelerations_jerk`] plus the snap (the acceleration's second time
    /// derivative, [`crate::kernel::pair_snap`]), added into `snap`, for sixth-order
    /// Hermite; the bodies carry their accelerations.
    ///
    /// The door: [`validate::snap_call`], nothing on empty input, then
    /// [`Executor::accelerations_snap_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, Jerk, Kinematics, Params, Particle, Reference, Velocity};
    /// // Two bodies at rest, 2 apart: the snap is G m times the relative acceleration term.
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
    /// let v = [Velocity::new(0.0, 0.0, 0.0); 2];
    /// let a = [Field::new(0.25, 0.0, 0.0, 0.0), Field::new(-0.25, 0.0, 0.0, 0.0)];
    /// let k = Kinematics { pos: &p, vel: &v, acc: &a };
    /// let (mut out, mut jerk, mut snap) = ([Field::zero(); 2], [Jerk::zero(); 2], [Jerk::zero(); 2]);
    /// Reference.accelerations_snap(k, k, &Params::softened(0.0).with_overlap_identical(), &mut out, &mut jerk, &mut snap)?;
    /// assert_eq!(out[0].ax, 0.25);
    /// assert_eq!(jerk[0].jx, 0.0);
    /// // da = -0.5 along x, r = 2: m da / r^3 - 3 beta A0 with beta = d.da / r^2 = -0.25.
    /// assert!((snap[0].jx - (-0.5 / 8.0 + 0.75 * 0.25)).abs() < 1e-15);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_snap(
        &mut self,
        targets: Kinematics<'_, T>,
        sources: Kinematics<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
        jerk: &mut [Jerk<T>],
        snap: &mut [Jerk<T>],
    ) -> Result<(), Error> {
        validate::snap_call(&targets, &sources, params, out.len(), jerk.len(), snap.len())?;
        if targets.pos.is_empty() || sources.pos.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above, and neither set is empty.
        unsafe { self.accelerations_snap_unchecked(SnapCall { targets, sources, params, out, jerk, snap }) }
    }

    /// The work of [`Executor::accelerations_snap`]. The default runs the plain loops
    /// of [`crate::Reference`] on the caller's thread, in the caller's precision: every
    /// executor offers it, none faster yet.
    ///
    /// # Safety
    ///
    /// [`validate::snap_call`] returned `Ok` on these arguments, and neither set is empty.
    unsafe fn accelerations_snap_unchecked(&mut self, call: SnapCall<'_, T>) -> Result<(), Error> {
        let SnapCall { targets, sources, params, out, jerk, snap } = call;
        crate::validate::plummer_only(params, "accelerations_snap")?;
        snap_loops(targets, sources, params, out, jerk, snap);
        Ok(())
    }

    /// The field of `sources` at `targets` (added into `out`, as
    /// [`Executor::accelerations`]) and each target's tidal tensor (added into `tidal`):
    /// the gradient of its acceleration with respect to its own position, over the pairs
    /// the field sums (a target's own pair left out, by subtraction).
    ///
    /// The door: [`validate::tidal_call`], nothing on empty input, then
    /// [`Executor::accelerations_tidal_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, Params, Particle, Reference, Tidal};
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 4.0)];
    /// let (mut out, mut tidal) = ([Field::zero(); 2], [Tidal::zero(); 2]);
    /// Reference.accelerations_tidal(&p, &p, &Params::softened(0.0).with_overlap_identical(), &mut out, &mut tidal)?;
    /// // Along the line the source stretches by 2 G m / r³, across it squeezes by G m / r³.
    /// assert_eq!(tidal[0].lanes(), [1.0, 0.0, 0.0, -0.5, 0.0, -0.5]);
    /// assert_eq!(out[0].ax, 1.0);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_tidal(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
        tidal: &mut [Tidal<T>],
    ) -> Result<(), Error> {
        validate::tidal_call(targets, sources, params, out.len(), tidal.len())?;
        if targets.is_empty() || sources.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above, and neither set is empty.
        unsafe { self.accelerations_tidal_unchecked(TidalCall { targets, sources, params, out, tidal }) }
    }

    /// The work of [`Executor::accelerations_tidal`]. The default runs plain loops on
    /// the caller's thread, in the caller's precision.
    ///
    /// # Safety
    ///
    /// [`validate::tidal_call`] returned `Ok` on these arguments, and neither set is
    /// empty.
    unsafe fn accelerations_tidal_unchecked(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        tidal_loops(call);
        Ok(())
    }

    /// The vector-Jacobian product of [`Executor::accelerations`]: for cotangents `c_i`
    /// on the targets' accelerations and `h_i` on their potentials (`cotangents[i]`'s
    /// `ax, ay, az` and `phi`; `h` only when `params.potential` is set), the gradients of
    /// `L = Σ_i c_i · a_i + h_i φ_i` with respect to each target's position (added into
    /// `target_grads[i]`, whose mass lane gets nothing: a target's mass does not enter
    /// its field) and each source's position and mass (added into `source_grads[j]`).
    /// Where targets and sources are one array, a particle's gradient is the sum of its
    /// two. With `d = x_j − x_i` and the kernel's terms `w, g, dg` (see
    /// [`crate::kernel::Softened::terms`]):
    ///
    /// ```text
    /// ∂L/∂x_i = T_i c_i − h_i a_i                      (T_i the tidal tensor)
    /// ∂L/∂x_j = G m_j Σ_i (g c_i + dg (d·c_i) d + h_i g d)
    /// ∂L/∂m_j = G Σ_i (g d·c_i − h_i w)
    /// ```
    ///
    /// The door: [`validate::vjp_call`], nothing on empty input, then
    /// [`Executor::vjp_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, Params, Particle, Reference};
    /// // Two unit masses 2 apart; the cotangent picks target 0's a_x = G m / r² = 1/4.
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
    /// let cot = [Field::new(1.0, 0.0, 0.0, 0.0), Field::zero()];
    /// let (mut gt, mut gs) = ([Particle::zero(); 2], [Particle::zero(); 2]);
    /// Reference.vjp(&p, &p, &Params::softened(0.0).with_overlap_identical(), &cot, &mut gt, &mut gs)?;
    /// assert_eq!(gt[0].x, 0.25); // the target moving towards the source: pulled harder
    /// assert_eq!((gs[1].x, gs[1].m), (-0.25, 0.25)); // the source moving away; its mass
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn vjp(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        params: &Params<T>,
        cotangents: &[Field<T>],
        target_grads: &mut [Particle<T>],
        source_grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        validate::vjp_call(targets, sources, params, cotangents, target_grads.len(), source_grads.len())?;
        if targets.is_empty() || sources.is_empty() {
            return Ok(());
        }
        let call = VjpCall { targets, sources, params, cotangents, target_grads, source_grads };
        // SAFETY: validated just above, and neither set is empty.
        unsafe { self.vjp_unchecked(call) }
    }

    /// The work of [`Executor::vjp`]. The default runs plain loops on the caller's
    /// thread, in the caller's precision: a pass over the sources of each target, then
    /// one over the targets of each source.
    ///
    /// # Safety
    ///
    /// [`validate::vjp_call`] returned `Ok` on these arguments, and neither set is empty.
    unsafe fn vjp_unchecked(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        vjp_target_loops(call.targets, call.sources, call.params, call.cotangents, call.target_grads);
        vjp_source_loops(call.targets, call.sources, call.params, call.cotangents, call.source_grads);
        Ok(())
    }

    /// The vector-Jacobian product of [`Executor::accelerations_batch`]: for one
    /// cotangent per particle on the field the list gives it, the gradient of
    /// `L = Σ_i c_i · a_i + h_i φ_i` with respect to every particle's position and mass,
    /// its parts as a target and as a source of the list's pairs together (added into
    /// `grads`, `[gx, gy, gz, gm]`): what a tree code's leaves need to be differentiated.
    /// `params.overlap` is ignored: each pair's follows from its spans.
    ///
    /// The door: [`validate_batch`], [`validate::cotangents_of`], nothing when the list
    /// has no pair, then [`Executor::vjp_batch_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, InteractionList, Pair, Params, Particle, Reference, Span};
    /// // Two unit masses 2 apart, each pulled by the other: one pair, both spans the pair.
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
    /// let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) }];
    /// let list = InteractionList { pairs: &pairs, source_spans: &[Span::new(0, 2)] };
    /// let cot = [Field::new(1.0, 0.0, 0.0, 0.0), Field::zero()];
    /// let mut g = [Particle::zero(); 2];
    /// Reference.vjp_batch(&p, &list, &Params::softened(0.0), &cot, &mut g)?;
    /// // a_0x = 1 / (x_1 − x_0)²: d/dx_0 = 2/8, d/dx_1 = −2/8, d/dm_1 = 1/4.
    /// assert_eq!((g[0].x, g[1].x, g[1].m), (0.25, -0.25, 0.25));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn vjp_batch(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        cotangents: &[Field<T>],
        grads: &mut [Particle<T>],
    ) -> Result<(), Error> {
        validate_batch(particles, list, params, grads.len())?;
        validate::length("cotangents", particles.len(), cotangents.len())?;
        validate::cotangents_of(cotangents, params)?;
        if list.pairs.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above.
        unsafe { self.vjp_batch_unchecked(VjpBatchCall { particles, list, params, cotangents, grads }) }
    }

    /// The work of [`Executor::vjp_batch`]. The default runs the plain loops of the
    /// default [`Executor::vjp_unchecked`] for each pair and source span, on the caller's
    /// thread, in the caller's precision.
    ///
    /// # Safety
    ///
    /// [`validate_batch`] and [`validate::cotangents_of`] returned `Ok` on these
    /// arguments, with one cotangent per particle.
    unsafe fn vjp_batch_unchecked(&mut self, call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        vjp_batch_loops(call);
        Ok(())
    }

    /// Runs every pair of `list` over `particles`, adding into `out` (one entry per
    /// particle). `params.overlap` is ignored: each pair's overlap follows from its spans
    /// ([`Overlap::between`]).
    ///
    /// The door: [`validate_batch`], nothing when the list has no pair, then
    /// [`Executor::accelerations_batch_unchecked`] (which skips empty spans itself: the
    /// door does not walk the spans again to count interactions).
    fn accelerations_batch(
        &mut self,
        particles: &[Particle<T>],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate_batch(particles, list, params, out.len())?;
        if list.pairs.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above.
        unsafe { self.accelerations_batch_unchecked(BatchCall { particles, list, params, out }) }
    }

    /// The work of [`Executor::accelerations_batch`]. The default runs the pairs one
    /// hook call at a time; executors override it to run the whole list at once.
    ///
    /// # Safety
    ///
    /// [`validate_batch`]`(particles, list, params, out.len())` returned `Ok`.
    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        each_span(
            list.pairs,
            |_, pair| list.sources_of(pair),
            |t, s| {
                let p = params.with_overlap(Overlap::between(t.clone(), s.clone()));
                let (targets, sources, out) = (&particles[t.clone()], &particles[s], &mut out[t]);
                // SAFETY: both spans lie in `particles` (the list was validated) and are not
                // empty, and the particles, parameters and output were validated; the overlap
                // `between` two spans of one array names the particles they share, identical
                // by construction.
                unsafe { self.accelerations_unchecked(DirectCall { targets, sources, params: &p, out }) }
            },
        )
    }

    /// Adds the field of the far cells `cells` (see [`crate::cell`]: monopole and
    /// quadrupole, Plummer-softened) at each target into `out`, with `G`, the softening
    /// and `potential` of `params`; cells are never targets, so the overlap must be
    /// [`Overlap::Disjoint`].
    ///
    /// The door: [`validate_cells`], nothing on empty input, then
    /// [`Executor::accelerations_cells_unchecked`].
    ///
    /// ```
    /// use nbody_core::{cell::Cell, Executor, Field, Params, Particle, Reference};
    /// let targets = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
    /// let cells = [Cell::new(2.0, 0.0, 0.0, 4.0, [0.0; 6])];
    /// let mut out = [Field::zero()];
    /// Reference.accelerations_cells(&targets, &cells, &Params::softened(0.0), &mut out)?;
    /// assert_eq!((out[0].ax, out[0].phi), (1.0, -2.0));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_cells(
        &mut self,
        targets: &[Particle<T>],
        cells: &[Cell<T>],
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate_cells(targets, cells, params, out.len())?;
        if targets.is_empty() || cells.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above.
        unsafe { self.accelerations_cells_unchecked(CellsCall { targets, cells, params, out }) }
    }

    /// The work of [`Executor::accelerations_cells`]. The default sums
    /// [`crate::cell::cell`] in plain loops in `T`; executors override it with their own
    /// kernels.
    ///
    /// # Safety
    ///
    /// [`validate_cells`]`(targets, cells, params, out.len())` returned `Ok`.
    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        let CellsCall { targets, cells, params, out } = call;
        cell_loops(targets, cells, params, out);
        Ok(())
    }

    /// The batched call with cells, a tree walk's whole leaf work: each pair's targets
    /// (indices into `particles`) receive the pull of its particle spans, as in
    /// [`Executor::accelerations_batch`] (self terms removed from span overlaps;
    /// `params.overlap` ignored), and the field of its cell spans (indices into `cells`),
    /// added into `out`.
    ///
    /// The door: [`validate_batch_cells`], nothing when the list has no pair, then
    /// [`Executor::accelerations_batch_cells_unchecked`].
    ///
    /// ```
    /// use nbody_core::{cell::Cell, Executor, Field, InteractionList, LeafList, Pair, Params, Particle, Reference, Span};
    /// let particles = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(0.0, 1.0, 0.0, 1.0)];
    /// let cells = [Cell::new(4.0, 0.0, 0.0, 16.0, [0.0; 6])];
    /// // Particle 0 feels both particles and the cell; particle 1 nothing.
    /// let pairs = [Pair { targets: Span::new(0, 1), sources: Span::new(0, 1) }];
    /// let list = LeafList {
    ///     particles: InteractionList { pairs: &pairs, source_spans: &[Span::new(0, 2)] },
    ///     cells: &[Span::new(0, 1)],
    ///     cell_spans: &[Span::new(0, 1)],
    /// };
    /// let mut out = [Field::zero(); 2];
    /// Reference.accelerations_batch_cells(&particles, &cells, &list, &Params::softened(0.0), &mut out)?;
    /// assert_eq!((out[0].ax, out[0].ay, out[1].ax), (1.0, 1.0, 0.0));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_batch_cells(
        &mut self,
        particles: &[Particle<T>],
        cells: &[Cell<T>],
        list: &LeafList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate_batch_cells(particles, cells, list, params, out.len())?;
        if list.particles.pairs.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above.
        unsafe { self.accelerations_batch_cells_unchecked(BatchCellsCall { particles, cells, list, params, out }) }
    }

    /// The work of [`Executor::accelerations_batch_cells`]. The default makes the
    /// particle part one [`Executor::accelerations_batch_unchecked`] call and the cells
    /// one [`Executor::accelerations_cells_unchecked`] call per pair and cell span;
    /// executors override it to run the cells at once.
    ///
    /// # Safety
    ///
    /// [`validate_batch_cells`]`(particles, cells, list, params, out.len())` returned `Ok`.
    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        let BatchCellsCall { particles, cells, list, params, out } = call;
        // SAFETY: the particle list, particles, parameters and output were validated.
        unsafe { self.accelerations_batch_unchecked(BatchCall { particles, list: &list.particles, params, out })? };
        let params = &params.with_overlap(Overlap::Disjoint);
        each_span(
            list.particles.pairs,
            |k, _| list.cells_of(k),
            |t, s| {
                let (targets, cells, out) = (&particles[t.clone()], &cells[s], &mut out[t]);
                // SAFETY: both spans lie in their arrays (the list was validated against them)
                // and are not empty; particles, cells, parameters (the overlap made disjoint)
                // and output were validated.
                unsafe { self.accelerations_cells_unchecked(CellsCall { targets, cells, params, out }) }
            },
        )
    }

    /// [`Executor::accelerations`] with a softening length per particle instead of
    /// `params.eps` (the symmetrised rule of [`PerParticle`]); a target that is also a
    /// source (`params.overlap`) has the same length as both, and its pair with itself
    /// is removed with it.
    ///
    /// The door: [`validate::per_particle_call`], nothing on empty input, then
    /// [`Executor::accelerations_per_particle_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, Params, Particle, PerParticle, Reference};
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    /// let eps = [0.0, 1.0]; // a star and a dark-matter particle: ε_01² = 1/2
    /// let mut out = [Field::zero(); 2];
    /// let params = Params::softened(0.0).with_overlap_identical();
    /// Reference.accelerations_per_particle(&p, &p, PerParticle { targets: &eps, sources: &eps }, &params, &mut out)?;
    /// assert!((out[0].ax - 1.5f64.powf(-1.5)).abs() < 1e-15);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_per_particle(
        &mut self,
        targets: &[Particle<T>],
        sources: &[Particle<T>],
        eps: PerParticle<'_, T>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate::per_particle_call(targets, sources, &eps, params, out.len())?;
        if targets.is_empty() || sources.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above, and neither set is empty.
        unsafe { self.accelerations_per_particle_unchecked(PerParticleCall { targets, sources, eps, params, out }) }
    }

    /// The work of [`Executor::accelerations_per_particle`]. The default sums
    /// [`crate::kernel::Softened::between`] pairs in plain loops in `T`; executors
    /// override it with their own kernels.
    ///
    /// # Safety
    ///
    /// [`validate::per_particle_call`]`(targets, sources, &eps, params, out.len())`
    /// returned `Ok`, and neither set is empty.
    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        per_particle_loops(targets, sources, eps, params, out);
        Ok(())
    }

    /// [`Executor::accelerations_batch`] with a softening length per particle (`eps`,
    /// one per particle of `particles`, the rule of [`PerParticle`]): a tree code's
    /// leaf work for a system of several species.
    ///
    /// The door: [`validate_batch`], the lengths, nothing when the list has no pair,
    /// then [`Executor::accelerations_batch_per_particle_unchecked`].
    ///
    /// ```
    /// use nbody_core::{Executor, Field, InteractionList, Pair, Params, Particle, Reference, Span};
    /// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    /// let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) }];
    /// let list = InteractionList { pairs: &pairs, source_spans: &[Span::new(0, 2)] };
    /// let mut out = [Field::zero(); 2];
    /// Reference.accelerations_batch_per_particle(&p, &[0.0, 1.0], &list, &Params::softened(0.0), &mut out)?;
    /// assert!((out[1].ax + 1.5f64.powf(-1.5)).abs() < 1e-15);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    fn accelerations_batch_per_particle(
        &mut self,
        particles: &[Particle<T>],
        eps: &[T],
        list: &InteractionList<'_>,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<(), Error> {
        validate_batch(particles, list, params, out.len())?;
        validate::softening_lengths(eps, particles.len(), Array::Softening)?;
        if list.pairs.is_empty() {
            return Ok(());
        }
        // SAFETY: validated just above.
        unsafe {
            self.accelerations_batch_per_particle_unchecked(BatchPerParticleCall { particles, eps, list, params, out })
        }
    }

    /// The work of [`Executor::accelerations_batch_per_particle`]. The default makes one
    /// [`Executor::accelerations_per_particle_unchecked`] call per pair and source span
    /// (their overlap removed), so every executor's own per-particle kernel serves it.
    ///
    /// # Safety
    ///
    /// [`validate_batch`]`(particles, list, params, out.len())` returned `Ok`, and so
    /// did [`validate::softening_lengths`]`(eps, particles.len(), _)`.
    unsafe fn accelerations_batch_per_particle_unchecked(
        &mut self,
        call: BatchPerParticleCall<'_, T>,
    ) -> Result<(), Error> {
        let BatchPerParticleCall { particles, eps, list, params, out } = call;
        for pair in list.pairs.iter().filter(|p| !p.targets.is_empty()) {
            let t = pair.targets.range();
            for s in list.sources_of(pair).iter().filter(|s| !s.is_empty()) {
                let (tr, sr) = (t.clone(), s.range());
                let lengths = PerParticle { targets: &eps[tr.clone()], sources: &eps[sr.clone()] };
                let p = params.with_overlap(Overlap::between(tr.clone(), sr.clone()));
                // SAFETY: both spans lie in the particle array and are not empty; the
                // particles, lengths, parameters and output were validated, and an
                // overlap between two spans of one array names the same particles with
                // the same lengths.
                unsafe {
                    self.accelerations_per_particle_unchecked(PerParticleCall {
                        targets: &particles[tr.clone()],
                        sources: &particles[sr],
                        eps: lengths,
                        params: &p,
                        out: &mut out[tr],
                    })?
                };
            }
        }
        Ok(())
    }

    /// The reductions over every process taking part in this executor's calls, for an
    /// executor whose calls span several processes (each owning a slice of the
    /// particles, as `nbody-mpi`'s does); `None`, the default, for executors of one
    /// process. Integrators combine their per-process values through it (see
    /// [`crate::collective`]).
    ///
    /// ```
    /// use nbody_core::{Executor, Reference};
    /// assert!(Executor::<f64>::collective(&mut Reference).is_none());
    /// ```
    fn collective(&mut self) -> Option<&mut dyn crate::collective::Collective> {
        None
    }

    /// Writes (not adds) the field of `call`'s particles on its targets: accelerations
    /// into `acc`, one row per target, and when `phi` is given the potential into it
    /// (`params.potential` is not read, nor `params.overlap`, which the call sets), for
    /// executors that take positions in rows and masses apart as they are (see
    /// [`crate::columns`]). The default, for executors that take [`Particle`]s only, is
    /// [`Error::Unsupported`]: the caller packs the particles and calls
    /// [`Executor::accelerations`] instead.
    ///
    /// An executor that overrides it checks [`crate::columns::check`] first, refuses bad
    /// values as [`crate::columns::first_bad`] names them and leaves `acc` and `phi`
    /// untouched on any error; a softening it does not take is [`Error::Unsupported`].
    ///
    /// ```
    /// use nbody_core::columns::ColumnsCall;
    /// use nbody_core::{Error, Executor, Params, Reference};
    /// let (x, m) = ([[0.0f64; 3], [1.0, 0.0, 0.0]], [1.0, 1.0]);
    /// let call = ColumnsCall { positions: &x, masses: &m, targets: None };
    /// let mut acc = [[0.0; 3]; 2];
    /// let r = Reference.field_columns(call, &Params::softened(0.1), &mut acc, None);
    /// assert!(matches!(r, Err(Error::Unsupported { .. })));
    /// ```
    fn field_columns(
        &mut self,
        call: crate::columns::ColumnsCall<'_, T>,
        params: &Params<T>,
        acc: &mut [[T; 3]],
        phi: Option<&mut [T]>,
    ) -> Result<(), Error> {
        let _ = (call, params, acc, phi);
        Err(Error::Unsupported {
            operation: "field_columns",
            reason: "this executor takes packed particles: pack them and call accelerations",
        })
    }

    /// [`Executor::field_columns`] on memory the caller holds on a GPU (see
    /// [`crate::columns::DeviceColumns`]): no copy through the host. The default is
    /// [`Error::Unsupported`]: executors without a device, and devices that cannot read
    /// the caller's memory, refuse. An executor that overrides it refuses a call on
    /// another device than its own ([`Error::InvalidParameter`] naming `device`), checks
    /// every value as [`crate::columns::first_bad`] would name it, and leaves the outputs
    /// untouched on any error.
    ///
    /// # Safety
    /// Every address is device memory of `call.device`, valid for the values
    /// [`crate::columns::DeviceColumns`] says it holds in precision `T`, the outputs
    /// writable and overlapping no input, for the length of the call; `call.stream`,
    /// when given, is a live stream of that device's primary context.
    ///
    /// ```
    /// use nbody_core::columns::DeviceColumns;
    /// use nbody_core::{Error, Executor, Params, Reference};
    /// let call = DeviceColumns::on_itself(0, 0x1000, 0x2000, 4, 0x3000);
    /// // SAFETY: the reference refuses before it reads anything.
    /// let r = unsafe { Executor::<f64>::field_columns_device(&mut Reference, call, &Params::softened(0.1)) };
    /// assert!(matches!(r, Err(Error::Unsupported { .. })));
    /// ```
    unsafe fn field_columns_device(
        &mut self,
        call: crate::columns::DeviceColumns,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let _ = (call, params);
        Err(Error::Unsupported {
            operation: "field_columns_device",
            reason: "this executor does not run on a GPU: pass host arrays",
        })
    }

    /// [`Executor::accelerations_batch_cells`] on particles the caller holds on a GPU
    /// (see [`crate::columns::DeviceColumns`]; `targets`, `velocities` and `jerk` are
    /// `None`): the field of the leaf list (and cells) written, not added, into the
    /// caller's device outputs, every particle's row (zero where no pair names it). The
    /// list and cells are on the host. The default is [`Error::Unsupported`]; an
    /// executor that overrides it checks the list as [`validate_batch_cells`] does and
    /// the values as [`Executor::field_columns_device`] does, outputs untouched on any
    /// error.
    ///
    /// # Safety
    /// As [`Executor::field_columns_device`]'s.
    ///
    /// ```
    /// use nbody_core::columns::DeviceColumns;
    /// use nbody_core::{Error, Executor, InteractionList, LeafList, Params, Reference};
    /// let none = InteractionList { pairs: &[], source_spans: &[] };
    /// let list = LeafList { particles: none, cells: &[], cell_spans: &[] };
    /// let call = DeviceColumns::on_itself(0, 0x1000, 0x2000, 4, 0x3000);
    /// // SAFETY: the reference refuses before it reads anything.
    /// let r = unsafe {
    ///     Executor::<f64>::accelerations_batch_cells_device(&mut Reference, call, &[], &list, &Params::softened(0.1))
    /// };
    /// assert!(matches!(r, Err(Error::Unsupported { .. })));
    /// ```
    unsafe fn accelerations_batch_cells_device(
        &mut self,
        call: crate::columns::DeviceColumns,
        cells: &[Cell<T>],
        list: &LeafList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        let _ = (call, cells, list, params);
        Err(Error::Unsupported {
            operation: "accelerations_batch_cells_device",
            reason: "this executor does not run on a GPU: pass host arrays",
        })
    }

    /// [`Executor::vjp`] of the particles on themselves on memory the caller holds on a
    /// GPU (see [`crate::columns::DeviceVjp`]): each particle's whole gradient written into
    /// the caller's device arrays. The default is [`Error::Unsupported`]; an executor that
    /// overrides it checks the particles as [`Executor::field_columns_device`] does and the
    /// cotangents as [`crate::validate::cotangents_of`] does, outputs untouched on any
    /// error.
    ///
    /// # Safety
    /// As [`Executor::field_columns_device`]'s, for the addresses of
    /// [`crate::columns::DeviceVjp`].
    ///
    /// ```
    /// use nbody_core::columns::DeviceVjp;
    /// use nbody_core::{Error, Executor, Params, Reference};
    /// let call = DeviceVjp {
    ///     device: 0, positions: 0x1000, masses: 0x2000, n: 4, cot_acc: 0x3000, cot_phi: None,
    ///     grad_positions: 0x4000, grad_masses: 0x5000, streams: [None; 4],
    /// };
    /// // SAFETY: the reference refuses before it reads anything.
    /// let r = unsafe { Executor::<f64>::vjp_device(&mut Reference, call, &Params::softened(0.1)) };
    /// assert!(matches!(r, Err(Error::Unsupported { .. })));
    /// ```
    unsafe fn vjp_device(&mut self, call: crate::columns::DeviceVjp, params: &Params<T>) -> Result<(), Error> {
        let _ = (call, params);
        Err(Error::Unsupported {
            operation: "vjp_device",
            reason: "this executor does not run on a GPU: pass host arrays",
        })
    }
}

/// Calls `f(targets, sources)` for each pair with targets and each non-empty span of
/// `spans(k, pair)` (the pair's source or cell spans), in order; the first error stops.
fn each_span<'l>(
    pairs: &[Pair],
    spans: impl Fn(usize, &Pair) -> &'l [Span],
    mut f: impl FnMut(Range<usize>, Range<usize>) -> Result<(), Error>,
) -> Result<(), Error> {
    for (k, pair) in pairs.iter().enumerate().filter(|(_, p)| !p.targets.is_empty()) {
        for s in spans(k, pair).iter().filter(|s| !s.is_empty()) {
            f(pair.targets.range(), s.range())?;
        }
    }
    Ok(())
}

/// The snap call in plain loops (see [`Executor::accelerations_snap_unchecked`]), on
/// validated input.
fn snap_loops<T: Real>(
    targets: Kinematics<'_, T>,
    sources: Kinematics<'_, T>,
    params: &Params<T>,
    out: &mut [Field<T>],
    jerk: &mut [Jerk<T>],
    snap: &mut [Jerk<T>],
) {
    let (eps2, masked) = (params.eps2(), params.masked());
    for i in 0..targets.pos.len() {
        let t = [targets.pos[i].position(), targets.vel[i].components(), targets.acc[i].acceleration()];
        let (mut sums, mut jsums, mut ssums) = (Field::zero(), Jerk::zero(), Jerk::zero());
        for j in 0..sources.pos.len() {
            let (vj, aj) = (sources.vel[j].components(), sources.acc[j].acceleration());
            crate::kernel::pair_snap(t, &sources.pos[j], vj, aj, eps2, masked, &mut sums, &mut jsums, &mut ssums);
        }
        crate::reference::subtract_self(params, sources.pos, i, &mut sums);
        crate::kernel::finish(params.g, &sums, params.potential, &mut out[i]);
        crate::kernel::finish_jerk(params.g, &jsums, &mut jerk[i]);
        crate::kernel::finish_jerk(params.g, &ssums, &mut snap[i]);
    }
}

/// The tidal call in plain loops (see [`Executor::accelerations_tidal_unchecked`]), on
/// validated input.
fn tidal_loops<T: Real>(call: TidalCall<'_, T>) {
    let TidalCall { targets, sources, params, out, tidal } = call;
    let k = crate::kernel::Softened::of(params);
    for (i, t) in targets.iter().enumerate() {
        let (sums, tsums) = crate::gradient::target_sums(params, &k, t, sources, i);
        crate::kernel::finish(params.g, &sums, params.potential, &mut out[i]);
        crate::kernel::finish_tidal(params.g, &tsums, &mut tidal[i]);
    }
}

/// [`Executor::vjp_batch`]'s default work, on validated input: the plain loops of the
/// default [`Executor::vjp_unchecked`] for each pair and source span, in the caller's
/// precision. An executor that runs some pairs its own way hands it the rest.
///
/// ```
/// use nbody_core::calls::VjpBatchCall;
/// use nbody_core::{Field, InteractionList, Pair, Params, Particle, Span, vjp_batch_loops};
/// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(2.0, 0.0, 0.0, 1.0)];
/// let pairs = [Pair { targets: Span::new(0, 2), sources: Span::new(0, 1) }];
/// let list = InteractionList { pairs: &pairs, source_spans: &[Span::new(0, 2)] };
/// let cot = [Field::new(1.0, 0.0, 0.0, 0.0), Field::zero()];
/// let mut g = [Particle::zero(); 2];
/// let params = Params::softened(0.0);
/// vjp_batch_loops(VjpBatchCall { particles: &p, list: &list, params: &params, cotangents: &cot, grads: &mut g });
/// assert_eq!((g[0].x, g[1].x, g[1].m), (0.25, -0.25, 0.25));
/// ```
pub fn vjp_batch_loops<T: Real>(call: VjpBatchCall<'_, T>) {
    let VjpBatchCall { particles, list, params, cotangents, grads } = call;
    for pair in list.pairs {
        let t = pair.targets.range();
        for s in list.sources_of(pair).iter().map(Span::range).filter(|s| !s.is_empty() && !t.is_empty()) {
            if s == t {
                let (p, c) = (&particles[t.clone()], &cotangents[t.clone()]);
                vjp_whole_loops(p, params, c, &mut grads[t.clone()]);
                continue;
            }
            let q = params.with_overlap(Overlap::between(t.clone(), s.clone()));
            let (tp, sp, c) = (&particles[t.clone()], &particles[s.clone()], &cotangents[t.clone()]);
            vjp_target_loops(tp, sp, &q, c, &mut grads[t.clone()]);
            vjp_source_loops(tp, sp, &q, c, &mut grads[s]);
        }
    }
}

/// Each particle's whole gradient in a system on itself in plain loops
/// ([`crate::gradient::pair_whole`] over every other particle).
fn vjp_whole_loops<T: Real>(
    particles: &[Particle<T>],
    params: &Params<T>,
    cotangents: &[Field<T>],
    grads: &mut [Particle<T>],
) {
    let k = crate::kernel::Softened::of(params);
    let h = |c: &Field<T>| crate::gradient::potential_cotangent(params, c);
    for (i, (p, ci)) in particles.iter().zip(cotangents).enumerate() {
        let mut s = [T::zero(); 4];
        for (_, (q, cj)) in particles.iter().zip(cotangents).enumerate().filter(|&(j, _)| j != i) {
            crate::gradient::pair_whole(&k, p, ci.acceleration(), h(ci), q, cj.acceleration(), h(cj), &mut s);
        }
        crate::gradient::add_whole(params, &s, &mut grads[i]);
    }
}

/// The targets' part of [`Executor::vjp`] in plain loops: `T_i c_i − h_i a_i`.
fn vjp_target_loops<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    cotangents: &[Field<T>],
    grads: &mut [Particle<T>],
) {
    let k = crate::kernel::Softened::of(params);
    for (i, t) in targets.iter().enumerate() {
        let (sums, tsums) = crate::gradient::target_sums(params, &k, t, sources, i);
        crate::gradient::add_target_gradient(params, &sums, &tsums, &cotangents[i], &mut grads[i]);
    }
}

/// The sources' part of [`Executor::vjp`] in plain loops.
fn vjp_source_loops<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    params: &Params<T>,
    cotangents: &[Field<T>],
    grads: &mut [Particle<T>],
) {
    let k = crate::kernel::Softened::of(params);
    let target_of = |j| params.overlap.target_of(j, targets.len());
    for (j, src) in sources.iter().enumerate() {
        let (mut s, mut m) = ([T::zero(); 3], T::zero());
        for (t, c) in targets.iter().zip(cotangents) {
            let h = crate::gradient::potential_cotangent(params, c);
            crate::gradient::pair_source_gradient(
                &k,
                src.position(),
                t.position(),
                c.acceleration(),
                h,
                &mut s,
                &mut m,
            );
        }
        if let Some(i) = target_of(j) {
            crate::gradient::subtract_self_source(params, &k, &cotangents[i], &mut s, &mut m);
        }
        crate::gradient::add_source_gradient(params, src.m, &s, m, &mut grads[j]);
    }
}

/// The per-particle call in plain loops (see
/// [`Executor::accelerations_per_particle_unchecked`]), on validated input.
fn per_particle_loops<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    eps: PerParticle<'_, T>,
    params: &Params<T>,
    out: &mut [Field<T>],
) {
    for (i, (t, o)) in targets.iter().zip(out.iter_mut()).enumerate() {
        let mut sums = Field::zero();
        let own = params.overlap.source_of(i);
        for (j, s) in sources.iter().enumerate().filter(|&(j, _)| Some(j) != own) {
            crate::kernel::Softened::between(params.softening, eps.targets[i], eps.sources[j]).pair(
                t.position(),
                s,
                &mut sums,
            );
        }
        crate::kernel::finish(params.g, &sums, params.potential, o);
    }
}

/// Everything a cell call checks, in order: parameters (with a disjoint overlap: cells
/// are never targets), output length, targets, cells.
///
/// ```
/// use nbody_core::{cell::Cell, validate_cells, Array, Error, Params, Particle};
/// let t = [Particle::new(0.0f32, 0.0, 0.0, 1.0)];
/// let c = [Cell::new(1.0, 0.0, 0.0, -1.0, [0.0; 6])];
/// assert_eq!(validate_cells(&t, &c, &Params::softened(0.1), 1), Err(Error::NegativeMass { array: Array::Cells, index: 0 }));
/// ```
pub fn validate_cells<T: Real>(
    targets: &[Particle<T>],
    cells: &[Cell<T>],
    params: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    validate::params(params)?;
    if params.overlap != Overlap::Disjoint {
        return Err(Error::InvalidParameter {
            name: "overlap",
            requirement: "Disjoint in a cell call (cells are never targets)",
        });
    }
    validate::length("output", targets.len(), out_len)?;
    validate::particles(targets, Array::Targets)?;
    crate::cell::check(cells)
}

/// Everything a batched cell call checks: parameters (any overlap: a batched call's
/// overlaps follow from its spans), output length, particles, cells, then the list
/// against both arrays.
pub fn validate_batch_cells<T: Real>(
    particles: &[Particle<T>],
    cells: &[Cell<T>],
    list: &LeafList<'_>,
    params: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    validate::params(params)?;
    validate::length("output", particles.len(), out_len)?;
    validate::particles(particles, Array::Particles)?;
    crate::cell::check(cells)?;
    list.validate(particles.len(), cells.len())
}

/// The cell call in plain loops (see [`Executor::accelerations_cells_unchecked`]), on
/// validated input.
fn cell_loops<T: Real>(targets: &[Particle<T>], cells: &[Cell<T>], params: &Params<T>, out: &mut [Field<T>]) {
    let kernel = crate::kernel::Softened::of(params);
    for (t, o) in targets.iter().zip(out.iter_mut()) {
        let mut sums = Field::zero();
        for c in cells {
            crate::cell::cell_softened(t.position(), c, &kernel, &mut sums);
        }
        crate::kernel::finish(params.g, &sums, params.potential, o);
    }
}

/// What a batched call checks before it computes anything.
pub fn validate_batch<T: Real>(
    particles: &[Particle<T>],
    list: &InteractionList<'_>,
    params: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    validate::params(params)?;
    validate::length("output", particles.len(), out_len)?;
    validate::particles(particles, Array::Particles)?;
    list.validate(particles.len())
}
