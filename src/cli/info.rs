//! `nbody info`: version, executors, CPU features, CUDA devices.

use anyhow::Result;
use std::process::ExitCode;

/// What `info` prints, as text.
///
/// ```
/// let r = nbody::cli::info::report();
/// assert!(r.contains("cpu") && r.contains("spline: accelerations"));
/// assert!(r.contains("hermite6       Hermite 6th order"));
/// ```
pub fn report() -> String {
    let mut o = format!("nbody {}\n", env!("CARGO_PKG_VERSION"));
    o += "backends (--executor; the same strings in the C ABI, NBODY_GRAPE_EXECUTOR and Python):\n";
    let offers = nbody_backends::offered();
    for offer in &offers {
        o += &format!("  {:<12} {}\n", offer.backend.to_string(), offer.about);
    }
    o += "what each computes (entry points by softening, as the executor declares them; f64 calls):\n";
    for offer in &offers {
        match offer.capabilities() {
            Ok(caps) => {
                for line in caps.lines() {
                    o += &format!("  {:<12} {line}\n", offer.backend.to_string());
                }
            }
            Err(e) => o += &format!("  {:<12} (not opened: {e})\n", offer.backend.to_string()),
        }
    }
    if !nbody_backends::cuda_compiled() {
        o += "  (cuda not compiled in: build with --features cuda)\n";
    }
    o += &registry::<nbody_integrators::Scheme>("--integrator");
    o += &registry::<crate::simulation::Solver>("--gravity");
    o += &registry::<nbody_core::Softening>("--softening");
    o += &registry::<super::Precision>("--precision");
    o += &registry::<nbody_backends::Family>("--executor");
    o += &format!("CPU SIMD features detected: {}\n", cpu_features().join(" "));
    o += &nbody_backends::devices_report();
    o
}

/// One registry's names and help, as every front end spells them.
fn registry<K: nbody_core::registry::Named>(option: &str) -> String {
    let mut o = format!("{} ({option}; one spelling in every front end):\n", K::KIND);
    for k in K::ALL {
        o += &format!("  {:<14} {}\n", k.name(), k.about());
    }
    o
}

fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut found = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => { $( if std::arch::is_x86_feature_detected!($f) { found.push($f); } )* };
        }
        probe!("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl");
    }
    if found.is_empty() {
        found.push("none that the kernels use (portable fallback)");
    }
    found
}

/// Prints the report.
pub fn info(team: &super::team::Team) -> Result<ExitCode> {
    if team.is_root() {
        print!("{}{}", report(), mpi_report(team));
    }
    Ok(ExitCode::SUCCESS)
}

/// The MPI library and the job's size, when built with MPI.
///
/// ```
/// let r = nbody::cli::info::mpi_report(&nbody::cli::team::Team::solo());
/// assert!(r.starts_with("MPI"));
/// ```
pub fn mpi_report(team: &super::team::Team) -> String {
    #[cfg(feature = "mpi")]
    {
        let (major, minor) = nbody_mpi::mpi::environment::version();
        let library = nbody_mpi::mpi::environment::library_version().unwrap_or_else(|_| "unknown".into());
        // Open MPI's string carries its C terminator.
        let library =
            library.lines().next().unwrap_or("").trim_end_matches('\0').trim().trim_end_matches(',').to_owned();
        format!(
            "MPI {major}.{minor}: {library}\n  ranks in this job: {}{}\n",
            team.size(),
            if team.size() == 1 { " (start with mpirun -n N nbody ... for more)" } else { "" }
        )
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = team;
        "MPI: not compiled in (build with --features mpi)\n".to_owned()
    }
}
