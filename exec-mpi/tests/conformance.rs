//! The conformance suite against the distributed executor, under `mpirun` with 1, 2, 3
//! and 4 ranks. Run by `cargo test`, this program starts itself through `mpirun` once
//! per rank count; under `mpirun` (Open MPI sets `OMPI_COMM_WORLD_SIZE`) each rank runs
//! the whole suite in lockstep, rank 0 alone printing.
//!
//! Every rank passes the same arrays to [`Replicated`], which cuts them into uneven
//! slices (empty ones included whenever N is below the number of ranks) and calls
//! [`Distributed`] with each scheme: the ring, and 2-D layouts with one row and with one
//! column. So the suite's oracle comparisons, bad-input checks and properties all hold
//! for the distributed executor over every rank count.

use nbody_conformance::{Arguments, Failed, Path, Trial, compare, exact, mpirun, suite, wait_within};
use nbody_core::neighbours::{Nearest, Neighbours};
use nbody_core::resident::{OnHost, Resident};
use nbody_core::{
    Array, Bodies, Error, Executor, Field, InteractionList, Jerk, Kinematics, Pair, Params, Particle, Span, Velocity,
};
use nbody_cpu::{CpuExecutor, Parallelism};
use nbody_mpi::mpi::topology::SimpleCommunicator;
use nbody_mpi::mpi::traits::*;
use nbody_mpi::{Distributed, Replicated, Scheme};
use std::time::{Duration, Instant};

/// A run of the suite that takes longer than this is hung, not slow.
const TIMEOUT: Duration = Duration::from_secs(900);

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        under_mpirun();
    } else {
        launch();
    }
}

/// `mpirun -n k` this program, for k = 1..4 (fewer with `NBODY_MPI_MAX_RANKS`).
fn launch() {
    let max: usize = std::env::var("NBODY_MPI_MAX_RANKS").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let exe = std::env::current_exe().expect("the test binary's path");
    let args: Vec<String> = std::env::args().skip(1).collect();
    for ranks in 1..=max {
        let start = Instant::now();
        let mut child = mpirun(ranks).arg(&exe).args(&args).spawn().unwrap_or_else(|e| {
            eprintln!("cannot start mpirun ({e}): install Open MPI (libopenmpi-dev openmpi-bin), as .ci/run does");
            std::process::exit(1)
        });
        let Some(status) = wait_within(&mut child, TIMEOUT) else {
            eprintln!("{ranks} ranks: no result after {TIMEOUT:?}: killed (a hang)");
            std::process::exit(1);
        };
        println!("{ranks} rank(s): {status} in {:.1} s", start.elapsed().as_secs_f64());
        if !status.success() {
            std::process::exit(1);
        }
    }
}

fn under_mpirun() {
    let universe = nbody_mpi::mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size() as usize);
    let schemes = [
        ("ring", Scheme::Ring),
        ("2d-one-row", Scheme::TwoD { source_groups: size }),
        ("2d-one-column", Scheme::TwoD { source_groups: 1 }),
    ];
    let mut trials: Vec<Trial> = Vec::new();
    for (tag, scheme) in schemes {
        let make = move || {
            let inner = CpuExecutor::new(Parallelism::Sequential);
            Ok(Replicated::new(Distributed::new(inner, &SimpleCommunicator::world(), scheme)?))
        };
        trials.extend(suite::<f32, _>(&format!("mpi{size}-{tag}/f32"), make));
        trials.extend(suite::<f64, _>(&format!("mpi{size}-{tag}/f64"), make));
        trials.push(nbody_conformance::mutants::mutation_trial::<f32, _>(
            &format!("mpi{size}-{tag}/f32"),
            f32::EPSILON as f64,
            make,
        ));
        trials.push(nbody_conformance::mutants::mutation_trial::<f64, _>(
            &format!("mpi{size}-{tag}/f64"),
            f64::EPSILON,
            make,
        ));
    }
    for (tag, scheme) in schemes {
        trials.extend(distributed_trials(size, tag, scheme));
        trials.push(Trial::test(format!("mpi{size}-{tag}/wrappers_reach_the_inner_executor"), move || {
            wrappers_reach(scheme)
        }));
    }
    trials.extend(resident_trials(size));
    let mut args = Arguments::from_args();
    // Lockstep: every rank runs the same trials in the same order, one at a time.
    args.test_threads = Some(1);
    if rank != 0 {
        args.quiet = true;
    }
    let conclusion = nbody_conformance::libtest_mimic::run(&args, trials);
    drop(universe);
    conclusion.exit();
}

/// A system every rank can build alone: `n` particles, deterministic.
fn system(n: usize) -> (Vec<Particle<f64>>, Vec<Velocity<f64>>) {
    nbody_integrators::ics::plummer::<f64>(n, 7)
}

/// Rank `r`'s slice of `n` particles over `size` ranks: uneven (rank `r` gets a share
/// growing with `r`), empty when `n` is small.
fn slice(n: usize, size: usize, r: usize) -> std::ops::Range<usize> {
    let cut = |k: usize| n * (k * k) / (size * size);
    cut(r)..cut(r + 1)
}

fn distributed(scheme: Scheme) -> Result<Distributed<CpuExecutor>, Failed> {
    Distributed::new(CpuExecutor::new(Parallelism::Sequential), &SimpleCommunicator::world(), scheme)
        .map_err(|e| Failed::from(e.to_string()))
}

/// The checks of the distributed executor's own (local-slice) interface.
fn distributed_trials(size: usize, tag: &str, scheme: Scheme) -> Vec<Trial> {
    let rank = SimpleCommunicator::world().rank() as usize;
    vec![
        // Each rank owns a slice, as a distributed run does; the result on each slice is
        // the oracle's for the whole system, for sizes from empty ranks to many per rank.
        Trial::test(format!("mpi{size}-{tag}/local_slices_match_oracle"), move || {
            let mut exec = distributed(scheme)?;
            for n in [0, 1, 3, 50, 700] {
                let (pos, vel) = system(n);
                let mine = slice(n, size, rank);
                for potential in [true, false] {
                    let params = Params::softened(0.01).with_overlap_identical();
                    let params = if potential { params } else { params.acceleration_only() };
                    let before = vec![Field::new(0.5, -0.25, 1.0, 2.0); mine.len()];
                    let mut out = before.clone();
                    let (p, v) = (&pos[mine.clone()], &vel[mine.clone()]);
                    exec.accelerations(p, p, &params, &mut out).map_err(|e| e.to_string())?;
                    let want = exact(&pos, &pos, &params).map_err(|e| e.to_string())?;
                    compare(&out, &before, &want[mine.clone()], Path::Pairs, potential, f64::EPSILON)
                        .map_err(|e| format!("n = {n}, rank {rank}: {e}"))?;
                    let mut out = before.clone();
                    let mut jerk = vec![Jerk::zero(); mine.len()];
                    let b = Bodies { pos: p, vel: v };
                    exec.accelerations_jerk(b, b, &params, &mut out, &mut jerk).map_err(|e| e.to_string())?;
                    compare(&out, &before, &want[mine.clone()], Path::Pairs, potential, f64::EPSILON)
                        .map_err(|e| format!("jerk call, n = {n}, rank {rank}: {e}"))?;
                }
            }
            Ok(())
        }),
        // Bad input on the last rank only: that rank gets its own error, the others a
        // Peer error naming it; no output changes; the executor still works afterwards.
        Trial::test(format!("mpi{size}-{tag}/bad_input_on_one_rank"), move || {
            let mut exec = distributed(scheme)?;
            let (mut pos, _) = system(40);
            let mine = slice(40, size, rank);
            let bad = size - 1;
            if rank == bad {
                pos[mine.start + 3].y = f64::NAN;
            }
            let p = &pos[mine.clone()];
            let params = Params::softened(0.01).with_overlap_identical();
            let mut out = vec![Field::new(1.0, 2.0, 3.0, 4.0); p.len()];
            let got = exec.accelerations(p, p, &params, &mut out);
            let want = if rank == bad {
                Error::NonFinite { array: Array::Targets, index: 3 }
            } else {
                Error::Peer { rank: bad }
            };
            if got != Err(want) {
                return Err(format!("rank {rank}: {got:?}, expected {want:?}").into());
            }
            if out.iter().any(|f| *f != Field::new(1.0, 2.0, 3.0, 4.0)) {
                return Err(format!("rank {rank}: a refused call changed the output").into());
            }
            let (good, _) = system(40);
            let p = &good[mine.clone()];
            let mut out = vec![Field::zero(); p.len()];
            exec.accelerations(p, p, &params, &mut out).map_err(|e| format!("the call after a refusal: {e}"))?;
            let want = exact(&good, &good, &params).map_err(|e| e.to_string())?;
            compare(&out, &vec![Field::zero(); p.len()], &want[mine], Path::Pairs, true, f64::EPSILON)
                .map_err(Failed::from)
        }),
        // What the ranks cannot compute together yet is refused on every rank alike
        // (the snap once fell through to the trait's plain loops over this rank's
        // sources only), and leaves the outputs alone.
        Trial::test(format!("mpi{size}-{tag}/refused_entry_points"), move || {
            let mut exec = distributed(scheme)?;
            let (pos, vel) = system(40);
            let mine = slice(40, size, rank);
            let (p, v) = (&pos[mine.clone()], &vel[mine.clone()]);
            let acc = vec![Field::new(0.1, 0.2, 0.3, 0.0); p.len()];
            let params = Params::softened(0.01).with_overlap_identical();
            let before = vec![Field::new(1.0, 2.0, 3.0, 4.0); p.len()];
            let (mut out, mut jerk, mut snap) =
                (before.clone(), vec![Jerk::zero(); p.len()], vec![Jerk::zero(); p.len()]);
            let k = Kinematics { pos: p, vel: v, acc: &acc };
            let snapped = exec.accelerations_snap(k, k, &params, &mut out, &mut jerk, &mut snap);
            let spans = [Span::new(0, p.len() as u32)];
            let pairs = [Pair { targets: Span::new(0, p.len() as u32), sources: Span::new(0, 1) }];
            let list = InteractionList { pairs: &pairs, source_spans: &spans };
            let batched = exec.accelerations_batch(p, &list, &params, &mut out);
            let mut near = vec![Nearest::none(); p.len()];
            let mut nb = Neighbours { nearest: &mut near, within: None, index_offset: 0 };
            let b = Bodies { pos: p, vel: v };
            let found = exec.accelerations_jerk_neighbours(b, b, &params, &mut out, &mut jerk, &mut nb);
            for (what, got) in [("snap", snapped), ("batch", batched), ("neighbours", found)] {
                if !matches!(got, Err(Error::Unsupported { .. })) {
                    return Err(format!("rank {rank}: {what} gave {got:?}, expected Unsupported").into());
                }
            }
            if out != before || jerk.iter().chain(&snap).any(|j| *j != Jerk::zero()) {
                return Err(format!("rank {rank}: a refused call changed an output").into());
            }
            Ok(())
        }),
        Trial::test(format!("mpi{size}-{tag}/combine_over_ranks"), move || {
            let mut exec = distributed(scheme)?;
            let min = nbody_core::collective::min::<f64, _>(&mut exec, 10.0 + rank as f64);
            let mut sums = [1.0, rank as f64];
            nbody_core::collective::sum::<f64, _>(&mut exec, &mut sums);
            let want = [size as f64, (size * (size - 1) / 2) as f64];
            if min != 10.0 || sums != want {
                return Err(format!("min {min}, sums {sums:?}, expected 10 and {want:?}").into());
            }
            Ok(())
        }),
    ]
}

/// Both wrappers around a probe that records which of its hooks ran: every door the
/// wrapper offers reaches the probe's own hook for it on some rank (never the trait's
/// default loops), and every door it refuses does no work. Distributed offers the
/// acceleration and jerk doors (neighbours, snap and lists are refused, each with its
/// reason); Replicated offers all five.
fn wrappers_reach(scheme: Scheme) -> Result<(), Failed> {
    use nbody_conformance::wrappers::{DOORS, Door, Probe, doors_reach};
    let world = SimpleCommunicator::world();
    let over_ranks = |counts: [usize; 5]| {
        let mine = counts.map(|c| c as u64);
        let mut all = [0u64; 5];
        world.all_reduce_into(&mine[..], &mut all[..], nbody_mpi::mpi::collective::SystemOperation::sum());
        all
    };
    let (r, d) = (Door::Reaches, Door::Refused);
    let probe = Probe::default();
    let log = probe.log.clone();
    let dist = Distributed::new(probe, &world, scheme).map_err(|e| Failed::from(e.to_string()))?;
    let counts = over_ranks(doors_reach(dist, &log, [r, r, d, d, d])?);
    if counts[..2].contains(&0) {
        return Err(format!("distributed: a door reached no rank's probe: {counts:?} for {DOORS:?}").into());
    }
    let probe = Probe::default();
    let log = probe.log.clone();
    let dist = Distributed::new(probe, &world, scheme).map_err(|e| Failed::from(e.to_string()))?;
    let counts = over_ranks(doors_reach(Replicated::new(dist), &log, [r; 5])?);
    if counts.contains(&0) {
        return Err(format!("replicated: a door reached no rank's probe: {counts:?} for {DOORS:?}").into());
    }
    Ok(())
}

/// A rank's resident executor for the resident ring's trials.
fn resident() -> Result<Distributed<OnHost<CpuExecutor>>, Failed> {
    let inner = OnHost::new(CpuExecutor::new(Parallelism::Sequential));
    Distributed::new(inner, &SimpleCommunicator::world(), Scheme::Ring).map_err(|e| Failed::from(e.to_string()))
}

/// The resident ring ([`Resident`] for [`Distributed`]): each rank's slice stays in its
/// executor, only sources travel.
fn resident_trials(size: usize) -> Vec<Trial> {
    let rank = SimpleCommunicator::world().rank() as usize;
    vec![
        // The field held on each rank is the oracle's for the whole system, with and
        // without the potential, from empty ranks to many particles per rank.
        Trial::test(format!("mpi{size}-resident/field_matches_oracle"), move || {
            let mut exec = resident()?;
            for n in [0, 1, 3, 50, 700] {
                let (pos, vel) = system(n);
                let mine = slice(n, size, rank);
                let mut s = exec.upload_state(&pos[mine.clone()], &vel[mine.clone()]).map_err(|e| e.to_string())?;
                if s.total() != n || s.len() != mine.len() {
                    return Err(format!("n = {n}: state of {} here, {} in all", s.len(), s.total()).into());
                }
                for potential in [true, false] {
                    let params = Params::softened(0.01).with_overlap_identical();
                    let params = if potential { params } else { params.acceleration_only() };
                    exec.compute_field(&mut s, &params).map_err(|e| e.to_string())?;
                    let mut out = vec![Field::zero(); mine.len()];
                    exec.download_field(&mut s, &params, &mut out).map_err(|e| e.to_string())?;
                    let want = exact(&pos, &pos, &params).map_err(|e| e.to_string())?;
                    compare(
                        &out,
                        &vec![Field::zero(); mine.len()],
                        &want[mine.clone()],
                        Path::Pairs,
                        potential,
                        f64::EPSILON,
                    )
                    .map_err(|e| format!("n = {n}, rank {rank}: {e}"))?;
                }
            }
            Ok(())
        }),
        // Leapfrog steps over the ranks follow one process's resident leapfrog on the
        // whole system (the same operations, sums in another order).
        Trial::test(format!("mpi{size}-resident/leapfrog_follows_one_process"), move || {
            let mut exec = resident()?;
            let n = 300;
            let (pos, vel) = system(n);
            let mine = slice(n, size, rank);
            let params = Params::softened(0.01);
            let mut s = exec.upload_state(&pos[mine.clone()], &vel[mine.clone()]).map_err(|e| e.to_string())?;
            let mut alone = OnHost::new(nbody_core::Reference);
            let mut whole = alone.upload_state(&pos, &vel).map_err(|e| e.to_string())?;
            for _ in 0..8 {
                exec.leapfrog_step(&mut s, &params, 1.0 / 128.0).map_err(|e| e.to_string())?;
                alone.leapfrog_step(&mut whole, &params, 1.0 / 128.0).map_err(|e| e.to_string())?;
            }
            let (mut p, mut v) = (vec![Particle::default(); mine.len()], vec![Velocity::default(); mine.len()]);
            exec.download_state(&s, &mut p, &mut v).map_err(|e| e.to_string())?;
            let (mut pw, mut vw) = (pos.clone(), vel.clone());
            alone.download_state(&whole, &mut pw, &mut vw).map_err(|e| e.to_string())?;
            let worst = p
                .iter()
                .zip(&pw[mine.clone()])
                .map(|(a, b)| ((a.x - b.x).powi(2) + (a.y - b.y).powi(2) + (a.z - b.z).powi(2)).sqrt())
                .fold(0.0f64, f64::max);
            let t = <Distributed<OnHost<CpuExecutor>> as Resident<f64>>::time(&s);
            if worst > 1e-12 || t != 8.0 / 128.0 {
                return Err(format!("rank {rank}: positions differ by {worst:e}, time {t}").into());
            }
            Ok(())
        }),
        // A bad particle on the last rank: that rank's upload gets its own error, every
        // other rank a Peer error naming it, and a good system uploads afterwards.
        Trial::test(format!("mpi{size}-resident/bad_input_on_one_rank"), move || {
            let mut exec = resident()?;
            let (mut pos, vel) = system(40);
            let mine = slice(40, size, rank);
            let bad = size - 1;
            if rank == bad {
                pos[mine.start + 2].z = f64::INFINITY;
            }
            let got = exec.upload_state(&pos[mine.clone()], &vel[mine.clone()]).map(|_| ());
            let want = if rank == bad {
                Error::NonFinite { array: Array::Particles, index: 2 }
            } else {
                Error::Peer { rank: bad }
            };
            if got != Err(want) {
                return Err(format!("rank {rank}: {got:?}, expected {want:?}").into());
            }
            let (good, _) = system(40);
            let mut s = exec.upload_state(&good[mine.clone()], &vel[mine.clone()]).map_err(|e| e.to_string())?;
            let params = Params::softened(0.01);
            let mut out = vec![Field::zero(); mine.len()];
            exec.download_field(&mut s, &params, &mut out).map_err(|e| format!("after a refusal: {e}"))?;
            let want = exact(&good, &good, &params.with_overlap_identical()).map_err(|e| e.to_string())?;
            compare(&out, &vec![Field::zero(); mine.len()], &want[mine], Path::Pairs, true, f64::EPSILON)
                .map_err(Failed::from)
        }),
    ]
}
