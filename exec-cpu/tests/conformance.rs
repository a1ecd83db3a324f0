//! The conformance suite against the CPU executor: every instruction set this CPU has,
//! both precisions, sequential and two threads. Instruction sets the CPU lacks are
//! reported as ignored.

use nbody_conformance::mutants::mutation_trial;
use nbody_conformance::{Path, Trial, accuracy, compare, run, suite, suite_with_roundoff};
use nbody_core::Error;
use nbody_cpu::{CpuExecutor, Isa, MixedExecutor, Parallelism};

fn main() {
    let mut trials: Vec<Trial> = Vec::new();
    for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable] {
        for (par, tag) in [(Parallelism::Sequential, "seq"), (Parallelism::Threads(2), "par2")] {
            let make =
                move || if isa.is_available() { Ok(CpuExecutor::with_isa(par, isa)) } else { Err(Error::NoDevice) };
            trials.extend(suite::<f32, _>(&format!("cpu-{}-{tag}/f32", isa.name()), make));
            trials.extend(suite::<f64, _>(&format!("cpu-{}-{tag}/f64", isa.name()), make));
            let mixed =
                move || if isa.is_available() { Ok(MixedExecutor::with_isa(par, isa)) } else { Err(Error::NoDevice) };
            trials.extend(suite_with_roundoff::<f64, _>(
                &format!("cpu-{}-{tag}/mixed", isa.name()),
                f32::EPSILON as f64,
                mixed,
            ));
            trials.push(mutation_trial::<f32, _>(&format!("cpu-{}-{tag}/f32", isa.name()), f32::EPSILON as f64, make));
            trials.push(mutation_trial::<f64, _>(&format!("cpu-{}-{tag}/f64", isa.name()), f64::EPSILON, make));
            trials.push(mutation_trial::<f64, _>(
                &format!("cpu-{}-{tag}/mixed", isa.name()),
                f32::EPSILON as f64,
                mixed,
            ));
        }
    }
    trials.extend([
        // Few targets and many sources split the sources among the threads: against the
        // oracle, with overlaps and the jerk, for 2 and 3 threads.
        Trial::test("cpu::few_targets_many_sources_split_by_sources", || {
            use nbody_core::{Bodies, Executor, Field, Jerk, Overlap, Params};
            let (all, vel) = nbody_integrators::ics::plummer::<f64>(5000, 8);
            for threads in [2, 3] {
                let mut cpu = CpuExecutor::new(Parallelism::Threads(threads));
                for (nt, ns) in [(1usize, 600usize), (5, 1000), (64, 1000), (100, 5000)] {
                    let overlap = Overlap::Shared { target_start: 0, source_start: 0, len: nt };
                    let params = Params::softened(0.01).with_overlap(overlap);
                    let (t, s) = (&all[..nt], &all[..ns]);
                    let before = vec![Field::new(1.0, -1.0, 0.5, 2.0); nt];
                    let mut out = before.clone();
                    let mut jerk = vec![Jerk::zero(); nt];
                    let (tb, sb) = (Bodies { pos: t, vel: &vel[..nt] }, Bodies { pos: s, vel: &vel[..ns] });
                    cpu.accelerations_jerk(tb, sb, &params, &mut out, &mut jerk).map_err(|e| e.to_string())?;
                    let want = nbody_conformance::exact(t, s, &params).map_err(|e| e.to_string())?;
                    let conforms = |got: &[_], what: &str| {
                        compare(got, &before, &want, Path::Pairs, true, f64::EPSILON)
                            .map_err(|e| format!("{threads} threads, {nt} x {ns}{what}: {e}"))
                    };
                    conforms(&out, "")?;
                    let (mut rf, mut rj) = (before.clone(), vec![Jerk::zero(); nt]);
                    nbody_core::Reference
                        .accelerations_jerk(tb, sb, &params, &mut rf, &mut rj)
                        .map_err(|e| e.to_string())?;
                    let scale = rj.iter().flat_map(|j| j.components()).fold(0.0f64, |m, x| m.max(x.abs()));
                    for (a, b) in jerk.iter().zip(&rj) {
                        for (x, y) in a.components().into_iter().zip(b.components()) {
                            if (x - y).abs() > 1e-12 * scale {
                                return Err(format!("{threads} threads, {nt} x {ns}: jerk {x} vs reference {y}").into());
                            }
                        }
                    }
                    let mut plain = before.clone();
                    cpu.accelerations(t, s, &params, &mut plain).map_err(|e| e.to_string())?;
                    conforms(&plain, ", no jerk")?;
                }
            }
            Ok(())
        }),
        Trial::test("cpu::plummer_65536_accuracy_f32", || {
            let b = accuracy::plummer::<f32>();
            accuracy::check("f32", accuracy::error(&mut CpuExecutor::new(Parallelism::Threads(2)), &b)?, 2e-6)
        }),
        Trial::test("cpu::plummer_65536_accuracy_f64", || {
            let b = accuracy::plummer::<f64>();
            accuracy::check("f64", accuracy::error(&mut CpuExecutor::new(Parallelism::Threads(2)), &b)?, 1e-13)
        }),
        Trial::test("cpu::plummer_65536_accuracy_mixed_at_origin_and_shifted", || {
            let mut mixed = MixedExecutor::new(Parallelism::Threads(2));
            let mut plain = CpuExecutor::new(Parallelism::Threads(2));
            accuracy::mixed_at_origin_and_shifted(&mut mixed, Some(&mut plain), 2e-6)
        }),
        Trial::test("cpu::plummer_65536_accuracy_mixed_in_morton_order", || {
            accuracy::mixed_in_morton_order(&mut MixedExecutor::new(Parallelism::Threads(2)), 2e-6)
        }),
        Trial::test("cpu::coincident_copies_accuracy_mixed", || {
            let mut reference = CpuExecutor::new(Parallelism::Threads(2));
            accuracy::mixed_with_coincident_copies(
                &mut MixedExecutor::new(Parallelism::Threads(2)),
                &mut reference,
                2e-6,
            )
        }),
        Trial::test("cpu::clustered_65536_accuracy_mixed", || {
            // The worst targets have a neighbour pulling 10-20 times their net pull: in
            // f32 that pair alone erred by up to 5.5e-6; in f64 (sources within half a
            // block's reach) the worst of seeds 1-8 is 1.3e-6, 1.3e-6 on the portable path.
            let mut reference = CpuExecutor::new(Parallelism::Threads(2));
            accuracy::mixed_on_clustered(&mut MixedExecutor::new(Parallelism::Threads(2)), &mut reference, 2e-6)
        }),
    ]);
    run(trials);
}
