//! What a GRAPE-6 code keeps in a device j-memory and what it reads back: the records
//! of a j-memory kept on an executor's device between calls (the GRAPE-6 drop-in's
//! device path), and neighbour lists packed so that only the entries found cross to the
//! host. Needs the `alloc` feature (the lists are owned).

use alloc::vec::Vec;

/// One j-particle as a code hands it over: its state at its own time `t` (acceleration
/// and jerk themselves, not GRAPE-6's a/2 and j/6).
///
/// ```
/// let p = nbody_core::jmemory::JParticle { x: [1.0, 0.0, 0.0], m: 0.5, v: [0.0; 3], a: [0.0; 3], j: [0.0; 3], t: 0.0 };
/// assert_eq!(p.m, 0.5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JParticle {
    /// Position.
    pub x: [f64; 3],
    /// Mass.
    pub m: f64,
    /// Velocity.
    pub v: [f64; 3],
    /// Acceleration.
    pub a: [f64; 3],
    /// Jerk.
    pub j: [f64; 3],
    /// The time of this state.
    pub t: f64,
}

/// Neighbour lists as a device search found them, packed on the device so that only the
/// entries found cross to the host (not `targets x capacity` slots): target `i` found
/// `counts[i]` sources, of which the first `capacity` are stored at
/// `entries[start[i]..]` in increasing order; `nearest[i]` is its nearest source.
///
/// ```no_run
/// # fn lists(p: &nbody_core::jmemory::PackedLists) {
/// for i in 0..p.counts.len() {
///     println!("target {i}: {:?}{}", p.list(i), if p.overflowed(i) { " (overflowed)" } else { "" });
/// }
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedLists {
    /// Sources found per target, stored or not.
    pub counts: Vec<u32>,
    /// Where each target's stored entries begin in `entries`.
    pub start: Vec<u32>,
    /// The stored entries, each target's in increasing order of index. An entry found
    /// inside the search's `inside` radius (where one was asked for) carries
    /// [`PackedLists::INSIDE`] besides its index.
    pub entries: Vec<u32>,
    /// Entries stored per target at most.
    pub capacity: usize,
    /// Each target's nearest source (`None` where it has no other).
    pub nearest: Vec<Option<u32>>,
}

impl PackedLists {
    /// The mark of an entry inside the search's `inside` radius (the index is the rest:
    /// `entry & !INSIDE`).
    pub const INSIDE: u32 = 1 << 31;

    /// Target `i`'s stored entries, increasing.
    pub fn list(&self, i: usize) -> &[u32] {
        let s = self.start[i] as usize;
        &self.entries[s..s + (self.counts[i] as usize).min(self.capacity)]
    }

    /// Whether target `i` found more than `capacity` sources.
    pub fn overflowed(&self, i: usize) -> bool {
        self.counts[i] as usize > self.capacity
    }
}
