//! # nbody-core
//!
//! The `#![no_std]` heart of nbody: everything that defines *what* is computed, and
//! nothing about *where* (threads, devices, files live in the executor crates).
//!
//! - [`Real`]: f32 and f64 through one trait.
//! - [`layout`]: AoS [`Particle`] `[x, y, z, m]` padded to 16/32 bytes (`bytemuck::Pod`),
//!   output [`Field`] `[ax, ay, az, phi]`, [`Velocity`], [`Jerk`], and [`SoaRef`], a view of four
//!   coordinate arrays.
//! - [`kernel`]: the softened pair interaction, with and without jerk.
//! - [`neighbours`]: nearest source and sources within a radius, found in the force pass.
//! - [`Params`] and [`Overlap`]: G, softening, potential on/off, which targets are also
//!   sources (self-interaction subtraction).
//! - [`rsqrt`]: exact and Newton-refined bit-trick reciprocal square roots.
//! - [`resident::Resident`]: executors that hold a system in their own memory and step
//!   it there (the leapfrog written once over it).
//! - [`columns`]: positions in rows and masses apart, as numpy and C hold them, for
//!   executors that take them without a host pass.
//! - [`Executor`]: the contract every executor meets; [`Reference`] implements it in the
//!   caller's precision and [`oracle`] recomputes everything in f64 for tests.
//!
//! ```
//! use nbody_core::{Executor, Field, Params, Particle, Reference};
//!
//! let bodies = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
//! let mut out = [Field::zero(); 2];
//! let params = Params::softened(0.0).with_overlap_identical();
//! Reference.accelerations(&bodies, &bodies, &params, &mut out).unwrap();
//! assert_eq!(out[0].ax, 1.0); // pulled towards +x with G m / r^2 = 1
//! assert_eq!(out[0].phi, -1.0);
//! ```
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
// The Hermite rules' f64 operations (sqrt, floor) come from std's float methods.
#[cfg(feature = "std")]
extern crate std;

pub mod calls;
pub mod capabilities;
pub mod cell;
pub mod collective;
pub mod columns;
mod error;
mod executor;
pub mod forward;
pub mod gradient;
#[cfg(feature = "alloc")]
pub mod jmemory;
pub mod kernel;
pub mod layout;
pub mod local;
pub mod neighbours;
pub mod oracle;
mod params;
pub mod projection;
mod real;
mod reference;
pub mod registry;
pub mod resident;
pub mod rsqrt;
#[cfg(feature = "std")]
pub mod rules;
pub mod stepping;
pub mod validate;

pub use error::{Array, Error};
pub use executor::{
    Bodies, Executor, InteractionList, Kinematics, LeafList, Pair, PerParticle, Span, validate_batch,
    validate_batch_cells, validate_cells, vjp_batch_loops,
};
pub use layout::{Field, Jerk, Particle, SoaRef, Tidal, Velocity};
pub use params::{Overlap, PairRule, Params, SPLINE_SUPPORT, Softening};
pub use real::Real;
pub use reference::Reference;
