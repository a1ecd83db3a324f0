//! Random cases for the property checks.
//!
//! Coordinates are multiples of 2⁻¹⁶ in [−1, 1] and masses multiples of 2⁻¹⁰, so they
//! are exact in f32 and small integer shifts of them stay exact: invariance checks then
//! compare truly identical configurations, and any difference is the executor's.

use nbody_core::{Field, Overlap, Params, Particle, Real, Velocity};
use proptest::collection::vec;
use proptest::prelude::*;

/// One random call: targets, sources, parameters and the output's prior contents.
#[derive(Clone, Debug)]
pub struct Case {
    /// Target rows `[x, y, z, m]`.
    pub targets: Vec<[f64; 4]>,
    /// Source rows `[x, y, z, m]`.
    pub sources: Vec<[f64; 4]>,
    /// Softening (0 in about a quarter of the cases).
    pub eps: f64,
    /// G.
    pub g: f64,
    /// Potential requested.
    pub potential: bool,
    /// Which targets are sources.
    pub overlap: Overlap,
    /// What the output holds before the call (calls accumulate).
    pub before: Vec<[f64; 4]>,
    /// Velocities of targets then sources, for the jerk checks.
    pub velocities: Vec<[f64; 3]>,
}

/// A coordinate: a multiple of 2⁻¹⁶ in [−1, 1].
pub(crate) fn coordinate() -> impl Strategy<Value = f64> {
    (-65_536i32..=65_536).prop_map(|k| k as f64 / 65_536.0)
}

/// A mass: zero in one case of eight, else a multiple of 2⁻¹⁰ in (0, 1].
pub(crate) fn mass() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 7 => (1u32..=1024).prop_map(|k| k as f64 / 1024.0)]
}

/// A particle row.
pub(crate) fn row() -> impl Strategy<Value = [f64; 4]> {
    (coordinate(), coordinate(), coordinate(), mass()).prop_map(|(x, y, z, m)| [x, y, z, m])
}

/// Softening: 0 (masked path) or a multiple of 1/256 up to 1/4.
pub(crate) fn softening() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 3 => (1u32..=64).prop_map(|k| k as f64 / 256.0)]
}

/// Random calls with up to `max_targets` targets and `max_sources` further sources.
pub(crate) fn cases(max_targets: usize, max_sources: usize) -> impl Strategy<Value = Case> {
    (
        vec(row(), 0..=max_targets),
        vec(row(), 0..=max_sources),
        softening(),
        prop_oneof![Just(1.0), Just(0.5), Just(4.3e-3)],
        any::<bool>(),
        0u8..3,
        any::<(u32, u32, u32)>(),
        vec(-1.0f64..1.0, 0..=4 * (max_targets + max_sources)),
        vec((-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0), 2 * (max_targets + max_sources)),
    )
        .prop_map(|(targets, mut sources, eps, g, potential, mode, (a, b, c), noise, vel)| {
            let overlap = match mode {
                0 => Overlap::Disjoint,
                1 => {
                    sources = targets.clone();
                    Overlap::Identical
                }
                _ => {
                    // targets[t0..t0+len] are inserted into the sources at s0.
                    let t0 = a as usize % (targets.len() + 1);
                    let len = b as usize % (targets.len() - t0 + 1);
                    let s0 = c as usize % (sources.len() + 1);
                    let tail = sources.split_off(s0);
                    sources.extend_from_slice(&targets[t0..t0 + len]);
                    sources.extend(tail);
                    Overlap::Shared { target_start: t0, source_start: s0, len }
                }
            };
            let before = (0..targets.len())
                .map(|i| core::array::from_fn(|k| noise.get(4 * i + k).copied().unwrap_or(0.25)))
                .collect();
            let velocities = vel.into_iter().map(|(x, y, z)| [x, y, z]).collect();
            Case { targets, sources, eps, g, potential, overlap, before, velocities }
        })
}

impl Case {
    /// The parameters in precision `T`.
    pub fn params<T: Real>(&self) -> Params<T> {
        Params {
            g: T::from_f64(self.g),
            eps: T::from_f64(self.eps),
            potential: self.potential,
            overlap: self.overlap,
            softening: Default::default(),
        }
    }

    /// Targets in precision `T`.
    pub fn targets<T: Real>(&self) -> Vec<Particle<T>> {
        crate::particles(&self.targets)
    }

    /// Sources in precision `T`.
    pub fn sources<T: Real>(&self) -> Vec<Particle<T>> {
        crate::particles(&self.sources)
    }

    /// Target and source velocities in precision `T`; a source that is a target (by the
    /// overlap) moves with that target's velocity, since it is the same particle.
    pub fn velocities<T: Real>(&self) -> (Vec<Velocity<T>>, Vec<Velocity<T>>) {
        let v = |r: &[f64; 3]| Velocity::new(T::from_f64(r[0]), T::from_f64(r[1]), T::from_f64(r[2]));
        let n = self.targets.len();
        let tv: Vec<Velocity<T>> = self.velocities[..n].iter().map(v).collect();
        let mut sv: Vec<Velocity<T>> = self.velocities[n..n + self.sources.len()].iter().map(v).collect();
        let (t0, s0, len) = self.overlap.resolve(n);
        sv[s0..s0 + len].copy_from_slice(&tv[t0..t0 + len]);
        (tv, sv)
    }

    /// The output's prior contents in precision `T`.
    pub fn before<T: Real>(&self) -> Vec<Field<T>> {
        self.before
            .iter()
            .map(|r| Field::new(T::from_f64(r[0]), T::from_f64(r[1]), T::from_f64(r[2]), T::from_f64(r[3])))
            .collect()
    }
}
