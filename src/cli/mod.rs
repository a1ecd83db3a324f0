//! The `nbody` command: its arguments, settings files, particle files, pictures and
//! subcommands. A library module (behind the default `cli` feature) so that the fuzz
//! targets and tests reach the same parsers the binary uses.
//!
//! ```
//! use clap::Parser;
//! let cli = nbody::cli::Cli::try_parse_from(["nbody", "run", "--n", "512", "--t-end", "0.5"]).unwrap();
//! assert!(matches!(cli.command, Some(nbody::cli::Command::Run(_))));
//! ```

pub mod accel;
pub mod bench;
pub mod files;
pub mod fuzz;
pub mod info;
pub mod plot;
pub mod run;
pub mod settings;
mod sim;

use clap::{Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// Direct-summation gravity: evolve N-body systems, compute forces from particle files,
/// measure the kernels.
#[derive(Parser, Debug)]
#[command(name = "nbody", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do; without one, `run` (whose options may then be given directly).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The options of `run`, for `nbody [OPTIONS]` without a subcommand.
    #[command(flatten)]
    pub run: settings::RunArgs,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Evolve a system; write snapshots, an energy CSV and pictures.
    Run(settings::RunArgs),
    /// Accelerations and potentials of targets from sources given as .npy or .csv files.
    Accel(accel::AccelArgs),
    /// Interactions per second against N for every executor compiled in.
    Bench(bench::BenchArgs),
    /// Version, executors, CPU features and CUDA devices.
    Info,
}

/// Which executor computes the forces.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorKind {
    /// SIMD kernels on every core.
    Cpu,
    /// f32 interactions on offsets from nearby block centres, f64 results (f64 only).
    Mixed,
    /// The GPU (needs the `cuda` feature and a device).
    Cuda,
    /// Plain scalar loops in the chosen precision: slow, the contract made executable.
    Reference,
}

impl ExecutorKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Cpu => "cpu",
            ExecutorKind::Mixed => "mixed",
            ExecutorKind::Cuda => "cuda",
            ExecutorKind::Reference => "reference",
        }
    }
}

/// Floating-point precision of particles and kernels.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Single.
    F32,
    /// Double.
    F64,
}

impl Precision {
    /// `"f32"` or `"f64"`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Parses the process's arguments and runs the command; errors are printed as one line
/// and turned into a non-zero exit code (2 for usage errors, 1 for the rest).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let result = match cli.command {
        None => run::run(cli.run),
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Accel(args)) => accel::accel(&args),
        Some(Command::Bench(args)) => bench::bench(&args),
        Some(Command::Info) => info::info(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(1)
        }
    }
}

/// clap's own report, cut to its first line (help and version print whole).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
    eprintln!("{} (see nbody --help)", first.trim_end());
    ExitCode::from(2)
}

/// Joins a multi-line message so that every error is one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}
