//! Conformance check of the snap call (`Executor::accelerations_snap`, sixth-order
//! Hermite) against an f64 recomputation that skips each target's own pair by index.

use crate::r#gen::{Case, cases};
use crate::{Path, compare, tolerance};
use nbody_core::oracle::{self, Exact};
use nbody_core::{Executor, Field, Jerk, Kinematics, Real};

/// Accelerations for a case's bodies, derived from their velocities so that a shared
/// particle has one acceleration (as it has one velocity).
fn accelerations<T: Real>(vel: &[nbody_core::Velocity<T>]) -> Vec<Field<T>> {
    vel.iter().map(|v| Field::new(v.vy, v.vz, v.vx, T::zero())).collect()
}

/// Jerk and snap in f64 by the pair formulas, own pairs skipped, with per-target bounds
/// (sums of the magnitudes of each pair's terms).
fn exact_snap(c: &Case, eps: f64) -> Vec<([f64; 3], f64, [f64; 3], f64)> {
    let (tv, sv) = c.velocities::<f64>();
    let (ta, sa) = (accelerations(&tv), accelerations(&sv));
    let (t0, s0, len) = c.overlap.resolve(c.targets.len());
    let norm = |a: [f64; 3]| (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    c.targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (mut j, mut jb, mut s, mut sb) = ([0.0; 3], 0.0, [0.0; 3], 0.0);
            for (k, src) in c.sources.iter().enumerate() {
                if i >= t0 && i < t0 + len && k == s0 + i - t0 {
                    continue;
                }
                let d: [f64; 3] = core::array::from_fn(|q| src[q] - t[q]);
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps * eps;
                if r2 == 0.0 {
                    continue; // masked (eps = 0): contributes nothing
                }
                let dv = [sv[k].vx - tv[i].vx, sv[k].vy - tv[i].vy, sv[k].vz - tv[i].vz];
                let da = [sa[k].ax - ta[i].ax, sa[k].ay - ta[i].ay, sa[k].az - ta[i].az];
                let m3 = src[3] / (r2 * r2.sqrt());
                let dot = |a: &[f64; 3], b: &[f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
                let alpha = dot(&d, &dv) / r2;
                let beta = (dot(&dv, &dv) + dot(&d, &da)) / r2 + alpha * alpha;
                let a0: [f64; 3] = core::array::from_fn(|q| m3 * d[q]);
                let a1: [f64; 3] = core::array::from_fn(|q| m3 * dv[q] - 3.0 * alpha * a0[q]);
                let a2: [f64; 3] = core::array::from_fn(|q| m3 * da[q] - 6.0 * alpha * a1[q] - 3.0 * beta * a0[q]);
                for q in 0..3 {
                    j[q] += a1[q];
                    s[q] += a2[q];
                }
                jb += m3 * norm(dv) + 3.0 * alpha.abs() * norm(a0);
                sb += m3 * norm(da) + 6.0 * alpha.abs() * norm(a1) + 3.0 * beta.abs() * norm(a0);
            }
            (j.map(|x| c.g * x), c.g * jb, s.map(|x| c.g * x), c.g * sb)
        })
        .collect()
}

/// Acceleration, jerk and snap against the oracle on random calls (every overlap mode,
/// both softening paths, accumulation into prior outputs).
pub(crate) fn snap_matches_oracle<T: Real, E: Executor<T>>(e: &mut E, u: f64) -> Result<(), String> {
    crate::checks::prop(e, cases(24, 48), |e, c: Case| {
        let (t, s, p, before) = (c.targets::<T>(), c.sources::<T>(), c.params::<T>(), c.before::<T>());
        let (tv, sv) = c.velocities::<T>();
        let (ta, sa) = (accelerations(&tv), accelerations(&sv));
        let mut out = before.clone();
        let (mut jerk, mut snap) = (vec![Jerk::zero(); t.len()], vec![Jerk::zero(); t.len()]);
        let (tk, sk) = (Kinematics { pos: &t, vel: &tv, acc: &ta }, Kinematics { pos: &s, vel: &sv, acc: &sa });
        e.accelerations_snap(tk, sk, &p, &mut out, &mut jerk, &mut snap)
            .map_err(|err| format!("{} failed: {err}", e.name()))?;
        let mut ex = vec![Exact::default(); t.len()];
        oracle::field(&t, None, &s, None, &p, &mut ex).map_err(|err| err.to_string())?;
        compare(&out, &before, &ex, Path::Pairs, p.potential, u)?;
        let tol = tolerance(u, Path::Snap);
        for (i, (want_j, jb, want_s, sb)) in exact_snap(&c, p.eps.to_f64()).into_iter().enumerate() {
            for k in 0..3 {
                let (gj, gs) = (jerk[i].components()[k].to_f64(), snap[i].components()[k].to_f64());
                if !((gj - want_j[k]).abs() <= tol * jb) || !((gs - want_s[k]).abs() <= tol * sb) {
                    return Err(format!(
                        "target {i}, [{k}]: jerk {gj:e} (want {:e}), snap {gs:e} (want {:e})",
                        want_j[k], want_s[k]
                    ));
                }
            }
        }
        Ok(())
    })
}
