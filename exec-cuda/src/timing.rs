//! Timing with CUDA events, for the autotuner and the benchmark.

use crate::device::cuda;
use crate::tuning::{CANDIDATES, LaunchConfig};
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal};
use cust::event::{Event, EventFlags};
use nbody_core::{Error, Params, Particle};

/// Median seconds per launch of the tiled kernel with `config`: `warmup` launches first,
/// then `reps` timings, each of `batch` back-to-back launches between two events.
#[allow(clippy::too_many_arguments)]
pub fn time_tiled<T: DeviceReal>(
    exec: &mut CudaExecutor,
    config: LaunchConfig,
    targets: &DeviceParticles<T>,
    sources: &DeviceParticles<T>,
    params: &Params<T>,
    out: &mut DeviceFields<T>,
    reps: usize,
    batch: usize,
) -> Result<f64, Error> {
    let saved = exec.forced.replace(config);
    let result = (|| {
        let launch = |exec: &mut CudaExecutor, out: &mut DeviceFields<T>| {
            exec.accelerations_resident(targets, sources, params, out)
        };
        for _ in 0..2 {
            launch(exec, out)?;
        }
        let (start, stop) = (event()?, event()?);
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            start.record(exec.gpu.stream()).map_err(cuda("recording an event"))?;
            for _ in 0..batch {
                launch(exec, out)?;
            }
            stop.record(exec.gpu.stream()).map_err(cuda("recording an event"))?;
            stop.synchronize().map_err(cuda("running the kernel"))?;
            let ms = stop.elapsed_time_f32(&start).map_err(cuda("reading an event"))?;
            times.push(ms as f64 * 1e-3 / batch as f64);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    })();
    exec.forced = saved;
    result
}

/// Median seconds of `f` over `reps` runs, each between two events on the executor's
/// stream (after the caller's warm-up).
pub fn time_with_events(
    exec: &mut CudaExecutor,
    reps: usize,
    mut f: impl FnMut(&mut CudaExecutor) -> Result<(), Error>,
) -> Result<f64, Error> {
    let (start, stop) = (event()?, event()?);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        start.record(exec.gpu.stream()).map_err(cuda("recording an event"))?;
        f(exec)?;
        stop.record(exec.gpu.stream()).map_err(cuda("recording an event"))?;
        stop.synchronize().map_err(cuda("running the kernels"))?;
        times.push(stop.elapsed_time_f32(&start).map_err(cuda("reading an event"))? as f64 * 1e-3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Median seconds of the jerk kernel alone (acceleration, potential and jerk, with
/// neighbours if `neighbours`: nearest only) for these bodies, over `reps` launches timed
/// with events after one warm-up; inputs staged once, results discarded.
pub fn time_jerk<T: DeviceReal>(
    exec: &mut CudaExecutor,
    targets: nbody_core::Bodies<'_, T>,
    sources: nbody_core::Bodies<'_, T>,
    params: &nbody_core::Params<T>,
    neighbours: bool,
    reps: usize,
) -> Result<f64, Error> {
    use nbody_core::neighbours::{Nearest, Neighbours};
    let n = targets.pos.len();
    let (out, jerk) = (vec![nbody_core::Field::zero(); n], vec![nbody_core::Jerk::zero(); n]);
    let mut nearest = vec![Nearest::none(); n];
    let nb = Neighbours { nearest: &mut nearest, within: None, index_offset: 0 };
    exec.gpu.make_current()?;
    let staged = exec.stage_jerk(targets, sources, &out, &jerk, neighbours.then_some(&nb))?;
    exec.launch_jerk(&staged, params)?;
    time_with_events(exec, reps, |e| e.launch_jerk(&staged, params))
}

fn event() -> Result<Event, Error> {
    Event::new(EventFlags::DEFAULT).map_err(cuda("creating an event"))
}

/// Sources the tuner times against at most: the time per source is constant beyond a
/// few tiles, so longer lists only make tuning slower.
const TUNE_SOURCES: usize = 16_384;

/// Times every candidate on synthetic particles of the call's sizes (sources capped at
/// `TUNE_SOURCES`) and returns the fastest.
pub(crate) fn tune<T: DeviceReal>(
    exec: &mut CudaExecutor,
    n_targets: usize,
    n_sources: usize,
    params: &Params<T>,
) -> Result<LaunchConfig, Error> {
    let synthetic = |n: usize, salt: u64| -> Vec<Particle<T>> {
        (0..n as u64)
            .map(|i| {
                // A cheap hash gives scattered, reproducible positions in [-1, 1)^3.
                let h = (i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let c = |s: u32| T::from_f64(((h >> s) & 0xffff) as f64 / 32_768.0 - 1.0);
                Particle::new(c(0), c(16), c(32), T::from_f64(1.0 / n as f64))
            })
            .collect()
    };
    let t = exec.upload(&synthetic(n_targets, 1))?;
    let s = exec.upload(&synthetic(n_sources.min(TUNE_SOURCES), 2))?;
    let mut out = exec.zeroed_fields::<T>(n_targets)?;
    let p = params.with_overlap(nbody_core::Overlap::Disjoint);
    let mut best = (f64::INFINITY, CANDIDATES[0]);
    for c in CANDIDATES {
        let secs = time_tiled(exec, c, &t, &s, &p, &mut out, 3, 2)?;
        if secs < best.0 {
            best = (secs, c);
        }
    }
    Ok(best.1)
}
