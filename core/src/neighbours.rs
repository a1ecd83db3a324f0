//! Neighbour information found in the force pass: per target its nearest source, and
//! optionally every source within a radius (what collisional codes use to pick close
//! encounters and regularized pairs, and what GRAPE-6 hardware returns).
//!
//! Distances here are *unsoftened*: `r² = |x_j − x_i|²`. A target's own particle (as
//! [`crate::Overlap`] declares it) is never its own neighbour. Like forces, neighbour
//! results **accumulate** over calls: a closer source replaces the nearest found so far
//! and lists grow, so a tree code can call once per source list; `index_offset` turns
//! each call's source positions into the caller's indices.
//!
//! ```
//! use nbody_core::neighbours::{search, Nearest, Neighbours, Within};
//! use nbody_core::{Overlap, Particle};
//! let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0), Particle::new(3.0, 0.0, 0.0, 1.0)];
//! let mut nearest = [Nearest::none(); 3];
//! let (radius2, mut indices, mut counts) = ([4.0; 3], [0u32; 6], [0u32; 3]);
//! let mut nb = Neighbours {
//!     nearest: &mut nearest,
//!     within: Some(Within { radius2: &radius2, capacity: 2, indices: &mut indices, counts: &mut counts }),
//!     index_offset: 0,
//! };
//! search(&p, &p, &Overlap::Identical, &mut nb);
//! assert_eq!((nearest[0].index, nearest[0].r2), (1, 1.0));
//! assert_eq!(nearest[2].index, 1);
//! assert_eq!(&indices[2..4], &[0, 2]); // particle 1 sees 0 and 2 within r = 2
//! assert_eq!(counts, [1, 2, 1]);
//! ```

use crate::{Error, Overlap, Particle, Real};

/// The nearest source found so far for one target: its index (`u32::MAX` when none)
/// and unsoftened squared distance (`+inf` when none).
///
/// ```
/// use nbody_core::neighbours::Nearest;
/// let mut n = Nearest::<f32>::none();
/// n.offer(7, 2.0);
/// n.offer(3, 2.0); // a tie goes to the smaller index, so every executor agrees
/// n.offer(9, 5.0);
/// assert_eq!((n.index, n.r2), (3, 2.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nearest<T: Real> {
    /// The source's index (plus the call's `index_offset`), `u32::MAX` when none.
    pub index: u32,
    /// Its unsoftened squared distance, `+inf` when none.
    pub r2: T,
}

impl<T: Real> Nearest<T> {
    /// Nothing found yet: what a buffer starts as.
    pub fn none() -> Self {
        Self { index: u32::MAX, r2: T::infinity() }
    }

    /// Whether a source was found.
    pub fn is_some(&self) -> bool {
        self.index != u32::MAX
    }

    /// Keeps `(index, r2)` if it is closer (ties: the smaller index).
    #[inline(always)]
    pub fn offer(&mut self, index: u32, r2: T) {
        if r2 < self.r2 || (r2 == self.r2 && index < self.index) {
            self.index = index;
            self.r2 = r2;
        }
    }
}

/// Lists of the sources within a radius of each target, in one flat buffer of
/// `capacity` slots per target.
///
/// `counts[i]` is the number of sources found for target `i` so far, which may exceed
/// `capacity`: then the list *overflowed*, its slots hold `capacity` of the sources
/// (which ones is unspecified) and the caller grows the buffer and calls again, as
/// GRAPE-6 codes do. Without overflow each call's sources follow in increasing index.
#[derive(Debug)]
pub struct Within<'a, T: Real> {
    /// Per target, the squared radius `h²` (a source counts when `r² ≤ h²`).
    pub radius2: &'a [T],
    /// Slots per target.
    pub capacity: usize,
    /// `targets × capacity` slots.
    pub indices: &'a mut [u32],
    /// Per target, the number found (start at 0).
    pub counts: &'a mut [u32],
}

impl<T: Real> Within<'_, T> {
    /// Records source `index` for target `i`.
    #[inline(always)]
    pub fn push(&mut self, i: usize, index: u32) {
        let c = self.counts[i];
        if (c as usize) < self.capacity {
            self.indices[i * self.capacity + c as usize] = index;
        }
        self.counts[i] = c.saturating_add(1);
    }

    /// Whether target `i`'s list lost entries for lack of slots.
    pub fn overflowed(&self, i: usize) -> bool {
        self.counts[i] as usize > self.capacity
    }

    /// Target `i`'s stored entries.
    pub fn list(&self, i: usize) -> &[u32] {
        let n = (self.counts[i] as usize).min(self.capacity);
        &self.indices[i * self.capacity..i * self.capacity + n]
    }
}

/// What a neighbour-finding call fills in (see the [module](self) docs).
#[derive(Debug)]
pub struct Neighbours<'a, T: Real> {
    /// Per target, the nearest source (start at [`Nearest::none`]).
    pub nearest: &'a mut [Nearest<T>],
    /// Optionally, per target the sources within its radius.
    pub within: Option<Within<'a, T>>,
    /// Added to every source index reported (the sources' place in the caller's array).
    pub index_offset: u32,
}

impl<T: Real> Neighbours<'_, T> {
    /// Checks the buffers against `targets` targets and `sources` sources: lengths,
    /// radii (finite, not negative) and that indices fit in `u32`.
    pub fn validate(&self, targets: usize, sources: usize) -> Result<(), Error> {
        crate::validate::length("nearest neighbours", targets, self.nearest.len())?;
        if (self.index_offset as u64) + (sources as u64) > u32::MAX as u64 {
            return Err(Error::InvalidParameter {
                name: "index_offset",
                requirement: "index_offset + sources below 2^32 - 1",
            });
        }
        if let Some(w) = &self.within {
            crate::validate::length("neighbour radii", targets, w.radius2.len())?;
            crate::validate::length("neighbour counts", targets, w.counts.len())?;
            let slots = targets.checked_mul(w.capacity).ok_or(Error::InvalidParameter {
                name: "capacity",
                requirement: "targets x capacity fits in memory",
            })?;
            crate::validate::length("neighbour list slots", slots, w.indices.len())?;
            check_radii(w.radius2)?;
        }
        Ok(())
    }

    /// Target `i` meets source `j` at squared distance `r2` (not its own particle).
    #[inline(always)]
    pub fn meet(&mut self, i: usize, j: usize, r2: T) {
        let index = self.index_offset + j as u32;
        self.nearest[i].offer(index, r2);
        if let Some(w) = &mut self.within
            && r2 <= w.radius2[i]
        {
            w.push(i, index);
        }
    }
}

/// Squared unsoftened distance, summed as every executor sums it: `(dx² + dy²) + dz²`.
#[inline(always)]
pub fn distance2<T: Real>(a: &Particle<T>, b: &Particle<T>) -> T {
    let (dx, dy, dz) = (b.x - a.x, b.y - a.y, b.z - a.z);
    dx * dx + dy * dy + dz * dz
}

/// The neighbour search on its own, in plain loops: every target against every source
/// but its own particle (per `overlap`), sources in increasing index. Executors that do
/// not find neighbours in their force pass call this after it. `nb` must be valid for
/// these lengths ([`Neighbours::validate`]).
pub fn search<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    overlap: &Overlap,
    nb: &mut Neighbours<'_, T>,
) {
    let (t0, s0, len) = overlap.resolve(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let own = if i >= t0 && i < t0 + len { s0 + i - t0 } else { usize::MAX };
        for (j, s) in sources.iter().enumerate() {
            if j != own {
                nb.meet(i, j, distance2(t, s));
            }
        }
    }
}

/// The rule for squared neighbour radii, wherever lists are asked for: each finite and
/// not negative.
///
/// ```
/// use nbody_core::neighbours::check_radii;
/// assert!(check_radii(&[0.0, 0.25]).is_ok());
/// assert!(check_radii(&[-1.0f64]).is_err() && check_radii(&[f64::NAN]).is_err());
/// ```
pub fn check_radii<T: Real>(radius2: &[T]) -> Result<(), Error> {
    if radius2.iter().any(|h2| !(h2.is_finite() && *h2 >= T::zero())) {
        return Err(Error::InvalidParameter { name: "neighbour radius", requirement: "finite and not negative" });
    }
    Ok(())
}
