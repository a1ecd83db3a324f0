//! What a run or an `accel` call will need, checked before anything large is allocated:
//! host memory (against what the system has available) and, with CUDA, device memory.
//! A request that cannot fit is a one-line error giving both amounts; the whole host
//! amount is then reserved once, fallibly, so that a wrong estimate is still an error,
//! not an abort.

use super::Precision;
use super::executors::Backend;
use super::settings::IntegratorKind;
use anyhow::{Result, bail};

/// Bytes of one four-lane record in `precision`.
fn record(precision: Precision) -> u128 {
    match precision {
        Precision::F32 => 16,
        Precision::F64 => 32,
    }
}

/// Host bytes per particle of `nbody run`: the system in f64 as built or read (particle
/// and velocity records), the rows it is broadcast as, this process's share converted,
/// the state in the run's precision, snapshot rows and their flat copy, the
/// integrator's own arrays and the executor's scratch.
pub fn run_bytes(n: usize, precision: Precision, integrator: IntegratorKind, executor: &Backend) -> u128 {
    let r = record(precision);
    let system = 64 + 56 + 64;
    let snapshots = 56 + 56;
    let integ = match integrator {
        IntegratorKind::Leapfrog => r,
        // field, jerk, and the step's start: a, j, x, v
        IntegratorKind::Hermite => 6 * r,
        // t, dt, a, j (f64), order, predicted positions and velocities, field, jerk
        IntegratorKind::BlockHermite => 72 + 4 * r,
        // field, jerk, snap and crackle (f64)
        IntegratorKind::Hermite6 => 4 * 32,
        // stages of positions and velocities, and the error estimate
        IntegratorKind::RungeKutta => 16 * r,
    };
    let exec = match executor {
        Backend::Cpu { .. } => r,
        Backend::Mixed { .. } => 3 * 32,
        Backend::Cuda { .. } | Backend::Reference => 0,
    };
    n as u128 * (system + snapshots + 2 * r + integ + exec)
}

/// Device bytes of a CUDA run: positions, velocities and field, padded.
pub fn device_bytes(n: usize, precision: Precision) -> u128 {
    (n as u128 + 256) * 3 * record(precision)
}

/// Host bytes of `nbody accel` beyond the files read: both sets converted, the output
/// and its rows, the executor's scratch.
pub fn accel_bytes(n_sources: usize, n_targets: usize, precision: Precision) -> u128 {
    let r = record(precision);
    n_sources as u128 * 2 * r + n_targets as u128 * (2 * r + 32 + 32)
}

/// The memory the system can give now (`MemAvailable`), where it says.
pub fn available() -> Option<u128> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `bytes` in the unit that reads best.
pub fn human(bytes: u128) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = bytes as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{bytes} bytes") } else { format!("{x:.1} {}", units[u]) }
}

/// Refuses `need` host bytes for `what` when the system has less available; otherwise
/// reserves them once (fallibly) to be sure the allocator agrees.
pub fn check_host(what: &str, need: u128) -> Result<()> {
    if let Some(have) = available()
        && need > have
    {
        bail!("{what} needs about {} of memory; {} is available", human(need), human(have));
    }
    let bytes = usize::try_from(need).unwrap_or(usize::MAX);
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(bytes).is_err() {
        bail!("{what} needs about {} of memory, which could not be allocated", human(need));
    }
    Ok(())
}

/// Refuses `need` device bytes when the device has less free.
pub fn check_device(what: &str, need: u128, free: Option<usize>) -> Result<()> {
    match free {
        Some(free) if need > free as u128 => {
            bail!("{what} needs about {} of GPU memory; the device has {} free", human(need), human(free as u128))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundred_billion_particles_do_not_fit() {
        let need =
            run_bytes(100_000_000_000, Precision::F64, IntegratorKind::Leapfrog, &Backend::Cpu { threads: None });
        assert!(need > 10u128 << 40, "{}", human(need));
        let e = check_host("--n 100000000000", need).unwrap_err().to_string();
        assert!(e.starts_with("--n 100000000000 needs about") && e.contains("TiB"), "{e}");
    }

    #[test]
    fn units_read_well() {
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(3 << 30), "3.0 GiB");
    }
}
