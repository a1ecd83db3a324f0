//! NBODY6++GPU's irregular-force library against a double loop written from upstream's
//! irr.avx.cpp, called as NBODY6++ calls it (intgrt.F): every particle set at its own
//! last correction time, every list set, then blocks of particles due at a later time,
//! some particles corrected and re-listed between blocks. The library is one state per
//! process, so the tests take turns.

use nbody_c::irr::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;

static TURN: Mutex<()> = Mutex::new(());

/// A particle as NBODY6++ holds it: x, v, F = a/2, FDOT = j/6, mass, time of correction.
#[derive(Clone, Copy)]
struct Body {
    x: [f64; 3],
    v: [f64; 3],
    f: [f64; 3],
    fdot: [f64; 3],
    m: f64,
    t: f64,
}

fn gauss(r: &mut ChaCha8Rng) -> f64 {
    let (a, b): (f64, f64) = (r.r#gen::<f64>().max(1e-300), r.r#gen());
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// A Plummer-like cluster with tight pairs, unequal masses and block times in [0, 1/16).
fn cluster(n: usize, seed: u64) -> Vec<Body> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let mut b: Vec<Body> = Vec::with_capacity(n);
    for k in 0..n {
        let radius = 1.0 / (r.r#gen::<f64>().max(1e-3).powf(-2.0 / 3.0) - 1.0).sqrt();
        let d = [gauss(&mut r), gauss(&mut r), gauss(&mut r)];
        let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let mut x = d.map(|c| 0.6 * radius * c / norm);
        if k % 37 == 1 {
            let p = b[k - 1].x; // a tight companion
            x = std::array::from_fn(|c| p[c] + 1e-4 * gauss(&mut r));
        }
        b.push(Body {
            x,
            v: std::array::from_fn(|_| 0.4 * gauss(&mut r)),
            f: std::array::from_fn(|_| 0.5 * gauss(&mut r)),
            fdot: std::array::from_fn(|_| 2.0 * gauss(&mut r)),
            m: (0.2 + r.r#gen::<f64>()) / n as f64,
            t: (r.r#gen_range(0..16) as f64) / 256.0,
        });
    }
    b
}

/// Upstream's predictor in f64.
fn predict(b: &Body, t: f64) -> ([f64; 3], [f64; 3]) {
    let s = t - b.t;
    (
        std::array::from_fn(|k| b.x[k] + s * (b.v[k] + s * (b.f[k] + s * b.fdot[k]))),
        std::array::from_fn(|k| b.v[k] + 2.0 * s * (b.f[k] + 1.5 * s * b.fdot[k])),
    )
}

/// The double loop: acc, jerk, the sum of the terms' sizes per component (the scale of
/// the rounding allowed), the smallest term's size (what leaving a source out would
/// change) and the nearest neighbour (from 1).
struct Expected {
    acc: [f64; 3],
    jerk: [f64; 3],
    scale: [f64; 3],
    jerk_scale: [f64; 3],
    smallest: f64,
    nearest: i32,
}

fn expected(bodies: &[Body], i: usize, list: &[usize], t: f64) -> Expected {
    let (xi, vi) = predict(&bodies[i], t);
    let mut e = Expected {
        acc: [0.0; 3],
        jerk: [0.0; 3],
        scale: [0.0; 3],
        jerk_scale: [0.0; 3],
        smallest: f64::INFINITY,
        nearest: 0,
    };
    let mut best = f64::INFINITY;
    for &j in list {
        let (xj, vj) = predict(&bodies[j], t);
        let dx: [f64; 3] = std::array::from_fn(|k| xj[k] - xi[k]);
        let dv: [f64; 3] = std::array::from_fn(|k| vj[k] - vi[k]);
        let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        let rv = dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2];
        let w = bodies[j].m / (r2 * r2.sqrt());
        // A difference of two predicted positions (velocities) is uncertain by a few
        // roundings of their size, whichever way it is formed: relative to a close
        // pair's separation that is more than the pair's own rounding.
        let size = |a: [f64; 3]| a.iter().map(|c| c.abs()).fold(0.0, f64::max);
        let near = 1.0 + 4.0 * (size(xi) + size(xj)) / r2.sqrt();
        let slow = near + 4.0 * (size(vi) + size(vj)) / size(dv).max(1e-300);
        for k in 0..3 {
            e.acc[k] += w * dx[k];
            e.jerk[k] += w * (dv[k] - 3.0 * rv / r2 * dx[k]);
            e.scale[k] += (w * dx[k]).abs() * near;
            e.jerk_scale[k] += ((w * dv[k]).abs() + (3.0 * w * rv / r2 * dx[k]).abs()) * slow;
        }
        e.smallest = e.smallest.min(w * r2.sqrt());
        if r2 < best || (r2 == best && (j as i32 + 1) < e.nearest) {
            best = r2;
            e.nearest = j as i32 + 1;
        }
    }
    e
}

/// The neighbours of every particle: those within `h` (as NBODY6++'s lists are, at
/// 30 to 200), from 0, in index order.
fn lists(bodies: &[Body], h: f64) -> Vec<Vec<usize>> {
    (0..bodies.len())
        .map(|i| {
            (0..bodies.len())
                .filter(|&j| {
                    let d: f64 = (0..3).map(|k| (bodies[j].x[k] - bodies[i].x[k]).powi(2)).sum();
                    j != i && d < h * h
                })
                .collect()
        })
        .collect()
}

fn set(a: usize, b: &Body) -> i32 {
    // SAFETY: the arrays hold what the call reads and writes.
    unsafe { nbody_irr_set_jp(a as i32 + 1, b.x.as_ptr(), b.v.as_ptr(), b.f.as_ptr(), b.fdot.as_ptr(), b.m, b.t) }
}

fn set_list(a: usize, list: &[usize]) -> i32 {
    let raw: Vec<i32> = std::iter::once(list.len() as i32).chain(list.iter().map(|&j| j as i32 + 1)).collect();
    // SAFETY: the arrays hold what the call reads and writes.
    unsafe { nbody_irr_set_list(a as i32 + 1, raw.as_ptr()) }
}

type Outputs = (Vec<[f64; 3]>, Vec<[f64; 3]>, Vec<i32>);

fn firr(t: f64, targets: &[usize]) -> (i32, Outputs) {
    let addr: Vec<i32> = targets.iter().map(|&a| a as i32 + 1).collect();
    let n = targets.len();
    let (mut acc, mut jrk, mut nn) = (vec![[7.0; 3]; n], vec![[7.0; 3]; n], vec![-7; n]);
    let s =
        // SAFETY: the arrays hold what the call reads and writes.
        unsafe { nbody_irr_firr_vec(t, n as i32, addr.as_ptr(), acc.as_mut_ptr(), jrk.as_mut_ptr(), nn.as_mut_ptr()) };
    (s, (acc, jrk, nn))
}

fn open(n: usize, lmax: usize, threads: &str) {
    // SAFETY: the tests take turns, and nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("NBODY_IRR_THREADS", threads) }
    assert_eq!(nbody_irr_open(n as i32, lmax as i32, 0), 0);
}

/// NBODY6++'s pattern: everything set, then blocks of due particles at later times, with
/// the block's particles corrected (moved to the block time) and re-listed after each.
/// Returns every block's outputs.
fn nbody6pp_pattern(threads: &str, tolerance: f64) -> Vec<Outputs> {
    let n = 1500;
    let mut bodies = cluster(n, 11);
    let mut nb = lists(&bodies, 0.25);
    let longest = nb.iter().map(Vec::len).max().unwrap();
    assert!(longest > 40 && nb.iter().any(Vec::is_empty), "lists from 0 to {longest} neighbours");
    open(n, longest + 1, threads);
    for (a, b) in bodies.iter().enumerate() {
        assert_eq!(set(a, b), 0);
        assert_eq!(set_list(a, &nb[a]), 0);
    }
    let mut r = ChaCha8Rng::seed_from_u64(5);
    let mut all = vec![];
    for block in 0..6 {
        let t = 1.0 / 16.0 + block as f64 / 128.0;
        let size = [1, 7, 64, 300, 1024, n][block];
        let mut targets: Vec<usize> = (0..n).collect();
        for k in 0..size {
            let pick = r.r#gen_range(k..n);
            targets.swap(k, pick);
        }
        targets.truncate(size);
        let (s, out) = firr(t, &targets);
        assert_eq!(s, 0);
        let mut dropped = 0;
        for (k, &i) in targets.iter().enumerate() {
            let e = expected(&bodies, i, &nb[i], t);
            for c in 0..3 {
                assert!(
                    (out.0[k][c] - e.acc[c]).abs() <= tolerance * e.scale[c],
                    "particle {i} acc[{c}] {} against {}",
                    out.0[k][c],
                    e.acc[c]
                );
                assert!(
                    (out.1[k][c] - e.jerk[c]).abs() <= tolerance * e.jerk_scale[c],
                    "particle {i} jrk[{c}] {} against {}",
                    out.1[k][c],
                    e.jerk[c]
                );
            }
            assert_eq!(out.2[k], e.nearest, "particle {i}'s nearest neighbour");
            // The tolerance is tight enough that a list short of its faintest source fails.
            let allowed = tolerance * e.scale.iter().map(|s| s * s).sum::<f64>().sqrt();
            if e.smallest.is_finite() {
                assert!(
                    e.smallest > 3.0 * allowed,
                    "particle {i}: a dropped source ({}) would pass ({allowed})",
                    e.smallest
                );
                dropped += 1;
            }
        }
        assert!(dropped > 0 || size < 8);
        // The block's particles are corrected to t (new F, FDOT) and re-listed.
        for &i in &targets {
            let (x, v) = predict(&bodies[i], t);
            let b = &mut bodies[i];
            (b.x, b.v, b.t) = (x, v, t);
            b.f = b.f.map(|f| 0.9 * f);
            assert_eq!(set(i, &bodies[i]), 0);
        }
        if block == 2 {
            nb = lists(&bodies, 0.2);
            for (a, l) in nb.iter().enumerate() {
                assert_eq!(set_list(a, l), 0);
            }
        }
        all.push(out);
    }
    assert_eq!(nbody_irr_close(0), 0);
    all
}

#[test]
fn nbody6pp_calls_match_upstreams_irregular_force_in_f64() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    nbody6pp_pattern("2", 1e-14);
}

#[test]
fn the_threads_change_no_bit() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let one = nbody6pp_pattern("1", 1e-14);
    let three = nbody6pp_pattern("3", 1e-14);
    assert!(one == three);
}

#[test]
fn an_empty_list_gives_zero_and_no_neighbour() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    open(4, 8, "1");
    let bodies = cluster(4, 2);
    (0..4).for_each(|a| assert_eq!(set(a, &bodies[a]), 0));
    // Particle 2 listed by nobody, listing nobody; equal distances pick the lower index.
    let (s, (acc, jrk, nn)) = firr(0.1, &[2]);
    assert_eq!((s, acc[0], jrk[0], nn[0]), (0, [0.0; 3], [0.0; 3], 0));
    let mut twin = bodies[0];
    twin.x = [1.0, 0.0, 0.0];
    let mut other = twin;
    other.x = [-1.0, 0.0, 0.0];
    let mut centre = twin;
    centre.x = [0.0; 3];
    for (a, b) in [(1, twin), (3, other), (2, centre)] {
        assert_eq!(set(a, &b), 0);
    }
    assert_eq!(set_list(2, &[3, 1]), 0);
    let t = twin.t;
    let (s, (acc, _, nn)) = firr(t, &[2]);
    assert_eq!((s, nn[0]), (0, 2));
    assert!(acc[0].iter().all(|a| a.abs() < 1e-15 * twin.m));
    assert_eq!(nbody_irr_close(0), 0);
}

#[test]
fn bad_calls_are_errors_with_the_outputs_untouched() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let bodies = cluster(6, 3);
    // Before open.
    assert_ne!(firr(0.0, &[1]).0, 0);
    assert_ne!(set(0, &bodies[0]), 0);
    open(6, 4, "2");
    for (a, b) in bodies.iter().enumerate().take(5) {
        assert_eq!(set(a, b), 0); // particle 6 is never set
    }
    let untouched = (vec![[7.0; 3]], vec![[7.0; 3]], vec![-7]);
    let refused = |targets: &[usize], t: f64| {
        let (s, out) = firr(t, targets);
        assert_ne!(s, 0);
        assert!(out == untouched);
    };
    // Lists: too long, out of range, itself.
    assert_ne!(set_list(0, &[1, 2, 3, 4]), 0);
    assert_ne!(set_list(0, &[1, 6]), 0);
    // SAFETY: the arrays hold what the call reads and writes.
    assert_ne!(unsafe { nbody_irr_set_list(1, [1, 0].as_ptr()) }, 0);
    // SAFETY: the arrays hold what the call reads and writes.
    assert_ne!(unsafe { nbody_irr_set_list(1, [-1].as_ptr()) }, 0);
    assert_ne!(set_list(0, &[0]), 0);
    assert_ne!(set_list(6, &[1]), 0);
    // A refused list keeps the one before.
    assert_eq!(set_list(0, &[1, 2]), 0);
    assert_ne!(set_list(0, &[3, 9]), 0);
    let (s, (_, _, nn)) = firr(bodies[0].t.max(bodies[1].t).max(bodies[2].t), &[0]);
    assert_eq!(s, 0);
    assert!(nn[0] == 2 || nn[0] == 3);
    // Particles: out of range, NaN, a negative mass.
    let mut bad = bodies[0];
    bad.x[1] = f64::NAN;
    assert_ne!(set(0, &bad), 0);
    bad = bodies[0];
    bad.m = -1.0;
    assert_ne!(set(0, &bad), 0);
    assert_ne!(
        // SAFETY: the arrays hold what the call reads and writes.
        unsafe { nbody_irr_set_jp(0, bad.x.as_ptr(), bad.v.as_ptr(), bad.f.as_ptr(), bad.fdot.as_ptr(), 1.0, 0.0) },
        0
    );
    // Calls: an address out of range, a NaN time, a neighbour never set, a target never
    // set, a neighbour at zero distance.
    refused(&[6], 0.1);
    refused(&[0], f64::NAN);
    assert_eq!(set_list(1, &[5]), 0);
    refused(&[1], 0.1);
    refused(&[5], 0.1);
    let mut twin = bodies[3];
    twin.x = bodies[2].x;
    twin.v = bodies[2].v;
    twin.f = bodies[2].f;
    twin.fdot = bodies[2].fdot;
    twin.t = bodies[2].t;
    assert_eq!(set(3, &twin), 0);
    assert_eq!(set_list(2, &[3]), 0);
    refused(&[2], 0.1);
    let addr = [1];
    assert_ne!(
        // SAFETY: a negative count reads and writes nothing.
        unsafe {
            nbody_irr_firr_vec(0.1, -1, addr.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
        },
        0
    );
    // SAFETY: the last error is a NUL-terminated string the library keeps.
    let message = unsafe { std::ffi::CStr::from_ptr(nbody_c::nbody_last_error()) };
    assert!(message.to_string_lossy().contains("ni = -1"), "{message:?}");
    assert_eq!(nbody_irr_close(0), 0);
    // NBODY_IRR_THREADS is checked.
    // SAFETY: the tests take turns, and nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("NBODY_IRR_THREADS", "0") };
    assert_ne!(nbody_irr_open(6, 4, 0), 0);
}

/// As NBODY6++ does from its OpenMP loops: particles and lists set from several threads
/// at once (each its own), then a block shared over threads (`nbody_irr_firr_part`, as
/// the archive's `irr_simd_firr_vec_` does), bit for bit the one call's answer.
#[test]
fn threads_of_the_caller_set_and_share_a_block() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let n = 800;
    let bodies = cluster(n, 21);
    let nb = lists(&bodies, 0.3);
    open(n, 1 + nb.iter().map(Vec::len).max().unwrap(), "1");
    std::thread::scope(|s| {
        for t in 0..4 {
            let (bodies, nb) = (&bodies, &nb);
            s.spawn(move || {
                for a in (t..n).step_by(4) {
                    assert_eq!(set(a, &bodies[a]), 0);
                    assert_eq!(set_list(a, &nb[a]), 0);
                }
            });
        }
    });
    let targets: Vec<usize> = (0..n).rev().collect();
    let (s, whole) = firr(0.2, &targets);
    assert_eq!(s, 0);
    let addr: Vec<i32> = targets.iter().map(|&a| a as i32 + 1).collect();
    let (mut acc, mut jrk, mut nn) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n], vec![0; n]);
    std::thread::scope(|s| {
        let shares = addr.chunks(n / 4).zip(acc.chunks_mut(n / 4)).zip(jrk.chunks_mut(n / 4)).zip(nn.chunks_mut(n / 4));
        for (((a, acc), jrk), nn) in shares {
            s.spawn(move || {
                // SAFETY: each share's arrays hold its targets' outputs, and no share overlaps another.
                let status = unsafe {
                    nbody_irr_firr_part(
                        0.2,
                        a.len() as i32,
                        a.as_ptr(),
                        acc.as_mut_ptr(),
                        jrk.as_mut_ptr(),
                        nn.as_mut_ptr(),
                    )
                };
                assert_eq!(status, 0);
            });
        }
    });
    assert_eq!(nbody_irr_called(1e-3), 0);
    assert!((acc, jrk, nn) == whole);
    for (k, &i) in targets.iter().enumerate().step_by(37) {
        let e = expected(&bodies, i, &nb[i], 0.2);
        assert_eq!(whole.2[k], e.nearest);
        assert!((whole.0[k][0] - e.acc[0]).abs() <= 1e-14 * e.scale[0]);
    }
    assert_eq!(nbody_irr_close(0), 0);
}
