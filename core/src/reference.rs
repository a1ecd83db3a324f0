//! The scalar reference executor: the kernel of [`crate::kernel`] in plain loops.

use crate::calls::{DirectCall, JerkCall};
use crate::kernel::{self, Softened};
use crate::{Error, Executor, Field, Jerk, Params, Particle, Real};

/// The scalar reference executor: plain loops over [`kernel::Softened::pair`] (both
/// softenings), computing in the caller's precision. Slow and obviously right; every faster executor is tested
/// against it (and against [`crate::oracle`], its f64 twin).
///
/// ```
/// use nbody_core::{Executor, Field, Params, Particle, Reference};
/// let targets = [Particle::new(0.0f32, 0.0, 0.0, 0.0)];
/// let sources = [Particle::new(0.0f32, 3.0, 4.0, 25.0)];
/// let mut out = [Field::zero()];
/// Reference.accelerations(&targets, &sources, &Params::softened(0.0), &mut out).unwrap();
/// assert_eq!(out[0].acceleration(), [0.0, 0.6, 0.8]); // 25 / 5² along (0, 3, 4) / 5
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl<T: Real> Executor<T> for Reference {
    fn name(&self) -> &'static str {
        "reference"
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        let k = Softened::of(params);
        for (i, (t, o)) in targets.iter().zip(out.iter_mut()).enumerate() {
            let mut sums = Field::zero();
            for s in sources {
                k.pair(t.position(), s, &mut sums);
            }
            subtract_self(params, sources, i, &mut sums);
            kernel::finish(params.g, &sums, params.potential, o);
        }
        Ok(())
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        let k = Softened::of(params);
        for i in 0..targets.pos.len() {
            let (xi, vi) = (targets.pos[i].position(), targets.vel[i].components());
            let (mut sums, mut jsums) = (Field::zero(), Jerk::zero());
            for (s, v) in sources.pos.iter().zip(sources.vel) {
                k.pair_jerk((xi, vi), s, v, &mut sums, &mut jsums);
            }
            subtract_self(params, sources.pos, i, &mut sums);
            kernel::finish(params.g, &sums, params.potential, &mut out[i]);
            kernel::finish_jerk(params.g, &jsums, &mut jerk[i]);
        }
        Ok(())
    }
}

/// Removes target `i`'s pair with itself from `sums.phi` when it is also a source and
/// the softened path counted that pair.
#[inline]
pub(crate) fn subtract_self<T: Real>(params: &Params<T>, sources: &[Particle<T>], i: usize, sums: &mut Field<T>) {
    if let Some(k) = params.overlap.source_of(i) {
        sums.phi = sums.phi + Softened::of(params).self_potential(sources[k].m);
    }
}
