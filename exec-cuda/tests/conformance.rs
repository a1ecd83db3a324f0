//! The conformance suite and the CUDA-specific checks. Without a GPU every check that
//! needs one is reported as ignored, and `no_device_is_a_clear_error` checks that
//! creating the executor says so.

use nbody_conformance::mutants::mutation_trial;
use nbody_conformance::{Failed, Path, Trial, accuracy, compare, exact, run, suite, suite_with_roundoff};
use nbody_core::jmemory::PackedLists;
use nbody_core::resident::Resident;
use nbody_core::{Bodies, Error, Executor, Field, Jerk, Params, Particle};
use nbody_cuda::{CudaExecutor, CudaMixedExecutor, DeviceReal, MultiDevice};

#[path = "support/device_tree.rs"]
mod device_tree;

fn main() {
    let has_device = !matches!(CudaExecutor::new(), Err(Error::NoDevice));
    let mut trials = suite::<f32, _>("cuda/f32", CudaExecutor::new);
    trials.extend(suite::<f64, _>("cuda/f64", CudaExecutor::new));
    let mixed_roundoff = f32::EPSILON as f64;
    trials.extend(suite_with_roundoff::<f64, _>("cuda-mixed", mixed_roundoff, CudaMixedExecutor::new));
    // Two executors on GPU 0: the splitting and merging of the multi-device executor,
    // tested where there is one GPU.
    trials.extend(suite::<f32, _>("cuda-multi-0,0/f32", || MultiDevice::on_devices(&[0, 0])));
    trials.extend(suite::<f64, _>("cuda-multi-0,0/f64", || MultiDevice::on_devices(&[0, 0])));
    trials.extend(suite::<f32, _>("cuda-multi-0,0,0/f32", || MultiDevice::on_devices(&[0, 0, 0])));
    // The mutation test: every mutant of each executor and precision caught.
    trials.push(mutation_trial::<f32, _>("cuda/f32", f32::EPSILON as f64, CudaExecutor::new));
    trials.push(mutation_trial::<f64, _>("cuda/f64", f64::EPSILON, CudaExecutor::new));
    trials.push(mutation_trial::<f64, _>("cuda-mixed", mixed_roundoff, CudaMixedExecutor::new));
    trials.push(mutation_trial::<f64, _>("cuda-multi-0,0/f64", f64::EPSILON, || MultiDevice::on_devices(&[0, 0])));
    let gpu = |name: &str, f: fn() -> Result<(), Failed>| {
        Trial::test(format!("cuda::{name}"), f).with_ignored_flag(!has_device)
    };
    trials.extend([
        Trial::test("cuda::no_device_is_a_clear_error", || match CudaExecutor::new() {
            Err(Error::NoDevice) => Ok(()),
            Err(e) => Err(format!("expected NoDevice or a device, got {e}").into()),
            Ok(_) => Ok(()), // a device is present: nothing to check here
        }),
        gpu("kernel_argument_layouts_match_on_the_device", argument_layouts),
        gpu("plummer_65536_accuracy_f32", || plummer_accuracy::<f32>(1e-5)),
        gpu("plummer_65536_accuracy_f64", || plummer_accuracy::<f64>(1e-13)),
        gpu("plummer_65536_accuracy_mixed_at_origin_and_shifted", mixed_accuracy),
        gpu("clustered_65536_accuracy_mixed", mixed_on_clustered),
        gpu("coincident_copies_accuracy_mixed", mixed_with_coincident_copies),
        gpu("mixed_every_launch_config_matches_the_oracle", mixed_every_config),
        gpu("mixed_device_leapfrog_matches_the_host_leapfrog", mixed_device_leapfrog),
        gpu("mixed_state_sorted_and_resorted_gives_the_callers_order", mixed_sorted_state),
        gpu("mixed_large_calls_sorted_on_the_device_match_the_oracle", mixed_sorted_calls),
        gpu("mixed_kernels_refuse_wide_systems_on_every_path", mixed_wide),
        gpu("mixed_jerk_in_both_orders_matches_the_reference", mixed_jerk_orders),
        gpu("mixed_batch_in_both_orders_matches_the_reference", mixed_batch_orders),
        gpu("batched_cell_calls_give_the_same_bits_every_time", batched_same_bits),
        gpu("columns_match_the_oracle_and_refuse_bad_values", columns),
        gpu("device_columns_match_the_host_columns", device_columns),
        gpu("pair_gradients_give_the_same_bits_in_any_band_width", || {
            pair_bands::<f32>()?;
            pair_bands::<f64>()
        }),
        gpu("j_memory_matches_host_prediction_and_the_reference", || j_memory(false)),
        gpu("warp_shuffle_variant_matches_the_oracle", warp_shuffle),
        gpu("mixed_j_memory_matches_host_prediction_and_the_reference", || j_memory(true)),
        gpu("every_launch_config_matches_the_oracle", every_config),
        gpu("awkward_sizes", awkward_sizes),
        gpu("out_of_memory_is_an_error_and_recoverable", out_of_memory),
        gpu("failed_launch_loses_nothing", failed_launch),
        gpu("resident_density_map_matches_deposit", resident_density_map),
        gpu("fuzz_corpora_replay_on_the_gpu", fuzz_corpora),
        gpu("device_resident_matches_host_path", device_resident),
        gpu("autotuned_choice_matches_the_oracle", autotuned),
        gpu("device_leapfrog_matches_the_host_leapfrog", device_leapfrog),
        gpu("foreign_sources_add_their_pull_to_a_resident_field", foreign_sources),
        gpu("acceleration_only_steps_then_a_potential_on_download", potential_on_download),
        gpu("system_sums_on_the_device_match_the_host_sums", system_sums),
        gpu("pipelined_upload_matches_the_oracle", pipelined),
        gpu("multi_device_resident_leapfrog_matches_the_host_leapfrog", multi_leapfrog),
        gpu("multi_device_failure_names_the_device_and_loses_nothing", multi_failure),
        gpu("multi_device_uneven_weights_and_fewer_targets_than_devices", multi_uneven),
        Trial::test("cuda::multi_device_missing_ordinal_is_an_error", || match MultiDevice::on_devices(&[0, 4096]) {
            Err(Error::OnDevice { ordinal: 4096, .. }) | Err(Error::NoDevice) => Ok(()),
            other => Err(format!("expected an error naming device 4096, got {other:?}").into()),
        }),
    ]);
    trials.extend(device_tree::checks().into_iter().map(|(name, f)| gpu(name, f)));
    run(trials);
}

/// The whole-gradient pair kernels on a system of 20,000 (79 f32 tiles, 157 f64 ones)
/// on itself: the same bits with every diagonal in one launch, one a launch and a few a
/// launch, on the host-slice and the device call, and against the oracle at 1,500
/// particles after a few-diagonal split (the shared suite checks the one-launch form).
fn pair_bands<T: DeviceReal>() -> Result<(), Failed> {
    use nbody_core::{InteractionList, Pair, Span};
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let c = T::from_f64;
    let n = 20_000;
    let (ps, vs) = nbody_integrators::ics::plummer::<T>(n, 4);
    let cot: Vec<Field<T>> =
        vs.iter().enumerate().map(|(i, v)| Field::new(v.vx, v.vy, v.vz, c((i % 7) as f64 * 0.1))).collect();
    let pairs = [Pair { targets: Span::new(0, n as u32), sources: Span::new(0, 1) }];
    let spans = [Span::new(0, n as u32)];
    let list = InteractionList { pairs: &pairs, source_spans: &spans };
    for potential in [false, true] {
        let mut params = Params::softened(c(1.0 / 256.0));
        params.potential = potential;
        let mut runs = Vec::new();
        for bytes in [usize::MAX, 1, 3 << 20] {
            gpu.limit_pair_slots(bytes);
            let mut g = vec![Particle::new(c(1.0), c(-2.0), c(0.5), c(0.25)); n];
            gpu.vjp_batch(&ps, &list, &params, &cot, &mut g).map_err(gpu_err)?;
            if g.iter().any(|p| !p.x.is_finite() || !p.m.is_finite()) {
                return Err(format!("{} potential {potential}: a gradient is not finite", T::NAME).into());
            }
            runs.push(g);
        }
        gpu.limit_pair_slots(usize::MAX);
        if runs[1..].iter().any(|r| *r != runs[0]) {
            return Err(format!("{} potential {potential}: the bands changed the bits", T::NAME).into());
        }
    }
    // A band split against the oracle: 1,500 particles, diagonals a launch as few as 1.
    gpu.limit_pair_slots(1);
    let r =
        nbody_conformance::run_check::<T, _>("vjp_batch_on_itself", &mut gpu, nbody_core::Real::to_f64(T::epsilon()));
    gpu.limit_pair_slots(usize::MAX);
    r.map_err(|e| format!("{} one diagonal a launch: {e}", T::NAME).into())
}

fn gpu_err(e: Error) -> Failed {
    format!("{e}").into()
}

/// Per-particle relative acceleration error on a 65,536-particle Plummer sphere, against
/// the f64 oracle (conformance/src/accuracy.rs).
fn plummer_accuracy<T: DeviceReal>(bound: f64) -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    accuracy::check(T::NAME, accuracy::error(&mut gpu, &accuracy::plummer::<T>())?, bound)
}

/// The mixed executor's figures (issue #17): at most 2e-6 at the origin and shifted by
/// 1e4, shifted within twice the origin's, and in Morton order (the float path for far
/// tiles) at both; plain f32 on the GPU printed beside them.
fn mixed_accuracy() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let mut plain = CudaExecutor::new().map_err(gpu_err)?;
    accuracy::mixed_at_origin_and_shifted(&mut mixed, Some(&mut plain), 2e-6)?;
    accuracy::mixed_in_morton_order(&mut mixed, 2e-6)
}

/// The mixed executor on clustered, mass-spread systems, every target against the GPU's
/// f64 field, in every order: the CPU mixed executor's bound.
fn mixed_on_clustered() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let mut reference = CudaExecutor::new().map_err(gpu_err)?;
    accuracy::mixed_on_clustered(&mut mixed, &mut reference, 2e-6)
}

/// The mixed executor with every particle three times over, against the GPU's f64 field.
fn mixed_with_coincident_copies() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let mut reference = CudaExecutor::new().map_err(gpu_err)?;
    accuracy::mixed_with_coincident_copies(&mut mixed, &mut reference, 2e-6)
}

/// The warp-shuffle variant (every targets-per-thread, f32, f64 and mixed) against the
/// oracle, with and without softening and potential, a shared overlap, sizes that leave
/// partial warps and blocks.
fn warp_shuffle() -> Result<(), Failed> {
    fn case<T: DeviceReal>(gpu: &mut CudaExecutor, u: f64) -> Result<(), Failed> {
        let (all, _) = nbody_integrators::ics::plummer::<T>(1500, 17);
        for (nt, ns) in [(700, 1500), (1, 33), (129, 300)] {
            let (targets, sources) = (&all[..nt], &all[..ns]);
            let (t, s) = (gpu.upload(targets).map_err(gpu_err)?, gpu.upload(sources).map_err(gpu_err)?);
            for ni in nbody_cuda::tuning::SHUFFLE_TARGETS_PER_THREAD {
                for eps in [0.0, 0.01] {
                    for potential in [false, true] {
                        let mut params = Params::softened(T::from_f64(eps));
                        params.potential = potential;
                        params.overlap = nbody_core::Overlap::Shared { target_start: 0, source_start: 0, len: nt };
                        let before = vec![Field::new(T::one(), T::one(), T::one(), T::one()); nt];
                        let mut out = gpu.zeroed_fields::<T>(nt).map_err(gpu_err)?;
                        gpu.accelerations_resident_shuffle(&t, &s, &params, &mut out, ni).map_err(gpu_err)?;
                        let mut got = vec![Field::zero(); nt];
                        gpu.download(&out, &mut got).map_err(gpu_err)?;
                        for (g, b) in got.iter_mut().zip(&before) {
                            *g = Field::new(g.ax + b.ax, g.ay + b.ay, g.az + b.az, g.phi + b.phi);
                        }
                        let truth = exact(targets, sources, &params).map_err(gpu_err)?;
                        compare(&got, &before, &truth, Path::Pairs, potential, u).map_err(|m| {
                            format!("{} shuffle ni {ni}, {nt} x {ns}, eps {eps}, potential {potential}: {m}", T::NAME)
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
    case::<f32>(&mut CudaExecutor::new().map_err(gpu_err)?, f32::EPSILON as f64)?;
    case::<f64>(&mut CudaExecutor::new().map_err(gpu_err)?, f64::EPSILON)?;
    case::<f64>(&mut CudaMixedExecutor::new().map_err(gpu_err)?.into_executor(), f32::EPSILON as f64)
}

/// The device j-memory (GRAPE-6's, for the C ABI's g6 functions): j-particles at their
/// own times, set in two rounds (the second rewrites some), predicted to one time on the
/// device; targets that are j-particles (in shuffled order, at perturbed positions that
/// stand in for their prediction) and targets that are not. Against the host's
/// prediction and the reference executor, target by target.
fn j_memory(mixed: bool) -> Result<(), Failed> {
    use nbody_core::{Bodies, Jerk, Overlap, Particle, Reference, Velocity};
    use nbody_cuda::{DeviceJMemory, JParticle};
    let mut gpu = if mixed {
        CudaMixedExecutor::new().map_err(gpu_err)?.into_executor()
    } else {
        CudaExecutor::new().map_err(gpu_err)?
    };
    let (nj, time, eps) = (3000usize, 0.1, 0.01);
    let (p, v) = nbody_integrators::ics::plummer::<f64>(nj + 100, 21);
    let js: Vec<JParticle> = (0..nj)
        .map(|i| {
            let f = |k: usize| ((i * 7 + k * 13) % 17) as f64 / 17.0 - 0.5;
            JParticle {
                x: p[i].position(),
                m: p[i].m,
                v: [v[i].vx, v[i].vy, v[i].vz],
                a: [f(0), f(1), f(2)],
                j: [f(3), f(4), f(5)],
                t: time * ((i % 5) as f64) / 5.0,
            }
        })
        .collect();
    let mut jm = DeviceJMemory::new(&mut gpu).map_err(gpu_err)?;
    for (a, q) in js.iter().enumerate() {
        // A first version of every particle, then the real one (the later set wins).
        jm.set(a, JParticle { m: 2.0 * q.m, ..*q }).map_err(gpu_err)?;
    }
    let mut dummy = (vec![Field::zero(); 1], vec![Jerk::zero(); 1]);
    let probe = [Particle::new(0.0, 0.0, 0.0, 0.0)];
    let at_rest = [Velocity::new(0.0, 0.0, 0.0)];
    jm.forces(&mut gpu, nj, time, Bodies { pos: &probe, vel: &at_rest }, &[-1], eps, &mut dummy.0, &mut dummy.1, None)
        .map_err(gpu_err)?;
    for (a, q) in js.iter().enumerate() {
        jm.set(a, *q).map_err(gpu_err)?;
    }
    let predict = |q: &JParticle| {
        let d = time - q.t;
        let x: [f64; 3] = std::array::from_fn(|k| q.x[k] + d * (q.v[k] + d * (0.5 * q.a[k] + d * q.j[k] / 6.0)));
        let w: [f64; 3] = std::array::from_fn(|k| q.v[k] + d * (q.a[k] + 0.5 * d * q.j[k]));
        (Particle::new(x[0], x[1], x[2], q.m), Velocity::new(w[0], w[1], w[2]))
    };
    let (mut spos, mut svel): (Vec<_>, Vec<_>) = js.iter().map(predict).unzip();
    // Targets: every 6th j-particle in reverse order, perturbed, then 100 free points.
    let mut own: Vec<i32> = (0..nj as i32).step_by(6).rev().collect();
    let (mut tpos, mut tvel) = (Vec::new(), Vec::new());
    for &a in &own {
        let (q, w) = (spos[a as usize], svel[a as usize]);
        let t = Particle::new(q.x + 1e-6, q.y - 1e-6, q.z, q.m);
        let u = Velocity::new(w.vx, w.vy + 1e-6, w.vz);
        (spos[a as usize], svel[a as usize]) = (t, u);
        tpos.push(t);
        tvel.push(u);
    }
    for i in nj..nj + 100 {
        own.push(-1);
        tpos.push(Particle::new(p[i].x, p[i].y, p[i].z, 0.0));
        tvel.push(v[i]);
    }
    let n = tpos.len();
    let (mut out, mut jerk) = (vec![Field::new(9.0, 9.0, 9.0, 9.0); n], vec![Jerk::zero(); n]);
    jm.forces(&mut gpu, nj, time, Bodies { pos: &tpos, vel: &tvel }, &own, eps, &mut out, &mut jerk, None)
        .map_err(gpu_err)?;
    let tolerance = if mixed { 1e-5 } else { 1e-11 };
    for k in 0..n {
        let overlap = match own[k] {
            a if a >= 0 => Overlap::Shared { target_start: 0, source_start: a as usize, len: 1 },
            _ => Overlap::Disjoint,
        };
        let params = Params::softened(eps).with_overlap(overlap);
        let (mut f, mut j) = (vec![Field::zero()], vec![Jerk::zero()]);
        Reference
            .accelerations_jerk(
                Bodies { pos: &tpos[k..=k], vel: &tvel[k..=k] },
                Bodies { pos: &spos, vel: &svel },
                &params,
                &mut f,
                &mut j,
            )
            .map_err(gpu_err)?;
        let scale = f[0].acceleration().iter().map(|x| x * x).sum::<f64>().sqrt();
        let jscale = j[0].components().iter().map(|x| x * x).sum::<f64>().sqrt();
        let da = (0..3).map(|c| (out[k].acceleration()[c] - f[0].acceleration()[c]).abs()).fold(0.0, f64::max);
        let dj = (0..3).map(|c| (jerk[k].components()[c] - j[0].components()[c]).abs()).fold(0.0, f64::max);
        let dp = (out[k].phi - f[0].phi).abs();
        if !(da <= tolerance * scale && dj <= 10.0 * tolerance * jscale && dp <= tolerance * f[0].phi.abs()) {
            return Err(format!(
                "target {k} (own {}): acceleration off by {da:e} (scale {scale:e}), jerk {dj:e} (scale {jscale:e}), potential {dp:e}",
                own[k]
            )
            .into());
        }
    }
    // Neighbours packed on the device: every list against a double loop over the
    // predicted j-particles (r² ≤ h², own excluded, increasing), with few slots so some
    // lists overflow, and the nearest; then with look-ahead steps, where a source also
    // counts when |dx + dt dv|² ≤ h² (NBODY6++'s velocity criterion).
    let radius2: Vec<f64> =
        (0..n).map(|k| if k % 7 == 3 { 0.0 } else { (0.02 * (1 + k % 5) as f64).powi(2) }).collect();
    let steps: Vec<f64> = (0..n).map(|k| [0.0, 0.01, 0.05][k % 3]).collect();
    let capacity = 6;
    // The last pass also marks the sources within half the radius (PackedLists::INSIDE).
    let half: Vec<f64> = radius2.iter().map(|r| 0.5 * r).collect();
    let mut lists = |radius2: &[f64], ahead: Option<&[f64]>, exclude: bool, inside: Option<&[f64]>| {
        let targets = Bodies { pos: &tpos, vel: &tvel };
        let (mut out, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
        let search = nbody_cuda::ListSearch { radius2, capacity, ahead, exclude, inside };
        jm.forces_and_lists(&mut gpu, nj, time, targets, &own, eps, &mut out, &mut jerk, search)
            .map(|packed| (packed, out, jerk))
    };
    let mut overflowed = 0;
    let mut widened = 0;
    let mut marked = 0;
    for (ahead, exclude, inside) in [
        (None, false, None),
        (Some(&steps[..]), false, None),
        (Some(&steps[..]), true, None),
        (Some(&steps[..]), true, Some(&half[..])),
    ] {
        let (packed, out, jerk) = lists(&radius2, ahead, exclude, inside).map_err(gpu_err)?;
        // A source at r² within a rounding of h² may fall either side (f32 distances in
        // the mixed family): it may be listed or not.
        let slack = if mixed { 1e-5 } else { 1e-12 };
        for k in 0..n {
            let d2 = |a: usize| {
                let (t, q) = (tpos[k], spos[a]);
                (t.x - q.x).powi(2) + (t.y - q.y).powi(2) + (t.z - q.z).powi(2)
            };
            let near2 = |a: usize| {
                let dt = ahead.map_or(0.0, |s| s[k]);
                let (t, q, tv, qv) = (tpos[k], spos[a], tvel[k], svel[a]);
                let d = [
                    q.x - t.x + dt * (qv.vx - tv.vx),
                    q.y - t.y + dt * (qv.vy - tv.vy),
                    q.z - t.z + dt * (qv.vz - tv.vz),
                ];
                d2(a).min(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            };
            let others = || (0..nj).filter(|&a| a as i32 != own[k]);
            let surely: Vec<u32> =
                others().filter(|&a| near2(a) <= radius2[k] * (1.0 - slack)).map(|a| a as u32).collect();
            let maybe: Vec<u32> =
                others().filter(|&a| near2(a) <= radius2[k] * (1.0 + slack)).map(|a| a as u32).collect();
            widened += others().filter(|&a| near2(a) < radius2[k] && d2(a) > radius2[k]).count();
            let best = others().map(|a| (d2(a), a)).fold((f64::INFINITY, 0), |m, x| if x.0 < m.0 { x } else { m });
            let entries = packed.list(k);
            let got: Vec<u32> = entries.iter().map(|e| e & !PackedLists::INSIDE).collect();
            let found = packed.counts[k] as usize;
            // The marks: every source marked is within the inside radius, and every one
            // surely within it is marked; none without an inside radius.
            for (&e, &a) in entries.iter().zip(&got) {
                let within = inside.map_or(-1.0, |r| r[k]);
                let is_marked = e & PackedLists::INSIDE != 0;
                marked += usize::from(is_marked);
                let r2 = near2(a as usize);
                if (is_marked && r2 > within * (1.0 + slack)) || (!is_marked && r2 < within * (1.0 - slack)) {
                    return Err(format!(
                        "target {k}: source {a} at {r2:e} marked {is_marked}, inside radius² {within:e}"
                    )
                    .into());
                }
            }
            let got = &got[..];
            let sorted = got.windows(2).all(|w| w[0] < w[1]);
            let fits = found >= surely.len() && found <= maybe.len() && got.len() == found.min(capacity);
            let inside = got.iter().all(|a| maybe.contains(a));
            let complete = found > capacity || surely.iter().all(|a| got.contains(a));
            if !(fits && sorted && inside && complete) {
                return Err(format!(
                    "target {k} (look-ahead {ahead:?}): {found} found, {got:?} stored, expected {surely:?} (at most {maybe:?})",
                    ahead = ahead.map(|s| s[k])
                )
                .into());
            }
            overflowed += usize::from(packed.overflowed(k));
            let near = packed.nearest[k].map_or(usize::MAX, |a| a as usize);
            if near != best.1 && d2(near) > best.0 * (1.0 + slack) {
                return Err(format!(
                    "target {k}: nearest {near} at {:e}, expected {} at {:e}",
                    d2(near),
                    best.1,
                    best.0
                )
                .into());
            }
            // With exclude, the sums are those over the sources not listed.
            if exclude && !packed.overflowed(k) {
                let kept: Vec<usize> = others().filter(|&a| !got.contains(&(a as u32))).collect();
                let (kp, kv): (Vec<_>, Vec<_>) = kept.iter().map(|&a| (spos[a], svel[a])).unzip();
                let (mut f, mut j) = (vec![Field::zero()], vec![Jerk::zero()]);
                let one = Bodies { pos: &tpos[k..=k], vel: &tvel[k..=k] };
                Reference
                    .accelerations_jerk(one, Bodies { pos: &kp, vel: &kv }, &Params::softened(eps), &mut f, &mut j)
                    .map_err(gpu_err)?;
                let scale = f[0].acceleration().iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-300);
                let jscale = j[0].components().iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-300);
                let da = (0..3).map(|c| (out[k].acceleration()[c] - f[0].acceleration()[c]).abs()).fold(0.0, f64::max);
                let dj = (0..3).map(|c| (jerk[k].components()[c] - j[0].components()[c]).abs()).fold(0.0, f64::max);
                if !(da <= tolerance * scale && dj <= 10.0 * tolerance * jscale) {
                    return Err(format!(
                        "target {k}: with the {} listed left out, acceleration off by {da:e} (scale {scale:e}), jerk {dj:e}",
                        got.len()
                    )
                    .into());
                }
            }
        }
    }
    if widened == 0 {
        return Err("no source came within a radius only by the look-ahead: the check needs some".into());
    }
    if marked == 0 {
        return Err("no entry was marked inside: the check needs some".into());
    }
    // A negative or NaN radius is refused, as every executor's lists refuse it.
    for bad in [-1.0, f64::NAN] {
        let mut r2 = radius2.clone();
        r2[1] = bad;
        let r = lists(&r2, None, false, None);
        if !matches!(r, Err(Error::InvalidParameter { name: "neighbour radius", .. })) {
            return Err(format!("radius² {bad}: expected an error, got {:?}", r.map(|p| p.0.counts.len())).into());
        }
    }
    let mut bad_steps = steps.clone();
    bad_steps[2] = f64::NAN;
    if !matches!(lists(&radius2, Some(&bad_steps), false, None), Err(Error::NonFinite { index: 2, .. })) {
        return Err("a NaN look-ahead step: expected an error".into());
    }
    if overflowed == 0 || overflowed == 4 * n {
        return Err(format!("{overflowed} of {n} lists overflowed: the check needs some of each").into());
    }
    // Bad input: an own address twice, or one at or beyond nj.
    for bad in [[0, 0], [nj as i32, -1]] {
        let (mut o, mut j) = (vec![Field::zero(); 2], vec![Jerk::zero(); 2]);
        let r =
            jm.forces(&mut gpu, nj, time, Bodies { pos: &tpos[..2], vel: &tvel[..2] }, &bad, eps, &mut o, &mut j, None);
        if !matches!(r, Err(Error::InvalidParameter { name: "own", .. })) {
            return Err(format!("own addresses {bad:?}: expected an error, got {r:?}").into());
        }
    }
    Ok(())
}

/// Every launch configuration of the mixed kernels against the oracle, at f32's roundoff.
fn mixed_every_config() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let (random, vel) = nbody_integrators::ics::plummer::<f64>(1500, 11);
    // In Morton order too, where blocks meet far source tiles (the float path).
    let (sorted, _) = nbody_integrators::ics::morton_sorted(&random, &vel);
    for (c, all) in nbody_cuda::tuning::CANDIDATES.iter().flat_map(|c| [(*c, &random), (*c, &sorted)]) {
        mixed.executor().force_config(Some(c));
        for (nt, ns) in [(700, 1500), (1, 300)] {
            let (targets, sources) = (&all[..nt], &all[..ns]);
            for eps in [0.0, 0.01] {
                for potential in [false, true] {
                    let mut params = Params::softened(eps);
                    params.potential = potential;
                    params.overlap = nbody_core::Overlap::Shared { target_start: 0, source_start: 0, len: nt };
                    let before = vec![Field::new(1.0, 1.0, 1.0, 1.0); nt];
                    let mut out = before.clone();
                    mixed.accelerations(targets, sources, &params, &mut out).map_err(gpu_err)?;
                    let truth = exact(targets, sources, &params).map_err(gpu_err)?;
                    compare(&out, &before, &truth, Path::Pairs, potential, f32::EPSILON as f64).map_err(|m| {
                        format!("{c:?} mixed, N_i {nt}, N_j {ns}, eps {eps}, potential {potential}: {m}")
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// The device-resident leapfrog on the mixed kernels against the host leapfrog in f64:
/// a relative force error of about 1e-7 over 16 steps of 1/256 moves positions by far
/// less than 1e-9 (f32 positions would be off by 1e-8 after one step).
fn mixed_device_leapfrog() -> Result<(), Failed> {
    leapfrog_against_host(CudaMixedExecutor::new().map_err(gpu_err)?.executor(), 1e-9)
}

/// A mixed executor keeps a resident state in Morton order and sorts it again on the
/// device as the particles move (here every third drift): 16 leapfrog steps on a
/// Plummer sphere of unequal masses stay with the host leapfrog (positions within 1e-9),
/// every mass comes back where the caller had it, the downloaded field is the
/// reference's at the caller's positions (within the 2e-6), and the state put
/// back as saved (its order and drifts since its sort) continues bit for bit.
fn mixed_sorted_state() -> Result<(), Failed> {
    use nbody_integrators::{Leapfrog, State};
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let gpu = mixed.executor();
    gpu.set_sorted_above(0);
    let n = 2048;
    let (mut p, v) = nbody_integrators::ics::plummer::<f64>(n, 6);
    for (k, b) in p.iter_mut().enumerate() {
        b.m *= 0.5 + (k % 7) as f64 / 6.0;
    }
    let (dt, eps) = (1.0 / 256.0, 1.0 / 64.0);
    let params = Params::softened(eps);
    let mut dev = gpu.upload_state(&p, &v).map_err(gpu_err)?;
    let first = dev.order().ok_or("a mixed state was not sorted at upload")?.to_vec();
    if first.iter().enumerate().all(|(k, &i)| i as usize == k) {
        return Err("the generator's order came back as the Morton order".into());
    }
    dev.set_resort_every(3);
    let mut host = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(dt, eps).map_err(gpu_err)?;
    for _ in 0..16 {
        gpu.leapfrog_step(&mut dev, &params, dt).map_err(gpu_err)?;
        lf.step(&mut host, &mut nbody_core::Reference).map_err(gpu_err)?;
    }
    if dev.order() == Some(&first[..]) {
        return Err("the state was never sorted again".into());
    }
    let (mut pos, mut vel) = (p.clone(), v.clone());
    gpu.download_state(&dev, &mut pos, &mut vel).map_err(gpu_err)?;
    if pos.iter().zip(&p).any(|(a, b)| a.m != b.m) {
        return Err("a mass came back at another index".into());
    }
    let worst = pos
        .iter()
        .zip(&host.pos)
        .flat_map(|(a, b)| (0..3).map(move |k| (a.position()[k] - b.position()[k]).abs()))
        .fold(0.0, nan_max);
    if worst > 1e-9 || worst.is_nan() {
        return Err(format!("sorted device and host leapfrog differ by {worst:e} after 16 steps").into());
    }
    let mut field = vec![Field::zero(); n];
    gpu.download_field(&mut dev, &params, &mut field).map_err(gpu_err)?;
    let mut truth = vec![Field::zero(); n];
    let all = params.with_overlap_identical();
    nbody_core::Reference.accelerations(&pos, &pos, &all, &mut truth).map_err(gpu_err)?;
    let norm = |x: [f64; 3]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
    let err = field
        .iter()
        .zip(&truth)
        .map(|(a, b)| {
            let (a, b) = (a.acceleration(), b.acceleration());
            norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / norm(b)
        })
        .fold(0.0, nan_max);
    if err > 2e-6 || err.is_nan() {
        return Err(format!("downloaded field off the reference by {err:e}").into());
    }
    let (order, drifts) = (dev.order().ok_or("the state lost its order")?.to_vec(), dev.drifts_since_sort());
    let mut again = gpu.upload_state_arranged(&pos, &vel, &order, drifts).map_err(gpu_err)?;
    again.set_resort_every(3);
    for _ in 0..5 {
        gpu.leapfrog_step(&mut dev, &params, dt).map_err(gpu_err)?;
        gpu.leapfrog_step(&mut again, &params, dt).map_err(gpu_err)?;
    }
    let (mut a, mut b) = ((p.clone(), v.clone()), (p.clone(), v.clone()));
    gpu.download_state(&dev, &mut a.0, &mut a.1).map_err(gpu_err)?;
    gpu.download_state(&again, &mut b.0, &mut b.1).map_err(gpu_err)?;
    if a != b || dev.order() != again.order() {
        return Err("the state put back as saved did not continue bit for bit".into());
    }
    Ok(())
}

/// Mixed host-slice calls above the executor's threshold (set to 0 here) run on copies
/// sorted on the device: identical targets and sources, and distinct ones (each
/// sorted apart), both in the generator's random order, add the oracle's field into what
/// `out` held, at the caller's indices, within the mixed bound (2e-6 relative, every
/// 16th target); the resident sorted call agrees with the unsorted one.
fn mixed_sorted_calls() -> Result<(), Failed> {
    use nbody_core::Overlap;
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    mixed.executor().set_sorted_above(0);
    let (all, _) = nbody_integrators::ics::plummer::<f64>(20_480, 12);
    let eps = 0.01;
    let cases = [(&all[..8192], &all[..8192], Overlap::Identical), (&all[16_384..], &all[..16_384], Overlap::Disjoint)];
    for (targets, sources, overlap) in cases {
        let params = Params::softened(eps).with_overlap(overlap);
        let before = vec![Field::new(1.0, -1.0, 0.5, 2.0); targets.len()];
        let mut out = before.clone();
        mixed.accelerations(targets, sources, &params, &mut out).map_err(gpu_err)?;
        let picked: Vec<Particle<f64>> = targets.iter().step_by(16).copied().collect();
        let truth = exact(&picked, sources, &params.with_overlap(Overlap::Disjoint)).map_err(gpu_err)?;
        let mut worst = (0.0f64, 0.0f64);
        for ((o, e), p) in out.iter().step_by(16).zip(&truth).zip(&picked) {
            let a = o.acceleration();
            let d = (0..3).map(|k| (a[k] - before[0].acceleration()[k] - e.acc[k]).powi(2)).sum::<f64>().sqrt();
            worst.0 = nan_max(worst.0, d / e.acc.iter().map(|x| x * x).sum::<f64>().sqrt());
            // The oracle counted each target's own pair in its potential (-m / eps).
            let phi = if overlap == Overlap::Identical { e.phi + p.m / eps } else { e.phi };
            worst.1 = nan_max(worst.1, ((o.phi - before[0].phi) - phi).abs() / phi.abs());
        }
        if worst.0 > 2e-6 || worst.1 > 2e-6 {
            return Err(format!(
                "{overlap:?}: relative errors {:.2e} (acceleration), {:.2e} (potential)",
                worst.0, worst.1
            )
            .into());
        }
        println!("sorted {overlap:?} call, {} x {}: {:.2e} {:.2e}", targets.len(), sources.len(), worst.0, worst.1);
        let gpu = mixed.executor();
        let (t, s) = (gpu.upload(targets).map_err(gpu_err)?, gpu.upload(sources).map_err(gpu_err)?);
        let s = if overlap == Overlap::Identical { &t } else { &s };
        let (mut plain, mut sorted) =
            (gpu.zeroed_fields(targets.len()).map_err(gpu_err)?, gpu.zeroed_fields(targets.len()).map_err(gpu_err)?);
        gpu.accelerations_resident(&t, s, &params, &mut plain).map_err(gpu_err)?;
        gpu.accelerations_resident_sorted(&t, s, &params, &mut sorted).map_err(gpu_err)?;
        let (mut a, mut b) = (vec![Field::zero(); targets.len()], vec![Field::zero(); targets.len()]);
        gpu.download(&plain, &mut a).map_err(gpu_err)?;
        gpu.download(&sorted, &mut b).map_err(gpu_err)?;
        let differ = a.iter().zip(&b).map(|(x, y)| {
            let d = (0..3).map(|k| (x.acceleration()[k] - y.acceleration()[k]).powi(2)).sum::<f64>().sqrt();
            d / x.acceleration().iter().map(|v| v * v).sum::<f64>().sqrt()
        });
        let worst = differ.fold(0.0, nan_max);
        if worst.is_nan() || worst >= 4e-6 {
            return Err(format!("{overlap:?}: resident sorted and unsorted calls differ by {worst:.2e}").into());
        }
    }
    Ok(())
}

/// The mixed batched kernel on a 16,384-body Plummer sphere shifted by 1e4, in the
/// generator's order and in Morton order (where most tiles take the float path): leaves
/// of 32 targets against every leaf as a span of sources (a tree code's list, opened all
/// the way), every 16th target within 2e-6 of the f64 reference.
fn mixed_batch_orders() -> Result<(), Failed> {
    use nbody_core::{InteractionList, Pair, Span};
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let (pos, vel) = nbody_integrators::ics::plummer::<f64>(16_384, 7);
    let shift = |p: &[Particle<f64>]| -> Vec<Particle<f64>> {
        p.iter().map(|b| Particle::new(b.x + 1e4, b.y + 1e4, b.z + 1e4, b.m)).collect()
    };
    let sorted = nbody_integrators::ics::morton_sorted(&pos, &vel).0;
    let n = pos.len() as u32;
    let spans: Vec<Span> = (0..n).step_by(32).map(|a| Span::new(a, a + 32)).collect();
    let pairs: Vec<Pair> =
        spans.iter().map(|&targets| Pair { targets, sources: Span::new(0, spans.len() as u32) }).collect();
    let list = InteractionList { pairs: &pairs, source_spans: &spans };
    for (what, p) in [("generated order", shift(&pos)), ("Morton order", shift(&sorted))] {
        let params = Params::softened(1.0 / 256.0);
        let mut out = vec![Field::zero(); p.len()];
        mixed.accelerations_batch(&p, &list, &params, &mut out).map_err(gpu_err)?;
        for k in (0..p.len()).step_by(16) {
            let one = params.with_overlap(nbody_core::Overlap::Shared { target_start: 0, source_start: k, len: 1 });
            let mut f = [Field::zero()];
            nbody_core::Reference.accelerations(&p[k..=k], &p, &one, &mut f).map_err(gpu_err)?;
            let norm = |x: [f64; 3]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
            let (a, b) = (out[k].acceleration(), f[0].acceleration());
            let err = norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / norm(b);
            if err > 2e-6 || err.is_nan() {
                return Err(format!("{what}, target {k}: acceleration off by {err:e}").into());
            }
        }
    }
    Ok(())
}

/// A tree code's leaf call whose lists are long enough to be cut into several items per
/// target group (8,192 particles: groups of 32 and of 100 targets against every particle
/// and 3,000 far quadrupole cells), on one GPU in f32, f64 and mixed precision and on
/// two lanes of GPU 0: four calls give the same bits (the cut groups' sums are added in
/// order, not atomically), and every 8th target is within the precision's bound of the
/// f64 reference.
fn batched_same_bits() -> Result<(), Failed> {
    fn check<T: DeviceReal, E: Executor<T>>(what: &str, exec: &mut E, bound: f64) -> Result<(), Failed> {
        use nbody_core::{InteractionList, LeafList, Pair, Span, cell::Cell};
        let (pos, _) = nbody_integrators::ics::plummer::<f64>(8192, 11);
        let c = T::from_f64;
        let ps: Vec<Particle<T>> = pos.iter().map(|b| Particle::new(c(b.x), c(b.y), c(b.z), c(b.m))).collect();
        let n = ps.len() as u32;
        let cells: Vec<Cell<T>> = (0..3000)
            .map(|k| {
                let (a, r) = (k as f64 * 2.399963, 30.0 + (k % 7) as f64);
                let q = [1e-3, 2e-4, -1e-4, -4e-4, 3e-4, -6e-4].map(|x| c(x * (1 + k % 5) as f64));
                Cell::new(c(r * a.cos()), c(r * a.sin()), c(((k % 11) as f64 - 5.0) * 3.0), c(1e-3), q)
                    .with_spread(c(2e-3 * (1 + k % 3) as f64))
            })
            .collect();
        // Groups of 32 targets, then of 100; each against one span of every particle.
        let mut cuts: Vec<u32> = (0..4096).step_by(32).collect();
        cuts.extend((4096..n).step_by(100));
        cuts.push(n);
        let spans = [Span::new(0, n)];
        let pairs: Vec<Pair> =
            cuts.windows(2).map(|w| Pair { targets: Span::new(w[0], w[1]), sources: Span::new(0, 1) }).collect();
        let cell_spans = [Span::new(0, 1000), Span::new(1000, 3000)];
        let ranges = vec![Span::new(0, 2); pairs.len()];
        let list = LeafList {
            particles: InteractionList { pairs: &pairs, source_spans: &spans },
            cells: &ranges,
            cell_spans: &cell_spans,
        };
        let params = Params::softened(c(0.01));
        let mut first = vec![Field::zero(); ps.len()];
        exec.accelerations_batch_cells(&ps, &cells, &list, &params, &mut first).map_err(gpu_err)?;
        let bits = |f: &[Field<T>]| -> Vec<u64> {
            f.iter().flat_map(|x| [x.ax, x.ay, x.az, x.phi].map(|v| v.to_f64().to_bits())).collect()
        };
        for round in 1..4 {
            let mut again = vec![Field::zero(); ps.len()];
            exec.accelerations_batch_cells(&ps, &cells, &list, &params, &mut again).map_err(gpu_err)?;
            if let Some(i) = bits(&first).iter().zip(bits(&again)).position(|(a, b)| *a != b) {
                return Err(format!("{what}: call {round} differs from the first at target {}", i / 4).into());
            }
        }
        // The f64 reference on the same list, every 8th target.
        let ref_ps: Vec<Particle<f64>> =
            ps.iter().map(|p| Particle::new(p.x.to_f64(), p.y.to_f64(), p.z.to_f64(), p.m.to_f64())).collect();
        let ref_cells: Vec<Cell<f64>> = cells
            .iter()
            .map(|k| {
                Cell::new(k.x.to_f64(), k.y.to_f64(), k.z.to_f64(), k.m.to_f64(), k.quadrupole().map(|q| q.to_f64()))
                    .with_spread(k.spread.to_f64())
            })
            .collect();
        let mut want = vec![Field::zero(); ps.len()];
        let p64 = Params::softened(0.01);
        nbody_core::Reference
            .accelerations_batch_cells(&ref_ps, &ref_cells, &list, &p64, &mut want)
            .map_err(gpu_err)?;
        let norm = |x: [f64; 3]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
        for k in (0..ps.len()).step_by(8) {
            let (a, b) = (first[k].acceleration().map(|x| x.to_f64()), want[k].acceleration());
            let err = norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / norm(b);
            if err > bound || err.is_nan() {
                return Err(format!("{what}, target {k}: acceleration off by {err:e} (bound {bound:e})").into());
            }
        }
        Ok(())
    }
    check::<f32, _>("f32", &mut CudaExecutor::new().map_err(gpu_err)?, 1e-5)?;
    check::<f64, _>("f64", &mut CudaExecutor::new().map_err(gpu_err)?, 1e-12)?;
    check::<f64, _>("mixed", &mut CudaMixedExecutor::new().map_err(gpu_err)?, 2e-6)?;
    check::<f32, _>("two lanes of GPU 0", &mut MultiDevice::on_devices(&[0, 0]).map_err(gpu_err)?, 1e-5)
}

/// The larger of two errors, NaN if either is (`f64::max` would drop it).
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// The mixed jerk kernel on a 16,384-body Plummer sphere in the generator's order and in
/// Morton order (where most source tiles take the float path), against the f64
/// reference on every 16th target: acceleration within 2e-6 of its magnitude (the
/// issue's bound), jerk and potential within the j-memory check's 1e-4 and 1e-5.
fn mixed_jerk_orders() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let (pos, vel) = nbody_integrators::ics::plummer::<f64>(16_384, 5);
    let sorted = nbody_integrators::ics::morton_sorted(&pos, &vel);
    for (what, (p, v)) in [("generated order", (pos.clone(), vel.clone())), ("Morton order", sorted)] {
        let params = Params::softened(1.0 / 256.0).with_overlap_identical();
        let b = Bodies { pos: &p, vel: &v };
        let (mut out, mut jerk) = (vec![Field::zero(); p.len()], vec![Jerk::zero(); p.len()]);
        mixed.accelerations_jerk(b, b, &params, &mut out, &mut jerk).map_err(gpu_err)?;
        for k in (0..p.len()).step_by(16) {
            let one = params.with_overlap(nbody_core::Overlap::Shared { target_start: 0, source_start: k, len: 1 });
            let (mut f, mut j) = ([Field::zero()], [Jerk::zero()]);
            let t = Bodies { pos: &p[k..=k], vel: &v[k..=k] };
            nbody_core::Reference.accelerations_jerk(t, b, &one, &mut f, &mut j).map_err(gpu_err)?;
            let norm = |x: [f64; 3]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
            let diff = |a: [f64; 3], b: [f64; 3]| norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]);
            let ea = diff(out[k].acceleration(), f[0].acceleration()) / norm(f[0].acceleration());
            let ej = diff(jerk[k].components(), j[0].components()) / norm(j[0].components());
            let ep = (out[k].phi - f[0].phi).abs() / f[0].phi.abs();
            if !(ea <= 2e-6 && ej <= 1e-4 && ep <= 1e-5) {
                return Err(format!("{what}, target {k}: acceleration {ea:e}, jerk {ej:e}, potential {ep:e}").into());
            }
        }
        mixed_neighbours_exact(&mut mixed, b, &params).map_err(|e| format!("{what}: {}", e.message().unwrap_or("")))?;
    }
    Ok(())
}

/// The mixed jerk kernel's neighbours (lists within h = 0.1 and the nearest) against the
/// f64 reference's, every target: the same, but for sources within 1e-5 relative of the
/// radius or of the nearest distance (the kernel's distances are float roundings of exact
/// separations). In Morton order most tiles take the float path, which must leave them
/// to the double-single distances.
fn mixed_neighbours_exact(
    mixed: &mut CudaMixedExecutor,
    b: Bodies<'_, f64>,
    params: &Params<f64>,
) -> Result<(), Failed> {
    use nbody_core::neighbours::{Nearest, Neighbours, Within};
    let (n, capacity, h2) = (b.pos.len(), 512, 0.01);
    let radius2 = vec![h2; n];
    // The nearest, the list slots and the counts.
    type Found = (Vec<Nearest<f64>>, Vec<u32>, Vec<u32>);
    let run = |exec: &mut dyn Executor<f64>| -> Result<Found, Failed> {
        let (mut out, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
        let (mut nearest, mut indices, mut counts) =
            (vec![Nearest::none(); n], vec![0u32; n * capacity], vec![0u32; n]);
        let within = Some(Within { radius2: &radius2, capacity, indices: &mut indices, counts: &mut counts });
        let mut nb = Neighbours { nearest: &mut nearest, within, index_offset: 0 };
        exec.accelerations_jerk_neighbours(b, b, params, &mut out, &mut jerk, &mut nb).map_err(gpu_err)?;
        Ok((nearest, indices, counts))
    };
    let (gn, gi, gc) = run(mixed)?;
    let (rn, ri, rc) = run(&mut nbody_core::Reference)?;
    let r2 =
        |i: usize, j: usize| -> f64 { (0..3).map(|k| (b.pos[i].position()[k] - b.pos[j].position()[k]).powi(2)).sum() };
    let (mut listed, mut ties) = (0usize, 0usize);
    for i in 0..n {
        if gc[i] as usize > capacity || rc[i] as usize > capacity {
            return Err(format!("target {i}: a list overflowed {capacity} slots").into());
        }
        let set = |idx: &[u32], c: u32| -> std::collections::BTreeSet<u32> {
            idx[i * capacity..i * capacity + c as usize].iter().copied().collect()
        };
        let (g, r) = (set(&gi, gc[i]), set(&ri, rc[i]));
        listed += r.len();
        for &j in g.symmetric_difference(&r) {
            if (r2(i, j as usize) - h2).abs() > 1e-5 * h2 {
                return Err(
                    format!("target {i}: source {j} at r2 {:e} listed by one side only", r2(i, j as usize)).into()
                );
            }
            ties += 1;
        }
        if gn[i].index != rn[i].index {
            let (a, c) = (r2(i, gn[i].index as usize), r2(i, rn[i].index as usize));
            if (a - c).abs() > 1e-5 * c {
                return Err(format!(
                    "target {i}: nearest {} (r2 {a:e}) against {} (r2 {c:e})",
                    gn[i].index, rn[i].index
                )
                .into());
            }
            ties += 1;
        }
    }
    println!("mixed neighbours: {listed} listed pairs, {ties} within rounding of a boundary");
    Ok(())
}

/// A system wider than the mixed kernels' f32 offsets allow is refused on every entry
/// point, through the mixed executor and through the CUDA executor underneath it (whose
/// f64 calls run the same kernels), with the outputs untouched; f64 on a plain CUDA
/// executor takes it.
fn mixed_wide() -> Result<(), Failed> {
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let p = [Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(1e19, 0.0, 0.0, 1.0)];
    let v = [nbody_core::Velocity::new(0.0, 0.0, 0.0); 2];
    let b = Bodies { pos: &p, vel: &v };
    let params = Params::softened(0.01).with_overlap_identical();
    let before = [Field::new(1.0, 2.0, 3.0, 4.0); 2];
    let refused = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidParameter { name: "coordinates", .. }) => Ok(()),
        other => Err(Failed::from(format!("{what}: {other:?}, expected a refusal of the coordinates"))),
    };
    let (mut out, mut jerk) = (before, [Jerk::zero(); 2]);
    refused(mixed.accelerations(&p, &p, &params, &mut out), "mixed accelerations")?;
    refused(mixed.accelerations_jerk(b, b, &params, &mut out, &mut jerk), "mixed jerk")?;
    let gpu = mixed.executor();
    refused(gpu.accelerations(&p, &p, &params, &mut out), "the executor underneath, accelerations")?;
    refused(gpu.accelerations_jerk(b, b, &params, &mut out, &mut jerk), "the executor underneath, jerk")?;
    let spans = [nbody_core::Span::new(0, 2)];
    let pairs = [nbody_core::Pair { targets: nbody_core::Span::new(0, 2), sources: nbody_core::Span::new(0, 1) }];
    let list = nbody_core::InteractionList { pairs: &pairs, source_spans: &spans };
    refused(gpu.accelerations_batch(&p, &list, &params, &mut out), "the executor underneath, batch")?;
    refused(gpu.upload(&p).map(|_| ()), "the executor underneath, a resident upload")?;
    if out != before || jerk != [Jerk::zero(); 2] {
        return Err("a refused call changed an output".into());
    }
    let mut plain = CudaExecutor::new().map_err(gpu_err)?;
    plain.accelerations(&p, &p, &params, &mut out).map_err(gpu_err)?;
    let want = exact(&p, &p, &params).map_err(gpu_err)?;
    compare(&out, &before, &want, Path::Pairs, true, 1e-12).map_err(Failed::from)
}

fn check_against_oracle<T: DeviceReal>(gpu: &mut CudaExecutor, nt: usize, ns: usize, what: &str) -> Result<(), Failed> {
    let (all, _) = nbody_integrators::ics::plummer::<T>(nt.max(ns), 11);
    let (targets, sources) = (&all[..nt], &all[..ns]);
    for eps in [0.0, 0.01] {
        for potential in [false, true] {
            let mut params = Params::softened(T::from_f64(eps));
            params.potential = potential;
            params.overlap = nbody_core::Overlap::Shared { target_start: 0, source_start: 0, len: nt.min(ns) };
            let before = vec![Field::new(T::one(), T::one(), T::one(), T::one()); nt];
            let mut out = before.clone();
            gpu.accelerations(targets, sources, &params, &mut out).map_err(gpu_err)?;
            let truth = exact(targets, sources, &params).map_err(gpu_err)?;
            compare(&out, &before, &truth, Path::Pairs, potential, T::epsilon().to_f64())
                .map_err(|m| format!("{what}, N_i {nt}, N_j {ns}, eps {eps}, potential {potential}: {m}"))?;
        }
    }
    Ok(())
}

fn every_config() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    for c in nbody_cuda::tuning::CANDIDATES {
        gpu.force_config(Some(c));
        check_against_oracle::<f32>(&mut gpu, 700, 1500, &format!("{c:?} f32"))?;
        check_against_oracle::<f64>(&mut gpu, 700, 1500, &format!("{c:?} f64"))?;
    }
    Ok(())
}

fn awkward_sizes() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    for (nt, ns) in [(1, 1), (1, 2), (2, 1), (127, 129), (129, 255), (257, 1), (1, 1000), (3000, 17)] {
        check_against_oracle::<f32>(&mut gpu, nt, ns, "awkward")?;
        check_against_oracle::<f64>(&mut gpu, nt, ns, "awkward")?;
    }
    Ok(())
}

fn out_of_memory() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let too_many = gpu.info().total_memory / 32 + 1024;
    // A host slice this large would not fit here either: ask through the resident API.
    let err = gpu.zeroed_fields::<f64>(too_many * 2).err();
    match err {
        Some(Error::OutOfMemory { bytes }) if bytes > 0 => {}
        other => return Err(format!("expected OutOfMemory, got {other:?}").into()),
    }
    // The executor still works afterwards.
    check_against_oracle::<f32>(&mut gpu, 300, 300, "after out of memory")
}

/// A launch the driver refuses: the call is an error, the output (host slice or
/// device-resident) keeps what it held, and the next call is right.
fn failed_launch() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let (bodies, _) = nbody_integrators::ics::plummer::<f32>(3000, 9);
    let copy = bodies.clone();
    let params = Params::softened(0.01f32).with_overlap_identical();
    let before = vec![Field::new(1.0f32, 2.0, 3.0, 4.0); bodies.len()];
    let mut out = before.clone();
    gpu.fail_next_launch();
    match gpu.accelerations(&bodies, &bodies, &params, &mut out) {
        Err(Error::Device { .. }) => {}
        other => return Err(format!("expected a device error, got {other:?}").into()),
    }
    if out != before || bodies != copy {
        return Err("a failed launch changed the caller's data".into());
    }
    let set = gpu.upload(&bodies).map_err(gpu_err)?;
    let mut fields = gpu.zeroed_fields(bodies.len()).map_err(gpu_err)?;
    gpu.accelerations_resident(&set, &set, &params, &mut fields).map_err(gpu_err)?;
    let mut first = vec![Field::zero(); bodies.len()];
    gpu.download(&fields, &mut first).map_err(gpu_err)?;
    gpu.fail_next_launch();
    if gpu.accelerations_resident(&set, &set, &params, &mut fields).is_ok() {
        return Err("the sabotaged resident launch succeeded".into());
    }
    let mut after = vec![Field::zero(); bodies.len()];
    gpu.download(&fields, &mut after).map_err(gpu_err)?;
    if after != first {
        return Err("a failed resident launch changed the device fields".into());
    }
    check_against_oracle::<f32>(&mut gpu, 300, 300, "after a failed launch")?;
    check_against_oracle::<f64>(&mut gpu, 257, 1000, "after a failed launch")
}

/// The fuzz corpora (fuzz/corpus/, found from the working directory upwards, as on the
/// device machine, or from the repository) through the CUDA executor: the same checks the
/// fuzz targets run on the CPU executors (never a panic, refusals change nothing,
/// finite output in the finite range, agreement with the f64 oracle).
fn fuzz_corpora() -> Result<(), Failed> {
    use nbody_conformance::fuzz::{against_oracle, corpus, entry_points};
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let (points, oracle) = (corpus("entry_points"), corpus("cpu_vs_reference"));
    for data in &points {
        entry_points::<f32, _>(&mut gpu, data);
        entry_points::<f64, _>(&mut gpu, data);
    }
    for data in &oracle {
        against_oracle::<f32, _>(&mut gpu, data, f32::EPSILON as f64);
        against_oracle::<f64, _>(&mut gpu, data, f64::EPSILON);
    }
    println!("{} entry_points and {} cpu_vs_reference inputs replayed on the GPU", points.len(), oracle.len());
    Ok(())
}

/// A density map of a device-resident state equals the plain deposit of its particles.
fn resident_density_map() -> Result<(), Failed> {
    use nbody_core::projection::{Plane, Projection};
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let (p, v) = nbody_integrators::ics::plummer::<f32>(100_000, 4);
    let state = gpu.upload_state(&p, &v).map_err(gpu_err)?;
    for plane in [Plane::XY, Plane::XZ, Plane::YZ] {
        let proj = Projection { plane, centre: [0.05, -0.1], half_width: 1.5, pixels: 200 };
        let mut want = vec![0.25; 200 * 200];
        proj.deposit(&p, &mut want).map_err(gpu_err)?;
        let mut got = vec![0.25; 200 * 200];
        gpu.project_resident(state.positions(), &proj, &mut got).map_err(gpu_err)?;
        if let Some(k) = got.iter().zip(&want).position(|(g, w)| (g - w).abs() > 1e-12 * w.abs().max(1.0)) {
            return Err(format!("{plane:?}: cell {k}: {} on the device, {} by deposit", got[k], want[k]).into());
        }
    }
    Ok(())
}

fn device_resident() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    let (bodies, _) = nbody_integrators::ics::plummer::<f32>(5000, 5);
    let params = Params::softened(0.01f32).with_overlap_identical();
    let mut host = vec![Field::zero(); bodies.len()];
    gpu.accelerations(&bodies, &bodies, &params, &mut host).map_err(gpu_err)?;
    let set = gpu.upload(&bodies).map_err(gpu_err)?;
    let mut fields = gpu.zeroed_fields(bodies.len()).map_err(gpu_err)?;
    gpu.accelerations_resident(&set, &set, &params, &mut fields).map_err(gpu_err)?;
    let mut back = vec![Field::zero(); bodies.len()];
    gpu.download(&fields, &mut back).map_err(gpu_err)?;
    if back != host {
        return Err("device-resident results differ from the host-slice path".into());
    }
    Ok(())
}

fn autotuned() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    gpu.set_autotune(true);
    check_against_oracle::<f32>(&mut gpu, 3000, 2500, "autotuned")?;
    check_against_oracle::<f64>(&mut gpu, 3000, 2500, "autotuned")
}

/// Sixteen leapfrog steps on the device against the same steps on the host (reference
/// executor, f64): positions agree to f64 rounding, and energy is conserved.
fn device_leapfrog() -> Result<(), Failed> {
    leapfrog_against_host(&mut CudaExecutor::new().map_err(gpu_err)?, 1e-12)
}

/// Sixteen steps of the device-resident leapfrog of `gpu` on a 2,048-body Plummer sphere
/// against the host leapfrog on the reference executor: positions within `tolerance`.
fn leapfrog_against_host(gpu: &mut CudaExecutor, tolerance: f64) -> Result<(), Failed> {
    use nbody_integrators::{Leapfrog, State};
    let (p, v) = nbody_integrators::ics::plummer::<f64>(2048, 4);
    let (dt, eps) = (1.0 / 256.0, 1.0 / 64.0);
    let mut dev = gpu.upload_state(&p, &v).map_err(gpu_err)?;
    let params = Params::softened(eps);
    let mut host = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(dt, eps).map_err(gpu_err)?;
    for _ in 0..16 {
        gpu.leapfrog_step(&mut dev, &params, dt).map_err(gpu_err)?;
        lf.step(&mut host, &mut nbody_core::Reference).map_err(gpu_err)?;
    }
    let (mut pos, mut vel) = (p.clone(), v.clone());
    gpu.download_state(&dev, &mut pos, &mut vel).map_err(gpu_err)?;
    let worst = pos
        .iter()
        .zip(&host.pos)
        .flat_map(|(a, b)| (0..3).map(move |k| (a.position()[k] - b.position()[k]).abs()))
        .fold(0.0, f64::max);
    if worst > tolerance || worst.is_nan() {
        return Err(format!("device and host leapfrog differ by {worst:e} after 16 steps").into());
    }
    // A state belongs to the executor that uploaded it: another refuses it, untouched.
    let mut other = CudaExecutor::new().map_err(gpu_err)?;
    if other.leapfrog_step(&mut dev, &params, dt).is_ok() || other.download_state(&dev, &mut pos, &mut vel).is_ok() {
        return Err("another executor used this executor's resident state".into());
    }
    gpu.download_state(&dev, &mut pos, &mut vel).map_err(gpu_err)?;
    if pos.iter().zip(&host.pos).any(|(a, b)| (a.x - b.x).abs() > tolerance) {
        return Err("the refused step changed the state".into());
    }
    Ok(())
}

/// Sources past the pipeline threshold go up in tiles on the copy stream: the result is
/// the oracle's, self terms included in whichever tile holds them.
fn pipelined() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    for (nt, ns) in [(300, 40_000), (1000, 100_001), (2000, 70_000)] {
        check_against_oracle::<f32>(&mut gpu, nt, ns, "pipelined")?;
    }
    check_against_oracle::<f64>(&mut gpu, 700, 65_537, "pipelined")
}

/// The resident leapfrog across two executors on one GPU (and three, unevenly
/// weighted) stays with the host leapfrog, exchange included.
fn multi_leapfrog() -> Result<(), Failed> {
    use nbody_integrators::{Leapfrog, State};
    let (p, v) = nbody_integrators::ics::plummer::<f64>(2000, 4);
    let (dt, eps) = (1.0 / 256.0, 1.0 / 64.0);
    let params = Params::softened(eps);
    let mut host = State::new(p.clone(), v.clone());
    let mut lf = Leapfrog::new(dt, eps).map_err(gpu_err)?;
    for _ in 0..16 {
        lf.step(&mut host, &mut nbody_core::Reference).map_err(gpu_err)?;
    }
    let cases = [
        (&[0u32, 0][..], &[0.5, 0.5][..], false),
        (&[0, 0, 0][..], &[0.2, 0.5, 0.3][..], false),
        (&[0, 0][..], &[0.5, 0.5][..], true),
    ];
    for (devices, weights, staged) in cases {
        let mut gpus = MultiDevice::on_devices(devices).map_err(gpu_err)?.with_weights(weights).map_err(gpu_err)?;
        // The exchange through pinned host memory, as between devices without peer access.
        gpus.force_staged_exchange(staged);
        let mut dev = gpus.upload_state(&p, &v).map_err(gpu_err)?;
        for _ in 0..16 {
            gpus.leapfrog_step(&mut dev, &params, dt).map_err(gpu_err)?;
        }
        let (mut pos, mut vel) = (p.clone(), v.clone());
        gpus.download_state(&dev, &mut pos, &mut vel).map_err(gpu_err)?;
        let worst = pos
            .iter()
            .zip(&host.pos)
            .flat_map(|(a, b)| (0..3).map(move |k| (a.position()[k] - b.position()[k]).abs()))
            .fold(0.0, f64::max);
        if worst > 1e-12 {
            return Err(format!("{devices:?}: multi-device and host leapfrog differ by {worst:e}").into());
        }
        let mut field = vec![Field::zero(); p.len()];
        gpus.download_field(&mut dev, &params, &mut field).map_err(gpu_err)?;
        let truth = exact(&pos, &pos, &params.with_overlap_identical()).map_err(gpu_err)?;
        compare(&field, &vec![Field::zero(); p.len()], &truth, Path::Pairs, true, f64::EPSILON)?;
        let proj = nbody_core::projection::Projection {
            plane: nbody_core::projection::Plane::XY,
            centre: [0.0, 0.0],
            half_width: 2.0,
            pixels: 32,
        };
        let (mut got, mut want) = (vec![0.0; 1024], vec![0.0; 1024]);
        gpus.project_resident(&dev, &proj, &mut got).map_err(gpu_err)?;
        proj.deposit(&pos, &mut want).map_err(gpu_err)?;
        if got.iter().zip(&want).any(|(a, b)| (a - b).abs() > 1e-12 * b.abs().max(1.0)) {
            return Err(format!("{devices:?}: resident density map differs from the deposit").into());
        }
    }
    Ok(())
}

/// A launch that fails on the second device: the error names it, the output keeps its
/// contents, and the next call is right.
fn multi_failure() -> Result<(), Failed> {
    let mut gpus = MultiDevice::on_devices(&[0, 0]).map_err(gpu_err)?;
    let (bodies, _) = nbody_integrators::ics::plummer::<f32>(5000, 9);
    let params = Params::softened(0.01f32).with_overlap_identical();
    let before = vec![Field::new(1.0f32, 2.0, 3.0, 4.0); bodies.len()];
    let mut out = before.clone();
    gpus.fail_next_launch_on(1);
    match gpus.accelerations(&bodies, &bodies, &params, &mut out) {
        Err(e @ Error::OnDevice { ordinal: 0, .. }) if e.to_string().starts_with("device 0:") => {}
        other => return Err(format!("expected an error naming device 0, got {other:?}").into()),
    }
    if out != before {
        return Err("a failed device changed the caller's output".into());
    }
    out.clone_from(&before);
    gpus.accelerations(&bodies, &bodies, &params, &mut out).map_err(gpu_err)?;
    let truth = exact(&bodies, &bodies, &params).map_err(gpu_err)?;
    compare(&out, &before, &truth, Path::Pairs, true, f32::EPSILON as f64).map_err(Failed::from)
}

/// Uneven weights, and fewer targets than devices (empty pieces).
fn multi_uneven() -> Result<(), Failed> {
    let mut gpus =
        MultiDevice::on_devices(&[0, 0, 0]).map_err(gpu_err)?.with_weights(&[1.0, 0.0, 3.0]).map_err(gpu_err)?;
    for (nt, ns) in [(1usize, 5usize), (2, 2), (1001, 1003)] {
        let (all, _) = nbody_integrators::ics::plummer::<f64>(nt.max(ns), 5);
        let params = Params::softened(0.01).with_overlap(nbody_core::Overlap::Shared {
            target_start: 0,
            source_start: 0,
            len: nt.min(ns),
        });
        let mut out = vec![Field::zero(); nt];
        gpus.accelerations(&all[..nt], &all[..ns], &params, &mut out).map_err(gpu_err)?;
        let truth = exact(&all[..nt], &all[..ns], &params).map_err(gpu_err)?;
        compare(&out, &vec![Field::zero(); nt], &truth, Path::Pairs, true, f64::EPSILON)?;
    }
    Ok(())
}

/// Every kernel argument struct as nvcc laid it out (size and each field's offset, from
/// the probe kernel) against the crate's `#[repr(C)]` structs.
fn argument_layouts() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new()?;
    let compared = nbody_cuda::probe_layouts(&mut gpu)?;
    if compared.len() < 15 {
        return Err(format!("only {} structs compared: {compared:?}", compared.len()).into());
    }
    Ok(())
}

/// A resident state's own pull plus two foreign slices' ([`ForeignSources`], the MPI
/// resident ring's step) is the oracle's field of the whole system at the state's
/// particles, on the f32, f64 and mixed (sorted state) executors; the state's sources come
/// down as uploaded (in its own order); a bad foreign slice is refused naming its index,
/// and leaves the field stale.
fn foreign_sources() -> Result<(), Failed> {
    use nbody_core::resident::ForeignSources;
    use nbody_core::{Array, Overlap};
    fn check<T: DeviceReal>(gpu: &mut CudaExecutor, bound: f64, what: &str) -> Result<(), Failed> {
        let (all, vel) = nbody_integrators::ics::plummer::<T>(6000, 13);
        let mine = 2500;
        let params = Params::softened(T::from_f64(0.01));
        let mut s = gpu.upload_state(&all[..mine], &vel[..mine]).map_err(gpu_err)?;
        let mut down = vec![Particle::default(); mine];
        gpu.download_sources(&s, &mut down).map_err(gpu_err)?;
        let key = |p: &Particle<T>| (p.x.to_f64(), p.y.to_f64(), p.z.to_f64(), p.m.to_f64());
        let mut a: Vec<_> = down.iter().map(key).collect();
        let mut b: Vec<_> = all[..mine].iter().map(key).collect();
        a.sort_by(|x, y| x.partial_cmp(y).unwrap());
        b.sort_by(|x, y| x.partial_cmp(y).unwrap());
        if a != b {
            return Err(format!("{what}: the sources came down changed").into());
        }
        gpu.compute_field(&mut s, &params).map_err(gpu_err)?;
        gpu.add_pull(&mut s, &all[mine..4000], &params).map_err(gpu_err)?;
        gpu.add_pull(&mut s, &all[4000..], &params).map_err(gpu_err)?;
        let mut out = vec![Field::zero(); mine];
        gpu.download_field(&mut s, &params, &mut out).map_err(gpu_err)?;
        let truth = exact(
            &all[..mine],
            &all,
            &params.with_overlap(Overlap::Shared { target_start: 0, source_start: 0, len: mine }),
        )
        .map_err(gpu_err)?;
        let mut worst = (0.0f64, 0.0f64);
        for (o, e) in out.iter().zip(&truth) {
            let a = o.acceleration();
            let d = (0..3).map(|k| (a[k].to_f64() - e.acc[k]).powi(2)).sum::<f64>().sqrt();
            worst.0 = nan_max(worst.0, d / e.acc.iter().map(|x| x * x).sum::<f64>().sqrt());
            worst.1 = nan_max(worst.1, (o.phi.to_f64() - e.phi).abs() / e.phi.abs());
        }
        println!("{what}: own pull and two foreign slices, relative errors {:.2e} {:.2e}", worst.0, worst.1);
        if worst.0 > bound || worst.1 > bound {
            return Err(format!("{what}: relative errors {:.2e} {:.2e} over {bound:e}", worst.0, worst.1).into());
        }
        let mut bad = all[mine..mine + 10].to_vec();
        bad[7].m = T::from_f64(f64::NAN);
        match gpu.add_pull(&mut s, &bad, &params) {
            Err(Error::NonFinite { array: Array::Sources, index: 7 }) => {}
            other => return Err(format!("{what}: a NaN source gave {other:?}").into()),
        }
        if <CudaExecutor as Resident<T>>::field_is_current(&s) {
            return Err(format!("{what}: a refused slice left the field current").into());
        }
        if !matches!(gpu.add_pull(&mut s, &all[mine..], &params), Err(Error::InvalidParameter { name: "state", .. })) {
            return Err(format!("{what}: a foreign pull was added to a stale field").into());
        }
        Ok(())
    }
    check::<f32>(&mut CudaExecutor::new().map_err(gpu_err)?, 1e-5, "f32")?;
    check::<f64>(&mut CudaExecutor::new().map_err(gpu_err)?, 1e-12, "f64")?;
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?.into_executor();
    mixed.set_sorted_above(0);
    check::<f64>(&mut mixed, 2e-6, "mixed, sorted state")
}

/// Steps run acceleration-only (`nbody run` asks for the potential only for its
/// diagnostics): a download asking for the potential then computes it, on one device
/// and on two lanes of a multi-device executor, and leaves the held field as the step
/// made it (bit for bit), so a run is the same whatever its diagnostics did.
fn potential_on_download() -> Result<(), Failed> {
    fn check<E: Resident<f32>>(exec: &mut E, what: &str) -> Result<(), Failed> {
        let (p, v) = nbody_integrators::ics::plummer::<f32>(3000, 8);
        let params = Params::softened(0.01f32);
        let mut s = exec.upload_state(&p, &v).map_err(gpu_err)?;
        exec.leapfrog_step(&mut s, &params.acceleration_only(), 1.0 / 256.0).map_err(gpu_err)?;
        let mut plain = vec![Field::new(9.0f32, 9.0, 9.0, 9.0); p.len()];
        exec.download_field(&mut s, &params.acceleration_only(), &mut plain).map_err(gpu_err)?;
        let mut full = plain.clone();
        exec.download_field(&mut s, &params, &mut full).map_err(gpu_err)?;
        let (mut pos, mut vel) = (p.clone(), v.clone());
        exec.download_state(&s, &mut pos, &mut vel).map_err(gpu_err)?;
        let truth = exact(&pos, &pos, &params.with_overlap_identical()).map_err(gpu_err)?;
        let worst = full.iter().zip(&truth).map(|(f, e)| (f.phi as f64 - e.phi).abs() / e.phi.abs()).fold(0.0, nan_max);
        if worst > 1e-5 || plain.iter().any(|f| f.phi != 0.0) {
            return Err(
                format!("{what}: potential error {worst:e}, or a potential in an acceleration-only field").into()
            );
        }
        let close = plain.iter().zip(&full).all(|(a, b)| {
            let (a, b) = (a.acceleration(), b.acceleration());
            let d: f32 = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f32>().sqrt();
            d <= 1e-5 * (0..3).map(|k| a[k] * a[k]).sum::<f32>().sqrt()
        });
        let mut again = vec![Field::zero(); p.len()];
        exec.download_field(&mut s, &params.acceleration_only(), &mut again).map_err(gpu_err)?;
        if !close || again != plain {
            return Err(format!("{what}: the potential's accelerations differ, or the held field changed").into());
        }
        Ok(())
    }
    check(&mut CudaExecutor::new().map_err(gpu_err)?, "one device")?;
    check(&mut MultiDevice::on_devices(&[0, 0]).map_err(gpu_err)?, "two lanes on device 0")
}

/// `Resident::system_sums` on the device (f32 and f64, a mixed executor's sorted
/// state, a tree system) against the host's sums of the same downloaded state and field,
/// to the roundings of the host's order of adding; the same bits on a second call; an
/// acceleration-only held field left as the step made it.
fn system_sums() -> Result<(), Failed> {
    fn check<T: DeviceReal>(
        gpu: &mut CudaExecutor,
        s: &mut nbody_cuda::DeviceState<T>,
        what: &str,
    ) -> Result<(), Failed>
    where
        CudaExecutor: Resident<T, State = nbody_cuda::DeviceState<T>>,
    {
        let params = Params::softened(T::from_f64(0.01));
        let n = s.len();
        let mut before = vec![Field::zero(); n];
        gpu.download_field(s, &params.acceleration_only(), &mut before).map_err(gpu_err)?;
        let sums = gpu.system_sums(s, &params.acceleration_only()).map_err(gpu_err)?;
        let (mut pos, mut vel) = (vec![Particle::zero(); n], vec![nbody_core::Velocity::zero(); n]);
        let mut field = vec![Field::zero(); n];
        gpu.download_state(s, &mut pos, &mut vel).map_err(gpu_err)?;
        gpu.download_field(s, &params, &mut field).map_err(gpu_err)?;
        let host = nbody_core::resident::system_sums(&pos, &vel, &field);
        // The host adds one particle after another (an error up to n roundings of the
        // sums' scale, about 1 here); a particle left out or a wrong term is far above.
        let bound = 2.0 * n as f64 * f64::EPSILON;
        for k in 0..12 {
            // NaN fails too.
            if (sums[k] - host[k]).abs().partial_cmp(&(bound * (host[k].abs() + 1.0))) != Some(std::cmp::Ordering::Less)
            {
                return Err(format!("{what}: sum {k} is {:e} on the device, {:e} on the host", sums[k], host[k]).into());
            }
        }
        // One particle has no potential (its self pair is left out).
        if (n > 1 && host[1] >= 0.0) || host[11] <= 0.0 {
            return Err(format!("{what}: no potential or no mass in the sums {host:?}").into());
        }
        let again = gpu.system_sums(s, &params).map_err(gpu_err)?;
        let mut after = vec![Field::zero(); n];
        gpu.download_field(s, &params.acceleration_only(), &mut after).map_err(gpu_err)?;
        if again != sums || (s.tree().is_none() && after != before) {
            return Err(format!("{what}: a second call differs, or the held field changed").into());
        }
        Ok(())
    }
    fn case<T: DeviceReal>(gpu: &mut CudaExecutor, n: usize, what: &str) -> Result<(), Failed>
    where
        CudaExecutor: Resident<T, State = nbody_cuda::DeviceState<T>>,
    {
        let (p, v) = nbody_integrators::ics::plummer::<T>(n, 3);
        let params = Params::softened(T::from_f64(0.01));
        let mut s = gpu.upload_state(&p, &v).map_err(gpu_err)?;
        gpu.leapfrog_step(&mut s, &params.acceleration_only(), 1.0 / 256.0).map_err(gpu_err)?;
        check(gpu, &mut s, what)
    }
    let mut gpu = CudaExecutor::new().map_err(gpu_err)?;
    for n in [1, 255, 257, 5000, 300_000] {
        case::<f32>(&mut gpu, n, &format!("f32, n = {n}"))?;
        case::<f64>(&mut gpu, n, &format!("f64, n = {n}"))?;
    }
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let sorting = mixed.executor();
    sorting.set_sorted_above(0);
    let (p, v) = nbody_integrators::ics::plummer::<f64>(5000, 5);
    let mut sorted = sorting.upload_state(&p, &v).map_err(gpu_err)?;
    if sorted.order().is_none() {
        return Err("the mixed state was not sorted".into());
    }
    sorting.leapfrog_step(&mut sorted, &Params::softened(0.01).acceleration_only(), 1.0 / 256.0).map_err(gpu_err)?;
    check(sorting, &mut sorted, "mixed, sorted state")?;
    let (p, v) = nbody_integrators::ics::plummer::<f32>(20_000, 4);
    let mut tree = gpu.upload_tree_system(&p, &v, nbody_cuda::TreeSettings::new(0.5)).map_err(gpu_err)?;
    gpu.leapfrog_step(&mut tree, &Params::softened(0.01f32), 1.0 / 256.0).map_err(gpu_err)?;
    check(&mut gpu, &mut tree, "tree system")
}

/// `field_columns_device` (the caller's device arrays read and written in place) against
/// `field_columns` on the same values (the same kernels: bit for bit), f32 and f64, on the
/// particles themselves and at points, with and without the potential; with velocities,
/// the jerk against the host-slice jerk call, a leaf call with cells against the
/// host-slice leaf call and the vector-Jacobian product against the host-slice product
/// (bit for bit); inputs written on another
/// stream are waited for; bad values named as the host names them with the outputs
/// untouched; arrays of another device or of the host refused.
fn device_columns() -> Result<(), Failed> {
    use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer};
    use nbody_core::Array;
    use nbody_core::columns::{ColumnsCall, DeviceColumns};
    fn on_device<V: cust::memory::DeviceCopy>(v: &[V]) -> Result<DeviceBuffer<V>, Failed> {
        DeviceBuffer::from_slice(v).map_err(|e| format!("allocating: {e}").into())
    }
    fn back<V: cust::memory::DeviceCopy + Default + Clone>(b: &DeviceBuffer<V>) -> Result<Vec<V>, Failed> {
        let mut v = vec![V::default(); b.len()];
        b.copy_to(&mut v[..]).map_err(|e| format!("copying back: {e}"))?;
        Ok(v)
    }
    fn case<T: DeviceReal + cust::memory::DeviceCopy + Default>(gpu: &mut CudaExecutor) -> Result<(), Failed> {
        let c = T::from_f64;
        let (ps, _) = nbody_integrators::ics::plummer::<T>(5000, 7);
        let rows: Vec<T> = ps.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
        let m: Vec<T> = ps.iter().map(|p| p.m).collect();
        let points: Vec<T> = (0..300).flat_map(|k| [c(k as f64 * 0.01 - 1.5), c(0.3), c(-0.2)]).collect();
        let (d_rows, d_m, d_points) = (on_device(&rows)?, on_device(&m)?, on_device(&points)?);
        let addr = |b: &DeviceBuffer<T>| b.as_device_ptr().as_raw();
        // A stream of the caller's, on which the inputs are (re)written before the call.
        let theirs = cust::stream::Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None)
            .map_err(|e| format!("creating a stream: {e}"))?;
        for at_points in [false, true] {
            for potential in [false, true] {
                let params = Params::softened(c(0.01));
                let nt = if at_points { 300 } else { 5000 };
                let (mut acc, mut phi) = (vec![[c(7.0); 3]; nt], vec![c(7.0); nt]);
                let host_rows: &[[T; 3]] = bytemuck::cast_slice(&rows);
                let host_points: &[[T; 3]] = bytemuck::cast_slice(&points);
                let call = ColumnsCall { positions: host_rows, masses: &m, targets: at_points.then_some(host_points) };
                gpu.field_columns(call, &params, &mut acc, potential.then_some(&mut phi[..])).map_err(gpu_err)?;
                let (d_acc, d_phi) = (on_device(&vec![c(7.0); 3 * nt])?, on_device(&vec![c(7.0); nt])?);
                // The sources rewritten on the caller's stream just before the call.
                let mut d_src = on_device(&vec![T::zero(); rows.len()])?;
                // SAFETY: `rows` outlives the copy (the call below waits for it, and the
                // stream is synchronised before `rows` can go).
                unsafe { d_src.async_copy_from(&rows[..], &theirs) }.map_err(|e| format!("async copy: {e}"))?;
                let call = DeviceColumns {
                    device: 0,
                    positions: addr(&d_src),
                    masses: addr(&d_m),
                    n: 5000,
                    targets: at_points.then(|| (addr(&d_points), 300)),
                    acc: addr(&d_acc),
                    phi: potential.then(|| addr(&d_phi)),
                    velocities: None,
                    jerk: None,
                    streams: [Some(theirs.as_inner() as usize as u64), None, None, None],
                };
                // SAFETY: every address is a live buffer of this device of the sizes named.
                unsafe { Executor::<T>::field_columns_device(gpu, call, &params) }.map_err(gpu_err)?;
                theirs.synchronize().map_err(|e| format!("{e}"))?;
                let (got_acc, got_phi) = (back(&d_acc)?, back(&d_phi)?);
                let want_acc: Vec<T> = acc.iter().flatten().copied().collect();
                if got_acc != want_acc || got_phi != phi {
                    return Err(format!(
                        "{} points {at_points} potential {potential}: the device arrays differ from the host columns",
                        T::NAME
                    )
                    .into());
                }
            }
        }
        // A leaf call (groups of 64 targets of the first 4,000 against every particle and
        // 50 far cells; the last 1,000 named by no pair) against the host-slice call.
        {
            use nbody_core::{InteractionList, LeafList, Pair, Span, cell::Cell};
            let cells: Vec<Cell<T>> = (0..50)
                .map(|k| {
                    let a = k as f64 * 2.399963;
                    let q = [1e-3, 2e-4, -1e-4, -4e-4, 3e-4, -6e-4].map(|x| c(x * (1 + k % 5) as f64));
                    Cell::new(c(30.0 * a.cos()), c(30.0 * a.sin()), c((k % 11) as f64 - 5.0), c(1e-3), q)
                })
                .collect();
            let spans = [Span::new(0, 5000)];
            let pairs: Vec<Pair> = (0..4000u32)
                .step_by(64)
                .map(|t| Pair { targets: Span::new(t, (t + 64).min(4000)), sources: Span::new(0, 1) })
                .collect();
            let (cell_spans, ranges) = ([Span::new(0, 50)], vec![Span::new(0, 1); pairs.len()]);
            let list = LeafList {
                particles: InteractionList { pairs: &pairs, source_spans: &spans },
                cells: &ranges,
                cell_spans: &cell_spans,
            };
            for potential in [false, true] {
                let params = Params { potential, ..Params::softened(c(0.01)) };
                let mut out = vec![Field::zero(); 5000];
                gpu.accelerations_batch_cells(&ps, &cells, &list, &params, &mut out).map_err(gpu_err)?;
                let (d_acc, d_phi) = (on_device(&[c(7.0); 3 * 5000])?, on_device(&[c(7.0); 5000])?);
                let call = DeviceColumns {
                    phi: potential.then(|| addr(&d_phi)),
                    ..DeviceColumns::on_itself(0, addr(&d_rows), addr(&d_m), 5000, addr(&d_acc))
                };
                // SAFETY: every address is a live buffer of this device of the sizes named.
                unsafe { Executor::<T>::accelerations_batch_cells_device(gpu, call, &cells, &list, &params) }
                    .map_err(gpu_err)?;
                let want_acc: Vec<T> = out.iter().flat_map(|f| [f.ax, f.ay, f.az]).collect();
                let want_phi: Vec<T> = out.iter().map(|f| if potential { f.phi } else { c(7.0) }).collect();
                if back(&d_acc)? != want_acc || back(&d_phi)? != want_phi {
                    return Err(format!(
                        "{} potential {potential}: the device leaf call differs from the host's",
                        T::NAME
                    )
                    .into());
                }
            }
            // A span past the particles is refused on the host, outputs untouched.
            let far = [Span::new(0, 5001)];
            let bad = LeafList { particles: InteractionList { pairs: &pairs, source_spans: &far }, ..list };
            let d_acc = on_device(&[c(7.0); 3 * 5000])?;
            let call = DeviceColumns::on_itself(0, addr(&d_rows), addr(&d_m), 5000, addr(&d_acc));
            // SAFETY: as above (refused before anything is read).
            if unsafe {
                Executor::<T>::accelerations_batch_cells_device(gpu, call, &cells, &bad, &Params::softened(c(0.01)))
            }
            .is_ok()
                || back(&d_acc)?.iter().any(|&x| x != c(7.0))
            {
                return Err(format!("{}: a span past the particles was not refused cleanly", T::NAME).into());
            }
        }
        // The product of the particles on themselves, against the host-slice batched
        // product of the system on itself (the same pair kernels), with and without
        // potential cotangents; a NaN cotangent named, outputs untouched.
        {
            use nbody_core::columns::DeviceVjp;
            let cot_acc: Vec<T> = (0..3 * 5000).map(|k| c(((k * 4909) % 1000) as f64 * 2e-3 - 1.0)).collect();
            let cot_phi: Vec<T> = (0..5000).map(|k| c(((k * 7) % 13) as f64 * 0.1 - 0.6)).collect();
            let (d_ca, d_cp) = (on_device(&cot_acc)?, on_device(&cot_phi)?);
            for with_phi in [false, true] {
                let mut params = Params::softened(c(0.01)).with_overlap_identical();
                params.potential = with_phi;
                let cot: Vec<Field<T>> = cot_acc
                    .chunks_exact(3)
                    .zip(&cot_phi)
                    .map(|(a, &p)| Field::new(a[0], a[1], a[2], if with_phi { p } else { T::zero() }))
                    .collect();
                let mut whole = vec![Particle::zero(); 5000];
                let pairs = [nbody_core::Pair {
                    targets: nbody_core::Span::new(0, 5000),
                    sources: nbody_core::Span::new(0, 1),
                }];
                let spans = [nbody_core::Span::new(0, 5000)];
                let list = nbody_core::InteractionList { pairs: &pairs, source_spans: &spans };
                gpu.vjp_batch(&ps, &list, &params, &cot, &mut whole).map_err(gpu_err)?;
                let (d_gp, d_gm) = (on_device(&[c(7.0); 3 * 5000])?, on_device(&[c(7.0); 5000])?);
                let call = DeviceVjp {
                    device: 0,
                    positions: addr(&d_rows),
                    masses: addr(&d_m),
                    n: 5000,
                    cot_acc: addr(&d_ca),
                    cot_phi: with_phi.then(|| addr(&d_cp)),
                    grad_positions: addr(&d_gp),
                    grad_masses: addr(&d_gm),
                    streams: [None; 4],
                };
                // SAFETY: every address is a live buffer of this device of the sizes named.
                unsafe { Executor::<T>::vjp_device(gpu, call, &Params::softened(c(0.01))) }.map_err(gpu_err)?;
                let want_p: Vec<T> = whole.iter().flat_map(|g| [g.x, g.y, g.z]).collect();
                let want_m: Vec<T> = whole.iter().map(|g| g.m).collect();
                if back(&d_gp)? != want_p || back(&d_gm)? != want_m {
                    return Err(format!(
                        "{} potential {with_phi}: the device product differs from the host's",
                        T::NAME
                    )
                    .into());
                }
            }
            let mut bad = cot_acc.clone();
            bad[3 * 42 + 1] = T::nan();
            let (d_bad, d_gp) = (on_device(&bad)?, on_device(&[c(7.0); 3 * 5000])?);
            let d_gm = on_device(&[c(7.0); 5000])?;
            let call = DeviceVjp {
                device: 0,
                positions: addr(&d_rows),
                masses: addr(&d_m),
                n: 5000,
                cot_acc: addr(&d_bad),
                cot_phi: None,
                grad_positions: addr(&d_gp),
                grad_masses: addr(&d_gm),
                streams: [None; 4],
            };
            // SAFETY: as above (refused before anything is written).
            match unsafe { Executor::<T>::vjp_device(gpu, call, &Params::softened(c(0.01))) } {
                Err(Error::NonFinite { array: Array::Cotangents, index: 42 }) => {}
                other => return Err(format!("{}: expected the NaN cotangent at 42, got {other:?}", T::NAME).into()),
            }
            if back(&d_gp)?.iter().chain(&back(&d_gm)?).any(|&x| x != c(7.0)) {
                return Err(format!("{}: a refused product wrote its outputs", T::NAME).into());
            }
        }
        // The jerk: velocities in, jerks out, against the host-slice jerk call.
        let vel: Vec<T> = (0..3 * 5000).map(|k| c(((k * 7919) % 1000) as f64 * 1e-3 - 0.5)).collect();
        let d_vel = on_device(&vel)?;
        for n in [1usize, 100, 5000] {
            for potential in [false, true] {
                let mut params = Params::softened(c(0.01)).with_overlap_identical();
                params.potential = potential;
                let vels: Vec<nbody_core::Velocity<T>> =
                    vel.chunks_exact(3).take(n).map(|v| nbody_core::Velocity::new(v[0], v[1], v[2])).collect();
                let b = nbody_core::Bodies { pos: &ps[..n], vel: &vels };
                let (mut out, mut jerk) = (vec![Field::zero(); n], vec![Jerk::zero(); n]);
                gpu.accelerations_jerk(b, b, &params, &mut out, &mut jerk).map_err(gpu_err)?;
                let (d_acc, d_phi, d_jerk) =
                    (on_device(&vec![c(7.0); 3 * n])?, on_device(&vec![c(7.0); n])?, on_device(&vec![c(7.0); 3 * n])?);
                let call = DeviceColumns {
                    phi: potential.then(|| addr(&d_phi)),
                    velocities: Some(addr(&d_vel)),
                    jerk: Some(addr(&d_jerk)),
                    ..DeviceColumns::on_itself(0, addr(&d_rows), addr(&d_m), n, addr(&d_acc))
                };
                // SAFETY: every address is a live buffer of this device holding at least
                // the values named.
                unsafe { Executor::<T>::field_columns_device(gpu, call, &Params::softened(c(0.01))) }
                    .map_err(gpu_err)?;
                let want_acc: Vec<T> = out.iter().flat_map(|f| [f.ax, f.ay, f.az]).collect();
                let want_jerk: Vec<T> = jerk.iter().flat_map(|j| [j.jx, j.jy, j.jz]).collect();
                let want_phi: Vec<T> = out.iter().map(|f| if potential { f.phi } else { c(7.0) }).collect();
                if back(&d_acc)? != want_acc || back(&d_jerk)? != want_jerk || back(&d_phi)? != want_phi {
                    return Err(format!(
                        "{} n {n} potential {potential}: the device jerk differs from the host-slice jerk",
                        T::NAME
                    )
                    .into());
                }
            }
        }
        let mut bad_vel = vel.clone();
        bad_vel[3 * 9 + 2] = T::nan();
        let (d_bad_vel, d_jerk) = (on_device(&bad_vel)?, on_device(&[c(7.0); 3 * 5000])?);
        let d_out = on_device(&[c(7.0); 3 * 5000])?;
        let call = DeviceColumns {
            velocities: Some(addr(&d_bad_vel)),
            jerk: Some(addr(&d_jerk)),
            ..DeviceColumns::on_itself(0, addr(&d_rows), addr(&d_m), 5000, addr(&d_out))
        };
        // SAFETY: as above (refused before anything is written).
        match unsafe { Executor::<T>::field_columns_device(gpu, call, &Params::softened(c(0.01))) } {
            Err(Error::NonFinite { array: Array::Velocities, index: 9 }) => {}
            other => return Err(format!("{}: expected the NaN velocity at 9, got {other:?}", T::NAME).into()),
        }
        if back(&d_jerk)?.iter().any(|&x| x != c(7.0)) {
            return Err(format!("{}: a refused jerk call wrote its outputs", T::NAME).into());
        }
        // Bad values: named, outputs untouched.
        let params = Params::softened(c(0.01));
        let d_acc = on_device(&[c(7.0); 3 * 5000])?;
        let untouched = |what: &str| -> Result<(), Failed> {
            if back(&d_acc)?.iter().any(|&x| x != c(7.0)) {
                return Err(format!("{} {what}: a refused call wrote its outputs", T::NAME).into());
            }
            Ok(())
        };
        // (rows, masses, points, the error named)
        type Case<T> = (Vec<T>, Vec<T>, Option<Vec<T>>, Error);
        let mut cases: Vec<Case<T>> = Vec::new();
        let mut bad = rows.clone();
        bad[3 * 700 + 1] = T::infinity();
        cases.push((bad.clone(), m.clone(), None, Error::NonFinite { array: Array::Particles, index: 700 }));
        let mut far = rows.clone();
        far[3 * 12] = c(if T::NAME == "f32" { 1e30 } else { 1e300 });
        cases.push((far, m.clone(), None, Error::OutOfRange { array: Array::Particles, index: 12 }));
        let mut negative = m.clone();
        negative[400] = c(-1.0);
        cases.push((bad, negative.clone(), None, Error::NegativeMass { array: Array::Particles, index: 400 }));
        let mut point = points.clone();
        point[3 * 5 + 2] = T::nan();
        cases.push((rows.clone(), negative, Some(point), Error::NonFinite { array: Array::Targets, index: 5 }));
        for (r, mm, t, want) in cases {
            let (dr, dm) = (on_device(&r)?, on_device(&mm)?);
            let dt = t.as_deref().map(on_device).transpose()?;
            let call = DeviceColumns {
                targets: dt.as_ref().map(|b| (addr(b), 300)),
                ..DeviceColumns::on_itself(0, addr(&dr), addr(&dm), 5000, addr(&d_acc))
            };
            // SAFETY: as above.
            match unsafe { Executor::<T>::field_columns_device(gpu, call, &params) } {
                Err(e) if e == want => {}
                other => return Err(format!("{}: expected {want}, got {other:?}", T::NAME).into()),
            }
            untouched(&want.to_string())?;
        }
        // Another device's ordinal, and host memory, refused.
        let good = DeviceColumns::on_itself(0, addr(&d_rows), addr(&d_m), 5000, addr(&d_acc));
        let host = [c(0.0); 3 * 5000];
        for call in [DeviceColumns { device: 1, ..good }, DeviceColumns { positions: host.as_ptr() as u64, ..good }] {
            // SAFETY: both are refused before anything is read.
            match unsafe { Executor::<T>::field_columns_device(gpu, call, &params) } {
                Err(Error::InvalidParameter { .. }) => {}
                other => return Err(format!("{}: expected a refusal, got {other:?}", T::NAME).into()),
            }
            untouched("another device")?;
        }
        // No sources: the points' fields are zero.
        let call = DeviceColumns { n: 0, targets: Some((addr(&d_points), 300)), ..good };
        // SAFETY: the points and the first 300 rows of the output are live.
        unsafe { Executor::<T>::field_columns_device(gpu, call, &params) }.map_err(gpu_err)?;
        if back(&d_acc)?[..900].iter().any(|&x| x != T::zero()) {
            return Err(format!("{}: no sources should give zero fields", T::NAME).into());
        }
        Ok(())
    }
    case::<f32>(&mut CudaExecutor::new().map_err(gpu_err)?)?;
    case::<f64>(&mut CudaExecutor::new().map_err(gpu_err)?)?;
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let call = DeviceColumns::on_itself(0, 0, 0, 0, 0);
    // SAFETY: refused before anything is read.
    match unsafe { Executor::<f64>::field_columns_device(&mut mixed, call, &Params::softened(0.1)) } {
        Err(Error::Unsupported { .. }) => Ok(()),
        other => Err(format!("the mixed executor: expected Unsupported, got {other:?}").into()),
    }
}

/// `field_columns` (rows and a column packed and unpacked on the device) against the
/// oracle: f32 and f64, Plummer with and without softening and the spline, with and
/// without the potential, on the particles themselves and at other points, sizes from
/// one to 20,000 (the oracle's cost bounds the largest); bad values named as the host
/// names them with the outputs untouched; the mixed kernels refuse.
fn columns() -> Result<(), Failed> {
    use nbody_core::columns::ColumnsCall;
    use nbody_core::{Array, Softening};
    fn case<T: DeviceReal>(gpu: &mut CudaExecutor, u: f64) -> Result<(), Failed> {
        let (all, _) = nbody_integrators::ics::plummer::<T>(20_000, 5);
        let c = T::from_f64;
        for n in [1usize, 100, 5000, 20_000] {
            let ps = &all[..n];
            let rows: Vec<[T; 3]> = ps.iter().map(|p| [p.x, p.y, p.z]).collect();
            let m: Vec<T> = ps.iter().map(|p| p.m).collect();
            // 300 points on a line through the system, massless as targets.
            let points: Vec<Particle<T>> =
                (0..300).map(|k| Particle::new(c(k as f64 * 0.01 - 1.5), c(0.3), c(-0.2), T::zero())).collect();
            let point_rows: Vec<[T; 3]> = points.iter().map(|p| [p.x, p.y, p.z]).collect();
            for (soft, eps) in [(Softening::Plummer, 0.0), (Softening::Plummer, 0.01), (Softening::Spline, 0.05)] {
                for potential in [false, true] {
                    for at_points in [false, true] {
                        let params = Params::softened(c(eps)).with_softening(soft);
                        let (targets, t_rows) =
                            if at_points { (&points[..], Some(&point_rows[..])) } else { (ps, None) };
                        let nt = targets.len();
                        let (mut acc, mut phi) = (vec![[c(7.0); 3]; nt], vec![c(7.0); nt]);
                        let call = ColumnsCall { positions: &rows, masses: &m, targets: t_rows };
                        gpu.field_columns(call, &params, &mut acc, potential.then_some(&mut phi[..]))
                            .map_err(gpu_err)?;
                        if !potential && phi.iter().any(|&p| p != c(7.0)) {
                            return Err(
                                format!("{} n {n}: the potential was written though not asked for", T::NAME).into()
                            );
                        }
                        let mut truth_params = if at_points { params } else { params.with_overlap_identical() };
                        truth_params.potential = potential;
                        let truth = exact(targets, ps, &truth_params).map_err(gpu_err)?;
                        let got: Vec<Field<T>> = acc
                            .iter()
                            .zip(&phi)
                            .map(|(a, &p)| Field::new(a[0], a[1], a[2], if potential { p } else { T::zero() }))
                            .collect();
                        let before = vec![Field::zero(); nt];
                        compare(&got, &before, &truth, Path::Pairs, potential, u).map_err(|e| {
                            format!(
                                "{} n {n}, {soft:?} eps {eps}, potential {potential}, points {at_points}: {e}",
                                T::NAME
                            )
                        })?;
                    }
                }
            }
        }
        // Bad values: named as the host names them, nothing written.
        let rows = vec![[c(0.5); 3]; 1000];
        let mut m = vec![c(1e-3); 1000];
        let params = Params::softened(c(0.01));
        let mut bad_rows = rows.clone();
        bad_rows[700][1] = T::infinity();
        m[400] = c(-1.0);
        m[900] = T::nan();
        let point = [[c(0.0), T::nan(), c(0.0)]];
        type Rows<'a, T> = &'a [[T; 3]];
        let cases: [(Rows<T>, Option<Rows<T>>, Error); 3] = [
            (&rows, None, Error::NegativeMass { array: Array::Particles, index: 400 }),
            (&bad_rows, None, Error::NegativeMass { array: Array::Particles, index: 400 }),
            (&rows, Some(&point), Error::NonFinite { array: Array::Targets, index: 0 }),
        ];
        for (positions, targets, want) in cases {
            let nt = targets.map_or(positions.len(), <[_]>::len);
            let (mut acc, mut phi) = (vec![[c(7.0); 3]; nt], vec![c(7.0); nt]);
            let call = ColumnsCall { positions, masses: &m, targets };
            match gpu.field_columns(call, &params, &mut acc, Some(&mut phi)) {
                Err(e) if e == want => {}
                other => return Err(format!("{}: expected {want}, got {other:?}", T::NAME).into()),
            }
            if acc.iter().flatten().chain(&phi).any(|&x| x != c(7.0)) {
                return Err(format!("{}: a refused call wrote its outputs", T::NAME).into());
            }
        }
        m[400] = c(1e-3);
        let call = ColumnsCall { positions: &bad_rows, masses: &m, targets: None };
        match gpu.field_columns(call, &params, &mut [[c(0.0); 3]; 1000], None) {
            Err(Error::NonFinite { array: Array::Particles, index: 700 }) => {}
            other => return Err(format!("{}: expected the infinity at 700, got {other:?}", T::NAME).into()),
        }
        // No target: nothing to compute, the sources still checked.
        m[3] = c(-1.0);
        let call = ColumnsCall { positions: &rows, masses: &m, targets: Some(&[]) };
        match gpu.field_columns(call, &params, &mut [], None) {
            Err(Error::NegativeMass { array: Array::Particles, index: 3 }) => {}
            other => {
                return Err(format!("{}: no targets, expected the mass at 3 refused, got {other:?}", T::NAME).into());
            }
        }
        m[3] = c(1e-3);
        // The executor still works after refusing.
        let call = ColumnsCall { positions: &rows, masses: &m[..999], targets: None };
        if gpu.field_columns(call, &params, &mut [[c(0.0); 3]; 1000], None).is_ok() {
            return Err("999 masses for 1000 rows were accepted".into());
        }
        Ok(())
    }
    case::<f32>(&mut CudaExecutor::new().map_err(gpu_err)?, f32::EPSILON as f64)?;
    case::<f64>(&mut CudaExecutor::new().map_err(gpu_err)?, f64::EPSILON)?;
    let mut mixed = CudaMixedExecutor::new().map_err(gpu_err)?;
    let (rows, m) = (vec![[0.0f64; 3]; 4], vec![1.0f64; 4]);
    let call = ColumnsCall { positions: &rows, masses: &m, targets: None };
    match mixed.field_columns(call, &Params::softened(0.1), &mut [[0.0; 3]; 4], None) {
        Err(Error::Unsupported { .. }) => Ok(()),
        other => Err(format!("the mixed executor: expected Unsupported, got {other:?}").into()),
    }
}
