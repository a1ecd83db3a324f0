//! The example tree code against direct summation on a Plummer sphere.

use nbody::core::{Executor, Field, Params, Reference};
use nbody::cpu::{CpuExecutor, Parallelism};
use nbody::tree::{BarnesHut, Multipole, Opening};

fn relative_errors(tree: &[Field<f64>], direct: &[Field<f64>]) -> Vec<f64> {
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let mut e: Vec<f64> = tree
        .iter()
        .zip(direct)
        .map(|(t, d)| {
            let (a, b) = (t.acceleration(), d.acceleration());
            norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / norm(b)
        })
        .collect();
    e.sort_by(f64::total_cmp);
    e
}

/// The median error falls with theta and is below 1e-3 at theta = 0.4; each executor's
/// batched path gives the same tree result as the reference's.
#[test]
fn tree_error_falls_with_theta_and_matches_across_executors() {
    let n = 4096;
    let (bodies, _) = nbody::integrators::ics::plummer::<f64>(n, 12);
    let params = Params::softened(1.0 / 128.0);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut direct = vec![Field::zero(); n];
    cpu.accelerations(&bodies, &bodies, &params.with_overlap_identical(), &mut direct).unwrap();
    let mut medians = Vec::new();
    for theta in [0.8, 0.6, 0.4, 0.2] {
        let bh = BarnesHut {
            theta,
            leaf_size: 32,
            group_size: 32,
            multipole: Multipole::Monopole,
            opening: Opening::Side,
            criterion: Default::default(),
        };
        let mut tree = vec![Field::zero(); n];
        let stats = bh.forces(&bodies, &params, &mut cpu, &mut tree).unwrap();
        let e = relative_errors(&tree, &direct);
        let (median, max) = (e[n / 2], e[n - 1]);
        // Momentum: a tree code does not conserve it exactly; report the net force
        // relative to the sum of the forces' magnitudes.
        let net: [f64; 3] =
            core::array::from_fn(|k| bodies.iter().zip(&tree).map(|(b, f)| b.m * f.acceleration()[k]).sum());
        let scale: f64 = bodies
            .iter()
            .zip(&tree)
            .map(|(b, f)| b.m * f.acceleration().iter().map(|a| a * a).sum::<f64>().sqrt())
            .sum();
        let momentum = (net[0] * net[0] + net[1] * net[1] + net[2] * net[2]).sqrt() / scale;
        println!(
            "theta {theta}: median relative error {median:.2e}, max {max:.2e}, momentum error {momentum:.2e}, {} interactions ({:.1}% of direct), {} groups",
            stats.interactions,
            100.0 * stats.interactions as f64 / (n * n) as f64,
            stats.groups
        );
        medians.push(median);
    }
    assert!(medians.windows(2).all(|w| w[1] < w[0]), "median errors do not fall with theta: {medians:?}");
    assert!(medians[2] < 1e-3, "median error at theta 0.4 is {}", medians[2]);

    // The same tree through the reference executor's batched path.
    let bh = BarnesHut {
        theta: 0.6,
        leaf_size: 32,
        group_size: 128,
        multipole: Multipole::Quadrupole,
        opening: Opening::Side,
        criterion: Default::default(),
    };
    let (mut a, mut b) = (vec![Field::zero(); n], vec![Field::zero(); n]);
    bh.forces(&bodies, &params, &mut cpu, &mut a).unwrap();
    bh.forces(&bodies, &params, &mut Reference, &mut b).unwrap();
    let worst = relative_errors(&a, &b);
    assert!(worst[n - 1] < 1e-12, "CPU and reference tree results differ by {:e}", worst[n - 1]);
}

/// Target groups larger than leaves (the GPU setting): every group walks once and
/// shares its list, the result is at least as accurate as with leaf-sized groups (a
/// larger group opens more cells).
#[test]
fn large_target_groups_share_walks_without_losing_accuracy() {
    let n = 8192;
    let (bodies, _) = nbody::integrators::ics::plummer::<f64>(n, 13);
    let params = Params::softened(1.0 / 128.0);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut direct = vec![Field::zero(); n];
    cpu.accelerations(&bodies, &bodies, &params.with_overlap_identical(), &mut direct).unwrap();
    let run = |bh: BarnesHut, cpu: &mut CpuExecutor| {
        let mut tree = vec![Field::zero(); n];
        let stats = bh.forces(&bodies, &params, cpu, &mut tree).unwrap();
        (relative_errors(&tree, &direct)[n / 2], stats)
    };
    let (small, s) = run(
        BarnesHut {
            theta: 0.5,
            leaf_size: 32,
            group_size: 32,
            multipole: Multipole::Monopole,
            opening: Opening::Side,
            criterion: Default::default(),
        },
        &mut cpu,
    );
    let (large, l) = run(
        BarnesHut {
            theta: 0.5,
            leaf_size: 32,
            group_size: 1024,
            multipole: Multipole::Monopole,
            opening: Opening::Side,
            criterion: Default::default(),
        },
        &mut cpu,
    );
    println!(
        "groups of 32: {} walks, median error {small:.2e}; groups of 1024: {} walks, {large:.2e}",
        s.groups, l.groups
    );
    assert!(l.groups * 8 < s.groups, "{} groups of up to 1024 against {} of 32", l.groups, s.groups);
    assert!(l.interactions > s.interactions && l.interactions < n * n);
    assert!(large <= small * 1.05, "median error {large:e} with large groups, {small:e} with small");
    let (gpu_like, _) = run(BarnesHut::for_gpu(0.5), &mut cpu);
    assert!(gpu_like < 1e-3, "for_gpu median error {gpu_like:e}");
}

/// Quadrupole cells (the leaf list's cell sources) against monopole pseudo-particles:
/// more accurate at every theta, and as accurate with far fewer interactions at a
/// larger theta; the reference executor's cell path gives the same field.
#[test]
fn quadrupole_cells_reach_the_same_error_with_fewer_interactions() {
    let n = 8192;
    let (bodies, _) = nbody::integrators::ics::plummer::<f64>(n, 14);
    let params = Params::softened(1.0 / 128.0);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut direct = vec![Field::zero(); n];
    cpu.accelerations(&bodies, &bodies, &params.with_overlap_identical(), &mut direct).unwrap();
    let mut run = |theta: f64, multipole: Multipole| {
        // Small leaves, so that at this N the far field is most of the work (as at 2^20).
        let bh = BarnesHut {
            theta,
            leaf_size: 16,
            group_size: 16,
            multipole,
            opening: Opening::Side,
            criterion: Default::default(),
        };
        let mut tree = vec![Field::zero(); n];
        let stats = bh.forces(&bodies, &params, &mut cpu, &mut tree).unwrap();
        let median = relative_errors(&tree, &direct)[n / 2];
        let all = stats.interactions + stats.cell_interactions;
        println!(
            "{multipole:?} theta {theta}: median error {median:.2e}, {all} interactions ({} with cells)",
            stats.cell_interactions
        );
        (median, all, stats)
    };
    for theta in [0.8, 0.6, 0.4] {
        let (mono, mono_count, m) = run(theta, Multipole::Monopole);
        let (quad, quad_count, q) = run(theta, Multipole::Quadrupole);
        // The same walk: the same cells accepted, as cells instead of pseudo-particles.
        assert_eq!(mono_count, quad_count);
        assert_eq!(m.cell_interactions, 0);
        assert!(q.cell_interactions > 0);
        assert!(quad < 0.6 * mono, "theta {theta}: quadrupole median error {quad:e}, monopole {mono:e}");
    }
    let (mono, mono_count, _) = run(0.3, Multipole::Monopole);
    let (quad, quad_count, _) = run(0.45, Multipole::Quadrupole);
    assert!(quad < mono, "quadrupole at 0.45: {quad:e}, monopole at 0.3: {mono:e}");
    // 1.9x here; the bench shows more at 2^20, where the far field weighs more.
    assert!(3 * quad_count < 2 * mono_count, "{quad_count} interactions against {mono_count}");

    let bh = BarnesHut::for_cpu(0.6);
    let (mut a, mut b) = (vec![Field::zero(); n], vec![Field::zero(); n]);
    bh.forces(&bodies, &params, &mut cpu, &mut a).unwrap();
    bh.forces(&bodies, &params, &mut Reference, &mut b).unwrap();
    let worst = relative_errors(&a, &b);
    assert!(worst[n - 1] < 1e-12, "CPU and reference quadrupole trees differ by {:e}", worst[n - 1]);
}

/// The extent opening test (twice the farthest particle's distance from the centre of
/// mass) against the node's side: at a larger theta it reaches the side test's error
/// with fewer interactions, for quadrupole cells most of all.
#[test]
fn extent_opening_needs_fewer_interactions_for_the_same_error() {
    let n = 8192;
    let (bodies, _) = nbody::integrators::ics::plummer::<f64>(n, 15);
    let params = Params::softened(1.0 / 128.0);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut direct = vec![Field::zero(); n];
    cpu.accelerations(&bodies, &bodies, &params.with_overlap_identical(), &mut direct).unwrap();
    let mut run = |theta: f64, multipole: Multipole, opening: Opening| {
        let bh = BarnesHut { theta, leaf_size: 16, group_size: 16, multipole, opening, criterion: Default::default() };
        let mut tree = vec![Field::zero(); n];
        let stats = bh.forces(&bodies, &params, &mut cpu, &mut tree).unwrap();
        let median = relative_errors(&tree, &direct)[n / 2];
        let all = stats.interactions + stats.cell_interactions;
        println!("{multipole:?} {opening:?} theta {theta}: median error {median:.2e}, {all} interactions");
        (median, all)
    };
    let (extent, extent_count) = run(0.6, Multipole::Quadrupole, Opening::Extent);
    let (side, side_count) = run(0.45, Multipole::Quadrupole, Opening::Side);
    // At this N the gain is small (at 2^18 the extent test needs 1.3x fewer for the
    // same error): as accurate, at most 10% more interactions.
    assert!(extent < side, "extent {extent:e} against side {side:e}");
    assert!(10 * extent_count < 11 * side_count, "{extent_count} against {side_count}");
    // Monopoles under the same test: twice the error with 1.7x the interactions.
    let (mono, mono_count) = run(0.4, Multipole::Monopole, Opening::Extent);
    assert!(2.0 * extent < mono && 3 * extent_count < 2 * mono_count, "{mono:e} with {mono_count}");
}

/// A Plummer sphere with a dense clump off its centre (a tenth of the mass in a sphere
/// of a hundredth of the radius): the clump's centre feels a small net force next to
/// large cells.
fn sphere_and_clump(n: usize) -> Vec<nbody::core::Particle<f64>> {
    let (mut bodies, _) = nbody::integrators::ics::plummer::<f64>(n - n / 10, 21);
    let (clump, _) = nbody::integrators::ics::plummer::<f64>(n / 10, 22);
    let m = 0.1 / clump.len() as f64;
    bodies.iter_mut().for_each(|b| b.m *= 0.9);
    bodies.extend(clump.iter().map(|c| nbody::core::Particle::new(0.01 * c.x + 0.7, 0.01 * c.y, 0.01 * c.z, m)));
    bodies
}

/// Gadget's relative criterion: its error falls with alpha, its forces stay within a
/// few alpha of direct summation in the 99th percentile on a clustered system, it is
/// the geometric test until an earlier force is given, and a bad alpha or a previous
/// field of the wrong length is refused.
#[test]
fn relative_criterion_bounds_the_error_by_alpha() {
    use nbody::core::cell::Criterion;
    let n = 6000;
    let bodies = sphere_and_clump(n);
    let params = Params::softened(1e-4);
    let mut cpu = CpuExecutor::new(Parallelism::Threads(2));
    let mut direct = vec![Field::zero(); n];
    cpu.accelerations(&bodies, &bodies, &params.with_overlap_identical(), &mut direct).unwrap();
    let geometric = BarnesHut::for_cpu(0.7);
    let mut first = vec![Field::zero(); n];
    geometric.forces(&bodies, &params, &mut cpu, &mut first).unwrap();
    let mut previous: Option<(f64, f64)> = None;
    for alpha in [0.02, 0.004, 0.0008] {
        let bh = geometric.with_criterion(Criterion::Relative { alpha });
        // Without an earlier force: the geometric test, bit for bit.
        let mut plain = vec![Field::zero(); n];
        bh.forces(&bodies, &params, &mut cpu, &mut plain).unwrap();
        assert_eq!(plain, first);
        let mut after = vec![Field::zero(); n];
        let stats = bh.forces_after(&bodies, &first, &params, &mut cpu, &mut after).unwrap();
        let e = relative_errors(&after, &direct);
        let (median, p99) = (e[n / 2], e[n * 99 / 100]);
        println!(
            "alpha {alpha}: median {median:.2e}, 99th {p99:.2e}, {} + {} cell interactions",
            stats.interactions, stats.cell_interactions
        );
        assert!(p99 < 0.5 * alpha, "alpha {alpha}: 99th percentile error {p99:.2e}");
        assert!(stats.interactions + stats.cell_interactions < n * n);
        if let Some((m, p)) = previous {
            assert!(
                median < m && p99 < p,
                "alpha {alpha}: median {median:.2e} (was {m:.2e}), 99th {p99:.2e} (was {p:.2e})"
            );
        }
        previous = Some((median, p99));
    }
    let bad = geometric.with_criterion(Criterion::Relative { alpha: f64::NAN });
    let mut out = vec![Field::zero(); n];
    assert!(matches!(
        bad.forces_after(&bodies, &first, &params, &mut cpu, &mut out),
        Err(nbody::Error::InvalidParameter { name: "alpha", .. })
    ));
    let good = geometric.with_criterion(Criterion::Relative { alpha: 0.01 });
    assert!(matches!(
        good.forces_after(&bodies, &first[1..], &params, &mut cpu, &mut out),
        Err(nbody::Error::LengthMismatch { .. })
    ));
    assert!(out.iter().all(|f| *f == Field::zero()), "nothing is written on bad input");
}
