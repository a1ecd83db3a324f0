//! Initial conditions in standard N-body units (G = M = 1, E = −1/4), reproducible from
//! a seed on every platform (ChaCha8 streams).

use nbody_core::{Particle, Real, Velocity};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A Plummer sphere of `n` equal-mass particles, sampled as in Aarseth, Hénon & Wielen
/// (1974), scaled to standard units (length scale 3π/16) and moved to the centre of mass
/// frame. Returns positions with masses, and velocities.
///
/// ```
/// let (pos, _) = nbody_integrators::ics::plummer::<f32>(64, 7);
/// let mass: f32 = pos.iter().map(|p| p.m).sum();
/// assert!((mass - 1.0).abs() < 1e-6);
/// ```
pub fn plummer<T: Real>(n: usize, seed: u64) -> (Vec<Particle<T>>, Vec<Velocity<T>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let m = 1.0 / n as f64;
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    let length_scale = 3.0 * core::f64::consts::PI / 16.0;
    let velocity_scale = 1.0 / length_scale.sqrt();
    for _ in 0..n {
        // Radius from the inverted cumulative mass; cut the far tail (mass fraction
        // above 0.999) that would put a few particles hundreds of units out.
        let x1: f64 = rng.gen_range(1e-10..0.999);
        let r = 1.0 / (x1.powf(-2.0 / 3.0) - 1.0).sqrt();
        let p = isotropic(&mut rng, r);
        // Speed by von Neumann rejection from g(q) = q² (1 − q²)^{7/2} (max < 0.1).
        let q = loop {
            let (q, y): (f64, f64) = (rng.r#gen(), rng.r#gen::<f64>() * 0.1);
            if y < q * q * (1.0 - q * q).powf(3.5) {
                break q;
            }
        };
        let v = isotropic(&mut rng, q * core::f64::consts::SQRT_2 * (1.0 + r * r).powf(-0.25));
        pos.push([p[0] * length_scale, p[1] * length_scale, p[2] * length_scale]);
        vel.push([v[0] * velocity_scale, v[1] * velocity_scale, v[2] * velocity_scale]);
    }
    let (cp, cv) = (mean(&pos), mean(&vel));
    let pos = pos.iter().map(|p| Particle::new(c(p[0] - cp[0]), c(p[1] - cp[1]), c(p[2] - cp[2]), c(m))).collect();
    let vel = vel.iter().map(|v| Velocity::new(c(v[0] - cv[0]), c(v[1] - cv[1]), c(v[2] - cv[2]))).collect();
    (pos, vel)
}

/// A uniform sphere of radius 1 and total mass 1 at rest (a cold collapse), seeded.
///
/// ```
/// let (pos, vel) = nbody_integrators::ics::cold_sphere::<f64>(100, 3);
/// assert!(pos.iter().all(|p| p.x * p.x + p.y * p.y + p.z * p.z <= 1.0));
/// assert!(vel.iter().all(|v| v.vx == 0.0));
/// ```
pub fn cold_sphere<T: Real>(n: usize, seed: u64) -> (Vec<Particle<T>>, Vec<Velocity<T>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pos = (0..n)
        .map(|_| {
            let r: f64 = rng.r#gen::<f64>().cbrt();
            let p = isotropic(&mut rng, r);
            Particle::new(c(p[0]), c(p[1]), c(p[2]), c(1.0 / n as f64))
        })
        .collect();
    (pos, vec![Velocity::new(T::zero(), T::zero(), T::zero()); n])
}

/// Two bodies of masses `m1`, `m2` (G = 1) on a Kepler orbit of semi-major axis 1 and
/// eccentricity `e`, starting at apocentre, in the centre-of-mass frame. The period is
/// `2π / sqrt(m1 + m2)`.
///
/// ```
/// let (pos, _) = nbody_integrators::ics::kepler::<f64>(0.5, 0.5, 0.5);
/// assert!(((pos[1].x - pos[0].x) - 1.5).abs() < 1e-15); // apocentre a (1 + e)
/// ```
pub fn kepler<T: Real>(e: f64, m1: f64, m2: f64) -> (Vec<Particle<T>>, Vec<Velocity<T>>) {
    let m = m1 + m2;
    let r = 1.0 + e;
    let v = (m * (1.0 - e) / (1.0 + e)).sqrt();
    let (f1, f2) = (m2 / m, m1 / m);
    (
        vec![
            Particle::new(c(-f1 * r), T::zero(), T::zero(), c(m1)),
            Particle::new(c(f2 * r), T::zero(), T::zero(), c(m2)),
        ],
        vec![Velocity::new(T::zero(), c(-f1 * v), T::zero()), Velocity::new(T::zero(), c(f2 * v), T::zero())],
    )
}

/// Period of the figure-eight orbit of [`figure_eight`].
pub const FIGURE_EIGHT_PERIOD: f64 = 6.325_913_985;

/// The figure-eight three-body choreography (Chenciner & Montgomery 2000; initial
/// conditions of Simó), unit masses, G = 1.
///
/// ```
/// let (pos, vel) = nbody_integrators::ics::figure_eight::<f64>();
/// assert_eq!(pos.len(), 3);
/// assert!(vel.iter().map(|v| v.vx).sum::<f64>().abs() < 1e-15);
/// ```
pub fn figure_eight<T: Real>() -> (Vec<Particle<T>>, Vec<Velocity<T>>) {
    let (x, y) = (0.970_004_36, -0.243_087_53);
    let (vx, vy) = (-0.932_407_37, -0.864_731_46);
    (
        vec![
            Particle::new(c(x), c(y), T::zero(), T::one()),
            Particle::new(c(-x), c(-y), T::zero(), T::one()),
            Particle::new(T::zero(), T::zero(), T::zero(), T::one()),
        ],
        vec![
            Velocity::new(c(-vx / 2.0), c(-vy / 2.0), T::zero()),
            Velocity::new(c(-vx / 2.0), c(-vy / 2.0), T::zero()),
            Velocity::new(c(vx), c(vy), T::zero()),
        ],
    )
}

fn c<T: Real>(x: f64) -> T {
    T::from_f64(x)
}

fn mean(v: &[[f64; 3]]) -> [f64; 3] {
    let mut s = [0.0; 3];
    for p in v {
        for k in 0..3 {
            s[k] += p[k];
        }
    }
    s.map(|x| x / v.len().max(1) as f64)
}

/// A vector of length `r` in a uniformly random direction.
fn isotropic(rng: &mut ChaCha8Rng, r: f64) -> [f64; 3] {
    let cos_theta: f64 = rng.gen_range(-1.0..1.0);
    let sin_theta = (1.0 - cos_theta * cos_theta).sqrt();
    let phi: f64 = rng.gen_range(0.0..core::f64::consts::TAU);
    [r * sin_theta * phi.cos(), r * sin_theta * phi.sin(), r * cos_theta]
}

/// The bodies reordered along a Morton (Z-order) curve ([`nbody_core::layout::morton_order`]),
/// velocities alongside: the spatial order a tree code keeps, in which blocks of
/// consecutive bodies are compact.
///
/// ```
/// let (p, v) = nbody_integrators::ics::plummer::<f64>(1000, 1);
/// let (sp, sv) = nbody_integrators::ics::morton_sorted(&p, &v);
/// let k = p.iter().position(|q| *q == sp[0]).unwrap();
/// assert_eq!((sp.len(), sv[0]), (1000, v[k]));
/// ```
pub fn morton_sorted<T: Real>(pos: &[Particle<T>], vel: &[Velocity<T>]) -> (Vec<Particle<T>>, Vec<Velocity<T>>) {
    let mut order = Vec::new();
    nbody_core::layout::morton_order(pos, &mut order);
    (nbody_core::layout::gather(pos, &order), nbody_core::layout::gather(vel, &order))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plummer_is_reproducible_and_in_standard_units() {
        let (a, va) = plummer::<f64>(4096, 1);
        let (b, _) = plummer::<f64>(4096, 1);
        assert_eq!(a, b);
        // Kinetic energy of a Plummer sphere in standard units is 1/4 (virial: T = -E).
        let kinetic: f64 = a.iter().zip(&va).map(|(p, v)| 0.5 * p.m * (v.vx * v.vx + v.vy * v.vy + v.vz * v.vz)).sum();
        assert!((kinetic - 0.25).abs() < 0.02, "kinetic energy {kinetic}");
        // Half-mass radius of the standard Plummer sphere is about 0.77.
        let mut r: Vec<f64> = a.iter().map(|p| (p.x * p.x + p.y * p.y + p.z * p.z).sqrt()).collect();
        r.sort_by(f64::total_cmp);
        assert!((r[2048] - 0.769).abs() < 0.05, "half-mass radius {}", r[2048]);
    }
}
