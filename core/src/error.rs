//! Typed errors: each names what was wrong and where.

use core::fmt;

/// Which input array an error refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Array {
    /// The target particles.
    Targets,
    /// The source particles.
    Sources,
    /// The target velocities (jerk kernel).
    TargetVelocities,
    /// The source velocities (jerk kernel).
    SourceVelocities,
    /// The particle array of a batched call.
    Particles,
    /// The velocities of a particle set that is both targets and sources (a device-resident
    /// system).
    Velocities,
    /// The target accelerations (snap kernel).
    TargetAccelerations,
    /// The source accelerations (snap kernel).
    SourceAccelerations,
    /// The far cells of a cell call ([`crate::cell::Cell`]).
    Cells,
    /// The targets' softening lengths (a call with a softening per particle).
    TargetSoftening,
    /// The sources' softening lengths (a call with a softening per particle).
    SourceSoftening,
    /// The softening lengths of a batched call's particles.
    Softening,
    /// An earlier field a tree force scales its opening test by.
    PreviousField,
    /// The cotangents of a call's outputs (a vector-Jacobian product).
    Cotangents,
}

impl Array {
    /// How errors name it: `"targets"`, `"source velocities"`, ...
    ///
    /// ```
    /// assert_eq!(nbody_core::Array::Velocities.label(), "velocities");
    /// ```
    pub const fn label(self) -> &'static str {
        match self {
            Array::Targets => "targets",
            Array::Sources => "sources",
            Array::TargetVelocities => "target velocities",
            Array::SourceVelocities => "source velocities",
            Array::Particles => "particles",
            Array::Velocities => "velocities",
            Array::TargetAccelerations => "target accelerations",
            Array::SourceAccelerations => "source accelerations",
            Array::Cells => "cells",
            Array::TargetSoftening => "target softening lengths",
            Array::SourceSoftening => "source softening lengths",
            Array::Softening => "softening lengths",
            Array::PreviousField => "previous field",
            Array::Cotangents => "cotangents",
        }
    }
}

impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Everything an executor can refuse or fail with. Nothing in nbody panics on bad input.
///
/// ```
/// use nbody_core::{Array, Error, Executor, Field, Params, Particle, Reference};
/// let bodies = [Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(f32::NAN, 0.0, 0.0, 1.0)];
/// let mut out = [Field::zero(); 2];
/// let err = Reference.accelerations(&bodies, &bodies, &Params::softened(0.1), &mut out).unwrap_err();
/// assert_eq!(err, Error::NonFinite { array: Array::Targets, index: 1 });
/// assert_eq!(err.to_string(), "targets[1] has a NaN or infinite component");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Two arrays that must have one length do not.
    LengthMismatch {
        /// The array whose length is wrong.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A coordinate, mass or velocity is NaN or infinite.
    NonFinite {
        /// The array.
        array: Array,
        /// The first offending index.
        index: usize,
    },
    /// A coordinate, velocity or softening length is at least
    /// [`crate::validate::range`] in magnitude (2^61 in f32, 2^509 in f64): its square
    /// could overflow.
    OutOfRange {
        /// The array.
        array: Array,
        /// The first offending index.
        index: usize,
    },
    /// A mass is negative.
    NegativeMass {
        /// The array.
        array: Array,
        /// The first offending index.
        index: usize,
    },
    /// A cell's spread (`Σ m |s|²`, [`crate::cell::Cell::spread`]) is negative.
    NegativeSpread {
        /// The first offending cell.
        index: usize,
    },
    /// A softening length is negative.
    NegativeSoftening {
        /// The array.
        array: Array,
        /// The first offending index.
        index: usize,
    },
    /// A scalar parameter is out of its domain.
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// What it must be.
        requirement: &'static str,
    },
    /// [`crate::Overlap::Shared`] names indices outside the targets or sources.
    OverlapOutOfRange {
        /// The array the shared range overruns.
        array: Array,
        /// One past the last index the overlap names.
        end: usize,
        /// The array's length.
        len: usize,
    },
    /// A target declared to be a source is not the same particle.
    OverlapMismatch {
        /// The target index.
        target: usize,
        /// The source index it was declared equal to.
        source: usize,
    },
    /// A span of a batched interaction list is reversed or past the particle array.
    InvalidSpan {
        /// `"pair targets"`, `"pair sources"` or `"source span"`.
        what: &'static str,
        /// The index of the pair or source span.
        index: usize,
    },
    /// No device could be used (no driver, no GPU, or the executor was not compiled in).
    NoDevice,
    /// The device has too little memory for the request; nothing was kept allocated.
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
    },
    /// A device call failed.
    Device {
        /// What was being done.
        during: &'static str,
        /// The driver's error code.
        code: u32,
    },
    /// One device of a multi-device executor failed; the call's outputs are untouched.
    OnDevice {
        /// The device's ordinal (as the driver numbers it).
        ordinal: u32,
        /// What was being done.
        during: &'static str,
        /// The driver's error code (2: out of memory).
        code: u32,
    },
    /// Another process of a distributed (collective) call refused its input or failed;
    /// that process's own error says why. Every process returns an error, so none waits
    /// for the others for ever.
    Peer {
        /// The lowest rank that failed.
        rank: usize,
    },
    /// The executor does not offer this entry point.
    Unsupported {
        /// The entry point.
        operation: &'static str,
        /// Why, and what to call instead.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::LengthMismatch { what, expected, found } => {
                write!(f, "{what} has length {found}, expected {expected}")
            }
            Error::NonFinite { array, index } => write!(f, "{array}[{index}] has a NaN or infinite component"),
            Error::OutOfRange { array, index } => write!(
                f,
                "{array}[{index}] has a component of magnitude 2^61 (f32) or 2^509 (f64) or more, whose square could overflow"
            ),
            Error::NegativeMass { array, index } => write!(f, "{array}[{index}] has a negative mass"),
            Error::NegativeSpread { index } => {
                write!(f, "cells[{index}] has a negative spread (Σ m |s|², never negative)")
            }
            Error::NegativeSoftening { array, index } => write!(f, "{array}[{index}] is a negative softening length"),
            Error::InvalidParameter { name, requirement } => write!(f, "parameter {name} must be {requirement}"),
            Error::OverlapOutOfRange { array, end, len } => {
                write!(f, "overlap reaches index {end} of {array}, which has {len} particles")
            }
            Error::OverlapMismatch { target, source } => {
                write!(f, "targets[{target}] was declared to be sources[{source}] but differs from it")
            }
            Error::InvalidSpan { what, index } => {
                write!(f, "{what} {index} is reversed or reaches past the particle array")
            }
            Error::NoDevice => f.write_str("no usable device (no driver or no GPU found)"),
            Error::OutOfMemory { bytes } => write!(f, "out of device memory allocating {bytes} bytes"),
            Error::Device { during, code } => write!(f, "device error {code} during {during}"),
            Error::OnDevice { ordinal, during, code } => write!(f, "device {ordinal}: error {code} during {during}"),
            Error::Peer { rank } => {
                write!(f, "rank {rank} refused the distributed call or failed (its own error says why)")
            }
            Error::Unsupported { operation, reason } => write!(f, "{operation} is not supported: {reason}"),
        }
    }
}

impl core::error::Error for Error {}
