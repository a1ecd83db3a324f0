//! Particles as columns: positions in rows of three (`[x, y, z]`) beside a separate
//! array of masses, and the field written back the same way (rows of accelerations, a
//! column of potentials): the layout numpy, C and Fortran codes hold. An executor that
//! takes such arrays as they are (a GPU packs and unpacks them on the device, so the
//! host makes no pass over them) overrides [`crate::Executor::field_columns`]; front
//! ends call it and pack into [`crate::Particle`]s themselves where it answers
//! [`Error::Unsupported`].

use crate::{Error, Params, Real, validate};

/// One call in columns: the field of the particles at `positions` with `masses` on
/// `targets` (`None`: on the particles themselves, each without its own pair).
///
/// ```
/// use nbody_core::columns::ColumnsCall;
/// let (x, m) = ([[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0]], [1.0f32, 1.0]);
/// let call = ColumnsCall { positions: &x, masses: &m, targets: None };
/// assert_eq!(call.targets_len(), 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ColumnsCall<'a, T> {
    /// The sources' positions, one row each.
    pub positions: &'a [[T; 3]],
    /// The sources' masses, one per row of `positions`.
    pub masses: &'a [T],
    /// Points the field is wanted at; `None`: the particles themselves, each particle's
    /// pair with itself removed (as [`crate::Overlap::Identical`]).
    pub targets: Option<&'a [[T; 3]]>,
}

impl<T> ColumnsCall<'_, T> {
    /// How many rows the outputs hold.
    pub fn targets_len(&self) -> usize {
        self.targets.map_or(self.positions.len(), <[_]>::len)
    }
}

/// The checks of a columns call that need no pass over the values: the parameters, and
/// the lengths of masses and outputs against the rows. The values (finite, no negative
/// mass) are the executor's to check where it reads them.
///
/// ```
/// use nbody_core::columns::{check, ColumnsCall};
/// use nbody_core::Params;
/// let (x, m) = ([[0.0f64; 3]; 2], [1.0; 2]);
/// let call = ColumnsCall { positions: &x, masses: &m[..1], targets: None };
/// assert!(check(&call, &Params::softened(0.1), 2, None).is_err()); // one mass for two rows
/// ```
pub fn check<T: Real>(
    call: &ColumnsCall<'_, T>,
    params: &Params<T>,
    acc_len: usize,
    phi_len: Option<usize>,
) -> Result<(), Error> {
    validate::params(params)?;
    validate::length("masses", call.positions.len(), call.masses.len())?;
    validate::length("output", call.targets_len(), acc_len)?;
    if let Some(n) = phi_len {
        validate::length("potential output", call.targets_len(), n)?;
    }
    Ok(())
}

/// Names the first bad value of a columns call's arrays as [`validate::particles`]
/// would: a non-finite coordinate or mass ([`Error::NonFinite`]), a coordinate beyond
/// [`validate::range`] ([`Error::OutOfRange`]) or a negative mass
/// ([`Error::NegativeMass`]), `None` when every value is good. For executors that found
/// *that* something is wrong (on a device, say) and name it on the host.
///
/// ```
/// use nbody_core::columns::{first_bad, ColumnsCall};
/// use nbody_core::{Array, Error};
/// let (x, m) = ([[0.0f64; 3], [f64::NAN, 0.0, 0.0]], [-1.0, 1.0]);
/// let call = ColumnsCall { positions: &x, masses: &m, targets: None };
/// assert_eq!(first_bad(&call), Some(Error::NegativeMass { array: Array::Particles, index: 0 }));
/// let targets = [[0.0, f64::INFINITY, 0.0]];
/// let call = ColumnsCall { positions: &x, masses: &m, targets: Some(&targets) };
/// assert_eq!(first_bad(&call), Some(Error::NonFinite { array: Array::Targets, index: 0 }));
/// ```
pub fn first_bad<T: Real>(call: &ColumnsCall<'_, T>) -> Option<Error> {
    use crate::Array;
    // Targets first, as `validate::call` checks them.
    let finite = |r: &[T; 3]| r.iter().all(|c| c.is_finite());
    let in_range = |r: &[T; 3]| r.iter().all(|&c| validate::in_range(c));
    if let Some(targets) = call.targets
        && let Some(index) = targets.iter().position(|r| !in_range(r))
    {
        let array = Array::Targets;
        let finite = finite(&targets[index]);
        return Some(if finite { Error::OutOfRange { array, index } } else { Error::NonFinite { array, index } });
    }
    for (index, (r, m)) in call.positions.iter().zip(call.masses).enumerate() {
        if !(finite(r) && m.is_finite()) {
            return Some(Error::NonFinite { array: Array::Particles, index });
        }
        if !in_range(r) {
            return Some(Error::OutOfRange { array: Array::Particles, index });
        }
        if *m < T::zero() {
            return Some(Error::NegativeMass { array: Array::Particles, index });
        }
    }
    None
}

/// A columns call on memory the caller already holds on a GPU (CuPy, PyTorch, JAX or
/// numba arrays, a C code's `cudaMalloc`): device addresses, C-contiguous, of the
/// call's precision. Positions are rows of three, masses a column; the outputs are
/// written (not added) as rows of accelerations and, when `phi` is given, a column of
/// potentials. For [`crate::Executor::field_columns_device`].
///
/// ```
/// use nbody_core::columns::DeviceColumns;
/// let call = DeviceColumns::on_itself(0, 0x7f00_0000_0000, 0x7f00_0010_0000, 1024, 0x7f00_0020_0000);
/// assert_eq!(call.targets_len(), 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceColumns {
    /// The ordinal of the device the addresses belong to.
    pub device: u32,
    /// The sources' rows: `3 n` values.
    pub positions: u64,
    /// The sources' masses: `n` values.
    pub masses: u64,
    /// How many sources.
    pub n: usize,
    /// Points the field is wanted at (address, count); `None`: the particles
    /// themselves, each without its own pair.
    pub targets: Option<(u64, usize)>,
    /// Rows of accelerations out: `3` values a target.
    pub acc: u64,
    /// A column of potentials out, one a target, when wanted.
    pub phi: Option<u64>,
    /// The particles' velocities (`3 n` values), for their jerk: given with `jerk`, and
    /// only for the particles on themselves (`targets` is `None`).
    pub velocities: Option<u64>,
    /// Rows of jerks out (`3` values a particle), given with `velocities`.
    pub jerk: Option<u64>,
    /// The streams (`CUstream`s; 1 and 2 for the legacy and per-thread default
    /// streams) the inputs were written on, which the call waits for before it reads
    /// them, one an input at most; `None`: ready. The outputs are complete when the call
    /// returns.
    pub streams: [Option<u64>; 4],
}

impl DeviceColumns {
    /// The field of `n` particles on themselves, potentials not wanted, inputs ready.
    pub fn on_itself(device: u32, positions: u64, masses: u64, n: usize, acc: u64) -> Self {
        Self {
            device,
            positions,
            masses,
            n,
            targets: None,
            acc,
            phi: None,
            velocities: None,
            jerk: None,
            streams: [None; 4],
        }
    }

    /// How many rows the outputs hold.
    pub fn targets_len(&self) -> usize {
        self.targets.map_or(self.n, |(_, k)| k)
    }
}

/// The vector-Jacobian product of the field of `n` particles on themselves (each
/// without its own pair) on memory the caller holds on a GPU, for
/// [`crate::Executor::vjp_device`]: for cotangents on the accelerations (rows) and
/// potentials (a column), each particle's whole gradient, its part as a target and as a
/// source together (as [`crate::Executor::vjp_batch`] gives it), written as rows of
/// position gradients and a column of mass gradients.
///
/// ```
/// use nbody_core::columns::DeviceVjp;
/// let call = DeviceVjp {
///     device: 0, positions: 0x1000, masses: 0x2000, n: 4, cot_acc: 0x3000, cot_phi: None,
///     grad_positions: 0x4000, grad_masses: 0x5000, streams: [None; 4],
/// };
/// assert_eq!(call.n, 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceVjp {
    /// The ordinal of the device the addresses belong to.
    pub device: u32,
    /// The particles' rows: `3 n` values.
    pub positions: u64,
    /// Their masses: `n` values.
    pub masses: u64,
    /// How many particles.
    pub n: usize,
    /// Cotangents on the accelerations: `3 n` values.
    pub cot_acc: u64,
    /// Cotangents on the potentials (`n` values), when the potential is differentiated.
    pub cot_phi: Option<u64>,
    /// Rows of position gradients out: `3 n` values.
    pub grad_positions: u64,
    /// Mass gradients out: `n` values.
    pub grad_masses: u64,
    /// The streams the inputs were written on (as [`DeviceColumns::streams`]).
    pub streams: [Option<u64>; 4],
}
