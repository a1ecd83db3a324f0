//! The device tree (nbody_cuda::tree) against the f64 oracle: exact where no cell is
//! taken, within its expansion's error where cells are, the degenerate inputs, the node
//! array grown when a build runs out, and bad input.

use nbody_conformance::Failed;
use nbody_core::oracle::{self, Exact};
use nbody_core::{Error, Field, Params, Particle, Real};
use nbody_cuda::{CudaExecutor, DeviceReal, DeviceTree, TreeSettings};

/// `params` with the potential summed.
fn with_potential<T: Real>(mut params: Params<T>) -> Params<T> {
    params.potential = true;
    params
}

fn err(e: Error) -> Failed {
    format!("{e}").into()
}

/// The oracle's field of `ps` on themselves.
fn exact<T: Real>(ps: &[Particle<T>], params: &Params<T>) -> Vec<Exact> {
    let mut out = vec![Exact::default(); ps.len()];
    oracle::field(ps, None, ps, None, &params.with_overlap_identical(), &mut out).expect("valid input");
    out
}

/// Relative acceleration errors, sorted, and the largest potential error relative to
/// the largest |phi|.
fn errors<T: Real>(got: &[Field<T>], want: &[Exact]) -> (Vec<f64>, f64) {
    let mut rel: Vec<f64> = got
        .iter()
        .zip(want)
        .map(|(g, w)| {
            let d = [g.ax.to_f64() - w.acc[0], g.ay.to_f64() - w.acc[1], g.az.to_f64() - w.acc[2]];
            let norm = (w.acc[0].powi(2) + w.acc[1].powi(2) + w.acc[2].powi(2)).sqrt();
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / norm.max(f64::MIN_POSITIVE)
        })
        .collect();
    rel.sort_by(f64::total_cmp);
    let scale = want.iter().map(|w| w.phi.abs()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let phi = got.iter().zip(want).map(|(g, w)| (g.phi.to_f64() - w.phi).abs()).fold(0.0, f64::max) / scale;
    (rel, phi)
}

fn forces<T: DeviceReal>(
    gpu: &mut CudaExecutor,
    tree: &mut DeviceTree<T>,
    ps: &[Particle<T>],
    settings: &TreeSettings,
    params: &Params<T>,
) -> Result<Vec<Field<T>>, Failed> {
    let mut out = vec![Field::zero(); ps.len()];
    gpu.tree_forces_host(tree, ps, settings, params, &mut out).map_err(err)?;
    Ok(out)
}

/// theta so small that every node is opened (but single particles, taken as cells of
/// size zero, exactly): the lists are every particle once, so the tree is direct
/// summation, to the precision's roundoff; and twice the same (the lists do not depend
/// on the order nodes were appended in).
fn exact_when_nothing_is_accepted<T: DeviceReal>(bound: f64) -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<T>(3000, 5);
    let params = with_potential(Params::softened(T::from_f64(0.01)));
    let want = exact(&ps, &params);
    for (leaf, group) in [(16, 64), (1, 1), (64, 700)] {
        // Without local expansions: they approximate even the cells taken exactly (a
        // single particle's, whose size is zero).
        let settings =
            TreeSettings { theta: 1e-6, leaf_size: leaf, group_size: group, local: 0.0, ..TreeSettings::new(0.5) };
        let mut tree = DeviceTree::new();
        let got = forces(&mut gpu, &mut tree, &ps, &settings, &params)?;
        let (rel, phi) = errors(&got, &want);
        let worst = rel[rel.len() - 1];
        if worst > bound || phi > bound {
            return Err(format!("{}: leaves {leaf}, groups {group}: worst {worst:e}, phi {phi:e}", T::NAME).into());
        }
        let again = forces(&mut gpu, &mut tree, &ps, &settings, &params)?;
        if again != got {
            return Err(format!("{}: a second force differs from the first", T::NAME).into());
        }
    }
    Ok(())
}

/// theta = 0.5 on a Plummer sphere: quadrupole cells within their expansion's error
/// (median at most 1e-3, 99th percentile at most 1e-2), and better than monopoles.
fn accurate_at_half() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<f32>(20_000, 3);
    let params = with_potential(Params::softened(1.0 / 256.0));
    let want = exact(&ps, &params);
    let mut medians = Vec::new();
    for quadrupole in [true, false] {
        let settings = TreeSettings { quadrupole, ..TreeSettings::new(0.5) };
        let got = forces(&mut gpu, &mut DeviceTree::new(), &ps, &settings, &params)?;
        let (rel, phi) = errors(&got, &want);
        let (median, p99) = (rel[rel.len() / 2], rel[rel.len() * 99 / 100]);
        println!("device tree theta 0.5 quadrupole {quadrupole}: median {median:.2e}, 99% {p99:.2e}, phi {phi:.2e}");
        if quadrupole && (median > 1e-3 || p99 > 1e-2 || phi > 1e-3) {
            return Err(format!("quadrupole cells: median {median:e}, 99% {p99:e}, phi {phi:e}").into());
        }
        medians.push(median);
    }
    if medians[0] >= medians[1] {
        return Err(format!("quadrupole median {:e} not below monopole {:e}", medians[0], medians[1]).into());
    }
    Ok(())
}

/// Local expansions (f32 and f64) against the cells alone on a Plummer sphere: at the
/// default `local` (theta / 5) the median and 99th-percentile errors stay within 10% of
/// the cells' alone while fewer cells meet each target, and the potential's error too; a
/// large `local` (0.6) makes the far field's truncation show, so the series is what
/// those targets got.
fn local_expansions<T: DeviceReal>() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<T>(30_000, 6);
    let params = with_potential(Params::softened(T::from_f64(1.0 / 256.0)));
    let want = exact(&ps, &params);
    for theta in [0.6, 1.0] {
        let mut run = |local: f64| -> Result<(f64, f64, f64, nbody_cuda::TreeReport), Failed> {
            let settings = TreeSettings::new(theta).with_local(local);
            let mut out = vec![Field::zero(); ps.len()];
            let report =
                gpu.tree_forces_host(&mut DeviceTree::new(), &ps, &settings, &params, &mut out).map_err(err)?;
            let (rel, phi) = errors(&out, &want);
            Ok((rel[rel.len() / 2], rel[rel.len() * 99 / 100], phi, report))
        };
        let (median, p99, phi, cells) = run(0.0)?;
        let (l_median, l_p99, l_phi, local) = run(TreeSettings::local_for(theta))?;
        let (_, wide_p99, _, _) = run(0.6)?;
        println!(
            "{} theta {theta}: cells alone median {median:.2e}, 99% {p99:.2e}, phi {phi:.2e}, {} cell interactions; local {}: {l_median:.2e}, {l_p99:.2e}, {l_phi:.2e}, {} cell interactions, {} translations; local 0.6: 99% {wide_p99:.2e}",
            T::NAME,
            cells.cell_interactions,
            TreeSettings::local_for(theta),
            local.cell_interactions,
            local.local_cells
        );
        let within = |got: f64, alone: f64| got <= 1.1 * alone + 1e-6;
        if !(within(l_median, median) && within(l_p99, p99) && within(l_phi, phi)) {
            return Err(format!(
                "{} theta {theta}: local expansions median {l_median:e}, 99% {l_p99:e}, phi {l_phi:e} against {median:e}, {p99:e}, {phi:e}",
                T::NAME
            )
            .into());
        }
        if local.local_cells == 0 || 5 * local.cell_interactions > 4 * cells.cell_interactions {
            return Err(format!(
                "{} theta {theta}: {} translations left {} of {} cell interactions",
                T::NAME,
                local.local_cells,
                local.cell_interactions,
                cells.cell_interactions
            )
            .into());
        }
        if wide_p99 < 2.0 * p99 {
            return Err(
                format!("{} theta {theta}: local 0.6 gave 99% {wide_p99:e}, the cells alone {p99:e}", T::NAME).into()
            );
        }
    }
    Ok(())
}

/// Super-groups (f32 and f64) against groups alone, on a Plummer sphere, with their groups'
/// walks starting from the super-groups' frontiers and (a tree that keeps none) from the
/// root: the same errors against the oracle (median, 99th percentile, potential within
/// 10%), cells translated into the super-groups' expansions and fewer into the groups',
/// and in f64 the answers apart by no more than the expansions' own truncation (four
/// times the largest change local expansions make against cells alone): a node the
/// super-group took that a group also counted, or that neither did, would move its
/// targets by that node's whole field.
fn super_groups<T: DeviceReal>() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<T>(30_000, 7);
    let params = with_potential(Params::softened(T::from_f64(1.0 / 256.0)));
    let want = exact(&ps, &params);
    let scale: Vec<f64> = want.iter().map(|w| w.acc.iter().map(|a| a * a).sum::<f64>().sqrt()).collect();
    for (theta, supers) in [(0.6, 1536), (1.0, 1536), (1.0, 300)] {
        let mut run = |settings: TreeSettings,
                       mut tree: DeviceTree<T>|
         -> Result<(Vec<Field<T>>, nbody_cuda::TreeReport), Failed> {
            let mut out = vec![Field::zero(); ps.len()];
            let report = gpu.tree_forces_host(&mut tree, &ps, &settings, &params, &mut out).map_err(err)?;
            Ok((out, report))
        };
        let base = TreeSettings::new(theta);
        let (cells, _) = run(base.with_local(0.0), DeviceTree::new())?;
        let (groups, alone) = run(base.with_supers(0), DeviceTree::new())?;
        let (shared, report) = run(base.with_supers(supers), DeviceTree::new())?;
        let (rooted, _) = run(base.with_supers(supers), DeviceTree::with_front_capacity(0))?;
        for (way, got) in [("frontiers", &shared), ("from the root", &rooted)] {
            check_super_groups(theta, supers, way, got, &groups, &cells, &want, &scale, &alone, &report)?;
        }
    }
    Ok(())
}

/// One way of [`super_groups`] against groups alone.
#[allow(clippy::too_many_arguments)]
fn check_super_groups<T: DeviceReal>(
    theta: f64,
    supers: usize,
    way: &str,
    shared: &[Field<T>],
    groups: &[Field<T>],
    cells: &[Field<T>],
    want: &[Exact],
    scale: &[f64],
    alone: &nbody_cuda::TreeReport,
    report: &nbody_cuda::TreeReport,
) -> Result<(), Failed> {
    let apart = |x: &[Field<T>], y: &[Field<T>]| -> f64 {
        x.iter()
            .zip(y)
            .zip(scale)
            .map(|((p, q), s)| {
                let d = [p.ax.to_f64() - q.ax.to_f64(), p.ay.to_f64() - q.ay.to_f64(), p.az.to_f64() - q.az.to_f64()];
                (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / s.max(f64::MIN_POSITIVE)
            })
            .fold(0.0, f64::max)
    };
    let (g_rel, g_phi) = errors(groups, want);
    let (s_rel, s_phi) = errors(shared, want);
    let (g_median, g_p99) = (g_rel[g_rel.len() / 2], g_rel[g_rel.len() * 99 / 100]);
    let (s_median, s_p99) = (s_rel[s_rel.len() / 2], s_rel[s_rel.len() * 99 / 100]);
    let (truncation, moved) = (apart(groups, cells), apart(shared, groups));
    println!(
        "{} theta {theta}, super-groups of {supers} ({way}): groups alone median {g_median:.2e}, 99% {g_p99:.2e}, phi {g_phi:.2e}, {} translations; with super-groups {s_median:.2e}, {s_p99:.2e}, {s_phi:.2e}, {} + {} translations; largest change {moved:.2e} (local expansions against cells alone {truncation:.2e})",
        T::NAME,
        alone.local_cells,
        report.local_cells,
        report.super_cells
    );
    let within = |got: f64, alone: f64| got <= 1.1 * alone + 1e-6;
    if !(within(s_median, g_median) && within(s_p99, g_p99) && within(s_phi, g_phi)) {
        return Err(format!(
            "{} theta {theta} ({way}): super-groups median {s_median:e}, 99% {s_p99:e}, phi {s_phi:e} against {g_median:e}, {g_p99:e}, {g_phi:e}",
            T::NAME
        )
        .into());
    }
    if report.super_cells == 0 || report.local_cells >= alone.local_cells {
        return Err(format!(
            "{} theta {theta}: {} cells into super-groups, {} into groups against {} without",
            T::NAME,
            report.super_cells,
            report.local_cells,
            alone.local_cells
        )
        .into());
    }
    if T::NAME == "f64" && moved > 4.0 * truncation {
        return Err(format!(
            "f64 theta {theta} ({way}): super-groups moved a target by {moved:e} of its field, local expansions by {truncation:e}"
        )
        .into());
    }
    Ok(())
}

/// One particle, two, a hundred at one point (the depth stops at 21 levels), a tight
/// pair inside a cloud, eps = 0; outputs are added to, not overwritten.
fn degenerate_inputs() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let mut tree = DeviceTree::<f64>::new();
    let (cloud, _) = nbody_integrators::ics::plummer::<f64>(500, 9);
    let mut tight = cloud.clone();
    tight[7] = Particle::new(tight[3].x + 1e-12, tight[3].y, tight[3].z, tight[3].m);
    let cases: Vec<(&str, Vec<Particle<f64>>, f64)> = vec![
        ("one particle", vec![Particle::new(1.0, 2.0, 3.0, 1.0)], 0.01),
        ("two particles", vec![Particle::new(0.0, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 2.0)], 0.01),
        ("a hundred at one point", vec![Particle::new(0.5, 0.5, 0.5, 0.01); 100], 0.01),
        ("a tight pair in a cloud", tight, 0.01),
        ("unsoftened", cloud, 0.0),
    ];
    for (what, ps, eps) in cases {
        let params = with_potential(Params::softened(eps));
        let want = exact(&ps, &params);
        let settings = TreeSettings { theta: 0.3, leaf_size: 4, group_size: 8, ..TreeSettings::new(0.3) };
        let mut out = vec![Field::new(1.0, 1.0, 1.0, 1.0); ps.len()];
        gpu.tree_forces_host(&mut tree, &ps, &settings, &params, &mut out).map_err(err)?;
        for (k, (g, w)) in out.iter().zip(&want).enumerate() {
            let scale = (w.acc[0].powi(2) + w.acc[1].powi(2) + w.acc[2].powi(2)).sqrt().max(1e-3);
            let da = [g.ax - 1.0 - w.acc[0], g.ay - 1.0 - w.acc[1], g.az - 1.0 - w.acc[2]];
            let e = (da[0] * da[0] + da[1] * da[1] + da[2] * da[2]).sqrt() / scale;
            let ep = (g.phi - 1.0 - w.phi).abs() / w.phi.abs().max(1e-3);
            if !(e < 1e-2 && ep < 1e-2) {
                return Err(format!("{what}: particle {k}: acceleration error {e:e}, potential error {ep:e}").into());
            }
        }
    }
    Ok(())
}

/// A node array far too small at first: the build notices, grows it and gives the
/// answer a roomy one gives.
fn grows_its_node_array() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<f32>(5000, 2);
    let params = Params::softened(0.01f32);
    let settings = TreeSettings { leaf_size: 2, ..TreeSettings::new(0.5) };
    let roomy = forces(&mut gpu, &mut DeviceTree::new(), &ps, &settings, &params)?;
    let mut small = DeviceTree::with_node_capacity(8);
    let grown = forces(&mut gpu, &mut small, &ps, &settings, &params)?;
    if grown != roomy {
        return Err("a tree grown from 8 nodes differs from one built in room".into());
    }
    Ok(())
}

/// A tree's later forces walk once (their lists placed with atomics) and give exactly
/// the first force's answer, far cells (local expansions, on by default) included; lists
/// that outgrow the first walk's sizes (a smaller theta) fall back to two passes, and the
/// answer is a fresh tree's.
fn one_pass_walks_match_two() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<f32>(30_000, 4);
    let params = with_potential(Params::softened(0.01f32));
    let set = gpu.upload(&ps).map_err(err)?;
    let mut tree = DeviceTree::new();
    let mut force = |tree: &mut DeviceTree<f32>, theta: f64| -> Result<(Vec<Field<f32>>, u32, u64), Failed> {
        let mut out = gpu.zeroed_fields::<f32>(ps.len()).map_err(err)?;
        let report = gpu.tree_forces(tree, &set, &TreeSettings::new(theta), &params, &mut out).map_err(err)?;
        let mut got = vec![Field::zero(); ps.len()];
        gpu.download(&out, &mut got).map_err(err)?;
        Ok((got, report.walks, report.local_cells))
    };
    let (first, walks, far) = force(&mut tree, 0.8)?;
    let (again, walks_again, _) = force(&mut tree, 0.8)?;
    if (walks, walks_again) != (2, 1) || again != first || far == 0 {
        return Err(format!(
            "theta 0.8: walks {walks} then {walks_again}, same answer: {}, {far} far cells",
            again == first
        )
        .into());
    }
    let (fresh, _, _) = force(&mut DeviceTree::new(), 0.3)?;
    let (grown, walks, _) = force(&mut tree, 0.3)?;
    let (settled, walks_after, _) = force(&mut tree, 0.3)?;
    if (walks, walks_after) != (3, 1) || grown != fresh || settled != fresh {
        return Err(format!(
            "theta 0.3 after 0.8: walks {walks} then {walks_after}, same answers: {} {}",
            grown == fresh,
            settled == fresh
        )
        .into());
    }
    Ok(())
}

/// Lists cut into pieces (each piece its own work item and block of partial sums, added
/// in order by a run): the same lists and interactions as uncut, more items, the same
/// answer to the precision's roundoff over a sum regrouped (f32 and f64), the same
/// errors against the oracle, and the same bits from a tree's two-pass first walk, its
/// one-pass later walks and a fresh tree's first (a restored run's).
fn cut_lists<T: DeviceReal>(bound: f64) -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<T>(30_000, 4);
    let params = with_potential(Params::softened(T::from_f64(1.0 / 256.0)));
    let want = exact(&ps, &params);
    // A target's change against its field plus the median's (the sphere's centre feels
    // next to nothing, from sums as large as anywhere's).
    let mut scale: Vec<f64> = want.iter().map(|w| w.acc.iter().map(|a| a * a).sum::<f64>().sqrt()).collect();
    let mut sorted = scale.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    scale.iter_mut().for_each(|s| *s += median);
    let set = gpu.upload(&ps).map_err(err)?;
    for theta in [0.5, 1.0] {
        let settings = TreeSettings::new(theta);
        let mut force = |tree: &mut DeviceTree<T>| -> Result<(Vec<Field<T>>, nbody_cuda::TreeReport), Failed> {
            let mut out = gpu.zeroed_fields::<T>(ps.len()).map_err(err)?;
            let report = gpu.tree_forces(tree, &set, &settings, &params, &mut out).map_err(err)?;
            let mut got = vec![Field::zero(); ps.len()];
            gpu.download(&out, &mut got).map_err(err)?;
            Ok((got, report))
        };
        let (whole, plain) = force(&mut DeviceTree::with_list_cut(0, 0))?;
        let mut tree = DeviceTree::with_list_cut(300, 100);
        let (first, cut) = force(&mut tree)?;
        let (again, cut_again) = force(&mut tree)?;
        let (fresh, _) = force(&mut DeviceTree::with_list_cut(300, 100))?;
        let name = format!("{} theta {theta}", T::NAME);
        if plain.cut_lists != 0 || cut.cut_lists == 0 || cut_again.cut_lists != cut.cut_lists {
            return Err(format!(
                "{name}: runs cut {} uncut, {} then {} cut",
                plain.cut_lists, cut.cut_lists, cut_again.cut_lists
            )
            .into());
        }
        if (cut.walks, cut_again.walks) != (2, 1) || again != first || fresh != first {
            return Err(format!(
                "{name}: walks {} then {}; one-pass walk the same: {}, a fresh tree the same: {}",
                cut.walks,
                cut_again.walks,
                again == first,
                fresh == first
            )
            .into());
        }
        let same_lists = (cut.interactions, cut.cell_interactions, cut.spans, cut.longest_list)
            == (plain.interactions, plain.cell_interactions, plain.spans, plain.longest_list);
        if !same_lists || cut.items <= plain.items || cut.cell_items <= plain.cell_items || cut.longest_list <= 300 {
            return Err(format!("{name}: cut {cut:?}\nuncut {plain:?}").into());
        }
        let moved = first
            .iter()
            .zip(&whole)
            .zip(&scale)
            .map(|((p, q), s)| {
                let d = [p.ax.to_f64() - q.ax.to_f64(), p.ay.to_f64() - q.ay.to_f64(), p.az.to_f64() - q.az.to_f64()];
                (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / s
            })
            .fold(0.0, f64::max);
        let (c_rel, c_phi) = errors(&first, &want);
        let (w_rel, w_phi) = errors(&whole, &want);
        let at = |r: &[f64], q: usize| r[r.len() * q / 100];
        println!(
            "{name}: {} + {} items cut, {} + {} whole ({} runs cut), longest list {}; cut against whole {moved:.2e}; median {:.2e} / {:.2e}, 99% {:.2e} / {:.2e}, phi {c_phi:.2e} / {w_phi:.2e}",
            cut.items,
            cut.cell_items,
            plain.items,
            plain.cell_items,
            cut.cut_lists,
            cut.longest_list,
            at(&c_rel, 50),
            at(&w_rel, 50),
            at(&c_rel, 99),
            at(&w_rel, 99)
        );
        let within = |c: f64, w: f64| (c - w).abs() <= 0.01 * w + bound;
        if moved > bound
            || !within(at(&c_rel, 50), at(&w_rel, 50))
            || !within(at(&c_rel, 99), at(&w_rel, 99))
            || !within(c_phi, w_phi)
        {
            return Err(format!(
                "{name}: cut lists moved the field by {moved:e} (bound {bound:e}) or changed its errors"
            )
            .into());
        }
    }
    Ok(())
}

/// Bad settings and the spline are clear errors; nothing is written.
fn bad_input() -> Result<(), Failed> {
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let ps = vec![Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    let mut out = vec![Field::new(7.0f32, 7.0, 7.0, 7.0); 2];
    let mut tree = DeviceTree::new();
    let params = Params::softened(0.01f32);
    let cases = [
        (TreeSettings::new(0.0), params, "theta 0"),
        (TreeSettings::new(f64::NAN), params, "theta NaN"),
        (TreeSettings { leaf_size: 0, ..TreeSettings::new(0.5) }, params, "leaf size 0"),
        (TreeSettings::new(0.5).with_local(1.0), params, "local 1"),
        (TreeSettings::new(0.5).with_local(f64::NAN), params, "local NaN"),
        (TreeSettings::new(0.5), params.with_softening(nbody_core::Softening::Spline), "the spline"),
    ];
    for (settings, params, what) in cases {
        match gpu.tree_forces_host(&mut tree, &ps, &settings, &params, &mut out) {
            Err(Error::InvalidParameter { .. } | Error::Unsupported { .. }) => {}
            other => return Err(format!("{what}: expected a clear error, got {other:?}").into()),
        }
    }
    if out.iter().any(|f| *f != Field::new(7.0, 7.0, 7.0, 7.0)) {
        return Err("a refused call wrote into the output".into());
    }
    let bad = vec![Particle::new(f32::NAN, 0.0, 0.0, 1.0)];
    match gpu.tree_forces_host(&mut tree, &bad, &TreeSettings::new(0.5), &params, &mut out[..1]) {
        Err(Error::NonFinite { .. }) => Ok(()),
        other => Err(format!("a NaN position: expected NonFinite, got {other:?}").into()),
    }
}

/// Gadget's relative criterion after a geometric force: the 99th-percentile error
/// within alpha / 2 and falling with alpha; without an earlier force, the geometric
/// test bit for bit; a bad alpha refused.
fn relative_criterion() -> Result<(), Failed> {
    use nbody_core::cell::Criterion;
    let mut gpu = CudaExecutor::new().map_err(err)?;
    let (ps, _) = nbody_integrators::ics::plummer::<f32>(20_000, 5);
    let params = with_potential(Params::softened(1.0 / 256.0));
    let want = exact(&ps, &params);
    let mut tree = DeviceTree::new();
    let geometric = TreeSettings::new(0.5);
    let first = forces(&mut gpu, &mut tree, &ps, &geometric, &params)?;
    let set = gpu.upload(&ps).map_err(err)?;
    let previous = gpu.upload_fields(&first).map_err(err)?;
    let mut last = f64::INFINITY;
    for alpha in [0.005, 0.001] {
        let settings = geometric.with_criterion(Criterion::Relative { alpha });
        if forces(&mut gpu, &mut tree, &ps, &settings, &params)? != first {
            return Err("the relative criterion without an earlier force is not the geometric test".into());
        }
        let mut out = gpu.zeroed_fields::<f32>(ps.len()).map_err(err)?;
        let r = gpu.tree_forces_after(&mut tree, &set, &previous, &settings, &params, &mut out).map_err(err)?;
        let mut got = vec![Field::zero(); ps.len()];
        gpu.download(&out, &mut got).map_err(err)?;
        let (rel, _) = errors(&got, &want);
        let (median, p99) = (rel[rel.len() / 2], rel[rel.len() * 99 / 100]);
        println!(
            "device tree relative alpha {alpha}: median {median:.2e}, 99% {p99:.2e}, {} + {} cell interactions",
            r.interactions, r.cell_interactions
        );
        if p99 > 0.5 * alpha || p99 >= last {
            return Err(format!("alpha {alpha}: 99th percentile {p99:e} (the larger alpha gave {last:e})").into());
        }
        last = p99;
    }
    let bad = geometric.with_criterion(Criterion::Relative { alpha: -1.0 });
    let mut out = gpu.zeroed_fields::<f32>(ps.len()).map_err(err)?;
    match gpu.tree_forces_after(&mut tree, &set, &previous, &bad, &params, &mut out) {
        Err(Error::InvalidParameter { name: "alpha", .. }) => Ok(()),
        other => Err(format!("alpha -1: expected InvalidParameter, got {other:?}").into()),
    }
}

/// A tree leapfrog saved (particles, velocities, field) and put back on a fresh system
/// continues bit for bit, under either criterion, whether the copy lives on the same
/// executor, on a second executor beside the first, or on one opened after the first
/// was dropped (what loading a checkpoint in the same process does).
fn leapfrog_restores_bit_for_bit() -> Result<(), Failed> {
    use nbody_core::Velocity;
    use nbody_core::cell::Criterion;
    use nbody_core::resident::Resident;
    let (p, v) = nbody_integrators::ics::plummer::<f32>(3000, 9);
    let params = Params::softened(1.0f32 / 64.0).with_overlap_identical();
    let dt = 1.0 / 128.0;
    for criterion in [Criterion::Geometric, Criterion::Relative { alpha: 0.002 }] {
        let settings = TreeSettings::new(0.6).with_criterion(criterion);
        let mut gpu = CudaExecutor::new().map_err(err)?;
        let mut sys = gpu.upload_tree_system(&p, &v, settings).map_err(err)?;
        for _ in 0..3 {
            gpu.leapfrog_step(&mut sys, &params, dt).map_err(err)?;
        }
        let (mut pos, mut vel) = (vec![Particle::default(); p.len()], vec![Velocity::default(); p.len()]);
        gpu.download_state(&sys, &mut pos, &mut vel).map_err(err)?;
        let mut field = vec![Field::zero(); p.len()];
        gpu.download_field(&mut sys, &params, &mut field).map_err(err)?;
        let time = sys.time;
        // The copy's steps, then the original's: positions after `steps` more steps.
        let resume = |gpu: &mut CudaExecutor| -> Result<Vec<Particle<f32>>, Failed> {
            let mut copy = gpu.upload_tree_system(&pos, &vel, settings).map_err(err)?;
            copy.time = time;
            gpu.restore_tree_field(&mut copy, &field).map_err(err)?;
            for _ in 0..3 {
                gpu.leapfrog_step(&mut copy, &params, dt).map_err(err)?;
            }
            let (mut q, mut w) = (vec![Particle::default(); p.len()], vec![Velocity::default(); p.len()]);
            gpu.download_state(&copy, &mut q, &mut w).map_err(err)?;
            Ok(q)
        };
        let same_executor = resume(&mut gpu)?;
        let mut second = CudaExecutor::new().map_err(err)?;
        let beside = resume(&mut second)?;
        for _ in 0..3 {
            gpu.leapfrog_step(&mut sys, &params, dt).map_err(err)?;
        }
        let mut want = vec![Particle::default(); p.len()];
        gpu.download_state(&sys, &mut want, &mut vel.clone()).map_err(err)?;
        drop((sys, gpu));
        let after_drop = resume(&mut second)?;
        for (name, got) in [("same executor", same_executor), ("second executor", beside), ("after a drop", after_drop)]
        {
            if got != want {
                return Err(format!("{criterion:?}, {name}: the restored run left the saved one").into());
            }
        }
    }
    Ok(())
}

/// A named check.
type Check = (&'static str, fn() -> Result<(), Failed>);

/// The device tree's checks, named for the suite.
pub(crate) fn checks() -> Vec<Check> {
    vec![
        ("device_tree_f32_is_direct_summation_when_nothing_is_accepted", || {
            exact_when_nothing_is_accepted::<f32>(2e-5)
        }),
        ("device_tree_f64_is_direct_summation_when_nothing_is_accepted", || {
            exact_when_nothing_is_accepted::<f64>(1e-12)
        }),
        ("device_tree_quadrupole_cells_at_theta_half", accurate_at_half),
        ("device_tree_f32_local_expansions_keep_the_error", local_expansions::<f32>),
        ("device_tree_f64_local_expansions_keep_the_error", local_expansions::<f64>),
        ("device_tree_f32_super_groups_keep_the_error", super_groups::<f32>),
        ("device_tree_f64_super_groups_keep_the_error", super_groups::<f64>),
        ("device_tree_degenerate_inputs", degenerate_inputs),
        ("device_tree_grows_its_node_array", grows_its_node_array),
        ("device_tree_one_pass_walks_match_two", one_pass_walks_match_two),
        ("device_tree_f32_cut_lists_are_the_whole_lists", || cut_lists::<f32>(2e-5)),
        ("device_tree_f64_cut_lists_are_the_whole_lists", || cut_lists::<f64>(1e-12)),
        ("device_tree_bad_input_is_a_clear_error", bad_input),
        ("device_tree_relative_criterion", relative_criterion),
        ("device_tree_leapfrog_restores_bit_for_bit", leapfrog_restores_bit_for_bit),
    ]
}
