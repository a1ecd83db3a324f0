//! The kick-drift-kick leapfrog step, written once for a system wherever it lives: the
//! host leapfrog (nbody-integrators), one GPU's resident system and several GPUs' all
//! step through [`kick_drift_kick`], each saying only how to kick, drift and compute the
//! field of its own system ([`KickDrift`]).

use crate::{Error, Field, Particle, Real, Velocity};

/// The operations a leapfrog step is made of, on one system.
pub trait KickDrift<T: Real> {
    /// Whether the field held for the system belongs to its current positions.
    fn field_is_current(&self) -> bool;
    /// Computes and keeps the field at the current positions.
    fn compute_field(&mut self) -> Result<(), Error>;
    /// `v += a h` with the field held.
    fn kick(&mut self, h: T) -> Result<(), Error>;
    /// `x += v h` (the field held is then stale).
    fn drift(&mut self, h: T) -> Result<(), Error>;
}

/// One kick-drift-kick step of `dt` (the caller advances its clock): half a kick with
/// the field at the start (computed first if it is not current), a drift, the field at
/// the new positions, half a kick with it. The only copy of the step in the library.
///
/// ```
/// use nbody_core::stepping::{kick_drift_kick, KickDrift};
/// /// One particle on a spring, a = -x.
/// struct Spring { x: f64, v: f64, a: f64, current: bool }
/// impl KickDrift<f64> for Spring {
///     fn field_is_current(&self) -> bool { self.current }
///     fn compute_field(&mut self) -> Result<(), nbody_core::Error> { self.a = -self.x; self.current = true; Ok(()) }
///     fn kick(&mut self, h: f64) -> Result<(), nbody_core::Error> { self.v += self.a * h; Ok(()) }
///     fn drift(&mut self, h: f64) -> Result<(), nbody_core::Error> { self.x += self.v * h; self.current = false; Ok(()) }
/// }
/// let mut s = Spring { x: 1.0, v: 0.0, a: 0.0, current: false };
/// for _ in 0..628 { kick_drift_kick(&mut s, 0.01)?; }
/// assert!((s.x - 1.0).abs() < 1e-3 && s.v.abs() < 1e-2); // about one period
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub fn kick_drift_kick<T: Real, S: KickDrift<T> + ?Sized>(system: &mut S, dt: f64) -> Result<(), Error> {
    if !system.field_is_current() {
        system.compute_field()?;
    }
    let half = T::from_f64(0.5 * dt);
    system.kick(half)?;
    system.drift(T::from_f64(dt))?;
    system.compute_field()?;
    system.kick(half)
}

/// `v += a h` for every body: the host kick of every leapfrog on the host.
///
/// ```
/// use nbody_core::{stepping::kick, Field, Velocity};
/// let mut v = [Velocity::new(1.0f64, 0.0, 0.0)];
/// kick(&mut v, &[Field::new(2.0, 0.0, 0.0, 0.0)], 0.5);
/// assert_eq!(v[0].vx, 2.0);
/// ```
pub fn kick<T: Real>(vel: &mut [Velocity<T>], field: &[Field<T>], h: T) {
    for (v, f) in vel.iter_mut().zip(field) {
        v.vx = v.vx + f.ax * h;
        v.vy = v.vy + f.ay * h;
        v.vz = v.vz + f.az * h;
    }
}

/// `x += v h` for every body: the host drift of every leapfrog on the host.
///
/// ```
/// use nbody_core::{stepping::drift, Particle, Velocity};
/// let mut p = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
/// drift(&mut p, &[Velocity::new(0.0, 4.0, 0.0)], 0.25);
/// assert_eq!(p[0].y, 1.0);
/// ```
pub fn drift<T: Real>(pos: &mut [Particle<T>], vel: &[Velocity<T>], h: T) {
    for (p, v) in pos.iter_mut().zip(vel) {
        p.x = p.x + v.vx * h;
        p.y = p.y + v.vy * h;
        p.z = p.z + v.vz * h;
    }
}
