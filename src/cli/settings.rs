//! Settings of `nbody run`: the same names on the command line and in a TOML file
//! (`--config FILE`); the command line wins, then the file, then the defaults. Every
//! value is checked before anything runs, and errors name the setting.

use super::Precision;
use super::executors::{Backend, option_error};
use crate::units::Units;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use nbody_backends::{Arithmetic, Devices};
use nbody_core::Softening;
use nbody_core::registry::{Named, lookup};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which system to start from.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum InitialConditions {
    /// Plummer sphere in standard N-body units (G = M = 1, E = -1/4).
    Plummer,
    /// Uniform sphere at rest (radius 1, total mass 1): it collapses.
    ColdSphere,
    /// Two bodies of mass 1/2 on a Kepler orbit (`eccentricity`, semi-major axis 1).
    Kepler,
    /// The figure-eight three-body orbit (Chenciner & Montgomery).
    Figure8,
    /// Particles from `input` (.npy or .csv, N x 4 [x y z m] or N x 7 [... vx vy vz]).
    File,
}

/// Which integrator advances the system: the integrators' registry, by its one name.
pub use nbody_integrators::Scheme as IntegratorKind;

/// `--executor`'s help: the backends' grammar from their registry.
fn executor_help() -> String {
    format!(
        "Executor, as a backend string ({}; `nbody info` lists what this build offers) [default: cuda when compiled in with a device, else cpu]",
        nbody_backends::grammar().trim_start_matches("use ")
    )
}

/// An option's values and help, from its registry.
pub(crate) fn named_parser<K: Named + Send + Sync>() -> impl clap::builder::TypedValueParser<Value = K> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(K::ALL.iter().map(|k| PossibleValue::new(k.name()).help(k.about())))
        .map(|name| lookup::<K>(&name).expect("a name the registry listed"))
}

/// A registry's value in a settings file or a run's saved settings: its one name.
pub(crate) mod by_name {
    use nbody_core::registry::{Named, lookup, names};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    fn parse<K: Named, E: Error>(name: &str) -> Result<K, E> {
        lookup::<K>(name).ok_or_else(|| E::custom(format!("{} {name:?}: must be one of {}", K::KIND, names::<K>())))
    }

    pub(crate) fn serialize<K: Named, S: Serializer>(k: &K, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(k.name())
    }

    pub(crate) fn serialize_opt<K: Named, S: Serializer>(k: &Option<K>, s: S) -> Result<S::Ok, S::Error> {
        match k {
            Some(k) => s.serialize_some(k.name()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize_opt<'de, K: Named, D: Deserializer<'de>>(d: D) -> Result<Option<K>, D::Error> {
        Option::<String>::deserialize(d)?.map(|name| parse(&name)).transpose()
    }
}

/// The file format of snapshots.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotFormat {
    /// NumPy .npy, N x 7 float64 (x y z m vx vy vz).
    #[default]
    Npy,
    /// CSV with a header line.
    Csv,
    /// Gadget's HDF5 layout (yt, pynbody, the Gadget and AREPO tools open it): Header
    /// attributes, PartType1 Coordinates, Velocities, Masses, ParticleIDs, Acceleration
    /// and Potential. Needs a build with the `hdf5` feature.
    Hdf5,
}

impl SnapshotFormat {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            SnapshotFormat::Npy => "npy",
            SnapshotFormat::Csv => "csv",
            SnapshotFormat::Hdf5 => "hdf5",
        }
    }
}

/// Where the forces come from (the library's registry of gravity solvers).
pub use crate::simulation::Solver as GravityKind;

/// Arguments of `nbody run`; each may also come from the `--config` TOML file under the
/// same name (`t-end = 2.0`).
#[derive(Args, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct RunArgs {
    /// TOML file with any of these settings (the command line overrides it).
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Initial conditions [default: plummer, or file when --input is given].
    #[arg(long, value_enum)]
    pub ic: Option<InitialConditions>,
    /// Particle file for --ic file (.npy or .csv).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Test particles appended to the system (.npy or .csv in the --input layout, mass
    /// column 0): they feel every massive particle and exert nothing, at a cost of
    /// N x N_massive per force call.
    #[arg(long, value_name = "FILE")]
    pub test_particles: Option<PathBuf>,
    /// Number of particles for plummer and cold-sphere [default: 8192].
    #[arg(short, long)]
    pub n: Option<usize>,
    /// Orbital eccentricity for kepler, in [0, 1) [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    pub eccentricity: Option<f64>,
    /// Seed of the random initial conditions [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Integrator [default: leapfrog].
    #[arg(long, value_parser = named_parser::<IntegratorKind>())]
    #[serde(serialize_with = "by_name::serialize_opt", deserialize_with = "by_name::deserialize_opt")]
    pub integrator: Option<IntegratorKind>,
    /// Step of the leapfrog; largest step of block-hermite [default: 1/256].
    #[arg(long, allow_negative_numbers = true)]
    pub dt: Option<f64>,
    /// Accuracy parameter of the Hermite integrators (Aarseth's criterion) [default: 0.01].
    #[arg(long, allow_negative_numbers = true)]
    pub eta: Option<f64>,
    /// Relative tolerance of the Runge-Kutta integrator [default: 1e-8].
    #[arg(long, allow_negative_numbers = true)]
    pub tolerance: Option<f64>,
    /// Simulated time to reach, in N-body units [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Softening length [default: 1/64 for plummer and cold-sphere and files, 0 otherwise].
    #[arg(long, allow_negative_numbers = true)]
    pub eps: Option<f64>,
    /// Forces: direct (every pair) or tree (Barnes-Hut with quadrupole cells; leapfrog
    /// only; energies then use the tree's potential) [default: direct].
    #[arg(long, value_parser = named_parser::<GravityKind>())]
    #[serde(serialize_with = "by_name::serialize_opt", deserialize_with = "by_name::deserialize_opt")]
    pub gravity: Option<GravityKind>,
    /// Opening angle of --gravity tree (a cell of size s at distance d is taken whole
    /// when s < theta d; with --alpha, the first force's) [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// Gadget's relative opening criterion for --gravity tree: a cell is taken whole when
    /// its estimated error is at most alpha times the target's previous acceleration
    /// (0.001 to 0.005 is customary) [default: the geometric test with theta].
    #[arg(long, allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// Softening kernel (the spline on CPU executors: the CUDA integrators are Plummer's)
    /// [default: plummer].
    #[arg(long, value_parser = named_parser::<Softening>())]
    #[serde(serialize_with = "by_name::serialize_opt", deserialize_with = "by_name::deserialize_opt")]
    pub softening: Option<Softening>,
    /// Executor, as a backend string (the backends' registry: `nbody info` lists the
    /// families and what this build offers) [default: cuda when compiled in with a
    /// device, else cpu].
    #[arg(long, value_name = "BACKEND", help = executor_help())]
    #[serde(default, with = "backend_string")]
    pub executor: Option<Backend>,
    /// Precision [default: f64; f32 with --gravity tree, whose force errors (1e-4 at
    /// theta 0.5 to 1) are a thousand times f32's roundings].
    #[arg(long, value_parser = named_parser::<Precision>())]
    #[serde(serialize_with = "by_name::serialize_opt", deserialize_with = "by_name::deserialize_opt")]
    pub precision: Option<Precision>,
    /// CPU threads, at most the cores the machine runs at once (the same as
    /// --executor cpu:THREADS) [default: all cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// GPUs for --executor cuda: "all" or ordinals such as 0,1 (repeats run several
    /// executors on one GPU; the same as --executor cuda:0,1) [default: device 0 alone].
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Output folder [default: nbody-out].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Simulated time between snapshots [default: t-end, i.e. start and end only].
    #[arg(long, allow_negative_numbers = true)]
    pub snapshot_every: Option<f64>,
    /// Snapshot file format [default: npy].
    #[arg(long, value_enum)]
    pub format: Option<SnapshotFormat>,
    /// Units of the input file, of every time given (t-end, dt, the output intervals) and
    /// of every output: LENGTH,MASS,TIME (au,msun,yr; kpc,1e10msun,gyr; units: cm m km
    /// au pc kpc mpc ly rsun rearth rjup, g kg msun mearth mjup, s min h day yr kyr myr
    /// gyr), or G=VALUE (units in which G has that value). Generated initial conditions
    /// are in N-body units of the given length and mass [default: nbody, G = 1].
    #[arg(long, value_parser = Units::parse)]
    pub units: Option<Units>,
    /// Simulated time between energy samples [default: t-end / 128, at least one step].
    #[arg(long, allow_negative_numbers = true)]
    pub energy_every: Option<f64>,
    /// Simulated time between checkpoints (and at least every 10 minutes of wall time)
    /// [default: snapshot-every].
    #[arg(long, allow_negative_numbers = true)]
    pub checkpoint_every: Option<f64>,
    /// Continue the run whose output folder is DIR from its newest valid checkpoint
    /// (its settings come from the checkpoint).
    #[arg(long, value_name = "DIR")]
    #[serde(skip)]
    pub resume: Option<PathBuf>,
    /// Cells per side of the density maps [default: about 2 sqrt(N), 64 to 512].
    #[arg(long)]
    pub pixels: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    #[serde(skip)]
    pub quiet: bool,
    /// Replace the outputs of another run found in --out (a run refuses a folder that
    /// holds another run's outputs otherwise).
    #[arg(long, conflicts_with = "resume")]
    #[serde(skip)]
    pub overwrite: bool,
}

/// Every setting of a run, resolved and checked.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct RunSettings {
    /// Initial conditions.
    pub ic: InitialConditions,
    /// Particle file (for `ic = file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<PathBuf>,
    /// Test particles appended to the system.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_particles: Option<PathBuf>,
    /// Particles (generated ICs; for files, the file's count).
    pub n: usize,
    /// Kepler eccentricity.
    pub eccentricity: f64,
    /// Seed.
    pub seed: u64,
    /// Integrator.
    #[serde(serialize_with = "by_name::serialize")]
    pub integrator: IntegratorKind,
    /// Leapfrog step / largest block step.
    pub dt: f64,
    /// Hermite accuracy.
    pub eta: f64,
    /// Runge-Kutta tolerance.
    pub tolerance: f64,
    /// End time.
    pub t_end: f64,
    /// Softening.
    pub eps: f64,
    /// Softening kernel.
    #[serde(serialize_with = "by_name::serialize")]
    pub softening: Softening,
    /// Forces.
    #[serde(serialize_with = "by_name::serialize")]
    pub gravity: GravityKind,
    /// Opening angle of the tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theta: Option<f64>,
    /// Relative opening criterion of the tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Executor (a backend string: threads and devices included).
    #[serde(serialize_with = "backend_string::serialize_one")]
    pub executor: Backend,
    /// Precision.
    #[serde(serialize_with = "by_name::serialize")]
    pub precision: Precision,
    /// Output folder.
    pub out: PathBuf,
    /// Time between snapshots.
    pub snapshot_every: f64,
    /// Snapshot format (absent in settings written before it existed: npy).
    #[serde(default)]
    pub format: SnapshotFormat,
    /// Units of the files, times and outputs (absent before it existed: N-body units).
    /// Every time above is in these units; the run converts them (see `model`).
    #[serde(default, skip_serializing_if = "Units::is_nbody")]
    pub units: Units,
    /// For the model's copy ([`RunSettings::model`]): the run's own dt, t-end and
    /// snapshot, energy and checkpoint intervals, which `to_toml` writes.
    #[serde(skip)]
    pub user_times: Option<[f64; 5]>,
    /// Time between energy samples.
    pub energy_every: f64,
    /// Time between checkpoints.
    pub checkpoint_every: f64,
    /// Density map size.
    pub pixels: usize,
    /// True when `pixels` is the default (recomputed once a file gives N).
    #[serde(skip)]
    pub pixels_auto: bool,
    /// No progress bar.
    #[serde(skip)]
    pub quiet: bool,
}

impl RunArgs {
    /// Reads a settings file (TOML, the long option names as keys).
    ///
    /// ```
    /// let a = nbody::cli::settings::RunArgs::from_toml("n = 100\nt-end = 0.5\nintegrator = \"hermite\"").unwrap();
    /// assert_eq!(a.n, Some(100));
    /// assert!(nbody::cli::settings::RunArgs::from_toml("steps = 3").is_err()); // unknown key
    /// ```
    pub fn from_toml(text: &str) -> Result<Self> {
        Ok(toml::from_str(text)?)
    }

    /// Fills what `self` leaves unset from `file`.
    fn or(self, file: RunArgs) -> RunArgs {
        RunArgs {
            config: self.config,
            ic: self.ic.or(file.ic),
            input: self.input.or(file.input),
            test_particles: self.test_particles.or(file.test_particles),
            n: self.n.or(file.n),
            eccentricity: self.eccentricity.or(file.eccentricity),
            seed: self.seed.or(file.seed),
            integrator: self.integrator.or(file.integrator),
            dt: self.dt.or(file.dt),
            eta: self.eta.or(file.eta),
            tolerance: self.tolerance.or(file.tolerance),
            t_end: self.t_end.or(file.t_end),
            eps: self.eps.or(file.eps),
            softening: self.softening.or(file.softening),
            gravity: self.gravity.or(file.gravity),
            theta: self.theta.or(file.theta),
            alpha: self.alpha.or(file.alpha),
            executor: self.executor.or(file.executor),
            precision: self.precision.or(file.precision),
            threads: self.threads.or(file.threads),
            devices: self.devices.or(file.devices),
            out: self.out.or(file.out),
            snapshot_every: self.snapshot_every.or(file.snapshot_every),
            format: self.format.or(file.format),
            units: self.units.or(file.units),
            energy_every: self.energy_every.or(file.energy_every),
            checkpoint_every: self.checkpoint_every.or(file.checkpoint_every),
            resume: self.resume,
            pixels: self.pixels.or(file.pixels),
            quiet: self.quiet,
            overwrite: self.overwrite,
        }
    }

    /// Merges the `--config` file (if any), applies the defaults and checks every value.
    /// `cuda_available` picks the default executor.
    pub fn resolve(self, cuda_available: bool) -> Result<RunSettings> {
        let args = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
                let file = RunArgs::from_toml(&text).with_context(|| format!("{}", path.display()))?;
                self.or(file)
            }
            None => self,
        };
        let ic =
            args.ic.unwrap_or(if args.input.is_some() { InitialConditions::File } else { InitialConditions::Plummer });
        if ic == InitialConditions::File && args.input.is_none() {
            bail!("--ic file needs --input FILE");
        }
        if ic != InitialConditions::File && args.input.is_some() {
            bail!(
                "--input is only used with --ic file (got --ic {})",
                ic.to_possible_value().map_or("?".into(), |v| v.get_name().to_owned())
            );
        }
        let n = match ic {
            InitialConditions::Plummer | InitialConditions::ColdSphere => args.n.unwrap_or(8192),
            InitialConditions::Kepler => 2,
            InitialConditions::Figure8 => 3,
            InitialConditions::File => 0,
        };
        if matches!(ic, InitialConditions::Plummer | InitialConditions::ColdSphere) && n == 0 {
            bail!("--n must be at least 1 (got 0)");
        }
        let t_end = args.t_end.unwrap_or(1.0);
        positive("--t-end", t_end)?;
        let dt = args.dt.unwrap_or(1.0 / 256.0);
        positive("--dt", dt)?;
        let eta = args.eta.unwrap_or(0.01);
        positive("--eta", eta)?;
        let tolerance = args.tolerance.unwrap_or(1e-8);
        positive("--tolerance", tolerance)?;
        let default_eps =
            if matches!(ic, InitialConditions::Kepler | InitialConditions::Figure8) { 0.0 } else { 1.0 / 64.0 };
        let eps = args.eps.unwrap_or(default_eps);
        if !(eps.is_finite() && eps >= 0.0) {
            bail!("--eps must be zero or positive and finite (got {eps})");
        }
        let eccentricity = args.eccentricity.unwrap_or(0.5);
        if !(0.0..1.0).contains(&eccentricity) {
            bail!("--eccentricity must be in [0, 1) (got {eccentricity})");
        }
        let gravity = args.gravity.unwrap_or(GravityKind::Direct);
        // A tree's force errors (1e-4) are a thousand times f32's roundings: f64 would
        // double its cost and change nothing a user can see.
        let precision = args.precision.unwrap_or(match gravity {
            GravityKind::Tree => Precision::F32,
            GravityKind::Direct => Precision::F64,
        });
        let executor = backend(args.executor, args.threads, args.devices.as_deref(), cuda_available, precision)?;
        let integrator = args.integrator.unwrap_or(IntegratorKind::Leapfrog);
        check_steps(integrator, dt, t_end)?;
        if integrator.needs_f64() && precision == Precision::F32 {
            bail!("--integrator {integrator} needs --precision f64 (its step, from f32 forces, collapses)");
        }
        let format = args.format.unwrap_or_default();
        if format == SnapshotFormat::Hdf5 && !cfg!(feature = "hdf5") {
            bail!("--format hdf5: this build writes no HDF5 (build with --features hdf5, which needs libhdf5-dev)");
        }
        let snapshot_every = args.snapshot_every.unwrap_or(t_end);
        positive("--snapshot-every", snapshot_every)?;
        let energy_every = args.energy_every.unwrap_or(t_end / 128.0);
        positive("--energy-every", energy_every)?;
        let checkpoint_every = args.checkpoint_every.unwrap_or(snapshot_every);
        positive("--checkpoint-every", checkpoint_every)?;
        if t_end / snapshot_every > 1e5 || t_end / energy_every > 1e7 || t_end / checkpoint_every > 1e5 {
            bail!(
                "--snapshot-every / --energy-every would write too many outputs (more than 1e5 snapshots or 1e7 samples)"
            );
        }
        let (theta, alpha) = match gravity {
            GravityKind::Direct => {
                if args.theta.is_some() || args.alpha.is_some() {
                    bail!("--theta and --alpha set the tree: they need --gravity tree");
                }
                (None, None)
            }
            GravityKind::Tree => {
                if args.integrator.is_some_and(|i| i != IntegratorKind::Leapfrog) {
                    bail!(
                        "--gravity tree steps with the leapfrog only (a tree force has no jerk for Hermite, and Runge-Kutta's error control would chase the tree's noise): use --integrator leapfrog"
                    );
                }
                let theta = args.theta.unwrap_or(0.5);
                positive("--theta", theta)?;
                if let Some(alpha) = args.alpha {
                    positive("--alpha", alpha)?;
                }
                (Some(theta), args.alpha)
            }
        };
        let pixels = args.pixels.unwrap_or_else(|| default_pixels(n));
        if !(16..=4096).contains(&pixels) {
            bail!("--pixels must be in 16..=4096 (got {pixels})");
        }
        Ok(RunSettings {
            ic,
            input: args.input,
            test_particles: args.test_particles,
            n,
            eccentricity,
            seed: args.seed.unwrap_or(1),
            integrator,
            dt,
            eta,
            tolerance,
            t_end,
            eps,
            softening: args.softening.unwrap_or_default(),
            gravity,
            theta,
            alpha,
            executor,
            precision,
            out: args.out.unwrap_or_else(|| PathBuf::from("nbody-out")),
            snapshot_every,
            format,
            units: args.units.unwrap_or_default(),
            user_times: None,
            checkpoint_every,
            energy_every,
            pixels,
            pixels_auto: args.pixels.is_none(),
            quiet: args.quiet,
        })
    }
}

impl RunSettings {
    /// The settings as TOML, readable back with `--config`: times in the run's units
    /// (`units`), also for the model's copy.
    pub fn to_toml(&self) -> String {
        let user = match self.user_times {
            Some([dt, t_end, snapshot_every, energy_every, checkpoint_every]) => RunSettings {
                dt,
                t_end,
                snapshot_every,
                energy_every,
                checkpoint_every,
                user_times: None,
                ..self.clone()
            },
            None => self.clone(),
        };
        toml::to_string(&user).unwrap_or_default()
    }

    /// The library's plan of this run (call it on [`RunSettings::model`]'s copy: the
    /// plan is in N-body units); block Hermite steps at most `block_dt`.
    ///
    /// ```
    /// let s = nbody::cli::settings::RunArgs::from_toml("gravity = \"tree\"\nalpha = 0.005").unwrap().resolve(false).unwrap();
    /// let plan = s.model().plan(1.0 / 256.0).unwrap();
    /// assert!(matches!(plan.gravity, nbody::simulation::Gravity::Tree { theta: 0.5, .. }));
    /// ```
    pub fn plan(&self, block_dt: f64) -> Result<crate::simulation::Plan> {
        let solver = self.gravity;
        let gravity = crate::simulation::Gravity::of(solver, self.theta, self.alpha)?;
        Ok(crate::simulation::Plan {
            integrator: self.integrator,
            gravity,
            precision: self.precision,
            softening: self.softening,
            eps: self.eps,
            dt: if self.integrator.blocks() { block_dt } else { self.dt },
            eta: self.eta,
            tolerance: self.tolerance,
        })
    }

    /// The settings the integrators run with: every time in the model's N-body units
    /// (times `units.scale()`); the same numbers for N-body units.
    ///
    /// ```
    /// let a = nbody::cli::settings::RunArgs::from_toml("units = \"au,msun,yr\"\nt-end = 1.0").unwrap();
    /// let s = a.resolve(false).unwrap();
    /// let m = s.model();
    /// assert!((m.t_end - 2.0 * std::f64::consts::PI).abs() < 1e-3); // a year is about 2 pi
    /// assert_eq!(m.to_toml(), s.to_toml());
    /// ```
    pub fn model(&self) -> RunSettings {
        if self.user_times.is_some() {
            return self.clone();
        }
        let k = self.units.scale();
        RunSettings {
            dt: self.dt * k,
            t_end: self.t_end * k,
            snapshot_every: self.snapshot_every * k,
            energy_every: self.energy_every * k,
            checkpoint_every: self.checkpoint_every * k,
            user_times: Some([self.dt, self.t_end, self.snapshot_every, self.energy_every, self.checkpoint_every]),
            ..self.clone()
        }
    }
}

/// The backend of `--executor`, `--threads` and `--devices` (the last two are the
/// older spellings of `cpu:THREADS` and `cuda:DEVICES`; given with a backend that says
/// otherwise, they are an error, not a silent choice), checked for calls in `precision`
/// before any work.
pub(super) fn backend(
    executor: Option<Backend>,
    threads: Option<usize>,
    devices: Option<&str>,
    cuda: bool,
    precision: Precision,
) -> Result<Backend> {
    let given = executor.is_some();
    let gpu = Backend::Cuda { devices: Devices::One(0), arithmetic: Arithmetic::Native };
    let b = executor.unwrap_or(if cuda { gpu } else { Backend::Cpu { threads: None } });
    if threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    let mut b = b
        .and_threads(threads)
        .map_err(|_| anyhow::anyhow!("--threads and --executor disagree: give the threads once"))?;
    if let Some(d) = devices {
        let Backend::Cuda { arithmetic: Arithmetic::Native, devices: on } = &b else {
            bail!("--devices picks GPUs: it needs --executor cuda");
        };
        let asked: Backend = format!("cuda:{d}").parse().map_err(|_| {
            anyhow::anyhow!("--devices must be all or device ordinals separated by commas, such as 0,1 (got {d})")
        })?;
        if given && *on != Devices::One(0) && b != asked {
            bail!("--devices {d} and --executor {b} disagree: give the devices once");
        }
        b = asked;
    }
    b.check_for(precision.name()).map_err(option_error)?;
    Ok(b)
}

/// Backends in TOML as their strings (`executor = "cpu:8"`).
mod backend_string {
    use super::Backend;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(b: &Option<Backend>, s: S) -> Result<S::Ok, S::Error> {
        match b {
            Some(b) => s.serialize_str(&b.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn serialize_one<S: Serializer>(b: &Backend, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&b.to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Backend>, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

/// About two cells per particle along a side (a multiple of 8, 64 to 512): dense
/// enough that the core of a Plummer sphere shows as density, not as single dots.
pub fn default_pixels(n: usize) -> usize {
    let d = (2.0 * (n.max(1) as f64).sqrt()) as usize / 8 * 8;
    d.clamp(64, 512)
}

fn positive(name: &str, x: f64) -> Result<()> {
    if !(x.is_finite() && x > 0.0) {
        bail!("{name} must be positive and finite (got {x})");
    }
    Ok(())
}

/// Fixed-step runs: refuses more than 2^40 steps, and a step lost against the end time
/// in double precision.
pub fn check_steps(integrator: IntegratorKind, dt: f64, t_end: f64) -> Result<()> {
    // Adaptive integrators choose their own steps: the run loop watches their progress.
    if !matches!(integrator, IntegratorKind::Leapfrog | IntegratorKind::BlockHermite) {
        return Ok(());
    }
    if t_end + dt == t_end {
        bail!("--dt {dt:e} is lost against --t-end {t_end:e} in double precision (t + dt == t): use a larger --dt");
    }
    let steps = t_end / dt;
    if integrator == IntegratorKind::Leapfrog && steps > (1u64 << 40) as f64 {
        bail!("--t-end / --dt is {steps:.3e} steps, more than 2^40 (1.1e12): shorten --t-end or lengthen --dt");
    }
    Ok(())
}

#[cfg(test)]
mod step_tests {
    use super::*;

    #[test]
    fn steps_are_bounded() {
        assert!(check_steps(IntegratorKind::Leapfrog, 1.0 / 256.0, 1e300).is_err());
        assert!(check_steps(IntegratorKind::BlockHermite, 1.0 / 256.0, 1e300).is_err()); // dt lost
        assert!(check_steps(IntegratorKind::Hermite, 1.0 / 256.0, 1e300).is_ok()); // checked while running
        assert!(check_steps(IntegratorKind::Leapfrog, 1.0 / 256.0, 1e6).is_ok());
        assert!(check_steps(IntegratorKind::Leapfrog, 1e-9, 1e4).is_err()); // 1e13 steps
    }
}
