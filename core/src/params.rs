//! What a call computes: G, softening, potential on/off, and which targets are sources.

use crate::Real;

/// Which targets are also sources, for self-interaction subtraction.
///
/// With softening `eps > 0` the pair of a particle with itself adds nothing to the
/// acceleration (`x_j − x_i = 0`) and `−G m / eps` to the potential. Kernels do not test
/// `i ≠ j` in the inner loop; they sum every pair and subtract that term afterwards for
/// the targets this value names. With `eps = 0` zero-distance pairs are masked, so there
/// is nothing to subtract.
///
/// ```
/// use nbody_core::Overlap;
/// // targets[2..5] are sources[10..13]
/// let o = Overlap::Shared { target_start: 2, source_start: 10, len: 3 };
/// assert_eq!(o.source_of(3), Some(11));
/// assert_eq!(o.source_of(5), None);
/// assert_eq!(Overlap::Identical.source_of(7), Some(7));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overlap {
    /// No target is a source: every pair is counted (coincident particles included).
    #[default]
    Disjoint,
    /// Targets and sources are the same array: target `i` is source `i`.
    Identical,
    /// `targets[target_start + k]` is `sources[source_start + k]` for `k < len`.
    Shared {
        /// First shared target index.
        target_start: usize,
        /// The source index of that target.
        source_start: usize,
        /// How many consecutive targets are shared.
        len: usize,
    },
}

impl Overlap {
    /// The source index target `i` is, if any (unchecked against array lengths).
    #[inline]
    pub fn source_of(&self, i: usize) -> Option<usize> {
        match *self {
            Overlap::Disjoint => None,
            Overlap::Identical => Some(i),
            Overlap::Shared { target_start, source_start, len } => {
                (i >= target_start && i - target_start < len).then(|| source_start + (i - target_start))
            }
        }
    }

    /// The target index source `j` is, if any, for `n_targets` targets (the inverse of
    /// [`Overlap::source_of`]).
    ///
    /// ```
    /// use nbody_core::Overlap;
    /// let o = Overlap::Shared { target_start: 2, source_start: 10, len: 3 };
    /// assert_eq!((o.target_of(11, 8), o.target_of(13, 8)), (Some(3), None));
    /// ```
    #[inline]
    pub fn target_of(&self, j: usize, n_targets: usize) -> Option<usize> {
        let (t0, s0, len) = self.resolve(n_targets);
        (j >= s0 && j - s0 < len).then(|| t0 + (j - s0))
    }

    /// The shared targets as `(target_start, source_start, len)` for arrays of the given
    /// lengths (`Identical` spans them all; validation has checked they are equal).
    pub fn resolve(&self, n_targets: usize) -> (usize, usize, usize) {
        match *self {
            Overlap::Disjoint => (0, 0, 0),
            Overlap::Identical => (0, 0, n_targets),
            Overlap::Shared { target_start, source_start, len } => (target_start, source_start, len),
        }
    }

    /// What remains of this overlap when only the sources `range` are passed (as
    /// `&sources[range]`): a call split into source chunks subtracts each self term in
    /// the chunk that holds it.
    ///
    /// ```
    /// use nbody_core::Overlap;
    /// let o = Overlap::Identical.restrict_sources(10, 4..8);
    /// assert_eq!(o, Overlap::Shared { target_start: 4, source_start: 0, len: 4 });
    /// assert_eq!(Overlap::Disjoint.restrict_sources(10, 0..10), Overlap::Disjoint);
    /// ```
    pub fn restrict_sources(&self, n_targets: usize, range: core::ops::Range<usize>) -> Overlap {
        let (t0, s0, len) = self.resolve(n_targets);
        let (lo, hi) = (s0.max(range.start), (s0 + len).min(range.end));
        if lo >= hi {
            return Overlap::Disjoint;
        }
        Overlap::Shared { target_start: t0 + (lo - s0), source_start: lo - range.start, len: hi - lo }
    }

    /// What remains of this overlap when only the targets `range` are passed (as
    /// `&targets[range]`, with all the sources): a call split into target pieces.
    ///
    /// ```
    /// use nbody_core::Overlap;
    /// let o = Overlap::Identical.restrict_targets(10, 4..8);
    /// assert_eq!(o, Overlap::Shared { target_start: 0, source_start: 4, len: 4 });
    /// ```
    pub fn restrict_targets(&self, n_targets: usize, range: core::ops::Range<usize>) -> Overlap {
        let (t0, s0, len) = self.resolve(n_targets);
        let (lo, hi) = (t0.max(range.start), (t0 + len).min(range.end));
        if lo >= hi {
            return Overlap::Disjoint;
        }
        Overlap::Shared { target_start: lo - range.start, source_start: s0 + (lo - t0), len: hi - lo }
    }

    /// The overlap of a target span with a source span of one particle array, both given
    /// as `start..end` indices into it.
    ///
    /// ```
    /// use nbody_core::Overlap;
    /// let o = Overlap::between(4..8, 6..20);
    /// assert_eq!(o, Overlap::Shared { target_start: 2, source_start: 0, len: 2 });
    /// assert_eq!(Overlap::between(0..4, 4..8), Overlap::Disjoint);
    /// ```
    pub fn between(targets: core::ops::Range<usize>, sources: core::ops::Range<usize>) -> Overlap {
        let start = targets.start.max(sources.start);
        let end = targets.end.min(sources.end);
        if start >= end {
            return Overlap::Disjoint;
        }
        Overlap::Shared { target_start: start - targets.start, source_start: start - sources.start, len: end - start }
    }
}

crate::registry! {
    /// The softened kernel of a call. `Params::eps` is the Plummer-equivalent length ε for
    /// both: the potential of a particle at its own place is `−G m / ε` either way, so the
    /// self term removed for targets that are also sources is the same.
    ///
    /// With `u = r / h`, `h = 2.8 ε`:
    ///
    /// ```text
    /// Plummer: phi = −G m / sqrt(r² + ε²),  a = G m d / (r² + ε²)^(3/2)
    /// Spline (r < h): phi = G m W(u) / h,    a = G m g(u) d / h³, with
    ///   u < 1/2: W = −14/5 + u² (16/3 + u² (32/5 u − 48/5)),   g = 32/3 + u² (32 u − 192/5)
    ///   u ≥ 1/2: W = −16/5 + 1/(15 u) + u² (32/3 + u (−16 + u (48/5 − 32/15 u))),
    ///            g = 64/3 − 48 u + 192/5 u² − 32/3 u³ − 1/(15 u³)
    /// Spline (r ≥ h): Newtonian, phi = −G m / r, a = G m d / r³
    /// ```
    ///
    /// (Gadget's polynomials; for u ≥ 1/2 the kernels evaluate the same functions in
    /// `q = 1 − u`, which do not cancel near `u = 1`: see [`crate::kernel::spline`].)
    ///
    /// ```
    /// use nbody_core::{Params, Softening};
    /// let p = Params::softened(0.01f64).with_softening(Softening::Spline);
    /// assert_eq!(p.softening, Softening::Spline);
    /// assert!((p.spline_support() - 0.028).abs() < 1e-15);
    /// ```
    #[derive(Default)]
    pub enum Softening as "softening" {
        /// `1 / sqrt(r² + ε²)` everywhere (Plummer 1911; Aarseth 1963).
        #[default]
        Plummer => "plummer", "1 / sqrt(r² + eps²) everywhere";
        /// The cubic spline kernel of Monaghan & Lattanzio (1985) as Gadget uses it (Springel
        /// 2005): support `h = 2.8 ε`, exactly Newtonian beyond it.
        Spline => "spline", "Gadget's cubic spline: support 2.8 eps, Newtonian beyond it";
    }
}

impl Softening {
    /// How a pair's softening comes from a length per particle (the per-particle
    /// kernels, the oracle and every executor's staging read it here).
    ///
    /// ```
    /// use nbody_core::{PairRule, Softening};
    /// assert_eq!(Softening::Plummer.pair_rule(), PairRule::MeanSquare);
    /// assert_eq!(Softening::Plummer.pair_rule().eps2(0.5, 0.25), 0.15625); // the mean of the squares
    /// assert_eq!(Softening::Spline.pair_rule().eps2(0.5, 0.25), 0.25); // the larger, squared
    /// ```
    pub const fn pair_rule(self) -> PairRule {
        match self {
            Softening::Plummer => PairRule::MeanSquare,
            Softening::Spline => PairRule::Larger,
        }
    }

    /// Parses [`Softening::name`].
    ///
    /// ```
    /// assert_eq!(nbody_core::Softening::parse("spline"), Some(nbody_core::Softening::Spline));
    /// ```
    pub fn parse(name: &str) -> Option<Softening> {
        crate::registry::lookup(name)
    }
}

/// How a pair's softening comes from its two particles' lengths ε_i and ε_j
/// ([`Softening::pair_rule`]), and what each particle stores for the kernels so that a
/// pair combines in one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairRule {
    /// The pair's ε² is the mean of the squares: each particle stores `ε²/2`, a pair
    /// sums them (Plummer).
    MeanSquare,
    /// The pair's length is the larger: each particle stores its support
    /// `SPLINE_SUPPORT · ε`, a pair takes the maximum (the spline).
    Larger,
}

impl PairRule {
    /// What a particle of length `eps` stores: `scale · ε²` when `squared`, else
    /// `scale · ε`, as `(scale, squared)`.
    ///
    /// ```
    /// use nbody_core::PairRule;
    /// assert_eq!(PairRule::MeanSquare.stored(), (0.5, true));
    /// assert_eq!(PairRule::Larger.stored(), (nbody_core::SPLINE_SUPPORT, false));
    /// ```
    pub const fn stored(self) -> (f64, bool) {
        match self {
            PairRule::MeanSquare => (0.5, true),
            PairRule::Larger => (SPLINE_SUPPORT, false),
        }
    }

    /// The pair's Plummer-equivalent ε² from its two lengths.
    pub fn eps2(self, ei: f64, ej: f64) -> f64 {
        match self {
            PairRule::MeanSquare => 0.5 * ei * ei + 0.5 * ej * ej,
            PairRule::Larger => ei.max(ej) * ei.max(ej),
        }
    }
}

/// The spline's support over the Plummer-equivalent softening, `h = 2.8 ε` (Gadget's
/// convention).
pub const SPLINE_SUPPORT: f64 = 2.8;

/// Parameters of one call.
///
/// ```
/// use nbody_core::{Overlap, Params};
/// let p = Params::softened(0.01f32).with_g(4.3e-3).acceleration_only().with_overlap_identical();
/// assert_eq!(p.eps, 0.01);
/// assert!(!p.potential);
/// assert_eq!(p.overlap, Overlap::Identical);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params<T> {
    /// Gravitational constant (finite, non-negative). Default 1.
    pub g: T,
    /// Plummer softening length ε (finite, non-negative). `0` masks zero-distance pairs.
    pub eps: T,
    /// Also accumulate the potential into `Field::phi`. Default true.
    pub potential: bool,
    /// Which targets are also sources. Default [`Overlap::Disjoint`].
    pub overlap: Overlap,
    /// The softened kernel. Default [`Softening::Plummer`].
    pub softening: Softening,
}

impl<T: Real> Params<T> {
    /// G = 1, softening `eps`, potential on, targets disjoint from sources.
    pub fn softened(eps: T) -> Self {
        Self { g: T::one(), eps, potential: true, overlap: Overlap::Disjoint, softening: Softening::Plummer }
    }

    /// Sets the softened kernel.
    pub fn with_softening(mut self, softening: Softening) -> Self {
        self.softening = softening;
        self
    }

    /// The spline's support `h = 2.8 ε` ([`SPLINE_SUPPORT`]).
    #[inline]
    pub fn spline_support(&self) -> T {
        T::from_f64(SPLINE_SUPPORT) * self.eps
    }

    /// Sets G.
    pub fn with_g(mut self, g: T) -> Self {
        self.g = g;
        self
    }

    /// Accumulates only the acceleration; `phi` is left untouched.
    pub fn acceleration_only(mut self) -> Self {
        self.potential = false;
        self
    }

    /// Sets the overlap.
    pub fn with_overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// Declares targets and sources to be the same array.
    pub fn with_overlap_identical(self) -> Self {
        self.with_overlap(Overlap::Identical)
    }

    /// ε² as the kernels use it. When it is below the smallest normal number the masked
    /// path is used ([`Params::masked`]), so coincident pairs never produce infinities.
    #[inline]
    pub fn eps2(&self) -> T {
        self.eps * self.eps
    }

    /// Whether the kernel must mask zero-distance pairs: ε² = 0, or below the smallest
    /// normal number (ε under about 1e-19 in f32, 1e-154 in f64), where it would soften
    /// nothing and flushes to zero on some hardware.
    #[inline]
    pub fn masked(&self) -> bool {
        self.eps2() < T::min_positive_value()
    }

    /// Converts to another precision.
    pub fn cast<U: Real>(&self) -> Params<U> {
        Params {
            g: U::from_f64(self.g.to_f64()),
            eps: U::from_f64(self.eps.to_f64()),
            potential: self.potential,
            overlap: self.overlap,
            softening: self.softening,
        }
    }
}
