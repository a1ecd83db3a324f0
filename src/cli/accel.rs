//! `nbody accel`: the kernel on particle files, for users of other languages.

use super::Precision;
use super::executors::{Backend, CliReal, host_executor};
use super::files::{particles, read_table, softening_lengths, write_table};
use super::settings::named_parser;
use anyhow::{Result, bail};
use clap::Args;
use nbody_core::Softening;
use nbody_core::{Field, Params, Particle, PerParticle, Real};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nbody accel`.
#[derive(Args, Debug, Clone)]
pub struct AccelArgs {
    /// Sources: .npy or .csv, N x 4 [x y z m] (N x 7 files are accepted; velocities are
    /// ignored). A last column `eps` (N x 5 or N x 8) gives each particle its own softening
    /// length (pairs: Plummer eps_ij^2 = (eps_i^2 + eps_j^2) / 2, the spline the larger).
    #[arg(long, value_name = "FILE")]
    pub sources: PathBuf,
    /// Targets, same formats (only positions and, with sources that have one, the eps
    /// column are used) [default: the sources themselves, each target skipping its own
    /// pair].
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// Output, .npy or .csv: one row [ax ay az phi] per target.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Softening length.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub eps: f64,
    /// Softening kernel (spline: Gadget's cubic spline of support 2.8 eps).
    #[arg(long, value_parser = named_parser::<Softening>(), default_value = "plummer")]
    pub softening: Softening,
    /// Gravitational constant.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub g: f64,
    /// Executor, as a backend string (see `nbody run --help`) [default: cpu].
    #[arg(long, value_name = "BACKEND")]
    pub executor: Option<Backend>,
    /// Precision of the computation (files are read and written in f64).
    #[arg(long, value_parser = super::settings::named_parser::<Precision>(), default_value = "f64")]
    pub precision: Precision,
    /// CPU threads [default: all cores].
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `nbody accel`.
pub fn accel(a: &AccelArgs) -> Result<ExitCode> {
    if !(a.eps.is_finite() && a.eps >= 0.0) {
        bail!("--eps must be zero or positive and finite (got {})", a.eps);
    }
    if !(a.g.is_finite() && a.g > 0.0) {
        bail!("--g must be positive and finite (got {})", a.g);
    }
    let backend = super::settings::backend(a.executor.clone(), a.threads, None, false, a.precision)?;
    if super::files::Format::of(&a.out)? == super::files::Format::Hdf5 {
        bail!("{}: accelerations are written as .npy or .csv", a.out.display());
    }
    let source_table = read_table(&a.sources)?;
    let (sources, _) = particles(&source_table, &a.sources.display().to_string())?;
    let source_eps = softening_lengths(&source_table);
    let (targets, target_eps) = match &a.targets {
        Some(path) => {
            let table = read_table(path)?;
            (Some(particles(&table, &path.display().to_string())?.0), softening_lengths(&table))
        }
        None => (None, source_eps.clone()),
    };
    let lengths = match (source_eps, target_eps) {
        (None, None) => None,
        (Some(_), _) if a.eps != 0.0 => {
            bail!("--eps {} and an eps column in {}: give one softening", a.eps, a.sources.display())
        }
        (Some(s), Some(t)) => Some((t, s)),
        (Some(_), None) => bail!("the sources have an eps column: the targets file needs one too"),
        (None, Some(_)) => bail!("the targets have an eps column: the sources file needs one too"),
    };
    let n_t = targets.as_ref().map_or(sources.len(), Vec::len);
    let need = super::resources::accel_bytes(sources.len(), n_t, a.precision);
    super::resources::check_host(&format!("{n_t} targets x {} sources", sources.len()), need)?;
    let start = std::time::Instant::now();
    let field = match a.precision {
        Precision::F32 => compute::<f32>(a, &backend, &sources, targets.as_deref(), lengths.as_ref())?,
        Precision::F64 => compute::<f64>(a, &backend, &sources, targets.as_deref(), lengths.as_ref())?,
    };
    let seconds = start.elapsed().as_secs_f64();
    write_table(&a.out, &["ax", "ay", "az", "phi"], &field)?;
    println!(
        "{} targets x {} sources on {} ({}) in {:.3} s -> {}",
        n_t,
        sources.len(),
        backend,
        a.precision.name(),
        seconds,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn compute<T: CliReal>(
    a: &AccelArgs,
    backend: &Backend,
    sources: &[Particle<f64>],
    targets: Option<&[Particle<f64>]>,
    lengths: Option<&(Vec<f64>, Vec<f64>)>,
) -> Result<Vec<f64>> {
    let c = |ps: &[Particle<f64>]| -> Vec<Particle<T>> {
        ps.iter()
            .map(|p| Particle::new(T::from_f64(p.x), T::from_f64(p.y), T::from_f64(p.z), T::from_f64(p.m)))
            .collect()
    };
    let src = c(sources);
    let tgt = targets.map(c);
    let params = Params::softened(T::from_f64(a.eps)).with_g(T::from_f64(a.g)).with_softening(a.softening);
    let (tgt, params) = match &tgt {
        Some(t) => (t.as_slice(), params),
        None => (src.as_slice(), params.with_overlap_identical()),
    };
    let mut out = vec![Field::zero(); tgt.len()];
    let mut exec = host_executor::<T>(backend)?;
    match lengths {
        Some((t, s)) => {
            let cast = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
            let (t, s) = (cast(t), cast(s));
            exec.accelerations_per_particle(tgt, &src, PerParticle { targets: &t, sources: &s }, &params, &mut out)?
        }
        None => exec.accelerations(tgt, &src, &params, &mut out)?,
    }
    Ok(out.iter().flat_map(|f| [f.ax, f.ay, f.az, f.phi].map(Real::to_f64)).collect())
}
