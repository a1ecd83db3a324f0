//! # nbody-integrators
//!
//! Initial conditions (reproducible from a seed) for driving any executor. Integrators
//! and diagnostics build on these.
//!
//! ```
//! use nbody_integrators::ics;
//! let (pos, vel) = ics::plummer::<f64>(1000, 42);
//! assert_eq!(pos.len(), 1000);
//! assert_eq!(vel.len(), 1000);
//! ```
#![warn(missing_docs)]

pub mod ics;
