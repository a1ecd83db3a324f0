//! `nbody run` (and `nbody` with no arguments): evolve a system, with a progress bar,
//! snapshots, an energy CSV, density maps and a summary. Ctrl-C stops after the current
//! step and still writes everything.

use super::drive::drive;
#[cfg(feature = "cuda")]
use super::executors::{cuda_executor, multi_device};
use super::executors::{host_executor, CliReal, Gpu};
use super::files::{particles, read_table, write_atomic};
use super::settings::{InitialConditions, IntegratorKind, RunArgs, RunSettings};
use super::sim::Host;
use super::team::{ReportedElsewhere, Team};
use super::{ExecutorKind, Precision};
use anyhow::{Context, Result};
use nbody_core::projection::Projecting;
use nbody_core::{Particle, Real, Velocity};
use nbody_integrators::{ics, BlockHermite, DormandPrince, Hermite, Integrator, Leapfrog, State};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs `nbody run` with `args`, on this process or (under `mpirun`) the ranks of
/// `team`, each owning a contiguous share of the particles; rank 0 reads and writes the
/// files and prints.
pub fn run(args: RunArgs, team: &Team) -> Result<ExitCode> {
    // --resume DIR: the settings, the loop and the system come from DIR's newest valid
    // checkpoint; the run continues where it was, writing into DIR.
    let (args, resume) = match &args.resume {
        Some(dir) => {
            if team.size() > 1 {
                let e = anyhow::anyhow!("--resume: runs across MPI ranks write no checkpoints yet");
                return Err(if team.is_root() { e } else { ReportedElsewhere.into() });
            }
            let (path, saved) = super::checkpoint::newest(dir)?;
            let mut from = RunArgs::from_toml(&saved.settings).with_context(|| format!("{}", path.display()))?;
            from.out = Some(dir.clone());
            from.quiet = args.quiet;
            (from, Some(saved))
        }
        None => (args, None),
    };
    #[allow(unused_mut)]
    let mut gpu: Gpu = None;
    // Only an unset executor makes the default depend on whether a device is there.
    #[cfg(feature = "cuda")]
    if args.executor.is_none() && args.config.is_none() {
        gpu = nbody_cuda::CudaExecutor::new().ok();
    }
    // Every rank resolves the same settings; rank 0 alone reports a mistake in them.
    let mut s = args.resolve(gpu.is_some()).map_err(|e| if team.is_root() { e } else { ReportedElsewhere.into() })?;
    if team.size() > 1 && s.integrator == IntegratorKind::Rk {
        let e = anyhow::anyhow!(
            "--integrator rk does not run across MPI ranks: use leapfrog, hermite or block-hermite (or one process)"
        );
        return Err(if team.is_root() { e } else { ReportedElsewhere.into() });
    }
    if s.executor.is_cuda() && gpu.is_none() {
        // Fail before anything is printed or written.
        #[cfg(feature = "cuda")]
        {
            gpu = Some(cuda_executor(s.executor)?);
        }
        #[cfg(not(feature = "cuda"))]
        anyhow::bail!(
            "--executor {}: this nbody was built without CUDA (build with --features cuda)",
            s.executor.name()
        );
    }
    // Before anything large is allocated: will it fit? (Files: once their size is known.)
    if s.ic != InitialConditions::File || resume.is_some() {
        check_memory(&s, s.n, &gpu)?;
    }
    // Rank 0 owns the files: it builds the system, every rank receives it and keeps its
    // share. A resumed run takes its system from the checkpoint instead.
    let rows = if resume.is_some() {
        Vec::new()
    } else {
        let system = team.on_root(|| {
            let system = initial_conditions(&s)?;
            if s.ic == InitialConditions::File {
                check_memory(&s, system.0.len(), &gpu)?;
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
        std::fs::create_dir_all(&s.out).with_context(|| format!("creating the output folder {}", s.out.display()))?;
        write_atomic(&s.out.join("settings.toml"), |w| w.write_all(s.to_toml().as_bytes()))
    })?;
    let (pos, vel): System = rows[team.share(rows.len())]
        .iter()
        .map(|r| (Particle::new(r[0], r[1], r[2], r[3]), Velocity::new(r[4], r[5], r[6])))
        .unzip();
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Fails only if a handler is already set (a second run in one process): keep it.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let interrupted = match s.precision {
        Precision::F32 => evolve::<f32>(&s, convert(&pos, &vel), &stop, gpu, team, resume)?,
        Precision::F64 => evolve::<f64>(&s, convert(&pos, &vel), &stop, gpu, team, resume)?,
    };
    Ok(if interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Refuses a run of `n` particles that needs more host (or device) memory than there is.
pub(super) fn check_memory(s: &RunSettings, n: usize, gpu: &Gpu) -> Result<()> {
    let what = format!("a run of {n} particles ({}, {:?}, {})", s.precision.name(), s.integrator, s.executor.name());
    super::resources::check_host(&what, super::resources::run_bytes(n, s.precision, s.integrator, s.executor))?;
    #[cfg(feature = "cuda")]
    if let Some(g) = gpu {
        if s.executor.is_cuda() {
            let need = super::resources::device_bytes(n, s.precision);
            super::resources::check_device(&what, need, g.free_memory().ok())?;
        }
    }
    let _ = gpu;
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

/// The starting system in f64.
pub fn initial_conditions(s: &RunSettings) -> Result<System> {
    Ok(match s.ic {
        InitialConditions::Plummer => ics::plummer(s.n, s.seed),
        InitialConditions::ColdSphere => ics::cold_sphere(s.n, s.seed),
        InitialConditions::Kepler => ics::kepler(s.eccentricity, 0.5, 0.5),
        InitialConditions::Figure8 => ics::figure_eight(),
        InitialConditions::File => {
            let path = s.input.as_deref().unwrap_or(Path::new(""));
            let table = read_table(path)?;
            let (p, v) = particles(&table, &path.display().to_string())?;
            let n = p.len();
            (p, v.unwrap_or_else(|| vec![Velocity::new(0.0, 0.0, 0.0); n]))
        }
    })
}

/// The largest power of two not above `x` (block steps must be dyadic).
pub(super) fn power_of_two_below(x: f64) -> f64 {
    2f64.powi(x.log2().floor() as i32)
}

pub(super) fn integrator<T: Real>(s: &RunSettings, block_dt: f64) -> Result<Box<dyn Integrator<T>>> {
    let eps = T::from_f64(s.eps);
    Ok(match s.integrator {
        IntegratorKind::Leapfrog => Box::new(Leapfrog::new(s.dt, eps)?),
        IntegratorKind::Hermite => Box::new(Hermite::new(s.eta, eps)?),
        IntegratorKind::BlockHermite => Box::new(BlockHermite::new(s.eta, block_dt, eps)?),
        IntegratorKind::Rk => Box::new(DormandPrince::new(s.tolerance, s.tolerance, eps)?),
    })
}

pub(super) fn evolve<T: CliReal>(
    s: &RunSettings,
    state: State<T>,
    stop: &AtomicBool,
    gpu: Gpu,
    team: &Team,
    resume: Option<super::checkpoint::Saved>,
) -> Result<bool> {
    // Block steps land on multiples of their largest step: every output time is one.
    let block_dt = power_of_two_below(s.dt.min(s.energy_every).min(s.snapshot_every).min(s.t_end));
    let grid = if s.integrator == IntegratorKind::BlockHermite { block_dt } else { 0.0 };
    let mut exec: Box<dyn Projecting<T>> = match gpu {
        #[cfg(feature = "cuda")]
        Some(_) if s.executor == ExecutorKind::Cuda && s.devices.is_some() => {
            let multi = multi_device(s.devices.as_deref().unwrap_or("all"))?;
            let label = format!("cuda on devices {:?} (weights {:?})", multi.devices(), multi.weights());
            if s.integrator == IntegratorKind::Leapfrog && team.size() == 1 {
                let sim = super::sim::DeviceLeapfrog::new(multi, &state, s.dt, T::from_f64(s.eps))?;
                return drive(
                    s,
                    Box::new(sim),
                    &format!("{label}, device-resident leapfrog"),
                    grid,
                    stop,
                    team,
                    resume,
                );
            }
            Box::new(multi)
        }
        #[cfg(feature = "cuda")]
        Some(gpu) if s.executor.is_cuda() => {
            if s.integrator == IntegratorKind::Leapfrog && team.size() == 1 {
                let sim = super::sim::DeviceLeapfrog::new(gpu, &state, s.dt, T::from_f64(s.eps))?;
                let label = format!("{} (device-resident leapfrog)", s.executor.name());
                return drive(s, Box::new(sim), &label, grid, stop, team, resume);
            }
            let steps = match s.integrator {
                IntegratorKind::Hermite => Some(nbody_cuda::Steps::Shared),
                IntegratorKind::BlockHermite => Some(nbody_cuda::Steps::Block { dt_max: block_dt }),
                _ => None,
            };
            if let (Some(steps), 1, None) = (steps, team.size(), &resume) {
                let sim = super::sim::DeviceHermiteSim::new(gpu, &state, s.eta, T::from_f64(s.eps), steps)?;
                let label = format!("{} (device-resident Hermite)", s.executor.name());
                return drive(s, Box::new(sim), &label, grid, stop, team, resume);
            }
            T::cuda(gpu, s.executor)?
        }
        _ => host_executor::<T>(s.executor, s.threads)?,
    };
    let label = match s.executor {
        ExecutorKind::Cpu | ExecutorKind::Mixed => format!("{} ({} threads)", s.executor.name(), s.threads),
        other => other.name().to_owned(),
    };
    #[cfg(feature = "mpi")]
    if let Some(world) = team.world() {
        // Sources visit every rank (ring or 2-D, by nbody-mpi's cost rule); integrators
        // reduce their shared steps and diagnostics over the ranks through the executor.
        let scheme = nbody_mpi::Scheme::Auto;
        let mut dist = nbody_mpi::Distributed::new(exec, world, scheme)?;
        let label =
            format!("{label} on each of {} MPI ranks ({:?} scheme)", team.size(), scheme.resolve(s.n, team.size()));
        let sim = Host::new(state, integrator(s, block_dt)?, &mut dist).with_all_sources(s.n);
        return drive(s, Box::new(super::sim::Gathered { sim: Box::new(sim), team }), &label, grid, stop, team, resume);
    }
    let sim = Host::new(state, integrator(s, block_dt)?, exec.as_mut());
    drive(s, Box::new(sim), &label, grid, stop, team, resume)
}

/// Output times: multiples of `every` (rounded up to multiples of `grid` when set),
/// the last one `t_end`.
pub(super) fn schedule(k: u64, every: f64, grid: f64, t_end: f64) -> f64 {
    let t = k as f64 * every;
    let t = if grid > 0.0 { (t / grid).ceil() * grid } else { t };
    t.min(t_end)
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}
