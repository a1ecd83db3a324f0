//! Leaf-kernel figures: the batched rate for target groups of 32 to 128 with source lists
//! of 1,000 to 5,000 particles, beside the dense rate of the same executor, and the
//! example tree code against direct summation. f32, eps = 1/256.
//!
//! `--executor cpu|cuda` (cuda needs the `cuda` feature), `--n N` particles for the
//! batched runs (default 65,536), `--tree N` tree-code size (default 65,536), `--theta`,
//! `--leaf`, `--group` (default `BarnesHut::for_cpu` or `for_gpu`); with cuda, `--resident N` first times the
//! batched and dense kernels alone on N resident particles.

use nbody::core::{Executor, Field, InteractionList, Pair, Params, Particle, Span};
use nbody::tree::BarnesHut;
use std::time::Instant;

fn median(mut f: impl FnMut() -> f64, reps: usize) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps).map(|_| f()).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every target group of `n` particles gets a list of spans of 32 particles at random
/// places: the shape of a tree code's near-field lists.
fn synthetic_list(n: usize, group: usize, list_len: usize, rng: &mut Xorshift) -> (Vec<Pair>, Vec<Span>) {
    let (mut pairs, mut spans) = (Vec::new(), Vec::new());
    for t0 in (0..n).step_by(group) {
        let first = spans.len() as u32;
        for _ in 0..list_len / 32 {
            let s = (rng.next() % (n - 32) as u64) as u32;
            spans.push(Span::new(s, s + 32));
        }
        pairs.push(Pair {
            targets: Span::new(t0 as u32, (t0 + group).min(n) as u32),
            sources: Span::new(first, spans.len() as u32),
        });
    }
    (pairs, spans)
}

/// Kernel-only rates on the GPU (particles, lists and outputs resident; CUDA events):
/// the batched kernel against the dense one on the same particles.
#[cfg(feature = "cuda")]
fn resident_rates(gpu: &mut nbody::cuda::CudaExecutor, n: usize) -> Result<(), nbody::Error> {
    use nbody::cuda::timing::time_with_events;
    let (bodies, _) = nbody::integrators::ics::plummer::<f32>(n, 1);
    let params = Params::softened(1.0f32 / 256.0).acceleration_only();
    let set = gpu.upload(&bodies)?;
    let mut fields = gpu.zeroed_fields::<f32>(n)?;
    gpu.accelerations_resident(&set, &set, &params, &mut fields)?;
    let dense = time_with_events(gpu, 3, |g| g.accelerations_resident(&set, &set, &params, &mut fields))?;
    let dense_rate = (n as f64).powi(2) / dense;
    println!("resident (kernel only, CUDA events), N = {n}: dense {dense_rate:.3e} interactions/s");
    println!("{:>6} {:>7} {:>14} {:>10} {:>12}", "group", "list", "interact/s", "of dense", "upload ms");
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    for group in [32usize, 64, 128] {
        for list_len in [1000usize, 3000, 5000] {
            let (pairs, spans) = synthetic_list(n, group, list_len, &mut rng);
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let t = Instant::now();
            let dl = gpu.upload_list(&list, n)?;
            let upload = t.elapsed().as_secs_f64();
            gpu.accelerations_batch_resident(&set, &dl, &params, &mut fields)?;
            let secs = time_with_events(gpu, 3, |g| g.accelerations_batch_resident(&set, &dl, &params, &mut fields))?;
            let rate = dl.interactions() as f64 / secs;
            println!(
                "{group:>6} {list_len:>7} {rate:>14.3e} {:>9.0}% {:>12.2}",
                100.0 * rate / dense_rate,
                1e3 * upload
            );
        }
    }
    Ok(())
}

fn run<E: Executor<f32>>(exec: &mut E, n: usize, tree_n: usize, theta: f64) {
    let (bodies, _) = nbody::integrators::ics::plummer::<f32>(n, 1);
    let params = Params::softened(1.0f32 / 256.0).acceleration_only();
    let dense_n = n.min(16_384);
    let mut out = vec![Field::zero(); n];
    let dense = median(
        || {
            let t = Instant::now();
            exec.accelerations(&bodies[..dense_n], &bodies[..dense_n], &params, &mut out[..dense_n]).unwrap();
            t.elapsed().as_secs_f64()
        },
        5,
    );
    let dense_rate = (dense_n * dense_n) as f64 / dense;
    println!("dense, N = {dense_n}: {dense_rate:.3e} interactions/s");
    println!("{:>6} {:>7} {:>14} {:>10}", "group", "list", "interact/s", "of dense");
    let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
    for group in [32usize, 64, 128] {
        for list_len in [1000usize, 3000, 5000] {
            let (pairs, spans) = synthetic_list(n, group, list_len, &mut rng);
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let secs = median(
                || {
                    let t = Instant::now();
                    exec.accelerations_batch(&bodies, &list, &params, &mut out).unwrap();
                    t.elapsed().as_secs_f64()
                },
                3,
            );
            let rate = list.interactions() as f64 / secs;
            println!("{group:>6} {list_len:>7} {rate:>14.3e} {:>9.0}%", 100.0 * rate / dense_rate);
        }
    }
    let (tree_bodies, _): (Vec<Particle<f32>>, _) = nbody::integrators::ics::plummer::<f32>(tree_n, 2);
    let p = Params::softened(1.0f32 / 256.0);
    let mut field = vec![Field::zero(); tree_n];
    let defaults = if exec.name() == "cuda" { BarnesHut::for_gpu(theta) } else { BarnesHut::for_cpu(theta) };
    let flag = |name: &str| std::env::args().skip_while(|a| a != name).nth(1).and_then(|v| v.parse().ok());
    let leaf_size = flag("--leaf").unwrap_or(defaults.leaf_size);
    let group_size = flag("--group").unwrap_or(defaults.group_size);
    let bh = BarnesHut { theta, leaf_size, group_size };
    bh.forces(&tree_bodies, &p, exec, &mut field).unwrap(); // warm-up
    field.iter_mut().for_each(|f| *f = Field::zero());
    let t = Instant::now();
    let stats = bh.forces(&tree_bodies, &p, exec, &mut field).unwrap();
    let tree_secs = t.elapsed().as_secs_f64();
    let summary = format!(
        "tree, N = {tree_n}, theta = {theta}, leaf {leaf_size}, group {group_size}: {:.3} s (build {:.3}, walk {:.3}, kernel {:.3}), {} interactions, {} groups, {} spans",
        tree_secs,
        stats.build.as_secs_f64(),
        stats.walk.as_secs_f64(),
        stats.kernel.as_secs_f64(),
        stats.interactions,
        stats.groups,
        stats.spans
    );
    if std::env::args().any(|a| a == "--no-direct") {
        println!("{summary}");
        return;
    }
    let mut direct = vec![Field::zero(); tree_n];
    let t = Instant::now();
    exec.accelerations(&tree_bodies, &tree_bodies, &p.with_overlap_identical(), &mut direct).unwrap();
    let direct_secs = t.elapsed().as_secs_f64();
    let norm = |v: [f32; 3]| ((v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) as f64).sqrt();
    let mut err: Vec<f64> = field
        .iter()
        .zip(&direct)
        .map(|(a, b)| {
            let (x, y) = (a.acceleration(), b.acceleration());
            norm([x[0] - y[0], x[1] - y[1], x[2] - y[2]]) / norm(y)
        })
        .collect();
    err.sort_by(f64::total_cmp);
    println!(
        "{summary}; direct {:.3} s: {:.1}x faster; median relative force error {:.2e}",
        direct_secs,
        direct_secs / tree_secs,
        err[tree_n / 2]
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let n: usize = arg("--n").and_then(|v| v.parse().ok()).unwrap_or(65_536);
    let tree_n: usize = arg("--tree").and_then(|v| v.parse().ok()).unwrap_or(65_536);
    let theta: f64 = arg("--theta").and_then(|v| v.parse().ok()).unwrap_or(0.5);
    match arg("--executor").as_deref().unwrap_or("cpu") {
        "cpu" => {
            let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
            println!("executor: cpu, {threads} threads");
            run(&mut nbody::cpu::CpuExecutor::new(nbody::cpu::Parallelism::Threads(threads)), n, tree_n, theta);
        }
        #[cfg(feature = "cuda")]
        "cuda" => match nbody::cuda::CudaExecutor::new() {
            Ok(mut gpu) => {
                println!("executor: cuda, {}", gpu.info().name);
                if let Some(r) = arg("--resident").and_then(|v| v.parse().ok()) {
                    if let Err(e) = resident_rates(&mut gpu, r) {
                        eprintln!("error: {e}");
                        std::process::exit(1);
                    }
                }
                run(&mut gpu, n, tree_n, theta);
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        },
        other => {
            eprintln!("error: unknown executor {other} (cpu{})", if cfg!(feature = "cuda") { ", cuda" } else { "" });
            std::process::exit(2);
        }
    }
}
