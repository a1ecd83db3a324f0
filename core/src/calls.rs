//! One value per hook: what a validated call hands an executor's `*_unchecked` hook (its
//! inputs, its parameters and the outputs it adds into), so that an executor, a wrapper
//! or a mutant names the call once instead of restating its arguments, and passes it on
//! whole.
//!
//! ```
//! use nbody_core::calls::DirectCall;
//! use nbody_core::{Executor, Field, Params, Particle, Reference};
//! let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
//! let mut out = [Field::zero(); 1];
//! let params = Params::softened(0.0);
//! // SAFETY: the call is valid (`validate::call` accepts it) and neither set is empty.
//! unsafe { Reference.accelerations_unchecked(DirectCall { targets: &p[..1], sources: &p[1..], params: &params, out: &mut out })? };
//! assert_eq!(out[0].ax, 1.0);
//! # Ok::<(), nbody_core::Error>(())
//! ```

use crate::cell::Cell;
use crate::executor::{Bodies, InteractionList, Kinematics, LeafList, PerParticle};
use crate::neighbours::Neighbours;
use crate::{Field, Jerk, Params, Particle, Tidal};

/// [`crate::Executor::accelerations_unchecked`]'s call: targets against sources.
#[derive(Debug)]
pub struct DirectCall<'a, T: crate::Real> {
    /// The targets.
    pub targets: &'a [Particle<T>],
    /// The sources.
    pub sources: &'a [Particle<T>],
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_jerk_unchecked`]'s call.
#[derive(Debug)]
pub struct JerkCall<'a, T: crate::Real> {
    /// The targets, with their velocities.
    pub targets: Bodies<'a, T>,
    /// The sources, with their velocities.
    pub sources: Bodies<'a, T>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
    /// One jerk per target, added into.
    pub jerk: &'a mut [Jerk<T>],
}

/// [`crate::Executor::accelerations_jerk_neighbours_unchecked`]'s call.
#[derive(Debug)]
pub struct NeighboursCall<'a, 'n, T: crate::Real> {
    /// The targets, with their velocities.
    pub targets: Bodies<'a, T>,
    /// The sources, with their velocities.
    pub sources: Bodies<'a, T>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
    /// One jerk per target, added into.
    pub jerk: &'a mut [Jerk<T>],
    /// The nearest source of each target, and the sources within a radius, merged into.
    pub neighbours: &'a mut Neighbours<'n, T>,
}

/// [`crate::Executor::accelerations_snap_unchecked`]'s call.
#[derive(Debug)]
pub struct SnapCall<'a, T: crate::Real> {
    /// The targets, with their velocities and accelerations.
    pub targets: Kinematics<'a, T>,
    /// The sources, with their velocities and accelerations.
    pub sources: Kinematics<'a, T>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
    /// One jerk per target, added into.
    pub jerk: &'a mut [Jerk<T>],
    /// One snap per target, added into.
    pub snap: &'a mut [Jerk<T>],
}

/// [`crate::Executor::accelerations_batch_unchecked`]'s call.
#[derive(Debug)]
pub struct BatchCall<'a, T: crate::Real> {
    /// The particles the list's spans index.
    pub particles: &'a [Particle<T>],
    /// The pairs of target and source spans.
    pub list: &'a InteractionList<'a>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per particle, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_cells_unchecked`]'s call.
#[derive(Debug)]
pub struct CellsCall<'a, T: crate::Real> {
    /// The targets.
    pub targets: &'a [Particle<T>],
    /// The far cells, as sources.
    pub cells: &'a [Cell<T>],
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_batch_cells_unchecked`]'s call.
#[derive(Debug)]
pub struct BatchCellsCall<'a, T: crate::Real> {
    /// The particles the list's particle spans index.
    pub particles: &'a [Particle<T>],
    /// The cells the list's cell spans index.
    pub cells: &'a [Cell<T>],
    /// Particle spans and cell spans per target group.
    pub list: &'a LeafList<'a>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per particle, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_per_particle_unchecked`]'s call.
#[derive(Debug)]
pub struct PerParticleCall<'a, T: crate::Real> {
    /// The targets.
    pub targets: &'a [Particle<T>],
    /// The sources.
    pub sources: &'a [Particle<T>],
    /// A softening length per target and per source.
    pub eps: PerParticle<'a, T>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_batch_per_particle_unchecked`]'s call.
#[derive(Debug)]
pub struct BatchPerParticleCall<'a, T: crate::Real> {
    /// The particles the list's spans index.
    pub particles: &'a [Particle<T>],
    /// A softening length per particle.
    pub eps: &'a [T],
    /// The pairs of target and source spans.
    pub list: &'a InteractionList<'a>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per particle, added into.
    pub out: &'a mut [Field<T>],
}

/// [`crate::Executor::accelerations_tidal_unchecked`]'s call.
#[derive(Debug)]
pub struct TidalCall<'a, T: crate::Real> {
    /// The targets.
    pub targets: &'a [Particle<T>],
    /// The sources.
    pub sources: &'a [Particle<T>],
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One field per target, added into.
    pub out: &'a mut [Field<T>],
    /// One tidal tensor per target, added into.
    pub tidal: &'a mut [Tidal<T>],
}

/// [`crate::Executor::vjp_unchecked`]'s call.
#[derive(Debug)]
pub struct VjpCall<'a, T: crate::Real> {
    /// The targets.
    pub targets: &'a [Particle<T>],
    /// The sources.
    pub sources: &'a [Particle<T>],
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One per target: the cotangent of its acceleration in `ax, ay, az` and of its
    /// potential in `phi` (read only when `params.potential` is set).
    pub cotangents: &'a [Field<T>],
    /// One gradient per target, `[∂L/∂x, ∂L/∂y, ∂L/∂z, 0]`, added into.
    pub target_grads: &'a mut [Particle<T>],
    /// One gradient per source, `[∂L/∂x, ∂L/∂y, ∂L/∂z, ∂L/∂m]`, added into.
    pub source_grads: &'a mut [Particle<T>],
}

/// [`crate::Executor::vjp_batch_unchecked`]'s call.
#[derive(Debug)]
pub struct VjpBatchCall<'a, T: crate::Real> {
    /// The particles the list's spans index.
    pub particles: &'a [Particle<T>],
    /// The pairs of target and source spans.
    pub list: &'a InteractionList<'a>,
    /// The call's parameters.
    pub params: &'a Params<T>,
    /// One cotangent per particle (on its field as a target), as [`VjpCall::cotangents`].
    pub cotangents: &'a [Field<T>],
    /// One gradient per particle, its parts as a target and as a source together, added
    /// into.
    pub grads: &'a mut [Particle<T>],
}
