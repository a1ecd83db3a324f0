//! The entry points the C examples do not reach, called as C would call them: jerk and
//! density maps against the library's own results, and the refusals of each.

use nbody_c::*;
use nbody_core::projection::{Plane, Projection};
use nbody_core::{Bodies, Executor, Field, Jerk, Params, PerParticle, Reference, Velocity};

fn cpu() -> *mut NbodyExecutor {
    let mut e = std::ptr::null_mut();
    // SAFETY: `e` is a valid slot for the handle.
    assert_eq!(unsafe { nbody_open(c"cpu".as_ptr(), &mut e) }, NbodyStatus::Ok);
    e
}

/// G = 1, softening `eps` (Plummer), the potential summed, targets and sources as
/// `overlap` says.
fn plummer(eps: f64, overlap: NbodyOverlap) -> NbodyParams {
    NbodyParams {
        g: 1.0,
        eps,
        potential: 1,
        overlap: overlap as i32,
        target_start: 0,
        source_start: 0,
        shared_len: 0,
        softening: NbodySoftening::Plummer as i32,
    }
}

/// Whether every field is within 1e-10 of the reference's (acceleration relative to
/// max(|a|, 1), potential relative).
fn close_to(got: &[Field<f64>], want: &[Field<f64>]) -> bool {
    got.iter().zip(want).all(|(a, b)| {
        (a.ax - b.ax).abs() <= 1e-10 * b.ax.abs().max(1.0) && (a.phi - b.phi).abs() <= 1e-10 * b.phi.abs()
    })
}

/// A refused call: `call` returns `status` (or any failure when `None`), the last error
/// names `what`, and `out` is left as it was.
fn refused<O: Clone + PartialEq + std::fmt::Debug>(
    out: &mut O,
    status: Option<NbodyStatus>,
    what: &str,
    call: impl FnOnce(&mut O) -> NbodyStatus,
) {
    let before = out.clone();
    let got = call(out);
    match status {
        Some(s) => assert_eq!(got, s),
        None => assert_ne!(got, NbodyStatus::Ok),
    }
    assert!(last_error().contains(what), "{}", last_error());
    assert_eq!(*out, before);
}

fn last_error() -> String {
    // SAFETY: nbody_last_error returns a valid NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(nbody_last_error()) }.to_string_lossy().into_owned()
}

#[test]
fn jerk_matches_the_reference() {
    let (pos, vel) = nbody_integrators_free_plummer(300);
    let e = cpu();
    let params = plummer(0.01, NbodyOverlap::Identical);
    let (mut out, mut jerk) = (vec![Field::<f64>::zero(); 300], vec![Jerk::<f64>::zero(); 300]);
    let p = pos.as_ptr().cast::<f64>();
    // `target_vel` is the targets' velocity pointer.
    let call = |target_vel: *const f64, out: &mut [Field<f64>], jerk: &mut [Jerk<f64>]| {
        let v = vel.as_ptr().cast::<f64>();
        // SAFETY: every array holds 300 aligned records, or the pointer is null (refused).
        unsafe {
            nbody_jerk_f64(e, p, target_vel, 300, p, v, 300, &params, out.as_mut_ptr().cast(), jerk.as_mut_ptr().cast())
        }
    };
    let s = call(vel.as_ptr().cast(), &mut out, &mut jerk);
    assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
    let (mut want, mut want_j) = (vec![Field::zero(); 300], vec![Jerk::zero(); 300]);
    let b = Bodies { pos: &pos, vel: &vel };
    Reference
        .accelerations_jerk(b, b, &Params::softened(0.01).with_overlap_identical(), &mut want, &mut want_j)
        .unwrap();
    for i in 0..300 {
        for k in 0..3 {
            assert!((out[i].acceleration()[k] - want[i].acceleration()[k]).abs() < 1e-11);
            assert!((jerk[i].components()[k] - want_j[i].components()[k]).abs() < 1e-10);
        }
    }
    // A NULL velocity array with particles is refused by name.
    let s = call(std::ptr::null(), &mut out, &mut jerk);
    assert_eq!(s, NbodyStatus::NullPointer);
    assert!(last_error().contains("target_vel"));
    // SAFETY: the handle came from nbody_cpu_new.
    unsafe { nbody_executor_free(e) };
}

#[test]
fn density_map_matches_the_deposit() {
    let (pos, _) = nbody_integrators_free_plummer(1000);
    let e = cpu();
    let window = NbodyProjection { plane: 1, centre_h: 0.0, centre_v: 0.0, half_width: 2.0, pixels: 32 };
    let mut grid = vec![0.0; 32 * 32];
    // SAFETY: 1000 aligned records and a grid of 32² doubles.
    let s = unsafe { nbody_project_f64(e, pos.as_ptr().cast(), 1000, &window, grid.as_mut_ptr(), grid.len()) };
    assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
    let mut want = vec![0.0; 32 * 32];
    Projection { plane: Plane::XZ, centre: [0.0, 0.0], half_width: 2.0, pixels: 32 }.deposit(&pos, &mut want).unwrap();
    assert!(grid.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12));
    let bad = NbodyProjection { plane: 5, ..window };
    // SAFETY: as above.
    let s = unsafe { nbody_project_f64(e, pos.as_ptr().cast(), 1000, &bad, grid.as_mut_ptr(), grid.len()) };
    assert_eq!(s, NbodyStatus::BadParameter);
    // SAFETY: as above, with a grid length that does not match the pixels.
    let s = unsafe { nbody_project_f64(e, pos.as_ptr().cast(), 1000, &window, grid.as_mut_ptr(), 10) };
    assert_ne!(s, NbodyStatus::Ok);
    // SAFETY: the handle came from nbody_cpu_new.
    unsafe { nbody_executor_free(e) };
}

/// Last errors are per thread: a failure on one thread leaves another's message alone.
#[test]
fn last_error_is_per_thread() {
    let e = cpu() as usize;
    std::thread::spawn(move || {
        // SAFETY: a null params pointer is the error under test; the handle is valid.
        let s = unsafe {
            nbody_accelerations_f64(
                e as *mut NbodyExecutor,
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(s, NbodyStatus::NullPointer);
        assert!(last_error().contains("params"));
    })
    .join()
    .unwrap();
    assert_eq!(last_error(), "");
    // SAFETY: the handle came from nbody_cpu_new.
    unsafe { nbody_executor_free(e as *mut NbodyExecutor) };
}

/// A deterministic Plummer-like cloud without pulling the integrators crate.
fn nbody_integrators_free_plummer(n: usize) -> (Vec<nbody_core::Particle<f64>>, Vec<Velocity<f64>>) {
    let u = |k: u64| (k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    let pos = (0..n as u64)
        .map(|i| {
            nbody_core::Particle::new(
                2.0 * u(7 * i) - 1.0,
                2.0 * u(7 * i + 1) - 1.0,
                2.0 * u(7 * i + 2) - 1.0,
                1.0 / n as f64,
            )
        })
        .collect();
    let vel =
        (0..n as u64).map(|i| Velocity::new(u(7 * i + 3) - 0.5, u(7 * i + 4) - 0.5, u(7 * i + 5) - 0.5)).collect();
    (pos, vel)
}

/// The SoA entry points: plain arrays in, fields added into plain arrays; the same
/// results as the record entry point, bad values named by index, `phi` optional only
/// without the potential.
#[test]
fn soa_arrays_match_the_records() {
    let (pos, _) = nbody_integrators_free_plummer(257);
    let n = pos.len();
    let lane = |k: usize| -> Vec<f64> { pos.iter().map(|p| [p.x, p.y, p.z, p.m][k]).collect() };
    let (x, y, z, m) = (lane(0), lane(1), lane(2), lane(3));
    let e = cpu();
    let params = |potential: i32| NbodyParams { potential, ..plummer(0.01, NbodyOverlap::Identical) };
    let mut want = vec![Field::<f64>::zero(); n];
    // SAFETY: 257 aligned records in and out.
    let s = unsafe {
        nbody_accelerations_f64(
            e,
            pos.as_ptr().cast(),
            n,
            pos.as_ptr().cast(),
            n,
            &params(1),
            want.as_mut_ptr().cast(),
            n,
        )
    };
    assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
    let (mut ax, mut ay, mut az, mut phi) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let call = |x: &[f64], p: &NbodyParams, ax: &mut [f64], ay: &mut [f64], az: &mut [f64], phi: *mut f64| {
        // SAFETY: every array holds n values; the outputs are distinct.
        unsafe {
            nbody_accelerations_soa_f64(
                e,
                n,
                x.as_ptr(),
                y.as_ptr(),
                z.as_ptr(),
                m.as_ptr(),
                n,
                x.as_ptr(),
                y.as_ptr(),
                z.as_ptr(),
                m.as_ptr(),
                p,
                ax.as_mut_ptr(),
                ay.as_mut_ptr(),
                az.as_mut_ptr(),
                phi,
            )
        }
    };
    // Twice: the second call adds into what the first wrote (x + x is exact).
    for times in [1.0, 2.0] {
        let s = call(&x, &params(1), &mut ax, &mut ay, &mut az, phi.as_mut_ptr());
        assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
        for i in 0..n {
            let w = want[i];
            assert_eq!([ax[i], ay[i], az[i], phi[i]], [w.ax, w.ay, w.az, w.phi].map(|v| times * v), "particle {i}");
        }
    }
    // Without the potential, phi may be null; with it, a null phi is refused.
    let (mut bx, mut by, mut bz) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    assert_eq!(call(&x, &params(0), &mut bx, &mut by, &mut bz, std::ptr::null_mut()), NbodyStatus::Ok);
    assert_eq!(bx[7], want[7].ax);
    assert_eq!(call(&x, &params(1), &mut bx, &mut by, &mut bz, std::ptr::null_mut()), NbodyStatus::NullPointer);
    assert!(last_error().contains("phi"), "{}", last_error());
    // A NaN is named by its index; the outputs are left as they were.
    let mut bad = x.clone();
    bad[200] = f64::NAN;
    let before = bx.clone();
    assert_eq!(call(&bad, &params(0), &mut bx, &mut by, &mut bz, std::ptr::null_mut()), NbodyStatus::BadInput);
    assert!(last_error().contains("targets[200]"), "{}", last_error());
    assert_eq!(bx, before);
    // SAFETY: the handle came from nbody_cpu_new.
    unsafe { nbody_executor_free(e) };
}

/// `NbodyParams::softening` selects the spline: the C call gives what the reference
/// executor gives with `Softening::Spline`, and an unknown kernel is a named error that
/// writes nothing.
#[test]
fn spline_softening_through_the_c_abi() {
    let (pos, _) = nbody_integrators_free_plummer(300);
    let n = pos.len();
    let e = cpu();
    let mut params = NbodyParams { softening: NbodySoftening::Spline as i32, ..plummer(0.05, NbodyOverlap::Identical) };
    let mut out = vec![Field::<f64>::zero(); n];
    // SAFETY: n aligned records in and out.
    let call = |p: &NbodyParams, out: &mut [Field<f64>]| unsafe {
        nbody_accelerations_f64(e, pos.as_ptr().cast(), n, pos.as_ptr().cast(), n, p, out.as_mut_ptr().cast(), n)
    };
    assert_eq!(call(&params, &mut out), NbodyStatus::Ok, "{}", last_error());
    let spline = Params::softened(0.05).with_overlap_identical().with_softening(nbody_core::Softening::Spline);
    let mut want = vec![Field::<f64>::zero(); n];
    Reference.accelerations(&pos, &pos, &spline, &mut want).unwrap();
    assert!(close_to(&out, &want));
    params.softening = 7;
    refused(&mut out, Some(NbodyStatus::BadParameter), "params.softening 7", |o| call(&params, o));
}

/// `nbody_batch_cells_f64`: a leaf list with particle spans and quadrupole cells gives
/// what the reference executor's `accelerations_batch_cells` gives; a cell span past the
/// cells is a named error.
#[test]
fn batch_cells_through_the_c_abi() {
    use nbody_core::cell::Cell;
    use nbody_core::{InteractionList, LeafList, Pair, Span};
    let (pos, _) = nbody_integrators_free_plummer(256);
    let n = pos.len() as u32;
    let cells: Vec<Cell<f64>> = pos.chunks(16).map(Cell::from_particles).collect();
    // Group k (32 particles) feels its own particles and every cell of the other half.
    let pairs: Vec<Pair> =
        (0..8).map(|k| Pair { targets: Span::new(32 * k, 32 * k + 32), sources: Span::new(k, k + 1) }).collect();
    let spans: Vec<Span> = (0..8).map(|k| Span::new(32 * k, 32 * k + 32)).collect();
    let ranges: Vec<Span> = (0..8).map(|k| if k < 4 { Span::new(1, 2) } else { Span::new(0, 1) }).collect();
    let cell_spans = [Span::new(0, 8), Span::new(8, 16)];
    let params = plummer(0.01, NbodyOverlap::Disjoint);
    let e = cpu();
    let call = |c: &NbodyCells, out: &mut [Field<f64>]| {
        // SAFETY: every pointer holds its count of aligned records; out is distinct.
        unsafe {
            nbody_batch_cells_f64(
                e,
                pos.as_ptr().cast(),
                n as usize,
                pairs.as_ptr().cast(),
                pairs.len(),
                spans.as_ptr().cast(),
                spans.len(),
                c,
                &params,
                out.as_mut_ptr().cast(),
            )
        }
    };
    let mut c = NbodyCells {
        cells: cells.as_ptr().cast(),
        n_cells: cells.len(),
        ranges: ranges.as_ptr().cast(),
        spans: cell_spans.as_ptr().cast(),
        n_spans: cell_spans.len(),
    };
    let mut out = vec![Field::<f64>::zero(); pos.len()];
    assert_eq!(call(&c, &mut out), NbodyStatus::Ok, "{}", last_error());
    let list = LeafList {
        particles: InteractionList { pairs: &pairs, source_spans: &spans },
        cells: &ranges,
        cell_spans: &cell_spans,
    };
    let mut want = vec![Field::<f64>::zero(); pos.len()];
    Reference.accelerations_batch_cells(&pos, &cells, &list, &Params::softened(0.01), &mut want).unwrap();
    assert!(close_to(&out, &want));
    let past = [Span::new(0, 8), Span::new(8, 17)];
    c.spans = past.as_ptr().cast();
    refused(&mut out, None, "cell span", |o| call(&c, o));
}

/// `nbody_accelerations_per_particle_f64` and `nbody_batch_per_particle_f64`: two species
/// give what the reference executor gives with the same lengths, and a negative length
/// is a named error that writes nothing.
#[test]
fn per_particle_softening_through_the_c_abi() {
    let (pos, _) = nbody_integrators_free_plummer(300);
    let n = pos.len();
    let eps: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { 0.1 } else { 0.01 }).collect();
    let e = cpu();
    let params = plummer(0.0, NbodyOverlap::Identical);
    let mut out = vec![Field::<f64>::zero(); n];
    // SAFETY: n aligned records and n lengths in, n records out.
    let call = |lengths: &[f64], out: &mut [Field<f64>]| unsafe {
        let (p, l) = (pos.as_ptr().cast(), lengths.as_ptr());
        nbody_accelerations_per_particle_f64(e, p, l, n, p, l, n, &params, out.as_mut_ptr().cast(), n)
    };
    assert_eq!(call(&eps, &mut out), NbodyStatus::Ok, "{}", last_error());
    let rust = Params::softened(0.0).with_overlap_identical();
    let mut want = vec![Field::<f64>::zero(); n];
    Reference
        .accelerations_per_particle(&pos, &pos, PerParticle { targets: &eps, sources: &eps }, &rust, &mut want)
        .unwrap();
    assert!(close_to(&out, &want));
    // Batched: every particle against all of them, as one pair.
    let pairs = [NbodyPair { targets: NbodySpan { start: 0, end: n as u32 }, sources: NbodySpan { start: 0, end: 1 } }];
    let spans = [NbodySpan { start: 0, end: n as u32 }];
    let mut batched = vec![Field::<f64>::zero(); n];
    // SAFETY: n records and lengths, one pair, one span, n records out.
    let status = unsafe {
        nbody_batch_per_particle_f64(
            e,
            pos.as_ptr().cast(),
            eps.as_ptr(),
            n,
            pairs.as_ptr(),
            1,
            spans.as_ptr(),
            1,
            &params,
            batched.as_mut_ptr().cast(),
        )
    };
    assert_eq!(status, NbodyStatus::Ok, "{}", last_error());
    assert!(close_to(&batched, &want));
    let mut bad = eps.clone();
    bad[5] = -1.0;
    refused(&mut out, Some(NbodyStatus::BadInput), "target softening lengths[5] is a negative softening length", |o| {
        call(&bad, o)
    });
}

/// A tree force through the C ABI: at a tiny theta it is direct summation; at theta 0.6
/// it is within the expansion's error of it, and the relative criterion with a previous
/// field too; a null tree, a bad theta or alpha are refused and nothing is written.
#[test]
fn tree_forces_through_the_c_abi() {
    let (pos, _) = nbody_integrators_free_plummer(3000);
    let n = pos.len();
    let e = cpu();
    let params = plummer(0.01, NbodyOverlap::Disjoint);
    let mut direct = vec![Field::<f64>::zero(); n];
    Reference.accelerations(&pos, &pos, &Params::softened(0.01).with_overlap_identical(), &mut direct).unwrap();
    // SAFETY: n records in and out; previous null or n records.
    let call = |tree: &NbodyTree, previous: Option<&[Field<f64>]>, out: &mut [Field<f64>]| unsafe {
        let prev = previous.map_or(std::ptr::null(), |p| p.as_ptr().cast());
        nbody_tree_forces_f64(e, pos.as_ptr().cast(), n, tree, prev, &params, out.as_mut_ptr().cast())
    };
    // The 99th percentile of the relative acceleration error (the worst is a particle
    // whose net force nearly cancels).
    let worst = |got: &[Field<f64>]| {
        let mut e: Vec<f64> = got
            .iter()
            .zip(&direct)
            .map(|(a, b)| {
                let d = [a.ax - b.ax, a.ay - b.ay, a.az - b.az];
                (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / (b.ax * b.ax + b.ay * b.ay + b.az * b.az).sqrt()
            })
            .collect();
        e.sort_by(f64::total_cmp);
        e[e.len() * 99 / 100]
    };
    let mut exact = vec![Field::<f64>::zero(); n];
    assert_eq!(call(&NbodyTree { theta: 1e-6, alpha: 0.0 }, None, &mut exact), NbodyStatus::Ok, "{}", last_error());
    assert!(worst(&exact) < 1e-12, "nothing accepted: {:e}", worst(&exact));
    let mut tree = vec![Field::<f64>::zero(); n];
    assert_eq!(call(&NbodyTree { theta: 0.6, alpha: 0.0 }, None, &mut tree), NbodyStatus::Ok, "{}", last_error());
    let geometric = worst(&tree);
    assert!(geometric > 1e-12 && geometric < 5e-2, "theta 0.6: 99th percentile {geometric:e}");
    let mut relative = vec![Field::<f64>::zero(); n];
    let status = call(&NbodyTree { theta: 0.6, alpha: 0.001 }, Some(&tree), &mut relative);
    assert_eq!(status, NbodyStatus::Ok, "{}", last_error());
    assert!(worst(&relative) < geometric, "alpha 0.001: 99th percentile {:e}", worst(&relative));
    // The same as the library's own tree on the same executor.
    let (bh, rust_params) = (nbody::tree::BarnesHut::for_cpu(0.6), Params::softened(0.01));
    let mut cpu_exec = "cpu".parse::<nbody_backends::Backend>().unwrap().open_for::<f64>().unwrap();
    let (mut want, mut want_relative) = (vec![Field::<f64>::zero(); n], vec![Field::<f64>::zero(); n]);
    bh.forces(&pos, &rust_params, &mut cpu_exec, &mut want).unwrap();
    let rel = bh.with_criterion(nbody_core::cell::Criterion::Relative { alpha: 0.001 });
    rel.forces_after(&pos, &tree, &rust_params, &mut cpu_exec, &mut want_relative).unwrap();
    let same = |a: &[Field<f64>], b: &[Field<f64>]| {
        a.iter().zip(b).all(|(x, y)| (x.ax - y.ax).abs() <= 1e-12 * y.ax.abs().max(1e-3))
    };
    assert!(same(&tree, &want) && same(&relative, &want_relative), "the C ABI's tree differs from nbody::tree's");
    let mut untouched = vec![Field::<f64>::zero(); n];
    for (tree, what) in
        [(NbodyTree { theta: -1.0, alpha: 0.0 }, "theta"), (NbodyTree { theta: 0.5, alpha: -1.0 }, "alpha")]
    {
        assert_eq!(call(&tree, Some(&exact), &mut untouched), NbodyStatus::BadParameter, "{what}");
        assert!(last_error().contains(what), "{}", last_error());
    }
    // SAFETY: a null tree is refused before anything is read.
    let status = unsafe {
        nbody_tree_forces_f64(
            e,
            pos.as_ptr().cast(),
            n,
            std::ptr::null(),
            std::ptr::null(),
            &params,
            untouched.as_mut_ptr().cast(),
        )
    };
    assert_ne!(status, NbodyStatus::Ok);
    assert!(untouched.iter().all(|f| *f == Field::zero()), "a refused call wrote");
    // SAFETY: a handle from nbody_open.
    unsafe { nbody_executor_free(e) };
}

/// A tree run saved halfway and loaded on a fresh executor ends where the run that went on
/// ends, bit for bit (f32 and f64, Plummer and the spline, with the relative criterion);
/// a damaged, cut or foreign file is `File` naming it, and the executor is freed.
#[test]
fn tree_runs_save_and_load_bit_for_bit() {
    fn case<T: nbody_core::Real + bytemuck::Pod>(
        make: unsafe extern "C" fn(
            *mut NbodyExecutor,
            *const T,
            *const T,
            usize,
            *const NbodyTree,
            f64,
            i32,
            f64,
            *mut *mut NbodyTreeRun,
        ) -> NbodyStatus,
        state: unsafe extern "C" fn(*mut NbodyTreeRun, *mut T, *mut T, usize) -> NbodyStatus,
        (softening, alpha): (i32, f64),
        dir: &std::path::Path,
    ) {
        use nbody_core::Particle;
        // The library's own records: 16-byte (float) or 32-byte (double) aligned.
        let (pos, vel) = nbody_integrators_free_plummer(400);
        let of = T::from_f64;
        let ps: Vec<Particle<T>> = pos.iter().map(|p| Particle::new(of(p.x), of(p.y), of(p.z), of(p.m))).collect();
        let vs: Vec<Velocity<T>> = vel.iter().map(|v| Velocity::new(of(v.vx), of(v.vy), of(v.vz))).collect();
        let tree = NbodyTree { theta: 0.6, alpha };
        let mut run = std::ptr::null_mut();
        let (p, v) = (ps.as_ptr().cast::<T>(), vs.as_ptr().cast::<T>());
        // SAFETY: 400 aligned records each; the handles are used as the header says.
        unsafe {
            assert_eq!(make(cpu(), p, v, 400, &tree, 0.02, softening, 1.0 / 64.0, &mut run), NbodyStatus::Ok);
            assert_eq!(nbody_tree_run_evolve(run, 0.25), NbodyStatus::Ok, "{}", last_error());
            let path = dir.join(format!("run-{}-{softening}-{alpha}.tree", std::mem::size_of::<T>()));
            let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            assert_eq!(nbody_tree_run_save(run, c.as_ptr()), NbodyStatus::Ok);
            let mut again = std::ptr::null_mut();
            assert_eq!(nbody_tree_run_load(cpu(), c.as_ptr(), &mut again), NbodyStatus::Ok, "{}", last_error());
            for r in [run, again] {
                assert_eq!(nbody_tree_run_evolve(r, 0.5), NbodyStatus::Ok);
            }
            let read = |r| {
                let (mut a, mut b) = (ps.clone(), vs.clone());
                assert_eq!(state(r, a.as_mut_ptr().cast(), b.as_mut_ptr().cast(), 400), NbodyStatus::Ok);
                (bytemuck::cast_slice::<_, u8>(&a).to_vec(), bytemuck::cast_slice::<_, u8>(&b).to_vec())
            };
            assert_eq!(read(run), read(again));
            let (mut t, mut s) = ((0.0, 0.0), (0u64, 0u64));
            assert_eq!(nbody_tree_run_time(run, &mut t.0, &mut s.0), NbodyStatus::Ok);
            assert_eq!(nbody_tree_run_time(again, &mut t.1, &mut s.1), NbodyStatus::Ok);
            assert_eq!((t.0, s.0), (t.1, s.1));
            nbody_tree_run_free(run);
            nbody_tree_run_free(again);
            // One flipped byte, a cut file, another file: refused, naming the file.
            let bytes = std::fs::read(&path).unwrap();
            let mut flipped = bytes.clone();
            flipped[200] ^= 1;
            for (what, data) in
                [("checksum", flipped), ("start or size", bytes[..100].to_vec()), ("start", b"hello".to_vec())]
            {
                std::fs::write(&path, data).unwrap();
                let mut none = std::ptr::null_mut();
                assert_eq!(nbody_tree_run_load(cpu(), c.as_ptr(), &mut none), NbodyStatus::File, "{what}");
                assert!(none.is_null() && last_error().contains(path.to_str().unwrap()), "{}", last_error());
            }
            std::fs::remove_file(&path).unwrap();
            let mut none = std::ptr::null_mut();
            assert_eq!(nbody_tree_run_load(cpu(), c.as_ptr(), &mut none), NbodyStatus::File);
            assert!(last_error().contains("reading the run"), "{}", last_error());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for how in [(0, 0.0), (1, 0.0), (0, 0.002)] {
        case::<f32>(nbody_tree_run_new_f32, nbody_tree_run_state_f32, how, dir.path());
        case::<f64>(nbody_tree_run_new_f64, nbody_tree_run_state_f64, how, dir.path());
    }
    // A null path is refused (the executor is freed).
    let mut none = std::ptr::null_mut();
    // SAFETY: a null path is the case under test.
    assert_eq!(unsafe { nbody_tree_run_load(cpu(), std::ptr::null(), &mut none) }, NbodyStatus::NullPointer);
}

/// f64 records, 32-byte aligned as the f64 entry points require.
#[repr(C, align(32))]
#[derive(Clone, Copy)]
struct Rec([f64; 4]);

#[test]
fn tree_runs_refuse_bad_state_at_creation_on_the_cpu() {
    let ps = [Rec([-0.5, 0.0, 0.0, 0.5]), Rec([0.5, 0.0, 0.0, 0.5])];
    let tree = NbodyTree { theta: 0.5, alpha: 0.0 };
    let good_v = [Rec([0.0, -0.5, 0.0, 0.0]), Rec([0.0, 0.5, 0.0, 0.0])];
    let mut nan_v = good_v;
    nan_v[1].0[2] = f64::NAN;
    let mut neg_m = ps;
    neg_m[0].0[3] = -1.0;
    for (what, p, v) in [("a NaN velocity", &ps, &nan_v), ("a negative mass", &neg_m, &good_v)] {
        let mut run = std::ptr::null_mut();
        // SAFETY: two aligned records each; the run takes (and frees) the executor.
        let s = unsafe {
            nbody_tree_run_new_f64(cpu(), p[0].0.as_ptr(), v[0].0.as_ptr(), 2, &tree, 0.01, 0, 1.0 / 64.0, &mut run)
        };
        assert_eq!(s, NbodyStatus::BadInput, "{what}: {}", last_error());
        assert!(run.is_null(), "{what}: a run was made");
        assert!(last_error().contains(if what.contains("velocity") { "velocities[1]" } else { "particles[0]" }));
    }
}

#[test]
fn tree_forces_refuse_a_previous_field_that_is_not_finite_and_positive() {
    let (pos, _) = nbody_integrators_free_plummer(200);
    let recs: Vec<Rec> = pos.iter().map(|p| Rec([p.x, p.y, p.z, p.m])).collect();
    let e = cpu();
    let tree = NbodyTree { theta: 0.5, alpha: 0.002 };
    let params = plummer(0.01, NbodyOverlap::Identical);
    let good: Vec<Rec> = (0..200).map(|i| Rec([1.0 + i as f64, 0.0, 0.0, 0.0])).collect();
    for (bad, want) in
        [(f64::NAN, NbodyStatus::BadInput), (f64::INFINITY, NbodyStatus::BadInput), (0.0, NbodyStatus::BadParameter)]
    {
        let mut prev = good.clone();
        prev[7].0 = [bad, 0.0, 0.0, 0.0];
        let mut out = vec![Rec([0.0; 4]); 200];
        // SAFETY: 200 aligned records behind each pointer.
        let s = unsafe {
            nbody_tree_forces_f64(e, recs[0].0.as_ptr(), 200, &tree, prev[0].0.as_ptr(), &params, out[0].0.as_mut_ptr())
        };
        assert_eq!(s, want, "previous[7] = {bad}: {}", last_error());
        assert!(last_error().contains("previous field"), "{}", last_error());
        assert!(out.iter().all(|r| r.0 == [0.0; 4]), "previous[7] = {bad}: the output was written");
    }
    // SAFETY: a handle from nbody_open, freed once.
    unsafe { nbody_executor_free(e) };
}

#[test]
fn tidal_and_vjp_match_the_reference() {
    use nbody_core::{Particle, Tidal};
    let n = 200;
    let (pos, vel) = nbody_integrators_free_plummer(n);
    let e = cpu();
    let params = plummer(0.01, NbodyOverlap::Identical);
    let rust = Params::softened(0.01).with_overlap_identical();
    let p = pos.as_ptr().cast::<f64>();
    let (mut out, mut tidal) = (vec![Field::<f64>::zero(); n], vec![Tidal::<f64>::zero(); n]);
    // SAFETY: every array holds n aligned records (tidal: n six-lane records).
    let s = unsafe { nbody_tidal_f64(e, p, n, p, n, &params, out.as_mut_ptr().cast(), tidal.as_mut_ptr().cast()) };
    assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
    let (mut want, mut want_t) = (vec![Field::zero(); n], vec![Tidal::zero(); n]);
    Reference.accelerations_tidal(&pos, &pos, &rust, &mut want, &mut want_t).unwrap();
    assert!(close_to(&out, &want));
    for (a, b) in tidal.iter().zip(&want_t) {
        for (x, y) in a.lanes().iter().zip(b.lanes()) {
            assert!((x - y).abs() <= 1e-10 * y.abs().max(1.0), "{x} against {y}");
        }
    }
    // The product, with cotangents from the velocities and on the potential.
    let cot: Vec<Field<f64>> = vel.iter().map(|v| Field::new(v.vx, v.vy, v.vz, 0.5)).collect();
    let (mut gt, mut gs) = (vec![Particle::<f64>::zero(); n], vec![Particle::<f64>::zero(); n]);
    let call = |cot: &[Field<f64>], gt: &mut [Particle<f64>], gs: &mut [Particle<f64>]| {
        // SAFETY: every array holds n aligned records.
        unsafe {
            nbody_vjp_f64(e, p, n, p, n, &params, cot.as_ptr().cast(), gt.as_mut_ptr().cast(), gs.as_mut_ptr().cast())
        }
    };
    assert_eq!(call(&cot, &mut gt, &mut gs), NbodyStatus::Ok, "{}", last_error());
    let (mut wt, mut ws) = (vec![Particle::zero(); n], vec![Particle::zero(); n]);
    Reference.vjp(&pos, &pos, &rust, &cot, &mut wt, &mut ws).unwrap();
    let lanes = |q: &Particle<f64>| [q.x, q.y, q.z, q.m];
    for (a, b) in gt.iter().zip(&wt).chain(gs.iter().zip(&ws)) {
        for (x, y) in lanes(a).iter().zip(lanes(b)) {
            assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{x} against {y}");
        }
    }
    // A NaN cotangent is refused by index, and nothing is written.
    let mut bad = cot.clone();
    bad[7].ay = f64::NAN;
    let before = (gt.clone(), gs.clone());
    assert_ne!(call(&bad, &mut gt, &mut gs), NbodyStatus::Ok);
    assert!(last_error().contains("cotangents[7]"), "{}", last_error());
    assert_eq!((gt, gs), before);
    // SAFETY: the handle came from nbody_open.
    unsafe { nbody_executor_free(e) };
}

#[test]
fn batched_vjp_matches_the_reference() {
    use nbody_core::{InteractionList, Pair, Particle, Span};
    let n = 64;
    let (pos, vel) = nbody_integrators_free_plummer(n);
    let e = cpu();
    let params = plummer(0.02, NbodyOverlap::Disjoint);
    // Two leaves of 32, each against itself and the other.
    let span = |start, end| NbodySpan { start, end };
    let pairs = [
        NbodyPair { targets: span(0, 32), sources: span(0, 2) },
        NbodyPair { targets: span(32, 64), sources: span(0, 2) },
    ];
    let spans = [span(0, 32), span(32, 64)];
    let cot: Vec<Field<f64>> = vel.iter().map(|v| Field::new(v.vx, v.vy, v.vz, 0.25)).collect();
    let mut g = vec![Particle::<f64>::zero(); n];
    // SAFETY: every array holds its count of aligned records.
    let s = unsafe {
        nbody_vjp_batch_f64(
            e,
            pos.as_ptr().cast(),
            n,
            pairs.as_ptr(),
            2,
            spans.as_ptr(),
            2,
            &params,
            cot.as_ptr().cast(),
            g.as_mut_ptr().cast(),
        )
    };
    assert_eq!(s, NbodyStatus::Ok, "{}", last_error());
    let rp = [
        Pair { targets: Span::new(0, 32), sources: Span::new(0, 2) },
        Pair { targets: Span::new(32, 64), sources: Span::new(0, 2) },
    ];
    let rs = [Span::new(0, 32), Span::new(32, 64)];
    let mut want = vec![Particle::zero(); n];
    let list = InteractionList { pairs: &rp, source_spans: &rs };
    Reference.vjp_batch(&pos, &list, &Params::softened(0.02), &cot, &mut want).unwrap();
    for (a, b) in g.iter().zip(&want) {
        for (x, y) in [a.x, a.y, a.z, a.m].iter().zip([b.x, b.y, b.z, b.m]) {
            assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{x} against {y}");
        }
    }
    // SAFETY: the handle came from nbody_open.
    unsafe { nbody_executor_free(e) };
}
