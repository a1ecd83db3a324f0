//! Reductions over the processes of a split computation.
//!
//! An executor whose calls span several processes (each owning a slice of the
//! particles, as `nbody-mpi`'s `Distributed` does) offers a [`Collective`] through
//! [`crate::Executor::collective`]; integrators written for one process combine their
//! per-process values (a shared time step, a diagnostic sum) through it, and so stay
//! correct on many. Executors of one process offer none: there is nothing to combine.

/// Reductions over every process taking part in an executor's calls. Each is a
/// collective call: every process makes it, in the same order.
///
/// ```
/// use nbody_core::collective::{self, Collective};
/// use nbody_core::Reference;
///
/// /// Two processes simulated in one: every value counts twice.
/// struct Twice;
/// impl Collective for Twice {
///     fn min(&mut self, x: f64) -> f64 {
///         x
///     }
///     fn sum(&mut self, values: &mut [f64]) {
///         values.iter_mut().for_each(|v| *v *= 2.0);
///     }
/// }
///
/// let mut v = [1.0, 2.0];
/// Twice.sum(&mut v);
/// assert_eq!(v, [2.0, 4.0]);
/// // One process: nothing to combine.
/// assert_eq!(collective::min::<f64, _>(&mut Reference, 0.5), 0.5);
/// ```
pub trait Collective {
    /// The smallest `x` over every process.
    fn min(&mut self, x: f64) -> f64;
    /// Replaces each element of `values` by its sum over every process.
    fn sum(&mut self, values: &mut [f64]);
}

/// `x` reduced to its minimum over the processes of `exec`'s calls (`x` itself for an
/// executor of one process).
pub fn min<T: crate::Real, E: crate::Executor<T> + ?Sized>(exec: &mut E, x: f64) -> f64 {
    exec.collective().map_or(x, |c| c.min(x))
}

/// Each of `values` summed over the processes of `exec`'s calls (left as they are for
/// an executor of one process).
pub fn sum<T: crate::Real, E: crate::Executor<T> + ?Sized>(exec: &mut E, values: &mut [f64]) {
    if let Some(c) = exec.collective() {
        c.sum(values);
    }
}
