//! The checks behind the fuzz targets (fuzz/), written against any executor so that the
//! same code runs under libFuzzer (nightly, `cargo +nightly fuzz run ...`) and replays the
//! committed corpus as ordinary tests on stable.

use crate::{Path, compare, exact};
use arbitrary::{Arbitrary, Unstructured};
use nbody_core::projection::Projecting;
use nbody_core::{Bodies, Jerk, Velocity};
use nbody_core::{Field, Overlap, Params, Particle, Real};

/// The range in which valid input gives finite output (the input policy in the README):
/// |coordinates| and masses up to 1e6 and, with eps = 0, particles at least 1e-3 apart
/// or exactly coincident (masked); with eps > 0, eps at least 1e-3.
pub const FINITE_RANGE: f64 = 1e6;
/// Smallest separation (eps = 0) or softening inside the finite range.
pub const FINITE_MIN_DISTANCE: f64 = 1e-3;

#[derive(Debug)]
struct Case<T: Real> {
    targets: Vec<Particle<T>>,
    sources: Vec<Particle<T>>,
    velocities: Vec<Velocity<T>>,
    params: Params<T>,
}

fn real<T: Real>(u: &mut Unstructured<'_>) -> arbitrary::Result<T> {
    // Mostly ordinary values, sometimes any bit pattern (NaN, infinities, subnormals).
    Ok(if u.ratio(1, 8)? {
        T::from_f64(f64::from_bits(u64::arbitrary(u)?))
    } else {
        T::from_f64(f64::arbitrary(u)? % 1e3)
    })
}

fn case<T: Real>(u: &mut Unstructured<'_>) -> arbitrary::Result<Case<T>> {
    let nt = u.int_in_range(0..=40)?;
    let ns = u.int_in_range(0..=80)?;
    let particle = |u: &mut Unstructured<'_>| -> arbitrary::Result<Particle<T>> {
        Ok(Particle::new(real(u)?, real(u)?, real(u)?, real::<T>(u)?.abs()))
    };
    let targets = (0..nt).map(|_| particle(u)).collect::<arbitrary::Result<Vec<_>>>()?;
    let mut sources = (0..ns).map(|_| particle(u)).collect::<arbitrary::Result<Vec<_>>>()?;
    let overlap = match u.int_in_range(0..=3)? {
        0 => Overlap::Disjoint,
        1 => {
            sources = targets.clone();
            Overlap::Identical
        }
        2 => {
            let len = u.int_in_range(0..=nt)?;
            let at = u.int_in_range(0..=ns)?;
            let tail = sources.split_off(at);
            sources.extend_from_slice(&targets[..len]);
            sources.extend(tail);
            Overlap::Shared { target_start: 0, source_start: at, len }
        }
        // Arbitrary (usually invalid) ranges: must be an error, never a panic.
        _ => Overlap::Shared {
            target_start: usize::arbitrary(u)? % 64,
            source_start: usize::arbitrary(u)? % 128,
            len: usize::arbitrary(u)? % 64,
        },
    };
    let eps = if u.ratio(1, 4)? { T::zero() } else { real::<T>(u)?.abs() };
    let g = if u.ratio(1, 8)? { real(u)? } else { T::one() };
    let velocities = (0..nt + sources.len())
        .map(|_| Ok(Velocity::new(real(u)?, real(u)?, real(u)?)))
        .collect::<arbitrary::Result<Vec<_>>>()?;
    Ok(Case {
        targets,
        sources,
        velocities,
        params: Params { g, eps, potential: bool::arbitrary(u)?, overlap, softening: Default::default() },
    })
}

fn in_finite_range<T: Real>(c: &Case<T>) -> bool {
    let ok = |x: T| x.to_f64().abs() <= FINITE_RANGE;
    let all = c.targets.iter().chain(&c.sources);
    if !all.clone().all(|p| ok(p.x) && ok(p.y) && ok(p.z) && ok(p.m)) {
        return false;
    }
    if !c.velocities.iter().all(|v| ok(v.vx) && ok(v.vy) && ok(v.vz)) || !ok(c.params.g) {
        return false;
    }
    if c.params.eps.to_f64() >= FINITE_MIN_DISTANCE {
        return ok(c.params.eps);
    }
    if c.params.eps != T::zero() {
        return false;
    }
    c.targets.iter().all(|t| {
        c.sources.iter().all(|s| {
            let d2: f64 = (0..3).map(|k| (t.position()[k].to_f64() - s.position()[k].to_f64()).powi(2)).sum();
            d2 == 0.0 || d2 >= FINITE_MIN_DISTANCE * FINITE_MIN_DISTANCE
        })
    })
}

/// Fuzz target (a): any input to the entry points is either refused with an error,
/// leaving the output untouched, or accepted; inside [`FINITE_RANGE`] accepted input
/// gives finite output. Never a panic.
pub fn entry_points<T: Real, E: Projecting<T>>(exec: &mut E, data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(c) = case::<T>(&mut u) else { return };
    let n = c.targets.len();
    let poison = Field::new(T::from_f64(0.5), T::from_f64(0.25), T::from_f64(0.125), T::from_f64(0.0625));
    let mut out = vec![poison; n];
    let finite = in_finite_range(&c);
    match exec.accelerations(&c.targets, &c.sources, &c.params, &mut out) {
        Err(_) => assert!(out.iter().all(|o| *o == poison), "a refused call changed its output"),
        Ok(()) if finite => {
            assert!(
                out.iter().all(|o| [o.ax, o.ay, o.az, o.phi].iter().all(|x| x.is_finite())),
                "non-finite output for {c:?}"
            )
        }
        Ok(()) => {}
    }
    let (tv, sv) = c.velocities.split_at(n);
    let mut jerk = vec![Jerk::zero(); n];
    let mut out = vec![poison; n];
    let r = exec.accelerations_jerk(
        Bodies { pos: &c.targets, vel: tv },
        Bodies { pos: &c.sources, vel: sv },
        &c.params,
        &mut out,
        &mut jerk,
    );
    if r.is_err() {
        assert!(
            out.iter().all(|o| *o == poison) && jerk.iter().all(|j| *j == Jerk::zero()),
            "a refused jerk call changed its output"
        );
    }
    density_map(exec, &c.targets, &mut u);
}

/// The density map on arbitrary particles and windows: an error leaves the grid as it
/// was; success adds only finite, non-negative mass, no more than the particles hold.
fn density_map<T: Real, E: Projecting<T>>(exec: &mut E, particles: &[Particle<T>], u: &mut Unstructured<'_>) {
    use nbody_core::projection::{Plane, Projection};
    let (Ok(plane), Ok(cx), Ok(cy), Ok(half), Ok(pixels)) =
        (u8::arbitrary(u), f64::arbitrary(u), f64::arbitrary(u), f64::arbitrary(u), u16::arbitrary(u))
    else {
        return;
    };
    let plane = [Plane::XY, Plane::XZ, Plane::YZ][plane as usize % 3];
    let pixels = pixels as usize % 80;
    let proj = Projection { plane, centre: [cx, cy], half_width: half, pixels };
    let cells = if u8::arbitrary(u).unwrap_or(0) % 8 == 0 { pixels * pixels + 1 } else { pixels * pixels };
    let mut grid = vec![0.5; cells];
    match exec.project(particles, &proj, &mut grid) {
        Err(_) => assert!(grid.iter().all(|&g| g == 0.5), "a refused density map changed the grid"),
        Ok(()) => {
            // Masses inside the finite range cannot overflow a cell.
            if particles.iter().all(|p| p.m.to_f64() <= FINITE_RANGE) {
                let mass: f64 = particles.iter().map(|p| p.m.to_f64()).sum();
                let added: f64 = grid.iter().map(|g| g - 0.5).sum();
                assert!(grid.iter().all(|g| g.is_finite() && *g >= 0.5), "bad cell in {grid:?}");
                assert!(added <= mass * (1.0 + 1e-12) + 1e-9, "added {added} of {mass}");
            }
        }
    }
}

/// Fuzz target (b): on valid input of moderate size, the executor agrees with the f64
/// oracle within the suite's tolerance for unit roundoff `u`.
pub fn against_oracle<T: Real, E: Projecting<T>>(exec: &mut E, data: &[u8], unit_roundoff: f64) {
    let mut u = Unstructured::new(data);
    let Ok(mut c) = case::<T>(&mut u) else { return };
    // Keep to valid input inside the finite range: what is left must be accepted and be
    // right. Values snap to a 2^-20 grid, so particles are coincident or at least 1e-6
    // apart: below that, with eps = 0, m / r³ overflows (in the oracle too) and f32
    // arithmetic masks what f64 counts.
    let grid = 1_048_576.0;
    let clamp = |x: T| {
        let v = x.to_f64();
        let v = if v.is_finite() { v.clamp(-1e3, 1e3) } else { 0.0 };
        T::from_f64((v * grid).round() / grid)
    };
    let tidy =
        |p: &Particle<T>| Particle::new(clamp(p.x), clamp(p.y), clamp(p.z), T::from_f64(clamp(p.m).to_f64().abs()));
    c.targets = c.targets.iter().map(tidy).collect();
    c.sources = c.sources.iter().map(tidy).collect();
    if matches!(c.params.overlap, Overlap::Shared { .. }) || c.params.overlap == Overlap::Identical {
        // Re-derive a valid overlap from the tidied arrays.
        let n = c.targets.len().min(c.sources.len());
        c.sources.splice(0..n, c.targets[..n].iter().copied());
        c.params.overlap = Overlap::Shared { target_start: 0, source_start: 0, len: n };
    }
    c.params.g = T::one();
    let eps = clamp(c.params.eps).to_f64().abs();
    c.params.eps = T::from_f64(if eps < FINITE_MIN_DISTANCE { 0.0 } else { eps });
    let Ok(truth) = exact(&c.targets, &c.sources, &c.params) else { return };
    let before = vec![Field::zero(); c.targets.len()];
    let mut out = before.clone();
    exec.accelerations(&c.targets, &c.sources, &c.params, &mut out).expect("valid input was refused");
    if let Err(m) = compare(&out, &before, &truth, Path::Pairs, c.params.potential, unit_roundoff) {
        panic!("executor disagrees with the oracle: {m}\n{c:?}");
    }
}

/// The committed corpus of fuzz target `target`, sorted by file name: fuzz/corpus/ found
/// from the working directory upwards (a copy of the repository elsewhere, as on the GPU
/// machine) or beside this crate. Panics when it is missing or empty: a replay that
/// reads nothing must not pass.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let here = std::env::current_dir().unwrap_or_default();
    let dir = here
        .ancestors()
        .map(|d| d.join("fuzz/corpus").join(target))
        .chain([std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)])
        .find(|d| d.is_dir())
        .unwrap_or_else(|| panic!("no fuzz/corpus/{target} found"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))).collect()
}
