//! The run loop's engine, one for every front end: a system, an integrator chosen by
//! name, a gravity solver (direct summation or the tree) and an executor opened from a
//! backend string become one [`Simulation`], and this module alone decides where it
//! lives (the particles on the GPU for the device leapfrog, Hermite and tree steps
//! where the executor has them, on the host over the executor's forces otherwise).
//! `nbody run`, the C ABI's runs, Python's `Simulation` and the AMUSE code hold what
//! [`open`] gives and choose nothing themselves, so one run gives the same energies
//! through each of them.
//!
//! ```
//! use nbody::backends::Backend;
//! use nbody::integrators::{ics, Scheme};
//! use nbody::simulation::{Gravity, Plan, Precision, Simulation, rows};
//!
//! let (p, v) = ics::plummer::<f64>(256, 1);
//! let plan = Plan { integrator: Scheme::Hermite6, ..Plan::new(0.01) };
//! let opened = "cpu:1".parse::<Backend>().unwrap().open().unwrap();
//! let mut run = nbody::simulation::open(&plan, &rows(&p, &v), 0.0, opened)?;
//! let e0 = run.sim.diagnostics()?.total;
//! run.sim.advance_to(0.125)?;
//! assert!(((run.sim.diagnostics()?.total - e0) / e0).abs() < 1e-6);
//! assert!(!run.on_device);
//! # Ok::<(), nbody::Error>(())
//! ```

mod device;
mod host;
mod split;

use crate::tree::{BarnesHut, TreeLeapfrog};
pub use host::Host;
use nbody_backends::{Backend, BackendReal, Opened};
use nbody_core::cell::Criterion;
use nbody_core::projection::Projection;
use nbody_core::{Error, Particle, Real, Softening, Velocity};
use nbody_integrators::{Arrays, Diagnostics, Integrator, Scheme, SchemeSettings, State, Words};
#[cfg(feature = "mpi")]
pub(crate) use split::not_gathered as split_refused;
pub use split::{SPLIT, Share, take_share};

/// One particle as the front ends exchange it: x, y, z, mass, vx, vy, vz, in f64.
pub type Row = [f64; 7];

/// A running simulation, whatever steps it and wherever its particles live.
pub trait Simulation {
    /// Simulated time.
    fn time(&self) -> f64;
    /// Advances towards `until` by one step (one adaptive Runge-Kutta stretch, one block
    /// step); true once `until` is reached (a fixed step: within half a step of it).
    fn step(&mut self, until: f64) -> Result<bool, Error>;
    /// Steps taken.
    fn steps(&self) -> u64;
    /// Pair interactions computed so far (every force call, diagnostics included).
    fn interactions(&self) -> f64;
    /// Forces computed so far and the device seconds they took, where the simulation
    /// times them on the device (the device tree): what its steps spent in the force,
    /// beside the wall time.
    fn force_time(&self) -> Option<(u64, f64)> {
        None
    }
    /// Conserved quantities now.
    fn diagnostics(&mut self) -> Result<Diagnostics, Error>;
    /// Positions, masses and velocities now, in f64.
    fn snapshot(&mut self) -> Result<Vec<Row>, Error>;
    /// Density map of the particles now, computed by the executor.
    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error>;
    /// What a checkpoint needs to continue this simulation bit for bit; `None` where
    /// it cannot be checkpointed.
    fn save(&mut self) -> Result<Option<Vec<u64>>, Error>;
    /// Continues from what [`Simulation::save`] gave (the particles are replaced).
    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error>;

    /// Steps until `until` is reached; returns the steps taken.
    fn advance_to(&mut self, until: f64) -> Result<u64, Error> {
        if until.is_nan() {
            return Err(Error::InvalidParameter { name: "until", requirement: "not NaN" });
        }
        let before = self.steps();
        while !self.step(until)? {}
        Ok(self.steps() - before)
    }

    /// Pairs `(i, j)`, `i < j`, whose unsoftened distance is below `radii[i] +
    /// radii[j]`, from the executor's neighbour search.
    fn touching(&mut self, radii: &[f64]) -> Result<Vec<[u32; 2]>, Error> {
        let _ = radii;
        Err(Error::Unsupported {
            operation: "collisions with gravity='tree'",
            reason: "the neighbour search runs on direct summation's executor: use gravity='direct'",
        })
    }

    /// For one share of a system split over processes: the words every share saves
    /// alike and the per-particle arrays (see [`nbody_integrators::Checkpoint::save_split`]);
    /// `None` where the simulation cannot be split.
    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        Ok(None)
    }

    /// Continues one share from [`Simulation::save_split`]'s words and this share's
    /// part of each array.
    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        let _ = (shared, arrays);
        Err(Error::Unsupported {
            operation: "resuming one share of a split run",
            reason: "this simulation is not split",
        })
    }
}

/// Where the forces come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gravity {
    /// Direct summation over every pair.
    Direct,
    /// A Barnes-Hut tree with quadrupole cells (the leapfrog only): the geometric test
    /// at `theta`, or the relative criterion after a first force at `theta`.
    Tree {
        /// Opening angle (and the relative criterion's first force).
        theta: f64,
        /// The opening test.
        criterion: Criterion,
    },
}

nbody_core::registry! {
    /// The gravity solvers by name, as every front end spells them.
    pub enum Solver as "gravity" {
        /// [`Gravity::Direct`].
        Direct => "direct", "direct summation over every pair, O(N^2)";
        /// [`Gravity::Tree`].
        Tree => "tree", "Barnes-Hut tree with quadrupole cells, O(N log N) (leapfrog only)";
    }
}

impl Gravity {
    /// The solver `solver` with the tree's `theta` (default 0.5) and `alpha` (the
    /// relative criterion), refused where they do not apply.
    ///
    /// ```
    /// use nbody::simulation::{Gravity, Solver};
    /// assert_eq!(Gravity::of(Solver::Direct, None, None)?, Gravity::Direct);
    /// assert!(Gravity::of(Solver::Direct, Some(0.5), None).is_err());
    /// assert!(Gravity::of(Solver::Tree, Some(-1.0), None).is_err());
    /// # Ok::<(), nbody::Error>(())
    /// ```
    pub fn of(solver: Solver, theta: Option<f64>, alpha: Option<f64>) -> Result<Self, Error> {
        match solver {
            Solver::Direct if theta.is_none() && alpha.is_none() => Ok(Gravity::Direct),
            Solver::Direct => {
                Err(Error::InvalidParameter { name: "theta", requirement: "set only with the tree (gravity tree)" })
            }
            Solver::Tree => {
                let theta = theta.unwrap_or(0.5);
                if !(theta.is_finite() && theta > 0.0) {
                    return Err(Error::InvalidParameter { name: "theta", requirement: "positive and finite" });
                }
                let criterion = Criterion::from_alpha(alpha);
                criterion.check()?;
                Ok(Gravity::Tree { theta, criterion })
            }
        }
    }

    /// Which solver this is.
    pub fn solver(self) -> Solver {
        match self {
            Gravity::Direct => Solver::Direct,
            Gravity::Tree { .. } => Solver::Tree,
        }
    }
}

nbody_core::registry! {
    /// The precision the particles are kept and stepped in.
    pub enum Precision as "precision" {
        /// Single.
        F32 => "f32", "single: particles and kernels in f32";
        /// Double.
        F64 => "f64", "double: particles and kernels in f64 (the mixed backends compute in it)";
    }
}

impl Precision {
    /// The precision of the floating-point type `T`.
    ///
    /// ```
    /// use nbody::simulation::Precision;
    /// assert_eq!((Precision::of::<f32>(), Precision::of::<f64>()), (Precision::F32, Precision::F64));
    /// ```
    pub fn of<T: Real>() -> Self {
        if T::NAME == Precision::F32.name() { Precision::F32 } else { Precision::F64 }
    }
}

/// How a run steps: everything but the system and the executor, in N-body units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// The integrator.
    pub integrator: Scheme,
    /// Where the forces come from.
    pub gravity: Gravity,
    /// The particles' precision.
    pub precision: Precision,
    /// The softened kernel.
    pub softening: Softening,
    /// Softening length (Plummer's; the spline's support is 2.8 times it).
    pub eps: f64,
    /// The leapfrog's step; block Hermite's largest step (a power of two).
    pub dt: f64,
    /// The Hermite schemes' accuracy parameter.
    pub eta: f64,
    /// Runge-Kutta's tolerance.
    pub tolerance: f64,
}

impl Plan {
    /// The leapfrog over direct summation in f64 with Plummer softening `eps`, dt 1/256,
    /// eta 0.02 and tolerance 1e-8.
    pub fn new(eps: f64) -> Self {
        let s = SchemeSettings::new(eps);
        Plan {
            integrator: Scheme::Leapfrog,
            gravity: Gravity::Direct,
            precision: Precision::F64,
            softening: s.softening,
            eps,
            dt: s.dt,
            eta: s.eta,
            tolerance: s.tolerance,
        }
    }

    /// Refuses settings no run can take: a tree with another integrator than the
    /// leapfrog, a non-finite or non-positive step where one is used.
    pub fn check(&self) -> Result<(), Error> {
        if let Gravity::Tree { .. } = self.gravity
            && self.integrator != Scheme::Leapfrog
        {
            return Err(Error::Unsupported {
                operation: "the tree with this integrator",
                reason: "the tree steps with the leapfrog only: a tree force has no jerk for Hermite",
            });
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(Error::InvalidParameter { name: "eps", requirement: "finite and not negative" });
        }
        if matches!(self.integrator, Scheme::Leapfrog | Scheme::BlockHermite) && !(self.dt.is_finite() && self.dt > 0.0)
        {
            return Err(Error::InvalidParameter { name: "dt", requirement: "positive and finite" });
        }
        Ok(())
    }

    /// The integrator stepping on the host.
    ///
    /// ```
    /// use nbody::integrators::Scheme;
    /// use nbody::simulation::Plan;
    /// let plan = Plan { integrator: Scheme::RungeKutta, ..Plan::new(0.01) };
    /// assert_eq!(plan.integrator::<f64>()?.name(), "rk");
    /// # Ok::<(), nbody::Error>(())
    /// ```
    pub fn integrator<T: Real>(&self) -> Result<Box<dyn Integrator<T> + Send>, Error> {
        self.integrator.build(&self.scheme::<T>())
    }

    fn scheme<T: Real>(&self) -> SchemeSettings<T> {
        SchemeSettings {
            eps: T::from_f64(self.eps),
            softening: self.softening,
            dt: self.dt,
            eta: self.eta,
            tolerance: self.tolerance,
        }
    }

    /// Whether a device-resident step may soften this way (its kernels are Plummer's).
    fn plummer(&self) -> bool {
        self.softening == Softening::Plummer || self.eps == 0.0
    }
}

/// A simulation as [`open`] made it: the simulation, where it lives, and a line saying so.
pub struct Run {
    /// The simulation.
    pub sim: Box<dyn Simulation + Send>,
    /// Whether its particles live on the GPU between steps.
    pub on_device: bool,
    /// The executor and the path taken, for a run's header.
    pub label: String,
}

impl Run {
    /// The run as words: where its particles live, then [`Simulation::save`]'s words.
    pub fn save(&mut self) -> Result<Vec<u64>, Error> {
        let words = self.sim.save()?.ok_or(Error::Unsupported {
            operation: "saving this run",
            reason: "a run split across processes is saved by its ranks together",
        })?;
        Ok(std::iter::once(u64::from(self.on_device)).chain(words).collect())
    }

    /// Continues from [`Run::save`]'s words (this run's particles are replaced). A run
    /// saved with its particles on the GPU loads where they live on the GPU again (one
    /// GPU with the native kernels), and a host one on the host.
    ///
    /// ```
    /// use nbody::backends::Backend;
    /// use nbody::integrators::{ics, Scheme, Words};
    /// use nbody::simulation::{Plan, Simulation, open, rows};
    /// let (p, v) = ics::plummer::<f64>(100, 2);
    /// let plan = Plan { integrator: Scheme::Hermite, ..Plan::new(0.01) };
    /// let cpu = || "cpu:1".parse::<Backend>().unwrap().open().unwrap();
    /// let mut a = open(&plan, &rows(&p, &v), 0.0, cpu())?;
    /// a.sim.advance_to(0.125)?;
    /// let words = a.save()?;
    /// let mut b = open(&plan, &[], 0.0, cpu())?;
    /// b.restore(&mut Words::new(&words))?;
    /// a.sim.advance_to(0.25)?;
    /// b.sim.advance_to(0.25)?;
    /// assert_eq!(a.sim.snapshot()?, b.sim.snapshot()?);
    /// # Ok::<(), nbody::Error>(())
    /// ```
    pub fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        if (w.word()? != 0) != self.on_device {
            return Err(Error::Unsupported {
                operation: "loading a run saved where its particles lived elsewhere",
                reason: "a run saved on the GPU loads on one GPU with the native kernels, a host one elsewhere",
            });
        }
        self.sim.restore(w)
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Run {{ {}, t = {}, {} steps }}", self.label, self.sim.time(), self.sim.steps())
    }
}

/// Rows of positions, masses and velocities.
pub fn rows<T: Real>(pos: &[Particle<T>], vel: &[Velocity<T>]) -> Vec<Row> {
    pos.iter()
        .zip(vel)
        .map(|(p, v)| {
            let (x, u) = (p.position().map(Real::to_f64), v.components().map(Real::to_f64));
            [x[0], x[1], x[2], p.m.to_f64(), u[0], u[1], u[2]]
        })
        .collect()
}

/// The state of `rows` at `time`, in `T`, checked (finite, no negative mass).
pub fn state<T: Real>(rows: &[Row], time: f64) -> Result<State<T>, Error> {
    let c = T::from_f64;
    let pos: Vec<_> = rows.iter().map(|r| Particle::new(c(r[0]), c(r[1]), c(r[2]), c(r[3]))).collect();
    let vel: Vec<_> = rows.iter().map(|r| Velocity::new(c(r[4]), c(r[5]), c(r[6]))).collect();
    nbody_core::validate::particles(&pos, nbody_core::Array::Particles)?;
    nbody_core::validate::velocities(&vel, pos.len(), nbody_core::Array::Velocities)?;
    if !time.is_finite() {
        return Err(Error::InvalidParameter { name: "time", requirement: "finite" });
    }
    let mut s = State::new(pos, vel);
    s.time = time;
    Ok(s)
}

/// A backend's refusal, as the core's error.
fn refused(e: nbody_backends::BackendError) -> Error {
    match e {
        nbody_backends::BackendError::Open { source, .. } => source,
        _ => Error::Unsupported {
            operation: "single precision on a mixed-precision backend",
            reason: "the mixed backends compute in f64 only",
        },
    }
}

/// The simulation of the system `rows` at `time` stepped as `plan` says with forces from
/// `opened`: where the executor can keep the particles (one GPU or several with the
/// native kernels and Plummer softening: the leapfrog, Hermite with shared or block
/// steps, the tree's leapfrog), they stay on the device between steps; otherwise the
/// integrator steps on the host over the executor's forces.
pub fn open(plan: &Plan, rows: &[Row], time: f64, opened: Opened) -> Result<Run, Error> {
    plan.check()?;
    match plan.precision {
        Precision::F32 => open_in::<f32>(plan, state(rows, time)?, opened),
        Precision::F64 => open_in::<f64>(plan, state(rows, time)?, opened),
    }
}

/// [`open`] for a state already in `T`.
pub fn open_in<T: BackendReal>(plan: &Plan, state: State<T>, opened: Opened) -> Result<Run, Error> {
    if let Gravity::Tree { theta, criterion } = plan.gravity {
        return tree(plan, state, opened, theta, criterion);
    }
    if plan.plummer() {
        match device::direct(plan, &state, opened)? {
            Ok(run) => return Ok(run),
            Err(back) => return on_host(plan, state, back),
        }
    }
    on_host(plan, state, opened)
}

/// The integrator of `plan` stepping `state` on the host over the forces of `opened`.
fn on_host<T: BackendReal>(plan: &Plan, state: State<T>, opened: Opened) -> Result<Run, Error> {
    let label = match opened.backend().threads() {
        Some(t) => format!("{} ({t} threads)", opened.backend()),
        None => opened.backend().to_string(),
    };
    let integrator = plan.integrator::<T>()?;
    let exec = opened.into_boxed::<T>().map_err(refused)?;
    Ok(Run { sim: Box::new(Host::new(state, integrator, exec)), on_device: false, label })
}

/// The leapfrog over a tree: on one GPU with the native kernels and Plummer softening
/// the device tree, every step on the device; on any other executor the tree built and
/// walked on the host, its leaves on the executor.
fn tree<T: BackendReal>(
    plan: &Plan,
    state: State<T>,
    opened: Opened,
    theta: f64,
    criterion: Criterion,
) -> Result<Run, Error> {
    let test = match criterion {
        Criterion::Relative { alpha } => format!("relative criterion alpha {alpha}, first force theta {theta}"),
        Criterion::Geometric => format!("theta {theta}"),
    };
    let backend: Backend = opened.backend().clone();
    let opened = match device::tree(plan, &state, opened, &test)? {
        Ok(run) => return Ok(run),
        Err(back) => back,
    };
    let bh = BarnesHut::for_executor(backend.is_cuda(), theta).with_criterion(criterion);
    bh.check()?;
    let leapfrog = TreeLeapfrog::new(bh, plan.dt, T::from_f64(plan.eps))?.with_softening(plan.softening);
    let exec = opened.into_boxed::<T>().map_err(refused)?;
    let label = format!(
        "{backend} (leapfrog over a host-built tree, quadrupole cells, {test}; energies from the tree's potential)"
    );
    Ok(Run { sim: Box::new(Host::new(state, Box::new(leapfrog), exec)), on_device: false, label })
}

/// A simulation seen in other units than N-body ones: times, velocities, energies and
/// momenta converted on the way in and out; the simulation itself runs in N-body units,
/// and its checkpoints stay in them.
pub struct InUnits<'a> {
    sim: Box<dyn Simulation + 'a>,
    /// sqrt(G) in the run's units: model time = run time x `k`.
    k: f64,
    /// The block step in model units (0: none): a target time a rounding away from a
    /// multiple of it is put on it, so block steps land where the run asked.
    grid: f64,
}

impl std::fmt::Debug for InUnits<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InUnits {{ k = {}, grid = {} }}", self.k, self.grid)
    }
}

impl<'a> InUnits<'a> {
    /// `sim` seen in units where sqrt(G) is `k` ([`crate::units::Units::scale`]),
    /// target times put on the block grid `grid` (model units; 0 for none).
    pub fn new(sim: Box<dyn Simulation + 'a>, k: f64, grid: f64) -> Self {
        Self { sim, k, grid }
    }
}

impl Simulation for InUnits<'_> {
    fn time(&self) -> f64 {
        self.sim.time() / self.k
    }

    fn step(&mut self, until: f64) -> Result<bool, Error> {
        let mut u = until * self.k;
        if self.grid > 0.0 {
            let on = (u / self.grid).round() * self.grid;
            if (on - u).abs() <= 1e-9 * u.abs().max(self.grid) {
                u = on;
            }
        }
        self.sim.step(u)
    }

    fn steps(&self) -> u64 {
        self.sim.steps()
    }

    fn interactions(&self) -> f64 {
        self.sim.interactions()
    }

    fn diagnostics(&mut self) -> Result<Diagnostics, Error> {
        let (k, d) = (self.k, self.sim.diagnostics()?);
        Ok(Diagnostics {
            kinetic: d.kinetic * k * k,
            potential: d.potential * k * k,
            total: d.total * k * k,
            momentum: d.momentum.map(|p| p * k),
            angular_momentum: d.angular_momentum.map(|l| l * k),
            ..d
        })
    }

    fn snapshot(&mut self) -> Result<Vec<Row>, Error> {
        let mut rows = self.sim.snapshot()?;
        for r in &mut rows {
            r[4..7].iter_mut().for_each(|v| *v *= self.k);
        }
        Ok(rows)
    }

    fn project(&mut self, projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.sim.project(projection, grid)
    }

    fn save(&mut self) -> Result<Option<Vec<u64>>, Error> {
        self.sim.save()
    }

    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error> {
        self.sim.restore(words)
    }

    fn touching(&mut self, radii: &[f64]) -> Result<Vec<[u32; 2]>, Error> {
        self.sim.touching(radii)
    }

    fn save_split(&mut self) -> Result<Option<Share>, Error> {
        self.sim.save_split()
    }

    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        self.sim.restore_split(shared, arrays)
    }
}
