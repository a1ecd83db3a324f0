//! `nbody run` (and `nbody` with no arguments): evolve a system, with a progress bar,
//! snapshots, an energy CSV, density maps and a summary. Ctrl-C stops after the current
//! step and still writes everything.

use super::Precision;
use super::drive::drive;
use super::executors::{Backend, CliReal, Opened, open};
use super::files::{particles, read_table, write_atomic};
use super::folder::Claim;
use super::settings::{InitialConditions, IntegratorKind, RunArgs, RunSettings};
use super::sim::Simulation;
use super::team::{ReportedElsewhere, Team};
#[cfg(feature = "mpi")]
use crate::simulation::Host;
use anyhow::{Context, Result, bail};
use nbody_core::{Particle, Real, Velocity};
use nbody_integrators::{State, ics};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `nbody run` with `args`, on this process or (under `mpirun`) the ranks of
/// `team`, each owning a contiguous share of the particles; rank 0 reads and writes the
/// files and prints.
pub fn run(args: RunArgs, team: &Team) -> Result<ExitCode> {
    // Ctrl-C and SIGTERM from the start: the first asks the run to stop (before its
    // first step, or after the current one, writing everything); a second ends the
    // process at once (every output is written to a temporary name and renamed, so
    // nothing is left half-written).
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Fails only if a handler is already set (a second run in one process): keep it.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    }
    // --resume DIR: the settings, the loop and the system come from DIR's newest valid
    // checkpoint; the run continues where it was, writing into DIR.
    let args_overwrite = args.overwrite;
    let (args, resume) = match &args.resume {
        Some(dir) => {
            let (path, saved) = super::checkpoint::newest(dir)?;
            let mut from = RunArgs::from_toml(&saved.settings).with_context(|| format!("{}", path.display()))?;
            from.out = Some(dir.clone());
            from.quiet = args.quiet;
            from.overwrite = false;
            (from, Some(saved))
        }
        None => (args, None),
    };
    // Only an unset executor makes the default depend on whether a device is there.
    let mut found = None;
    if args.executor.is_none() && args.config.is_none() && nbody_backends::cuda_compiled() {
        found = "cuda".parse::<Backend>().ok().and_then(|b| b.open().ok());
    }
    // Every rank resolves the same settings; rank 0 alone reports a mistake in them.
    let mut s = args.resolve(found.is_some()).map_err(|e| if team.is_root() { e } else { ReportedElsewhere.into() })?;
    // Runge-Kutta's stages and Hermite6's snap (which needs every rank's source
    // accelerations) are not split across ranks.
    if team.size() > 1 && matches!(s.integrator, IntegratorKind::RungeKutta | IntegratorKind::Hermite6) {
        let e = anyhow::anyhow!(
            "--integrator {} does not run across MPI ranks: use leapfrog, hermite or block-hermite (or one process)",
            s.integrator
        );
        return Err(if team.is_root() { e } else { ReportedElsewhere.into() });
    }
    // Opened before anything is printed or written, so a missing device fails first.
    let mut opened = match found {
        Some(o) => o,
        None => open(&s.executor)?,
    };
    // Before anything large is allocated: will it fit? (Files: once their size is known.)
    if s.ic != InitialConditions::File || resume.is_some() {
        check_memory(&s, s.n, &mut opened)?;
    }
    // The output folder is this run's until it ends: locked, and not another run's.
    let claim = match (resume.is_some(), args_overwrite) {
        (true, _) => Claim::Resume,
        (false, true) => Claim::Overwrite,
        (false, false) => Claim::Fresh,
    };
    let _claimed = team.on_root(|| super::folder::claim(&s.out, claim))?;
    // Rank 0 owns the files: it builds the system, every rank receives it and keeps its
    // share. A resumed run takes its system from the checkpoint instead.
    let rows = if resume.is_some() {
        Vec::new()
    } else {
        let system = team.on_root(|| {
            let system = initial_conditions(&s)?;
            if s.ic == InitialConditions::File {
                check_memory(&s, system.0.len(), &mut opened)?;
            }
            Ok(system)
        })?;
        let rows = team.broadcast_rows(system.map(|(p, v)| super::sim::rows(&p, &v)).unwrap_or_default());
        s.n = rows.len();
        rows
    };
    if s.pixels_auto {
        s.pixels = super::settings::default_pixels(s.n);
    }
    if team.any(stop.load(Ordering::SeqCst)) {
        team.on_root(|| {
            eprintln!("stopped before the first step: nothing written");
            Ok(())
        })?;
        return Ok(ExitCode::from(130));
    }
    team.on_root(|| {
        println!("nbody {} run", env!("CARGO_PKG_VERSION"));
        for line in s.to_toml().lines() {
            println!("  {line}");
        }
        if team.size() > 1 {
            println!(
                "  # across {} MPI ranks, {} to {} particles each",
                team.size(),
                s.n / team.size(),
                s.n.div_ceil(team.size())
            );
        }
        write_atomic(&s.out.join("settings.toml"), |w| w.write_all(s.to_toml().as_bytes()))
    })?;
    let (pos, vel): System = rows[team.share(rows.len())]
        .iter()
        .map(|r| (Particle::new(r[0], r[1], r[2], r[3]), Velocity::new(r[4], r[5], r[6])))
        .unzip();
    let interrupted = match s.precision {
        Precision::F32 => evolve::<f32>(&s, convert(&pos, &vel), &stop, opened, team, resume)?,
        Precision::F64 => evolve::<f64>(&s, convert(&pos, &vel), &stop, opened, team, resume)?,
    };
    Ok(if interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Refuses a run of `n` particles that needs more host (or device) memory than there is.
pub(super) fn check_memory(s: &RunSettings, n: usize, opened: &mut Opened) -> Result<()> {
    let what = format!("a run of {n} particles ({}, {:?}, {})", s.precision.name(), s.integrator, s.executor.family());
    super::resources::check_host(&what, super::resources::run_bytes(n, s.precision, s.integrator, &s.executor))?;
    if let Some(free) = opened.free_device_memory() {
        let need = super::resources::device_bytes(n, s.precision);
        super::resources::check_device(&what, need, Some(free))?;
    }
    Ok(())
}

pub(super) fn convert<T: Real>(pos: &[Particle<f64>], vel: &[Velocity<f64>]) -> State<T> {
    let c = T::from_f64;
    State::new(
        pos.iter().map(|p| Particle::new(c(p.x), c(p.y), c(p.z), c(p.m))).collect(),
        vel.iter().map(|v| Velocity::new(c(v.vx), c(v.vy), c(v.vz))).collect(),
    )
}

/// Positions with masses, and velocities, in f64.
pub type System = (Vec<Particle<f64>>, Vec<Velocity<f64>>);

/// The starting system in f64, test particles (massless) last.
pub fn initial_conditions(s: &RunSettings) -> Result<System> {
    let (mut pos, mut vel) = massive_system(s)?;
    if let Some(path) = &s.test_particles {
        let name = path.display().to_string();
        let table = read_table(path)?;
        one_softening(&table, &name)?;
        let (p, v) = particles(&table, &name)?;
        if let Some(i) = p.iter().position(|q| q.m != 0.0) {
            bail!("{name}: test particle {} has mass {}: test particles are massless (mass column 0)", i + 1, p[i].m);
        }
        let n = p.len();
        pos.extend(p);
        vel.extend(model_velocities(s, v.unwrap_or_else(|| vec![Velocity::new(0.0, 0.0, 0.0); n])));
    }
    Ok((pos, vel))
}

/// Velocities read from a file, in the run's units, as the model's (N-body) ones.
fn model_velocities(s: &RunSettings, mut v: Vec<Velocity<f64>>) -> Vec<Velocity<f64>> {
    let k = s.units.scale();
    if k != 1.0 {
        v.iter_mut().for_each(|u| *u = Velocity::new(u.vx / k, u.vy / k, u.vz / k));
    }
    v
}

fn massive_system(s: &RunSettings) -> Result<System> {
    Ok(match s.ic {
        InitialConditions::Plummer => ics::plummer(s.n, s.seed),
        InitialConditions::ColdSphere => ics::cold_sphere(s.n, s.seed),
        InitialConditions::Kepler => ics::kepler(s.eccentricity, 0.5, 0.5),
        InitialConditions::Figure8 => ics::figure_eight(),
        InitialConditions::File => {
            let path = s.input.as_deref().unwrap_or(Path::new(""));
            let table = read_table(path)?;
            one_softening(&table, &path.display().to_string())?;
            let (p, v) = particles(&table, &path.display().to_string())?;
            let n = p.len();
            (p, model_velocities(s, v.unwrap_or_else(|| vec![Velocity::new(0.0, 0.0, 0.0); n])))
        }
    })
}

/// Refuses a file with an eps column: a run's integrators take one softening (--eps);
/// `nbody accel` reads a length per particle.
fn one_softening(table: &super::files::Table, name: &str) -> Result<()> {
    if super::files::softening_lengths(table).is_some() {
        bail!(
            "{name}: an eps column (a softening per particle): `nbody run` takes one softening, --eps; `nbody accel` reads per-particle lengths"
        );
    }
    Ok(())
}

/// The largest power of two not above `x` (block steps must be dyadic).
pub(super) fn power_of_two_below(x: f64) -> f64 {
    2f64.powi(x.log2().floor() as i32)
}

pub(super) fn evolve<T: CliReal>(
    s: &RunSettings,
    state: State<T>,
    stop: &AtomicBool,
    opened: Opened,
    team: &Team,
    resume: Option<super::checkpoint::Saved>,
) -> Result<bool> {
    // The integrators run in N-body units: the run's times scaled (RunSettings::model).
    let m = s.model();
    // Block steps land on multiples of their largest step: every output time is one.
    let block_dt = power_of_two_below(m.dt.min(m.energy_every).min(m.snapshot_every).min(m.t_end));
    let grid = if s.integrator.blocks() { block_dt } else { 0.0 };
    let (sim, label) = simulation(&m, state, opened, team, block_dt)?;
    if s.units.is_nbody() {
        return drive(s, sim, &label, grid, stop, team, resume);
    }
    let k = s.units.scale();
    let sim = Box::new(super::sim::InUnits::new(sim, k, grid));
    drive(s, sim, &label, grid / k, stop, team, resume)
}

/// The simulation a run drives and its label: the library's choice ([`nbody::simulation::open_in`]:
/// device-resident where the executor can keep the particles, the host path over its
/// forces otherwise); under MPI, the host path across the ranks.
fn simulation<'t, T: CliReal>(
    s: &RunSettings,
    state: State<T>,
    opened: Opened,
    team: &'t Team,
    block_dt: f64,
) -> Result<(Box<dyn Simulation + 't>, String)> {
    let plan = s.plan(block_dt)?;
    if team.size() > 1 && s.theta.is_some() {
        bail!("--gravity tree runs in one process (the tree is not split across MPI ranks): run without mpirun");
    }
    // Under mpirun the ranks share the system; one rank with a GPU keeps the library's
    // device path.
    #[cfg(feature = "mpi")]
    if let (Some(world), None) = (team.world(), s.theta)
        && (team.size() > 1 || !opened.backend().is_cuda())
    {
        return across_ranks(s, &plan, state, opened, team, world);
    }
    let run = crate::simulation::open_in(&plan, state, opened)?;
    Ok((run.sim, run.label))
}

/// The host path across the ranks of an MPI job, each rank stepping its share: sources
/// visit every rank (ring or 2-D, by nbody-mpi's cost rule); integrators reduce their
/// shared steps and diagnostics over the ranks through the executor.
#[cfg(feature = "mpi")]
fn across_ranks<'t, T: CliReal>(
    s: &RunSettings,
    plan: &crate::simulation::Plan,
    state: State<T>,
    opened: Opened,
    team: &'t Team,
    world: &nbody_mpi::mpi::topology::SimpleCommunicator,
) -> Result<(Box<dyn Simulation + 't>, String)> {
    let label = match s.executor.threads() {
        Some(t) => format!("{} ({t} threads)", s.executor),
        None => s.executor.to_string(),
    };
    let exec = opened.into_boxed::<T>().map_err(super::executors::option_error)?;
    let integrator = plan.integrator::<T>()?;
    let scheme = nbody_mpi::Scheme::Auto;
    let dist = nbody_mpi::Distributed::new(exec, world, scheme)?;
    let label = format!("{label} on each of {} MPI ranks ({:?} scheme)", team.size(), scheme.resolve(s.n, team.size()));
    let sim = Host::new(state, integrator, Box::new(dist)).with_all_sources(s.n);
    Ok((Box::new(super::sim::Gathered { sim: Box::new(sim), team, n: s.n }), label))
}
