//! `nbody run` (and `nbody` with no arguments): evolve a system, with a progress bar,
//! snapshots, an energy CSV, density maps and a summary. Ctrl-C stops after the current
//! step and still writes everything.

use super::files::{particles, read_table, write_atomic, write_table, COLUMNS};
use super::plot::{density_png, energy_png, Panel};
use super::settings::{InitialConditions, IntegratorKind, RunArgs, RunSettings};
use super::sim::{Host, Row, Simulation};
use super::team::{ReportedElsewhere, Team};
use super::{ExecutorKind, Precision};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nbody_core::projection::{Plane, Projection};
use nbody_core::{Executor, Particle, Real, Reference, Velocity};
use nbody_cpu::{CpuExecutor, CpuReal, MixedExecutor, Parallelism};
use nbody_integrators::{ics, BlockHermite, Diagnostics, DormandPrince, Hermite, Integrator, Leapfrog, State, Words};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The precisions the command runs in: those of every executor compiled in.
#[cfg(feature = "cuda")]
pub trait CliReal: CpuReal + nbody_cuda::DeviceReal {
    /// The mixed-precision executor, where it exists for this precision.
    fn mixed(par: Parallelism) -> Result<Box<dyn Executor<Self>>>;
    /// `gpu` as this precision's host-slice executor: mixed (f64 only) when it was
    /// opened as the mixed-precision one.
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Executor<Self>>>;
}
/// The precisions the command runs in: those of every executor compiled in.
#[cfg(not(feature = "cuda"))]
pub trait CliReal: CpuReal {
    /// The mixed-precision executor, where it exists for this precision.
    fn mixed(par: Parallelism) -> Result<Box<dyn Executor<Self>>>;
}

impl CliReal for f32 {
    fn mixed(_: Parallelism) -> Result<Box<dyn Executor<f32>>> {
        bail!("--executor mixed computes f64 results: use --precision f64")
    }
    #[cfg(feature = "cuda")]
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Executor<f32>>> {
        if kind == ExecutorKind::CudaMixed {
            bail!("--executor cuda-mixed computes f64 results: use --precision f64")
        }
        Ok(Box::new(gpu))
    }
}

impl CliReal for f64 {
    fn mixed(par: Parallelism) -> Result<Box<dyn Executor<f64>>> {
        Ok(Box::new(MixedExecutor::new(par)))
    }
    #[cfg(feature = "cuda")]
    fn cuda(gpu: nbody_cuda::CudaExecutor, kind: ExecutorKind) -> Result<Box<dyn Executor<f64>>> {
        Ok(if kind == ExecutorKind::CudaMixed {
            Box::new(nbody_cuda::CudaMixedExecutor::from_executor(gpu))
        } else {
            Box::new(gpu)
        })
    }
}

/// Threads as the executors take them.
pub fn parallelism(threads: usize) -> Parallelism {
    Parallelism::threads(threads)
}

/// The CUDA executor a run found at start-up and hands on, so a run creates one CUDA
/// context (never one to probe and another to compute).
#[cfg(feature = "cuda")]
type Gpu = Option<nbody_cuda::CudaExecutor>;
/// Without CUDA compiled in there is never one.
#[cfg(not(feature = "cuda"))]
type Gpu = Option<std::convert::Infallible>;

/// The CUDA executor of `kind` (`cuda`, or `cuda-mixed`: the same executor running its
/// mixed-precision kernels for f64), or why there is none.
#[cfg(feature = "cuda")]
pub fn cuda_executor(kind: ExecutorKind) -> Result<nbody_cuda::CudaExecutor> {
    let made = if kind == ExecutorKind::CudaMixed {
        nbody_cuda::CudaMixedExecutor::new().map(nbody_cuda::CudaMixedExecutor::into_executor)
    } else {
        nbody_cuda::CudaExecutor::new()
    };
    made.map_err(|e| anyhow::anyhow!("--executor {}: {e}", kind.name()))
}

/// The devices of `--devices` (`all`, or ordinals such as `0,1`).
#[cfg(feature = "cuda")]
pub fn multi_device(list: &str) -> Result<nbody_cuda::MultiDevice> {
    let made = if list == "all" {
        nbody_cuda::MultiDevice::new()
    } else {
        let ordinals: Vec<u32> = list.split(',').filter_map(|d| d.trim().parse().ok()).collect();
        nbody_cuda::MultiDevice::on_devices(&ordinals)
    };
    made.map_err(|e| anyhow::anyhow!("--devices {list}: {e}"))
}

/// A host executor of the kind asked for (`cuda` runs through the host-slice entry
/// points; the leapfrog uses the device-resident path instead).
pub fn host_executor<T: CliReal>(kind: ExecutorKind, threads: usize) -> Result<Box<dyn Executor<T>>> {
    Ok(match kind {
        ExecutorKind::Cpu => Box::new(CpuExecutor::new(parallelism(threads))),
        ExecutorKind::Mixed => T::mixed(parallelism(threads))?,
        ExecutorKind::Reference => Box::new(Reference),
        #[cfg(feature = "cuda")]
        ExecutorKind::Cuda | ExecutorKind::CudaMixed => T::cuda(cuda_executor(kind)?, kind)?,
        #[cfg(not(feature = "cuda"))]
        ExecutorKind::Cuda | ExecutorKind::CudaMixed => {
            bail!("--executor {}: this nbody was built without CUDA (build with --features cuda)", kind.name())
        }
    })
}

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
        bail!("--executor {}: this nbody was built without CUDA (build with --features cuda)", s.executor.name());
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
fn check_memory(s: &RunSettings, n: usize, gpu: &Gpu) -> Result<()> {
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

fn convert<T: Real>(pos: &[Particle<f64>], vel: &[Velocity<f64>]) -> State<T> {
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
fn power_of_two_below(x: f64) -> f64 {
    2f64.powi(x.log2().floor() as i32)
}

fn integrator<T: Real>(s: &RunSettings, block_dt: f64) -> Result<Box<dyn Integrator<T>>> {
    let eps = T::from_f64(s.eps);
    Ok(match s.integrator {
        IntegratorKind::Leapfrog => Box::new(Leapfrog::new(s.dt, eps)?),
        IntegratorKind::Hermite => Box::new(Hermite::new(s.eta, eps)?),
        IntegratorKind::BlockHermite => Box::new(BlockHermite::new(s.eta, block_dt, eps)?),
        IntegratorKind::Rk => Box::new(DormandPrince::new(s.tolerance, s.tolerance, eps)?),
    })
}

fn evolve<T: CliReal>(
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
    let mut exec: Box<dyn Executor<T>> = match gpu {
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
fn schedule(k: u64, every: f64, grid: f64, t_end: f64) -> f64 {
    let t = k as f64 * every;
    let t = if grid > 0.0 { (t / grid).ceil() * grid } else { t };
    t.min(t_end)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

struct Energy {
    rows: Vec<f64>,
    e0: f64,
    p0: [f64; 3],
    l0: [f64; 3],
    /// Σ m |v| at the start: the scale momentum errors are relative to.
    p_scale: f64,
    l_scale: f64,
}

const ENERGY_COLUMNS: [&str; 13] = [
    "time",
    "steps",
    "kinetic",
    "potential",
    "total",
    "rel_energy_error",
    "px",
    "py",
    "pz",
    "lx",
    "ly",
    "lz",
    "virial_ratio",
];

impl Energy {
    fn record(&mut self, t: f64, steps: u64, d: &Diagnostics) {
        let rel = (d.total - self.e0) / self.e0.abs();
        self.rows.extend([t, steps as f64, d.kinetic, d.potential, d.total, rel]);
        self.rows.extend(d.momentum);
        self.rows.extend(d.angular_momentum);
        self.rows.push(d.virial_ratio);
    }

    fn errors(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.rows.chunks(ENERGY_COLUMNS.len()).map(|r| (r[0], r[5]))
    }
}

/// Where the run loop stands: what a checkpoint saves besides the simulation.
struct Progress {
    energy: Energy,
    snapshots: u64,
    k_energy: u64,
    k_snap: u64,
    k_ckpt: u64,
    last: Diagnostics,
    /// Centre and half-width of the density windows (the same at start and end).
    com: [f64; 3],
    half: f64,
}

fn diag_words(d: &Diagnostics) -> [f64; 13] {
    let (p, l, c) = (d.momentum, d.angular_momentum, d.centre_of_mass);
    [d.kinetic, d.potential, d.total, p[0], p[1], p[2], l[0], l[1], l[2], c[0], c[1], c[2], d.virial_ratio]
}

impl Progress {
    fn words(&self) -> Vec<u64> {
        let e = &self.energy;
        let mut w = vec![self.snapshots, self.k_energy, self.k_snap, self.k_ckpt];
        let mut f = vec![e.e0, e.p0[0], e.p0[1], e.p0[2], e.l0[0], e.l0[1], e.l0[2], e.p_scale, e.l_scale];
        f.extend(self.com);
        f.push(self.half);
        f.extend(diag_words(&self.last));
        w.extend(f.iter().map(|x| x.to_bits()));
        w.push(e.rows.len() as u64);
        w.extend(e.rows.iter().map(|x| x.to_bits()));
        w
    }

    fn from_words(words: &[u64]) -> Result<Self> {
        let mut w = Words::new(words);
        let (snapshots, k_energy, k_snap, k_ckpt) = (w.word()?, w.word()?, w.word()?, w.word()?);
        let mut f = [0.0; 26];
        for x in &mut f {
            *x = w.f64()?;
        }
        let n = w.len(1)?;
        let rows = (0..n).map(|_| w.f64()).collect::<Result<Vec<f64>, _>>()?;
        let d = &f[13..];
        let last = Diagnostics {
            kinetic: d[0],
            potential: d[1],
            total: d[2],
            momentum: [d[3], d[4], d[5]],
            angular_momentum: [d[6], d[7], d[8]],
            centre_of_mass: [d[9], d[10], d[11]],
            virial_ratio: d[12],
        };
        let energy =
            Energy { rows, e0: f[0], p0: [f[1], f[2], f[3]], l0: [f[4], f[5], f[6]], p_scale: f[7], l_scale: f[8] };
        Ok(Self { energy, snapshots, k_energy, k_snap, k_ckpt, last, com: [f[9], f[10], f[11]], half: f[12] })
    }

    fn windows(&self) -> [(Plane, [f64; 3], f64); 2] {
        [(Plane::XY, self.com, self.half), (Plane::XZ, self.com, self.half)]
    }
}

/// Writes a checkpoint (and the energy rows so far) when the simulation can give one.
fn checkpoint(s: &RunSettings, sim: &mut dyn Simulation, p: &Progress, team: &Team) -> Result<()> {
    if let Some(words) = sim.save()? {
        team.on_root(|| {
            write_table(&s.out.join("energy.csv"), &ENERGY_COLUMNS, &p.energy.rows)?;
            let saved = super::checkpoint::Saved { settings: s.to_toml(), run: p.words(), sim: words };
            super::checkpoint::write(&s.out, sim.steps(), &saved)
        })?;
    }
    Ok(())
}

/// Wall time after which a checkpoint is written even between scheduled ones.
const CHECKPOINT_WALL: std::time::Duration = std::time::Duration::from_secs(600);

fn drive(
    s: &RunSettings,
    mut sim: Box<dyn Simulation + '_>,
    label: &str,
    grid: f64,
    stop: &AtomicBool,
    team: &Team,
    resume: Option<super::checkpoint::Saved>,
) -> Result<bool> {
    let wall = Instant::now();
    // Every rank stops at the same step: the flag is agreed at each check.
    let stop = || team.any(stop.load(Ordering::SeqCst));
    let mut p = match resume {
        Some(saved) => {
            sim.restore(&mut Words::new(&saved.sim))?;
            let p = Progress::from_words(&saved.run)?;
            if team.is_root() {
                println!("  # resumed at t = {} after {} steps", sim.time(), sim.steps());
            }
            p
        }
        None => {
            let d0 = sim.diagnostics()?;
            // The first diagnostics evaluated the force once: the run's cost follows from it.
            let per_force = wall.elapsed().as_secs_f64();
            if team.is_root() {
                println!("{}", estimate(s, per_force));
            }
            let first = sim.snapshot()?;
            let speed = |r: &Row| (r[4] * r[4] + r[5] * r[5] + r[6] * r[6]).sqrt();
            let p_scale: f64 = first.iter().map(|r| r[3] * speed(r)).sum();
            let l_scale: f64 =
                first.iter().map(|r| r[3] * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt() * speed(r)).sum();
            let mut energy = Energy {
                rows: Vec::new(),
                e0: d0.total,
                p0: d0.momentum,
                l0: d0.angular_momentum,
                p_scale: p_scale.max(f64::MIN_POSITIVE),
                l_scale: l_scale.max(f64::MIN_POSITIVE),
            };
            energy.record(0.0, 0, &d0);
            team.on_root(|| write_snapshot(s, 0, &first))?;
            let [(_, com, half), _] = windows(&first);
            let p = Progress { energy, snapshots: 0, k_energy: 1, k_snap: 1, k_ckpt: 1, last: d0, com, half };
            write_density(s, &mut *sim, &p.windows(), "start", team)?;
            p
        }
    };
    let bar = progress_bar(s.quiet || !team.is_root());
    let mut interrupted = false;
    let mut last_ckpt = Instant::now();
    'run: loop {
        let next_energy = schedule(p.k_energy, s.energy_every, grid, s.t_end);
        let next_snap = schedule(p.k_snap, s.snapshot_every, grid, s.t_end);
        let next_ckpt = schedule(p.k_ckpt, s.checkpoint_every, grid, s.t_end);
        let until = next_energy.min(next_snap).min(next_ckpt);
        let mut before = sim.time();
        while !sim.step(until)? {
            team.fault_point(sim.steps())?;
            check_progress(s, &*sim, before)?;
            before = sim.time();
            show(&bar, s, &*sim, &wall, team.size());
            if stop() {
                interrupted = true;
                break 'run;
            }
            if team.any(last_ckpt.elapsed() > CHECKPOINT_WALL) {
                checkpoint(s, &mut *sim, &p, team)?;
                last_ckpt = Instant::now();
            }
        }
        show(&bar, s, &*sim, &wall, team.size());
        if close(until, next_energy) {
            p.last = sim.diagnostics()?;
            p.energy.record(sim.time(), sim.steps(), &p.last);
            p.k_energy += 1;
        }
        if close(until, next_snap) {
            p.snapshots += 1;
            let rows = sim.snapshot()?;
            team.on_root(|| write_snapshot(s, p.snapshots, &rows))?;
            p.k_snap += 1;
        }
        // At the end every output is written next: a checkpoint there would only make a
        // resumed run record the end twice.
        if close(until, next_ckpt) && !close(until, s.t_end) {
            p.k_ckpt += 1;
            checkpoint(s, &mut *sim, &p, team)?;
            last_ckpt = Instant::now();
        }
        if close(until, s.t_end) {
            break;
        }
        if stop() {
            interrupted = true;
            break;
        }
    }
    bar.finish_and_clear();
    if interrupted {
        // Stopped between outputs: record where it stopped.
        p.last = sim.diagnostics()?;
        p.energy.record(sim.time(), sim.steps(), &p.last);
        p.snapshots += 1;
        let rows = sim.snapshot()?;
        team.on_root(|| write_snapshot(s, p.snapshots, &rows))?;
    }
    write_density(s, &mut *sim, &p.windows(), "end", team)?;
    let interactions = team.sum(sim.interactions());
    let seconds = wall.elapsed().as_secs_f64();
    team.on_root(|| {
        write_table(&s.out.join("energy.csv"), &ENERGY_COLUMNS, &p.energy.rows)?;
        let errors: Vec<(f64, f64)> = p.energy.errors().collect();
        let title = format!("Energy error: N = {}, {:?}, {}", s.n, s.integrator, s.precision.name());
        energy_png(&s.out.join("energy-error.png"), &title, &errors)?;
        let summary = summary(s, &*sim, label, &p.energy, &p.last, seconds, interactions, p.snapshots + 1, interrupted);
        print!("{summary}");
        write_atomic(&s.out.join("summary.txt"), |w| w.write_all(summary.as_bytes()))
    })?;
    Ok(interrupted)
}

/// The settings echo's last line: the wall time the run should take, from one force
/// evaluation's time (fixed steps), or that time alone (adaptive steps).
fn estimate(s: &RunSettings, per_force: f64) -> String {
    let human = |t: f64| {
        if t < 1e-3 {
            format!("{:.0} us", t * 1e6)
        } else if t < 1.0 {
            format!("{:.1} ms", t * 1e3)
        } else if t < 120.0 {
            format!("{t:.2} s")
        } else if t < 7200.0 {
            format!("{:.1} min", t / 60.0)
        } else {
            format!("{:.1} h", t / 3600.0)
        }
    };
    match s.integrator {
        IntegratorKind::Leapfrog => {
            let steps = (s.t_end / s.dt).ceil();
            format!(
                "  # estimated wall time {} ({steps} steps at {} per force evaluation)",
                human(steps * per_force),
                human(per_force)
            )
        }
        _ => format!(
            "  # {} per force evaluation (adaptive steps: their number is not known in advance)",
            human(per_force)
        ),
    }
}

/// Adaptive steps: refuses a run whose steps stopped advancing the time (lost against t
/// in double precision) or that would take more than 2^40 of them at its current pace.
fn check_progress(s: &RunSettings, sim: &dyn Simulation, before: f64) -> Result<()> {
    let (t, steps) = (sim.time(), sim.steps());
    if t <= before {
        bail!("the step at t = {t:e} no longer advances the time (lost against t in double precision)");
    }
    // Checked from the 65,536th step on, at powers of two (so it costs nothing): a
    // Hermite start can crawl for thousands of tiny steps before its pace settles (the
    // figure-eight takes 16,834 steps to reach t = 0.002, then 129 to t = 0.25).
    if steps >= 1 << 16 && steps.is_power_of_two() {
        let projected = s.t_end / (t / steps as f64);
        if projected.is_nan() || projected > (1u64 << 40) as f64 {
            bail!(
                "after {steps} steps the time is {t:e}: reaching --t-end {:e} would take about {projected:.2e} steps (more than 2^40)",
                s.t_end
            );
        }
    }
    Ok(())
}

fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1000);
    let style =
        ProgressStyle::with_template("[{elapsed_precise}] {wide_bar:.cyan/blue} {percent:>3}%  {msg}  ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

/// Progress; with `ranks` > 1 the rate is this rank's times the number of ranks.
fn show(bar: &ProgressBar, s: &RunSettings, sim: &dyn Simulation, wall: &Instant, ranks: usize) {
    if bar.is_hidden() {
        return;
    }
    let rate = ranks as f64 * sim.interactions() / wall.elapsed().as_secs_f64().max(1e-9);
    bar.set_position((1000.0 * sim.time() / s.t_end).clamp(0.0, 1000.0) as u64);
    bar.set_message(format!("t = {:.4}/{}  steps {}  {:.3e} interactions/s", sim.time(), s.t_end, sim.steps(), rate));
}

fn write_snapshot(s: &RunSettings, k: u64, rows: &[Row]) -> Result<()> {
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    write_table(&s.out.join(format!("snapshot-{k:05}.npy")), &COLUMNS, &flat)
}

/// The two density windows (x-y and x-z), centred on the centre of mass, half-width a
/// little over the 95th percentile of the particles' distance from it (per axis): the
/// same windows at start and end, so the pictures compare.
fn windows(rows: &[Row]) -> [(Plane, [f64; 3], f64); 2] {
    let mass: f64 = rows.iter().map(|r| r[3]).sum();
    let com: [f64; 3] = if mass > 0.0 {
        core::array::from_fn(|k| rows.iter().map(|r| r[3] * r[k]).sum::<f64>() / mass)
    } else {
        core::array::from_fn(|k| rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64)
    };
    let mut d: Vec<f64> = rows.iter().map(|r| (0..3).map(|k| (r[k] - com[k]).abs()).fold(0.0, f64::max)).collect();
    let q = (d.len() * 95 / 100).min(d.len() - 1);
    let (_, q95, _) = d.select_nth_unstable_by(q, f64::total_cmp);
    let half = if *q95 > 0.0 { 1.15 * *q95 } else { 1.0 };
    [(Plane::XY, com, half), (Plane::XZ, com, half)]
}

fn write_density(
    s: &RunSettings,
    sim: &mut dyn Simulation,
    windows: &[(Plane, [f64; 3], f64); 2],
    when: &str,
    team: &Team,
) -> Result<()> {
    let mut grids = Vec::new();
    for &(plane, com, half) in windows {
        let (h, v) = plane.axes();
        let proj = Projection { plane, centre: [com[h], com[v]], half_width: half, pixels: s.pixels };
        let mut grid = vec![0.0; s.pixels * s.pixels];
        sim.project(&proj, &mut grid)?;
        grids.push((plane, grid));
    }
    let panels: Vec<Panel<'_>> = grids
        .iter()
        .map(|(plane, g)| Panel {
            grid: g,
            caption: format!("{}-{} (side {:.3})", &plane.name()[..1], &plane.name()[1..], 2.0 * windows[0].2),
        })
        .collect();
    let title = format!("Projected mass, log scale, t = {:.4} (N = {})", sim.time(), s.n);
    team.on_root(|| density_png(&s.out.join(format!("density-{when}.png")), &title, s.pixels, &panels)).map(drop)
}

#[allow(clippy::too_many_arguments)]
fn summary(
    s: &RunSettings,
    sim: &dyn Simulation,
    label: &str,
    energy: &Energy,
    last: &Diagnostics,
    seconds: f64,
    interactions: f64,
    snapshots: u64,
    interrupted: bool,
) -> String {
    let max_err = energy.errors().map(|e| e.1.abs()).fold(0.0, f64::max);
    let final_err = (last.total - energy.e0) / energy.e0.abs();
    let dp = (0..3).map(|k| (last.momentum[k] - energy.p0[k]).powi(2)).sum::<f64>().sqrt();
    let dl = (0..3).map(|k| (last.angular_momentum[k] - energy.l0[k]).powi(2)).sum::<f64>().sqrt();
    let mut o = String::new();
    let _ = writeln!(o, "{}", if interrupted { "Stopped by Ctrl-C after the current step." } else { "Done." });
    let _ = writeln!(o, "  particles             {}", s.n);
    let _ = writeln!(o, "  executor              {label}, {}", s.precision.name());
    let _ = writeln!(o, "  simulated time        {:.6} of {}", sim.time(), s.t_end);
    let _ = writeln!(o, "  steps                 {}", sim.steps());
    let _ = writeln!(o, "  wall time             {seconds:.3} s");
    let _ = writeln!(o, "  interactions          {:.4e} ({:.4e} per second)", interactions, interactions / seconds);
    let _ = writeln!(
        o,
        "  energy error          {final_err:.3e} at the end, {max_err:.3e} at most (|E(t) - E(0)| / |E(0)|)"
    );
    let _ = writeln!(o, "  momentum change       {dp:.3e} ({:.3e} of sum m|v|)", dp / energy.p_scale);
    let _ = writeln!(o, "  angular momentum      {dl:.3e} ({:.3e} of sum m|x||v|)", dl / energy.l_scale);
    let _ = writeln!(o, "  virial ratio 2T/|W|   {:.4}", last.virial_ratio);
    let _ = writeln!(
        o,
        "  written to {}: settings.toml, {snapshots} snapshot(s), energy.csv, energy-error.png, density-start.png, density-end.png, summary.txt",
        s.out.display()
    );
    o
}
