//! The Python extension `nbody._nbody`: thin conversions between numpy arrays and the
//! library's records, around the same executors and integrators the Rust API has.

use nbody::simulation::{self, Gravity, Plan, Precision, Run, Solver};
use nbody::units::Units;
use nbody_backends::{Backend, BackendError, BackendReal};
use nbody_core::cell::Cell;
use nbody_core::cell::Criterion;
use nbody_core::columns::ColumnsCall;
use nbody_core::projection::{Plane, Projecting, Projection};
use nbody_core::registry::{lookup, names};
use nbody_core::{
    Bodies, Error, Field, InteractionList, Jerk, LeafList, Pair, Params, Particle, PerParticle, Real, Softening, Span,
    Tidal, Velocity,
};
use nbody_integrators::{ics, Scheme, Words};
use numpy::ndarray::ArrayView2;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::collections::HashMap;
use std::sync::Mutex;

#[cfg(feature = "cuda")]
mod device;

/// `nbody.accelerations` on GPU arrays: this build has no CUDA executor.
#[cfg(not(feature = "cuda"))]
#[pyfunction]
#[pyo3(signature = (*_args, **_kwargs))]
fn _accelerations_device(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<()> {
    Err(value_error(
        "GPU arrays need the CUDA executor, which this build of nbody lacks (nbody.cuda_compiled is False)",
    ))
}

/// Executors of one backend kept between calls, so a call does not start threads; each
/// call takes one (or opens one) and gives it back.
type Pool<T> = Mutex<HashMap<String, Vec<Box<dyn Projecting<T> + Send>>>>;

static POOL32: std::sync::LazyLock<Pool<f32>> = std::sync::LazyLock::new(Default::default);
static POOL64: std::sync::LazyLock<Pool<f64>> = std::sync::LazyLock::new(Default::default);

fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

fn runtime(e: Error) -> PyErr {
    match e {
        Error::NonFinite { .. }
        | Error::OutOfRange { .. }
        | Error::NegativeMass { .. }
        | Error::NegativeSpread { .. }
        | Error::NegativeSoftening { .. }
        | Error::LengthMismatch { .. }
        | Error::InvalidParameter { .. }
        | Error::InvalidSpan { .. } => PyValueError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// The precisions the package computes in.
trait PyReal: BackendReal + numpy::Element {
    fn pool() -> &'static Pool<Self>;
    fn host_buffers() -> &'static Mutex<Scratch<Self>>;
}

impl PyReal for f32 {
    fn pool() -> &'static Pool<f32> {
        &POOL32
    }
    fn host_buffers() -> &'static Mutex<Scratch<f32>> {
        &SCRATCH32
    }
}

impl PyReal for f64 {
    fn pool() -> &'static Pool<f64> {
        &POOL64
    }
    fn host_buffers() -> &'static Mutex<Scratch<f64>> {
        &SCRATCH64
    }
}

/// Host buffers `accelerations` reuses from call to call (its particles in, its fields
/// out): fresh ones cost page faults and zeroing each call, which at 65,536 particles
/// were a sizeable part of the host's time around a GPU call. A call takes them and
/// puts them back (up to 2^22 particles); a call made meanwhile from another thread
/// allocates its own.
#[derive(Default)]
struct Scratch<T: Real> {
    particles: Vec<Particle<T>>,
    fields: Vec<Field<T>>,
}

static SCRATCH32: Mutex<Scratch<f32>> = Mutex::new(Scratch { particles: Vec::new(), fields: Vec::new() });
static SCRATCH64: Mutex<Scratch<f64>> = Mutex::new(Scratch { particles: Vec::new(), fields: Vec::new() });

/// A registry error as Python sees it: a bad string or precision is a ValueError, a
/// missing device or build a RuntimeError.
fn backend_error(e: BackendError) -> PyErr {
    match e {
        BackendError::Parse { .. } | BackendError::Precision { .. } | BackendError::Threads { .. } => {
            PyValueError::new_err(format!("executor: {e}"))
        }
        _ => PyRuntimeError::new_err(format!("executor: {e}")),
    }
}

/// The backend of `executor=` and `threads=` (the registry's grammar: "cpu", "cpu:8",
/// "mixed", "reference", "cuda:0", "cuda-mixed:0", "cuda:0,1"), checked for `T`.
fn backend<T: PyReal>(executor: &str, threads: Option<usize>) -> PyResult<Backend> {
    backend_for(executor, threads, T::NAME)
}

/// [`backend`] for the precision named `precision`.
fn backend_for(executor: &str, threads: Option<usize>, precision: &'static str) -> PyResult<Backend> {
    if threads == Some(0) {
        return Err(value_error("threads must be at least 1"));
    }
    let b = executor.parse::<Backend>().and_then(|b| b.and_threads(threads)).map_err(backend_error)?;
    b.check_for(precision).map_err(backend_error)?;
    Ok(b)
}

/// Takes a pooled executor, runs `f` with it (without the GIL), gives it back.
fn with_executor<T: PyReal, R: Send>(
    py: Python<'_>,
    backend: &Backend,
    f: impl FnOnce(&mut dyn Projecting<T>) -> R + Send,
) -> PyResult<R> {
    let key = backend.to_string();
    let taken = T::pool()
        .lock()
        .map_err(|_| PyRuntimeError::new_err("executor pool poisoned"))?
        .get_mut(&key)
        .and_then(Vec::pop);
    let mut exec = match taken {
        Some(e) => e,
        None => backend.open_for::<T>().map_err(backend_error)?,
    };
    let r = py.detach(|| f(exec.as_mut()));
    if let Ok(mut pool) = T::pool().lock() {
        pool.entry(key).or_default().push(exec);
    }
    Ok(r)
}

/// A float32 or float64 numpy array of shape (N, 3), as rows in f64.
enum Coords<'py> {
    F32(PyReadonlyArray2<'py, f32>),
    F64(PyReadonlyArray2<'py, f64>),
}

fn coords<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Coords<'py>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray2<'py, f64>>() {
        return shape3(Coords::F64(a), name);
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray2<'py, f32>>() {
        return shape3(Coords::F32(a), name);
    }
    Err(value_error(describe(obj, name, "a float32 or float64 numpy array of shape (N, 3)")))
}

fn describe(obj: &Bound<'_, PyAny>, name: &str, want: &str) -> String {
    let got = match obj.cast::<numpy::PyUntypedArray>() {
        Ok(a) => format!("a {}-d {} array", a.ndim(), a.dtype()),
        Err(_) => obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "something else".into()),
    };
    format!("{name} must be {want} (got {got})")
}

fn shape3<'py>(c: Coords<'py>, name: &str) -> PyResult<Coords<'py>> {
    let shape = match &c {
        Coords::F32(a) => a.shape().to_vec(),
        Coords::F64(a) => a.shape().to_vec(),
    };
    if shape[1] != 3 {
        return Err(value_error(format!("{name} must have shape (N, 3), got ({}, {})", shape[0], shape[1])));
    }
    Ok(c)
}

impl Coords<'_> {
    fn len(&self) -> usize {
        match self {
            Coords::F32(a) => a.shape()[0],
            Coords::F64(a) => a.shape()[0],
        }
    }

    /// The rows as particles of precision `T` with masses `m` (zero where `m` is
    /// shorter: targets), every coordinate checked finite, in one pass over the array
    /// (a contiguous one read as a slice).
    fn particles<T: Real>(&self, m: &[f64], name: &str) -> PyResult<Vec<Particle<T>>> {
        let mut out = Vec::new();
        self.particles_into(m, name, &mut out)?;
        Ok(out)
    }

    /// [`Coords::particles`] into `out` (replacing what it held, keeping its allocation).
    fn particles_into<T: Real>(&self, m: &[f64], name: &str, out: &mut Vec<Particle<T>>) -> PyResult<()> {
        fn build<S: Copy + Into<f64>, T: Real>(
            v: ArrayView2<'_, S>,
            m: &[f64],
            name: &str,
            out: &mut Vec<Particle<T>>,
        ) -> PyResult<()> {
            out.clear();
            let bad = |i: usize| value_error(format!("{name}[{i}] has a NaN or infinite coordinate"));
            let c = |x: S| T::from_f64(x.into());
            let Some(flat) = v.as_slice() else {
                // Strided or transposed: row by row.
                for (i, r) in v.rows().into_iter().enumerate() {
                    if !r.iter().all(|&x| x.into().is_finite()) {
                        return Err(bad(i));
                    }
                    out.push(Particle::new(c(r[0]), c(r[1]), c(r[2]), T::from_f64(m.get(i).copied().unwrap_or(0.0))));
                }
                return Ok(());
            };
            // Contiguous: one branch-free finiteness pass (the row is looked for only when
            // one fails), then a plain conversion the compiler vectorises.
            if !flat.iter().fold(true, |ok, &x| ok & x.into().is_finite()) {
                let i = flat.iter().position(|&x| !x.into().is_finite()).unwrap_or(0) / 3;
                return Err(bad(i));
            }
            let rows = flat.chunks_exact(3);
            if m.is_empty() {
                out.extend(rows.map(|r| Particle::new(c(r[0]), c(r[1]), c(r[2]), T::zero())));
            } else {
                out.extend(rows.zip(m).map(|(r, &mass)| Particle::new(c(r[0]), c(r[1]), c(r[2]), T::from_f64(mass))));
            }
            Ok(())
        }
        match self {
            Coords::F32(a) => build(a.as_array(), m, name, out),
            Coords::F64(a) => build(a.as_array(), m, name, out),
        }
    }

    /// The common case in one pass: contiguous positions and a contiguous float32 or
    /// float64 `masses` of the same length, every coordinate finite and every mass finite
    /// and non-negative, packed into `out`. False (and `out` unspecified) when any of that
    /// fails: the caller then takes the checked path, which names the bad entry.
    fn pack_into<T: Real>(&self, masses: &Bound<'_, PyAny>, out: &mut Vec<Particle<T>>) -> bool {
        fn pack<S: Copy + Into<f64>, M: Copy + Into<f64>, T: Real>(
            flat: &[S],
            m: &[M],
            out: &mut Vec<Particle<T>>,
        ) -> bool {
            if flat.len() != 3 * m.len() {
                return false;
            }
            out.clear();
            out.reserve(m.len());
            // Branch-free: one flag for the whole array, the records written regardless.
            let mut ok = true;
            let c = T::from_f64;
            out.extend(flat.chunks_exact(3).zip(m).map(|(r, &mass)| {
                let (x, y, z, w) = (r[0].into(), r[1].into(), r[2].into(), mass.into());
                ok &= x.is_finite() & y.is_finite() & z.is_finite() & w.is_finite() & (w >= 0.0);
                Particle::new(c(x), c(y), c(z), c(w))
            }));
            ok
        }
        fn with_masses<S: Copy + Into<f64> + numpy::Element, T: Real>(
            a: &PyReadonlyArray2<'_, S>,
            masses: &Bound<'_, PyAny>,
            out: &mut Vec<Particle<T>>,
        ) -> bool {
            // The view's slice: C order only (numpy's would take Fortran order too).
            let view = a.as_array();
            let Some(flat) = view.as_slice() else { return false };
            if let Ok(m) = masses.extract::<PyReadonlyArray1<'_, f64>>() {
                return m.as_slice().is_ok_and(|m| pack(flat, m, out));
            }
            if let Ok(m) = masses.extract::<PyReadonlyArray1<'_, f32>>() {
                return m.as_slice().is_ok_and(|m| pack(flat, m, out));
            }
            false
        }
        match self {
            Coords::F32(a) => with_masses(a, masses, out),
            Coords::F64(a) => with_masses(a, masses, out),
        }
    }

    /// Row `i` in f64.
    fn rows(&self) -> Vec<[f64; 3]> {
        fn take<T: Copy + Into<f64>>(v: ArrayView2<'_, T>) -> Vec<[f64; 3]> {
            v.rows().into_iter().map(|r| [r[0].into(), r[1].into(), r[2].into()]).collect()
        }
        match self {
            Coords::F32(a) => take(a.as_array()),
            Coords::F64(a) => take(a.as_array()),
        }
    }
}

fn masses(obj: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<f64>> {
    per_particle(obj, "masses", n)
}

/// One finite, non-negative number per particle (masses, radii) from a float32 or
/// float64 array of shape (N,).
fn per_particle(obj: &Bound<'_, PyAny>, name: &str, n: usize) -> PyResult<Vec<f64>> {
    let m = finite_values(obj, name, n, "positions has {n} rows")?;
    if let Some(i) = m.iter().position(|&x| x < 0.0) {
        return Err(value_error(format!("{name}[{i}] is negative ({})", m[i])));
    }
    Ok(m)
}

/// One finite number per entry from a float32 or float64 array of shape (N,), N = `n`
/// (`expected` says where n comes from, `{n}` standing for it).
fn finite_values(obj: &Bound<'_, PyAny>, name: &str, n: usize, expected: &str) -> PyResult<Vec<f64>> {
    let v: Vec<f64> = if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f64>>() {
        a.as_array().iter().copied().collect()
    } else if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f32>>() {
        a.as_array().iter().map(|&x| x as f64).collect()
    } else {
        return Err(value_error(describe(obj, name, "a float32 or float64 numpy array of shape (N,)")));
    };
    if v.len() != n {
        return Err(value_error(format!(
            "{name} has {} entries, {}",
            v.len(),
            expected.replace("{n}", &n.to_string())
        )));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(value_error(format!("{name}[{i}] is {} (must be finite)", v[i])));
    }
    Ok(v)
}

fn finite(rows: &[[f64; 3]], name: &str) -> PyResult<()> {
    match rows.iter().position(|r| !r.iter().all(|x| x.is_finite())) {
        Some(i) => Err(value_error(format!("{name}[{i}] has a NaN or infinite coordinate"))),
        None => Ok(()),
    }
}

/// Particles of precision `T` from positions (N, 3) and masses (N,), checked (finite
/// coordinates; finite, non-negative masses).
fn particles<T: Real>(positions: &Bound<'_, PyAny>, masses: &Bound<'_, PyAny>) -> PyResult<Vec<Particle<T>>> {
    let pos = coords(positions, "positions")?;
    let m = self::masses(masses, pos.len())?;
    pos.particles(&m, "positions")
}

/// `obj` as the package's functions take it (`nbody._on_host`): arrays of other libraries
/// on the host through DLPack as numpy arrays, arrays on a GPU refused by name.
fn on_host<'py>(obj: Option<&Bound<'py, PyAny>>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    obj.map(|o| o.py().import("nbody")?.getattr("_on_host")?.call1((o, name))).transpose()
}

/// A Simulation's initial state as [`on_host`] reads it, and GPU arrays (CUDA builds)
/// copied to the host once: the simulation keeps its own state (on its GPU, for a CUDA
/// simulation, uploaded from there).
fn state_array<'py>(obj: Option<&Bound<'py, PyAny>>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    #[cfg(feature = "cuda")]
    if let Some(o) = obj {
        if o.py().import("nbody")?.getattr("_on_gpu")?.call1((o,))?.is_truthy()? {
            return device::to_host(o, name).map(Some);
        }
    }
    on_host(obj, name)
}

/// Massless particles of precision `T` at the finite points (K, 3) of `obj`.
fn points<T: Real>(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<Particle<T>>> {
    coords(obj, name)?.particles(&[], name)
}

/// Fields as numpy arrays: acceleration (N, 3) and potential (N,), written once into
/// arrays numpy allocates uninitialised (no zeroing pass, no further copy).
fn field_arrays<'py, T: PyReal>(
    py: Python<'py>,
    field: &[Field<T>],
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let n = field.len();
    // SAFETY: both arrays are fresh, C-contiguous and ours alone; every element is
    // written below before Python sees them.
    let (acc, phi) = unsafe { (numpy::PyArray2::<T>::new(py, [n, 3], false), PyArray1::<T>::new(py, [n], false)) };
    {
        // SAFETY: as above; the slices end before the arrays are returned.
        let (a, p) = unsafe { (acc.as_slice_mut(), phi.as_slice_mut()) };
        let fail = |e: numpy::AsSliceError| PyRuntimeError::new_err(format!("output array: {e}"));
        let (a, p) = (a.map_err(fail)?, p.map_err(fail)?);
        for ((a, p), f) in a.chunks_exact_mut(3).zip(p.iter_mut()).zip(field) {
            a.copy_from_slice(&[f.ax, f.ay, f.az]);
            *p = f.phi;
        }
    }
    Ok((acc.into_any(), phi.into_any()))
}

/// (acceleration (N, 3), potential (N,)) of a call in precision `T`.
#[allow(clippy::too_many_arguments)]
fn compute<'py, T: PyReal>(
    py: Python<'py>,
    sources: &[Particle<T>],
    targets: Option<Vec<Particle<T>>>,
    eps: &Lengths,
    g: f64,
    potential: bool,
    softening: Softening,
    backend: &Backend,
    out: &mut Vec<Field<T>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let scalar = match eps {
        Lengths::One(e) => *e,
        Lengths::Each { .. } => 0.0,
    };
    let mut params = Params::softened(T::from_f64(scalar)).with_g(T::from_f64(g)).with_softening(softening);
    params.potential = potential;
    let n = targets.as_ref().map_or(sources.len(), Vec::len);
    let cast = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let lengths = match eps {
        Lengths::Each { targets, sources } => Some((cast(targets), cast(sources))),
        Lengths::One(_) => None,
    };
    with_executor::<T, _>(py, backend, |e| {
        out.clear();
        out.resize(n, Field::zero());
        let (t, p) = match &targets {
            Some(t) => (&t[..], params),
            None => (sources, params.with_overlap_identical()),
        };
        let r = match &lengths {
            Some((te, se)) => {
                e.accelerations_per_particle(t, sources, PerParticle { targets: te, sources: se }, &p, out)
            }
            None => e.accelerations(t, sources, &p, out),
        };
        r.map(|_| ())
    })?
    .map_err(runtime)?;
    field_arrays(py, out)
}

impl<'py> Call<'_, 'py> {
    /// The columns path ([`nbody_core::columns`]) for a GPU backend: C-contiguous arrays
    /// of the call's precision handed to the executor as they are (read without the
    /// GIL, as numpy's own operations read them), packed, checked and unpacked on the
    /// device, the results downloaded straight into fresh numpy arrays. `None` where the
    /// call does not qualify (another dtype or order, a length per particle, a CPU
    /// backend), where the executor answers Unsupported, or where a value is refused:
    /// the host path then runs, and names the bad entry as it always has.
    fn columns<T: PyReal>(
        &self,
        py: Python<'py>,
        b: &Backend,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let eps = match self.eps.map(|e| e.extract::<f64>()) {
            None => 0.0,
            Some(Ok(x)) if x.is_finite() && x >= 0.0 => x,
            Some(_) => return Ok(None),
        };
        if self.target_eps.is_some() {
            return Ok(None);
        }
        if !b.is_cuda() {
            return Ok(None);
        }
        let (Ok(pos), Ok(m)) =
            (self.positions.extract::<PyReadonlyArray2<'py, T>>(), self.masses.extract::<PyReadonlyArray1<'py, T>>())
        else {
            return Ok(None);
        };
        let targets = match self.targets.map(|t| t.extract::<PyReadonlyArray2<'py, T>>()) {
            None => None,
            Some(Ok(t)) => Some(t),
            Some(Err(_)) => return Ok(None),
        };
        // C order only: ndarray's slice (numpy's would take Fortran order too).
        fn rows<'a, T: PyReal>(a: &'a PyReadonlyArray2<'_, T>) -> Option<&'a [[T; 3]]> {
            (a.shape()[1] == 3).then(|| a.as_array().to_slice().map(bytemuck::cast_slice)).flatten()
        }
        let (Some(positions), Some(masses)) = (rows(&pos), m.as_array().to_slice()) else { return Ok(None) };
        let target_rows = match &targets {
            None => None,
            Some(t) => match rows(t) {
                Some(r) => Some(r),
                None => return Ok(None),
            },
        };
        if masses.len() != positions.len() {
            return Ok(None);
        }
        let n = target_rows.map_or(positions.len(), <[_]>::len);
        let mut params = Params::softened(T::from_f64(eps)).with_g(T::from_f64(self.g)).with_softening(self.softening);
        params.potential = self.potential;
        // SAFETY: fresh C-contiguous arrays, ours alone; the accelerations are written
        // before Python sees them (or the arrays are dropped), the potential too when
        // asked for (zeros otherwise).
        let acc = unsafe { numpy::PyArray2::<T>::new(py, [n, 3], false) };
        let phi = if self.potential {
            unsafe { PyArray1::<T>::new(py, [n], false) }
        } else {
            PyArray1::<T>::zeros(py, [n], false)
        };
        {
            // SAFETY: as above; the slices end before the arrays are returned.
            let fail = |e: numpy::AsSliceError| PyRuntimeError::new_err(format!("output array: {e}"));
            let (a, p) = unsafe { (acc.as_slice_mut().map_err(fail)?, phi.as_slice_mut().map_err(fail)?) };
            let a: &mut [[T; 3]] = bytemuck::cast_slice_mut(a);
            let phi_out = self.potential.then_some(p);
            let call = ColumnsCall { positions, masses, targets: target_rows };
            match with_executor::<T, _>(py, b, |e| e.field_columns(call, &params, a, phi_out))? {
                Ok(()) => {}
                Err(Error::Unsupported { .. } | Error::NonFinite { .. } | Error::NegativeMass { .. }) => {
                    return Ok(None)
                }
                Err(e) => return Err(runtime(e)),
            }
        }
        Ok(Some((acc.into_any(), phi.into_any())))
    }
}

/// A call's softening: one length, or one per particle (targets', sources').
enum Lengths {
    One(f64),
    Each { targets: Vec<f64>, sources: Vec<f64> },
}

/// `eps` as given: a number (default 0) or an array of one length per particle
/// (`n` of them).
fn lengths_of(eps: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Result<f64, Vec<f64>>> {
    let Some(obj) = eps else { return Ok(Ok(0.0)) };
    if let Ok(x) = obj.extract::<f64>() {
        if !(x.is_finite() && x >= 0.0) {
            return Err(value_error(format!("eps must be finite and non-negative (got {x})")));
        }
        return Ok(Ok(x));
    }
    Ok(Err(per_particle(obj, "eps", n)?))
}

/// The softening kernel named `name` (one of `softenings()`).
fn softening_kernel(name: &str) -> PyResult<Softening> {
    Softening::parse(name).ok_or_else(|| {
        value_error(format!("softening must be one of {} (got {name:?})", nbody_core::registry::names::<Softening>()))
    })
}

/// Accelerations and potentials of `targets` (default: the particles themselves, each
/// skipping its own pair) from the particles at `positions` with `masses`.
#[pyfunction]
#[pyo3(signature = (positions, masses, eps=None, G=1.0, targets=None, potential=true, executor="cpu", precision="f64", threads=None, softening="plummer", target_eps=None))]
#[allow(non_snake_case, clippy::too_many_arguments)]
fn accelerations<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    eps: Option<&Bound<'py, PyAny>>,
    G: f64,
    targets: Option<&Bound<'py, PyAny>>,
    potential: bool,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
    softening: &str,
    target_eps: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let softening = softening_kernel(softening)?;
    if !(G.is_finite() && G >= 0.0) {
        return Err(value_error(format!("G must be finite and non-negative (got {G})")));
    }
    let call = Call { positions, masses, eps, g: G, targets, potential, softening, target_eps };
    match precision {
        "f64" => call.run::<f64>(py, executor, threads),
        "f32" => call.run::<f32>(py, executor, threads),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// `accelerations`' arguments, read in the call's precision.
struct Call<'a, 'py> {
    positions: &'a Bound<'py, PyAny>,
    masses: &'a Bound<'py, PyAny>,
    eps: Option<&'a Bound<'py, PyAny>>,
    g: f64,
    targets: Option<&'a Bound<'py, PyAny>>,
    potential: bool,
    softening: Softening,
    target_eps: Option<&'a Bound<'py, PyAny>>,
}

impl<'py> Call<'_, 'py> {
    /// Reads the arrays straight into precision `T` (one pass each) and computes.
    fn run<T: PyReal>(
        &self,
        py: Python<'py>,
        executor: &str,
        threads: Option<usize>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let b = backend::<T>(executor, threads)?;
        if let Some(arrays) = self.columns::<T>(py, &b)? {
            return Ok(arrays);
        }
        // The buffers of the last call (none if another thread holds them).
        let mut scratch = T::host_buffers().lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default();
        let pos = coords(self.positions, "positions")?;
        if !pos.pack_into(self.masses, &mut scratch.particles) {
            // Strided, mismatched or bad input: checked entry by entry, naming the first.
            let m = self::masses(self.masses, pos.len())?;
            pos.particles_into(&m, "positions", &mut scratch.particles)?;
        }
        let sources = &scratch.particles;
        let eps = match (lengths_of(self.eps, sources.len())?, self.targets, self.target_eps) {
            (Ok(e), _, None) => Lengths::One(e),
            (Err(each), None, None) => Lengths::Each { targets: each.clone(), sources: each },
            (Err(each), Some(t), Some(te)) => {
                let n_targets = coords(t, "targets")?.len();
                Lengths::Each { targets: per_particle(te, "target_eps", n_targets)?, sources: each }
            }
            (Err(_), Some(_), None) => {
                return Err(value_error("eps per particle with targets needs target_eps (one length per target)"))
            }
            (_, _, Some(_)) => {
                return Err(value_error("target_eps goes with targets and an eps array (one length per particle)"))
            }
        };
        let targets = self.targets.map(|t| points::<T>(t, "targets")).transpose()?;
        let out = &mut scratch.fields;
        let arrays = compute::<T>(py, sources, targets, &eps, self.g, self.potential, self.softening, &b, out)?;
        // Kept only up to 2^22 particles: a one-off large call's buffers go back to the
        // allocator rather than stay held for the rest of the session.
        if scratch.particles.capacity().max(scratch.fields.capacity()) <= 1 << 22 {
            if let Ok(mut s) = T::host_buffers().lock() {
                *s = scratch;
            }
        }
        Ok(arrays)
    }
}

/// Rows of `width` indices from an integer numpy array of shape (K, width) (any signed
/// or unsigned integer dtype), each in 0..2^32.
fn index_rows(obj: &Bound<'_, PyAny>, name: &str, width: usize) -> PyResult<Vec<Vec<u32>>> {
    fn rows<T: Copy + TryInto<i128>>(a: ArrayView2<'_, T>) -> Vec<Vec<i128>> {
        a.rows().into_iter().map(|r| r.iter().map(|&x| x.try_into().unwrap_or(-1)).collect()).collect()
    }
    let raw: Vec<Vec<i128>> = if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, i64>>() {
        rows(a.as_array())
    } else if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, i32>>() {
        rows(a.as_array())
    } else if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, u32>>() {
        rows(a.as_array())
    } else if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, u64>>() {
        rows(a.as_array())
    } else {
        return Err(value_error(describe(obj, name, &format!("an integer numpy array of shape (K, {width})"))));
    };
    if let Some(r) = raw.first().filter(|r| r.len() != width) {
        return Err(value_error(format!("{name} must have shape (K, {width}), got (K, {})", r.len())));
    }
    raw.into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.iter()
                .map(|&x| {
                    u32::try_from(x)
                        .map_err(|_| value_error(format!("{name}[{i}] holds {x} (indices are 0 to 2^32 - 1)")))
                })
                .collect()
        })
        .collect()
}

/// `[start, end]` rows as spans.
fn spans(rows: &[Vec<u32>]) -> Vec<Span> {
    rows.iter().map(|r| Span::new(r[0], r[1])).collect()
}

/// Cells from a float array of shape (C, 11): x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz,
/// spread; or (C, 10), without the spread (zero).
fn cell_rows(obj: &Bound<'_, PyAny>) -> PyResult<Vec<[f64; 11]>> {
    fn take<T: Copy + Into<f64>>(a: ArrayView2<'_, T>) -> Vec<[f64; 11]> {
        let lanes = a.shape()[1];
        a.rows().into_iter().map(|r| core::array::from_fn(|k| if k < lanes { r[k].into() } else { 0.0 })).collect()
    }
    let fits = |shape: &[usize]| shape[1] == 10 || shape[1] == 11;
    let (shape, rows) = if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, f64>>() {
        (a.shape().to_vec(), if fits(a.shape()) { take(a.as_array()) } else { Vec::new() })
    } else if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, f32>>() {
        (a.shape().to_vec(), if fits(a.shape()) { take(a.as_array()) } else { Vec::new() })
    } else {
        return Err(value_error(describe(obj, "cells", "a float32 or float64 numpy array of shape (C, 11) or (C, 10)")));
    };
    if !fits(&shape) {
        return Err(value_error(format!("cells must have shape (C, 11) or (C, 10), got ({}, {})", shape[0], shape[1])));
    }
    Ok(rows)
}

/// Rows `[t0, t1, s0, s1]` of `obj` (the argument `pairs`) as pairs.
fn pair_rows(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Pair>> {
    let rows = index_rows(obj, "pairs", 4)?;
    Ok(rows.iter().map(|r| Pair { targets: Span::new(r[0], r[1]), sources: Span::new(r[2], r[3]) }).collect())
}

/// Cells of precision `T` from rows `x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz, spread`.
fn cells_of<T: Real>(rows: &[[f64; 11]]) -> Vec<Cell<T>> {
    let c = T::from_f64;
    rows.iter()
        .map(|r| Cell::new(c(r[0]), c(r[1]), c(r[2]), c(r[3]), core::array::from_fn(|k| c(r[4 + k]))).with_spread(c(r[10])))
        .collect()
}

/// A leaf call's list as `leaves` takes it: pairs, particle spans and, optionally, cells
/// (rows) with their ranges and spans (all three or none; none: an empty range a pair).
struct LeafRows {
    pairs: Vec<Pair>,
    spans: Vec<Span>,
    cells: Vec<[f64; 11]>,
    ranges: Vec<Span>,
    cell_spans: Vec<Span>,
}

impl LeafRows {
    fn read(
        pairs: &Bound<'_, PyAny>,
        spans: &Bound<'_, PyAny>,
        cells: Option<&Bound<'_, PyAny>>,
        cell_ranges: Option<&Bound<'_, PyAny>>,
        cell_spans: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let pairs = pair_rows(pairs)?;
        let spans = self::spans(&index_rows(spans, "spans", 2)?);
        let (cells, ranges, cell_spans) = match (cells, cell_ranges, cell_spans) {
            (Some(c), Some(r), Some(s)) => {
                let ranges = self::spans(&index_rows(r, "cell_ranges", 2)?);
                (cell_rows(c)?, ranges, self::spans(&index_rows(s, "cell_spans", 2)?))
            }
            (None, None, None) => (Vec::new(), vec![Span::new(0, 0); pairs.len()], Vec::new()),
            _ => return Err(value_error("cells, cell_ranges and cell_spans go together: give all three or none")),
        };
        Ok(Self { pairs, spans, cells, ranges, cell_spans })
    }

    fn list(&self) -> LeafList<'_> {
        LeafList {
            particles: InteractionList { pairs: &self.pairs, source_spans: &self.spans },
            cells: &self.ranges,
            cell_spans: &self.cell_spans,
        }
    }
}

/// The leaf-list call in precision `T`: (acceleration (N, 3), potential (N,)).
#[allow(clippy::too_many_arguments)]
fn leaves_in<'py, T: PyReal>(
    py: Python<'py>,
    particles: &[Particle<T>],
    rows: &LeafRows,
    params: Params<T>,
    lengths: Option<&[f64]>,
    backend: &Backend,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let cells = cells_of::<T>(&rows.cells);
    let n = particles.len();
    let list = rows.list();
    let lengths: Option<Vec<T>> = lengths.map(|l| l.iter().map(|&x| T::from_f64(x)).collect());
    let out = with_executor::<T, _>(py, backend, |e| {
        let mut out = vec![Field::zero(); n];
        match &lengths {
            Some(eps) => e.accelerations_batch_per_particle(particles, eps, &list.particles, &params, &mut out),
            None => e.accelerations_batch_cells(particles, &cells, &list, &params, &mut out),
        }
        .map(|_| out)
    })?
    .map_err(runtime)?;
    field_arrays(py, &out)
}

/// A tree or FMM code's leaf work in one call: the particles at `positions` with
/// `masses` feel, per row `[t0, t1, s0, s1]` of `pairs`, the targets `t0..t1` the
/// particle spans `spans[s0..s1]` (rows `[start, end]`; a target inside its own span
/// skips its own pair) and, with `cells` (rows `x, y, z, m, qxx, qxy, qxz, qyy, qyz,
/// qzz, spread`: centre of mass, mass, traceless quadrupole, `Σ m |s|²`, as `cell` gives
/// them; ten lanes without the spread), the cell spans
/// `cell_spans[c0..c1]` of row `[c0, c1]` of `cell_ranges`. Returns acceleration (N, 3)
/// and potential (N,) of every particle (zero where no pair names it).
#[pyfunction]
#[pyo3(signature = (positions, masses, pairs, spans, cells=None, cell_ranges=None, cell_spans=None, eps=None, G=1.0, potential=true, executor="cpu", precision="f64", threads=None, softening="plummer"))]
#[allow(non_snake_case, clippy::too_many_arguments)]
fn leaves<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    pairs: &Bound<'py, PyAny>,
    spans: &Bound<'py, PyAny>,
    cells: Option<&Bound<'py, PyAny>>,
    cell_ranges: Option<&Bound<'py, PyAny>>,
    cell_spans: Option<&Bound<'py, PyAny>>,
    eps: Option<&Bound<'py, PyAny>>,
    G: f64,
    potential: bool,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
    softening: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let softening = softening_kernel(softening)?;
    let sources = particles::<f64>(positions, masses)?;
    let rows = LeafRows::read(pairs, spans, cells, cell_ranges, cell_spans)?;
    let (eps, lengths) = match lengths_of(eps, sources.len())? {
        Ok(e) => (e, None),
        Err(_) if !rows.cells.is_empty() => {
            return Err(value_error("cells with an eps per particle: give one eps (a number) with cells"))
        }
        Err(each) => (0.0, Some(each)),
    };
    let l = lengths.as_deref();
    match precision {
        "f64" => {
            let params = Params::softened(eps).with_g(G).with_softening(softening);
            let params = Params { potential, ..params };
            leaves_in::<f64>(py, &sources, &rows, params, l, &backend::<f64>(executor, threads)?)
        }
        "f32" => {
            let params = Params::softened(eps as f32).with_g(G as f32).with_softening(softening);
            let params = Params { potential, ..params };
            let sources: Vec<Particle<f32>> = sources.iter().map(Particle::cast).collect();
            leaves_in::<f32>(py, &sources, &rows, params, l, &backend::<f32>(executor, threads)?)
        }
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// The cell of the particles at `positions` with `masses`: a row `x, y, z, m, qxx, qxy,
/// qxz, qyy, qyz, qzz, spread` (centre of mass, total mass, traceless quadrupole and
/// `Σ m |s|²` about the centre of mass, summed in f64) for `leaves`' `cells`.
#[pyfunction]
fn cell<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let c = Cell::from_particles(&particles::<f64>(positions, masses)?);
    let q = c.quadrupole();
    let row = vec![c.x, c.y, c.z, c.m, q[0], q[1], q[2], q[3], q[4], q[5], c.spread];
    Ok(PyArray1::from_vec(py, row).into_any())
}

/// Seconds per call of `executor` on a Plummer sphere of `n` particles (the particles
/// on themselves, as `accelerations` without targets), timed in Rust (median of `reps`
/// after a warm-up): what the Python call is compared against. `entry` is the Rust entry
/// point timed: "accelerations" (packed records, adding into a zeroed field) or
/// "columns" (`field_columns` on rows and a column, the call `accelerations` makes on a
/// single GPU; an executor without it answers Unsupported as a RuntimeError) or
/// "device" (`field_columns_device` on rows and a column already on the executor's GPU,
/// the call `accelerations` makes on GPU arrays; Plummer with eps 0.01 like the others).
#[pyfunction]
#[pyo3(signature = (n, reps=20, threads=1, precision="f64", executor="cpu", potential=true, entry="accelerations"))]
#[allow(clippy::too_many_arguments)]
fn _rust_seconds(
    py: Python<'_>,
    n: usize,
    reps: usize,
    threads: usize,
    precision: &str,
    executor: &str,
    potential: bool,
    entry: &str,
) -> PyResult<f64> {
    fn time<T: PyReal>(
        py: Python<'_>,
        n: usize,
        reps: usize,
        backend: &Backend,
        potential: bool,
        columns: bool,
    ) -> PyResult<f64> {
        let (ps, _) = ics::plummer::<T>(n, 1);
        let mut params = Params::softened(T::from_f64(0.01)).with_overlap_identical();
        params.potential = potential;
        let rows: Vec<[T; 3]> = ps.iter().map(|p| [p.x, p.y, p.z]).collect();
        let masses: Vec<T> = ps.iter().map(|p| p.m).collect();
        with_executor::<T, _>(py, backend, |e| {
            let mut out = vec![Field::zero(); n];
            let (mut acc, mut phi) = (vec![[T::zero(); 3]; n], vec![T::zero(); n]);
            let mut times = Vec::new();
            for k in 0..=reps {
                out.iter_mut().for_each(|f| *f = Field::zero());
                let t = std::time::Instant::now();
                if columns {
                    let call = ColumnsCall { positions: &rows, masses: &masses, targets: None };
                    e.field_columns(call, &params, &mut acc, potential.then_some(&mut phi[..])).map_err(runtime)?;
                } else {
                    e.accelerations(&ps, &ps, &params, &mut out).map_err(runtime)?;
                }
                if k > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            times.sort_by(f64::total_cmp);
            Ok(times[times.len() / 2])
        })?
    }
    let reps = reps.max(1);
    let columns = match entry {
        "accelerations" => false,
        "columns" => true,
        #[cfg(feature = "cuda")]
        "device" => {
            return match precision {
                "f32" => device::rust_seconds::<f32>(py, n, reps, &backend::<f32>(executor, None)?, potential),
                "f64" => device::rust_seconds::<f64>(py, n, reps, &backend::<f64>(executor, None)?, potential),
                other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
            }
        }
        other => {
            return Err(value_error(format!(
                "entry must be 'accelerations', 'columns' or (with CUDA) 'device' (got {other:?})"
            )))
        }
    };
    match precision {
        "f32" => time::<f32>(py, n, reps, &backend::<f32>(executor, Some(threads))?, potential, columns),
        "f64" => time::<f64>(py, n, reps, &backend::<f64>(executor, Some(threads))?, potential, columns),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// A simulation, as `nbody run` drives one.
#[pyclass(module = "nbody._nbody", unsendable)]
struct Simulation {
    /// The library's simulation: it chose where the particles live.
    run: Run,
    /// How it was made: rebuilds it after particles are added or removed, and goes into
    /// its saved files.
    config: Config,
    /// Steps taken before the last rebuild (the run's own count starts again at each).
    steps_before: u64,
}

/// A simulation's settings, as the constructor took them.
#[derive(Clone, Debug, PartialEq)]
struct Config {
    integrator: String,
    dt: f64,
    eta: f64,
    tolerance: f64,
    eps: f64,
    softening: String,
    gravity: Gravity,
    executor: String,
    precision: String,
    threads: Option<usize>,
    /// The units of everything the simulation takes and gives; it runs in N-body units
    /// (`dt` above is already in them).
    units: Units,
}

impl Config {
    /// sqrt(G) in the simulation's units: model time = time x `k`, model velocity =
    /// velocity / `k`, energy = model energy x `k`^2.
    fn k(&self) -> f64 {
        self.units.scale()
    }

    /// The library's plan of these settings (names checked against its registries).
    fn plan(&self) -> PyResult<Plan> {
        let integrator = Scheme::from_name(&self.integrator).map_err(|_| {
            value_error(format!("integrator must be one of {} (got {:?})", Scheme::names(), self.integrator))
        })?;
        let precision = lookup::<Precision>(&self.precision).ok_or_else(|| {
            value_error(format!("precision must be one of {} (got {:?})", names::<Precision>(), self.precision))
        })?;
        let plan = Plan {
            integrator,
            gravity: self.gravity,
            precision,
            softening: softening_kernel(&self.softening)?,
            eps: self.eps,
            dt: self.dt,
            eta: self.eta,
            tolerance: self.tolerance,
        };
        // A tree with another integrator, a bad step: the caller's mistake.
        plan.check().map_err(|e| value_error(e.to_string().replace("the tree steps", "gravity='tree' steps")))?;
        Ok(plan)
    }

    /// A simulation of the particles `rows` (x, y, z, m, vx, vy, vz) at `time`.
    fn build(&self, rows: &[[f64; 7]], time: f64) -> PyResult<Run> {
        let plan = self.plan()?;
        let opened = backend_for(&self.executor, self.threads, plan.precision.name())?.open().map_err(backend_error)?;
        simulation::open(&plan, rows, time, opened).map_err(runtime)
    }

    /// `key=value` lines (floats as their bits, so a load is exact).
    fn to_text(&self) -> String {
        let bits = |x: f64| format!("{:016x}", x.to_bits());
        let (theta, alpha) = match self.gravity {
            Gravity::Direct => (0.0, 0.0),
            Gravity::Tree { theta, criterion: Criterion::Geometric } => (theta, 0.0),
            Gravity::Tree { theta, criterion: Criterion::Relative { alpha } } => (theta, alpha),
        };
        let gravity = self.gravity.solver().name();
        [
            ("integrator", self.integrator.clone()),
            ("dt", bits(self.dt)),
            ("eta", bits(self.eta)),
            ("tolerance", bits(self.tolerance)),
            ("eps", bits(self.eps)),
            ("softening", self.softening.clone()),
            ("gravity", gravity.to_owned()),
            ("theta", bits(theta)),
            ("alpha", bits(alpha)),
            ("executor", self.executor.clone()),
            ("precision", self.precision.clone()),
            ("threads", self.threads.map_or("0".into(), |t| t.to_string())),
            ("units", self.units.spec()),
        ]
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect()
    }

    fn from_text(text: &str) -> Option<Config> {
        let map: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let f = |k: &str| map.get(k).and_then(|v| u64::from_str_radix(v, 16).ok()).map(f64::from_bits);
        let s = |k: &str| map.get(k).map(|v| (*v).to_owned());
        let gravity = match lookup::<Solver>(map.get("gravity")?)? {
            Solver::Direct => Gravity::Direct,
            Solver::Tree => {
                Gravity::of(Solver::Tree, Some(f("theta")?), Some(f("alpha")?).filter(|&a| a > 0.0)).ok()?
            }
        };
        let threads = map.get("threads")?.parse::<usize>().ok()?;
        Some(Config {
            integrator: s("integrator")?,
            dt: f("dt")?,
            eta: f("eta")?,
            tolerance: f("tolerance")?,
            eps: f("eps")?,
            softening: s("softening")?,
            gravity,
            executor: s("executor")?,
            precision: s("precision")?,
            threads: (threads > 0).then_some(threads),
            units: Units::parse(map.get("units").copied().unwrap_or("nbody")).ok()?,
        })
    }
}

/// The first bytes of a saved simulation (`Simulation.save`), then the format's version.
const SAVED_MAGIC: &[u8; 8] = b"NBODYSIM";
/// 2: the library's simulation words (1 held each front end's own).
const SAVED_VERSION: u64 = 2;

impl Simulation {
    /// Rebuilds the simulation from the settings over the particles `change` leaves, at
    /// the same time and step count.
    fn rebuild(&mut self, change: impl FnOnce(&mut Vec<[f64; 7]>)) -> PyResult<()> {
        let (time, steps) = (self.run.sim.time(), self.steps_before + self.run.sim.steps());
        let mut rows = self.run.sim.snapshot().map_err(runtime)?;
        change(&mut rows);
        self.run = self.config.build(&rows, time)?;
        self.steps_before = steps;
        Ok(())
    }

    /// The particles now, in N-body units.
    fn rows(&mut self) -> PyResult<Vec<[f64; 7]>> {
        self.run.sim.snapshot().map_err(runtime)
    }
}

/// `gravity=`, `theta=` and `alpha=` as the library's solver.
fn gravity_of(name: &str, theta: Option<f64>, alpha: Option<f64>) -> PyResult<Gravity> {
    let solver = lookup::<Solver>(name)
        .ok_or_else(|| value_error(format!("gravity must be one of {} (got {name:?})", names::<Solver>())))?;
    if solver == Solver::Direct && (theta.is_some() || alpha.is_some()) {
        return Err(value_error("theta and alpha set the tree: they need gravity='tree'"));
    }
    for (x, what) in [(theta, "theta"), (alpha, "alpha")] {
        if let Some(x) = x.filter(|x| !(x.is_finite() && *x > 0.0)) {
            return Err(value_error(format!("{what} must be positive and finite (got {x})")));
        }
    }
    Gravity::of(solver, theta, alpha).map_err(runtime)
}

#[pymethods]
impl Simulation {
    /// A system from initial conditions (`ic`: "plummer", "cold-sphere", "kepler",
    /// "figure8") or from `positions`, `velocities` and `masses`; `test_positions` (and
    /// `test_velocities`) append massless test particles after it, which feel every
    /// massive particle and exert nothing (a step costs N x N_massive). `gravity="tree"`
    /// takes the forces from a Barnes-Hut tree with quadrupole cells (`theta`, default
    /// 0.5, or Gadget's relative criterion with `alpha`; leapfrog only; energies from the
    /// tree's potential). The arrays may be numpy arrays, other libraries' host arrays
    /// (DLPack) or, in CUDA builds, GPU arrays (CuPy, PyTorch, JAX, numba), which are
    /// read once into the simulation's own state.
    #[new]
    #[pyo3(signature = (ic="plummer", n=1024, seed=1, positions=None, velocities=None, masses=None, integrator="leapfrog", dt=1.0/256.0, eta=0.02, tolerance=1e-8, eps=1.0/64.0, executor="cpu", precision="f64", threads=None, test_positions=None, test_velocities=None, softening="plummer", gravity="direct", theta=None, alpha=None, units=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        ic: &str,
        n: usize,
        seed: u64,
        positions: Option<&Bound<'_, PyAny>>,
        velocities: Option<&Bound<'_, PyAny>>,
        masses: Option<&Bound<'_, PyAny>>,
        integrator: &str,
        dt: f64,
        eta: f64,
        tolerance: f64,
        eps: f64,
        executor: &str,
        precision: &str,
        threads: Option<usize>,
        test_positions: Option<&Bound<'_, PyAny>>,
        test_velocities: Option<&Bound<'_, PyAny>>,
        softening: &str,
        gravity: &str,
        theta: Option<f64>,
        alpha: Option<f64>,
        units: Option<&str>,
    ) -> PyResult<Self> {
        let arrays = [positions, velocities, masses, test_positions, test_velocities];
        let names = ["positions", "velocities", "masses", "test_positions", "test_velocities"];
        let host: Vec<Option<Bound<'_, PyAny>>> =
            arrays.iter().zip(names).map(|(a, name)| state_array(*a, name)).collect::<PyResult<_>>()?;
        let [positions, velocities, masses, test_positions, test_velocities]: [Option<&Bound<'_, PyAny>>; 5] =
            core::array::from_fn(|k| host[k].as_ref());
        let gravity = gravity_of(gravity, theta, alpha)?;
        let units = Units::parse(units.unwrap_or("nbody"))
            .map_err(|e| value_error(e.to_string().replace("--units", "units")))?;
        if !(dt.is_finite() && dt > 0.0) {
            return Err(value_error(format!("dt must be positive and finite (got {dt})")));
        }
        let mut rows: Vec<[f64; 7]> = match (positions, velocities, masses) {
            (Some(p), v, Some(m)) => {
                let p = coords(p, "positions")?.rows();
                finite(&p, "positions")?;
                let m = self::masses(m, p.len())?;
                let v = match v {
                    Some(v) => coords(v, "velocities")?.rows(),
                    None => vec![[0.0; 3]; p.len()],
                };
                if v.len() != p.len() {
                    return Err(value_error(format!("velocities has {} rows, positions has {}", v.len(), p.len())));
                }
                finite(&v, "velocities")?;
                p.iter().zip(&v).zip(&m).map(|((x, u), &m)| [x[0], x[1], x[2], m, u[0], u[1], u[2]]).collect()
            }
            (None, None, None) => {
                let (p, v) = match ic {
                    "plummer" => ics::plummer::<f64>(n, seed),
                    "cold-sphere" => ics::cold_sphere::<f64>(n, seed),
                    "kepler" => ics::kepler::<f64>(0.5, 0.5, 0.5),
                    "figure8" => ics::figure_eight::<f64>(),
                    other => {
                        return Err(value_error(format!(
                            "ic must be 'plummer', 'cold-sphere', 'kepler' or 'figure8' (got {other:?})"
                        )))
                    }
                };
                p.iter().zip(&v).map(|(p, v)| [p.x, p.y, p.z, p.m, v.vx, v.vy, v.vz]).collect()
            }
            _ => {
                return Err(value_error(
                    "give positions and masses (and optionally velocities) together, or none of them",
                ))
            }
        };
        // Rows from arrays carry the caller's units; generated ones are N-body already.
        let generated = if positions.is_some() { 0 } else { rows.len() };
        match (test_positions, test_velocities) {
            (Some(p), v) => {
                let p = coords(p, "test_positions")?.rows();
                finite(&p, "test_positions")?;
                let v = match v {
                    Some(v) => coords(v, "test_velocities")?.rows(),
                    None => vec![[0.0; 3]; p.len()],
                };
                if v.len() != p.len() {
                    return Err(value_error(format!(
                        "test_velocities has {} rows, test_positions has {}",
                        v.len(),
                        p.len()
                    )));
                }
                finite(&v, "test_velocities")?;
                rows.extend(p.iter().zip(&v).map(|(x, u)| [x[0], x[1], x[2], 0.0, u[0], u[1], u[2]]));
            }
            (None, Some(_)) => return Err(value_error("test_velocities needs test_positions")),
            (None, None) => {}
        }
        if rows.is_empty() {
            return Err(value_error("a simulation needs at least one particle"));
        }
        // Velocities given in the simulation's units are the model's divided by sqrt(G)
        // (generated initial conditions are in N-body units already).
        let k = units.scale();
        for r in &mut rows[generated..] {
            r[4..7].iter_mut().for_each(|v| *v /= k);
        }
        let config = Config {
            integrator: integrator.to_owned(),
            dt: dt * k,
            eta,
            tolerance,
            eps,
            softening: softening.to_owned(),
            gravity,
            executor: executor.to_owned(),
            precision: precision.to_owned(),
            threads,
            units,
        };
        Ok(Self { run: config.build(&rows, 0.0)?, config, steps_before: 0 })
    }

    /// One step (one block step; one adaptive stretch for "rk"), never past `until`
    /// where the integrator can shorten its step ("hermite", "rk"); returns the time.
    #[pyo3(signature = (until=None))]
    fn step(&mut self, py: Python<'_>, until: Option<f64>) -> PyResult<f64> {
        let until = until.unwrap_or(f64::INFINITY);
        if until.is_nan() {
            return Err(value_error("until must not be NaN"));
        }
        let (run, k) = (&mut self.run, self.config.k());
        py.detach(|| run.sim.step(until * k).map(|_| run.sim.time() / k)).map_err(runtime)
    }

    /// Index pairs `(i, j)`, `i < j`, of particles closer than `radii[i] + radii[j]`
    /// (unsoftened), as an (K, 2) int64 array in increasing order: what a collision
    /// stopping condition asks after each step. The executor's neighbour search finds
    /// them (one force pass, on the GPU for a CUDA executor).
    fn collisions<'py>(&mut self, py: Python<'py>, radii: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.rows()?.len();
        let radii = per_particle(radii, "radii", n)?;
        let run = &mut self.run;
        let pairs = py.detach(|| run.sim.touching(&radii)).map_err(runtime)?;
        let flat: Vec<i64> = pairs.iter().flat_map(|p| p.map(i64::from)).collect();
        Ok(PyArray1::from_vec(py, flat).reshape([pairs.len(), 2])?.into_any())
    }

    /// Steps until the simulated time reaches `t`; returns the time.
    fn evolve(&mut self, py: Python<'_>, t: f64) -> PyResult<f64> {
        if !t.is_finite() {
            return Err(value_error(format!("t must be finite (got {t})")));
        }
        let (run, k) = (&mut self.run, self.config.k());
        py.detach(|| run.sim.advance_to(t * k).map(|_| run.sim.time() / k)).map_err(runtime)
    }

    /// Simulated time.
    #[getter]
    fn time(&self) -> f64 {
        self.run.sim.time() / self.config.k()
    }

    /// Whether the particles live on the GPU between steps (the library's choice: the
    /// leapfrog, Hermite and the tree on one GPU with Plummer softening).
    #[getter]
    fn on_device(&self) -> bool {
        self.run.on_device
    }

    /// Steps taken.
    #[getter]
    fn steps(&self) -> u64 {
        self.steps_before + self.run.sim.steps()
    }

    /// Positions, (N, 3) float64.
    #[getter]
    fn positions<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v: Vec<f64> = self.rows()?.iter().flat_map(|r| [r[0], r[1], r[2]]).collect();
        let n = v.len() / 3;
        Ok(PyArray1::from_vec(py, v).reshape([n, 3])?.into_any())
    }

    /// Velocities, (N, 3) float64.
    #[getter]
    fn velocities<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let k = self.config.k();
        let v: Vec<f64> = self.rows()?.iter().flat_map(|r| [r[4] * k, r[5] * k, r[6] * k]).collect();
        let n = v.len() / 3;
        Ok(PyArray1::from_vec(py, v).reshape([n, 3])?.into_any())
    }

    /// Masses, (N,) float64.
    #[getter]
    fn masses<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v: Vec<f64> = self.rows()?.iter().map(|r| r[3]).collect();
        Ok(PyArray1::from_vec(py, v).into_any())
    }

    /// The whole simulation as bytes: settings, state and the integrator's own state
    /// (what `save` writes and pickling uses).
    #[allow(clippy::wrong_self_convention)] // a device tree's run downloads its particles first
    fn to_bytes(&mut self) -> PyResult<Vec<u8>> {
        let saved = self.run.save().map_err(runtime)?;
        let words: Vec<u64> = std::iter::once(self.steps_before).chain(saved).collect();
        let config = self.config.to_text();
        let mut out = SAVED_MAGIC.to_vec();
        out.extend(SAVED_VERSION.to_le_bytes());
        out.extend((config.len() as u64).to_le_bytes());
        out.extend(config.as_bytes());
        out.extend((words.len() as u64).to_le_bytes());
        out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        nbody_integrators::seal(&mut out);
        Ok(out)
    }

    /// A simulation from `to_bytes`' bytes (`name` names them in errors).
    #[staticmethod]
    #[pyo3(signature = (data, name="the saved simulation"))]
    fn from_bytes(data: &[u8], name: &str) -> PyResult<Simulation> {
        let bad = |why: &str| value_error(format!("{name}: {why}"));
        if data.len() < 40 || &data[..8] != SAVED_MAGIC {
            return Err(bad("not a saved nbody simulation"));
        }
        let body = nbody_integrators::unseal(data).ok_or_else(|| bad("damaged (its checksum does not match)"))?;
        let word = |at: usize| -> PyResult<u64> {
            body.get(at..at + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .ok_or_else(|| bad("cut short"))
        };
        if word(8)? != SAVED_VERSION {
            return Err(bad("written by another version of the format"));
        }
        let text_len = usize::try_from(word(16)?).map_err(|_| bad("cut short"))?;
        let text = body.get(24..24 + text_len).ok_or_else(|| bad("cut short"))?;
        let config = std::str::from_utf8(text).ok().and_then(Config::from_text).ok_or_else(|| bad("bad settings"))?;
        let n = usize::try_from(word(24 + text_len)?).map_err(|_| bad("cut short"))?;
        let start = 32 + text_len;
        if body.len() != start + 8 * n {
            return Err(bad("cut short"));
        }
        let words: Vec<u64> =
            body[start..].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
        // Built over no particles, then given the saved ones (and the integrator's state)
        // back, so stepping goes on bit for bit.
        let mut run = config.build(&[], 0.0)?;
        let (&steps_before, words) = words.split_first().ok_or_else(|| bad("cut short"))?;
        let mut w = Words::new(words);
        run.restore(&mut w).map_err(runtime)?;
        if !w.is_done() {
            return Err(bad("words left over (another format or damage)"));
        }
        Ok(Simulation { run, config, steps_before })
    }

    /// Writes the simulation to `path` (through a temporary file renamed when complete):
    /// `Simulation.load(path)` continues it bit for bit (a device tree's run loads on a
    /// GPU, a host tree's on the host).
    fn save(&mut self, path: std::path::PathBuf) -> PyResult<()> {
        let bytes = self.to_bytes()?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.part-{}", std::process::id()));
        let io = |e: std::io::Error| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display()));
        std::fs::write(&tmp, &bytes).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    /// The simulation `save` wrote to `path`.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Simulation> {
        let data = std::fs::read(&path)
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display())))?;
        Simulation::from_bytes(&data, &path.display().to_string())
    }

    /// Pickling: the bytes of `to_bytes`.
    fn __reduce__<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let load = py.get_type::<Simulation>().getattr("from_bytes")?;
        Ok((load, (pyo3::types::PyBytes::new(py, &self.to_bytes()?).into_any(),)))
    }

    /// Appends particles (positions and velocities (N, 3), masses (N,)) between steps. The
    /// integrator starts again from the new system (a Hermite integrator takes its first
    /// steps anew); the time and the step count go on.
    fn add_particles(
        &mut self,
        positions: &Bound<'_, PyAny>,
        velocities: &Bound<'_, PyAny>,
        masses: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let mut extra = snapshot_rows(positions, velocities, masses)?;
        let k = self.config.k();
        extra.iter_mut().for_each(|r| r[4..7].iter_mut().for_each(|v| *v /= k));
        self.rebuild(|rows| rows.extend(extra))
    }

    /// Removes the particles at `indices` (any order; each at most once) between steps,
    /// as `add_particles` rebuilds.
    fn remove_particles(&mut self, indices: Vec<i64>) -> PyResult<()> {
        let n = self.rows()?.len();
        let mut gone = vec![false; n];
        for &i in &indices {
            let k = usize::try_from(i).ok().filter(|&k| k < n);
            let Some(k) = k else { return Err(value_error(format!("index {i} is not a particle (0 to {})", n - 1))) };
            if std::mem::replace(&mut gone[k], true) {
                return Err(value_error(format!("index {i} is given twice")));
            }
        }
        if indices.len() == n {
            return Err(value_error("removing every particle would leave an empty simulation"));
        }
        self.rebuild(|rows| {
            let mut k = 0;
            rows.retain(|_| {
                k += 1;
                !gone[k - 1]
            })
        })
    }

    /// Writes the system now as a Gadget HDF5 snapshot (see `nbody.write_snapshot`).
    fn save_snapshot(&mut self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let k = self.config.k();
        let (mut rows, time) = (self.rows()?, self.run.sim.time() / k);
        rows.iter_mut().for_each(|r| r[4..7].iter_mut().for_each(|v| *v *= k));
        let units = &self.config.units;
        py.detach(|| snapshots::write(&path, &rows, time, units))
    }

    /// What the command's energy.csv reports, now, as a dict in the simulation's units:
    /// time, steps, kinetic, potential and total energy, momentum, angular momentum (3
    /// each), centre of mass (3) and the virial ratio 2T/|W| (one force evaluation).
    fn diagnostics<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let (run, k) = (&mut self.run, self.config.k());
        let d = py.detach(|| run.sim.diagnostics()).map_err(runtime)?;
        let out = pyo3::types::PyDict::new(py);
        out.set_item("time", self.time())?;
        out.set_item("steps", self.steps())?;
        out.set_item("kinetic", d.kinetic * k * k)?;
        out.set_item("potential", d.potential * k * k)?;
        out.set_item("total", d.total * k * k)?;
        out.set_item("momentum", d.momentum.map(|p| p * k).to_vec())?;
        out.set_item("angular_momentum", d.angular_momentum.map(|l| l * k).to_vec())?;
        out.set_item("centre_of_mass", d.centre_of_mass.to_vec())?;
        out.set_item("virial_ratio", d.virial_ratio)?;
        Ok(out)
    }

    /// Kinetic, potential and total energy now (one force evaluation).
    fn energies(&mut self, py: Python<'_>) -> PyResult<(f64, f64, f64)> {
        let (run, k2) = (&mut self.run, self.config.k().powi(2));
        py.detach(|| run.sim.diagnostics().map(|d| (d.kinetic * k2, d.potential * k2, d.total * k2))).map_err(runtime)
    }
}

/// Acceleration, jerk (the acceleration's time derivative) and potential of every
/// particle from all the others (each skipping its own pair), as the Hermite integrators
/// use them: positions and velocities (N, 3), masses (N,), float32 or float64.
#[pyfunction]
#[pyo3(signature = (positions, velocities, masses, eps=0.0, G=1.0, executor="cpu", precision="f64", threads=None))]
#[allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity)]
fn jerk<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    velocities: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    eps: f64,
    G: f64,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(value_error(format!("eps must be finite and non-negative (got {eps})")));
    }
    if !(G.is_finite() && G >= 0.0) {
        return Err(value_error(format!("G must be finite and non-negative (got {G})")));
    }
    let rows = snapshot_rows(positions, velocities, masses)?;
    match precision {
        "f64" => jerk_in::<f64>(py, &rows, eps, G, &backend::<f64>(executor, threads)?),
        "f32" => jerk_in::<f32>(py, &rows, eps, G, &backend::<f32>(executor, threads)?),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

#[allow(clippy::type_complexity)]
fn jerk_in<'py, T: PyReal>(
    py: Python<'py>,
    rows: &[[f64; 7]],
    eps: f64,
    g: f64,
    backend: &Backend,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let c = T::from_f64;
    let pos: Vec<Particle<T>> = rows.iter().map(|r| Particle::new(c(r[0]), c(r[1]), c(r[2]), c(r[3]))).collect();
    let vel: Vec<Velocity<T>> = rows.iter().map(|r| Velocity::new(c(r[4]), c(r[5]), c(r[6]))).collect();
    let params = Params::softened(c(eps)).with_g(c(g)).with_overlap_identical();
    let n = pos.len();
    let (field, jerk) = with_executor::<T, _>(py, backend, |e| {
        let (mut out, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
        let b = Bodies { pos: &pos, vel: &vel };
        e.accelerations_jerk(b, b, &params, &mut out, &mut jerk).map(|_| (out, jerk))
    })?
    .map_err(runtime)?;
    let (acc, phi) = field_arrays(py, &field)?;
    let mut j = Vec::with_capacity(3 * n);
    jerk.iter().for_each(|k| j.extend_from_slice(&[k.jx, k.jy, k.jz]));
    Ok((acc, PyArray1::from_vec(py, j).reshape([n, 3])?.into_any(), phi))
}

/// The kernel's settings shared by the gradient calls, checked: (softening kernel,
/// Params without the overlap).
fn gradient_params<T: Real>(eps: f64, g: f64, softening: &str) -> PyResult<Params<T>> {
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(value_error(format!("eps must be finite and non-negative (got {eps})")));
    }
    if !(g.is_finite() && g >= 0.0) {
        return Err(value_error(format!("G must be finite and non-negative (got {g})")));
    }
    let kernel = softening_kernel(softening)?;
    Ok(Params::softened(T::from_f64(eps)).with_g(T::from_f64(g)).with_softening(kernel))
}

/// A gradient call's sources, its targets (None: the sources themselves) and parameters.
type GradientCall<T> = (Vec<Particle<T>>, Option<Vec<Particle<T>>>, Params<T>);

/// The particles of a gradient call, and its targets (the particles themselves, each
/// skipping its own pair, when `targets` is None) with the parameters to match.
fn gradient_call<T: Real>(
    positions: &Bound<'_, PyAny>,
    masses: &Bound<'_, PyAny>,
    targets: Option<&Bound<'_, PyAny>>,
    params: Params<T>,
) -> PyResult<GradientCall<T>> {
    let sources = particles::<T>(positions, masses)?;
    match targets {
        Some(t) => Ok((sources, Some(points::<T>(t, "targets")?), params)),
        None => Ok((sources, None, params.with_overlap_identical())),
    }
}

/// Acceleration (N, 3), potential (N,) and tidal tensor (N, 3, 3) of `targets` (default:
/// the particles themselves, each skipping its own pair): the tensor is the gradient of
/// a target's acceleration with respect to its own position, `T[i, a, b] = ∂a_a/∂x_b`.
#[pyfunction]
#[pyo3(signature = (positions, masses, eps=0.0, G=1.0, targets=None, executor="cpu", precision="f64", threads=None, softening="plummer"))]
#[allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity)]
fn tidal<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    eps: f64,
    G: f64,
    targets: Option<&Bound<'py, PyAny>>,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
    softening: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    fn run<'py, T: PyReal>(
        py: Python<'py>,
        call: GradientCall<T>,
        b: &Backend,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let (sources, targets, params) = call;
        let t = targets.as_deref().unwrap_or(&sources);
        let n = t.len();
        let (field, tidal) = with_executor::<T, _>(py, b, |e| {
            let (mut out, mut tidal) = (vec![Field::zero(); n], vec![Tidal::zero(); n]);
            e.accelerations_tidal(t, &sources, &params, &mut out, &mut tidal).map(|_| (out, tidal))
        })?
        .map_err(runtime)?;
        let (acc, phi) = field_arrays(py, &field)?;
        let full: Vec<T> = tidal.iter().flat_map(|k| [k.xx, k.xy, k.xz, k.xy, k.yy, k.yz, k.xz, k.yz, k.zz]).collect();
        Ok((acc, phi, PyArray1::from_vec(py, full).reshape([n, 3, 3])?.into_any()))
    }
    match precision {
        "f64" => run::<f64>(
            py,
            gradient_call(positions, masses, targets, gradient_params(eps, G, softening)?)?,
            &backend::<f64>(executor, threads)?,
        ),
        "f32" => run::<f32>(
            py,
            gradient_call(positions, masses, targets, gradient_params(eps, G, softening)?)?,
            &backend::<f32>(executor, threads)?,
        ),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// The vector-Jacobian product of `accelerations`: for cotangents `cot_acc` (K, 3) on
/// the targets' accelerations and, optionally, `cot_phi` (K,) on their potentials, the
/// gradients of `sum(cot_acc * acc) + sum(cot_phi * phi)`. Without `targets` (the
/// particles pull each other): `(d_positions (N, 3), d_masses (N,))`; with `targets`
/// (K, 3): `(d_targets (K, 3), d_positions (N, 3), d_masses (N,))`. Without `targets`
/// each particle's whole gradient is summed in one pass (`Executor::vjp_batch` on the
/// system), so its parts as a target and as a source are not rounded apart before they
/// cancel: in f32 it holds to the f64 product where the two parts added would not. Costs
/// about two force calls; on CUDA the pair kernels take each pair once for both of its
/// particles (about 1.7 force calls).
#[pyfunction]
#[pyo3(signature = (positions, masses, cot_acc, cot_phi=None, eps=0.0, G=1.0, targets=None, executor="cpu", precision="f64", threads=None, softening="plummer"))]
#[allow(non_snake_case, clippy::too_many_arguments)]
fn vjp<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    cot_acc: &Bound<'py, PyAny>,
    cot_phi: Option<&Bound<'py, PyAny>>,
    eps: f64,
    G: f64,
    targets: Option<&Bound<'py, PyAny>>,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
    softening: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    fn run<'py, T: PyReal>(
        py: Python<'py>,
        call: GradientCall<T>,
        cot_acc: &Bound<'py, PyAny>,
        cot_phi: Option<&Bound<'py, PyAny>>,
        b: &Backend,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (sources, targets, mut params) = call;
        let t = targets.as_deref().unwrap_or(&sources);
        let (n, ns) = (t.len(), sources.len());
        let cot = cotangent_records::<T>(cot_acc, cot_phi, n, &mut params)?;
        let rows = |g: &[Particle<T>]| -> PyResult<Bound<'py, PyAny>> {
            let flat: Vec<T> = g.iter().flat_map(|q| [q.x, q.y, q.z]).collect();
            Ok(PyArray1::from_vec(py, flat).reshape([g.len(), 3])?.into_any())
        };
        let masses = |g: &[Particle<T>]| PyArray1::from_vec(py, g.iter().map(|q| q.m).collect::<Vec<T>>()).into_any();
        if targets.is_none() {
            // The system on itself as one batched pair: each particle's whole gradient
            // summed at once (CUDA's pair kernels, the CPU's whole-gradient pass).
            let all = Span::new(0, u32::try_from(n).map_err(|_| value_error("too many particles for one call"))?);
            let pair = [Pair { targets: all, sources: Span::new(0, 1) }];
            let list = InteractionList { pairs: &pair, source_spans: &[all] };
            let g = with_executor::<T, _>(py, b, |e| {
                let mut g = vec![Particle::zero(); n];
                e.vjp_batch(&sources, &list, &params, &cot, &mut g).map(|_| g)
            })?
            .map_err(runtime)?;
            return PyTuple::new(py, [rows(&g)?, masses(&g)]);
        }
        let (gt, gs) = with_executor::<T, _>(py, b, |e| {
            let (mut gt, mut gs) = (vec![Particle::zero(); n], vec![Particle::zero(); ns]);
            e.vjp(t, &sources, &params, &cot, &mut gt, &mut gs).map(|_| (gt, gs))
        })?
        .map_err(runtime)?;
        PyTuple::new(py, [rows(&gt)?, rows(&gs)?, masses(&gs)])
    }
    match precision {
        "f64" => run::<f64>(
            py,
            gradient_call(positions, masses, targets, gradient_params(eps, G, softening)?)?,
            cot_acc,
            cot_phi,
            &backend::<f64>(executor, threads)?,
        ),
        "f32" => run::<f32>(
            py,
            gradient_call(positions, masses, targets, gradient_params(eps, G, softening)?)?,
            cot_acc,
            cot_phi,
            &backend::<f32>(executor, threads)?,
        ),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// The vector-Jacobian product of `leaves` (its particle-particle part): for cotangents
/// `cot_acc` (N, 3) and optionally `cot_phi` (N,) on the field the list's pairs give each
/// particle, the gradients `(d_positions (N, 3), d_masses (N,))` of `sum(cot_acc * acc) +
/// sum(cot_phi * phi)`, each particle's parts as a target and as a source together.
#[pyfunction]
#[pyo3(signature = (positions, masses, pairs, spans, cot_acc, cot_phi=None, eps=0.0, G=1.0, executor="cpu", precision="f64", threads=None, softening="plummer"))]
#[allow(non_snake_case, clippy::too_many_arguments)]
fn leaves_vjp<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    pairs: &Bound<'py, PyAny>,
    spans: &Bound<'py, PyAny>,
    cot_acc: &Bound<'py, PyAny>,
    cot_phi: Option<&Bound<'py, PyAny>>,
    eps: f64,
    G: f64,
    executor: &str,
    precision: &str,
    threads: Option<usize>,
    softening: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    fn run<'py, T: PyReal>(
        py: Python<'py>,
        (particles, pairs, spans): (Vec<Particle<T>>, Vec<Pair>, Vec<Span>),
        mut params: Params<T>,
        (cot_acc, cot_phi): (&Bound<'py, PyAny>, Option<&Bound<'py, PyAny>>),
        b: &Backend,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let n = particles.len();
        let cot = cotangent_records::<T>(cot_acc, cot_phi, n, &mut params)?;
        let grads = with_executor::<T, _>(py, b, |e| {
            let mut g = vec![Particle::zero(); n];
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            e.vjp_batch(&particles, &list, &params, &cot, &mut g).map(|_| g)
        })?
        .map_err(runtime)?;
        let flat: Vec<T> = grads.iter().flat_map(|q| [q.x, q.y, q.z]).collect();
        let dm = PyArray1::from_vec(py, grads.iter().map(|q| q.m).collect::<Vec<T>>()).into_any();
        PyTuple::new(py, [PyArray1::from_vec(py, flat).reshape([n, 3])?.into_any(), dm])
    }
    let pairs = pair_rows(pairs)?;
    let spans = self::spans(&index_rows(spans, "spans", 2)?);
    let cots = (cot_acc, cot_phi);
    match precision {
        "f64" => {
            let list = (particles::<f64>(positions, masses)?, pairs, spans);
            run::<f64>(py, list, gradient_params(eps, G, softening)?, cots, &backend::<f64>(executor, threads)?)
        }
        "f32" => {
            let list = (particles::<f32>(positions, masses)?, pairs, spans);
            run::<f32>(py, list, gradient_params(eps, G, softening)?, cots, &backend::<f32>(executor, threads)?)
        }
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// Cotangent records from `cot_acc` (N, 3) and `cot_phi` (N,): `params.potential` is set
/// when `cot_phi` is given (without it the potential's cotangent is zero).
fn cotangent_records<T: PyReal>(
    cot_acc: &Bound<'_, PyAny>,
    cot_phi: Option<&Bound<'_, PyAny>>,
    n: usize,
    params: &mut Params<T>,
) -> PyResult<Vec<Field<T>>> {
    let c = coords(cot_acc, "cot_acc")?;
    if c.len() != n {
        return Err(value_error(format!("cot_acc has {} rows, expected one per target ({n})", c.len())));
    }
    let c: Vec<Particle<T>> = c.particles(&[], "cot_acc")?;
    let h = cot_phi.map(|h| finite_values(h, "cot_phi", n, "expected one per target ({n})")).transpose()?;
    params.potential = h.is_some();
    Ok(c.iter()
        .enumerate()
        .map(|(i, c)| Field::new(c.x, c.y, c.z, T::from_f64(h.as_ref().map_or(0.0, |h| h[i]))))
        .collect())
}

/// The projected mass of the particles on a square window of `pixels` x `pixels` cells
/// (plane "xy", "xz" or "yz"; `centre` the window's centre in that plane, `half_width`
/// half its side), cloud-in-cell, as the command's density pictures: a (pixels, pixels)
/// float64 array, row 0 at the top. On a CUDA executor the deposit runs on the GPU.
#[pyfunction]
#[pyo3(signature = (positions, masses, plane="xy", centre=(0.0, 0.0), half_width=1.0, pixels=256, executor="cpu", threads=None))]
#[allow(clippy::too_many_arguments)]
fn density_map<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    plane: &str,
    centre: (f64, f64),
    half_width: f64,
    pixels: usize,
    executor: &str,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let plane = match plane {
        "xy" => Plane::XY,
        "xz" => Plane::XZ,
        "yz" => Plane::YZ,
        other => return Err(value_error(format!("plane must be 'xy', 'xz' or 'yz' (got {other:?})"))),
    };
    if pixels == 0 || pixels > 1 << 14 {
        return Err(value_error(format!("pixels must be 1 to 16384 (got {pixels})")));
    }
    let projection = Projection { plane, centre: [centre.0, centre.1], half_width, pixels };
    projection.validate(pixels * pixels).map_err(|e| value_error(e.to_string()))?;
    let particles = particles::<f64>(positions, masses)?;
    let grid = with_executor::<f64, _>(py, &backend::<f64>(executor, threads)?, |e| {
        let mut grid = vec![0.0; pixels * pixels];
        e.project(&particles, &projection, &mut grid).map(|_| grid)
    })?
    .map_err(runtime)?;
    Ok(PyArray1::from_vec(py, grid).reshape([pixels, pixels])?.into_any())
}

/// The rows `[x, y, z, m, vx, vy, vz]` of positions, velocities and masses from numpy.
fn snapshot_rows(
    positions: &Bound<'_, PyAny>,
    velocities: &Bound<'_, PyAny>,
    masses: &Bound<'_, PyAny>,
) -> PyResult<Vec<[f64; 7]>> {
    let p = coords(positions, "positions")?.rows();
    finite(&p, "positions")?;
    let v = coords(velocities, "velocities")?.rows();
    finite(&v, "velocities")?;
    if v.len() != p.len() {
        return Err(value_error(format!("velocities has {} rows, positions has {}", v.len(), p.len())));
    }
    let m = self::masses(masses, p.len())?;
    Ok(p.iter().zip(&v).zip(&m).map(|((x, u), &m)| [x[0], x[1], x[2], m, u[0], u[1], u[2]]).collect())
}

/// Writes a snapshot in Gadget's HDF5 layout (the command's `--format hdf5`): positions
/// and velocities (N, 3) and masses (N,), float32 or float64, at time `time`; written
/// to a temporary file and renamed.
#[pyfunction]
#[pyo3(signature = (path, positions, velocities, masses, time=0.0, units=None))]
fn write_snapshot(
    py: Python<'_>,
    path: std::path::PathBuf,
    positions: &Bound<'_, PyAny>,
    velocities: &Bound<'_, PyAny>,
    masses: &Bound<'_, PyAny>,
    time: f64,
    units: Option<&str>,
) -> PyResult<()> {
    if !time.is_finite() {
        return Err(value_error(format!("time must be finite (got {time})")));
    }
    let units =
        Units::parse(units.unwrap_or("nbody")).map_err(|e| value_error(e.to_string().replace("--units", "units")))?;
    let rows = snapshot_rows(positions, velocities, masses)?;
    py.detach(|| snapshots::write(&path, &rows, time, &units))
}

/// Reads a Gadget HDF5 snapshot (every PartType0 to PartType5, float or double; masses
/// from the Masses field or the header's mass table): positions (N, 3), velocities
/// (N, 3) and masses (N,), float64.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn read_snapshot<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let rows = py.detach(|| snapshots::read(&path))?;
    let n = rows.len();
    let take = |k: std::ops::Range<usize>| -> Vec<f64> { rows.iter().flat_map(|r| r[k.clone()].to_vec()).collect() };
    Ok((
        PyArray1::from_vec(py, take(0..3)).reshape([n, 3])?.into_any(),
        PyArray1::from_vec(py, take(4..7)).reshape([n, 3])?.into_any(),
        PyArray1::from_vec(py, take(3..4)).into_any(),
    ))
}

/// Gadget HDF5 through the facade's `nbody::gadget` where the wheel was built with HDF5.
mod snapshots {
    use nbody::units::Units;
    use pyo3::prelude::*;
    use std::path::Path;

    #[cfg(feature = "hdf5")]
    pub(super) fn write(path: &Path, rows: &[[f64; 7]], time: f64, units: &Units) -> PyResult<()> {
        let units = nbody::gadget::GadgetUnits::of(units);
        let extras = nbody::gadget::Extras { time, units, ..Default::default() };
        nbody::gadget::write(path, rows, &extras).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }

    #[cfg(feature = "hdf5")]
    pub(super) fn read(path: &Path) -> PyResult<Vec<[f64; 7]>> {
        nbody::gadget::read(path).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }

    #[cfg(not(feature = "hdf5"))]
    fn missing(path: &Path) -> PyErr {
        pyo3::exceptions::PyRuntimeError::new_err(format!(
            "{}: this build of nbody has no HDF5 (install libhdf5, e.g. Debian's libhdf5-dev, and reinstall: pip finds it through pkg-config)",
            path.display()
        ))
    }

    #[cfg(not(feature = "hdf5"))]
    pub(super) fn write(path: &Path, _: &[[f64; 7]], _: f64, _: &Units) -> PyResult<()> {
        Err(missing(path))
    }

    #[cfg(not(feature = "hdf5"))]
    pub(super) fn read(path: &Path) -> PyResult<Vec<[f64; 7]>> {
        Err(missing(path))
    }
}

/// The backend strings this build and machine offer, as `executor=` takes them (the
/// command's `--executor` and the C ABI's `nbody_open` take the same). With
/// `capabilities=True`, a dict instead: each backend string to what its executor
/// declares it computes in f64, `{"plummer": [entry points], "spline": [...]}`.
#[pyfunction]
#[pyo3(signature = (capabilities = false))]
fn backends(py: Python<'_>, capabilities: bool) -> PyResult<Py<PyAny>> {
    let offers = nbody_backends::offered();
    if !capabilities {
        let names: Vec<String> = offers.into_iter().map(|o| o.backend.to_string()).collect();
        return Ok(names.into_pyobject(py)?.into_any().unbind());
    }
    let out = pyo3::types::PyDict::new(py);
    for offer in offers {
        let caps = offer.capabilities().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let entry = pyo3::types::PyDict::new(py);
        let names = |e: nbody_core::capabilities::Entries| e.iter().map(|x| x.name()).collect::<Vec<_>>();
        for &kernel in nbody_core::Softening::ALL {
            entry.set_item(kernel.name(), names(caps.kernel(kernel)))?;
        }
        out.set_item(offer.backend.to_string(), entry)?;
    }
    Ok(out.into_any().unbind())
}

/// The integrators `Simulation(integrator=...)` takes, by name (the command's
/// `--integrator` and the AMUSE code take the same names), each with one line on what it
/// is and which settings it reads.
#[pyfunction]
fn integrators() -> Vec<(&'static str, &'static str)> {
    Scheme::ALL.iter().map(|s| (s.name(), s.about())).collect()
}

/// The softening kernels `softening=` takes, by name (the command's `--softening`, the C
/// ABI and `nbody info` read the same registry), each with one line on what it is.
#[pyfunction]
fn softenings() -> Vec<(&'static str, &'static str)> {
    nbody_core::Softening::ALL.iter().map(|s| (s.name(), s.about())).collect()
}

/// Direct-summation gravity on numpy arrays.
#[pymodule]
fn _nbody(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(integrators, m)?)?;
    m.add_function(wrap_pyfunction!(softenings, m)?)?;
    m.add_function(wrap_pyfunction!(accelerations, m)?)?;
    m.add_function(wrap_pyfunction!(leaves, m)?)?;
    m.add_function(wrap_pyfunction!(cell, m)?)?;
    m.add_function(wrap_pyfunction!(write_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(jerk, m)?)?;
    m.add_function(wrap_pyfunction!(tidal, m)?)?;
    m.add_function(wrap_pyfunction!(vjp, m)?)?;
    m.add_function(wrap_pyfunction!(leaves_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(density_map, m)?)?;
    m.add_function(wrap_pyfunction!(read_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_seconds, m)?)?;
    #[cfg(feature = "cuda")]
    {
        m.add_function(wrap_pyfunction!(device::_accelerations_device, m)?)?;
        m.add_function(wrap_pyfunction!(device::_jerk_device, m)?)?;
        m.add_function(wrap_pyfunction!(device::_leaves_device, m)?)?;
        m.add_function(wrap_pyfunction!(device::_vjp_device, m)?)?;
        m.add_class::<device::GpuArray>()?;
    }
    #[cfg(not(feature = "cuda"))]
    {
        m.add_function(wrap_pyfunction!(_accelerations_device, m)?)?;
        m.add("_jerk_device", m.getattr("_accelerations_device")?)?;
        m.add("_leaves_device", m.getattr("_accelerations_device")?)?;
        m.add("_vjp_device", m.getattr("_accelerations_device")?)?;
    }
    m.add_class::<Simulation>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Whether the wheel was built with the CUDA executors (pip's build backend decides:
    // python/build_backend/nbody_build.py).
    m.add("cuda_compiled", nbody_backends::cuda_compiled())?;
    m.add("hdf5_compiled", cfg!(feature = "hdf5"))?;
    Ok(())
}
