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
//! - [`Scheme`]: every integrator by its one name, built from [`SchemeSettings`]: what
//!   each front end parses, lists and builds.
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

/// `with_softening` for an integrator that keeps its call parameters in `params`.
macro_rules! softening_builder {
    ($t:ident, $example:literal) => {
        impl<T: nbody_core::Real> $t<T> {
            /// The same integrator with the softening kernel `softening` for every force
            /// call (Plummer unless set; see `nbody_core::Softening`). An executor that
            /// computes only Plummer's refuses the calls with `Error::Unsupported`.
            ///
            /// ```
            #[doc = concat!("let _ = nbody_integrators::", $example, "?.with_softening(nbody_core::Softening::Spline);")]
            /// # Ok::<(), nbody_core::Error>(())
            /// ```
            pub fn with_softening(mut self, softening: nbody_core::Softening) -> Self {
                self.params.softening = softening;
                self
            }
        }
    };
}

mod block;
mod checkpoint;
mod hermite;
mod hermite6;
pub mod ics;
mod integrator;
mod leapfrog;
mod registry;
mod resident_hermite;
mod rk;
/// The Hermite rules, defined once in the core (the device Hermite follows them too).
pub use nbody_core::rules;
mod state;

softening_builder!(Leapfrog, "Leapfrog::<f64>::new(0.01, 0.05)");
softening_builder!(Hermite, "Hermite::<f64>::new(0.02, 0.05)");
softening_builder!(BlockHermite, "BlockHermite::<f64>::new(0.02, 0.125, 0.05)");
softening_builder!(Hermite6, "Hermite6::<f64>::new(0.1, 0.05)");
softening_builder!(DormandPrince, "DormandPrince::<f64>::new(1e-8, 1e-8, 0.05)");

pub use block::BlockHermite;
pub use checkpoint::{Arrays, Checkpoint, Sink, Source, Words, seal, unseal};
pub use hermite::{Criterion, Hermite};
pub use hermite6::Hermite6;
pub use integrator::Integrator;
pub use leapfrog::Leapfrog;
pub use registry::{Scheme, SchemeSettings};
pub use resident_hermite::{HermiteCheckpoint, ResidentHermite, Steps};
pub use rk::DormandPrince;
pub use state::{Diagnostics, State, StepTiming, diagnostics, diagnostics_combined, diagnostics_of_sums};
