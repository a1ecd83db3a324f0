//! The integrators a front end can name, one spelling each: the command's `--integrator`,
//! the C ABI, Python's `Simulation(integrator=...)` and the AMUSE code all parse and list
//! names here, and build the integrator here, so a name means the same integrator with
//! the same settings everywhere.

use crate::{BlockHermite, DormandPrince, Hermite, Hermite6, Integrator, Leapfrog};
use nbody_core::{Error, Real, Softening};

nbody_core::registry! {
    /// An integrator by name.
    ///
    /// ```
    /// use nbody_integrators::Scheme;
    /// let s = Scheme::from_name("hermite6")?;
    /// assert_eq!((s, s.name()), (Scheme::Hermite6, "hermite6"));
    /// assert!(Scheme::from_name("rk45").unwrap_err().to_string().contains("leapfrog, hermite, block-hermite, hermite6, rk"));
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub enum Scheme as "integrator" {
        /// Kick-drift-kick leapfrog, fixed step.
        Leapfrog => "leapfrog", "kick-drift-kick leapfrog, fixed step dt";
        /// Hermite 4th order, shared adaptive steps.
        Hermite => "hermite", "Hermite 4th order, shared adaptive steps (accuracy eta)";
        /// Hermite 4th order, block (power-of-two) individual steps.
        BlockHermite => "block-hermite", "Hermite 4th order, block (power-of-two) individual steps (eta, largest step dt)";
        /// Hermite 6th order (acceleration, jerk and snap), shared adaptive steps.
        Hermite6 => "hermite6", "Hermite 6th order with the snap, shared adaptive steps (accuracy eta)";
        /// Dormand-Prince 5(4), adaptive.
        RungeKutta => "rk", "Dormand-Prince 5(4), adaptive (relative tolerance)";
    }
}

/// "one of" and every name, in [`Scheme::ALL`]'s order (a test keeps the two together).
const ONE_OF: &str = "one of leapfrog, hermite, block-hermite, hermite6, rk";

/// What building an integrator takes: each scheme reads its own fields.
///
/// ```
/// use nbody_integrators::{Scheme, SchemeSettings};
/// let settings = SchemeSettings { eta: 0.05, ..SchemeSettings::new(0.01f64) };
/// assert_eq!(Scheme::Hermite.build(&settings)?.name(), "hermite");
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SchemeSettings<T> {
    /// Plummer softening length (the spline's support is 2.8 times it).
    pub eps: T,
    /// The softened kernel.
    pub softening: Softening,
    /// Leapfrog's step; block-hermite's largest step (a power of two).
    pub dt: f64,
    /// The Hermite schemes' accuracy parameter (the step's fraction of the force's time scale).
    pub eta: f64,
    /// Runge-Kutta's relative and absolute tolerance.
    pub tolerance: f64,
}

impl<T: Real> SchemeSettings<T> {
    /// Softening `eps` (Plummer), dt 1/256, eta 0.02 and tolerance 1e-8 (Python's
    /// defaults; the command's eta is 0.01).
    pub fn new(eps: T) -> Self {
        SchemeSettings { eps, softening: Softening::Plummer, dt: 1.0 / 256.0, eta: 0.02, tolerance: 1e-8 }
    }
}

impl Scheme {
    /// Every name, comma-separated, for messages.
    pub fn names() -> &'static str {
        &ONE_OF["one of ".len()..]
    }

    /// The scheme called `name`; an unknown name is an error that lists every name.
    pub fn from_name(name: &str) -> Result<Scheme, Error> {
        nbody_core::registry::lookup(name).ok_or(Error::InvalidParameter { name: "integrator", requirement: ONE_OF })
    }

    /// Whether the scheme needs f64 forces (built in f32 it is an error).
    pub const fn needs_f64(self) -> bool {
        matches!(self, Scheme::Hermite6)
    }

    /// Whether the scheme takes individual (block) steps that land on multiples of
    /// its largest step, which output times must then be.
    pub const fn blocks(self) -> bool {
        matches!(self, Scheme::BlockHermite)
    }

    /// The integrator, from `settings` (bad values are the integrator's own errors).
    pub fn build<T: Real>(self, s: &SchemeSettings<T>) -> Result<Box<dyn Integrator<T> + Send>, Error> {
        let (eps, k) = (s.eps, s.softening);
        Ok(match self {
            Scheme::Leapfrog => Box::new(Leapfrog::new(s.dt, eps)?.with_softening(k)),
            Scheme::Hermite => Box::new(Hermite::new(s.eta, eps)?.with_softening(k)),
            Scheme::BlockHermite => Box::new(BlockHermite::new(s.eta, s.dt, eps)?.with_softening(k)),
            Scheme::Hermite6 => Box::new(Hermite6::new(s.eta, eps)?.with_softening(k)),
            Scheme::RungeKutta => Box::new(DormandPrince::new(s.tolerance, s.tolerance, eps)?.with_softening(k)),
        })
    }
}

impl std::str::FromStr for Scheme {
    type Err = Error;
    fn from_str(name: &str) -> Result<Scheme, Error> {
        Scheme::from_name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_builds_what_it_names() {
        let names: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(Scheme::names(), names.join(", "));
        let settings = SchemeSettings::new(0.01f64);
        for &s in Scheme::ALL {
            assert_eq!(Scheme::from_name(s.name()).unwrap(), s);
            assert_eq!(s.build(&settings).unwrap().name(), s.name(), "{s:?}");
        }
        assert!(Scheme::from_name("Hermite").is_err() && Scheme::from_name("").is_err());
    }

    #[test]
    fn bad_settings_are_the_integrators_errors() {
        let bad = SchemeSettings { eta: -1.0, dt: 0.0, tolerance: f64::NAN, ..SchemeSettings::new(0.01f64) };
        for &s in Scheme::ALL {
            assert!(s.build(&bad).is_err(), "{s:?} built from bad settings");
        }
        // The sixth-order scheme's step needs f64 forces; every other scheme runs in f32.
        for &s in Scheme::ALL {
            let built = s.build(&SchemeSettings::new(0.01f32));
            assert_eq!(built.is_err(), s.needs_f64(), "{s:?} in f32");
        }
    }
}
