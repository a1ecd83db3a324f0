//! `nbody-multi-bench`: the multi-device executor against the single-device one on the
//! same GPU(s), in one run, with the costs that limit scaling and the model's
//! prediction beside every measured figure.
//!
//! ```text
//! nbody-multi-bench --devices 0,1 --sizes 65536,262144,1048576 --predict
//! nbody-multi-bench --devices 0,0        # two executors on one GPU
//! ```
//!
//! Results are checked against the f64 oracle (256 spread targets) before anything is
//! timed. Host-slice calls are timed on the host clock (median of `--reps` after a
//! warm-up); resident steps likewise, with every device synchronised at the end.

use clap::Parser;
use nbody::bench::median_of;
use nbody::core::resident::Resident;
use nbody::core::{Executor, Field, Overlap, Params, Particle, oracle};
use nbody::cuda::costs::{Costs, Model};
use nbody::cuda::{CudaExecutor, DeviceReal, MultiDevice, timing};

#[derive(Parser, Debug)]
#[command(about = "Multi-device force calls and steps, measured and modelled")]
struct Args {
    /// Device ordinals (repeats allowed) or "all".
    #[arg(long, default_value = "all")]
    devices: String,
    /// Particle counts.
    #[arg(long, value_delimiter = ',', default_values_t = [65_536usize, 262_144, 1_048_576])]
    sizes: Vec<usize>,
    /// Double precision instead of single.
    #[arg(long)]
    f64: bool,
    /// Timed repeats per point.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Print the model's table for 1, 2, 4 and 8 devices at N = 2^16 .. 2^22.
    #[arg(long)]
    predict: bool,
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(1)
}

fn main() {
    let args = Args::parse();
    let visible = CudaExecutor::device_count().unwrap_or_else(|e| fail(e));
    let devices: Vec<u32> = if args.devices == "all" {
        (0..visible).collect()
    } else {
        args.devices.split(',').map(|d| d.trim().parse().unwrap_or_else(|_| fail(format!("bad device {d}")))).collect()
    };
    if args.f64 { bench::<f64>(&args, &devices) } else { bench::<f32>(&args, &devices) }
}

/// Host-slice call time of `exec` on `ps` (targets = sources), median of `reps`.
fn call_time<T: DeviceReal, E: Executor<T>>(exec: &mut E, ps: &[Particle<T>], reps: usize) -> f64 {
    let params = Params::softened(T::from_f64(1.0 / 64.0)).with_overlap_identical().acceleration_only();
    let mut out = vec![Field::zero(); ps.len()];
    median_of(reps, || exec.accelerations(ps, ps, &params, &mut out).unwrap_or_else(|e| fail(e)))
}

/// Worst relative acceleration error of `exec` on 256 spread targets of `ps`.
fn check<T: DeviceReal, E: Executor<T>>(exec: &mut E, ps: &[Particle<T>]) -> f64 {
    let params = Params::softened(T::from_f64(1.0 / 64.0)).with_overlap_identical();
    let mut out = vec![Field::zero(); ps.len()];
    exec.accelerations(ps, ps, &params, &mut out).unwrap_or_else(|e| fail(e));
    let step = (ps.len() / 256).max(1);
    let mut worst: f64 = 0.0;
    for i in (0..ps.len()).step_by(step) {
        let p = params.with_overlap(Overlap::Shared { target_start: 0, source_start: i, len: 1 });
        let mut ex = [oracle::Exact::default()];
        oracle::field(&ps[i..=i], None, ps, None, &p, &mut ex).unwrap_or_else(|e| fail(e));
        let a = out[i].acceleration().map(|x| x.to_f64());
        let d = (0..3).map(|k| (a[k] - ex[0].acc[k]).powi(2)).sum::<f64>().sqrt();
        let n = (0..3).map(|k| ex[0].acc[k].powi(2)).sum::<f64>().sqrt();
        worst = worst.max(d / n);
    }
    worst
}

fn bench<T: DeviceReal>(args: &Args, devices: &[u32]) {
    let mut single = CudaExecutor::new().unwrap_or_else(|e| fail(e));
    let mut multi = MultiDevice::on_devices(devices).unwrap_or_else(|e| fail(e));
    let mut one = MultiDevice::on_devices(&devices[..1]).unwrap_or_else(|e| fail(e));
    let info = single.info().clone();
    println!(
        "device 0: {}, {} SMs, SM clock {} MHz; lanes {:?}, weights {:?}; {}; commit {}",
        info.name,
        info.sm_count,
        info.sm_clock_khz / 1000,
        multi.devices(),
        multi.weights(),
        T::NAME,
        option_env!("NBODY_COMMIT").unwrap_or("unknown")
    );
    let peer = multi.peer_access().clone();
    for (a, row) in peer.can.iter().enumerate() {
        let cells: Vec<&str> = row.iter().map(|&c| if c { "peer" } else { "staged" }).collect();
        println!("  lane {a} (device {}) reads: {}", peer.devices[a], cells.join(" "));
    }
    // The costs, on the first two lanes (the same executor twice with one lane).
    let costs = {
        let mut lanes: Vec<&mut CudaExecutor> = multi.executors().collect();
        let (a, rest) = lanes.split_first_mut().expect("at least one lane");
        let mut own_b;
        let b: &mut CudaExecutor = match rest.first_mut() {
            Some(b) => b,
            None => {
                own_b = CudaExecutor::on_device(devices[0]).unwrap_or_else(|e| fail(e));
                &mut own_b
            }
        };
        Costs::measure(a, b).unwrap_or_else(|e| fail(e))
    };
    println!(
        "costs: launch {:.2} us (queued) / {:.2} us (with sync); stream sync {:.2} us; event sync {:.2} us; threads {:.1} us",
        costs.launch * 1e6,
        costs.launch_and_sync * 1e6,
        costs.stream_sync * 1e6,
        costs.event_sync * 1e6,
        costs.thread * 1e6
    );
    println!("{:>10} {:>12} {:>12} {:>12} {:>12}", "bytes", "H2D (us)", "H2D pinned", "D2H (us)", "peer (us)");
    for k in 0..costs.h2d.points.len() {
        println!(
            "{:>10} {:>12.2} {:>12.2} {:>12.2} {:>12.2}",
            costs.h2d.points[k].0,
            costs.h2d.points[k].1 * 1e6,
            costs.h2d_pinned.points[k].1 * 1e6,
            costs.d2h.points[k].1 * 1e6,
            costs.peer.points[k].1 * 1e6
        );
    }
    println!(
        "bandwidth GB/s: H2D {:.1}, H2D pinned {:.1}, D2H {:.1}, peer {:.1}",
        costs.h2d.bandwidth() / 1e9,
        costs.h2d_pinned.bandwidth() / 1e9,
        costs.d2h.bandwidth() / 1e9,
        costs.peer.bandwidth() / 1e9
    );
    // Kernel rate against the number of targets (resident, 65,536 sources).
    let (src, _) = nbody::integrators::ics::plummer::<T>(65_536, 2);
    let mut curve = Vec::new();
    for e in 10..=22 {
        let nt = 1usize << e;
        let (tg, _) = nbody::integrators::ics::plummer::<T>(nt, 3);
        let (t, s) = (single.upload(&tg).unwrap_or_else(|e| fail(e)), single.upload(&src).unwrap_or_else(|e| fail(e)));
        let mut out = single.zeroed_fields::<T>(nt).unwrap_or_else(|e| fail(e));
        let params = Params::softened(T::from_f64(1.0 / 64.0)).acceleration_only();
        let secs = timing::time_with_events(&mut single, 3, |g| g.accelerations_resident(&t, &s, &params, &mut out))
            .unwrap_or_else(|e| fail(e));
        curve.push((nt as f64, (nt * src.len()) as f64 / secs));
    }
    let rate = move |nt: f64| -> f64 {
        let k = curve.iter().position(|&(n, _)| n >= nt).unwrap_or(curve.len() - 1);
        if k == 0 {
            return curve[0].1 * (nt / curve[0].0).min(1.0);
        }
        let ((n0, r0), (n1, r1)) = (curve[k - 1], curve[k]);
        let f = ((nt.ln() - n0.ln()) / (n1.ln() - n0.ln())).clamp(0.0, 1.0);
        (r0.ln() + f * (r1.ln() - r0.ln())).exp()
    };
    let model = Model { costs: &costs, rate: &rate, record: std::mem::size_of::<Particle<T>>() as f64 };
    let d = devices.len();
    let distinct = {
        let mut v = devices.to_vec();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    println!(
        "{:>9} {:>11} {:>11} {:>11} {:>10} {:>11} {:>11} {:>10} {:>11} {:>11} {:>10} {:>9}",
        "N",
        "1 call",
        "1-lane",
        "multi call",
        "model",
        "1 force",
        "multi force",
        "model",
        "1 step",
        "multi step",
        "model",
        "max err"
    );
    for &n in &args.sizes {
        let (ps, vs) = nbody::integrators::ics::plummer::<T>(n, 1);
        let err = check(&mut multi, &ps).max(check(&mut single, &ps));
        let t1 = call_time(&mut single, &ps, args.reps);
        let t1l = call_time(&mut one, &ps, args.reps);
        let td = call_time(&mut multi, &ps, args.reps);
        // Resident force evaluations (positions already on the devices).
        let params = Params::softened(T::from_f64(1.0 / 64.0)).acceleration_only();
        let timed = |f: &mut dyn FnMut()| -> f64 { median_of(args.reps, f) };
        let f1 = {
            let set = single.upload(&ps).unwrap_or_else(|e| fail(e));
            let mut fields = single.zeroed_fields::<T>(n).unwrap_or_else(|e| fail(e));
            let p = params.with_overlap_identical();
            timed(&mut || {
                single.accelerations_resident(&set, &set, &p, &mut fields).unwrap_or_else(|e| fail(e));
                single.synchronize().unwrap_or_else(|e| fail(e));
            })
        };
        let fd = {
            let mut ms = multi.upload_state(&ps, &vs).unwrap_or_else(|e| fail(e));
            timed(&mut || {
                multi.force(&mut ms, &params).unwrap_or_else(|e| fail(e));
                multi.synchronize().unwrap_or_else(|e| fail(e));
            })
        };
        // Resident leapfrog steps.
        let dt = 1.0 / 1024.0;
        let mut st = single.upload_state(&ps, &vs).unwrap_or_else(|e| fail(e));
        let s1 = median_of(args.reps, || {
            single.leapfrog_step(&mut st, &params, dt).unwrap_or_else(|e| fail(e));
            single.synchronize().unwrap_or_else(|e| fail(e));
        });
        drop(st);
        let mut ms = multi.upload_state(&ps, &vs).unwrap_or_else(|e| fail(e));
        let sd = median_of(args.reps, || {
            multi.leapfrog_step(&mut ms, &params, dt).unwrap_or_else(|e| fail(e));
            multi.synchronize().unwrap_or_else(|e| fail(e));
        });
        drop(ms);
        // Lanes sharing a GPU share its SMs: the model's devices are the distinct ones.
        let nf = n as f64;
        let (mc, mf, mstep) = if distinct == d {
            (model.call(nf, d), model.force(nf, d), model.step(nf, d))
        } else {
            (f64::NAN, f64::NAN, f64::NAN)
        };
        println!(
            "{n:>9} {t1:>11.4e} {t1l:>11.4e} {td:>11.4e} {mc:>10.3e} {f1:>11.4e} {fd:>11.4e} {mf:>10.3e} {s1:>11.4e} {sd:>11.4e} {mstep:>10.3e} {err:>9.2e}"
        );
        println!(
            "{:>9}   one lane / single: call {:+.2}%; {d} lanes / 1: call {:.3}x, force {:.3}x, step {:.3}x; model/measured: call {:.3}, force {:.3}, step {:.3}",
            "",
            100.0 * (t1l / t1 - 1.0),
            t1 / td,
            f1 / fd,
            s1 / sd,
            mc / td,
            mf / fd,
            mstep / sd
        );
    }
    if args.predict {
        println!(
            "\nModel: device-resident leapfrog step (f32 kernel rate and costs measured above), time and efficiency"
        );
        print!("{:>8}", "N");
        for d in [1usize, 2, 4, 8] {
            print!(" {:>22}", format!("{d} device(s)"));
        }
        println!();
        for e in [16, 18, 20, 22] {
            let n = (1u64 << e) as f64;
            print!("{:>8}", format!("2^{e}"));
            let t1 = model.step(n, 1);
            for d in [1usize, 2, 4, 8] {
                let t = model.step(n, d);
                print!(" {:>12.4e} s {:>6.1}%", t, 100.0 * t1 / (d as f64 * t));
            }
            println!();
        }
    }
}
