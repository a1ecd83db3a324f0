//! # nbody
//!
//! Direct-summation gravity kernels: softened Newtonian acceleration, potential and jerk
//! between target and source particles, built to be the leaf kernel of tree and FMM
//! codes and to drive direct N-body simulations.
//!
//! This facade re-exports the crates: [`core`] (layouts, kernel, the [`Executor`]
//! trait, the reference), [`integrators`] (initial conditions and integrators), the CPU
//! executor [`cpu`], and with the `cuda` feature the CUDA executor `cuda`.
//!
//! ```
//! use nbody::{Executor, Field, Params, Reference};
//!
//! let (bodies, _velocities) = nbody::integrators::ics::plummer::<f64>(256, 1);
//! let mut field = vec![Field::zero(); bodies.len()];
//! let params = Params::softened(0.01).with_overlap_identical();
//! Reference.accelerations(&bodies, &bodies, &params, &mut field).unwrap();
//! // Potential energy of a Plummer sphere in standard units is about -1/2.
//! let w: f64 = 0.5 * bodies.iter().zip(&field).map(|(b, f)| b.m * f.phi).sum::<f64>();
//! assert!((w + 0.5).abs() < 0.1);
//! ```

#![warn(missing_docs)]

pub use nbody_backends as backends;
pub use nbody_core as core;
pub use nbody_core::{
    Bodies, Error, Executor, Field, InteractionList, Jerk, LeafList, Overlap, Pair, Params, Particle, PerParticle,
    Real, Reference, Softening, Span, Velocity,
};
pub use nbody_cpu as cpu;
#[cfg(feature = "cuda")]
pub use nbody_cuda as cuda;
pub use nbody_integrators as integrators;
#[cfg(feature = "mpi")]
pub use nbody_mpi as mpi;
pub mod bench;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "hdf5")]
pub mod gadget;
#[cfg(feature = "tree")]
pub mod simulation;
#[cfg(feature = "tree")]
pub mod tree;
pub mod units;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The examples of docs/executors-and-integrators.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/executors-and-integrators.md")]
pub struct ExecutorDocDoctests;

/// The examples of docs/tree-and-fmm.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/tree-and-fmm.md")]
pub struct TreeDocDoctests;
