//! NBODY6's regular-force library against a double loop written from upstream's rules
//! (gpunb.velocity.cu, gpunb.gpu.cu, gpupot.gpu.cu), called as NBODY6++ calls it: one
//! send, then blocks of at most 1024 i-particles with their h2 and regular steps, the
//! lists read back from `list[i*lmax]`. The backend is `NBODY_GPUNB_EXECUTOR` (CPU SIMD,
//! the CPU mixed executor and f32 here; the GPU's on a GPU). The library is one state per
//! process, so the tests take turns.

use nbody_c::gpunb::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;

static TURN: Mutex<()> = Mutex::new(());

/// A cluster as NBODY6++ holds one: a Plummer-like core with a few tight pairs and a
/// fast escaper, N-body units, unequal masses.
struct Cluster {
    m: Vec<f64>,
    x: Vec<[f64; 3]>,
    v: Vec<[f64; 3]>,
}

fn gauss(r: &mut ChaCha8Rng) -> f64 {
    let (a, b): (f64, f64) = (r.r#gen::<f64>().max(1e-300), r.r#gen());
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

fn cluster(n: usize, seed: u64) -> Cluster {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let mut c = Cluster { m: vec![], x: vec![], v: vec![] };
    for k in 0..n {
        let radius = 1.0 / (r.r#gen::<f64>().max(1e-3).powf(-2.0 / 3.0) - 1.0).sqrt();
        let d = [gauss(&mut r), gauss(&mut r), gauss(&mut r)];
        let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let mut x = d.map(|c| 0.6 * radius * c / norm);
        let mut v = [gauss(&mut r) * 0.4, gauss(&mut r) * 0.4, gauss(&mut r) * 0.4];
        if k % 97 == 1 {
            // A tight companion of the particle before.
            let p = c.x[k - 1];
            x = [p[0] + 1e-4 * gauss(&mut r), p[1] + 1e-4 * gauss(&mut r), p[2] + 1e-4 * gauss(&mut r)];
        }
        if k == n / 2 {
            v = [8.0, -3.0, 1.0]; // an escaper
        }
        c.m.push((0.2 + r.r#gen::<f64>()) / n as f64);
        c.x.push(x);
        c.v.push(v);
    }
    c
}

/// Upstream's rules in f64: the sums over the non-neighbours, the lists, and per
/// component the sum of every term's magnitude (the scale of the rounding allowed).
struct Expected {
    acc: [f64; 3],
    jerk: [f64; 3],
    pot: f64,
    list: Vec<i32>,
    scale: [f64; 3],
    jerk_scale: [f64; 3],
    pot_scale: f64,
}

/// A compensated sum (Neumaier's), so that the expected values' own rounding is one.
#[derive(Clone, Copy, Default)]
struct Sum(f64, f64);
impl Sum {
    fn add(&mut self, x: f64) {
        let t = self.0 + x;
        self.1 += if self.0.abs() >= x.abs() { (self.0 - t) + x } else { (x - t) + self.0 };
        self.0 = t;
    }
    fn get(self) -> f64 {
        self.0 + self.1
    }
}

fn expected(c: &Cluster, xi: [f64; 3], vi: [f64; 3], h2: f64, dtr: Option<f64>, mass_scaled: bool) -> Expected {
    let mut e = Expected {
        acc: [0.0; 3],
        jerk: [0.0; 3],
        pot: 0.0,
        list: vec![],
        scale: [0.0; 3],
        jerk_scale: [0.0; 3],
        pot_scale: 0.0,
    };
    let (mut acc, mut jerk, mut pot) = ([Sum::default(); 3], [Sum::default(); 3], Sum::default());
    for j in 0..c.m.len() {
        let dx: [f64; 3] = std::array::from_fn(|k| c.x[j][k] - xi[k]);
        let dv: [f64; 3] = std::array::from_fn(|k| c.v[j][k] - vi[k]);
        let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        let r2p = match dtr {
            Some(t) => {
                let q: [f64; 3] = std::array::from_fn(|k| dx[k] + t * dv[k]);
                q[0] * q[0] + q[1] * q[1] + q[2] * q[2]
            }
            None => r2,
        };
        let sphere = if mass_scaled { c.m[j] * h2 } else { h2 };
        let neighbour = r2.min(r2p) < sphere;
        if neighbour {
            e.list.push(j as i32);
        }
        if r2 == 0.0 {
            continue;
        }
        let rinv = 1.0 / r2.sqrt();
        let mr3 = c.m[j] * rinv * rinv * rinv;
        let rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) / r2;
        for k in 0..3 {
            let (a, jk) = (mr3 * dx[k], mr3 * (dv[k] - rv * dx[k]));
            e.scale[k] += a.abs();
            e.jerk_scale[k] += mr3 * (dv[k].abs() + (rv * dx[k]).abs());
            if !neighbour {
                acc[k].add(a);
                jerk[k].add(jk);
            }
        }
        e.pot_scale += c.m[j] * rinv;
        if !neighbour {
            pot.add(c.m[j] * rinv);
        }
    }
    e.acc = acc.map(Sum::get);
    e.jerk = jerk.map(Sum::get);
    e.pot = pot.get();
    e
}

const LMAX: usize = 200;
const NNBMAX: usize = 150;

/// What one regf call returned.
struct Got {
    acc: Vec<[f64; 3]>,
    jerk: Vec<[f64; 3]>,
    pot: Vec<f64>,
    list: Vec<i32>,
}

#[allow(clippy::too_many_arguments)]
fn regf(
    nimax: i32,
    flags: i32,
    xi: &[[f64; 3]],
    vi: &[[f64; 3]],
    h2: &[f64],
    dtr: Option<&[f64]>,
    lmax: usize,
    nnbmax: usize,
) -> (i32, Got) {
    let n = xi.len();
    let mut g = Got { acc: vec![[7.0; 3]; n], jerk: vec![[7.0; 3]; n], pot: vec![7.0; n], list: vec![-7; n * lmax] };
    // SAFETY: every array holds what the call's counts say.
    let status = unsafe {
        nbody_gpunb_regf(
            nimax,
            flags,
            n as i32,
            h2.as_ptr(),
            dtr.map_or(std::ptr::null(), |d| d.as_ptr()),
            xi.as_ptr(),
            vi.as_ptr(),
            g.acc.as_mut_ptr(),
            g.jerk.as_mut_ptr(),
            g.pot.as_mut_ptr(),
            lmax as i32,
            nnbmax as i32,
            g.list.as_mut_ptr(),
        )
    };
    (status, g)
}

fn open_with(executor: &str, precision: &str, c: &Cluster, nbmax: usize) {
    // SAFETY: the tests take turns (TURN), and nothing else in this binary reads the
    // environment meanwhile.
    unsafe {
        std::env::set_var("NBODY_GPUNB_EXECUTOR", executor);
        std::env::set_var("NBODY_GPUNB_PRECISION", precision);
    }
    nbody_gpunb_close(); // after a test that failed while open
    assert_eq!(nbody_gpunb_open(nbmax as i32), 0, "open on {executor}");
    // SAFETY: nj records each.
    let s = unsafe { nbody_gpunb_send(c.m.len() as i32, c.m.as_ptr(), c.x.as_ptr(), c.v.as_ptr()) };
    assert_eq!(s, 0);
}

fn backend() -> String {
    std::env::var("NBODY_GPUNB_TEST_EXECUTOR").unwrap_or_else(|_| "cpu:2".into())
}

/// Each i-particle's radius as NBODY6++ sets it (about 50 neighbours here), regular
/// steps from 0 to 1/32.
/// Positions, velocities, h2 and regular steps of a block of i-particles.
type BlockInputs = (Vec<[f64; 3]>, Vec<[f64; 3]>, Vec<f64>, Vec<f64>);

fn block_inputs(c: &Cluster, from: usize, to: usize, seed: u64) -> BlockInputs {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let h2 = (from..to).map(|_| (0.15 + 0.15 * r.r#gen::<f64>()).powi(2)).collect();
    let dtr =
        (from..to).map(|_| [0.0, 1.0 / 256.0, 1.0 / 64.0, 1.0 / 32.0][(r.r#gen::<f64>() * 4.0) as usize]).collect();
    (c.x[from..to].to_vec(), c.v[from..to].to_vec(), h2, dtr)
}

/// Runs NBODY6++'s call pattern on `executor` and checks every result; `tolerance` in
/// units of the scale (64 roundings of f64; f32's rounding for the f32 runs).
fn nbody6pp_pattern(executor: &str, precision: &str, flags: i32, tolerance: f64) {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = cluster(3000, 11);
    open_with(executor, precision, &c, 4000);
    let mass_scaled = flags & NBODY_GPUNB_MASS_SCALED != 0;
    let (mut lists_checked, mut neighbours, mut overflowed) = (0, 0, 0);
    let (mut worst, mut worst_jerk) = (0.0f64, 0.0f64);
    // Three sends, as NBODY6++ sends each regular block: the particles as made, a little
    // later (the library's cells are kept, the escaper among the movers), much later
    // (they are built again).
    for (round, dt) in [(0, 0.0), (1, 0.02), (2, 0.5)] {
        if round > 0 {
            for j in 0..c.m.len() {
                for k in 0..3 {
                    c.x[j][k] += dt * c.v[j][k];
                }
            }
            // SAFETY: nj records each.
            let s = unsafe { nbody_gpunb_send(c.m.len() as i32, c.m.as_ptr(), c.x.as_ptr(), c.v.as_ptr()) };
            assert_eq!(s, 0);
        }
        for from in (0..c.m.len()).step_by(1024) {
            let to = (from + 1024).min(c.m.len());
            let (xi, vi, mut h2, dtr) = block_inputs(&c, from, to, from as u64 + 3);
            if mass_scaled {
                // m_flag's h2 is per unit mass (NBODY6 divides by the mean mass).
                h2.iter_mut().for_each(|h| *h *= c.m.len() as f64);
            }
            let (status, g) = regf(1024, flags, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
            assert_eq!(status, 0);
            for i in 0..xi.len() {
                let e = expected(&c, xi[i], vi[i], h2[i], Some(dtr[i]), mass_scaled);
                for k in 0..3 {
                    worst = worst.max((g.acc[i][k] - e.acc[k]).abs() / e.scale[k]);
                    worst_jerk = worst_jerk.max((g.jerk[i][k] - e.jerk[k]).abs() / e.jerk_scale[k]);
                }
                let at = from + i;
                let near = |what: &str, got: f64, want: f64, scale: f64| {
                    assert!((got - want).abs() <= tolerance * scale, "{executor}: {what} of {at}: {got} vs {want}");
                };
                for k in 0..3 {
                    near("acc", g.acc[i][k], e.acc[k], e.scale[k]);
                    near("jerk", g.jerk[i][k], e.jerk[k], e.jerk_scale[k]);
                }
                near("pot", g.pot[i], e.pot, e.pot_scale);
                let got = &g.list[i * LMAX..(i + 1) * LMAX];
                if e.list.len() > NNBMAX {
                    assert_eq!(got[0], -(e.list.len() as i32), "{executor}: overflow code of {}", from + i);
                    overflowed += 1;
                } else {
                    assert_eq!(got[0] as usize, e.list.len(), "{executor}: count of {}", from + i);
                    assert_eq!(&got[1..=e.list.len()], &e.list[..], "{executor}: list of {}", from + i);
                    lists_checked += 1;
                    neighbours += e.list.len();
                }
            }
        }
    }
    // Enough of both to mean something: about 20 neighbours a list, a few overflowed.
    assert!(
        lists_checked > 3 * 2900 && neighbours > 15 * lists_checked && overflowed > 0,
        "{lists_checked} lists, {neighbours} neighbours, {overflowed} overflowed"
    );
    eprintln!("{executor} {precision}: worst error / scale {worst:.3e} (acc), {worst_jerk:.3e} (jerk)");
    assert_eq!(nbody_gpunb_close(), 0);
}

const U64: f64 = f64::EPSILON / 2.0;

#[test]
fn nbody6pp_calls_match_upstreams_rules_in_f64() {
    nbody6pp_pattern(&backend(), "f64", 0, 64.0 * U64);
}

#[test]
fn the_mass_scaled_sphere_matches_upstreams_m_flag() {
    nbody6pp_pattern(&backend(), "f64", NBODY_GPUNB_MASS_SCALED, 64.0 * U64);
}

#[test]
fn mixed_and_f32_stay_within_their_rounding() {
    // Mixed: f32 pair terms on f64 differences; f32: absolute positions in f32, as
    // upstream. Both: the regular force to a few f32 roundings of the terms' sum.
    let mixed = if backend().starts_with("cuda") { "cuda-mixed" } else { "mixed:2" };
    nbody6pp_pattern(mixed, "f64", 0, 64.0 * f32::EPSILON as f64);
    nbody6pp_pattern(&backend(), "f32", 0, 256.0 * f32::EPSILON as f64);
}

/// The sphere's edge, the velocity criterion, the particle itself and overflow, on a
/// hand-made set.
#[test]
fn edges_velocity_criterion_and_overflow() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    // Target 0 at the origin; j at distance² exactly 0.25 (not a neighbour: the test is
    // strict), just inside, outside but heading in (a neighbour only with dtr), and a
    // coincident twin.
    let c = Cluster {
        m: vec![1.0, 0.5, 0.5, 0.5, 0.25, 2.0],
        x: vec![[0.0; 3], [0.5, 0.0, 0.0], [0.0, 0.49999999, 0.0], [0.0, 0.0, 0.6], [0.0; 3], [3.0, 0.0, 0.0]],
        v: vec![[0.0; 3], [0.0; 3], [0.0; 3], [0.0, 0.0, -8.0], [0.0; 3], [0.0; 3]],
    };
    open_with(&backend(), "f64", &c, 6);
    let (xi, vi) = ([c.x[0]], [c.v[0]]);
    let (_, g) = regf(1024, 0, &xi, &vi, &[0.25], Some(&[1.0 / 32.0]), 8, 8);
    assert_eq!(&g.list[..5], &[4, 0, 2, 3, 4], "itself, just inside, heading in, the twin");
    let e = expected(&c, xi[0], vi[0], 0.25, Some(1.0 / 32.0), false);
    assert_eq!(e.list, vec![0, 2, 3, 4]);
    assert!((g.acc[0][0] - e.acc[0]).abs() < 1e-15 && (g.pot[0] - e.pot).abs() < 1e-15);
    assert!((g.pot[0] - (0.5 / 0.5 + 2.0 / 3.0)).abs() < 1e-15, "the edge and the far one only: {}", g.pot[0]);
    // Without dtr the incoming one is not a neighbour.
    let (_, g) = regf(1024, 0, &xi, &vi, &[0.25], None, 8, 8);
    assert_eq!(&g.list[..4], &[3, 0, 2, 4]);
    // An empty sphere: nobody, not even itself; the twin is left out of the sums.
    let (_, g) = regf(1024, 0, &xi, &vi, &[0.0], Some(&[0.0]), 8, 8);
    assert_eq!(g.list[0], 0);
    assert!(g.acc[0].iter().chain(&g.jerk[0]).chain(&g.pot).all(|v| v.is_finite()));
    // Overflow: 4 neighbours against nnbmax 3, then against lmax 4 (3 slots).
    let (_, g) = regf(1024, 0, &xi, &vi, &[0.25], Some(&[1.0 / 32.0]), 8, 3);
    assert_eq!(g.list[0], -4);
    let (_, g) = regf(1024, 0, &xi, &vi, &[0.25], Some(&[1.0 / 32.0]), 4, 8);
    assert_eq!(g.list[0], -4);
    let (_, g) = regf(1024, NBODY_GPUNB_OVERFLOW_MINUS_ONE, &xi, &vi, &[0.25], Some(&[1.0 / 32.0]), 8, 3);
    assert_eq!(g.list[0], -1);
    // Mass-scaled: h2 = 0.3 takes the 0.5-mass one at 0.49999999 only if 0.5*0.3 > r²: no.
    let (_, g) = regf(1024, NBODY_GPUNB_MASS_SCALED, &xi, &vi, &[0.3], None, 8, 8);
    assert_eq!(&g.list[..3], &[2, 0, 4], "itself (m 1) and the twin (m 0.25: 0 < 0.075)");
    assert_eq!(nbody_gpunb_close(), 0);
}

/// A list far longer than its slots (on a GPU, more than the device keeps a target) is
/// still counted in full for the overflow code, and every neighbour stays out of the sums.
#[test]
fn a_list_far_over_its_slots_is_counted_in_full() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = cluster(300, 5);
    // 120 in a ball of radius 0.1 about the origin, the rest far out.
    for j in 0..c.m.len() {
        let s = if j < 120 { 0.1 / 3.0 } else { 10.0 };
        c.x[j] = c.x[j].map(|x| x * s / (1.0 + x.abs()));
        if j >= 120 {
            c.x[j][0] += 20.0;
        }
    }
    open_with(&backend(), "f64", &c, 300);
    let (xi, vi) = ([c.x[0], c.x[200]], [c.v[0], c.v[200]]);
    let (h2, dtr) = ([0.25, 0.25], [1.0 / 64.0, 0.0]);
    let (status, g) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), 8, 3);
    assert_eq!(status, 0);
    for (i, &h2) in h2.iter().enumerate() {
        let e = expected(&c, xi[i], vi[i], h2, Some(dtr[i]), false);
        assert!(i == 1 || e.list.len() >= 120, "{} neighbours", e.list.len());
        let want = if e.list.len() > 3 { -(e.list.len() as i32) } else { e.list.len() as i32 };
        assert_eq!(g.list[i * 8], want, "count of {i}");
        for k in 0..3 {
            assert!((g.acc[i][k] - e.acc[k]).abs() <= 64.0 * U64 * e.scale[k], "acc of {i}");
        }
    }
    assert_eq!(nbody_gpunb_close(), 0);
}

#[test]
fn gpupot_matches_its_double_loop() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the tests take turns.
    unsafe { std::env::set_var("NBODY_GPUNB_EXECUTOR", backend()) };
    let mut c = cluster(2000, 5);
    c.x[7] = c.x[6]; // coincident: left out of each other's sums
    let (istart, ni) = (101, 1500);
    let mut pot = vec![0.0; ni];
    // SAFETY: n records, ni outputs.
    let s = unsafe { nbody_gpunb_potential(istart, ni as i32, 2000, c.m.as_ptr(), c.x.as_ptr(), pot.as_mut_ptr()) };
    assert_eq!(s, 0);
    for (k, p) in pot.iter().enumerate() {
        let i = istart as usize - 1 + k;
        let (mut sum, mut scale) = (0.0, 0.0);
        for j in 0..2000 {
            let d: [f64; 3] = std::array::from_fn(|q| c.x[j][q] - c.x[i][q]);
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if r2 > 0.0 {
                sum += c.m[j] / r2.sqrt();
                scale += c.m[j] / r2.sqrt();
            }
        }
        assert!((p - sum).abs() <= 64.0 * U64 * scale, "pot of {i}: {p} vs {sum}");
    }
    // Past the end: an error, pot untouched.
    let mut pot = vec![7.0; 10];
    // SAFETY: as above.
    let s = unsafe { nbody_gpunb_potential(1995, 10, 2000, c.m.as_ptr(), c.x.as_ptr(), pot.as_mut_ptr()) };
    assert_eq!(s, -1);
    assert!(pot.iter().all(|&p| p == 7.0));
}

#[test]
fn bad_calls_are_errors_with_the_outputs_untouched() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let c = cluster(100, 9);
    let last = || {
        // SAFETY: the library's last error is a NUL-terminated string it keeps.
        unsafe { std::ffi::CStr::from_ptr(nbody_c::nbody_last_error()) }.to_string_lossy().into_owned()
    };
    // Not open.
    let (xi, vi, h2, dtr) = block_inputs(&c, 0, 10, 1);
    let (s, g) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert!(s == -1 && last().contains("not open") && g.list.iter().all(|&l| l == -7));
    open_with(&backend(), "f64", &c, 100);
    // nj above nbmax.
    let big = cluster(101, 9);
    // SAFETY: 101 records.
    let s = unsafe { nbody_gpunb_send(101, big.m.as_ptr(), big.x.as_ptr(), big.v.as_ptr()) };
    assert!(s == -1 && last().contains("nbmax"), "{}", last());
    // ni above the limit, and zero.
    let (xi, vi, h2, dtr) = block_inputs(&c, 0, 100, 1);
    let (s, g) = regf(64, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert!(s == -1 && last().contains("ni = 100") && g.acc.iter().all(|a| a[0] == 7.0), "{}", last());
    let (s, _) = regf(64, 0, &[], &[], &[], None, LMAX, NNBMAX);
    assert!(s == -1 && last().contains("ni = 0"));
    // NaN in a position, a radius, a step; a negative mass in a send.
    let (mut xi, vi, mut h2, mut dtr) = block_inputs(&c, 0, 10, 1);
    xi[3][1] = f64::NAN;
    let (s, g) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert!(s == -1 && last().contains("i-particle 3") && g.pot.iter().all(|&p| p == 7.0), "{}", last());
    xi[3][1] = 0.0;
    h2[4] = f64::NAN;
    let (s, _) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert!(s == -1 && last().contains("h2[4]"), "{}", last());
    h2[4] = 0.01;
    dtr[5] = f64::INFINITY;
    let (s, _) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert!(s == -1 && last().contains("dtr[5]"), "{}", last());
    let mut m = c.m.clone();
    m[17] = -1.0;
    // SAFETY: 100 records.
    let s = unsafe { nbody_gpunb_send(100, m.as_ptr(), c.x.as_ptr(), c.v.as_ptr()) };
    assert!(s == -1 && last().contains("mj[17]"), "{}", last());
    // The last good send still stands.
    dtr[5] = 0.0;
    let (s, _) = regf(1024, 0, &xi, &vi, &h2, Some(&dtr), LMAX, NNBMAX);
    assert_eq!(s, 0);
    // A null list.
    // SAFETY: the null list is the point; the rest as the call says.
    let s = unsafe {
        let mut out = vec![[0.0; 3]; 10];
        let mut jrk = vec![[0.0; 3]; 10];
        nbody_gpunb_regf(
            1024,
            0,
            10,
            h2.as_ptr(),
            dtr.as_ptr(),
            xi.as_ptr(),
            vi.as_ptr(),
            out.as_mut_ptr(),
            jrk.as_mut_ptr(),
            std::ptr::null_mut(),
            LMAX as i32,
            NNBMAX as i32,
            std::ptr::null_mut(),
        )
    };
    assert!(s == -1 && last().contains("list"), "{}", last());
    assert_eq!(nbody_gpunb_close(), 0);
}

/// Cells kept across a send widen each search by how far the particles moved: a particle
/// that moved into a sphere from a cell the search would not look at is still found.
#[test]
fn kept_cells_widen_the_search_by_the_drift() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    // Cells of 0.5 from the corner (-1,-1,-1): the search about x = -0.001 to 0.499 looks
    // at cells up to x = 0.5, so the particle at 0.55 sits in a cell it skips.
    let mut c = Cluster {
        m: vec![1.0, 1.0, 1.0],
        x: vec![[-1.0, -1.0, -1.0], [-0.001, 0.0, 0.0], [0.55, 0.0, 0.0]],
        v: vec![[0.0; 3]; 3],
    };
    open_with(&backend(), "f64", &c, 3);
    let (_, g) = regf(1024, 0, &[c.x[1]], &[c.v[1]], &[0.25], None, 8, 8);
    assert_eq!(&g.list[..2], &[1, 1], "itself only");
    // Moved by 0.1, under a quarter cell: the cells stay, and it is now 0.451 away.
    c.x[2][0] = 0.45;
    // SAFETY: three records each.
    assert_eq!(unsafe { nbody_gpunb_send(3, c.m.as_ptr(), c.x.as_ptr(), c.v.as_ptr()) }, 0);
    let (_, g) = regf(1024, 0, &[c.x[1]], &[c.v[1]], &[0.25], None, 8, 8);
    assert_eq!(&g.list[..3], &[2, 1, 2], "itself and the one that came in");
    assert_eq!(nbody_gpunb_close(), 0);
}

/// A look-ahead short next to the sphere is searched in the position cells, widened by
/// how far it can carry a pair: a particle coming in fast from a cell the sphere's own
/// search would skip is found.
#[test]
fn a_short_look_ahead_widens_the_position_search() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    // As above: cells of 0.5 from (-1,-1,-1); the one at 0.55 comes in at speed 8, to
    // 0.425 after 1/64.
    let c = Cluster {
        m: vec![1.0, 1.0, 1.0],
        x: vec![[-1.0, -1.0, -1.0], [-0.001, 0.0, 0.0], [0.55, 0.0, 0.0]],
        v: vec![[0.0; 3], [0.0; 3], [-8.0, 0.0, 0.0]],
    };
    open_with(&backend(), "f64", &c, 3);
    let (_, g) = regf(1024, 0, &[c.x[1]], &[c.v[1]], &[0.25], Some(&[1.0 / 64.0]), 8, 8);
    assert_eq!(&g.list[..3], &[2, 1, 2], "itself and the one coming in");
    let (_, g) = regf(1024, 0, &[c.x[1]], &[c.v[1]], &[0.25], None, 8, 8);
    assert_eq!(&g.list[..2], &[1, 1], "without the look-ahead, itself only");
    assert_eq!(nbody_gpunb_close(), 0);
}
