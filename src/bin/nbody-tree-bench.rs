//! Leaf-kernel figures: the batched rate for target groups of 32 to 128 with source lists
//! of 1,000 to 5,000 particles, beside the dense rate of the same executor, and the
//! example tree code against direct summation. f32, eps = 1/256 (the device tree's: `--eps`).
//!
//! `--executor cpu|cuda` (cuda needs the `cuda` feature), `--n N` particles for the
//! batched runs (default 65,536; 0 skips them), `--tree N` tree-code size (default
//! 65,536; 0 skips it), `--theta` (one or more, comma-separated), `--multipole
//! monopole|quadrupole|both`, `--leaf`, `--group` (default `BarnesHut::for_cpu` or
//! `for_gpu`); with cuda, `--resident N` first times the batched and dense kernels alone
//! on N resident particles. Each tree line gives the time split, the interactions
//! (particle-particle and particle-cell) and the median and 99th-percentile relative
//! force error against direct summation on the same executor. With cuda,
//! `--device-tree N,...` runs the device-resident tree instead (`nbody_cuda::tree`: leaves
//! of 40 and groups of 96, `TreeSettings::new`, unless `--leaf`/`--group` say otherwise) on a Plummer sphere and
//! a clustered set, with each phase's GPU time and the error against direct summation.
//! `--alpha A,...` adds lines with Gadget's relative criterion (device tree and host
//! tree), its previous field from a geometric force at theta 0.5. `--local L,...` gives the
//! device tree's local expansions (a line for each; 0 for none; default theta / 5 up to
//! 0.2), and each line counts the cells translated into groups' expansions; `--super S,...`
//! the super-groups' size (a line for each; 0 for none) and the cells translated into theirs.
//! `--seed S,...` draws the device tree's Plummer sphere (and the leapfrog's) from each
//! seed in turn (default 2): one realization's octree can be luckier than another's.

use clap::Parser;
use nbody::bench::median_of;
use nbody::core::cell::Criterion;
use nbody::core::{Executor, Field, InteractionList, Pair, Params, Particle, Span};
use nbody::tree::{BarnesHut, Multipole, Opening};
use std::time::Instant;

/// The batched (leaf-kernel) rate against the dense one, and the example tree code
/// against direct summation.
#[derive(Parser, Debug)]
#[command(name = "nbody-tree-bench")]
struct Args {
    /// cpu, or cuda (with the `cuda` feature).
    #[arg(long, default_value = "cpu")]
    executor: String,
    /// Particles for the batched runs.
    #[arg(long, default_value_t = 65_536)]
    n: usize,
    /// Particles for the tree code.
    #[arg(long, default_value_t = 65_536)]
    tree: usize,
    /// Opening angles, comma-separated.
    #[arg(long, default_value = "0.5", value_delimiter = ',')]
    theta: Vec<f64>,
    /// monopole, quadrupole or both.
    #[arg(long, default_value = "both")]
    multipole: String,
    /// The opening test's size: extent (twice the farthest particle's distance from the
    /// centre of mass) or side (the node's side).
    #[arg(long, default_value = "extent")]
    opening: String,
    /// Leaf size (default: `BarnesHut::for_cpu` or `for_gpu`).
    #[arg(long)]
    leaf: Option<usize>,
    /// Target group size (default: `BarnesHut::for_cpu` or `for_gpu`).
    #[arg(long)]
    group: Option<usize>,
    /// With cuda: first times the batched and dense kernels alone on N resident particles.
    #[arg(long, value_name = "N")]
    resident: Option<usize>,
    /// Skips the direct summation the tree code is compared against.
    #[arg(long)]
    no_direct: bool,
    /// Gadget's relative criterion at these alphas (comma-separated), after the first
    /// line's theta: the previous field comes from a geometric force at theta 0.5.
    #[arg(long, value_delimiter = ',')]
    alpha: Vec<f64>,
    /// With --device-tree: also times this many leapfrog steps over the device tree
    /// (after two warm-up steps), at the first theta (or alpha) given, on the Plummer
    /// sphere.
    #[arg(long, default_value_t = 0)]
    steps: usize,
    /// With cuda: the device-resident tree at these sizes (comma-separated), on a
    /// Plummer sphere and a clustered set, instead of the batched runs and the host tree.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    device_tree: Vec<usize>,
    /// The device tree's Plummer softening (its force and the direct reference's).
    #[arg(long, default_value_t = 1.0 / 256.0)]
    eps: f64,
    /// The device tree's local expansions (`TreeSettings::local`, comma-separated: a
    /// line for each; 0 for none; default `TreeSettings::new`'s, theta / 5 up to 0.2).
    #[arg(long, value_delimiter = ',')]
    local: Vec<f64>,
    /// The device tree's super-groups (`TreeSettings::supers`, comma-separated: a line for
    /// each; 0 for none; default `TreeSettings::new`'s).
    #[arg(long = "super", value_delimiter = ',')]
    supers: Vec<usize>,
    /// The device tree's Plummer spheres' seeds (comma-separated: each size's lines for
    /// each seed, then the clustered set's, which has no seed; the leapfrog runs on the
    /// first seed's sphere).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    seed: Vec<u64>,
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
    synthetic_list_over(n, n, group, list_len, rng)
}

/// [`synthetic_list`] with the spans over `m` sources (cells) instead of the targets.
fn synthetic_list_over(
    n: usize,
    m: usize,
    group: usize,
    list_len: usize,
    rng: &mut Xorshift,
) -> (Vec<Pair>, Vec<Span>) {
    let (mut pairs, mut spans) = (Vec::new(), Vec::new());
    for t0 in (0..n).step_by(group) {
        let first = spans.len() as u32;
        for _ in 0..list_len / 32 {
            let s = (rng.next() % (m - 32) as u64) as u32;
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
    // The cell kernel, the same shapes over cells of eight particles each (checked
    // against the reference on the first targets before timing).
    let cells: Vec<nbody::core::cell::Cell<f32>> =
        bodies.chunks(8).map(nbody::core::cell::Cell::from_particles).collect();
    let device_cells = gpu.upload_cells(&cells)?;
    println!("cell kernel (far cells with a quadrupole), {} cells:", cells.len());
    println!("{:>6} {:>7} {:>14} {:>16}", "group", "cells", "cell-int/s", "of dense pairs");
    for group in [32usize, 64, 128] {
        for list_len in [1000usize, 3000] {
            let (pairs, spans) = synthetic_list_over(n, cells.len(), group, list_len, &mut rng);
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let dl = gpu.upload_cell_list(&list, n, cells.len())?;
            let mut on_device = gpu.zeroed_fields::<f32>(n)?;
            gpu.accelerations_cells_resident(&set, &device_cells, &dl, &params, &mut on_device)?;
            let mut got = vec![Field::zero(); n];
            gpu.download(&on_device, &mut got)?;
            let check = group.min(n);
            let mut want = vec![Field::zero(); check];
            let named: Vec<_> =
                spans[pairs[0].sources.range()].iter().flat_map(|s| cells[s.range()].iter().copied()).collect();
            nbody::core::Reference.accelerations_cells(&bodies[..check], &named, &params, &mut want)?;
            let worst = got[..check]
                .iter()
                .zip(&want)
                .map(|(a, b)| ((a.ax - b.ax).abs() / b.ax.abs().max(1e-30)) as f64)
                .fold(0.0, f64::max);
            if worst > 1e-3 {
                eprintln!("error: the cell kernel differs from the reference by {worst:e}");
                std::process::exit(1);
            }
            let secs = time_with_events(gpu, 3, |g| {
                g.accelerations_cells_resident(&set, &device_cells, &dl, &params, &mut fields)
            })?;
            let rate = dl.interactions() as f64 / secs;
            println!("{group:>6} {list_len:>7} {rate:>14.3e} {:>15.0}%", 100.0 * rate / dense_rate);
        }
    }
    Ok(())
}

/// A clustered set: 32 Plummer clumps of scale 0.03 at random places in the unit ball,
/// equal masses summing to 1.
#[cfg(feature = "cuda")]
fn clustered(n: usize) -> Vec<Particle<f32>> {
    let clumps = 32;
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut uniform = move || (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    let mut out = Vec::with_capacity(n);
    for k in 0..clumps {
        let size = n / clumps + usize::from(k < n % clumps);
        let centre = loop {
            let c = [2.0 * uniform() - 1.0, 2.0 * uniform() - 1.0, 2.0 * uniform() - 1.0];
            if c.iter().map(|x| x * x).sum::<f64>() <= 1.0 {
                break c;
            }
        };
        let (clump, _) = nbody::integrators::ics::plummer::<f64>(size.max(1), 100 + k as u64);
        out.extend(clump.iter().take(size).map(|p| {
            let at = |i: usize| (centre[i] + 0.03 * p.position()[i]) as f32;
            Particle::new(at(0), at(1), at(2), 1.0 / n as f32)
        }));
    }
    out
}

/// The device-resident tree (nbody_cuda::tree) at each size, on a Plummer sphere and a
/// clustered set: the GPU time of each phase (CUDA events, median of 5 after 2 warm-ups)
/// and the relative force error (median, 99th percentile, largest) against direct
/// summation in f64 on the same GPU (every particle up to 2^20, else the first 65,536:
/// the generators' order is random).
#[cfg(feature = "cuda")]
fn device_tree(gpu: &mut nbody::cuda::CudaExecutor, args: &Args) -> Result<(), nbody::Error> {
    use nbody::cuda::{DeviceTree, TreeReport, TreeSettings};
    let p = Params::softened(args.eps as f32);
    let quadrupole = match args.multipole.as_str() {
        "monopole" => vec![false],
        "quadrupole" => vec![true],
        _ => vec![true, false],
    };
    for &n in &args.device_tree {
        let mut sets: Vec<(String, Vec<Particle<f32>>)> = args
            .seed
            .iter()
            .map(|&seed| {
                let name = if args.seed == [2] { "plummer".to_string() } else { format!("plummer (seed {seed})") };
                (name, nbody::integrators::ics::plummer::<f32>(n, seed).0)
            })
            .collect();
        sets.push(("clustered".to_string(), clustered(n)));
        for (set_index, (name, bodies)) in sets.into_iter().enumerate() {
            let sample = n.min(if n <= 1 << 20 { n } else { 65_536 });
            // The reference: direct summation in f64 on the same GPU.
            let mut direct = vec![Field::<f64>::zero(); sample];
            let shared = nbody::core::Overlap::Shared { target_start: 0, source_start: 0, len: sample };
            if !args.no_direct {
                let wide: Vec<Particle<f64>> =
                    bodies.iter().map(|b| Particle::new(b.x as f64, b.y as f64, b.z as f64, b.m as f64)).collect();
                let p64 = Params::softened(args.eps).with_overlap(shared);
                gpu.accelerations(&wide[..sample], &wide, &p64, &mut direct)?;
            }
            let set = gpu.upload(&bodies)?;
            let mut out = gpu.zeroed_fields::<f32>(n)?;
            let mut tree = DeviceTree::new();
            // The relative criterion's previous field: a geometric force at theta 0.5.
            let mut previous = gpu.zeroed_fields::<f32>(n)?;
            if !args.alpha.is_empty() {
                gpu.tree_forces(&mut tree, &set, &TreeSettings::new(0.5), &p, &mut previous)?;
            }
            let criteria = criteria(args);
            let locals = |theta: f64| -> Vec<f64> {
                if args.local.is_empty() { vec![TreeSettings::local_for(theta)] } else { args.local.clone() }
            };
            let supers = if args.supers.is_empty() { vec![TreeSettings::new(1.0).supers] } else { args.supers.clone() };
            let settings_at: Vec<_> = criteria
                .iter()
                .flat_map(|&(t, c)| locals(t).into_iter().map(move |l| ((t, c), l)))
                .flat_map(|tcl| supers.iter().map(move |&s| (tcl, s)))
                .collect();
            for &q in &quadrupole {
                for &(((theta, criterion), local), supers) in &settings_at {
                    let settings = TreeSettings {
                        theta,
                        leaf_size: args.leaf.unwrap_or(TreeSettings::new(theta).leaf_size),
                        group_size: args.group.unwrap_or(TreeSettings::new(theta).group_size),
                        side: args.opening == "side",
                        quadrupole: q,
                        criterion,
                        local,
                        supers,
                    };
                    let mut reports: Vec<(TreeReport, f64)> = Vec::new();
                    for rep in 0..7 {
                        gpu.clear(&mut out)?;
                        let t = Instant::now();
                        let r = gpu.tree_forces_after(&mut tree, &set, &previous, &settings, &p, &mut out)?;
                        if rep >= 2 {
                            reports.push((r, t.elapsed().as_secs_f64()));
                        }
                    }
                    reports.sort_by(|a, b| a.0.times.total().total_cmp(&b.0.times.total()));
                    let (r, wall) = reports[reports.len() / 2];
                    let ms = |s: f64| s * 1e3;
                    let test = test_name(theta, criterion);
                    let mut line = format!(
                        "device tree {name}, N = {n}, eps {}, {test}, {}, local {local}, super {supers}, leaf {}, group {}: {:.2} ms GPU (sort {:.2}, build {:.2}, moments {:.2}, walk {:.2}, kernels {:.2}), {:.2} ms wall; {} nodes, {} groups, {} + {} cell interactions, {} cells into groups' expansions, {} into {} super-groups', {} + {} work items ({} runs of 32 targets cut, longest list {} sources), {} walks",
                        args.eps,
                        if q { "quadrupole" } else { "monopole" },
                        settings.leaf_size,
                        settings.group_size,
                        ms(r.times.total()),
                        ms(r.times.sort),
                        ms(r.times.build),
                        ms(r.times.moments),
                        ms(r.times.walk),
                        ms(r.times.kernels),
                        ms(wall),
                        r.nodes,
                        r.groups,
                        r.interactions,
                        r.cell_interactions,
                        r.local_cells,
                        r.super_cells,
                        r.super_groups,
                        r.items,
                        r.cell_items,
                        r.cut_lists,
                        r.longest_list,
                        r.walks
                    );
                    if !args.no_direct {
                        let mut field = vec![Field::zero(); n];
                        gpu.download(&out, &mut field)?;
                        let (median, p99, max) = force_errors(&field[..sample], &direct);
                        line += &format!(
                            "; relative force error against f64 direct summation: median {median:.2e}, 99th percentile {p99:.2e}, max {max:.2e} ({sample} targets)"
                        );
                    }
                    println!("{line}");
                }
            }
            // The leapfrog on the first seed's sphere.
            if args.steps > 0 && set_index == 0 {
                leapfrog_steps(gpu, n, criteria[0], args)?;
            }
        }
    }
    Ok(())
}

/// Leapfrog steps of dt = 1/256 over the device tree on a Plummer sphere of `n`: the
/// wall time per step (each force waits for its lists' counts, so the clock sees the
/// GPU's work) and the last force's phases.
#[cfg(feature = "cuda")]
fn leapfrog_steps(
    gpu: &mut nbody::cuda::CudaExecutor,
    n: usize,
    (theta, criterion): (f64, nbody::core::cell::Criterion),
    args: &Args,
) -> Result<(), nbody::Error> {
    use nbody::cuda::TreeSettings;
    let (pos, vel) = nbody::integrators::ics::plummer::<f32>(n, args.seed.first().copied().unwrap_or(2));
    let settings = TreeSettings {
        leaf_size: args.leaf.unwrap_or(TreeSettings::new(theta).leaf_size),
        group_size: args.group.unwrap_or(TreeSettings::new(theta).group_size),
        side: args.opening == "side",
        local: args.local.first().copied().unwrap_or(TreeSettings::local_for(theta)),
        supers: args.supers.first().copied().unwrap_or(TreeSettings::new(theta).supers),
        ..TreeSettings::new(theta).with_criterion(criterion)
    };
    use nbody::core::resident::Resident;
    let mut system = gpu.upload_tree_system(&pos, &vel, settings)?;
    let p = Params::softened(1.0f32 / 256.0).with_overlap_identical();
    for _ in 0..2 {
        gpu.leapfrog_step(&mut system, &p, 1.0 / 256.0)?;
    }
    // Each force waits for its lists' counts, so the clock sees the GPU's work (but
    // the last kick, a fraction of a millisecond).
    let (t, mut forces) = (Instant::now(), 0.0);
    for _ in 0..args.steps {
        gpu.leapfrog_step(&mut system, &p, 1.0 / 256.0)?;
        forces += system.tree().map_or(0.0, |t| t.last_force().times.total());
    }
    let per_step = t.elapsed().as_secs_f64() / args.steps as f64;
    let r = *system.tree().expect("a tree system").last_force();
    println!(
        "device tree leapfrog, N = {n}, {criterion:?} (theta {theta}): {:.2} ms per step over {} steps, {:.2} ms of it the force on the GPU (last force {:.2} ms: sort {:.2}, build {:.2}, moments {:.2}, walk {:.2}, kernels {:.2})",
        per_step * 1e3,
        args.steps,
        forces * 1e3 / args.steps as f64,
        r.times.total() * 1e3,
        r.times.sort * 1e3,
        r.times.build * 1e3,
        r.times.moments * 1e3,
        r.times.walk * 1e3,
        r.times.kernels * 1e3
    );
    Ok(())
}

/// The opening tests a run compares: the geometric one at each theta, then the relative
/// one at each alpha (its first force at the first theta).
fn criteria(args: &Args) -> Vec<(f64, Criterion)> {
    let geometric = args.theta.iter().map(|&t| (t, Criterion::Geometric));
    geometric.chain(args.alpha.iter().map(|&alpha| (args.theta[0], Criterion::Relative { alpha }))).collect()
}

/// How a line names its opening test.
fn test_name(theta: f64, criterion: Criterion) -> String {
    match criterion {
        Criterion::Relative { alpha } => format!("relative alpha = {alpha}"),
        Criterion::Geometric => format!("theta = {theta}"),
    }
}

/// The median and 99th-percentile relative acceleration error of `field` against `direct`.
/// The median, 99th percentile and largest relative force error of `field` against
/// `direct` (its first `direct.len()` targets).
fn force_errors<R: nbody::core::Real>(field: &[Field<f32>], direct: &[Field<R>]) -> (f64, f64, f64) {
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let mut err: Vec<f64> = field
        .iter()
        .zip(direct)
        .map(|(a, b)| {
            let (x, y) = (a.acceleration().map(f64::from), b.acceleration().map(|c| c.to_f64()));
            norm([x[0] - y[0], x[1] - y[1], x[2] - y[2]]) / norm(y)
        })
        .collect();
    err.sort_by(f64::total_cmp);
    (err[err.len() / 2], err[err.len() * 99 / 100], err[err.len() - 1])
}

fn run<E: Executor<f32>>(exec: &mut E, args: &Args) {
    if args.n > 0 {
        batched_rates(exec, args.n);
    }
    // --tree 0 skips the tree code, as --n 0 skips the batched runs.
    if args.tree > 0 {
        tree_code(exec, args);
    }
}

/// The batched rate on synthetic lists against the dense rate.
fn batched_rates<E: Executor<f32>>(exec: &mut E, n: usize) {
    let (bodies, _) = nbody::integrators::ics::plummer::<f32>(n, 1);
    let params = Params::softened(1.0f32 / 256.0).acceleration_only();
    let dense_n = n.min(16_384);
    let mut out = vec![Field::zero(); n];
    let dense = median_of(5, || {
        exec.accelerations(&bodies[..dense_n], &bodies[..dense_n], &params, &mut out[..dense_n]).unwrap();
    });
    let dense_rate = (dense_n * dense_n) as f64 / dense;
    println!("dense, N = {dense_n}: {dense_rate:.3e} interactions/s");
    println!("{:>6} {:>7} {:>14} {:>10}", "group", "list", "interact/s", "of dense");
    let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
    for group in [32usize, 64, 128] {
        for list_len in [1000usize, 3000, 5000] {
            let (pairs, spans) = synthetic_list(n, group, list_len, &mut rng);
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let secs = median_of(3, || exec.accelerations_batch(&bodies, &list, &params, &mut out).unwrap());
            let rate = list.interactions() as f64 / secs;
            println!("{group:>6} {list_len:>7} {rate:>14.3e} {:>9.0}%", 100.0 * rate / dense_rate);
        }
    }
}

/// The example tree code at each theta and multipole against direct summation.
fn tree_code<E: Executor<f32>>(exec: &mut E, args: &Args) {
    let tree_n = args.tree;
    let (tree_bodies, _): (Vec<Particle<f32>>, _) = nbody::integrators::ics::plummer::<f32>(tree_n, 2);
    let p = Params::softened(1.0f32 / 256.0);
    let mut direct = vec![Field::zero(); tree_n];
    let mut direct_secs = f64::NAN;
    if !args.no_direct {
        let t = Instant::now();
        exec.accelerations(&tree_bodies, &tree_bodies, &p.with_overlap_identical(), &mut direct).unwrap();
        direct_secs = t.elapsed().as_secs_f64();
        println!("direct, N = {tree_n}: {direct_secs:.3} s");
    }
    let multipoles = match args.multipole.as_str() {
        "monopole" => vec![Multipole::Monopole],
        "quadrupole" => vec![Multipole::Quadrupole],
        "both" => vec![Multipole::Monopole, Multipole::Quadrupole],
        other => {
            eprintln!("error: --multipole {other}: expected monopole, quadrupole or both");
            std::process::exit(2);
        }
    };
    let opening = match args.opening.as_str() {
        "extent" => Opening::Extent,
        "side" => Opening::Side,
        other => {
            eprintln!("error: --opening {other}: expected extent or side");
            std::process::exit(2);
        }
    };
    let mut field = vec![Field::zero(); tree_n];
    let gpu = exec.name() == "cuda";
    let defaults = |theta| BarnesHut::for_executor(gpu, theta);
    // The relative criterion's previous field: a geometric force at theta 0.5.
    let mut previous = vec![Field::zero(); tree_n];
    if !args.alpha.is_empty() {
        defaults(0.5).forces(&tree_bodies, &p, exec, &mut previous).unwrap();
    }
    let criteria = criteria(args);
    for &multipole in &multipoles {
        for &(theta, criterion) in &criteria {
            let leaf_size = args.leaf.unwrap_or(defaults(theta).leaf_size);
            let group_size = args.group.unwrap_or(defaults(theta).group_size);
            let bh = BarnesHut { theta, leaf_size, group_size, multipole, opening, criterion };
            // Only the relative criterion reads (and checks) a previous field.
            let mut force = |field: &mut [Field<f32>]| match criterion {
                Criterion::Relative { .. } => bh.forces_after(&tree_bodies, &previous, &p, exec, field),
                Criterion::Geometric => bh.forces(&tree_bodies, &p, exec, field),
            };
            field.iter_mut().for_each(|f| *f = Field::zero());
            force(&mut field).unwrap(); // warm-up
            field.iter_mut().for_each(|f| *f = Field::zero());
            let t = Instant::now();
            let stats = force(&mut field).unwrap();
            let tree_secs = t.elapsed().as_secs_f64();
            let test = test_name(theta, criterion);
            let mut line = format!(
                "tree {multipole:?} ({opening:?}), N = {tree_n}, {test}, leaf {leaf_size}, group {group_size}: {:.4} s (build {:.4}, walk {:.4}, kernel {:.4}), {} + {} cell = {} interactions, {} groups, {} spans",
                tree_secs,
                stats.build.as_secs_f64(),
                stats.walk.as_secs_f64(),
                stats.kernel.as_secs_f64(),
                stats.interactions,
                stats.cell_interactions,
                stats.interactions + stats.cell_interactions,
                stats.groups,
                stats.spans
            );
            if !args.no_direct {
                let (median, p99, max) = force_errors(&field, &direct);
                line += &format!(
                    "; {:.1}x direct; relative force error median {median:.2e}, 99th percentile {p99:.2e}, max {max:.2e}",
                    direct_secs / tree_secs
                );
            }
            println!("{line}");
        }
    }
}

fn main() {
    let args = Args::parse();
    match args.executor.as_str() {
        "cpu" => {
            let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
            println!("executor: cpu, {threads} threads");
            run(&mut nbody::cpu::CpuExecutor::new(nbody::cpu::Parallelism::Threads(threads)), &args);
        }
        #[cfg(feature = "cuda")]
        "cuda" => match nbody::cuda::CudaExecutor::new() {
            Ok(mut gpu) => {
                println!("executor: cuda, {}", gpu.info().name);
                if let Some(r) = args.resident
                    && let Err(e) = resident_rates(&mut gpu, r)
                {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
                if args.device_tree.is_empty() {
                    run(&mut gpu, &args);
                } else if let Err(e) = device_tree(&mut gpu, &args) {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
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
