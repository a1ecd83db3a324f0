//! `nbody bench`: interactions per second against N for each executor and precision
//! compiled in, beside the plain scalar loop, as a table, JSON and a PNG plot.

use super::executors::{Backend, parallelism};
use super::files::write_atomic;
use super::plot::{Series, bench_png};
use crate::bench::{median_time, scalar_loop};
use anyhow::{Result, bail};
use clap::Args;
use nbody_core::cell::Cell;
use nbody_core::{
    Executor, Field, InteractionList, LeafList, Pair, Params, Particle, PerParticle, Real, Softening, Span,
};
use nbody_cpu::{CpuExecutor, Isa, MixedExecutor};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nbody bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Sizes N (targets = sources), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [256usize, 1024, 4096, 16384])]
    pub sizes: Vec<usize>,
    /// Seconds of timed calls per point (the median is reported).
    #[arg(long, default_value_t = 0.5)]
    pub seconds: f64,
    /// Skip the scalar loop above this N (it is slow).
    #[arg(long, default_value_t = 16384)]
    pub scalar_max: usize,
    /// Flops per interaction for the GFLOP/s column: 20 (CUDA SDK, Arora et al.),
    /// 26 (Miki et al.) or 38 (GRAPE-era count).
    #[arg(long, default_value_t = 20, value_parser = flop_convention)]
    pub flops: u32,
    /// CPU threads [default: all cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Size of the leaf-kernel comparison (Plummer, spline, per-particle softening and cell kernels on the same
    /// targets) [default: the largest of --sizes].
    #[arg(long, value_name = "N")]
    pub kernels: Option<usize>,
    /// Output folder for bench.json and bench.png.
    #[arg(long, value_name = "DIR", default_value = "nbody-out")]
    pub out: PathBuf,
}

fn flop_convention(s: &str) -> Result<u32, String> {
    match s {
        "20" | "26" | "38" => Ok(s.parse().unwrap_or(20)),
        _ => Err(format!("{s:?} is not a named convention: use 20, 26 or 38")),
    }
}

struct Row {
    n: usize,
    /// The kernel, when not the Plummer pair kernel: "spline", or "cells" (`n` is then
    /// the number of cells).
    kernel: &'static str,
    /// Targets, when they are not `n` (the leaf point).
    targets: Option<usize>,
    executor: &'static str,
    precision: &'static str,
    seconds: f64,
}

/// Times one executor on a Plummer sphere of `n` (acceleration only, eps = 1/256).
fn time_executor<T: Real>(e: &mut dyn Executor<T>, n: usize, budget: f64) -> Result<f64> {
    time_leaf(e, n, n, budget, Softening::Plummer, false)
}

/// Times `targets` of a Plummer sphere of `n` against all of it; `per_particle` gives
/// every particle its own softening length (two species, 1/256 and 1/64, alternating).
fn time_leaf<T: Real>(
    e: &mut dyn Executor<T>,
    targets: usize,
    n: usize,
    budget: f64,
    softening: Softening,
    per_particle: bool,
) -> Result<f64> {
    let (all, _) = nbody_integrators::ics::plummer::<T>(n, 1);
    let p = &all[..];
    let t = &all[..targets.min(n)];
    let params = Params::softened(T::from_f64(1.0 / 256.0)).acceleration_only().with_softening(softening);
    let mut out = vec![Field::zero(); t.len()];
    let lengths: Vec<T> = (0..n).map(|i| T::from_f64(if i % 2 == 0 { 1.0 / 256.0 } else { 1.0 / 64.0 })).collect();
    let eps = PerParticle { targets: &lengths[..t.len()], sources: &lengths };
    // median_time's own warm-up call reports a failure here too.
    let mut failed = None;
    let t = median_time(budget, || {
        let call = if per_particle {
            e.accelerations_per_particle(t, p, eps, &params, &mut out)
        } else {
            e.accelerations(t, p, &params, &mut out)
        };
        if let Err(err) = call {
            failed = Some(err);
        }
    });
    match failed {
        Some(err) => Err(err.into()),
        None => Ok(t),
    }
}

/// Times the cell kernel: a Plummer sphere of `n` as targets against its own cells of
/// eight consecutive particles (in Morton order, so cells are compact), in one leaf-list
/// call; returns the seconds and the number of cells.
fn time_cells<T: Real>(e: &mut dyn Executor<T>, n: usize, budget: f64) -> Result<(f64, usize)> {
    let (mut all, _) = nbody_integrators::ics::plummer::<T>(n, 1);
    let mut order = Vec::new();
    nbody_core::layout::morton_order(&all, &mut order);
    all = order.iter().map(|&i| all[i as usize]).collect();
    let cells: Vec<Cell<T>> = all.chunks(8).map(Cell::from_particles).collect();
    let params = Params::softened(T::from_f64(1.0 / 256.0)).acceleration_only();
    let pairs = [Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 0) }];
    let list = LeafList {
        particles: InteractionList { pairs: &pairs, source_spans: &[] },
        cells: &[Span::new(0, 1)],
        cell_spans: &[Span::new(0, cells.len() as u32)],
    };
    let mut out = vec![Field::zero(); n];
    let mut failed = None;
    let t = median_time(budget, || {
        if let Err(err) = e.accelerations_batch_cells(&all, &cells, &list, &params, &mut out) {
            failed = Some(err);
        }
    });
    match failed {
        Some(err) => Err(err.into()),
        None => Ok((t, cells.len())),
    }
}

/// The leaf kernels at `n` on one executor: the spline and the cells beside the Plummer
/// pair kernel (the spline row is left out where the executor refuses it).
fn kernel_rows<T: Real>(
    e: &mut dyn Executor<T>,
    executor: &'static str,
    precision: &'static str,
    n: usize,
    budget: f64,
) -> Result<Vec<Row>> {
    let row = |kernel, rows: usize, targets, seconds| Row { n: rows, kernel, targets, executor, precision, seconds };
    let mut out = vec![row("plummer", n, None, time_leaf(e, n, n, budget, Softening::Plummer, false)?)];
    let variants = [
        ("spline", Softening::Spline, false),
        ("plummer-each", Softening::Plummer, true),
        ("spline-each", Softening::Spline, true),
    ];
    for (kernel, softening, each) in variants {
        match time_leaf(e, n, n, budget, softening, each) {
            Ok(seconds) => out.push(row(kernel, n, None, seconds)),
            Err(err) => println!("{executor} {precision} {kernel}: {err}"),
        }
    }
    let (seconds, cells) = time_cells(e, n, budget)?;
    out.push(row("cells", cells, Some(n), seconds));
    Ok(out)
}

fn time_scalar<T: Real>(n: usize, budget: f64) -> f64 {
    let (p, _): (Vec<Particle<T>>, _) = nbody_integrators::ics::plummer::<T>(n, 1);
    let mut out = vec![Field::zero(); n];
    median_time(budget, || scalar_loop(&p, T::from_f64(1.0 / 65_536.0), &mut out))
}

impl Row {
    fn interactions(&self) -> f64 {
        self.targets.unwrap_or(self.n) as f64 * self.n as f64
    }

    fn label(&self) -> String {
        let size = match self.targets {
            Some(t) => format!("{t}x{}", self.n),
            None => self.n.to_string(),
        };
        match self.kernel {
            "" => size,
            k => format!("{size} {k}"),
        }
    }
}

/// Runs `nbody bench`.
pub fn bench(a: &BenchArgs) -> Result<ExitCode> {
    if a.sizes.is_empty() || a.sizes.contains(&0) {
        bail!("--sizes must list sizes of at least 1");
    }
    if !(a.seconds.is_finite() && a.seconds >= 0.0) {
        bail!("--seconds must be zero or positive (got {})", a.seconds);
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |t| t.get()));
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    std::fs::create_dir_all(&a.out)?;
    let mut cpu = CpuExecutor::new(parallelism(threads));
    let mut mixed = MixedExecutor::new(parallelism(threads));
    // The first GPU, where this build and this machine have one.
    let mut cuda = nbody_backends::cuda_compiled().then(|| "cuda:0".parse::<Backend>().ok()?.open().ok()).flatten();
    let flops = a.flops as f64;
    println!(
        "nbody bench: Plummer sphere, targets = sources = N, acceleration only; median of calls after a warm-up; {threads} CPU threads ({}); GFLOP/s at {} flops per interaction",
        Isa::detect().name(),
        a.flops
    );
    match &cuda {
        Some(c) => println!("CUDA device: {}", c.device_line().unwrap_or_default()),
        None if nbody_backends::cuda_compiled() => println!("CUDA: compiled in, no device found"),
        None => {}
    }
    println!("{:>18} {:>10} {:>5} {:>14} {:>10}", "N", "executor", "prec", "interact/s", "GFLOP/s");
    let mut rows = Vec::new();
    let print = |row: &Row| {
        let rate = row.interactions() / row.seconds;
        println!(
            "{:>18} {:>10} {:>5} {:>14.3e} {:>10.1}",
            row.label(),
            row.executor,
            row.precision,
            rate,
            rate * flops * 1e-9
        );
    };
    let mut report = |row: Row| {
        print(&row);
        rows.push(row);
    };
    for &n in &a.sizes {
        report(Row {
            n,
            kernel: "",
            targets: None,
            executor: "cpu",
            precision: "f32",
            seconds: time_executor::<f32>(&mut cpu, n, a.seconds)?,
        });
        report(Row {
            n,
            kernel: "",
            targets: None,
            executor: "cpu",
            precision: "f64",
            seconds: time_executor::<f64>(&mut cpu, n, a.seconds)?,
        });
        report(Row {
            n,
            kernel: "",
            targets: None,
            executor: "mixed",
            precision: "f64",
            seconds: time_executor::<f64>(&mut mixed, n, a.seconds)?,
        });
        if let Some(c) = cuda.as_mut() {
            report(Row {
                n,
                kernel: "",
                targets: None,
                executor: "cuda",
                precision: "f32",
                seconds: time_executor::<f32>(c.get::<f32>()?, n, a.seconds)?,
            });
            report(Row {
                n,
                kernel: "",
                targets: None,
                executor: "cuda",
                precision: "f64",
                seconds: time_executor::<f64>(c.get::<f64>()?, n, a.seconds)?,
            });
        }
        if n <= a.scalar_max {
            report(Row {
                n,
                kernel: "",
                targets: None,
                executor: "scalar",
                precision: "f32",
                seconds: time_scalar::<f32>(n, a.seconds),
            });
            report(Row {
                n,
                kernel: "",
                targets: None,
                executor: "scalar",
                precision: "f64",
                seconds: time_scalar::<f64>(n, a.seconds),
            });
        }
    }
    // The leaf point a tree code calls: 64 targets against 1,000 sources, and what the
    // call costs beyond its interactions at the executor's rate at the largest N.
    let largest = a.sizes.iter().copied().max().unwrap_or(1);
    let leaf_times = [
        ("f32", time_leaf::<f32>(&mut cpu, 64, 1000, a.seconds, Softening::Plummer, false)?),
        ("f64", time_leaf::<f64>(&mut cpu, 64, 1000, a.seconds, Softening::Plummer, false)?),
    ];
    for (precision, seconds) in leaf_times {
        report(Row { n: 1000, kernel: "", targets: Some(64), executor: "cpu", precision, seconds });
    }
    let mut leaf = Vec::new();
    for (precision, seconds) in leaf_times {
        let dense = rows
            .iter()
            .find(|r| r.executor == "cpu" && r.precision == precision && r.n == largest && r.kernel.is_empty());
        if let Some(d) = dense {
            let extra = seconds - 64_000.0 / (d.interactions() / d.seconds);
            leaf.push(format!(
                "  cpu {precision} 64 x 1,000: {:.2} us, {:+.2} us beyond its interactions at the N = {largest} rate",
                seconds * 1e6,
                extra * 1e6
            ));
        }
    }
    leaf.iter().for_each(|l| println!("{l}"));
    // The leaf kernels side by side at one size: spline over Plummer, cells against pairs.
    let kn = a.kernels.unwrap_or(largest);
    println!("leaf kernels at N = {kn} (cells: N targets x N/8 cells of eight particles):");
    let mut kernels = kernel_rows::<f32>(&mut cpu, "cpu", "f32", kn, a.seconds)?;
    kernels.extend(kernel_rows::<f64>(&mut cpu, "cpu", "f64", kn, a.seconds)?);
    if let Some(c) = cuda.as_mut() {
        kernels.extend(kernel_rows::<f32>(c.get::<f32>()?, "cuda", "f32", kn, a.seconds)?);
        kernels.extend(kernel_rows::<f64>(c.get::<f64>()?, "cuda", "f64", kn, a.seconds)?);
    }
    let mut ratios = Vec::new();
    for k in kernels {
        let plummer = rows
            .iter()
            .chain(std::iter::once(&k))
            .find(|r| r.kernel == "plummer" && r.executor == k.executor && r.precision == k.precision)
            .map(|r| r.interactions() / r.seconds);
        if let (Some(p), "spline" | "cells" | "plummer-each" | "spline-each") = (plummer, k.kernel) {
            let rate = k.interactions() / k.seconds;
            ratios.push(format!(
                "  {} {} {}: {:.2} of the Plummer pair rate",
                k.executor,
                k.precision,
                k.kernel,
                rate / p
            ));
        }
        print(&k);
        rows.push(k);
    }
    ratios.iter().for_each(|l| println!("{l}"));
    let results: Vec<_> = rows
        .iter()
        .map(|r| {
            let rate = r.interactions() / r.seconds;
            json!({"n": r.n, "targets": r.targets.unwrap_or(r.n), "kernel": if r.kernel.is_empty() { "plummer" } else { r.kernel },
                "executor": r.executor, "precision": r.precision, "seconds": r.seconds,
                "interactions_per_second": rate, "gflops": rate * flops * 1e-9})
        })
        .collect();
    let doc = json!({"version": env!("CARGO_PKG_VERSION"), "threads": threads, "isa": Isa::detect().name(),
        "flops_per_interaction": a.flops, "timing": "median wall time of repeated calls after one warm-up",
        "results": results});
    let json_path = a.out.join("bench.json");
    write_atomic(&json_path, |w| w.write_all(serde_json::to_string_pretty(&doc).unwrap_or_default().as_bytes()))?;
    let mut series: Vec<Series> = Vec::new();
    for r in rows.iter().filter(|r| r.targets.is_none() && r.kernel.is_empty()) {
        let label = format!("{} {}", r.executor, r.precision);
        let point = (r.n as f64, (r.n as f64).powi(2) / r.seconds);
        match series.iter_mut().find(|s| s.label == label) {
            Some(s) => s.points.push(point),
            None => series.push(Series { label, points: vec![point] }),
        }
    }
    let png_path = a.out.join("bench.png");
    bench_png(&png_path, "Interactions per second against N", &series)?;
    println!("wrote {} and {}", json_path.display(), png_path.display());
    Ok(ExitCode::SUCCESS)
}
