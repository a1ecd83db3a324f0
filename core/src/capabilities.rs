//! What an executor computes, declared once: for each softening kernel, the entry points
//! of [`crate::Executor`] that compute it. Every other call with that kernel is refused
//! with [`crate::Error::Unsupported`]. The conformance suite reads the declaration (a
//! declared entry point that refuses fails it, and so does an undeclared one that
//! computes), and `nbody info` and Python's `nbody.backends()` print it.
//!
//! ```
//! use nbody_core::capabilities::{Capabilities, Entry};
//! use nbody_core::{Executor, Reference, Softening};
//! let caps = Executor::<f64>::capabilities(&Reference);
//! assert!(caps.computes(Entry::Snap, Softening::Plummer));
//! assert!(!caps.computes(Entry::Snap, Softening::Spline));
//! assert!(!caps.computes(Entry::Columns, Softening::Plummer));
//! assert_eq!(caps, Capabilities::TRAIT_DEFAULTS);
//! ```

use crate::Softening;

/// An entry point of [`crate::Executor`] (its door and hook together).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    /// [`crate::Executor::accelerations`].
    Accelerations,
    /// [`crate::Executor::accelerations_jerk`].
    Jerk,
    /// [`crate::Executor::accelerations_jerk_neighbours`].
    Neighbours,
    /// [`crate::Executor::accelerations_snap`].
    Snap,
    /// [`crate::Executor::accelerations_batch`].
    Batch,
    /// [`crate::Executor::accelerations_cells`] and
    /// [`crate::Executor::accelerations_batch_cells`].
    Cells,
    /// [`crate::Executor::accelerations_per_particle`] and
    /// [`crate::Executor::accelerations_batch_per_particle`].
    PerParticle,
    /// [`crate::Executor::field_columns`].
    Columns,
    /// [`crate::Executor::accelerations_tidal`].
    Tidal,
    /// [`crate::Executor::vjp`].
    Vjp,
    /// [`crate::Executor::vjp_batch`].
    VjpBatch,
}

impl Entry {
    /// Every entry point, in the order tables list them.
    pub const ALL: [Entry; 11] = [
        Entry::Accelerations,
        Entry::Jerk,
        Entry::Neighbours,
        Entry::Snap,
        Entry::Batch,
        Entry::Cells,
        Entry::PerParticle,
        Entry::Columns,
        Entry::Tidal,
        Entry::Vjp,
        Entry::VjpBatch,
    ];

    /// The name tables print.
    ///
    /// ```
    /// assert_eq!(nbody_core::capabilities::Entry::PerParticle.name(), "per-particle");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Entry::Accelerations => "accelerations",
            Entry::Jerk => "jerk",
            Entry::Neighbours => "neighbours",
            Entry::Snap => "snap",
            Entry::Batch => "batch",
            Entry::Cells => "cells",
            Entry::PerParticle => "per-particle",
            Entry::Columns => "columns",
            Entry::Tidal => "tidal",
            Entry::Vjp => "vjp",
            Entry::VjpBatch => "vjp-batch",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of entry points.
///
/// ```
/// use nbody_core::capabilities::{Entries, Entry};
/// let e = Entries::NONE.with(Entry::Jerk).with(Entry::Cells);
/// assert!(e.contains(Entry::Cells) && !e.contains(Entry::Snap));
/// assert_eq!(e.without(Entry::Cells), Entries::NONE.with(Entry::Jerk));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entries(u16);

impl Entries {
    /// No entry point.
    pub const NONE: Entries = Entries(0);
    /// Every entry point.
    pub const ALL: Entries = Entries((1 << Entry::ALL.len()) - 1);

    /// This set and `e`.
    pub const fn with(self, e: Entry) -> Entries {
        Entries(self.0 | e.bit())
    }

    /// This set without `e`.
    pub const fn without(self, e: Entry) -> Entries {
        Entries(self.0 & !e.bit())
    }

    /// Whether `e` is in the set.
    pub const fn contains(self, e: Entry) -> bool {
        self.0 & e.bit() != 0
    }

    /// The entry points in the set, in [`Entry::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Entry> {
        Entry::ALL.into_iter().filter(move |e| self.contains(*e))
    }
}

/// What an executor computes: the entry points that take each softening kernel, one set
/// per member of [`Softening`] (its registry order), so a new kernel needs no new field
/// here and no executor spells out the kernels it does not treat apart. With ε = 0 every
/// kernel is Newtonian, and every entry point that computes Plummer takes it.
///
/// ```
/// use nbody_core::capabilities::{Capabilities, Entries, Entry};
/// use nbody_core::Softening;
/// let caps = Capabilities::uniform(Entries::NONE.with(Entry::Accelerations))
///     .with_kernel(Softening::Plummer, Entries::ALL);
/// assert!(caps.computes(Entry::Snap, Softening::Plummer));
/// assert!(!caps.computes(Entry::Snap, Softening::Spline));
/// assert_eq!(caps.map(|_, e| e.without(Entry::Accelerations)).kernel(Softening::Spline), Entries::NONE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Capabilities {
    kernels: [Entries; Softening::ALL.len()],
}

impl Capabilities {
    /// What the trait's default hooks compute: every entry point but the columns; the
    /// snap under Plummer only (as [`crate::Reference`] does).
    pub const TRAIT_DEFAULTS: Capabilities =
        Capabilities::uniform(Entries::ALL.without(Entry::Columns).without(Entry::Snap))
            .with_kernel(Softening::Plummer, Entries::ALL.without(Entry::Columns));

    /// The same entry points for every kernel.
    pub const fn uniform(entries: Entries) -> Capabilities {
        Capabilities { kernels: [entries; Softening::ALL.len()] }
    }

    /// These capabilities with `softening`'s entry points replaced by `entries`.
    pub const fn with_kernel(mut self, softening: Softening, entries: Entries) -> Capabilities {
        self.kernels[softening as usize] = entries;
        self
    }

    /// The entry points that compute `softening`.
    pub const fn kernel(&self, softening: Softening) -> Entries {
        self.kernels[softening as usize]
    }

    /// Each kernel's entry points through `f` (given the kernel and its entry points).
    pub fn map(mut self, f: impl Fn(Softening, Entries) -> Entries) -> Capabilities {
        for &s in Softening::ALL {
            self.kernels[s as usize] = f(s, self.kernel(s));
        }
        self
    }

    /// Whether `entry` computes `softening`.
    pub const fn computes(&self, entry: Entry, softening: Softening) -> bool {
        self.kernel(softening).contains(entry)
    }

    /// One line per kernel, in the registry's order, as `nbody info` prints it:
    /// `plummer: accelerations jerk …`.
    ///
    /// ```
    /// use nbody_core::capabilities::Capabilities;
    /// let lines = Capabilities::TRAIT_DEFAULTS.lines();
    /// assert!(lines[1].starts_with("spline: accelerations jerk neighbours batch"));
    /// ```
    #[cfg(feature = "alloc")]
    pub fn lines(&self) -> alloc::vec::Vec<alloc::string::String> {
        let list = |e: Entries| e.iter().map(Entry::name).collect::<alloc::vec::Vec<_>>().join(" ");
        Softening::ALL.iter().map(|&s| alloc::format!("{}: {}", s.name(), list(self.kernel(s)))).collect()
    }
}
