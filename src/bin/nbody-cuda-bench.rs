//! CUDA benchmark: interactions per second against N, f32 and f64 (and with `--mixed`
//! the mixed-precision kernels), for the kernel the executor chooses (and with `--all` every compiled variant), after checking results
//! against the f64 oracle. Prints a table and writes JSON (`--json PATH`).
//!
//! Timing: device-resident Plummer spheres (N_i = N_j = N, targets = sources), CUDA
//! events around back-to-back launches after a warm-up, median of repeats.

use clap::Parser;
use nbody::core as nbody_core;
use nbody::core::resident::Resident;
use nbody::core::{Executor, Field, Params, Particle, oracle};
use nbody::cuda::tuning::{CANDIDATES, LaunchConfig, instructions_per_interaction};
use nbody::cuda::{CudaExecutor, CudaMixedExecutor, DeviceReal, Family, timing};
use nbody::integrators as nbody_integrators;
use serde_json::{Value, json};

/// Interactions per second on the GPU against N, checked against the f64 oracle first.
#[derive(Parser, Debug)]
#[command(name = "nbody-cuda-bench")]
struct Args {
    /// Sizes N (targets = sources), comma-separated; replaces the defaults of both precisions.
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<usize>>,
    /// Every compiled launch configuration, not just the one the executor chooses.
    #[arg(long)]
    all: bool,
    /// The warp-shuffle variant beside the chosen shared-memory one.
    #[arg(long)]
    shuffle: bool,
    /// Fewer sizes (a smoke run).
    #[arg(long)]
    quick: bool,
    /// f32 only (skip f64).
    #[arg(long)]
    f32: bool,
    /// The jerk kernel too, dense and with few targets (a block step's active set).
    #[arg(long)]
    jerk: bool,
    /// The mixed-precision kernels (f64 particles and sums, f32 interactions) at the f32 sizes.
    #[arg(long)]
    mixed: bool,
    /// Particles in Morton (Z-order) order, as tree codes and sorted N-body codes keep
    /// them, not in the generator's random order. Only the mixed kernels care: they take
    /// a float path for source tiles far from a block's targets, and sorted tiles are
    /// mostly far.
    #[arg(long)]
    morton: bool,
    /// The share of a device-resident leapfrog step of N particles spent outside the force.
    #[arg(long, value_name = "N")]
    leapfrog: Option<usize>,
    /// With --mixed: the mixed batched kernel on N resident particles, leaves of 32
    /// targets against every leaf as a span, in the generator's order and in Morton order.
    #[arg(long, value_name = "N")]
    batch: Option<usize>,
    /// The gradients at N particles (f32 and f64): the force, the tidal tensor and the
    /// vector-Jacobian product through the host-slice calls, after checking the last two
    /// against the f64 oracle at 4,096.
    #[arg(long, value_name = "N")]
    gradients: Option<usize>,
    /// The columns call on arrays already on the device (`field_columns_device`, what
    /// Python's GPU arrays reach) at N particles, f32 and f64: wall-clock time a call,
    /// median of 21 after 3 warm-ups, after a check against the f64 oracle at 4,096.
    #[arg(long, value_name = "N")]
    device_columns: Option<usize>,
    /// Writes the results as JSON here.
    #[arg(long, value_name = "PATH")]
    json: Option<String>,
}

/// Flops per interaction under the CUDA SDK / Arora et al. convention.
const FLOPS_PER_INTERACTION: f64 = 20.0;

fn main() {
    let args = Args::parse();
    let (all, shuffle, quick, morton) = (args.all, args.shuffle, args.quick, args.morton);
    let json_path = args.json.clone();
    let mut gpu = match CudaExecutor::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let info = gpu.info().clone();
    println!(
        "device: {} (sm_{}{}), {} SMs, peak SM clock {} MHz, {:.1} GiB",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.sm_count,
        info.sm_clock_khz / 1000,
        info.total_memory as f64 / (1u64 << 30) as f64
    );
    let mut rows = Vec::new();
    let (sizes, f32_only) = (args.sizes.clone(), args.f32);
    let default32: &[usize] = if quick { &[1024, 16_384] } else { &[1024, 4096, 16_384, 65_536, 262_144, 1_048_576] };
    let default64: &[usize] = if quick { &[16_384] } else { &[1024, 4096, 16_384, 65_536, 262_144] };
    let sizes32 = sizes.as_deref().unwrap_or(default32);
    let sizes64 = if f32_only { &[][..] } else { sizes.as_deref().unwrap_or(default64) };
    if let Err(e) = run::<f32>(&mut gpu, sizes32, all, shuffle, morton, &mut rows)
        .and_then(|_| run::<f64>(&mut gpu, sizes64, all, shuffle, morton, &mut rows))
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    if args.jerk {
        let mut jerk_rows = Vec::new();
        if let Err(e) = jerk::<f64>(&mut gpu, quick, morton, &mut jerk_rows)
            .and_then(|_| jerk::<f32>(&mut gpu, quick, morton, &mut jerk_rows))
        {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        rows.extend(jerk_rows);
    }
    // The mixed-precision kernels on a second executor of the same device.
    if args.mixed {
        let jerk_too = args.jerk;
        let done = CudaMixedExecutor::new().and_then(|mut m| {
            run::<f64>(m.executor(), sizes32, all, shuffle, morton, &mut rows)?;
            if jerk_too {
                jerk::<f64>(m.executor(), quick, morton, &mut rows)?;
            }
            Ok(())
        });
        if let Err(e) = done {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    let report = json!({
        "device": info.name, "sm_count": info.sm_count, "sm_clock_mhz": info.sm_clock_khz / 1000,
        "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
        "commit": option_env!("NBODY_COMMIT").unwrap_or("unknown"),
        "flops_per_interaction_convention": FLOPS_PER_INTERACTION,
        "timing": "CUDA events around back-to-back launches after 2 warm-up launches; median of 7",
        "results": rows,
    });
    if let Some(Err(e)) =
        args.gradients.map(|n| gradients::<f32>(&mut gpu, n).and_then(|_| gradients::<f64>(&mut gpu, n)))
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    if let Some(Err(e)) =
        args.device_columns.map(|n| device_columns::<f32>(&mut gpu, n).and_then(|_| device_columns::<f64>(&mut gpu, n)))
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    if let Some(n) = args.leapfrog {
        match leapfrog_cost(&mut gpu, n) {
            Ok((step, force)) => println!(
                "\ndevice leapfrog f32, N = {n}: {:.3} ms/step, force {:.3} ms, rest {:.3}% of the step",
                step * 1e3,
                force * 1e3,
                100.0 * (step - force) / step
            ),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    // The mixed resident leapfrog and batched kernel, on one mixed executor.
    if args.mixed && (args.leapfrog.is_some() || args.batch.is_some()) {
        let done = CudaMixedExecutor::new().and_then(|mut m| {
            args.leapfrog.map_or(Ok(()), |n| mixed_leapfrog_cost(m.executor(), n))?;
            args.batch.map_or(Ok(()), |n| mixed_batch_rates(m.executor(), n))
        });
        if let Err(e) = done {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    if let Some(path) = json_path {
        if let Err(e) = std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap_or_default()) {
            eprintln!("error: writing {path}: {e}");
            std::process::exit(1);
        }
        println!("wrote {path}");
    }
}

/// A Plummer sphere of `n` bodies from `seed` (positions, velocities), in Morton order
/// when `morton`.
fn sphere<T: DeviceReal>(n: usize, seed: u64, morton: bool) -> (Vec<Particle<T>>, Vec<nbody::core::Velocity<T>>) {
    let (bodies, vel) = nbody_integrators::ics::plummer::<T>(n, seed);
    if morton { nbody_integrators::ics::morton_sorted(&bodies, &vel) } else { (bodies, vel) }
}

/// Max relative acceleration error of the GPU against the f64 oracle on 256 targets of
/// an N = 16,384 Plummer sphere (in Morton order with `morton`): the check that must
/// pass before anything is timed.
fn check<T: DeviceReal>(gpu: &mut CudaExecutor, morton: bool) -> Result<f64, nbody_core::Error> {
    let n = 16_384;
    let (bodies, _) = sphere::<T>(n, 9, morton);
    let params = Params::softened(T::from_f64(1.0 / 256.0));
    let targets: Vec<Particle<T>> = bodies.iter().step_by(64).copied().collect();
    let mut out = vec![Field::zero(); targets.len()];
    gpu.accelerations(&targets, &bodies, &params, &mut out)?;
    // Targets are copies, not declared sources: the oracle counts their self pair too.
    let mut truth = vec![oracle::Exact::default(); targets.len()];
    oracle::field(&targets, None, &bodies, None, &params, &mut truth)?;
    Ok(out
        .iter()
        .zip(&truth)
        .map(|(f, e)| {
            let d: f64 = (0..3).map(|k| (f.acceleration()[k].to_f64() - e.acc[k]).powi(2)).sum::<f64>().sqrt();
            d / e.acc.iter().map(|a| a * a).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max))
}

fn run<T: DeviceReal>(
    gpu: &mut CudaExecutor,
    sizes: &[usize],
    all: bool,
    shuffle: bool,
    morton: bool,
    rows: &mut Vec<Value>,
) -> Result<(), nbody_core::Error> {
    let (name, tag) = names::<T>(gpu);
    let err = check::<T>(gpu, morton)?;
    let bound = match name {
        "f32" => 1e-5,
        "mixed" => 2e-6,
        _ => 1e-13,
    };
    println!(
        "\n{name}: max relative acceleration error vs f64 oracle (N = 16384, 256 targets): {err:.2e} (bound {bound:e})"
    );
    if err.is_nan() || err >= bound {
        return Err(nbody_core::Error::InvalidParameter {
            name: "accuracy check",
            requirement: "below its bound before timing",
        });
    }
    let info = gpu.info().clone();
    let issue_rate = info.sm_count as f64 * 4.0 * 32.0 * info.sm_clock_khz as f64 * 1e3;
    println!(
        "{:>9} {:>5} {:>22} {:>11} {:>13} {:>9} {:>8} {:>9}",
        "N", "pot", "config (B,TP,NI)", "time", "interact/s", "GFLOP/s", "instr/i", "of issue"
    );
    for &n in sizes {
        let (bodies, _) = sphere::<T>(n, 1, morton);
        let set = gpu.upload(&bodies)?;
        let mut out = gpu.zeroed_fields::<T>(n)?;
        for potential in [false, true] {
            let mut params = Params::softened(T::from_f64(1.0 / 256.0)).with_overlap_identical();
            params.potential = potential;
            let chosen = nbody::cuda::tuning::choose_on(nbody::cuda::tuning::ladder(tag), n, info.sm_count);
            let configs: Vec<LaunchConfig> = if all && !potential { CANDIDATES.to_vec() } else { vec![chosen] };
            for c in configs {
                let interactions = (n * n) as f64;
                let batch = ((0.02 * 2e12 / interactions).ceil() as usize).clamp(1, 200);
                let secs = timing::time_tiled(gpu, c, &set, &set, &params, &mut out, 7, batch)?;
                let rate = interactions / secs;
                let kernel = c.kernel_name(tag, potential, false);
                let ipi = instructions_per_interaction(&kernel);
                // Sorted, the mixed kernels run far tiles in their shorter float loop,
                // so the double-single loop's count bounds nothing there.
                let fraction = ipi.filter(|_| !(morton && name == "mixed")).map(|i| rate / (issue_rate / i));
                println!(
                    "{n:>9} {:>5} {:>22} {:>9.3}ms {rate:>13.3e} {:>9.0} {:>8} {:>9}{}",
                    potential,
                    format!("({},{},{})", c.block, c.threads_per_target, c.targets_per_thread),
                    secs * 1e3,
                    rate * FLOPS_PER_INTERACTION * 1e-9,
                    ipi.map_or("?".into(), |i| format!("{i:.2}")),
                    fraction.map_or("?".into(), |f| format!("{:.1}%", 100.0 * f)),
                    if c == chosen { "  <- chosen" } else { "" }
                );
                rows.push(json!({
                    "precision": name, "n": n, "potential": potential, "morton_order": morton,
                    "config": {"block": c.block, "threads_per_target": c.threads_per_target, "targets_per_thread": c.targets_per_thread},
                    "chosen": c == chosen, "seconds": secs, "interactions_per_second": rate,
                    "gflops_20": rate * FLOPS_PER_INTERACTION * 1e-9,
                    "sass_instructions_per_interaction": ipi, "fraction_of_issue_bound": fraction,
                }));
            }
            if shuffle && !potential {
                shuffle_rows::<T>(gpu, &set, &params, &mut out, name, rows)?;
            }
        }
    }
    Ok(())
}

/// The jerk kernel's rate (acceleration, potential and jerk; then with the nearest
/// neighbour too), dense (N x N) and for few targets against 2^20 sources, after the
/// few-target call was checked against the f64 oracle.
fn jerk<T: DeviceReal>(
    gpu: &mut CudaExecutor,
    quick: bool,
    morton: bool,
    rows: &mut Vec<Value>,
) -> Result<(), nbody_core::Error> {
    use nbody::core::{Bodies, Jerk};
    let (name, _) = names::<T>(gpu);
    let big = if quick { 1 << 18 } else { 1 << 20 };
    let (bodies, vel) = sphere::<T>(big, 3, morton);
    let params = Params::softened(T::from_f64(1.0 / 256.0));
    // Check: 256 targets (copies of bodies, so the oracle counts their self pairs as the
    // kernel does with a disjoint overlap) against every body.
    let idx: Vec<usize> = (0..256).map(|k| k * (big / 256)).collect();
    let tp256: Vec<Particle<T>> = idx.iter().map(|&i| bodies[i]).collect();
    let tv: Vec<_> = idx.iter().map(|&i| vel[i]).collect();
    let (mut out, mut jk) = (vec![Field::zero(); 256], vec![Jerk::zero(); 256]);
    gpu.accelerations_jerk(
        Bodies { pos: &tp256, vel: &tv },
        Bodies { pos: &bodies, vel: &vel },
        &params,
        &mut out,
        &mut jk,
    )?;
    let mut truth = vec![oracle::Exact::default(); 16];
    oracle::field(&tp256[..16], Some(&tv[..16]), &bodies, Some(&vel), &params, &mut truth)?;
    let rel = |got: [f64; 3], want: [f64; 3]| {
        let d: f64 = (0..3).map(|k| (got[k] - want[k]).powi(2)).sum::<f64>().sqrt();
        d / want.iter().map(|a| a * a).sum::<f64>().sqrt()
    };
    let (mut ea, mut ej) = (0.0f64, 0.0f64);
    for (k, e) in truth.iter().enumerate() {
        ea = worst(ea, rel(out[k].acceleration().map(|x| x.to_f64()), e.acc));
        ej = worst(ej, rel(jk[k].components().map(|x| x.to_f64()), e.jerk));
    }
    let bound = match name {
        "f64" => 1e-12,
        "mixed" => 1e-5,
        _ => 1e-4,
    };
    println!(
        "\njerk {name}: 256 x {big} check against the f64 oracle (16 targets): acceleration {ea:.2e}, jerk {ej:.2e} (bound {bound:e})"
    );
    if !(ea < bound && ej < bound) {
        return Err(nbody_core::Error::InvalidParameter {
            name: "jerk accuracy check",
            requirement: "below its bound before timing",
        });
    }
    println!("{:>9} {:>9} {:>10} {:>4} {:>11} {:>13}", "targets", "sources", "neighbours", "ni", "time", "interact/s");
    let dense = if quick { vec![65_536] } else { vec![65_536, big] };
    let points: Vec<(usize, usize)> =
        dense.iter().map(|&n| (n, n)).chain([64, 256, 1024, 4096].map(|t| (t, big))).collect();
    for (nt, ns) in points {
        let stride = big / nt;
        let tp: Vec<Particle<T>> = (0..nt).map(|k| bodies[k * stride]).collect();
        let tv: Vec<_> = (0..nt).map(|k| vel[k * stride]).collect();
        // Dense: one target per thread against the default (two in f64 from 1,024 targets up).
        let per_thread: &[Option<usize>] = if nt == ns { &[Some(1), None] } else { &[None] };
        for (&forced, neighbours) in per_thread.iter().flat_map(|f| [(f, false), (f, true)]) {
            gpu.force_jerk_targets_per_thread(forced);
            // The executor's choice: two from 1,024 targets in f64, and in mixed without
            // neighbours.
            let ni =
                forced.unwrap_or(if nt >= 1024 && (name == "f64" || (name == "mixed" && !neighbours)) { 2 } else { 1 });
            let reps = if nt * ns > 1 << 36 { 3 } else { 7 };
            let secs = timing::time_jerk(
                gpu,
                Bodies { pos: &tp, vel: &tv },
                Bodies { pos: &bodies[..ns], vel: &vel[..ns] },
                &params,
                neighbours,
                reps,
            )?;
            let rate = (nt * ns) as f64 / secs;
            println!("{nt:>9} {ns:>9} {neighbours:>10} {ni:>4} {:>9.3}ms {rate:>13.3e}", secs * 1e3);
            rows.push(json!({"kernel": "jerk", "precision": name, "targets": nt, "sources": ns, "neighbours": neighbours, "targets_per_thread": ni, "seconds": secs, "interactions_per_second": rate}));
        }
        gpu.force_jerk_targets_per_thread(None);
    }
    // The acceleration kernel on the same shapes (its source split for few targets),
    // checked first: 256 targets (copies, disjoint) against every body, 16 in the oracle.
    let mut out = vec![Field::zero(); 256];
    gpu.accelerations(&tp256, &bodies, &params, &mut out)?;
    let ea = out.iter().zip(&truth).map(|(f, e)| rel(f.acceleration().map(|x| x.to_f64()), e.acc)).fold(0.0, worst);
    println!("acceleration only, {name}: 256 x {big} check: {ea:.2e} (bound {bound:e})");
    if ea.is_nan() || ea >= bound {
        return Err(nbody_core::Error::InvalidParameter {
            name: "acceleration accuracy check",
            requirement: "below its bound before timing",
        });
    }
    let set = gpu.upload(&bodies)?;
    for nt in [256, 1024, big] {
        let stride = big / nt;
        let tp: Vec<Particle<T>> = (0..nt).map(|k| bodies[k * stride]).collect();
        let tset = gpu.upload(&tp)?;
        let mut out = gpu.zeroed_fields::<T>(nt)?;
        let tag = names::<T>(gpu).1;
        let config = nbody::cuda::tuning::choose_for_on(nbody::cuda::tuning::ladder(tag), nt, big, gpu.info().sm_count);
        let reps = if nt * big > 1 << 36 { 3 } else { 7 };
        let secs = timing::time_tiled(gpu, config, &tset, &set, &params, &mut out, reps, 1)?;
        let rate = (nt * big) as f64 / secs;
        println!("{nt:>9} {big:>9} {:>9.3}ms {rate:>13.3e}", secs * 1e3);
        rows.push(json!({"kernel": "acceleration", "precision": name, "targets": nt, "sources": big, "seconds": secs, "interactions_per_second": rate}));
    }
    Ok(())
}

/// The warp-shuffle variant at each of its targets per thread on the resident sphere
/// `set`: its result checked against the chosen shared-memory kernel's first, then timed.
fn shuffle_rows<T: DeviceReal>(
    gpu: &mut CudaExecutor,
    set: &nbody::cuda::DeviceParticles<T>,
    params: &Params<T>,
    out: &mut nbody::cuda::DeviceFields<T>,
    name: &str,
    rows: &mut Vec<Value>,
) -> Result<(), nbody_core::Error> {
    let n = set.len();
    let mut want = vec![Field::zero(); n];
    gpu.clear(out)?;
    gpu.accelerations_resident(set, set, params, out)?;
    gpu.download(out, &mut want)?;
    let interactions = (n * n) as f64;
    let batch = ((0.02 * 2e12 / interactions).ceil() as usize).clamp(1, 200);
    for ni in nbody::cuda::tuning::SHUFFLE_TARGETS_PER_THREAD {
        let mut got = vec![Field::zero(); n];
        gpu.clear(out)?;
        gpu.accelerations_resident_shuffle(set, set, params, out, ni)?;
        gpu.download(out, &mut got)?;
        let diff = got
            .iter()
            .zip(&want)
            .map(|(a, b)| {
                let d: f64 = (0..3).map(|k| (a.acceleration()[k] - b.acceleration()[k]).to_f64().powi(2)).sum();
                let s: f64 = (0..3).map(|k| b.acceleration()[k].to_f64().powi(2)).sum();
                (d / s).sqrt()
            })
            .fold(0.0, worst);
        // Two summation orders: f32 sums over 2^20 sources differ by about 1e-4.
        let bound = if name == "f64" { 1e-10 } else { 1e-3 };
        if diff.is_nan() || diff >= bound {
            return Err(nbody_core::Error::InvalidParameter {
                name: "warp-shuffle check",
                requirement: "close to the shared-memory kernel's result before timing",
            });
        }
        let secs = timing::time_with_events(gpu, 7, |g| {
            for _ in 0..batch {
                g.accelerations_resident_shuffle(set, set, params, out, ni)?;
            }
            Ok(())
        })? / batch as f64;
        let rate = interactions / secs;
        println!(
            "{n:>9} {:>5} {:>22} {:>9.3}ms {rate:>13.3e} {:>9.0}   (vs chosen: max rel. diff {diff:.1e})",
            false,
            format!("shuffle (128,1,{ni})"),
            secs * 1e3,
            rate * FLOPS_PER_INTERACTION * 1e-9
        );
        rows.push(json!({
            "precision": name, "n": n, "potential": false, "variant": "warp-shuffle", "targets_per_thread": ni,
            "seconds": secs, "interactions_per_second": rate, "difference_from_chosen": diff,
        }));
    }
    Ok(())
}

/// The precision's name and kernel family on `gpu`: f32, f64, or mixed for f64 on a
/// mixed-precision executor.
fn names<T: DeviceReal>(gpu: &CudaExecutor) -> (&'static str, Family) {
    let family = gpu.family::<T>();
    (family.tag(), family)
}

/// The larger of two errors, NaN if either is (a NaN must fail the check, and f64::max
/// would drop it).
fn worst(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// Seconds per device leapfrog step and per force call alone (events, median of 3).
/// The largest relative error of `got` against `want` over rows (each row's norm).
fn worst_row_error(got: &[[f64; 3]], want: &[[f64; 3]]) -> f64 {
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    got.iter().zip(want).map(|(g, w)| norm([g[0] - w[0], g[1] - w[1], g[2] - w[2]]) / norm(*w)).fold(0.0, f64::max)
}

/// See [`Args::gradients`]: the check at 4,096, then the three calls at `n` timed with
/// CUDA events around each host-slice call (uploads and downloads included, as a caller
/// pays them), median of 7 after a warm-up.
fn gradients<T: DeviceReal>(gpu: &mut CudaExecutor, n: usize) -> Result<(), nbody_core::Error> {
    use nbody_core::Tidal;
    use nbody_core::oracle::{Cotangents, Gradients};
    let name = std::any::type_name::<T>();
    let params = Params::softened(T::from_f64(1.0 / 256.0)).with_overlap_identical();
    let check = 4096;
    let (p, v) = nbody_integrators::ics::plummer::<T>(check, 3);
    let cot: Vec<Field<T>> = v.iter().map(|v| Field::new(v.vx, v.vy, v.vz, T::from_f64(0.5))).collect();
    let (mut gt, mut gs) = (vec![Particle::zero(); check], vec![Particle::zero(); check]);
    gpu.vjp(&p, &p, &params, &cot, &mut gt, &mut gs)?;
    let acc: Vec<[f64; 3]> = cot.iter().map(|c| c.acceleration().map(nbody_core::Real::to_f64)).collect();
    let phi = vec![0.5; check];
    let (mut wt, mut ws, mut wm) = (vec![[0.0; 3]; check], vec![[0.0; 3]; check], vec![0.0; check]);
    let grads = Gradients { targets: &mut wt, sources: &mut ws, masses: &mut wm };
    oracle::vjp(&p, &p, &params, Cotangents { acc: &acc, phi: Some(&phi) }, grads)?;
    // A particle's gradient: its target part plus its source part.
    let want: Vec<[f64; 3]> = wt.iter().zip(&ws).map(|(a, b)| [a[0] + b[0], a[1] + b[1], a[2] + b[2]]).collect();
    let got: Vec<[f64; 3]> =
        gt.iter().zip(&gs).map(|(a, b)| [a.x + b.x, a.y + b.y, a.z + b.z].map(nbody_core::Real::to_f64)).collect();
    let mass_err =
        gs.iter().zip(&wm).map(|(g, w)| (nbody_core::Real::to_f64(g.m) - w).abs() / w.abs()).fold(0.0, f64::max);
    let (mut out, mut tidal) = (vec![Field::zero(); check], vec![Tidal::zero(); check]);
    gpu.accelerations_tidal(&p, &p, &params, &mut out, &mut tidal)?;
    let mut wt6 = vec![[0.0; 6]; check];
    oracle::tidal(&p, &p, &params, &mut wt6)?;
    let tidal_err = tidal
        .iter()
        .zip(&wt6)
        .map(|(t, w)| {
            let d: f64 = t.lanes().iter().zip(w).map(|(a, b)| (nbody_core::Real::to_f64(*a) - b).powi(2)).sum();
            d.sqrt() / w.iter().map(|b| b * b).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max);
    // A particle's whole gradient from the pair kernels (the batched product of the
    // system on itself), against the same truth.
    let whole_list = self_pair(check);
    let list = whole_list.list();
    let mut whole = vec![Particle::zero(); check];
    gpu.vjp_batch(&p, &list, &params, &cot, &mut whole)?;
    let got_whole: Vec<[f64; 3]> = whole.iter().map(|g| [g.x, g.y, g.z].map(nbody_core::Real::to_f64)).collect();
    let mass_whole =
        whole.iter().zip(&wm).map(|(g, w)| (nbody_core::Real::to_f64(g.m) - w).abs() / w.abs()).fold(0.0, f64::max);
    let (split_err, whole_err) = (worst_row_error(&got, &want), worst_row_error(&got_whole, &want));
    println!(
        "\ngradients {name}, check at N = {check} against the f64 oracle: position gradients {split_err:.2e} (two \
         parts) / {whole_err:.2e} (whole, each pair once), mass gradients {mass_err:.2e} / {mass_whole:.2e}, tidal \
         tensors {tidal_err:.2e} (largest relative error of a particle's)",
    );
    if !(whole_err <= 2.0 * split_err + 1e-12 && mass_whole <= 2.0 * mass_err + 1e-12) {
        return Err(nbody_core::Error::InvalidParameter {
            name: "gradient check",
            requirement: "the whole gradient within twice the two-part product's error before timing",
        });
    }
    let (p, v) = nbody_integrators::ics::plummer::<T>(n, 1);
    let cot: Vec<Field<T>> = v.iter().map(|v| Field::new(v.vx, v.vy, v.vz, T::from_f64(0.5))).collect();
    let (mut out, mut tidal) = (vec![Field::zero(); n], vec![Tidal::zero(); n]);
    let (mut gt, mut gs) = (vec![Particle::zero(); n], vec![Particle::zero(); n]);
    // Warm-up (the force call tunes its launch for a new size once).
    gpu.accelerations(&p, &p, &params, &mut out)?;
    gpu.accelerations_tidal(&p, &p, &params, &mut out, &mut tidal)?;
    gpu.vjp(&p, &p, &params, &cot, &mut gt, &mut gs)?;
    let force = timing::time_with_events(gpu, 7, |g| g.accelerations(&p, &p, &params, &mut out))?;
    let tidal_t = timing::time_with_events(gpu, 7, |g| g.accelerations_tidal(&p, &p, &params, &mut out, &mut tidal))?;
    let vjp_t = timing::time_with_events(gpu, 7, |g| g.vjp(&p, &p, &params, &cot, &mut gt, &mut gs))?;
    let whole_list = self_pair(n);
    let list = whole_list.list();
    let mut whole = vec![Particle::zero(); n];
    gpu.vjp_batch(&p, &list, &params, &cot, &mut whole)?;
    let whole_t = timing::time_with_events(gpu, 7, |g| g.vjp_batch(&p, &list, &params, &cot, &mut whole))?;
    println!(
        "gradients {name}, N = {n} (host-slice calls): force {:.3} ms, force and tidal tensor {:.3} ms ({:.2} forces), \
         vector-Jacobian product {:.3} ms ({:.2} forces; force plus product {:.2} forces), whole gradient (each pair \
         once) {:.3} ms ({:.2} forces; force plus product {:.2} forces)",
        force * 1e3,
        tidal_t * 1e3,
        tidal_t / force,
        vjp_t * 1e3,
        vjp_t / force,
        (force + vjp_t) / force,
        whole_t * 1e3,
        whole_t / force,
        (force + whole_t) / force
    );
    device_gradients(gpu, &p, &cot, &params)
}

/// A list of one pair: `n` particles on themselves.
struct SelfPair([nbody_core::Pair; 1], [nbody_core::Span; 1]);

impl SelfPair {
    fn list(&self) -> nbody_core::InteractionList<'_> {
        nbody_core::InteractionList { pairs: &self.0, source_spans: &self.1 }
    }
}

fn self_pair(n: usize) -> SelfPair {
    use nbody_core::{Pair, Span};
    SelfPair([Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 1) }], [Span::new(0, n as u32)])
}

/// The force (with potentials) and the whole product on arrays already on the GPU
/// (`field_columns_device`, `vjp_device`, what Python's GPU arrays call), interleaved,
/// wall clock, median of 21 rounds after 3 warm-ups, the product's results checked equal
/// to the host-slice whole gradient first.
fn device_gradients<T: DeviceReal>(
    gpu: &mut CudaExecutor,
    p: &[Particle<T>],
    cot: &[Field<T>],
    params: &Params<T>,
) -> Result<(), nbody_core::Error> {
    use nbody::cuda::DeviceMemory;
    use nbody_core::columns::{DeviceColumns, DeviceVjp};
    let (n, sz, ordinal) = (p.len(), size_of::<T>(), 0);
    let on_gpu = |x: &[T]| {
        let mut d = DeviceMemory::uninitialized(ordinal, x.len() * sz)?;
        d.copy_from_host(x)?;
        Ok::<_, nbody_core::Error>(d)
    };
    let d_rows = on_gpu(&p.iter().flat_map(|p| [p.x, p.y, p.z]).collect::<Vec<T>>())?;
    let d_m = on_gpu(&p.iter().map(|p| p.m).collect::<Vec<T>>())?;
    let d_ca = on_gpu(&cot.iter().flat_map(|c| [c.ax, c.ay, c.az]).collect::<Vec<T>>())?;
    let d_cp = on_gpu(&cot.iter().map(|c| c.phi).collect::<Vec<T>>())?;
    let (acc, phi) = (on_gpu(&vec![T::zero(); 3 * n])?, on_gpu(&vec![T::zero(); n])?);
    let (gp, gm) = (on_gpu(&vec![T::zero(); 3 * n])?, on_gpu(&vec![T::zero(); n])?);
    let force = DeviceColumns {
        phi: Some(phi.address()),
        ..DeviceColumns::on_itself(ordinal, d_rows.address(), d_m.address(), n, acc.address())
    };
    let product = DeviceVjp {
        device: ordinal,
        positions: d_rows.address(),
        masses: d_m.address(),
        n,
        cot_acc: d_ca.address(),
        cot_phi: Some(d_cp.address()),
        grad_positions: gp.address(),
        grad_masses: gm.address(),
        streams: [None; 4],
    };
    let plain = Params { overlap: nbody_core::Overlap::Disjoint, ..*params };
    // SAFETY: every address is a live allocation of this device of the sizes named.
    unsafe { Executor::<T>::vjp_device(gpu, product, &plain)? };
    let whole_list = self_pair(n);
    let mut want = vec![Particle::zero(); n];
    gpu.vjp_batch(p, &whole_list.list(), params, cot, &mut want)?;
    let (mut a, mut m) = (vec![T::zero(); 3 * n], vec![T::zero(); n]);
    gp.copy_to_host(&mut a)?;
    gm.copy_to_host(&mut m)?;
    if want.iter().zip(a.chunks_exact(3).zip(&m)).any(|(w, (a, &m))| [w.x, w.y, w.z, w.m] != [a[0], a[1], a[2], m]) {
        return Err(nbody_core::Error::InvalidParameter {
            name: "device gradient check",
            requirement: "the device product equal to the host-slice whole gradient before timing",
        });
    }
    let (mut tf, mut tp) = (Vec::new(), Vec::new());
    for k in 0..24 {
        let start = std::time::Instant::now();
        // SAFETY: as above.
        unsafe { Executor::<T>::field_columns_device(gpu, force, &plain)? };
        let mid = std::time::Instant::now();
        // SAFETY: as above.
        unsafe { Executor::<T>::vjp_device(gpu, product, &plain)? };
        if k >= 3 {
            tf.push((mid - start).as_secs_f64());
            tp.push(mid.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (f, g) = (median(&mut tf), median(&mut tp));
    println!(
        "gradients {}, N = {n} (device arrays, wall clock, median of 21): force {:.3} ms, whole product {:.3} ms \
         ({:.2} forces); force plus product {:.2} forces",
        T::NAME,
        f * 1e3,
        g * 1e3,
        g / f,
        (f + g) / f
    );
    Ok(())
}

/// See [`Args::device_columns`]: returns the median seconds a call at `n`.
fn device_columns<T: DeviceReal>(gpu: &mut CudaExecutor, n: usize) -> Result<f64, nbody_core::Error> {
    use nbody::cuda::DeviceMemory;
    use nbody_core::columns::DeviceColumns;
    let name = std::any::type_name::<T>();
    let params = Params::softened(T::from_f64(1.0 / 256.0));
    let ordinal = 0;
    // Rows, masses and outputs on the device; one call; the outputs back.
    let run = |gpu: &mut CudaExecutor, p: &[Particle<T>], reps: usize| {
        let rows: Vec<T> = p.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
        let masses: Vec<T> = p.iter().map(|p| p.m).collect();
        let sz = size_of::<T>();
        let mut d_rows = DeviceMemory::uninitialized(ordinal, rows.len() * sz)?;
        let mut d_m = DeviceMemory::uninitialized(ordinal, masses.len() * sz)?;
        d_rows.copy_from_host(&rows)?;
        d_m.copy_from_host(&masses)?;
        let (acc, phi) = (
            DeviceMemory::uninitialized(ordinal, rows.len() * sz)?,
            DeviceMemory::uninitialized(ordinal, p.len() * sz)?,
        );
        let call = DeviceColumns {
            phi: Some(phi.address()),
            ..DeviceColumns::on_itself(ordinal, d_rows.address(), d_m.address(), p.len(), acc.address())
        };
        let mut times = Vec::with_capacity(reps);
        for k in 0..reps + 3 {
            let start = std::time::Instant::now();
            // SAFETY: every address is a live allocation of this device of the sizes named.
            unsafe { Executor::<T>::field_columns_device(gpu, call, &params)? };
            if k >= 3 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        let (mut a, mut f) = (vec![T::zero(); rows.len()], vec![T::zero(); p.len()]);
        acc.copy_to_host(&mut a)?;
        phi.copy_to_host(&mut f)?;
        let field: Vec<Field<T>> = a.chunks_exact(3).zip(&f).map(|(a, &f)| Field::new(a[0], a[1], a[2], f)).collect();
        Ok::<_, nbody_core::Error>((times.get(times.len() / 2).copied().unwrap_or(0.0), field))
    };
    let (check, _) = nbody_integrators::ics::plummer::<T>(4096, 3);
    let (_, got) = run(gpu, &check, 0)?;
    let mut want = vec![oracle::Exact::default(); check.len()];
    oracle::field(&check, None, &check, None, &params.with_overlap_identical(), &mut want)?;
    let got: Vec<[f64; 3]> = got.iter().map(|g| [g.ax, g.ay, g.az].map(nbody_core::Real::to_f64)).collect();
    let want: Vec<[f64; 3]> = want.iter().map(|w| w.acc).collect();
    let err = worst_row_error(&got, &want);
    let (p, _) = nbody_integrators::ics::plummer::<T>(n, 1);
    let (t, _) = run(gpu, &p, 21)?;
    println!(
        "
device columns {name}: check at N = 4096 against the f64 oracle, largest relative acceleration error \
         {err:.2e}; N = {n}: {:.3} ms a call (wall clock, median of 21 after 3 warm-ups, potentials on)",
        t * 1e3
    );
    Ok(t)
}

fn leapfrog_cost(gpu: &mut CudaExecutor, n: usize) -> Result<(f64, f64), nbody_core::Error> {
    let (p, v) = nbody_integrators::ics::plummer::<f32>(n, 1);
    let mut state = gpu.upload_state(&p, &v)?;
    let params = Params::softened(1.0f32 / 256.0);
    gpu.leapfrog_step(&mut state, &params, 1.0 / 256.0)?; // warm-up
    let step = timing::time_with_events(gpu, 3, |g| g.leapfrog_step(&mut state, &params, 1.0 / 256.0))?;
    let set = gpu.upload(&p)?;
    let mut out = gpu.zeroed_fields::<f32>(n)?;
    let identical = params.with_overlap_identical();
    let force = timing::time_with_events(gpu, 3, |g| g.accelerations_resident(&set, &set, &identical, &mut out))?;
    Ok((step, force))
}

/// Steps of the mixed device leapfrog timed per run.
const MIXED_STEPS: usize = 64;

/// The mixed device leapfrog on a Plummer sphere in the generator's order (the state
/// sorts itself on the device): ms per step over [`MIXED_STEPS`] steps for several
/// re-sort intervals (each step timed with events, sorts included); and one force call
/// on the particles in the caller's order unsorted, on a Morton-sorted copy, sorted on
/// the device within the call, and through the host-slice call (transfers and the sort
/// included, wall clock), that last one checked against the f64 oracle first.
fn mixed_leapfrog_cost(gpu: &mut CudaExecutor, n: usize) -> Result<(), nbody_core::Error> {
    let (p, v) = nbody_integrators::ics::plummer::<f64>(n, 1);
    let params = Params::softened(1.0 / 256.0);
    let identical = params.with_overlap_identical();
    let err = sorted_call_error(gpu, &p, &identical)?;
    println!("\nmixed host-slice call, N = {n}: max relative acceleration error vs f64 oracle (256 targets) {err:.2e}");
    if err.is_nan() || err >= 2e-6 {
        return Err(nbody_core::Error::InvalidParameter {
            name: "accuracy check",
            requirement: "below 2e-6 before timing",
        });
    }
    let sorted_copy = nbody_integrators::ics::morton_sorted(&p, &v).0;
    for potential in [false, true] {
        let call = Params { potential, ..identical };
        let force = |g: &mut CudaExecutor, bodies: &[Particle<f64>], sort: bool| {
            let set = g.upload(bodies)?;
            let mut out = g.zeroed_fields::<f64>(n)?;
            timing::time_with_events(g, 3, |g| match sort {
                true => g.accelerations_resident_sorted(&set, &set, &call, &mut out),
                false => g.accelerations_resident(&set, &set, &call, &mut out),
            })
        };
        let caller = force(gpu, &p, false)?;
        let sorted = force(gpu, &sorted_copy, false)?;
        let on_device = force(gpu, &p, true)?;
        let mut field = vec![Field::zero(); n];
        let host = (0..4)
            .map(|_| {
                let t = std::time::Instant::now();
                Executor::accelerations(gpu, &p, &p, &call, &mut field).map(|_| t.elapsed().as_secs_f64())
            })
            .collect::<Result<Vec<f64>, _>>()?;
        let host = host[1..].iter().copied().fold(f64::INFINITY, f64::min);
        let rate = |s: f64| (n * n) as f64 / s;
        println!("mixed force, N = {n}, potential {potential} (ms, interactions/s):");
        println!("  caller's order, unsorted          {:>9.2}  {:.3e}", caller * 1e3, rate(caller));
        println!("  Morton-sorted copy                {:>9.2}  {:.3e}", sorted * 1e3, rate(sorted));
        println!(
            "  sorted on the device in the call  {:>9.2}  {:.3e}  (sort, gathers, scatter: {:.2} ms)",
            on_device * 1e3,
            rate(on_device),
            (on_device - sorted) * 1e3
        );
        println!(
            "  host-slice call (up, sort, down)  {:>9.2}  {:.3e}  (best of 3, wall clock)",
            host * 1e3,
            rate(host)
        );
    }
    // The sort of a state alone, as its leapfrog steps run it (wall clock: the permutation
    // comes down to compose the state's order).
    let before = gpu.sorted_above();
    gpu.set_sorted_above(0);
    let mut state = gpu.upload_state(&p, &v)?;
    gpu.set_sorted_above(before);
    let sorts = (0..6)
        .map(|_| {
            let t = std::time::Instant::now();
            gpu.resort_state(&mut state).map(|_| t.elapsed().as_secs_f64())
        })
        .collect::<Result<Vec<f64>, _>>()?;
    let mut sorts = sorts[1..].to_vec();
    sorts.sort_by(f64::total_cmp);
    println!(
        "sort of a mixed state on the device, N = {n} (keys, CUB's sort, gathers, permutation down): {:.2} ms \
         (median of 5, wall clock)",
        sorts[2] * 1e3
    );
    // A leapfrog step needs accelerations only; the potential where diagnostics ask.
    println!("device leapfrog mixed, N = {n}, {MIXED_STEPS} steps of 1/256:");
    let default = nbody::cuda::DeviceState::<f64>::resort_interval(n);
    let runs = [(false, 1), (false, 2), (false, 8), (false, usize::MAX), (true, default)];
    for (potential, every) in runs {
        let params = Params { potential, ..params };
        let mut state = gpu.upload_state(&p, &v)?;
        state.set_resort_every(every);
        gpu.leapfrog_step(&mut state, &params, 1.0 / 256.0)?; // warm-up
        let times = (0..MIXED_STEPS)
            .map(|_| timing::time_with_events(gpu, 1, |g| g.leapfrog_step(&mut state, &params, 1.0 / 256.0)))
            .collect::<Result<Vec<f64>, _>>()?;
        let mean = |t: &[f64]| 1e3 * t.iter().sum::<f64>() / t.len() as f64;
        let groups: Vec<String> = times.chunks(8).map(|c| format!("{:.0}", mean(c))).collect();
        let label = match every {
            usize::MAX => "never".to_string(),
            e if e == default => format!("{e} (default)"),
            e => e.to_string(),
        };
        println!(
            "  potential {potential:>5}, sorted at upload, again every {label:>11} drifts: {:.1} ms/step ({:.3e} \
             interactions/s); per 8 steps: {}",
            mean(&times),
            (n * n) as f64 / (mean(&times) * 1e-3),
            groups.join(" ")
        );
    }
    Ok(())
}

/// Max relative acceleration error of the mixed host-slice call on `bodies` (sorted on
/// the device when large) at 256 of its targets, against the f64 oracle.
fn sorted_call_error(
    gpu: &mut CudaExecutor,
    bodies: &[Particle<f64>],
    params: &Params<f64>,
) -> Result<f64, nbody_core::Error> {
    let mut out = vec![Field::zero(); bodies.len()];
    Executor::accelerations(gpu, bodies, bodies, params, &mut out)?;
    let stride = (bodies.len() / 256).max(1);
    let targets: Vec<Particle<f64>> = bodies.iter().step_by(stride).copied().collect();
    let mut truth = vec![oracle::Exact::default(); targets.len()];
    // The targets are declared as the sources' own, every `stride`-th one.
    let plain = params.with_overlap(nbody_core::Overlap::Disjoint);
    oracle::field(&targets, None, bodies, None, &plain, &mut truth)?;
    Ok(out
        .iter()
        .step_by(stride)
        .zip(&truth)
        .map(|(f, e)| {
            let d: f64 = (0..3).map(|k| (f.acceleration()[k] - e.acc[k]).powi(2)).sum::<f64>().sqrt();
            d / e.acc.iter().map(|a| a * a).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max))
}

/// The mixed batched kernel alone (CUDA events, median of 3) on `n` resident particles:
/// leaves of 32 targets, each against every leaf as a source span (a tree list opened
/// all the way), in the generator's order (tiles near every leaf: double-single
/// throughout) and in Morton order (far tiles in float).
fn mixed_batch_rates(gpu: &mut CudaExecutor, n: usize) -> Result<(), nbody_core::Error> {
    use nbody::core::{InteractionList, Pair, Span};
    let (p, v) = nbody_integrators::ics::plummer::<f64>(n, 1);
    let spans: Vec<Span> = (0..n as u32).step_by(32).map(|a| Span::new(a, (a + 32).min(n as u32))).collect();
    let pairs: Vec<Pair> =
        spans.iter().map(|&targets| Pair { targets, sources: Span::new(0, spans.len() as u32) }).collect();
    let list = InteractionList { pairs: &pairs, source_spans: &spans };
    let params = Params::softened(1.0 / 256.0).acceleration_only();
    println!("\nmixed batched kernel, N = {n}, leaves of 32 against every leaf:");
    for (what, bodies) in
        [("generated order", p.clone()), ("Morton order", nbody_integrators::ics::morton_sorted(&p, &v).0)]
    {
        let set = gpu.upload(&bodies)?;
        let mut fields = gpu.zeroed_fields::<f64>(n)?;
        let dl = gpu.upload_list(&list, n)?;
        gpu.accelerations_batch_resident(&set, &dl, &params, &mut fields)?;
        let secs =
            timing::time_with_events(gpu, 3, |g| g.accelerations_batch_resident(&set, &dl, &params, &mut fields))?;
        println!("  {what:>16}: {:.3e} interactions/s", dl.interactions() as f64 / secs);
    }
    Ok(())
}
