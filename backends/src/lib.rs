//! # nbody-backends
//!
//! The one place a front end (the `nbody` command, the C ABI, the GRAPE layer, Python)
//! chooses an executor. A [`Backend`] is a value with one string grammar:
//!
//! | string | executor |
//! |---|---|
//! | `reference` | the scalar reference loops ([`nbody_core::Reference`]) |
//! | `cpu`, `cpu:8` | SIMD kernels on every core, or on 8 threads ([`nbody_cpu::CpuExecutor`]) |
//! | `mixed`, `mixed:8` | f32 interactions on block offsets, f64 results ([`nbody_cpu::MixedExecutor`]) |
//! | `cuda`, `cuda:1` | the GPU 0, or GPU 1, in the caller's precision |
//! | `cuda-mixed`, `cuda-mixed:1` | the GPU's mixed-precision kernels (f64 results) |
//! | `cuda:0,1`, `cuda:all` | several GPUs as one executor (`nbody_cuda::MultiDevice`) |
//!
//! [`Backend::open`] opens it once (refusing more threads than the machine runs at
//! once, a backend this build lacks, a device that is not there) and gives an
//! [`Opened`] executor that serves both precisions; [`Opened::get`] checks the one
//! precision rule (the mixed families compute f64 results) and [`Backend::open_for`]
//! boxes the executor for one precision. [`offered`] lists what this build and
//! machine offer.
//!
//! ```
//! use nbody_backends::Backend;
//! use nbody_core::{Executor, Field, Params};
//!
//! let backend: Backend = "cpu:1".parse()?;
//! assert_eq!(backend.to_string(), "cpu:1");
//! let mut exec = backend.open_for::<f64>()?;
//! let (bodies, _) = (vec![nbody_core::Particle::new(0.0, 0.0, 0.0, 1.0), nbody_core::Particle::new(1.0, 0.0, 0.0, 1.0)], ());
//! let mut field = vec![Field::zero(); 2];
//! exec.accelerations(&bodies, &bodies, &Params::softened(0.0).with_overlap_identical(), &mut field)?;
//! assert_eq!(field[0].ax, 1.0);
//! // The mixed executor computes f64 results: asking it for f32 is an error, not a surprise.
//! assert!("mixed".parse::<Backend>()?.open_for::<f32>().is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

use nbody_core::Reference;
use nbody_core::projection::Projecting;
use nbody_cpu::{CpuExecutor, CpuReal, MixedExecutor, Parallelism};
use std::fmt;
use std::str::FromStr;

/// Which GPUs a CUDA backend runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// One device, by ordinal (`cuda` is `cuda:0`).
    One(u32),
    /// Several devices as one executor, in this order (repeats run several executors on
    /// one GPU).
    List(Vec<u32>),
    /// Every visible device as one executor.
    All,
}

/// The arithmetic of a CUDA backend's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    /// The caller's precision throughout (f32 or f64 kernels).
    Native,
    /// f32 interactions on exact separations, f64 sums and results (f64 only).
    Mixed,
}

/// An executor a front end can open, as a value (see the crate docs for the grammar).
///
/// ```
/// use nbody_backends::{Arithmetic, Backend, Devices};
/// let b: Backend = "cuda-mixed:1".parse().unwrap();
/// assert_eq!(b, Backend::Cuda { devices: Devices::One(1), arithmetic: Arithmetic::Mixed });
/// assert_eq!("cuda:0,1".parse::<Backend>().unwrap().to_string(), "cuda:0,1");
/// assert!("gpu".parse::<Backend>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The scalar reference loops in the caller's precision.
    Reference,
    /// The CPU SIMD kernels; `None`: one thread per core the machine runs at once.
    Cpu {
        /// Threads (at least 1, at most the machine's available parallelism).
        threads: Option<usize>,
    },
    /// The CPU mixed-precision executor (f64 only); threads as for `Cpu`.
    Mixed {
        /// Threads (at least 1, at most the machine's available parallelism).
        threads: Option<usize>,
    },
    /// The CUDA kernels.
    Cuda {
        /// Which GPUs.
        devices: Devices,
        /// Which kernel family.
        arithmetic: Arithmetic,
    },
}

/// Why a backend string could not be read or opened. Every message is one line that
/// names the backend.
#[derive(Debug)]
pub enum BackendError {
    /// The string is not in the grammar.
    Parse {
        /// What was given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// The backend does not compute in the precision asked for.
    Precision {
        /// The backend.
        backend: Backend,
        /// The precision asked for (`"f32"` or `"f64"`).
        asked: &'static str,
    },
    /// More threads than the machine runs at once.
    Threads {
        /// The backend.
        backend: Backend,
        /// Threads asked for.
        asked: usize,
        /// The machine's available parallelism.
        available: usize,
    },
    /// This build has no such backend (CUDA not compiled in).
    NotCompiled {
        /// The backend.
        backend: Backend,
    },
    /// Opening failed (no device, no such ordinal, out of memory).
    Open {
        /// The backend.
        backend: Backend,
        /// The executor's error.
        source: nbody_core::Error,
    },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Parse { given, why } => write!(f, "backend {given:?}: {why} ({})", grammar()),
            BackendError::Precision { backend, asked } => write!(
                f,
                "backend {backend} computes f64 results (f32 interactions, f64 sums): it has no {asked} calls; use f64"
            ),
            BackendError::Threads { backend, asked, available } => write!(
                f,
                "backend {backend}: {asked} threads asked for, this machine runs {available} at once (use at most {available})"
            ),
            BackendError::NotCompiled { backend } => {
                write!(f, "backend {backend}: this build has no CUDA (build with the `cuda` feature)")
            }
            BackendError::Open { backend, source } => write!(f, "backend {backend}: {source}"),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BackendError::Open { source, .. } => Some(source),
            _ => None,
        }
    }
}

nbody_core::registry! {
    /// The backend families: a backend string is a family's name, then its argument
    /// after a colon where the family takes one. Parsing, the grammar every parse error
    /// states, help texts and `nbody info` read this one list.
    ///
    /// ```
    /// use nbody_backends::Family;
    /// assert_eq!(nbody_core::registry::names::<Family>(), "reference, cpu, mixed, cuda, cuda-mixed");
    /// assert_eq!(Family::Cpu.argument(), "[:THREADS]");
    /// ```
    pub enum Family as "backend" {
        /// [`Backend::Reference`].
        Reference => "reference", "the scalar reference loops in the caller's precision";
        /// [`Backend::Cpu`].
        Cpu => "cpu", "the CPU's SIMD kernels, on THREADS threads (every core by default)";
        /// [`Backend::Mixed`].
        Mixed => "mixed", "the CPU's mixed precision: f32 interactions, f64 sums (f64 only)";
        /// [`Backend::Cuda`] with [`Arithmetic::Native`].
        Cuda => "cuda", "the CUDA kernels on GPU DEVICE (0 by default), a list of GPUs, or all of them";
        /// [`Backend::Cuda`] with [`Arithmetic::Mixed`].
        CudaMixed => "cuda-mixed", "the CUDA mixed-precision kernels (f32 interactions, f64 sums) on GPU DEVICE";
    }
}

impl Family {
    /// What may follow the family's name.
    pub const fn argument(self) -> &'static str {
        match self {
            Family::Reference => "",
            Family::Cpu | Family::Mixed => "[:THREADS]",
            Family::Cuda => "[:DEVICE | :DEVICE,DEVICE,... | :all]",
            Family::CudaMixed => "[:DEVICE]",
        }
    }
}

/// The grammar, as every parse error states it: each family with its argument.
///
/// ```
/// assert!(nbody_backends::grammar().starts_with("use reference, cpu[:THREADS], mixed[:THREADS], cuda["));
/// ```
pub fn grammar() -> String {
    let forms: Vec<String> = Family::ALL.iter().map(|f| format!("{}{}", f.name(), f.argument())).collect();
    format!("use {}", forms.join(", "))
}

fn parse_error(given: &str, why: impl Into<String>) -> BackendError {
    BackendError::Parse { given: given.to_owned(), why: why.into() }
}

fn threads(given: &str, arg: Option<&str>) -> Result<Option<usize>, BackendError> {
    match arg {
        None => Ok(None),
        Some(t) => match t.trim().parse::<usize>() {
            Ok(0) => Err(parse_error(given, "threads must be at least 1")),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(parse_error(given, format!("{t:?} is not a thread count"))),
        },
    }
}

fn devices(given: &str, arg: Option<&str>) -> Result<Devices, BackendError> {
    let Some(list) = arg else { return Ok(Devices::One(0)) };
    if list.trim() == "all" {
        return Ok(Devices::All);
    }
    let ordinals = list
        .split(',')
        .map(|d| {
            d.trim().parse::<u32>().map_err(|_| parse_error(given, format!("{:?} is not a device ordinal", d.trim())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match ordinals.as_slice() {
        [one] => Devices::One(*one),
        _ => Devices::List(ordinals),
    })
}

impl FromStr for Backend {
    type Err = BackendError;

    fn from_str(given: &str) -> Result<Self, BackendError> {
        let s = given.trim();
        let (family, arg) = match s.split_once(':') {
            Some((f, a)) => (f, Some(a)),
            None => (s, None),
        };
        if family.is_empty() {
            return Err(parse_error(given, "no backend named"));
        }
        let named = nbody_core::registry::lookup::<Family>(family)
            .ok_or_else(|| parse_error(given, format!("unknown family {family:?}")))?;
        Ok(match named {
            Family::Reference if arg.is_none() => Backend::Reference,
            Family::Reference => return Err(parse_error(given, "the reference takes no argument")),
            Family::Cpu => Backend::Cpu { threads: threads(given, arg)? },
            Family::Mixed => Backend::Mixed { threads: threads(given, arg)? },
            Family::Cuda => Backend::Cuda { devices: devices(given, arg)?, arithmetic: Arithmetic::Native },
            Family::CudaMixed => Backend::Cuda { devices: devices(given, arg)?, arithmetic: Arithmetic::Mixed },
        })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.family().name())?;
        match self {
            Backend::Reference => Ok(()),
            Backend::Cpu { threads } | Backend::Mixed { threads } => match threads {
                Some(t) => write!(f, ":{t}"),
                None => Ok(()),
            },
            Backend::Cuda { devices, .. } => match devices {
                Devices::One(d) => write!(f, ":{d}"),
                Devices::All => f.write_str(":all"),
                Devices::List(list) => {
                    let list: Vec<String> = list.iter().map(u32::to_string).collect();
                    write!(f, ":{}", list.join(","))
                }
            },
        }
    }
}

/// Threads the machine runs at once (what a backend may ask for at most), asked once per
/// process: the standard library reads the cgroup's quota files to answer, some tens of
/// microseconds that every front-end call checking its backend would pay again.
///
/// ```
/// assert!(nbody_backends::available_threads() >= 1);
/// ```
pub fn available_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
}

impl Backend {
    /// The family's name: `reference`, `cpu`, `mixed`, `cuda` or `cuda-mixed`.
    ///
    /// ```
    /// assert_eq!("cuda-mixed:2".parse::<nbody_backends::Backend>().unwrap().family().name(), "cuda-mixed");
    /// ```
    pub fn family(&self) -> Family {
        match self {
            Backend::Reference => Family::Reference,
            Backend::Cpu { .. } => Family::Cpu,
            Backend::Mixed { .. } => Family::Mixed,
            Backend::Cuda { arithmetic: Arithmetic::Native, .. } => Family::Cuda,
            Backend::Cuda { arithmetic: Arithmetic::Mixed, .. } => Family::CudaMixed,
        }
    }

    /// Whether it runs on GPUs.
    ///
    /// ```
    /// assert!("cuda:0,1".parse::<nbody_backends::Backend>().unwrap().is_cuda());
    /// ```
    pub fn is_cuda(&self) -> bool {
        matches!(self, Backend::Cuda { .. })
    }

    /// Whether it computes f64 results from f32 interactions (and so has no f32 calls).
    ///
    /// ```
    /// assert!("mixed".parse::<nbody_backends::Backend>().unwrap().is_mixed());
    /// ```
    pub fn is_mixed(&self) -> bool {
        matches!(self, Backend::Mixed { .. } | Backend::Cuda { arithmetic: Arithmetic::Mixed, .. })
    }

    /// The precisions it computes in: `["f64"]` for the mixed families, both otherwise.
    ///
    /// ```
    /// assert_eq!("cpu".parse::<nbody_backends::Backend>().unwrap().precisions(), ["f32", "f64"]);
    /// ```
    pub fn precisions(&self) -> &'static [&'static str] {
        if self.is_mixed() { &["f64"] } else { &["f32", "f64"] }
    }

    /// Refuses a precision the backend does not compute in: the rule written once.
    ///
    /// ```
    /// let mixed: nbody_backends::Backend = "cuda-mixed".parse().unwrap();
    /// assert!(mixed.check_precision("f32").is_err() && mixed.check_precision("f64").is_ok());
    /// ```
    pub fn check_precision(&self, precision: &'static str) -> Result<(), BackendError> {
        if self.precisions().contains(&precision) {
            Ok(())
        } else {
            Err(BackendError::Precision { backend: self.clone(), asked: precision })
        }
    }

    /// The CPU threads it asks for (`None` for the GPU and the reference).
    pub fn threads(&self) -> Option<usize> {
        match self {
            Backend::Cpu { threads } | Backend::Mixed { threads } => Some(threads.unwrap_or_else(available_threads)),
            _ => None,
        }
    }

    /// The same backend with `threads` CPU threads (a no-op for the GPU and reference).
    ///
    /// ```
    /// let b: nbody_backends::Backend = "cpu".parse().unwrap();
    /// assert_eq!(b.with_threads(2).to_string(), "cpu:2");
    /// ```
    pub fn with_threads(self, threads: usize) -> Backend {
        match self {
            Backend::Cpu { .. } => Backend::Cpu { threads: Some(threads) },
            Backend::Mixed { .. } => Backend::Mixed { threads: Some(threads) },
            other => other,
        }
    }

    /// The same backend with a thread count given apart from the string (the command's
    /// `--threads`, Python's `threads=`, `NBODY_GRAPE_THREADS`): taken where the string
    /// names none, an error where it names another; ignored by the GPU and reference.
    ///
    /// ```
    /// use nbody_backends::Backend;
    /// let cpu: Backend = "cpu".parse().unwrap();
    /// assert_eq!(cpu.clone().and_threads(Some(2)).unwrap().to_string(), "cpu:2");
    /// assert!("cpu:1".parse::<Backend>().unwrap().and_threads(Some(2)).is_err());
    /// assert!(cpu.and_threads(Some(0)).is_err());
    /// ```
    pub fn and_threads(self, threads: Option<usize>) -> Result<Backend, BackendError> {
        let Some(t) = threads else { return Ok(self) };
        if t == 0 {
            return Err(parse_error(&self.to_string(), "threads must be at least 1"));
        }
        match &self {
            Backend::Cpu { threads: Some(x) } | Backend::Mixed { threads: Some(x) } if *x != t => {
                Err(parse_error(&self.to_string(), format!("{t} threads given apart from it: give the threads once")))
            }
            _ => Ok(self.with_threads(t)),
        }
    }

    /// Checks what can be checked without opening: the thread count against the
    /// machine, and whether this build has the family.
    pub fn check(&self) -> Result<(), BackendError> {
        if let Backend::Cpu { threads: Some(t) } | Backend::Mixed { threads: Some(t) } = self {
            let available = available_threads();
            if *t > available {
                return Err(BackendError::Threads { backend: self.clone(), asked: *t, available });
            }
            if *t == 0 {
                return Err(parse_error(&self.to_string(), "threads must be at least 1"));
            }
        }
        if self.is_cuda() && !cfg!(feature = "cuda") {
            return Err(BackendError::NotCompiled { backend: self.clone() });
        }
        Ok(())
    }

    /// What a front end checks before any work, for calls in `precision` (`"f32"` or
    /// `"f64"`): [`Backend::check_precision`], then [`Backend::check`].
    ///
    /// ```
    /// let b: nbody_backends::Backend = "mixed:1".parse().unwrap();
    /// assert!(b.check_for("f64").is_ok() && b.check_for("f32").is_err());
    /// ```
    pub fn check_for(&self, precision: &'static str) -> Result<(), BackendError> {
        self.check_precision(precision)?;
        self.check()
    }

    /// Opens the executor: both precisions through [`Opened::get`].
    ///
    /// ```
    /// let mut opened = "cpu:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// assert_eq!(opened.get::<f32>().unwrap().name(), "cpu");
    /// ```
    pub fn open(&self) -> Result<Opened, BackendError> {
        self.check()?;
        let executor = match self {
            Backend::Reference => Executor::Reference(Reference),
            Backend::Cpu { .. } => Executor::Cpu(Box::new(CpuExecutor::new(self.parallelism()))),
            Backend::Mixed { .. } => Executor::Mixed(Box::new(MixedExecutor::new(self.parallelism()))),
            Backend::Cuda { devices, arithmetic } => self.open_cuda(devices, *arithmetic)?,
        };
        Ok(Opened { backend: self.clone(), executor })
    }

    /// Opens the executor for precision `T` only, boxed: what a front end that picks its
    /// executor at run time holds.
    ///
    /// ```
    /// let mut e = "reference".parse::<nbody_backends::Backend>().unwrap().open_for::<f32>().unwrap();
    /// assert_eq!(e.name(), "reference");
    /// ```
    pub fn open_for<T: BackendReal>(&self) -> Result<Box<dyn Projecting<T> + Send>, BackendError> {
        self.check_precision(T::NAME)?;
        self.open()?.into_boxed::<T>()
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::threads(self.threads().unwrap_or(1))
    }

    #[cfg(feature = "cuda")]
    fn open_cuda(&self, devices: &Devices, arithmetic: Arithmetic) -> Result<Executor, BackendError> {
        use nbody_cuda::{CudaExecutor, CudaMixedExecutor, MultiDevice};
        let open = |e| BackendError::Open { backend: self.clone(), source: e };
        Ok(match (devices, arithmetic) {
            (Devices::One(d), Arithmetic::Native) => {
                Executor::Cuda(Box::new(CudaExecutor::on_device(*d).map_err(open)?))
            }
            (Devices::One(d), Arithmetic::Mixed) => {
                Executor::Cuda(Box::new(CudaMixedExecutor::on_device(*d).map_err(open)?.into_executor()))
            }
            (Devices::List(list), Arithmetic::Native) => {
                Executor::Devices(Box::new(MultiDevice::on_devices(list).map_err(open)?))
            }
            (Devices::All, Arithmetic::Native) => Executor::Devices(Box::new(MultiDevice::new().map_err(open)?)),
            (_, Arithmetic::Mixed) => {
                return Err(BackendError::Open {
                    backend: self.clone(),
                    source: nbody_core::Error::Unsupported {
                        operation: "the mixed-precision kernels on several devices",
                        reason: "they run on one device at a time: use cuda-mixed:N",
                    },
                });
            }
        })
    }

    #[cfg(not(feature = "cuda"))]
    fn open_cuda(&self, _: &Devices, _: Arithmetic) -> Result<Executor, BackendError> {
        Err(BackendError::NotCompiled { backend: self.clone() })
    }
}

/// The executor an [`Opened`] backend holds: matched on by a front end that has a
/// device-resident path for the GPU ones (the command's leapfrog and Hermite).
#[derive(Debug)]
pub enum Executor {
    /// The scalar reference.
    Reference(Reference),
    /// The CPU SIMD executor.
    Cpu(Box<CpuExecutor>),
    /// The CPU mixed-precision executor (f64 only).
    Mixed(Box<MixedExecutor>),
    /// One GPU (its family, native or mixed, set).
    #[cfg(feature = "cuda")]
    Cuda(Box<nbody_cuda::CudaExecutor>),
    /// Several GPUs as one executor.
    #[cfg(feature = "cuda")]
    Devices(Box<nbody_cuda::MultiDevice>),
}

/// An opened backend: the executor and the backend it came from.
#[derive(Debug)]
pub struct Opened {
    backend: Backend,
    executor: Executor,
}

impl Opened {
    /// The backend it was opened from.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The executor, for precision `T`; the mixed families refuse f32.
    ///
    /// ```
    /// let mut opened = "mixed:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// assert!(opened.get::<f64>().is_ok());
    /// assert!(opened.get::<f32>().is_err());
    /// ```
    pub fn get<T: BackendReal>(&mut self) -> Result<&mut dyn Projecting<T>, BackendError> {
        self.backend.check_precision(T::NAME)?;
        T::get(&mut self.executor)
            .ok_or_else(|| BackendError::Precision { backend: self.backend.clone(), asked: T::NAME })
    }

    /// The executor for f64, which every backend computes in (so this cannot fail).
    ///
    /// ```
    /// let mut opened = "mixed:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// assert_eq!(opened.f64().name(), "cpu-mixed");
    /// ```
    pub fn f64(&mut self) -> &mut dyn Projecting<f64> {
        match &mut self.executor {
            Executor::Reference(x) => x,
            Executor::Cpu(x) => x.as_mut(),
            Executor::Mixed(x) => x.as_mut(),
            #[cfg(feature = "cuda")]
            Executor::Cuda(x) => x.as_mut(),
            #[cfg(feature = "cuda")]
            Executor::Devices(x) => x.as_mut(),
        }
    }

    /// The executor itself, borrowed: for front ends with paths of their own on one
    /// GPU (the GRAPE layer's device j-memory).
    pub fn executor_mut(&mut self) -> &mut Executor {
        &mut self.executor
    }

    /// The executor itself, for front ends with device-resident paths.
    pub fn into_executor(self) -> Executor {
        self.executor
    }

    /// Puts an executor taken out by [`Opened::into_executor`] back with its backend.
    ///
    /// ```
    /// let opened = "cpu:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// let backend = opened.backend().clone();
    /// let again = nbody_backends::Opened::from_parts(backend, opened.into_executor());
    /// assert_eq!(again.backend().to_string(), "cpu:1");
    /// ```
    pub fn from_parts(backend: Backend, executor: Executor) -> Opened {
        Opened { backend, executor }
    }

    /// One GPU's name, SM count and clock, for a report's header; `None` for the others.
    ///
    /// ```
    /// let cpu = "cpu:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// assert_eq!(cpu.device_line(), None);
    /// ```
    pub fn device_line(&self) -> Option<String> {
        match &self.executor {
            #[cfg(feature = "cuda")]
            Executor::Cuda(g) => {
                let d = g.info();
                Some(format!("{} ({} SMs, {} MHz)", d.name, d.sm_count, d.sm_clock_khz / 1000))
            }
            _ => None,
        }
    }

    /// Free memory on the device (the smallest over several), `None` for host executors.
    ///
    /// ```
    /// let mut cpu = "cpu:1".parse::<nbody_backends::Backend>().unwrap().open().unwrap();
    /// assert_eq!(cpu.free_device_memory(), None);
    /// ```
    pub fn free_device_memory(&mut self) -> Option<usize> {
        match &mut self.executor {
            #[cfg(feature = "cuda")]
            Executor::Cuda(g) => g.free_memory().ok(),
            #[cfg(feature = "cuda")]
            Executor::Devices(m) => m.executors().filter_map(|g| g.free_memory().ok()).min(),
            _ => None,
        }
    }

    /// The executor for precision `T`, boxed.
    pub fn into_boxed<T: BackendReal>(self) -> Result<Box<dyn Projecting<T> + Send>, BackendError> {
        self.backend.check_precision(T::NAME)?;
        T::boxed(self.executor).map_err(|_| BackendError::Precision { backend: self.backend, asked: T::NAME })
    }
}

/// The precisions the backends compute in (f32 and f64): how each precision reaches the
/// executors that exist for it.
pub trait BackendReal: CpuReal + MaybeDevice {
    /// The executor as this precision's trait object (`None`: none in this precision).
    #[doc(hidden)]
    fn get(e: &mut Executor) -> Option<&mut dyn Projecting<Self>>;
    /// The executor boxed as this precision's trait object (gives it back if none).
    #[doc(hidden)]
    fn boxed(e: Executor) -> Result<Box<dyn Projecting<Self> + Send>, Executor>;
}

/// The precisions of the GPU kernels, where CUDA is compiled in.
#[cfg(feature = "cuda")]
pub trait MaybeDevice: nbody_cuda::DeviceReal {}
#[cfg(feature = "cuda")]
impl<T: nbody_cuda::DeviceReal> MaybeDevice for T {}
/// The precisions of the GPU kernels, where CUDA is compiled in.
#[cfg(not(feature = "cuda"))]
pub trait MaybeDevice {}
#[cfg(not(feature = "cuda"))]
impl<T> MaybeDevice for T {}

/// The executors every precision has; `$mixed` says how the f64-only ones are reached.
macro_rules! backend_real {
    ($t:ty, |$m:ident| $get_mixed:expr, |$bm:ident| $box_mixed:expr) => {
        impl BackendReal for $t {
            fn get(e: &mut Executor) -> Option<&mut dyn Projecting<$t>> {
                Some(match e {
                    Executor::Reference(x) => x,
                    Executor::Cpu(x) => x.as_mut(),
                    Executor::Mixed($m) => return $get_mixed,
                    #[cfg(feature = "cuda")]
                    Executor::Cuda(x) => x.as_mut(),
                    #[cfg(feature = "cuda")]
                    Executor::Devices(x) => x.as_mut(),
                })
            }
            fn boxed(e: Executor) -> Result<Box<dyn Projecting<$t> + Send>, Executor> {
                Ok(match e {
                    Executor::Reference(x) => Box::new(x),
                    Executor::Cpu(x) => Box::new(x),
                    Executor::Mixed($bm) => return $box_mixed,
                    #[cfg(feature = "cuda")]
                    Executor::Cuda(x) => Box::new(x),
                    #[cfg(feature = "cuda")]
                    Executor::Devices(x) => Box::new(x),
                })
            }
        }
    };
}

backend_real!(f32, |_m| None, |m| Err(Executor::Mixed(m)));
backend_real!(f64, |m| Some(m.as_mut()), |m| Ok(m));

/// One backend this build and machine offer, with what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The backend string that opens it.
    pub backend: Backend,
    /// One line saying what it is.
    pub about: String,
}

impl Offer {
    /// What the backend computes in f64, as its executor declares it
    /// ([`nbody_core::Executor::capabilities`]); opens it to ask.
    ///
    /// ```
    /// use nbody_core::capabilities::Entry;
    /// use nbody_core::Softening;
    /// let cpu = &nbody_backends::offered()[0];
    /// assert!(cpu.capabilities()?.computes(Entry::Jerk, Softening::Spline));
    /// # Ok::<(), nbody_backends::BackendError>(())
    /// ```
    pub fn capabilities(&self) -> Result<nbody_core::capabilities::Capabilities, BackendError> {
        Ok(self.backend.open()?.into_boxed::<f64>()?.capabilities())
    }
}

/// What this build and this machine offer, as backend strings that open: the CPU ones,
/// and with CUDA compiled in one `cuda:N` and `cuda-mixed:N` per visible device and
/// `cuda:all` where there are several.
///
/// ```
/// let offers = nbody_backends::offered();
/// assert!(offers.iter().any(|o| o.backend.to_string() == "cpu"));
/// ```
pub fn offered() -> Vec<Offer> {
    let cores = available_threads();
    let mut o = vec![
        Offer {
            backend: Backend::Cpu { threads: None },
            about: format!(
                "SIMD kernels, f32 and f64, {} on this CPU; cpu:N for N threads (at most {cores})",
                nbody_cpu::Isa::detect().name()
            ),
        },
        Offer {
            backend: Backend::Mixed { threads: None },
            about: "f32 interactions on block offsets, f64 results (f64 only); mixed:N for N threads".into(),
        },
        Offer {
            backend: Backend::Reference,
            about: "scalar loops, the contract every executor is tested against".into(),
        },
    ];
    o.extend(devices_offered());
    o
}

#[cfg(feature = "cuda")]
fn devices_offered() -> Vec<Offer> {
    let n = nbody_cuda::CudaExecutor::device_count().unwrap_or(0);
    let mut o = Vec::new();
    for d in 0..n {
        let cuda = |arithmetic| Backend::Cuda { devices: Devices::One(d), arithmetic };
        o.push(Offer { backend: cuda(Arithmetic::Native), about: format!("CUDA device {d}, f32 and f64 kernels") });
        o.push(Offer {
            backend: cuda(Arithmetic::Mixed),
            about: format!("CUDA device {d}, mixed-precision kernels (f64 results)"),
        });
    }
    if n > 1 {
        o.push(Offer {
            backend: Backend::Cuda { devices: Devices::All, arithmetic: Arithmetic::Native },
            about: format!("all {n} CUDA devices as one executor"),
        });
    }
    o
}

#[cfg(not(feature = "cuda"))]
fn devices_offered() -> Vec<Offer> {
    Vec::new()
}

/// Whether this build has the CUDA backends (whether or not a device is present).
///
/// ```
/// let _ = nbody_backends::cuda_compiled();
/// ```
pub fn cuda_compiled() -> bool {
    cfg!(feature = "cuda")
}

/// The CUDA devices this process sees (name, compute capability, SMs, clock, memory)
/// and which pairs copy device to device: what `nbody info` prints.
///
/// ```
/// assert!(nbody_backends::devices_report().starts_with("CUDA devices") || nbody_backends::cuda_compiled());
/// ```
#[cfg(feature = "cuda")]
pub fn devices_report() -> String {
    let mut o = String::new();
    for ordinal in 0..64 {
        match nbody_cuda::CudaExecutor::on_device(ordinal) {
            Ok(e) => {
                let d = e.info();
                o += &format!(
                    "CUDA device {ordinal}: {}, compute capability {}.{}, {} SMs, SM clock {} MHz, {:.1} GiB\n",
                    d.name,
                    d.compute_capability.0,
                    d.compute_capability.1,
                    d.sm_count,
                    d.sm_clock_khz / 1000,
                    d.total_memory as f64 / (1u64 << 30) as f64
                );
            }
            Err(e) if ordinal == 0 => return format!("CUDA devices: none usable ({e})\n"),
            Err(_) => break,
        }
    }
    // Which pairs can copy device to device (the multi-device leapfrog's exchange);
    // the others are staged through pinned host memory.
    let n = nbody_cuda::CudaExecutor::device_count().unwrap_or(0);
    if n > 1 {
        if let Ok(peer) = nbody_cuda::PeerAccess::probe(&(0..n).collect::<Vec<_>>()) {
            o += "peer access (device to device copies; the rest go through pinned host memory):\n";
            for (a, row) in peer.can.iter().enumerate() {
                for (b, &can) in row.iter().enumerate().filter(|&(b, _)| b != a) {
                    o += &format!("  {a} -> {b}: {}\n", if can { "yes" } else { "no" });
                }
            }
        }
    } else if n == 1 {
        o += "peer access: one device (run several executors on it with --devices 0,0)\n";
    }
    o
}

/// The CUDA devices this process sees: none without CUDA compiled in.
#[cfg(not(feature = "cuda"))]
pub fn devices_report() -> String {
    "CUDA devices: not looked for (cuda not compiled in)\n".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip() {
        for s in ["reference", "cpu", "cpu:3", "mixed", "mixed:1", "cuda:0", "cuda-mixed:2", "cuda:0,1", "cuda:all"] {
            assert_eq!(s.parse::<Backend>().unwrap().to_string(), s);
        }
        assert_eq!("cuda".parse::<Backend>().unwrap().to_string(), "cuda:0");
        assert_eq!(" cpu:2 ".parse::<Backend>().unwrap(), Backend::Cpu { threads: Some(2) });
    }

    #[test]
    fn bad_strings_say_what_is_wrong() {
        for (s, says) in [
            ("", "no backend"),
            ("gpu", "unknown family"),
            ("cpu:0", "at least 1"),
            ("cpu:x", "not a thread count"),
            ("cuda:a", "not a device ordinal"),
            ("cuda:0,", "not a device ordinal"),
            ("reference:2", "no argument"),
        ] {
            let e = s.parse::<Backend>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("use reference"), "{s}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }

    #[test]
    fn too_many_threads_are_refused_before_any_start() {
        let too_many = available_threads() + 1;
        let e = Backend::Cpu { threads: Some(too_many) }.open().unwrap_err();
        assert!(matches!(e, BackendError::Threads { .. }), "{e}");
        assert!(e.to_string().contains("at most"), "{e}");
        assert!(Backend::Mixed { threads: Some(100_000) }.open().is_err());
    }

    #[test]
    fn the_mixed_rule_is_checked_on_every_path() {
        for b in ["mixed", "cuda-mixed"] {
            let b: Backend = b.parse().unwrap();
            assert!(matches!(b.open_for::<f32>(), Err(BackendError::Precision { .. })));
            assert!(b.check_precision("f32").is_err());
        }
        let mut opened = "mixed:1".parse::<Backend>().unwrap().open().unwrap();
        assert!(opened.get::<f32>().is_err());
        assert_eq!(opened.get::<f64>().unwrap().name(), "cpu-mixed");
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn cuda_without_cuda_is_a_clear_error() {
        let e = "cuda:0".parse::<Backend>().unwrap().open().unwrap_err();
        assert!(matches!(e, BackendError::NotCompiled { .. }) && e.to_string().contains("cuda"), "{e}");
    }
}

/// A GRAPE-6 code's j-particles kept in the memory of an opened executor's GPU between
/// force calls: a code sends only the particles it corrected, and each call predicts
/// every j-particle to the call's time on the device (f64 records; the executor's
/// kernel family). Made by [`JMemory::on`], which finds none on an executor without a
/// device j-memory; the code then takes its host path.
///
/// ```
/// let mut cpu: nbody_backends::Opened = "cpu:1".parse::<nbody_backends::Backend>()?.open()?;
/// assert!(nbody_backends::JMemory::on(cpu.executor_mut()).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JMemory(JInner);

#[cfg(feature = "cuda")]
type JInner = nbody_cuda::DeviceJMemory;
#[cfg(not(feature = "cuda"))]
type JInner = std::convert::Infallible;

/// The arguments of a force call on a [`JMemory`]: j-addresses `0..nj` predicted to
/// `time`, the targets (positions with masses, velocities), each target's own address
/// (left out of its sum) or -1, and the Plummer softening length.
#[derive(Clone, Copy, Debug)]
pub struct JCall<'a> {
    /// The j-addresses used.
    pub nj: usize,
    /// The time the j-particles are predicted to.
    pub time: f64,
    /// The i-particles.
    pub targets: nbody_core::Bodies<'a, f64>,
    /// Each target's own j-address, or -1.
    pub own: &'a [i32],
    /// The softening length.
    pub eps: f64,
}

impl JMemory {
    /// The j-memory of `exec`'s GPU, when it runs on exactly one; `None` otherwise or
    /// when it cannot be allocated.
    pub fn on(exec: &mut Executor) -> Option<Self> {
        match exec {
            #[cfg(feature = "cuda")]
            Executor::Cuda(gpu) => nbody_cuda::DeviceJMemory::new(gpu).ok().map(JMemory),
            _ => None,
        }
    }

    /// Writes j-particle `address` into the next call's upload.
    pub fn set(&mut self, address: usize, p: nbody_core::jmemory::JParticle) -> Result<(), nbody_core::Error> {
        #[cfg(feature = "cuda")]
        return self.0.set(address, p);
        #[cfg(not(feature = "cuda"))]
        match (self.0, address, p) {}
    }

    /// Replaces every j-particle with `pos` (positions with masses) and `vel` at
    /// addresses `0..n`, at time 0 without acceleration or jerk (two copies, for a code
    /// that sends all its particles as they stand before its force calls).
    pub fn replace(
        &mut self,
        exec: &mut Executor,
        pos: &[nbody_core::Particle<f64>],
        vel: &[nbody_core::Velocity<f64>],
    ) -> Result<(), nbody_core::Error> {
        #[cfg(feature = "cuda")]
        return self.0.replace(gpu_of(exec)?, pos, vel);
        #[cfg(not(feature = "cuda"))]
        match (self.0, exec, pos, vel) {}
    }

    /// Forgets every j-particle.
    pub fn clear(&mut self, exec: &mut Executor) -> Result<(), nbody_core::Error> {
        #[cfg(feature = "cuda")]
        return self.0.clear(gpu_of(exec)?);
        #[cfg(not(feature = "cuda"))]
        match (self.0, exec) {}
    }

    /// Forces and jerks on the targets, added into `out` and `jerk`, and what `search`
    /// asks for besides: the lists packed, with [`JSearch::Lists`].
    pub fn forces(
        &mut self,
        exec: &mut Executor,
        call: JCall<'_>,
        out: &mut [nbody_core::Field<f64>],
        jerk: &mut [nbody_core::Jerk<f64>],
        search: JSearch<'_, '_>,
    ) -> Result<Option<nbody_core::jmemory::PackedLists>, nbody_core::Error> {
        #[cfg(feature = "cuda")]
        {
            let (gpu, JCall { nj, time, targets, own, eps }) = (gpu_of(exec)?, call);
            match search {
                JSearch::Nothing => self.0.forces(gpu, nj, time, targets, own, eps, out, jerk, None).map(|()| None),
                JSearch::Into(nb) => {
                    self.0.forces(gpu, nj, time, targets, own, eps, out, jerk, Some(nb)).map(|()| None)
                }
                JSearch::Lists { radius2, capacity, ahead, exclude, inside } => {
                    let lists = nbody_cuda::ListSearch { radius2, capacity, ahead, exclude, inside };
                    self.0.forces_and_lists(gpu, nj, time, targets, own, eps, out, jerk, lists).map(Some)
                }
            }
        }
        #[cfg(not(feature = "cuda"))]
        match (self.0, exec, call, out, jerk, search) {}
    }
}

/// What a force call on a [`JMemory`] finds besides the forces.
#[derive(Debug)]
pub enum JSearch<'a, 'n> {
    /// Nothing more.
    Nothing,
    /// The nearest j-particle and the addresses within each radius, merged into these
    /// neighbours as every executor merges them.
    Into(&'a mut nbody_core::neighbours::Neighbours<'n, f64>),
    /// The addresses with unsoftened r² ≤ `radius2[i]` (the target's own left out),
    /// searched with `capacity` slots a target and returned packed, with the nearest.
    Lists {
        /// Each target's squared radius.
        radius2: &'a [f64],
        /// Slots a target.
        capacity: usize,
        /// Each target's look-ahead step dt, where an address also counts when
        /// `|dx + dt dv|² ≤ radius2[i]` (NBODY6++'s velocity criterion), or `None`.
        ahead: Option<&'a [f64]>,
        /// Whether the addresses listed (stored or beyond `capacity`) are left out of
        /// the sums.
        exclude: bool,
        /// Each target's squared radius within which (now or looked ahead) an address
        /// is surely what the caller looks for, or `None`: its entry then carries
        /// [`PackedLists::INSIDE`](nbody_core::jmemory::PackedLists::INSIDE).
        inside: Option<&'a [f64]>,
    },
}

/// The one GPU a [`JMemory`] was made on.
#[cfg(feature = "cuda")]
fn gpu_of(exec: &mut Executor) -> Result<&mut nbody_cuda::CudaExecutor, nbody_core::Error> {
    match exec {
        Executor::Cuda(gpu) => Ok(gpu),
        _ => Err(nbody_core::Error::NoDevice),
    }
}
