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
pub mod checkpoint;
mod drive;
pub mod executors;
pub mod files;
pub mod folder;
pub mod fuzz;
pub mod info;
mod outputs;
pub mod plot;
pub mod resources;
pub mod run;
pub mod settings;
mod sim;
pub mod team;

use clap::{Parser, Subcommand};
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
// `run` has many options and is parsed once per process: its size does not matter.
#[allow(clippy::large_enum_variant)]
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

/// Floating-point precision of particles and kernels (the library's registry).
pub use crate::simulation::Precision;

/// Parses the process's arguments and runs the command; errors are printed as one line
/// and turned into a non-zero exit code (2 for usage errors, 1 for the rest).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let team = team::Team::start();
    let result = match cli.command {
        None => run::run(cli.run, &team),
        Some(Command::Run(args)) => run::run(args, &team),
        Some(Command::Accel(args)) => accel::accel(&args),
        Some(Command::Bench(args)) => bench::bench(&args),
        Some(Command::Info) => info::info(&team),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Under MPI an error is printed once: by the rank it happened on, named.
            let elsewhere = e.chain().any(|c| {
                c.downcast_ref::<team::ReportedElsewhere>().is_some()
                    || matches!(c.downcast_ref::<nbody_core::Error>(), Some(nbody_core::Error::Peer { .. }))
            });
            if !elsewhere {
                let rank = if team.size() > 1 { format!("rank {}: ", team.rank()) } else { String::new() };
                eprintln!("error: {rank}{}", one_line(&format!("{e:#}")));
                // The other ranks may be waiting for this one: stop them all.
                team.fail(1);
            }
            ExitCode::from(1)
        }
    }
}

/// True in a process that `mpirun` started as some rank other than 0 (which prints
/// usage errors for the whole job).
fn other_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"].iter().any(|v| std::env::var(v).is_ok_and(|r| r.trim() != "0"))
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
    if other_rank() {
        return ExitCode::from(2);
    }
    let text = e.render().to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
    // A value outside a list (an integrator, a precision): the list, on the same line.
    let valid = match e.get(clap::error::ContextKind::ValidValue) {
        Some(clap::error::ContextValue::Strings(names)) => format!(": one of {}", names.join(", ")),
        _ => String::new(),
    };
    eprintln!("{}{valid} (see nbody --help)", first.trim_end());
    ExitCode::from(2)
}

/// Joins a multi-line message so that every error is one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}
