//! Input checks shared by every executor, so each reports the same typed error.
//!
//! Policy: coordinates, masses, velocities, G and ε must be finite; masses, G and ε
//! non-negative. Coordinates, velocities and softening lengths must also stay below
//! [`range`] in magnitude (2^61 in f32, 2^509 in f64), so that a pair's squared
//! separation and ε² stay finite. Zero masses (padding) and coincident particles are
//! accepted.
//!
//! ```
//! use nbody_core::{validate, Array, Error, Particle};
//! let ps = [Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(0.0, 0.0, 0.0, -1.0)];
//! assert_eq!(validate::particles(&ps, Array::Sources), Err(Error::NegativeMass { array: Array::Sources, index: 1 }));
//! ```

use crate::{Array, Bodies, Error, Kinematics, Overlap, Params, Particle, PerParticle, Real, Velocity};

/// The bound on the magnitude of coordinates, velocities and softening lengths: 2^61 in
/// f32, 2^509 in f64. Below it a separation's square summed over three axes, plus ε²,
/// stays finite (3 · (2 · 2^61)² + 2^122 < 2^128 = f32's overflow, and likewise in f64),
/// so no finite input can make a kernel's r² infinite and its force NaN.
///
/// ```
/// use nbody_core::validate;
/// assert_eq!(validate::range::<f32>(), 2f32.powi(61));
/// assert_eq!(validate::range::<f64>(), 2f64.powi(509));
/// ```
pub fn range<T: Real>() -> T {
    T::from_f64(if core::mem::size_of::<T>() == 4 { RANGE_F32 } else { RANGE_F64 })
}

const RANGE_F32: f64 = f64::from_bits((1023 + 61) << 52);
const RANGE_F64: f64 = f64::from_bits((1023 + 509) << 52);

/// Whether `x` is finite and below [`range`] in magnitude.
pub(crate) fn in_range<T: Real>(x: T) -> bool {
    x.abs() < range::<T>()
}

/// Checks every particle is finite, its coordinates within [`range`], with a
/// non-negative mass; names the first offender.
///
/// ```
/// use nbody_core::{validate, Array, Error, Particle};
/// let ps = [Particle::new(1e300f64, 0.0, 0.0, 1.0)];
/// assert_eq!(validate::particles(&ps, Array::Targets), Err(Error::OutOfRange { array: Array::Targets, index: 0 }));
/// ```
pub fn particles<T: Real>(ps: &[Particle<T>], array: Array) -> Result<(), Error> {
    // Fast path on the bits, branch-free so it vectorises (a call of a leaf's size spends
    // as long validating as computing otherwise); only a failure walks the particles
    // again to name the first offender.
    if particles_ok(ps) {
        return Ok(());
    }
    for (index, p) in ps.iter().enumerate() {
        if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite() && p.m.is_finite()) {
            return Err(Error::NonFinite { array, index });
        }
        if !(in_range(p.x) && in_range(p.y) && in_range(p.z)) {
            return Err(Error::OutOfRange { array, index });
        }
        if p.m < T::zero() {
            return Err(Error::NegativeMass { array, index });
        }
    }
    Ok(())
}

/// True exactly when [`particles`] would accept `ps`: every lane finite, every
/// coordinate within [`range`], and no mass negative (-0 is allowed, as `m < 0` says),
/// judged on the bits. Branch-free, for an executor that checks sources while it copies
/// them (in its own threads, compiled for its instruction set); once it says false,
/// [`particles`] names the offender.
///
/// ```
/// use nbody_core::{validate, Particle};
/// assert!(validate::particles_ok(&[Particle::new(1.0f64, 2.0, 3.0, -0.0)]));
/// assert!(!validate::particles_ok(&[Particle::new(f64::NAN, 2.0, 3.0, 1.0)]));
/// assert!(!validate::particles_ok(&[Particle::new(1.0f64, 1e300, 3.0, 1.0)]));
/// ```
#[inline]
pub fn particles_ok<T: Real>(ps: &[Particle<T>]) -> bool {
    // SAFETY: a record is four lanes of T (size and alignment asserted in layout.rs).
    let lanes: &[T] = unsafe { core::slice::from_raw_parts(ps.as_ptr().cast::<T>(), 4 * ps.len()) };
    lanes_ok::<T, 4, true>(lanes)
}

/// True when no lane is infinite or NaN, no lane `k` with `k % STRIDE == STRIDE - 1` is
/// negative (below -0), and every lane is below [`range`] in magnitude except, with
/// MASS, those same lanes (masses may take any finite value); judged on the bits without
/// branches, so that it vectorises.
#[inline]
fn lanes_ok<T: Real, const STRIDE: usize, const MASS: bool>(lanes: &[T]) -> bool {
    macro_rules! check {
        ($u:ty, $exp:expr, $sign:expr, $range:expr) => {{
            // SAFETY: T is f32 or f64, as wide as $u (checked by the match below); every
            // bit pattern is a valid integer.
            let bits: &[$u] = unsafe { core::slice::from_raw_parts(lanes.as_ptr().cast::<$u>(), lanes.len()) };
            let mut bad: $u = 0;
            for (k, &b) in bits.iter().enumerate() {
                let signed = k % STRIDE == STRIDE - 1;
                // All exponent bits set: infinity or NaN.
                bad |= ((b & $exp) == $exp) as $u;
                // An exponent at or past the range's (the range is a power of two).
                bad |= (!(MASS & signed) & ((b & $exp) >= $range)) as $u;
                // A signed lane: sign set on a non-zero value, negative.
                bad |= (signed & ((b & $sign) != 0) & ((b & !$sign) != 0)) as $u;
            }
            bad == 0
        }};
    }
    match core::mem::size_of::<T>() {
        4 => check!(u32, 0x7f80_0000u32, 0x8000_0000u32, (127 + 61) << 23),
        8 => check!(u64, 0x7ff0_0000_0000_0000u64, 0x8000_0000_0000_0000u64, (1023 + 509) << 52),
        _ => false,
    }
}

/// Checks every velocity is finite and there is one per particle.
pub fn velocities<T: Real>(vs: &[Velocity<T>], n: usize, array: Array) -> Result<(), Error> {
    length(array.label(), n, vs.len())?;
    if let Some(index) = vs.iter().position(|v| !(v.vx.is_finite() && v.vy.is_finite() && v.vz.is_finite())) {
        return Err(Error::NonFinite { array, index });
    }
    match vs.iter().position(|v| !(in_range(v.vx) && in_range(v.vy) && in_range(v.vz))) {
        Some(index) => Err(Error::OutOfRange { array, index }),
        None => Ok(()),
    }
}

/// Checks an acceleration array (snap kernel): length `n`, finite x, y, z (`phi` unread).
pub fn accelerations<T: Real>(acc: &[crate::Field<T>], n: usize, array: Array) -> Result<(), Error> {
    length(array.label(), n, acc.len())?;
    match acc.iter().position(|a| !(a.ax.is_finite() && a.ay.is_finite() && a.az.is_finite())) {
        Some(index) => Err(Error::NonFinite { array, index }),
        None => Ok(()),
    }
}

/// Checks `found == expected`.
pub fn length(what: &'static str, expected: usize, found: usize) -> Result<(), Error> {
    if expected == found { Ok(()) } else { Err(Error::LengthMismatch { what, expected, found }) }
}

/// A foreign slice's pull ([`crate::resident::ForeignSources::add_pull`]) adds to a
/// field only once [`crate::resident::Resident::compute_field`] made it current.
///
/// ```
/// assert!(nbody_core::validate::foreign_pull(true).is_ok());
/// assert!(nbody_core::validate::foreign_pull(false).is_err());
/// ```
pub fn foreign_pull(field_is_current: bool) -> Result<(), Error> {
    if field_is_current {
        Ok(())
    } else {
        Err(Error::InvalidParameter { name: "state", requirement: "a field made current by compute_field first" })
    }
}

/// Checks G and ε.
pub fn params<T: Real>(params: &Params<T>) -> Result<(), Error> {
    if !(params.eps.is_finite() && params.eps >= T::zero()) {
        return Err(Error::InvalidParameter { name: "eps", requirement: "finite and non-negative" });
    }
    // eps² is what the kernels add to r²: it must leave room for the separation's square.
    if !in_range(params.eps) {
        return Err(Error::InvalidParameter { name: "eps", requirement: "below 2^61 (f32) or 2^509 (f64)" });
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
    shared_rows_agree(targets, sources, (t0, s0, len), |a, b| a == b)
}

/// Everything a host-slice acceleration call checks, in a fixed order: parameters,
/// output length, targets, sources, overlap.
pub fn call<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    call_checks(targets, sources, p, out_len, true)
}

/// [`call`] less the source particles' check, for an executor that makes it with
/// [`particles_ok`] while it copies them; when either fails, [`call`] names the error.
///
/// ```
/// use nbody_core::{validate, Params, Particle};
/// let bad = [Particle::new(f32::NAN, 0.0, 0.0, 1.0)];
/// let ok = [Particle::new(0.0f32, 0.0, 0.0, 1.0)];
/// let p = Params::softened(0.1f32);
/// assert!(validate::call_but_sources(&ok, &bad, &p, 1).is_ok());
/// assert!(validate::call(&ok, &bad, &p, 1).is_err());
/// ```
pub fn call_but_sources<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    call_checks(targets, sources, p, out_len, false)
}

/// [`call`]'s checks in their order, the source particles' only with `sources_too`.
fn call_checks<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    out_len: usize,
    sources_too: bool,
) -> Result<(), Error> {
    params(p)?;
    length("output", targets.len(), out_len)?;
    particles(targets, Array::Targets)?;
    // Sources that are the targets' very slice (a system on itself) were just checked.
    if sources_too && !core::ptr::eq(targets, sources) {
        particles(sources, Array::Sources)?;
    }
    overlap(&p.overlap, targets, sources)
}

/// Checks softening lengths: one per particle (`n`), each finite and non-negative;
/// names the first offender.
///
/// ```
/// use nbody_core::{validate, Array, Error};
/// let eps = [0.1f32, -0.5];
/// assert_eq!(validate::softening_lengths(&eps, 2, Array::Softening), Err(Error::NegativeSoftening { array: Array::Softening, index: 1 }));
/// ```
pub fn softening_lengths<T: Real>(eps: &[T], n: usize, array: Array) -> Result<(), Error> {
    length(array.label(), n, eps.len())?;
    // As for particles: the bits first, branch-free; the walk only names an offender.
    if lanes_ok::<T, 1, false>(eps) {
        return Ok(());
    }
    for (index, &e) in eps.iter().enumerate() {
        if !e.is_finite() {
            return Err(Error::NonFinite { array, index });
        }
        if !in_range(e) {
            return Err(Error::OutOfRange { array, index });
        }
        if e < T::zero() {
            return Err(Error::NegativeSoftening { array, index });
        }
    }
    Ok(())
}

/// Everything a call with a softening per particle checks: the acceleration call's
/// checks, then both length arrays, then that a target declared to be a source has its
/// softening length too (its pair with itself is removed with that length).
///
/// ```
/// use nbody_core::{validate, Error, Params, Particle, PerParticle};
/// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
/// let eps = PerParticle { targets: &[0.1], sources: &[0.2] };
/// let params = Params::softened(0.0).with_overlap_identical();
/// assert_eq!(validate::per_particle_call(&p, &p, &eps, &params, 1), Err(Error::OverlapMismatch { target: 0, source: 0 }));
/// ```
pub fn per_particle_call<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    eps: &PerParticle<'_, T>,
    p: &Params<T>,
    out_len: usize,
) -> Result<(), Error> {
    call(targets, sources, p, out_len)?;
    let sides = Sides { n: (targets.len(), sources.len()), arrays: (Array::TargetSoftening, Array::SourceSoftening) };
    sides.check(eps.targets, eps.sources, &p.overlap, softening_lengths, |a, b| a == b)
}

/// That the `len` records of `targets` from `t0` and of `sources` from `s0` (an overlap,
/// already checked to lie inside both arrays) agree by `same`, else the first pair that
/// does not. The same slice from the same index, or equal bytes (one memory compare, far
/// cheaper than comparing numbers row by row), agree without a walk; the walk names a
/// mismatch or finds the rows equal as numbers (-0 beside +0).
fn shared_rows_agree<X: bytemuck::Pod>(
    targets: &[X],
    sources: &[X],
    (t0, s0, len): (usize, usize, usize),
    same: impl Fn(&X, &X) -> bool,
) -> Result<(), Error> {
    let (t, s) = (&targets[t0..t0 + len], &sources[s0..s0 + len]);
    if core::ptr::eq(t, s) || bytemuck::cast_slice::<X, u8>(t) == bytemuck::cast_slice::<X, u8>(s) {
        return Ok(());
    }
    match (0..len).find(|&k| !same(&t[k], &s[k])) {
        Some(k) => Err(Error::OverlapMismatch { target: t0 + k, source: s0 + k }),
        None => Ok(()),
    }
}

/// One per-particle array on each side of a call: how many particles each side has and
/// how an error names each array.
struct Sides {
    n: (usize, usize),
    arrays: (Array, Array),
}

impl Sides {
    /// Checks both sides' arrays with `check`, once when both are one slice (a system on
    /// itself), then that a particle on both sides has one value (`same`): two would give
    /// its pair with itself a term.
    fn check<X: bytemuck::Pod>(
        &self,
        targets: &[X],
        sources: &[X],
        overlap: &Overlap,
        check: fn(&[X], usize, Array) -> Result<(), Error>,
        same: impl Fn(&X, &X) -> bool,
    ) -> Result<(), Error> {
        check(targets, self.n.0, self.arrays.0)?;
        let one = core::ptr::eq(targets, sources) && self.n.0 == self.n.1;
        if !one {
            check(sources, self.n.1, self.arrays.1)?;
        }
        shared_rows_agree(targets, sources, overlap.resolve(self.n.0), same)
    }
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
    jerk_extras(targets, sources, p, jerk_len)
}

/// The jerk doors' check ([`door`] over [`jerk_call`], less the source particles' check
/// when the hook makes it): whether the hook is to run.
pub(crate) fn jerk_door<T: Real>(
    sources_in_hook: bool,
    targets: &Bodies<'_, T>,
    sources: &Bodies<'_, T>,
    params: &Params<T>,
    n: usize,
    n_jerk: usize,
) -> Result<bool, Error> {
    door(
        sources_in_hook,
        || {
            call_but_sources(targets.pos, sources.pos, params, n)?;
            jerk_extras(targets, sources, params, n_jerk)
        },
        || jerk_call(targets, sources, params, n, n_jerk),
        targets.pos.is_empty() || sources.pos.is_empty(),
    )
}

/// Everything a snap call checks: the jerk call's checks, then the snap output length,
/// both acceleration arrays, and one acceleration per shared particle.
///
/// ```
/// use nbody_core::{validate, Field, Kinematics, Params, Particle, Velocity};
/// let (p, v) = ([Particle::new(0.0f64, 0.0, 0.0, 1.0)], [Velocity::new(0.0, 0.0, 0.0)]);
/// let a = [Field::new(f64::NAN, 0.0, 0.0, 0.0)];
/// let k = Kinematics { pos: &p, vel: &v, acc: &a };
/// assert!(validate::snap_call(&k, &k, &Params::softened(0.1), 1, 1, 1).is_err());
/// ```
pub fn snap_call<T: Real>(
    targets: &Kinematics<'_, T>,
    sources: &Kinematics<'_, T>,
    p: &Params<T>,
    out_len: usize,
    jerk_len: usize,
    snap_len: usize,
) -> Result<(), Error> {
    let (tb, sb) = (Bodies { pos: targets.pos, vel: targets.vel }, Bodies { pos: sources.pos, vel: sources.vel });
    jerk_call(&tb, &sb, p, out_len, jerk_len)?;
    length("snap output", targets.pos.len(), snap_len)?;
    let sides = Sides {
        n: (targets.pos.len(), sources.pos.len()),
        arrays: (Array::TargetAccelerations, Array::SourceAccelerations),
    };
    sides.check(targets.acc, sources.acc, &p.overlap, accelerations, |a, b| a.acceleration() == b.acceleration())
}

/// Everything a tidal call checks: an acceleration call's checks, then the tidal
/// output's length.
///
/// ```
/// use nbody_core::{validate, Params, Particle};
/// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
/// assert!(validate::tidal_call(&p, &p, &Params::softened(0.1), 1, 1).is_ok());
/// assert!(validate::tidal_call(&p, &p, &Params::softened(0.1), 1, 2).is_err());
/// ```
pub fn tidal_call<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    out_len: usize,
    tidal_len: usize,
) -> Result<(), Error> {
    call(targets, sources, p, out_len)?;
    length("tidal output", targets.len(), tidal_len)
}

/// Everything a vector-Jacobian product checks: an acceleration call's checks with one
/// cotangent per target (finite in the lanes the call reads: the potential's only when
/// `p.potential`), then one gradient per target and per source.
///
/// ```
/// use nbody_core::{validate, Array, Error, Field, Params, Particle};
/// let p = [Particle::new(0.0f64, 0.0, 0.0, 1.0)];
/// let bad = [Field::new(f64::NAN, 0.0, 0.0, 0.0)];
/// assert_eq!(
///     validate::vjp_call(&p, &p, &Params::softened(0.1), &bad, 1, 1),
///     Err(Error::NonFinite { array: Array::Cotangents, index: 0 })
/// );
/// let unread = [Field::new(0.0, 0.0, 0.0, f64::NAN)]; // an acceleration-only call
/// assert!(validate::vjp_call(&p, &p, &Params::softened(0.1).acceleration_only(), &unread, 1, 1).is_ok());
/// ```
pub fn vjp_call<T: Real>(
    targets: &[Particle<T>],
    sources: &[Particle<T>],
    p: &Params<T>,
    cotangents: &[crate::Field<T>],
    target_grads_len: usize,
    source_grads_len: usize,
) -> Result<(), Error> {
    call(targets, sources, p, cotangents.len())?;
    cotangents_of(cotangents, p)?;
    length("target gradients", targets.len(), target_grads_len)?;
    length("source gradients", sources.len(), source_grads_len)
}

/// Checks a product's cotangents: finite and within [`range`] in the lanes the call
/// reads (the potential's only when `p.potential`); names the first offender.
///
/// ```
/// use nbody_core::{validate, Array, Error, Field, Params};
/// let c = [Field::new(0.0f32, 1.0, 0.0, 0.0), Field::new(0.0, f32::INFINITY, 0.0, 0.0)];
/// assert_eq!(validate::cotangents_of(&c, &Params::softened(0.1)), Err(Error::NonFinite { array: Array::Cotangents, index: 1 }));
/// ```
pub fn cotangents_of<T: Real>(cotangents: &[crate::Field<T>], p: &Params<T>) -> Result<(), Error> {
    // The lanes the call reads: a cotangent on an output the call leaves alone is not.
    let read = |c: &crate::Field<T>| [c.ax, c.ay, c.az, if p.potential { c.phi } else { T::zero() }];
    for (index, c) in cotangents.iter().enumerate() {
        let lanes = read(c);
        if !lanes.iter().all(|x| x.is_finite()) {
            return Err(Error::NonFinite { array: Array::Cotangents, index });
        }
        // Bounded like coordinates, so a cotangent times a pair's terms stays finite.
        if !lanes.iter().all(|&x| in_range(x)) {
            return Err(Error::OutOfRange { array: Array::Cotangents, index });
        }
    }
    Ok(())
}

/// What a jerk call checks beyond an acceleration call.
fn jerk_extras<T: Real>(
    targets: &Bodies<'_, T>,
    sources: &Bodies<'_, T>,
    p: &Params<T>,
    jerk_len: usize,
) -> Result<(), Error> {
    length("jerk output", targets.pos.len(), jerk_len)?;
    let sides =
        Sides { n: (targets.pos.len(), sources.pos.len()), arrays: (Array::TargetVelocities, Array::SourceVelocities) };
    sides.check(targets.vel, sources.vel, &p.overlap, velocities, |a, b| a == b)
}

/// The widest span of coordinates a mixed-precision executor accepts: it rounds offsets
/// to f32 and squares them, so spans up to about 1e18 (squares up to 1e36, below f32's
/// 3.4e38) stay finite.
pub const MIXED_MAX_EXTENT: f64 = 1e18;

/// Refuses targets and sources that span more than [`MIXED_MAX_EXTENT`] on some axis
/// (for mixed-precision executors, whose f32 offsets would overflow).
///
/// ```
/// use nbody_core::{validate, Particle};
/// let near = [Particle::new(0.0, 0.0, 0.0, 1.0)];
/// let far = [Particle::new(1e19, 0.0, 0.0, 1.0)];
/// assert!(validate::mixed_extent(&near, &near).is_ok());
/// assert!(validate::mixed_extent(&near, &far).is_err());
/// ```
pub fn mixed_extent<T: Real>(targets: &[Particle<T>], sources: &[Particle<T>]) -> Result<(), Error> {
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for p in targets.iter().chain(sources) {
        for (k, x) in [p.x, p.y, p.z].into_iter().enumerate() {
            lo[k] = lo[k].min(x.to_f64());
            hi[k] = hi[k].max(x.to_f64());
        }
    }
    if (0..3).any(|k| hi[k] - lo[k] > MIXED_MAX_EXTENT) {
        return Err(Error::InvalidParameter {
            name: "coordinates",
            requirement: "within 1e18 of each other for a mixed-precision executor",
        });
    }
    Ok(())
}

/// `Ok` for a call whose softening is Plummer (or ε = 0, where both kernels are
/// Newtonian); the typed refusal of an executor (or entry point) that computes no other
/// kernel.
///
/// ```
/// use nbody_core::{validate, Error, Params, Softening};
/// assert!(validate::plummer_only(&Params::softened(0.1f32), "accelerations").is_ok());
/// let spline = Params::softened(0.1f32).with_softening(Softening::Spline);
/// assert!(matches!(validate::plummer_only(&spline, "accelerations"), Err(Error::Unsupported { .. })));
/// ```
pub fn plummer_only<T: Real>(params: &Params<T>, operation: &'static str) -> Result<(), Error> {
    // Every other kernel is refused here until the caller computes it.
    if crate::kernel::Softened::of(params).softening() == crate::Softening::Plummer {
        return Ok(());
    }
    Err(Error::Unsupported {
        operation,
        reason: "this call computes Plummer softening only on this executor (the reference and cpu executors compute the spline in every call but the snap)",
    })
}

/// The check a door makes before its hook: the call's whole check (`full`), or, where the
/// executor's hooks check the sources as they copy them (`sources_in_hook`), every check
/// but the sources' (`but_sources`, whose error is named as `full` names it). Returns
/// whether the hook is to run: `false` for an empty call, which is answered `Ok` once
/// `full` passes.
///
/// ```
/// use nbody_core::{Error, validate};
/// let ok = || Ok(());
/// assert_eq!(validate::door(true, ok, ok, false), Ok(true));
/// assert_eq!(validate::door(false, ok, ok, true), Ok(false));
/// let bad = || Err(Error::InvalidParameter { name: "eps", requirement: "finite" });
/// assert!(validate::door(false, ok, bad, false).is_err());
/// ```
pub fn door(
    sources_in_hook: bool,
    but_sources: impl FnOnce() -> Result<(), Error>,
    full: impl Fn() -> Result<(), Error>,
    empty: bool,
) -> Result<bool, Error> {
    if !sources_in_hook || empty {
        full()?;
        return Ok(!empty);
    }
    but_sources().map_err(|e| full().err().unwrap_or(e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each velocity or acceleration array is named as itself in length errors.
    #[test]
    fn arrays_are_named_as_themselves() {
        let v = [Velocity::new(0.0f64, 0.0, 0.0)];
        for (array, label) in [
            (Array::TargetVelocities, "target velocities"),
            (Array::SourceVelocities, "source velocities"),
            (Array::Velocities, "velocities"),
        ] {
            assert_eq!(velocities(&v, 2, array), Err(Error::LengthMismatch { what: label, expected: 2, found: 1 }));
        }
        let a = [crate::Field::new(0.0f32, f32::NAN, 0.0, 0.0)];
        assert_eq!(
            accelerations(&a, 1, Array::SourceAccelerations),
            Err(Error::NonFinite { array: Array::SourceAccelerations, index: 0 })
        );
        assert_eq!(
            accelerations(&a, 3, Array::TargetAccelerations),
            Err(Error::LengthMismatch { what: "target accelerations", expected: 3, found: 1 })
        );
    }

    /// The fast path agrees with the plain checks on every kind of lane value.
    #[test]
    fn fast_path_agrees_with_the_plain_checks() {
        let (r32, r64) = (range::<f32>() as f64, range::<f64>());
        // The ranges and the floats just below them, of both precisions.
        let below = |r: f64, eps: f64| r * (1.0 - eps / 2.0);
        let edges = [r32, -r32, below(r32, f32::EPSILON as f64), r64, -below(r64, f64::EPSILON)];
        let odd = [0.0, -0.0, 1.0, -1.0, f64::MIN_POSITIVE / 4.0, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]
            .into_iter()
            .chain(edges);
        for lane in 0..4 {
            for v in odd.clone() {
                let mut ps = [Particle::new(0.5f64, -0.5, 0.25, 1.0); 5];
                let mut q = [Particle::new(0.5f32, -0.5, 0.25, 1.0); 5];
                let set = |p: &mut Particle<f64>| match lane {
                    0 => p.x = v,
                    1 => p.y = v,
                    2 => p.z = v,
                    _ => p.m = v,
                };
                set(&mut ps[3]);
                let p = ps[3];
                q[3] = Particle::new(p.x as f32, p.y as f32, p.z as f32, p.m as f32);
                let accepts = |v: f64, r: f64| v.is_finite() && (lane == 3 || v.abs() < r) && !(lane == 3 && v < 0.0);
                let want = accepts(v, r64);
                assert_eq!(particles(&ps, Array::Sources).is_ok(), want, "f64 lane {lane} value {v}");
                assert_eq!(
                    particles(&q, Array::Sources).is_ok(),
                    accepts(v as f32 as f64, r32),
                    "f32 lane {lane} value {v}"
                );
                if !want {
                    assert!(matches!(
                        particles(&ps, Array::Sources),
                        Err(Error::NonFinite { index: 3, .. })
                            | Err(Error::NegativeMass { index: 3, .. })
                            | Err(Error::OutOfRange { index: 3, .. })
                    ));
                }
            }
        }
    }
}
