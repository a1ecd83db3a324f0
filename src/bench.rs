//! Measuring helpers shared by the benchmarks and `nbody bench`.

use nbody_core::{Field, Particle, Real};
use std::time::Instant;

/// Median seconds of `f` over enough runs to fill about `budget` seconds (at least 3,
/// at most 51), after one warm-up run.
///
/// ```
/// let t = nbody::bench::median_time(0.0, || { std::hint::black_box(1 + 1); });
/// assert!(t >= 0.0);
/// ```
pub fn median_time(budget: f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed().as_secs_f64() < budget && times.len() < 51) {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64());
    }
    median(times)
}

/// Median seconds of `reps` timed runs of `f` (at least one), after one warm-up run:
/// the timing every benchmark binary shares (CUDA kernels alone use events instead).
///
/// ```
/// let t = nbody::bench::median_of(3, || { std::hint::black_box(1 + 1); });
/// assert!(t >= 0.0);
/// ```
pub fn median_of(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// The median of `values` (the upper one of an even count); NaN when empty.
///
/// ```
/// assert_eq!(nbody::bench::median(vec![3.0, 1.0, 2.0]), 2.0);
/// ```
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The naive baseline every benchmark shows beside the executors: the loop anyone would
/// write first (targets = sources = `ps`, acceleration only, `eps2` added to r²).
///
/// ```
/// use nbody::{Field, Particle};
/// let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
/// let mut out = [Field::zero(); 2];
/// nbody::bench::scalar_loop(&ps, 0.0, &mut out);
/// assert_eq!(out[0].ax, 1.0);
/// ```
#[inline(never)]
pub fn scalar_loop<T: Real>(ps: &[Particle<T>], eps2: T, out: &mut [Field<T>]) {
    for (i, o) in out.iter_mut().enumerate() {
        let (mut ax, mut ay, mut az) = (T::zero(), T::zero(), T::zero());
        for p in ps {
            let (dx, dy, dz) = (p.x - ps[i].x, p.y - ps[i].y, p.z - ps[i].z);
            let r2 = dx * dx + dy * dy + dz * dz + eps2;
            if r2 == T::zero() {
                continue;
            }
            let rinv = T::one() / r2.sqrt();
            let s = p.m * rinv * rinv * rinv;
            ax = ax + dx * s;
            ay = ay + dy * s;
            az = az + dz * s;
        }
        *o = Field::new(ax, ay, az, T::zero());
    }
}
