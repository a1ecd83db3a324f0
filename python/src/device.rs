//! GPU arrays in place: arrays of other libraries on a GPU (CuPy, PyTorch, JAX, numba),
//! read through DLPack or the CUDA array interface, handed to the CUDA executor as
//! device addresses (`Executor::field_columns_device`), and the outputs allocated on the
//! same GPU and returned as [`GpuArray`]s, which those libraries take back through
//! DLPack or the CUDA array interface without a copy.

use super::{backend, cells_of, gradient_params, on_host, runtime, value_error, with_executor, LeafRows, PyReal};
use nbody_core::columns::DeviceColumns;
use nbody_core::Params;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

/// DLPack's device types (dlpack.h) of GPU memory CUDA kernels read: device memory
/// and managed memory.
const DL_CUDA: i32 = 2;
const DL_CUDA_MANAGED: i32 = 13;
/// DLPack's type code of IEEE floats.
const DL_FLOAT: u8 = 2;
/// The name of an unversioned DLPack capsule not yet taken (a consumer renames it).
const DLTENSOR: &CStr = c"dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// An array's element type: kind (`b'f'`, `b'i'`, `b'u'`) and width in bits.
type Elem = (u8, u8);

/// One GPU array as another library offers it, held for the length of a call.
pub(crate) struct View<'py> {
    address: u64,
    shape: Vec<usize>,
    /// The GPU, where the array says (DLPack); the driver places the others.
    device: Option<u32>,
    /// The stream its producer wrote it on, for the call to wait for.
    stream: Option<u64>,
    /// Whether the producer marks it read-only (the CUDA array interface says; a DLPack
    /// export does not).
    readonly: bool,
    /// The DLPack capsule: its destructor gives the producer's tensor back.
    _capsule: Option<Bound<'py, PyAny>>,
}

/// `obj` (the argument `name`) as a C-contiguous GPU array of floats of `bits` bits and
/// `ndim` dimensions; wrong dtype, layout or dimensions are a ValueError naming it.
pub(crate) fn view<'py>(obj: &Bound<'py, PyAny>, name: &str, bits: u8, ndim: usize) -> PyResult<View<'py>> {
    let want = if bits == 32 { "float32" } else { "float64" };
    let (v, elem) = contiguous(obj, name)?;
    let dtype_bits = elem.filter(|e| e.0 == b'f').map(|e| e.1);
    if dtype_bits != Some(bits) {
        return Err(value_error(format!(
            "{name} must be {want} on the GPU (the call's precision); convert it, or pass precision='{}'",
            match dtype_bits {
                Some(32) => "f32",
                Some(64) => "f64",
                _ => "f32' or 'f64",
            }
        )));
    }
    if v.shape.len() != ndim || (ndim == 2 && v.shape[1] != 3) {
        let expected = if ndim == 2 { "(N, 3)" } else { "(N,)" };
        return Err(value_error(format!("{name} must have shape {expected} (got {:?})", v.shape)));
    }
    Ok(v)
}

/// `obj` as a C-contiguous GPU array (a ValueError naming `name` otherwise), with the
/// width of its floats (`None`: not a float type).
fn contiguous<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<(View<'py>, Option<Elem>)> {
    let (v, dtype_bits, strides) = if obj.hasattr("__dlpack__")? && obj.hasattr("__dlpack_device__")? {
        dlpack(obj, name)?
    } else {
        cuda_array_interface(obj, name)?
    };
    if let Some(strides) = strides {
        // Element strides of C order; a dimension of length one may have any stride.
        let mut expect = 1i64;
        for (k, &len) in v.shape.iter().enumerate().rev() {
            if len > 1 && strides[k] != expect {
                return Err(value_error(format!(
                    "{name} must be C-contiguous on the GPU (strides {strides:?} in elements); make a contiguous copy"
                )));
            }
            expect *= len as i64;
        }
    }
    Ok((v, dtype_bits))
}

/// A GPU array's copy on the host as a numpy array of its own dtype (floats or
/// integers) and shape, after its producer's stream: how state that lives elsewhere (a
/// Simulation's, a leaf call's list) is read from GPU arrays.
pub(crate) fn to_host<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let (v, elem) = contiguous(obj, name)?;
    let Some((kind, bits)) = elem.filter(|e| matches!(e.1, 8 | 16 | 32 | 64)) else {
        return Err(value_error(format!("{name} must be an array of floats or integers on the GPU")));
    };
    let dtype = format!("{}{}", kind as char, bits / 8);
    let host = py.import("numpy")?.call_method1("empty", (PyTuple::new(py, &v.shape)?, dtype))?;
    let (address, _): (usize, bool) = host.getattr("__array_interface__")?.get_item("data")?.extract()?;
    let bytes = v.shape.iter().product::<usize>() * usize::from(bits / 8);
    let ordinal = v.device.or_else(|| nbody_cuda::DeviceMemory::ordinal_of(v.address)).unwrap_or(0);
    if bytes > 0 {
        // SAFETY: numpy's fresh C-contiguous array holds `bytes`, ours alone until
        // returned; the view is a live C-contiguous export of as many on `ordinal`.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut u8, bytes) };
        // SAFETY: as above.
        unsafe { nbody_cuda::DeviceMemory::read(ordinal, v.address, v.stream, out) }.map_err(runtime)?;
    }
    Ok(host)
}

/// Reads a DLPack export: (the view, the float width or None, element strides if given).
fn dlpack<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<(View<'py>, Option<Elem>, Option<Vec<i64>>)> {
    let py = obj.py();
    let (device_type, device_id): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
    if !matches!(device_type, DL_CUDA | DL_CUDA_MANAGED) {
        return Err(value_error(format!("{name} is on DLPack device ({device_type}, {device_id}), not a CUDA GPU")));
    }
    // Stream 1: the producer makes its writes visible to the legacy default stream,
    // which the call then waits for.
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", 1)?;
    let capsule = obj.call_method("__dlpack__", (), Some(&kwargs))?;
    // SAFETY: a capsule named "dltensor" holds a DLManagedTensor (the DLPack protocol);
    // any other object or name gives null (and a Python error, cleared below).
    let managed = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLTENSOR.as_ptr()) } as *const DLManagedTensor;
    if managed.is_null() {
        let _ = PyErr::take(py);
        return Err(value_error(format!("{name}.__dlpack__() did not give a DLPack tensor")));
    }
    // SAFETY: the tensor lives as long as the capsule, which the view keeps.
    let t = unsafe { &(*managed).dl_tensor };
    let ndim = usize::try_from(t.ndim).unwrap_or(0);
    // SAFETY: DLPack's shape holds ndim values, its strides too when not null.
    let shape: Vec<i64> = unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec();
    let strides = (!t.strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec());
    let kind = match t.dtype.code {
        0 => Some(b'i'),
        1 => Some(b'u'),
        DL_FLOAT => Some(b'f'),
        _ => None,
    };
    let bits = kind.filter(|_| t.dtype.lanes == 1).map(|k| (k, t.dtype.bits));
    let view = View {
        address: t.data as u64 + t.byte_offset,
        shape: shape.iter().map(|&s| s as usize).collect(),
        device: u32::try_from(t.device.device_id).ok(),
        stream: Some(1),
        readonly: false,
        _capsule: Some(capsule),
    };
    Ok((view, bits, strides))
}

/// Reads the CUDA array interface (version 2 or 3).
fn cuda_array_interface<'py>(
    obj: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<(View<'py>, Option<Elem>, Option<Vec<i64>>)> {
    let cai = obj.getattr("__cuda_array_interface__")?;
    let cai =
        cai.cast::<PyDict>().map_err(|_| value_error(format!("{name}.__cuda_array_interface__ is not a dict")))?;
    let item = |k: &str| -> PyResult<Option<Bound<'py, PyAny>>> { Ok(cai.get_item(k)?.filter(|v| !v.is_none())) };
    if item("mask")?.is_some() {
        return Err(value_error(format!("{name} is a masked GPU array: masks are not taken")));
    }
    let shape: Vec<usize> = item("shape")?.ok_or_else(|| value_error(format!("{name}: no shape")))?.extract()?;
    let typestr: String = item("typestr")?.ok_or_else(|| value_error(format!("{name}: no typestr")))?.extract()?;
    let (address, readonly): (u64, bool) =
        item("data")?.ok_or_else(|| value_error(format!("{name}: no data")))?.extract()?;
    // [byte order][kind][bytes]: little-endian (or native, or one byte) floats and
    // integers.
    let t = typestr.as_bytes();
    let bits = match (t.first(), t.get(1), typestr.get(2..).and_then(|b| b.parse::<u8>().ok())) {
        (Some(b'<' | b'=' | b'|'), Some(&k @ (b'f' | b'i' | b'u')), Some(bytes)) if bytes <= 8 => Some((k, bytes * 8)),
        _ => None,
    };
    let item_bytes = bits.map_or(1, |b| i64::from(b.1 / 8));
    let strides = item("strides")?
        .map(|s| s.extract::<Vec<i64>>())
        .transpose()?
        .map(|s| s.into_iter().map(|b| b / item_bytes).collect());
    // 0 is ambiguous in the interface and read as the legacy default stream.
    let stream = item("stream")?.map(|s| s.extract::<u64>()).transpose()?.map(|s| if s == 0 { 1 } else { s });
    let device = if address == 0 { None } else { nbody_cuda::DeviceMemory::ordinal_of(address) };
    if address != 0 && device.is_none() {
        return Err(value_error(format!("{name}'s data address is not memory of a CUDA GPU")));
    }
    Ok((View { address, shape, device, stream, readonly, _capsule: None }, bits, strides))
}

/// An array that one call wrote on a GPU: shape (N, 3) or (N,), float32 or float64. Hand
/// it to CuPy, PyTorch, JAX or numba without a copy (`cupy.from_dlpack(a)`,
/// `torch.from_dlpack(a)`, `jax.numpy.from_dlpack(a)`, `numba.cuda.as_cuda_array(a)`);
/// `a.to_numpy()` copies it to the host. The memory is freed when the last holder
/// (this object or an array made from it) goes.
#[pyclass(module = "nbody._nbody", frozen)]
pub(crate) struct GpuArray {
    /// Always held; taken only by `drop`, which keeps it for a later call.
    /// Shared with the DLPack exports alive (a consumer may free one on any thread, even
    /// while the interpreter shuts down, so they hold no Python reference).
    memory: Option<Arc<nbody_cuda::DeviceMemory>>,
    shape: Vec<usize>,
    bits: u8,
}

/// Output memory of GpuArrays that went, kept for later calls' outputs: an allocation
/// and a free cost a good part of a small call's kernel. At most [`SPARE_BLOCKS`]
/// blocks and [`SPARE_BYTES`] bytes; the rest is freed.
static SPARE: std::sync::Mutex<Vec<nbody_cuda::DeviceMemory>> = std::sync::Mutex::new(Vec::new());
const SPARE_BLOCKS: usize = 8;
const SPARE_BYTES: usize = 1 << 30;

impl GpuArray {
    fn new(ordinal: u32, shape: Vec<usize>, bits: u8, zeroed: bool) -> PyResult<Self> {
        let bytes = shape.iter().product::<usize>() * usize::from(bits / 8);
        let spare = SPARE.lock().ok().and_then(|mut s| {
            let k = s.iter().position(|m| m.ordinal() == ordinal && m.len() == bytes)?;
            Some(s.swap_remove(k))
        });
        let memory = match spare {
            // Another library's stream may still read the block its last holder let go.
            Some(m) => m.quiesce().and_then(|_| if zeroed { m.zero() } else { Ok(()) }).map(|_| m),
            None if zeroed => nbody_cuda::DeviceMemory::zeroed(ordinal, bytes),
            None => nbody_cuda::DeviceMemory::uninitialized(ordinal, bytes),
        }
        .map_err(runtime)?;
        Ok(Self { memory: Some(Arc::new(memory)), shape, bits })
    }

    fn memory(&self) -> &nbody_cuda::DeviceMemory {
        self.memory.as_deref().expect("held until drop")
    }

    fn typestr(&self) -> &'static str {
        if self.bits == 32 {
            "<f4"
        } else {
            "<f8"
        }
    }
}

/// The DLManagedTensor a GpuArray exports, with the shape it points to and the memory
/// it keeps alive.
#[repr(C)]
struct Exported {
    managed: DLManagedTensor,
    shape: [i64; 2],
    owner: Arc<nbody_cuda::DeviceMemory>,
}

/// DLPack's deleter: frees the export and its share of the memory; the consumer may call
/// it from any thread, with or without the GIL.
unsafe extern "C" fn release(managed: *mut DLManagedTensor) {
    if !managed.is_null() {
        // SAFETY: `managed` is the first field of an `Exported` made by `Box::into_raw`
        // in `__dlpack__`, released once (by the consumer, or by the unconsumed capsule).
        drop(unsafe { Box::from_raw(managed.cast::<Exported>()) });
    }
}

/// The capsule's destructor: releases the export unless a consumer took it (and renamed
/// the capsule, taking over the deleter).
unsafe extern "C" fn drop_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL held on the capsule being destroyed.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            release(managed);
        }
    }
}

impl Drop for GpuArray {
    fn drop(&mut self) {
        // Kept only when no export holds it any more.
        let Some(Ok(m)) = self.memory.take().map(Arc::try_unwrap) else { return };
        let Ok(mut spare) = SPARE.lock() else { return };
        if m.is_empty() {
            return;
        }
        spare.push(m);
        while spare.len() > SPARE_BLOCKS || spare.iter().map(|m| m.len()).sum::<usize>() > SPARE_BYTES {
            spare.remove(0);
        }
    }
}

#[pymethods]
impl GpuArray {
    /// The array's shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The numpy dtype of its elements.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArrayDescr> {
        if self.bits == 32 {
            numpy::dtype::<f32>(py)
        } else {
            numpy::dtype::<f64>(py)
        }
    }

    /// The ordinal of its GPU.
    #[getter]
    fn device(&self) -> u32 {
        self.memory().ordinal()
    }

    fn __len__(&self) -> usize {
        self.shape[0]
    }

    fn __repr__(&self) -> String {
        format!(
            "GpuArray(shape={:?}, dtype={}, device={})",
            self.shape,
            if self.bits == 32 { "float32" } else { "float64" },
            self.memory().ordinal()
        )
    }

    /// The CUDA array interface (version 3): written when the call returned, so no
    /// stream to wait for.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.typestr())?;
        d.set_item("data", (self.memory().address(), false))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// DLPack's device: (kDLCUDA, ordinal).
    fn __dlpack_device__(&self) -> (i32, u32) {
        (DL_CUDA, self.memory().ordinal())
    }

    /// A DLPack capsule of the array, without a copy. The data is complete, so any
    /// consumer `stream` may read it at once; `max_version`, `dl_device` and `copy` are
    /// accepted as the array API standard passes them (a copy or another device is
    /// refused).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<(i32, u32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version);
        let me = slf.get();
        if let Some(d) = dl_device {
            if d != (DL_CUDA, me.memory().ordinal()) {
                return Err(pyo3::exceptions::PyBufferError::new_err(
                    "a GpuArray exports to its own GPU only: copy it with to_numpy() for the host",
                ));
            }
        }
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err("a GpuArray exports without a copy only"));
        }
        let mut shape = [0i64; 2];
        for (s, &n) in shape.iter_mut().zip(&me.shape) {
            *s = n as i64;
        }
        let owner = Arc::clone(me.memory.as_ref().expect("held until drop"));
        let exported = Box::into_raw(Box::new(Exported {
            managed: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: me.memory().address() as *mut c_void,
                    device: DLDevice { device_type: DL_CUDA, device_id: me.memory().ordinal() as i32 },
                    ndim: me.shape.len() as i32,
                    dtype: DLDataType { code: DL_FLOAT, bits: me.bits, lanes: 1 },
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(release),
            },
            shape,
            owner,
        }));
        // SAFETY: `exported` is live until `release`; the shape points into it.
        unsafe {
            (*exported).managed.dl_tensor.shape = (*exported).shape.as_mut_ptr();
            (*exported).managed.manager_ctx = exported.cast();
        }
        // SAFETY: a new capsule owning the export; on failure the export is released.
        let capsule = unsafe { ffi::PyCapsule_New(exported.cast(), DLTENSOR.as_ptr(), Some(drop_capsule)) };
        if capsule.is_null() {
            // SAFETY: not handed to anyone.
            unsafe { release(exported.cast()) };
            return Err(PyErr::fetch(slf.py()));
        }
        // SAFETY: PyCapsule_New returned a new reference.
        Ok(unsafe { Bound::from_owned_ptr(slf.py(), capsule) })
    }

    /// A copy on the host, as a numpy array.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        fn copy<'py, T: numpy::Element + bytemuck::Pod>(py: Python<'py>, a: &GpuArray) -> PyResult<Bound<'py, PyAny>> {
            let n: usize = a.shape.iter().product();
            let mut host = vec![T::zeroed(); n];
            a.memory().copy_to_host(bytemuck::cast_slice_mut::<T, u8>(&mut host)).map_err(runtime)?;
            Ok(numpy::PyArray1::from_vec(py, host).reshape(a.shape.clone())?.into_any())
        }
        use numpy::PyArrayMethods;
        if self.bits == 32 {
            copy::<f32>(py, self)
        } else {
            copy::<f64>(py, self)
        }
    }
}

/// `nbody.accelerations` on GPU arrays: positions (N, 3), masses (N,) and optional
/// targets (K, 3), all on the CUDA executor's GPU in the call's precision; returns the
/// accelerations (K, 3) and potentials (K,) (zeros when `potential` is off) as GpuArrays,
/// or written into `out`, the caller's (acceleration, potential) arrays.
#[pyfunction]
#[pyo3(signature = (positions, masses, eps, G, targets, potential, executor, precision, softening, out=None))]
#[allow(non_snake_case, clippy::too_many_arguments)]
pub(crate) fn _accelerations_device<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    eps: f64,
    G: f64,
    targets: Option<&Bound<'py, PyAny>>,
    potential: bool,
    executor: &str,
    precision: &str,
    softening: &str,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let call = DeviceCall { positions, masses, targets, velocities: None, out, eps, g: G, potential, softening };
    call.dispatch(py, executor, precision, None)
}

/// `nbody.jerk` on GPU arrays: positions (N, 3), velocities (N, 3) and masses (N,) on the
/// CUDA executor's GPU in the call's precision; returns the accelerations (N, 3), jerks
/// (N, 3) and potentials (N,) of the particles on themselves as GpuArrays, or written
/// into `out`, the caller's arrays in that order.
#[pyfunction]
#[pyo3(signature = (positions, velocities, masses, eps, G, executor, precision, out=None))]
#[allow(non_snake_case, clippy::too_many_arguments)]
pub(crate) fn _jerk_device<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    velocities: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    eps: f64,
    G: f64,
    executor: &str,
    precision: &str,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let call = DeviceCall {
        positions,
        masses,
        targets: None,
        velocities: Some(velocities),
        out,
        eps,
        g: G,
        potential: true,
        softening: "plummer",
    };
    call.dispatch(py, executor, precision, None)
}

/// A refusal named by the caller's arguments, as the host path names them.
fn named(e: nbody_core::Error) -> PyErr {
    use nbody_core::{Array, Error};
    let arg = |a: Array| if a == Array::Targets { "targets" } else { "positions" };
    match e {
        Error::NonFinite { array: Array::Velocities, index } => {
            value_error(format!("velocities[{index}] has a NaN or infinite component"))
        }
        Error::OutOfRange { array: Array::Velocities, index } => {
            value_error(format!("velocities[{index}] has a component of magnitude 2^61 (f32) or 2^509 (f64) or more"))
        }
        Error::NonFinite { array: Array::Cotangents, index } => {
            value_error(format!("cot_acc[{index}] or cot_phi[{index}] has a NaN or infinite value"))
        }
        Error::OutOfRange { array: Array::Cotangents, index } => value_error(format!(
            "cot_acc[{index}] or cot_phi[{index}] has a value of magnitude 2^61 (f32) or 2^509 (f64) or more"
        )),
        Error::NonFinite { array: Array::Particles, index } => {
            value_error(format!("positions[{index}] or masses[{index}] has a NaN or infinite value"))
        }
        Error::NonFinite { array, index } => {
            value_error(format!("{}[{index}] has a NaN or infinite coordinate", arg(array)))
        }
        Error::OutOfRange { array, index } => value_error(format!(
            "{}[{index}] has a coordinate of magnitude 2^61 (f32) or 2^509 (f64) or more, whose square could overflow",
            arg(array)
        )),
        Error::NegativeMass { index, .. } => value_error(format!("masses[{index}] is negative")),
        other => runtime(other),
    }
}

struct DeviceCall<'a, 'py> {
    positions: &'a Bound<'py, PyAny>,
    masses: &'a Bound<'py, PyAny>,
    targets: Option<&'a Bound<'py, PyAny>>,
    /// With velocities, the jerk too (the particles on themselves).
    velocities: Option<&'a Bound<'py, PyAny>>,
    /// The caller's output arrays (acceleration, potential[, jerk]), or new ones.
    out: Option<&'a Bound<'py, PyAny>>,
    eps: f64,
    g: f64,
    potential: bool,
    softening: &'a str,
}

impl DeviceCall<'_, '_> {
    /// Runs the call in `precision` and returns its results as a tuple in the order the
    /// Python function returns them.
    fn dispatch<'py>(
        &self,
        py: Python<'py>,
        executor: &str,
        precision: &str,
        leaves: Option<&LeafRows>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let results = match precision {
            "f32" => self.run::<f32>(py, executor, 32, leaves)?,
            "f64" => self.run::<f64>(py, executor, 64, leaves)?,
            other => return Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
        };
        PyTuple::new(py, results)
    }

    /// The results in the order the call returns them: (accelerations, potentials), or
    /// with velocities (accelerations, jerks, potentials); of the particles on
    /// themselves or the targets, or of a leaf call with `leaves` (cell rows, list).
    #[allow(clippy::type_complexity)]
    fn run<T: PyReal>(
        &self,
        py: Python<'_>,
        executor: &str,
        bits: u8,
        leaves: Option<&LeafRows>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let mut params = gradient_params::<T>(self.eps, self.g, self.softening)?;
        params.potential = self.potential;
        let (b, ordinal) = cuda_backend::<T>(executor)?;
        let pos = view(self.positions, "positions", bits, 2)?;
        let m = view(self.masses, "masses", bits, 1)?;
        let t = self.targets.map(|t| view(t, "targets", bits, 2)).transpose()?;
        let v = self.velocities.map(|v| view(v, "velocities", bits, 2)).transpose()?;
        let n = pos.shape[0];
        if m.shape[0] != n {
            return Err(value_error(format!(
                "masses must hold one value a row of positions ({n}, got {})",
                m.shape[0]
            )));
        }
        if let Some(v) = &v {
            if v.shape[0] != n {
                return Err(value_error(format!(
                    "velocities must hold one row a row of positions ({n}, got {})",
                    v.shape[0]
                )));
            }
        }
        on_one_gpu(
            [("positions", Some(&pos)), ("masses", Some(&m)), ("targets", t.as_ref()), ("velocities", v.as_ref())],
            ordinal,
            executor,
        )?;
        let n_t = t.as_ref().map_or(n, |t| t.shape[0]);
        // The outputs in the order returned: (acceleration, potential), or for the jerk
        // (acceleration, jerk, potential).
        let slots: &[(&str, Slot)] = if v.is_some() {
            &[("out[0] (acceleration)", Slot::Acc), ("out[1] (jerk)", Slot::Jerk), ("out[2] (potential)", Slot::Phi)]
        } else {
            &[("out[0] (acceleration)", Slot::Acc), ("out[1] (potential)", Slot::Phi)]
        };
        let shape = |slot: Slot| if slot == Slot::Phi { vec![n_t] } else { vec![n_t, 3] };
        let item = usize::from(bits / 8);
        let mut outputs: Vec<Output<'_>> = Vec::with_capacity(slots.len());
        match self.out {
            Some(given) => {
                let given: Vec<Bound<'_, PyAny>> = given.extract().map_err(|_| {
                    value_error("out must be a tuple of GPU arrays, in the order the call returns its results")
                })?;
                if given.len() != slots.len() {
                    return Err(value_error(format!("out must hold {} arrays (got {})", slots.len(), given.len())));
                }
                let inputs: Vec<(u64, usize)> = [Some(&pos), Some(&m), t.as_ref(), v.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(|v| (v.address, v.shape.iter().product::<usize>() * item))
                    .collect();
                for (&(name, slot), obj) in slots.iter().zip(given) {
                    if obj.get_type().module()?.to_string().starts_with("jax") {
                        return Err(value_error(format!("{name} is a JAX array, which cannot be written: omit out")));
                    }
                    let want = shape(slot);
                    let o = view(&obj, name, bits, want.len())?;
                    if o.shape != want {
                        return Err(value_error(format!("{name} must have shape {want:?} (got {:?})", o.shape)));
                    }
                    if o.readonly {
                        return Err(value_error(format!("{name} is read-only")));
                    }
                    if o.device.is_some_and(|d| d != ordinal) {
                        return Err(value_error(format!("{name} is on another GPU than the executor's ({ordinal})")));
                    }
                    let bytes = want.iter().product::<usize>() * item;
                    let overlaps = |(a, len): (u64, usize)| {
                        bytes > 0 && len > 0 && o.address < a + len as u64 && a < o.address + bytes as u64
                    };
                    if inputs.iter().copied().any(overlaps)
                        || outputs.iter().any(|p| overlaps((p.address(), p.bytes())))
                    {
                        return Err(value_error(format!("{name} overlaps an input or another output")));
                    }
                    outputs.push(Output::Given { view: o, object: obj, bytes, slot });
                }
            }
            None => {
                for &(_, slot) in slots {
                    let zeroed = slot == Slot::Phi && !self.potential;
                    outputs.push(Output::Fresh(GpuArray::new(ordinal, shape(slot), bits, zeroed)?, slot));
                }
            }
        }
        let address_of = |slot: Slot| outputs.iter().find(|o| o.slot() == slot).map(Output::address);
        let nonempty = |a: u64, len: usize| if len == 0 { 0 } else { a };
        let call = DeviceColumns {
            device: ordinal,
            positions: nonempty(pos.address, n),
            masses: nonempty(m.address, n),
            n,
            targets: t.as_ref().map(|t| (nonempty(t.address, n_t), n_t)),
            acc: address_of(Slot::Acc).unwrap_or(0),
            phi: address_of(Slot::Phi).filter(|_| self.potential),
            velocities: v.as_ref().map(|v| nonempty(v.address, n)),
            jerk: address_of(Slot::Jerk),
            streams: [pos.stream, m.stream, t.as_ref().and_then(|t| t.stream), v.as_ref().and_then(|v| v.stream)],
        };
        let leaves = leaves.map(|rows| (cells_of::<T>(&rows.cells), rows.list()));
        // SAFETY: every address was read from its producer's export (a C-contiguous
        // array of `T` of the shape checked above, kept alive by the views until the call
        // returns) or allocated above; the outputs are fresh or checked above to overlap
        // no input and no other output.
        with_executor::<T, _>(py, &b, move |e| unsafe {
            match &leaves {
                Some((cells, list)) => e.accelerations_batch_cells_device(call, cells, list, &params),
                None => e.field_columns_device(call, &params),
            }
        })?
        .map_err(named)?;
        drop((pos, m, t, v));
        if !self.potential {
            // A potential not computed is zero, as in the arrays returned.
            for o in &outputs {
                if let Output::Given { view, bytes, slot: Slot::Phi, .. } = o {
                    zero_given(view, *bytes)?;
                }
            }
        }
        outputs.into_iter().map(|o| o.into_object(py)).collect()
    }
}

/// The single-GPU CUDA backend `executor` names for precision `T`, with its GPU's
/// ordinal; other executors are a ValueError (GPU arrays are read by that one only).
fn cuda_backend<T: PyReal>(executor: &str) -> PyResult<(nbody_backends::Backend, u32)> {
    let b = backend::<T>(executor, None)?;
    let ordinal = cuda_ordinal(&b).ok_or_else(|| {
        value_error(format!(
            "GPU arrays are read in place by executor 'cuda' (or 'cuda:N' for GPU N) only, not {executor:?}"
        ))
    })?;
    Ok((b, ordinal))
}

/// The GPU of a single-GPU CUDA backend with native arithmetic; `None` for any other.
fn cuda_ordinal(b: &nbody_backends::Backend) -> Option<u32> {
    match b {
        nbody_backends::Backend::Cuda {
            devices: nbody_backends::Devices::One(d),
            arithmetic: nbody_backends::Arithmetic::Native,
        } => Some(*d),
        _ => None,
    }
}

/// Refuses a view (named) on another GPU than `ordinal`, the executor's.
fn on_one_gpu<const K: usize>(views: [(&str, Option<&View<'_>>); K], ordinal: u32, executor: &str) -> PyResult<()> {
    for (name, v) in views {
        if let Some(device) = v.and_then(|v| v.device).filter(|&d| d != ordinal) {
            return Err(value_error(format!(
                "{name} is on GPU {device} but executor {executor:?} runs on GPU {ordinal}: pass executor='cuda:{device}'"
            )));
        }
    }
    Ok(())
}

/// `nbody.vjp` on GPU arrays (the particles on themselves): positions (N, 3), masses
/// (N,), cotangents on the accelerations (N, 3) and optionally on the potentials (N,),
/// all on the CUDA executor's GPU in the call's precision; returns the gradients with
/// respect to the positions (N, 3) and masses (N,) as GpuArrays.
#[pyfunction]
#[pyo3(signature = (positions, masses, cot_acc, cot_phi, eps, G, executor, precision, softening))]
#[allow(non_snake_case, clippy::too_many_arguments)]
pub(crate) fn _vjp_device<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    cot_acc: &Bound<'py, PyAny>,
    cot_phi: Option<&Bound<'py, PyAny>>,
    eps: f64,
    G: f64,
    executor: &str,
    precision: &str,
    softening: &str,
) -> PyResult<(Py<GpuArray>, Py<GpuArray>)> {
    fn run<T: PyReal>(
        py: Python<'_>,
        arrays: [Option<&Bound<'_, PyAny>>; 4],
        (eps, g, softening): (f64, f64, &str),
        executor: &str,
        bits: u8,
    ) -> PyResult<(Py<GpuArray>, Py<GpuArray>)> {
        let params = gradient_params::<T>(eps, g, softening)?;
        let (b, ordinal) = cuda_backend::<T>(executor)?;
        let [positions, masses, cot_acc, cot_phi] = arrays;
        let pos = view(positions.expect("given"), "positions", bits, 2)?;
        let m = view(masses.expect("given"), "masses", bits, 1)?;
        let ca = view(cot_acc.expect("given"), "cot_acc", bits, 2)?;
        let cp = cot_phi.map(|c| view(c, "cot_phi", bits, 1)).transpose()?;
        let n = pos.shape[0];
        for (name, len) in
            [("masses", m.shape[0]), ("cot_acc", ca.shape[0]), ("cot_phi", cp.as_ref().map_or(n, |c| c.shape[0]))]
        {
            if len != n {
                return Err(value_error(format!("{name} must hold one entry a row of positions ({n}, got {len})")));
            }
        }
        on_one_gpu(
            [("positions", Some(&pos)), ("masses", Some(&m)), ("cot_acc", Some(&ca)), ("cot_phi", cp.as_ref())],
            ordinal,
            executor,
        )?;
        let d_pos = GpuArray::new(ordinal, vec![n, 3], bits, false)?;
        let d_m = GpuArray::new(ordinal, vec![n], bits, false)?;
        let nonempty = |a: u64| if n == 0 { 0 } else { a };
        let call = nbody_core::columns::DeviceVjp {
            device: ordinal,
            positions: nonempty(pos.address),
            masses: nonempty(m.address),
            n,
            cot_acc: nonempty(ca.address),
            cot_phi: cp.as_ref().map(|c| nonempty(c.address)),
            grad_positions: d_pos.memory().address(),
            grad_masses: d_m.memory().address(),
            streams: [pos.stream, m.stream, ca.stream, cp.as_ref().and_then(|c| c.stream)],
        };
        // SAFETY: every address was read from its producer's export (C-contiguous, of `T`,
        // of the shapes checked above, kept alive by the views) or allocated above.
        with_executor::<T, _>(py, &b, move |e| unsafe { e.vjp_device(call, &params) })?.map_err(named)?;
        drop((pos, m, ca, cp));
        Ok((Py::new(py, d_pos)?, Py::new(py, d_m)?))
    }
    let arrays = [Some(positions), Some(masses), Some(cot_acc), cot_phi];
    match precision {
        "f32" => run::<f32>(py, arrays, (eps, G, softening), executor, 32),
        "f64" => run::<f64>(py, arrays, (eps, G, softening), executor, 64),
        other => Err(value_error(format!("precision must be 'f32' or 'f64' (got {other:?})"))),
    }
}

/// Which output of a call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Acc,
    Phi,
    Jerk,
}

/// One output of a GPU-array call: a fresh GpuArray, or the caller's array.
enum Output<'py> {
    Fresh(GpuArray, Slot),
    Given { view: View<'py>, object: Bound<'py, PyAny>, bytes: usize, slot: Slot },
}

impl Output<'_> {
    fn address(&self) -> u64 {
        match self {
            Output::Fresh(a, _) => a.memory().address(),
            Output::Given { view, .. } => view.address,
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Output::Fresh(a, _) => a.memory().len(),
            Output::Given { bytes, .. } => *bytes,
        }
    }

    fn slot(&self) -> Slot {
        match self {
            Output::Fresh(_, slot) | Output::Given { slot, .. } => *slot,
        }
    }

    fn into_object(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Output::Fresh(a, _) => Ok(Py::new(py, a)?.into_any()),
            Output::Given { object, .. } => Ok(object.unbind()),
        }
    }
}

/// Sets `bytes` of the caller's output array `o` to zero.
fn zero_given(o: &View<'_>, bytes: usize) -> PyResult<()> {
    let ordinal = o.device.or_else(|| nbody_cuda::DeviceMemory::ordinal_of(o.address)).unwrap_or(0);
    // SAFETY: a live C-contiguous export of `bytes` on `ordinal`, not read-only (checked).
    unsafe { nbody_cuda::DeviceMemory::zero_at(ordinal, o.address, bytes) }.map_err(runtime)
}

/// `_rust_seconds(entry="device")`: the median wall-clock seconds of `reps` calls of
/// `field_columns_device` on a Plummer sphere of `n` already on the GPU (outputs
/// allocated once), from Rust: what a GPU-array call from Python costs without Python.
pub(crate) fn rust_seconds<T: PyReal>(
    py: Python<'_>,
    n: usize,
    reps: usize,
    b: &nbody_backends::Backend,
    potential: bool,
) -> PyResult<f64> {
    let ordinal = cuda_ordinal(b).ok_or_else(|| value_error("entry 'device' needs executor 'cuda' or 'cuda:N'"))?;
    let (ps, _) = nbody_integrators::ics::plummer::<T>(n, 1);
    let rows: Vec<T> = ps.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    let masses: Vec<T> = ps.iter().map(|p| p.m).collect();
    let sz = size_of::<T>();
    let upload = |v: &[T]| -> PyResult<nbody_cuda::DeviceMemory> {
        let mut m = nbody_cuda::DeviceMemory::uninitialized(ordinal, size_of_val(v)).map_err(runtime)?;
        m.copy_from_host(bytemuck::cast_slice::<T, u8>(v)).map_err(runtime)?;
        Ok(m)
    };
    let (d_rows, d_m) = (upload(&rows)?, upload(&masses)?);
    let acc = nbody_cuda::DeviceMemory::uninitialized(ordinal, 3 * n * sz).map_err(runtime)?;
    let phi = nbody_cuda::DeviceMemory::uninitialized(ordinal, n * sz).map_err(runtime)?;
    let call = DeviceColumns {
        phi: potential.then(|| phi.address()),
        ..DeviceColumns::on_itself(ordinal, d_rows.address(), d_m.address(), n, acc.address())
    };
    let mut params = Params::softened(T::from_f64(0.01));
    params.potential = potential;
    with_executor::<T, _>(py, b, move |e| {
        let mut times = Vec::with_capacity(reps);
        for k in 0..=reps {
            let t = std::time::Instant::now();
            // SAFETY: every address is a live allocation of this GPU of the sizes named.
            unsafe { e.field_columns_device(call, &params) }?;
            if k > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    })?
    .map_err(runtime)
}

/// An index or cell array of a leaf call on the host: GPU arrays copied (they are small
/// beside the particles, and the list is expanded on the host), others as `on_host`.
fn list_array<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    if obj.py().import("nbody")?.getattr("_on_gpu")?.call1((obj,))?.is_truthy()? {
        return to_host(obj, name);
    }
    Ok(on_host(Some(obj), name)?.expect("given"))
}

/// `nbody.leaves` on GPU arrays: positions (N, 3) and masses (N,) on the CUDA executor's
/// GPU in the call's precision, the list (and cells) on the host or the GPU; returns the
/// accelerations (N, 3) and potentials (N,) as GpuArrays.
#[pyfunction]
#[pyo3(signature = (positions, masses, pairs, spans, cells, cell_ranges, cell_spans, eps, G, potential, executor, precision, softening, out=None))]
#[allow(non_snake_case, clippy::too_many_arguments)]
pub(crate) fn _leaves_device<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    masses: &Bound<'py, PyAny>,
    pairs: &Bound<'py, PyAny>,
    spans: &Bound<'py, PyAny>,
    cells: Option<&Bound<'py, PyAny>>,
    cell_ranges: Option<&Bound<'py, PyAny>>,
    cell_spans: Option<&Bound<'py, PyAny>>,
    eps: f64,
    G: f64,
    potential: bool,
    executor: &str,
    precision: &str,
    softening: &str,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let host = |a: Option<&Bound<'py, PyAny>>, name: &str| a.map(|a| list_array(a, name)).transpose();
    let (cells, ranges, spans_c) =
        (host(cells, "cells")?, host(cell_ranges, "cell_ranges")?, host(cell_spans, "cell_spans")?);
    let rows = LeafRows::read(
        &list_array(pairs, "pairs")?,
        &list_array(spans, "spans")?,
        cells.as_ref(),
        ranges.as_ref(),
        spans_c.as_ref(),
    )?;
    let call = DeviceCall { positions, masses, targets: None, velocities: None, out, eps, g: G, potential, softening };
    call.dispatch(py, executor, precision, Some(&rows))
}
