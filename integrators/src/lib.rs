//! # nbody-integrators
//!
//! Integrators generic over the executor and the precision (force computation stays in
//! the executor, so any integrator runs on any executor), initial conditions
//! reproducible from a seed, and conservation diagnostics.
//!
//! - [`Leapfrog`]: kick-drift-kick, fixed step, time-reversible.
//! - [`Hermite`]: 4th-order predictor-corrector with a shared adaptive step.
//! - [`BlockHermite`]: the same with individual power-of-two steps; only active
//!   particles are targets.
//! - [`Hermite6`]: 6th-order Hermite (acceleration, jerk and snap from the kernel),
//!   shared adaptive or fixed step.
//! - [`DormandPrince`]: adaptive embedded Runge-Kutta 5(4).
//! - [`Integrator`]: the interface all of them share (step towards a time, diagnostics,
//!   checkpoints), for drivers that choose one at run time.
//! - [`ics`]: Plummer sphere, cold sphere, Kepler orbit, figure-eight.
//! - [`diagnostics`]: energies, momenta, centre of mass, virial ratio.
//!
//! ```
//! use nbody_integrators::ics;
//! let (pos, vel) = ics::plummer::<f64>(1000, 42);
//! assert_eq!(pos.len(), 1000);
//! assert_eq!(vel.len(), 1000);
//! ```
#![warn(missing_docs)]

mod block;
mod checkpoint;
mod hermite;
mod hermite6;
pub mod ics;
mod integrator;
mod leapfrog;
mod rk;
pub mod rules;
mod state;

pub use block::BlockHermite;
pub use checkpoint::{Arrays, Checkpoint, Words};
pub use hermite::{Criterion, Hermite};
pub use hermite6::Hermite6;
pub use integrator::Integrator;
pub use leapfrog::Leapfrog;
pub use rk::DormandPrince;
pub use state::{diagnostics, diagnostics_combined, Diagnostics, State, StepTiming};
