//! A tree leapfrog that owns its particles and its executor: what a front end (the C
//! ABI, Python) holds to step a system with tree forces without knowing where the tree
//! lives. On one GPU with the native kernels and Plummer softening the whole step stays
//! on the device (`nbody_cuda::TreeSystem`: sort, build, moments, walk, leaves, kicks
//! and drifts); on any other executor the tree is built and walked on the host
//! ([`TreeLeapfrog`]) and only its leaves run on the executor.

use super::{BarnesHut, TreeLeapfrog};
use nbody_backends::{BackendReal, Opened};
use nbody_core::cell::Criterion;
use nbody_core::projection::Projecting;
use nbody_core::{Error, Softening};
use nbody_integrators::{Checkpoint, Diagnostics, Integrator, State, Words};

/// A system stepped by a fixed-step kick-drift-kick leapfrog with Barnes-Hut forces
/// (quadrupole cells), its energies from the tree's potential.
///
/// ```
/// use nbody::backends::Backend;
/// use nbody::core::cell::Criterion;
/// use nbody::integrators::{ics, State};
/// use nbody::tree::TreeRun;
/// let (p, v) = ics::plummer::<f64>(500, 1);
/// let opened = "cpu:1".parse::<Backend>().unwrap().open().unwrap();
/// let mut run = TreeRun::new(opened, State::new(p, v), 0.5, Criterion::Geometric, 1.0 / 128.0, 0.01)?;
/// let e0 = run.diagnostics()?.total;
/// run.advance_to(0.125)?;
/// assert_eq!(run.steps(), 16);
/// assert!(!run.on_device());
/// assert!(((run.diagnostics()?.total - e0) / e0).abs() < 1e-3);
/// # Ok::<(), nbody::Error>(())
/// ```
pub struct TreeRun<T: BackendReal> {
    how: How<T>,
    dt: f64,
    steps: u64,
}

enum How<T: BackendReal> {
    Host(Box<OnHost<T>>),
    #[cfg(feature = "cuda")]
    Device(Box<OnDevice<T>>),
}

impl<T: BackendReal> std::fmt::Debug for TreeRun<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, t) = (self.len(), self.time());
        let at = if self.on_device() { "device tree" } else { "host tree" };
        write!(f, "TreeRun {{ {n} particles, t = {t}, {} steps of {}, {at} }}", self.steps, self.dt)
    }
}

/// The host tree's leapfrog, its particles and the executor of its leaves.
struct OnHost<T: BackendReal> {
    state: State<T>,
    leapfrog: TreeLeapfrog<T>,
    exec: Box<dyn Projecting<T> + Send>,
}

/// The device tree's system, with a host copy of the particles refreshed on demand.
#[cfg(feature = "cuda")]
struct OnDevice<T: BackendReal> {
    gpu: nbody_cuda::CudaExecutor,
    sys: nbody_cuda::TreeSystem<T>,
    params: nbody_core::Params<T>,
    /// The particles as last downloaded (`current`: as they are on the device).
    copy: State<T>,
    current: bool,
}

/// The precision a backend refuses, as the core's error.
fn refused(e: nbody_backends::BackendError) -> Error {
    match e {
        nbody_backends::BackendError::Open { source, .. } => source,
        _ => Error::Unsupported {
            operation: "single precision on a mixed-precision backend",
            reason: "the mixed backends compute in f64 only",
        },
    }
}

impl<T: BackendReal> TreeRun<T> {
    /// Takes `state` and the executor `opened`, with a step `dt` (finite, non-zero), the
    /// opening test (`theta` for the geometric one, and the first force of the relative
    /// one) and a Plummer softening `eps`. One GPU with the native kernels runs the
    /// device tree; any other executor the host tree. Nothing runs until the first step.
    pub fn new(
        opened: Opened,
        state: State<T>,
        theta: f64,
        criterion: Criterion,
        dt: f64,
        eps: T,
    ) -> Result<Self, Error> {
        Self::with_softening(opened, state, (theta, criterion), dt, eps, Softening::Plummer)
    }

    /// [`TreeRun::new`] under the softening kernel `softening`. The device tree softens
    /// with Plummer only: under the spline a GPU runs the host tree's leaves. Positions,
    /// masses and velocities are checked here on every executor (finite, no negative
    /// mass, one velocity per particle).
    pub fn with_softening(
        opened: Opened,
        state: State<T>,
        (theta, criterion): (f64, Criterion),
        dt: f64,
        eps: T,
        softening: Softening,
    ) -> Result<Self, Error> {
        // Every executor refuses the same input here, before any state is kept: a NaN
        // velocity on the host tree would otherwise drift the positions before the
        // first force could refuse them.
        nbody_core::validate::particles(&state.pos, nbody_core::Array::Particles)?;
        nbody_core::validate::velocities(&state.vel, state.pos.len(), nbody_core::Array::Velocities)?;
        if !state.time.is_finite() {
            return Err(Error::InvalidParameter { name: "time", requirement: "finite" });
        }
        let backend = opened.backend().clone();
        let bh = BarnesHut::for_executor(backend.is_cuda(), theta).with_criterion(criterion);
        bh.check()?;
        let leapfrog = TreeLeapfrog::new(bh, dt, eps)?.with_softening(softening);
        // The device tree's cells are Plummer's.
        #[cfg(feature = "cuda")]
        let on_device = !backend.is_mixed()
            && match softening {
                Softening::Plummer => true,
                Softening::Spline => false,
            };
        #[cfg(feature = "cuda")]
        let opened = match opened.into_executor() {
            nbody_backends::Executor::Cuda(mut gpu) if on_device => {
                let settings = nbody_cuda::TreeSettings::new(theta).with_criterion(criterion);
                let params = nbody_core::Params::softened(eps).with_overlap_identical();
                let mut sys = gpu.upload_tree_system(&state.pos, &state.vel, settings)?;
                sys.set_time(state.time);
                let device = OnDevice { gpu: *gpu, sys, params, copy: state, current: true };
                return Ok(Self { how: How::Device(Box::new(device)), dt, steps: 0 });
            }
            other => Opened::from_parts(backend, other),
        };
        let exec = opened.into_boxed::<T>().map_err(refused)?;
        Ok(Self { how: How::Host(Box::new(OnHost { state, leapfrog, exec })), dt, steps: 0 })
    }

    /// Whether the whole step runs on the GPU (the device tree).
    pub fn on_device(&self) -> bool {
        !matches!(self.how, How::Host(_))
    }

    /// Simulated time.
    pub fn time(&self) -> f64 {
        match &self.how {
            How::Host(h) => h.state.time,
            #[cfg(feature = "cuda")]
            How::Device(d) => d.sys.time(),
        }
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Sets the clock and the step count: a run rebuilt over another's particles (some
    /// added or removed) goes on from where that one was.
    pub fn resume_at(&mut self, time: f64, steps: u64) {
        match &mut self.how {
            How::Host(h) => h.state.time = time,
            #[cfg(feature = "cuda")]
            How::Device(d) => {
                d.sys.set_time(time);
                d.copy.time = time;
            }
        }
        self.steps = steps;
    }

    /// Particles in the system.
    pub fn len(&self) -> usize {
        match &self.how {
            How::Host(h) => h.state.len(),
            #[cfg(feature = "cuda")]
            How::Device(d) => d.sys.len(),
        }
    }

    /// Whether the system is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One step of `dt`.
    pub fn step(&mut self) -> Result<(), Error> {
        match &mut self.how {
            How::Host(h) => {
                h.leapfrog.step_towards(&mut h.state, h.exec.as_mut(), f64::INFINITY)?;
            }
            #[cfg(feature = "cuda")]
            How::Device(d) => {
                d.current = false;
                d.gpu.tree_leapfrog_step(&mut d.sys, &d.params, self.dt)?;
            }
        }
        self.steps += 1;
        Ok(())
    }

    /// Steps until the time is within half a step of `until`; returns the steps taken.
    pub fn advance_to(&mut self, until: f64) -> Result<u64, Error> {
        if until.is_nan() {
            return Err(Error::InvalidParameter { name: "until", requirement: "not NaN" });
        }
        let mut steps = 0;
        while self.time() < until - 0.5 * self.dt.abs() {
            self.step()?;
            steps += 1;
        }
        Ok(steps)
    }

    /// The particles now (copied back from the GPU when the tree lives there).
    pub fn state(&mut self) -> Result<&State<T>, Error> {
        match &mut self.how {
            How::Host(h) => Ok(&h.state),
            #[cfg(feature = "cuda")]
            How::Device(d) => {
                if !d.current {
                    let copy = &mut d.copy;
                    d.gpu.download_tree_system(&d.sys, &mut copy.pos, &mut copy.vel)?;
                    copy.time = d.sys.time();
                    d.current = true;
                }
                Ok(&d.copy)
            }
        }
    }

    /// Energies, momenta and centre of mass, the potential from the tree (the field
    /// the next kick uses: a force only if the positions moved since the last one).
    pub fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        match &mut self.how {
            How::Host(h) => h.leapfrog.diagnostics(&h.state, h.exec.as_mut()),
            #[cfg(feature = "cuda")]
            How::Device(_) => {
                let (state, field) = self.device_now()?;
                Ok(nbody_integrators::diagnostics(state, &field))
            }
        }
    }

    /// The run as words: where the tree lives, the step count, the particles and what
    /// the next step needs (the host leapfrog's state, or the device's current field),
    /// so [`TreeRun::restore`] on a run made with the same settings goes on bit for bit.
    ///
    /// ```
    /// use nbody::backends::Backend;
    /// use nbody::core::cell::Criterion;
    /// use nbody::integrators::{ics, State, Words};
    /// use nbody::tree::TreeRun;
    /// let (p, v) = ics::plummer::<f64>(300, 2);
    /// let open = || "cpu:1".parse::<Backend>().unwrap().open().unwrap();
    /// let mut a = TreeRun::new(open(), State::new(p.clone(), v.clone()), 0.5, Criterion::Geometric, 1.0 / 64.0, 0.01)?;
    /// a.advance_to(0.125)?;
    /// let words = a.save()?;
    /// let mut b = TreeRun::new(open(), State::new(p, v), 0.5, Criterion::Geometric, 1.0 / 64.0, 0.01)?;
    /// b.restore(&mut Words::new(&words))?;
    /// a.advance_to(0.25)?;
    /// b.advance_to(0.25)?;
    /// assert_eq!(a.state()?.pos, b.state()?.pos);
    /// # Ok::<(), nbody::Error>(())
    /// ```
    pub fn save(&mut self) -> Result<Vec<u64>, Error> {
        let mut w = vec![u64::from(self.on_device()), self.steps];
        match &mut self.how {
            How::Host(h) => {
                h.state.save(&mut w);
                h.leapfrog.save(&mut w);
            }
            #[cfg(feature = "cuda")]
            How::Device(_) => {
                let (state, field) = self.device_now()?;
                state.save(&mut w);
                nbody_integrators::put_fields(&mut w, &field);
            }
        }
        Ok(w)
    }

    /// Continues from [`TreeRun::save`]'s words (this run's particles are replaced). A run
    /// saved on the device tree loads on the device tree only, and a host one on the host.
    pub fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        if (w.word()? != 0) != self.on_device() {
            return Err(Error::Unsupported {
                operation: "loading a tree run saved where the tree lived elsewhere",
                reason: "a run saved on the device tree loads on one GPU (native kernels, Plummer), a host one elsewhere",
            });
        }
        let steps = w.word()?;
        let mut state = State::new(Vec::new(), Vec::new());
        state.restore(w)?;
        match &mut self.how {
            How::Host(h) => {
                h.leapfrog.restore(w)?;
                h.state = state;
            }
            #[cfg(feature = "cuda")]
            How::Device(d) => {
                let field = nbody_integrators::take_fields::<T>(w)?;
                // A run made over the saved particles (what a loader does) keeps the
                // system it uploaded; other particles replace it.
                let same = d.current && d.copy.pos == state.pos && d.copy.vel == state.vel;
                if !same {
                    let settings = *d.sys.settings();
                    d.sys = d.gpu.upload_tree_system(&state.pos, &state.vel, settings)?;
                }
                d.sys.set_time(state.time);
                d.gpu.restore_tree_field(&mut d.sys, &field)?;
                (d.copy, d.current) = (state, true);
            }
        }
        self.steps = steps;
        Ok(())
    }

    /// A device run's particles and its tree field now, both copied back (a force only
    /// if the particles moved since the last one).
    #[cfg(feature = "cuda")]
    fn device_now(&mut self) -> Result<(&State<T>, Vec<nbody_core::Field<T>>), Error> {
        let n = self.len();
        self.state()?;
        let How::Device(d) = &mut self.how else { unreachable!("called for a device run") };
        let mut field = vec![nbody_core::Field::zero(); n];
        d.gpu.download_tree_field(&mut d.sys, &d.params, &mut field)?;
        Ok((&d.copy, field))
    }

    /// Interactions summed over every force so far (particle and cell interactions).
    pub fn interactions(&self) -> f64 {
        match &self.how {
            How::Host(h) => h.leapfrog.interactions(),
            #[cfg(feature = "cuda")]
            How::Device(d) => d.sys.interactions(),
        }
    }
}
