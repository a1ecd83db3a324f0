//! `nbody-mpi-bench`: the distributed executor's force call timed under `mpirun`, beside
//! what the communication model predicts from the costs measured in the same job.
//!
//! ```text
//! mpirun -n 8 nbody-mpi-bench --costs --sizes 32768,131072 --weak 16384 --alone
//! mpirun -n 1 nbody-mpi-bench --executor cuda --sizes 1048576 --alone
//! mpirun -n 2 nbody-mpi-bench --executor cuda --sizes 65536 --resident --costs
//! nbody-mpi-bench --predict            # 1..256 GPUs at the seed's sizes, from the model
//! ```
//!
//! Every figure is the median over `--reps` calls after one warm-up call, each call
//! timed from a barrier to the slowest rank's end. The model (see `model`) takes the
//! kernel rate measured on each rank's own block and the MPI latency and bandwidth
//! measured by ping-pong, and predicts the call; its ratio to the measurement is printed
//! beside it.
//!
//! `--resident` also times the resident ring (each rank's system held by its executor,
//! only sources travel): a force on the held positions and a leapfrog step, beside the
//! model built from the pieces each rank measures alone (its positions copied down, its
//! own pull, one foreign slice's pull).

use clap::{Parser, ValueEnum};
use nbody::bench::median;
use nbody::core::resident::{ForeignSources, OnHost, Resident};
use nbody::mpi::mpi::collective::SystemOperation;
use nbody::mpi::mpi::topology::SimpleCommunicator;
use nbody::mpi::mpi::traits::*;
use nbody::mpi::{Distributed, Scheme};
use nbody::{Executor, Field, Params, Particle, Real, Velocity};
use std::fmt::Write as _;

#[derive(Parser, Debug)]
#[command(about = "Distributed force calls under mpirun, measured and modelled")]
struct Args {
    /// Total particle counts for strong scaling.
    #[arg(long, value_delimiter = ',', default_values_t = [32_768usize, 131_072])]
    sizes: Vec<usize>,
    /// Particles per rank for a weak-scaling point (N = this x ranks).
    #[arg(long)]
    weak: Option<usize>,
    /// Precision of the particles and kernels.
    #[arg(long, value_enum, default_value_t = Prec::F32)]
    precision: Prec,
    /// Per-rank executor.
    #[arg(long, value_enum, default_value_t = Exec::Cpu)]
    executor: Exec,
    /// Threads of each rank's CPU executor.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// How sources move.
    #[arg(long, value_enum, default_value_t = SchemeArg::Auto)]
    scheme: SchemeArg,
    /// Timed calls per point (after one warm-up).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Measure MPI latency and bandwidth (ping-pong between the first and last rank) and
    /// collective costs first.
    #[arg(long)]
    costs: bool,
    /// Also time the per-rank executor alone on the whole system (rank 0, before the
    /// distributed calls): the cost of the wrapper with one rank.
    #[arg(long)]
    alone: bool,
    /// Print the model's prediction for 1 to 256 GPUs at the seed paper's sizes.
    #[arg(long)]
    predict: bool,
    /// Latency (s) and bandwidth (bytes/s) for --predict, instead of the measured ones
    /// (e.g. a cluster fabric's).
    #[arg(long, num_args = 2, value_names = ["LATENCY", "BANDWIDTH"])]
    network: Option<Vec<f64>>,
    /// Also time the resident ring: a force and a leapfrog step of a system held by the
    /// ranks' executors (`OnHost` for the CPU executor), only sources travelling.
    #[arg(long)]
    resident: bool,
    /// Write the figures as JSON lines here (rank 0).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Prec {
    F32,
    F64,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Exec {
    Cpu,
    Cuda,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum SchemeArg {
    Auto,
    Ring,
    #[value(name = "2d")]
    TwoD,
}

/// Point-to-point cost `alpha + bytes * beta` and the collective shapes built on it.
#[derive(Clone, Copy, Debug)]
struct Network {
    alpha: f64,
    beta: f64,
}

impl Network {
    fn message(&self, bytes: f64) -> f64 {
        self.alpha + bytes * self.beta
    }
    /// Recursive-doubling all-gather of `total` bytes over `p` ranks.
    fn all_gather(&self, p: usize, total: f64) -> f64 {
        log2(p) * self.alpha + total * (p as f64 - 1.0) / p as f64 * self.beta
    }
    /// All-reduce of `bytes` over `p` ranks (reduce-scatter then all-gather).
    fn all_reduce(&self, p: usize, bytes: f64) -> f64 {
        2.0 * log2(p) * self.alpha + 2.0 * bytes * (p as f64 - 1.0) / p as f64 * self.beta
    }
}

fn log2(p: usize) -> f64 {
    (p as f64).log2().ceil()
}

/// The time of one distributed force call on `p` ranks with `n` particles: `kernel(nt,
/// ns)` is one kernel call's time, `record` the bytes of a particle on the wire.
fn model(scheme: Scheme, p: usize, n: usize, record: f64, net: Network, kernel: &dyn Fn(f64, f64) -> f64) -> f64 {
    let n = n as f64;
    // Agreement on input and counts: one small all-gather.
    let agree = net.all_gather(p, 24.0 * p as f64);
    match scheme.resolve(n as usize, p) {
        Scheme::TwoD { source_groups: pj } => {
            let pi = p / pj;
            let (nt, ns) = (n / pi as f64, n / pj as f64);
            agree
                + net.all_gather(pj, nt * record)
                + net.all_gather(pi, ns * record)
                + kernel(nt, ns)
                + net.all_reduce(pj, 32.0 * nt)
        }
        _ => {
            // p kernel steps on n/p x n/p; each but the last hides one message unless the
            // message is the longer of the two.
            let b = n / p as f64;
            let (t_c, t_m) = (kernel(b, b), net.message(b * record));
            let hidden = if p > 1 { (p as f64 - 1.0) * (t_m - t_c).max(0.0) } else { 0.0 };
            agree + p as f64 * t_c + hidden
        }
    }
}

fn main() {
    let args = Args::parse();
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none() {
        if args.predict {
            let net = args
                .network
                .as_ref()
                .map_or(Network { alpha: 1.5e-6, beta: 1.0 / 12.0e9 }, |v| Network { alpha: v[0], beta: 1.0 / v[1] });
            print!("{}", predict(net));
            return;
        }
        eprintln!("run under mpirun (or pass --predict)");
        std::process::exit(2);
    }
    let universe = nbody::mpi::mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    match args.precision {
        Prec::F32 => bench::<f32>(&args, &world),
        Prec::F64 => bench::<f64>(&args, &world),
    }
}

/// The slowest rank's time of `f`, started together after a barrier.
fn timed(world: &SimpleCommunicator, f: &mut dyn FnMut()) -> f64 {
    world.barrier();
    let start = nbody::mpi::mpi::time();
    f();
    let mine = nbody::mpi::mpi::time() - start;
    let mut slowest = 0.0;
    world.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
    slowest
}

/// Ping-pong between rank 0 and the last rank: (bytes, one-way time) pairs, and the
/// fitted latency and bandwidth (latency from the smallest message, bandwidth from the
/// two largest).
fn ping_pong(world: &SimpleCommunicator) -> (Vec<(usize, f64)>, Network) {
    let (rank, last) = (world.rank(), world.size() - 1);
    let mut points = Vec::new();
    for bytes in [8usize, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24] {
        let mut buf = vec![0u8; bytes];
        let reps = if bytes <= 1 << 14 { 200 } else { 10 };
        world.barrier();
        let start = nbody::mpi::mpi::time();
        for _ in 0..reps {
            if rank == 0 {
                world.process_at_rank(last).send(&buf[..]);
                world.process_at_rank(last).receive_into(&mut buf[..]);
            } else if rank == last {
                world.process_at_rank(0).receive_into(&mut buf[..]);
                world.process_at_rank(0).send(&buf[..]);
            }
        }
        let mut t = (nbody::mpi::mpi::time() - start) / (2 * reps) as f64;
        world.process_at_rank(0).broadcast_into(&mut t);
        points.push((bytes, t));
    }
    let alpha = points[0].1;
    // Bandwidth: least-squares slope over the messages of 128 KiB and more.
    let big: Vec<(f64, f64)> = points.iter().filter(|p| p.0 >= 1 << 17).map(|&(b, t)| (b as f64, t)).collect();
    let (mb, mt) = (
        big.iter().map(|p| p.0).sum::<f64>() / big.len() as f64,
        big.iter().map(|p| p.1).sum::<f64>() / big.len() as f64,
    );
    let slope =
        big.iter().map(|p| (p.0 - mb) * (p.1 - mt)).sum::<f64>() / big.iter().map(|p| (p.0 - mb).powi(2)).sum::<f64>();
    let beta = slope.max(1e-15);
    (points, Network { alpha, beta })
}

fn executor<T: nbody::cpu::CpuReal + Dev>(args: &Args, world: &SimpleCommunicator) -> Box<dyn Executor<T>> {
    match args.executor {
        Exec::Cpu => Box::new(nbody::cpu::CpuExecutor::new(nbody::cpu::Parallelism::threads(args.threads))),
        Exec::Cuda => T::cuda(world.rank() as u32),
    }
}

/// The CUDA executor where it is compiled in, one device per rank (rank mod devices).
trait Dev: Real {
    fn cuda(rank: u32) -> Box<dyn Executor<Self>>;
    /// The resident ring's figures on this rank's CUDA executor (see [`resident`]).
    fn cuda_resident(args: &Args, world: &SimpleCommunicator, n: usize, net: Network) -> Option<String>;
}

#[cfg(feature = "cuda")]
impl<T: Real + nbody::cuda::DeviceReal> Dev for T {
    fn cuda(rank: u32) -> Box<dyn Executor<Self>> {
        let devices = nbody::cuda::CudaExecutor::device_count().unwrap_or(1).max(1);
        Box::new(nbody::cuda::CudaExecutor::on_device(rank % devices).expect("a CUDA device"))
    }
    fn cuda_resident(args: &Args, world: &SimpleCommunicator, n: usize, net: Network) -> Option<String> {
        let devices = nbody::cuda::CudaExecutor::device_count().unwrap_or(1).max(1);
        let gpu = nbody::cuda::CudaExecutor::on_device(world.rank() as u32 % devices).expect("a CUDA device");
        resident::<T, _>(gpu, args, world, n, net)
    }
}

#[cfg(feature = "cuda")]
impl Settle for nbody::cuda::CudaExecutor {
    fn settle(&self) {
        self.synchronize().expect("the queued kernels finish");
    }
}

#[cfg(not(feature = "cuda"))]
impl<T: Real> Dev for T {
    fn cuda(_: u32) -> Box<dyn Executor<Self>> {
        eprintln!("--executor cuda: built without CUDA");
        std::process::exit(2)
    }
    fn cuda_resident(_: &Args, _: &SimpleCommunicator, _: usize, _: Network) -> Option<String> {
        Self::cuda(0);
        None
    }
}

/// Waits until an executor's queued work has finished (a GPU's kernels), so a timing
/// covers it.
trait Settle {
    fn settle(&self);
}

/// Host executors finish their work before returning.
impl<E> Settle for OnHost<E> {
    fn settle(&self) {}
}

/// The resident ring at `n` particles over the ranks of `world`, each rank's slice held
/// by `inner`: a force on the held positions (a zero drift makes them new) and a
/// leapfrog step, each the median over `--reps` after a warm-up, timed to the slowest
/// rank's end; and the model from what each rank measures alone: its positions copied
/// down (`t_down`), its own pull (`t_own`), one foreign slice's pull, upload included
/// (`t_add`). Returns rank 0's report line (and JSON line after a tab).
fn resident<T: Real, E: ForeignSources<T> + Settle>(
    inner: E,
    args: &Args,
    world: &SimpleCommunicator,
    n: usize,
    net: Network,
) -> Option<String> {
    let (rank, p) = (world.rank() as usize, world.size() as usize);
    let (all, vel) = nbody::integrators::ics::plummer::<T>(n, 11);
    let share = n * rank / p..n * (rank + 1) / p;
    let (mine, mine_v): (&[Particle<T>], &[Velocity<T>]) = (&all[share.clone()], &vel[share]);
    let params = Params::softened(T::from_f64(1.0 / 64.0)).acceleration_only();
    let mut dist = Distributed::new(inner, world, Scheme::Ring).expect("the ring needs no layout");
    let reps = args.reps;
    let median_of = |f: &mut dyn FnMut()| {
        f();
        median((0..reps).map(|_| timed(world, &mut *f)).collect())
    };
    // The pieces, each rank alone on its own slice.
    let solo = dist.inner_mut();
    let mut own = solo.upload_state(mine, mine_v).expect("valid input");
    let mut down = vec![Particle::default(); mine.len()];
    let t_down = median_of(&mut || solo.download_sources(&own, &mut down).expect("valid"));
    let t_own = median_of(&mut || {
        solo.drift(&mut own, T::zero()).expect("valid");
        solo.compute_field(&mut own, &params).expect("valid");
        solo.settle();
    });
    let t_add = median_of(&mut || {
        solo.add_pull(&mut own, &down, &params).expect("valid");
        solo.settle();
    });
    drop(own);
    // The ring.
    let mut s = dist.upload_state(mine, mine_v).expect("valid input");
    let force = median_of(&mut || {
        dist.drift(&mut s, T::zero()).expect("valid");
        dist.compute_field(&mut s, &params).expect("valid");
        dist.inner().settle();
    });
    let step = median_of(&mut || {
        dist.leapfrog_step(&mut s, &params, 1.0 / 4096.0).expect("valid");
        dist.inner().settle();
    });
    let record = std::mem::size_of::<Particle<T>>() as f64;
    let t_m = net.message((n / p) as f64 * record);
    let agree = net.all_gather(p, 24.0 * p as f64);
    let steps = p as f64 - 1.0;
    let model = agree + t_down + t_own + steps * t_add + steps * (t_m - t_own).max(0.0);
    (rank == 0).then(|| {
        format!(
            "{p:>5} {n:>9} {:>7} {:>14} {force:>12.5e} {:>12.4e} {model:>12.5e} {:>8.3}   step {step:.5e} s; alone: down {t_down:.3e}, own {t_own:.3e}, add {t_add:.3e}\t\
             {{\"kind\":\"resident\",\"ranks\":{p},\"n\":{n},\"force_s\":{force:e},\"step_s\":{step:e},\"model_s\":{model:e},\"down_s\":{t_down:e},\"own_s\":{t_own:e},\"add_s\":{t_add:e}}}",
            "force",
            "resident ring",
            (n * n) as f64 / force,
            model / force
        )
    })
}

fn bench<T: nbody::cpu::CpuReal + Dev>(args: &Args, world: &SimpleCommunicator) {
    let (rank, p) = (world.rank() as usize, world.size() as usize);
    let root = rank == 0;
    let mut report = String::new();
    let mut json = String::new();
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    if root {
        let _ = writeln!(
            report,
            "nbody-mpi-bench: {p} rank(s), {:?} executor ({} thread(s) each), {:?}, commit {}, {host}",
            args.executor,
            args.threads,
            args.precision,
            option_env!("NBODY_COMMIT").unwrap_or("(unset)")
        );
    }
    let net = if args.costs && p > 1 {
        let (points, net) = ping_pong(world);
        let mut small = Vec::new();
        for _ in 0..200 {
            small.push(timed(world, &mut || {
                let (x, mut y) = (1.0f64, 0.0f64);
                world.all_reduce_into(&x, &mut y, SystemOperation::sum());
            }));
        }
        let small = median(small);
        let barrier = median((0..200).map(|_| timed(world, &mut || world.barrier())).collect());
        if root {
            let _ = writeln!(report, "MPI costs (ping-pong rank 0 <-> rank {}):", p - 1);
            for (b, t) in &points {
                let _ =
                    writeln!(report, "  {b:>9} bytes  {:>10.3} us one way  {:>8.3} GB/s", t * 1e6, *b as f64 / t / 1e9);
            }
            let _ = writeln!(
                report,
                "  fit: latency {:.3} us, bandwidth {:.2} GB/s; all-reduce of 8 bytes {:.3} us, barrier {:.3} us",
                net.alpha * 1e6,
                1e-9 / net.beta,
                small * 1e6,
                barrier * 1e6
            );
            let _ = writeln!(
                json,
                "{{\"kind\":\"costs\",\"ranks\":{p},\"latency_s\":{:e},\"bandwidth_Bps\":{:e},\"allreduce8_s\":{:e},\"barrier_s\":{:e}}}",
                net.alpha,
                1.0 / net.beta,
                small,
                barrier
            );
        }
        net
    } else {
        // One rank sends nothing; the model's network terms vanish with p = 1.
        Network { alpha: 0.0, beta: 0.0 }
    };
    let scheme = match args.scheme {
        SchemeArg::Auto => Scheme::Auto,
        SchemeArg::Ring => Scheme::Ring,
        SchemeArg::TwoD => Scheme::TwoD {
            source_groups: (2..=p).take_while(|d| d * d <= p).filter(|d| p.is_multiple_of(*d)).last().unwrap_or(1),
        },
    };
    let mut sizes: Vec<(usize, &str)> = args.sizes.iter().map(|&n| (n, "strong")).collect();
    if let Some(w) = args.weak {
        sizes.push((w * p, "weak"));
    }
    if root {
        let _ = writeln!(
            report,
            "{:>5} {:>9} {:>7} {:>14} {:>12} {:>12} {:>12} {:>8} {:>12}",
            "ranks", "N", "kind", "scheme", "call (s)", "interact/s", "model (s)", "model/meas", "block (s)"
        );
    }
    let mut dist = Distributed::new(executor::<T>(args, world), world, scheme).expect("a valid scheme");
    for (n, kind) in sizes {
        let (all, _) = nbody::integrators::ics::plummer::<T>(n, 11);
        let share = n * rank / p..n * (rank + 1) / p;
        let mine = &all[share.clone()];
        let params = Params::softened(T::from_f64(1.0 / 64.0)).with_overlap_identical().acceleration_only();
        let mut out = vec![Field::zero(); mine.len()];
        if args.alone && p == 1 {
            let inner = dist.inner_mut();
            let mut full = vec![Field::zero(); n];
            inner.accelerations(&all, &all, &params, &mut full).expect("valid input");
            let t = median(
                (0..args.reps)
                    .map(|_| timed(world, &mut || inner.accelerations(&all, &all, &params, &mut full).expect("valid")))
                    .collect(),
            );
            let _ = writeln!(
                report,
                "{:>5} {n:>9} {:>7} {:>14} {t:>12.5e} {:>12.4e}",
                1,
                "alone",
                "(executor)",
                (n * n) as f64 / t
            );
            let _ = writeln!(json, "{{\"kind\":\"alone\",\"n\":{n},\"seconds\":{t:e}}}");
        }
        // This rank's own block, all ranks at once: the kernel rate the model uses.
        let inner = dist.inner_mut();
        inner.accelerations(mine, mine, &params, &mut out).expect("valid input");
        let block = median(
            (0..args.reps)
                .map(|_| timed(world, &mut || inner.accelerations(mine, mine, &params, &mut out).expect("valid")))
                .collect(),
        );
        let b = (n as f64 / p as f64).max(1.0);
        let rate = b * b / block.max(1e-12);
        let kernel = |nt: f64, ns: f64| nt * ns / rate;
        dist.accelerations(mine, mine, &params, &mut out).expect("valid input");
        let call = median(
            (0..args.reps)
                .map(|_| timed(world, &mut || dist.accelerations(mine, mine, &params, &mut out).expect("valid")))
                .collect(),
        );
        let record = std::mem::size_of::<Particle<T>>() as f64;
        let predicted = model(scheme, p, n, record, net, &kernel);
        let resolved = scheme.resolve(n, p);
        if root {
            let name = match resolved {
                Scheme::TwoD { source_groups } => format!("2d {}x{source_groups}", p / source_groups),
                _ => "ring".to_owned(),
            };
            let _ = writeln!(
                report,
                "{p:>5} {n:>9} {kind:>7} {name:>14} {call:>12.5e} {:>12.4e} {predicted:>12.5e} {:>8.3} {block:>12.5e}",
                (n * n) as f64 / call,
                predicted / call
            );
            let _ = writeln!(
                json,
                "{{\"kind\":\"{kind}\",\"ranks\":{p},\"n\":{n},\"scheme\":\"{name}\",\"seconds\":{call:e},\"model_s\":{predicted:e},\"block_s\":{block:e}}}"
            );
        }
        if args.resident {
            let line = match args.executor {
                Exec::Cpu => {
                    let cpu = nbody::cpu::CpuExecutor::new(nbody::cpu::Parallelism::threads(args.threads));
                    resident::<T, _>(OnHost::new(cpu), args, world, n, net)
                }
                Exec::Cuda => T::cuda_resident(args, world, n, net),
            };
            if let Some((text, js)) = line.as_deref().and_then(|l| l.split_once('\t')) {
                let _ = writeln!(report, "{text}");
                let _ = writeln!(json, "{js}");
            }
        }
    }
    if root {
        print!("{report}");
        if let Some(path) = &args.json {
            let mut old = std::fs::read_to_string(path).unwrap_or_default();
            old.push_str(&json);
            std::fs::write(path, old).expect("writing the JSON lines");
        }
        if args.predict {
            print!("{}", predict(net));
        }
    }
}

/// H100 f32 force-call rates against N (README, `nbody-cuda-bench` on device-resident
/// particles): the kernel curve the 256-GPU prediction uses.
const H100_F32: [(f64, f64); 6] = [
    (1024.0, 2.02e11),
    (4096.0, 1.15e12),
    (16384.0, 1.83e12),
    (65536.0, 1.92e12),
    (262144.0, 1.97e12),
    (1048576.0, 1.99e12),
];

fn h100_rate(n_targets: f64) -> f64 {
    let (first, last) = (H100_F32[0], H100_F32[H100_F32.len() - 1]);
    if n_targets <= first.0 {
        return first.1 * n_targets / first.0;
    }
    if n_targets >= last.0 {
        return last.1;
    }
    let k = H100_F32.iter().position(|&(n, _)| n >= n_targets).unwrap_or(1).max(1);
    let ((n0, r0), (n1, r1)) = (H100_F32[k - 1], H100_F32[k]);
    let f = (n_targets.ln() - n0.ln()) / (n1.ln() - n0.ln());
    (r0.ln() + f * (r1.ln() - r0.ln())).exp()
}

/// Predicted time and strong-scaling efficiency of one f32 force call for 1 to 256
/// H100s at the seed's sizes, from the model with network `net` and a launch overhead
/// of 10 us per kernel call.
fn predict(net: Network) -> String {
    let kernel = |nt: f64, ns: f64| 1e-5 + nt * ns / h100_rate(nt);
    let mut o = format!(
        "Model: one f32 force call on H100s (* = 2-D layout, else ring), network latency {:.2} us, bandwidth {:.1} GB/s\n",
        net.alpha * 1e6,
        1e-9 / net.beta
    );
    let gpus = [1usize, 2, 4, 8, 16, 32, 64, 128, 256];
    o += &format!("{:>10}", "N \\ GPUs");
    for g in gpus {
        o += &format!(" {g:>17}");
    }
    o += "\n";
    for e in [14, 16, 18, 20, 22, 24, 26, 28] {
        let n = 1usize << e;
        o += &format!("{:>10}", format!("2^{e}"));
        let t1 = model(Scheme::Ring, 1, n, 16.0, net, &kernel);
        for g in gpus {
            // The better of the ring and the squarest 2-D layout (the default rule picks
            // by a fixed threshold; this shows what either scheme can reach).
            let ring = model(Scheme::Ring, g, n, 16.0, net, &kernel);
            let grid = (2..=g)
                .take_while(|d| d * d <= g)
                .filter(|d| g.is_multiple_of(*d))
                .last()
                .map_or(f64::INFINITY, |pj| model(Scheme::TwoD { source_groups: pj }, g, n, 16.0, net, &kernel));
            let (t, tag) = if grid < ring { (grid, '*') } else { (ring, ' ') };
            o += &format!(" {:>9.3e} s{tag}{:>4.0}%", t, 100.0 * t1 / (g as f64 * t));
        }
        o += "\n";
    }
    o
}
