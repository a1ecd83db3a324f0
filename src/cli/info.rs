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
    o += "integrators (--integrator; the same names in Python and the AMUSE code):\n";
    for scheme in nbody_integrators::Scheme::ALL {
        o += &format!("  {:<14} {}\n", scheme.name(), scheme.about());
    }
    o += &format!("CPU SIMD features detected: {}\n", cpu_features().join(" "));
    o += &cuda_devices();
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

#[cfg(feature = "cuda")]
fn cuda_devices() -> String {
    let mut o = String::new();
    for ordinal in 0..64 {
        match nbody_cuda::CudaExecutor::on_device(ordinal) {
            Ok(e) => {
                let d = e.info();
                o += &format!(
                    "CUDA device {ordinal}: {}, compute capability {}.{}, {} SMs, SM clock {} MHz, {:.1} GiB\n",
                    d.name,
                    d.compute_capability.0,
                    d.compute_capability.1,
                    d.sm_count,
                    d.sm_clock_khz / 1000,
                    d.total_memory as f64 / (1u64 << 30) as f64
                );
            }
            Err(e) if ordinal == 0 => return format!("CUDA devices: none usable ({e})\n"),
            Err(_) => break,
        }
    }
    // Which pairs can copy device to device (the multi-device leapfrog's exchange);
    // the others are staged through pinned host memory.
    let n = nbody_cuda::CudaExecutor::device_count().unwrap_or(0);
    if n > 1 {
        if let Ok(peer) = nbody_cuda::PeerAccess::probe(&(0..n).collect::<Vec<_>>()) {
            o += "peer access (device to device copies; the rest go through pinned host memory):\n";
            for (a, row) in peer.can.iter().enumerate() {
                for (b, &can) in row.iter().enumerate().filter(|&(b, _)| b != a) {
                    o += &format!("  {a} -> {b}: {}\n", if can { "yes" } else { "no" });
                }
            }
        }
    } else if n == 1 {
        o += "peer access: one device (run several executors on it with --devices 0,0)\n";
    }
    o
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices() -> String {
    "CUDA devices: not looked for (cuda not compiled in)\n".into()
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
