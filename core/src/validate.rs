//! Input checks shared by every executor, so each reports the same typed error.
//!
//! Policy: coordinates, masses, velocities, G and ε must be finite; masses, G and ε
//! non-negative. Zero masses (padding) and coincident particles are accepted.
//!
//! ```
//! use nbody_core::{validate, Array, Error, Particle};
//! let ps = [Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(0.0, 0.0, 0.0, -1.0)];
//! assert_eq!(validate::particles(&ps, Array::Sources), Err(Error::NegativeMass { array: Array::Sources, index: 1 }));
//! ```

use crate::{Array, Bodies, Error, Overlap, Params, Particle, Real, Velocity};

/// Checks every particle is finite with a non-negative mass; names the first offender.
pub fn particles<T: Real>(ps: &[Particle<T>], array: Array) -> Result<(), Error> {
    for (index, p) in ps.iter().enumerate() {
        if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite() && p.m.is_finite()) {
            return Err(Error::NonFinite { array, index });
        }
        if p.m < T::zero() {
            return Err(Error::NegativeMass { array, index });
        }
    }
    Ok(())
}

/// Checks every velocity is finite and there is one per particle.
pub fn velocities<T: Real>(vs: &[Velocity<T>], n: usize, array: Array) -> Result<(), Error> {
    let what = if array == Array::TargetVelocities { "target velocities" } else { "source velocities" };
    length(what, n, vs.len())?;
    match vs.iter().position(|v| !(v.vx.is_finite() && v.vy.is_finite() && v.vz.is_finite())) {
        Some(index) => Err(Error::NonFinite { array, index }),
        None => Ok(()),
    }
}

/// Checks `found == expected`.
pub fn length(what: &'static str, expected: usize, found: usize) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, expected, found })
    }
}

/// Checks G and ε.
pub fn params<T: Real>(params: &Params<T>) -> Result<(), Error> {
    if !(params.eps.is_finite() && params.eps >= T::zero()) {
        return Err(Error::InvalidParameter { name: "eps", requirement: "finite and non-negative" });
    }
    // eps² is what the kernels add to r²: beyond about 1e19 (f32) it overflows.
    if !params.eps2().is_finite() {
        return Err(Error::InvalidParameter { name: "eps", requirement: "small enough that eps² is finite" });
    }
    if !(params.g.is_finite() && params.g >= T::zero()) {
        return Err(Error::InvalidParameter { name: "G", requirement: "finite and non-negative" });
    }
    Ok(())
}

/// Checks the overlap lies inside both arrays and the shared particles are identical.
pub fn overlap<T: Real>(overlap: &Overlap, targets: &[Particle<T>], sources: &[Particle<T>]) -> Result<(), Error> {
    if *overlap == Overlap::Identical {
        length("sources (overlap Identical)", targets.len(), sources.len())?;
    }
    let (t0, s0, len) = overlap.resolve(targets.len());
    if t0 + len > targets.len() {
        return Err(Error::OverlapOutOfRange { array: Array::Targets, end: t0 + len, len: targets.len() });
    }
    if s0 + len > sources.len() {
        return Err(Error::OverlapOutOfRange { array: Array::Sources, end: s0 + len, len: sources.len() });
    }
    for k in 0..len {
        if targets[t0 + k] != sources[s0 + k] {
            return Err(Error::OverlapMismatch { target: t0 + k, source: s0 + k });
        }
    }
    Ok(())
}

/// Everything a host-slice acceleration call checks, in a fixed order: parameters,
/// output length, targets, sources, overlap.
pub fn call<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    params(p)?;
    length("output", targets.len(), out_len)?;
    particles(targets, Array::Targets)?;
    particles(sources, Array::Sources)?;
    overlap(&p.overlap, targets, sources)
}

/// Everything a jerk call checks: the acceleration call's checks, then the jerk output
/// length and both velocity arrays.
pub fn jerk_call<T: Real>(
    targets: &Bodies<'_, T>,
    sources: &Bodies<'_, T>,
    p: &Params<T>,
    out_len: usize,
    jerk_len: usize,
) -> Result<(), Error> {
    call(targets.pos, sources.pos, p, out_len)?;
    length("jerk output", targets.pos.len(), jerk_len)?;
    velocities(targets.vel, targets.pos.len(), Array::TargetVelocities)?;
    velocities(sources.vel, sources.pos.len(), Array::SourceVelocities)?;
    // A shared particle has one velocity; two would give its pair with itself a jerk.
    let (t0, s0, len) = p.overlap.resolve(targets.pos.len());
    match (0..len).find(|&k| targets.vel[t0 + k] != sources.vel[s0 + k]) {
        Some(k) => Err(Error::OverlapMismatch { target: t0 + k, source: s0 + k }),
        None => Ok(()),
    }
}
