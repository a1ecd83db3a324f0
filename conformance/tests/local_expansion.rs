//! The local expansion (`nbody_core::local`) against the cell expansion it translates:
//! for cells of random particles at random distances and targets at random offsets from
//! the group's centre, the acceleration's error is within `6 (|s| / D)³` of the cell's
//! field at the offset and at a half and a quarter of it (the potential's within
//! `6 (|s| / D)⁴`); for a lone mass (a monopole) within `6 (|s| / D)⁴` at the same three
//! offsets (the potential's within `6 (|s| / D)⁵`).

use nbody_core::cell::{Cell, cell};
use nbody_core::local::{Local, Series};
use nbody_core::{Field, Particle};
use proptest::prelude::*;

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn unit(v: [f64; 3]) -> [f64; 3] {
    let n = norm(v).max(1e-12);
    v.map(|c| c / n)
}

/// Where a test puts the group: its centre `distance` from the cell's centre of mass
/// (towards `towards`), and the unit direction (`offset`) its target lies in from there.
fn placed(c: &Cell<f64>, towards: (f64, f64, f64), offset: (f64, f64, f64), distance: f64) -> ([f64; 3], [f64; 3]) {
    let u = unit([towards.0, towards.1, towards.2]);
    ([c.x + distance * u[0], c.y + distance * u[1], c.z + distance * u[2]], unit([offset.0, offset.1, offset.2]))
}

/// The point `r` from `centre` along `s`.
fn along(centre: [f64; 3], s: [f64; 3], r: f64) -> [f64; 3] {
    core::array::from_fn(|k| centre[k] + r * s[k])
}

/// Checks the series' acceleration error against `6 (|s| / D)^order` at the offset
/// `ratio` (of `D`) and at a half and a quarter of it: an error that falls at a lower
/// order may pass the bound at one offset, not at a quarter of it (no halving ratio:
/// errors of two orders may partly cancel at one offset).
fn within_at_three_offsets(
    l: &Local,
    c: &Cell<f64>,
    eps2: f64,
    (centre, s, distance): ([f64; 3], [f64; 3], f64),
    ratio: f64,
    order: i32,
) -> Result<(), TestCaseError> {
    for shrink in [1.0, 0.5, 0.25] {
        let (got, _) = errors(l, &[*c], eps2, along(centre, s, ratio * shrink * distance));
        let bound = 6.0 * (ratio * shrink).powi(order);
        prop_assert!(got <= bound + 1e-13, "acceleration error {got:e} at |s|/D = {}", ratio * shrink);
    }
    Ok(())
}

/// The relative acceleration and potential errors of the series at `x` against the
/// cells' own field there.
fn errors(l: &Local, cells: &[Cell<f64>], eps2: f64, x: [f64; 3]) -> (f64, f64) {
    let mut exact = Field::zero();
    for c in cells {
        cell(x, c, eps2, &mut exact);
    }
    let got = l.field_at(x);
    let da = norm([got.ax - exact.ax, got.ay - exact.ay, got.az - exact.az]) / norm(exact.acceleration());
    (da, (got.phi - exact.phi).abs() / exact.phi.abs())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_series_converges_at_third_order(
        particles in prop::collection::vec((-0.5f64..0.5, -0.5f64..0.5, -0.5f64..0.5, 0.01f64..1.0), 1..40),
        towards in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        offset in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        distance in 4.0f64..40.0,
        ratio in 0.02f64..0.2,
        soft in prop::bool::ANY,
    ) {
        let ps: Vec<Particle<f64>> = particles.iter().map(|&(x, y, z, m)| Particle::new(x, y, z, m)).collect();
        let c = Cell::from_particles(&ps);
        let (centre, s) = placed(&c, towards, offset, distance);
        let eps2 = if soft { 0.01 } else { 0.0 };
        let mut l = Local::at(centre);
        l.add_cell(&c, eps2);
        let (_, dphi) = errors(&l, &[c], eps2, along(centre, s, ratio * distance));
        prop_assert!(dphi <= 6.0 * ratio.powi(4), "potential error {dphi:e} at |s|/D = {ratio}");
        within_at_three_offsets(&l, &c, eps2, (centre, s, distance), ratio, 3)?;
    }

    #[test]
    fn a_monopole_converges_at_fourth_order(
        towards in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        offset in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        mass in 0.01f64..10.0,
        distance in 1.0f64..40.0,
        ratio in 0.02f64..0.2,
        soft in prop::bool::ANY,
    ) {
        let c = Cell::from_particles(&[Particle::new(0.3, -0.2, 0.1, mass)]);
        let (centre, s) = placed(&c, towards, offset, distance);
        let eps2 = if soft { 0.01 * distance * distance } else { 0.0 };
        let mut l = Local::at(centre);
        l.add_cell(&c, eps2);
        let (_, dphi) = errors(&l, &[c], eps2, along(centre, s, ratio * distance));
        prop_assert!(dphi <= 6.0 * ratio.powi(5), "potential error {dphi:e} at |s|/D = {ratio}");
        within_at_three_offsets(&l, &c, eps2, (centre, s, distance), ratio, 4)?;
    }

    /// The compact series (closed-form derivatives, the device tree's formulas) is the
    /// oracle's to rounding, in f64, and in f32 to f32's.
    #[test]
    fn the_compact_series_is_the_oracles(
        particles in prop::collection::vec((-0.5f64..0.5, -0.5f64..0.5, -0.5f64..0.5, 0.01f64..1.0), 1..20),
        towards in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        offset in (-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
        distance in 2.0f64..40.0,
        ratio in 0.0f64..0.3,
        eps2 in prop::sample::select(vec![0.0, 1e-4, 0.05]),
    ) {
        let ps: Vec<Particle<f64>> = particles.iter().map(|&(x, y, z, m)| Particle::new(x, y, z, m)).collect();
        let c = Cell::from_particles(&ps);
        let (centre, s) = placed(&c, towards, offset, distance);
        let (mut oracle, mut fast) = (Local::at(centre), Series::at(centre));
        oracle.add_cell(&c, eps2);
        fast.add_cell(&c, eps2);
        let x = along(centre, s, ratio * distance);
        let (want, got) = (oracle.field_at(x), fast.field_at(x));
        let scale = norm(want.acceleration());
        let da = norm([got.ax - want.ax, got.ay - want.ay, got.az - want.az]) / scale;
        prop_assert!(da < 1e-12, "f64: {da:e}");
        prop_assert!((got.phi - want.phi).abs() < 1e-12 * want.phi.abs());
        let narrow = |v: [f64; 3]| v.map(|c| c as f32);
        let q = c.quadrupole().map(|v| v as f32);
        let c32 = Cell::new(c.x as f32, c.y as f32, c.z as f32, c.m as f32, q).with_spread(c.spread as f32);
        let mut fast32 = Series::at(narrow(centre));
        fast32.add_cell(&c32, eps2 as f32);
        let g32 = fast32.field_at(narrow(x));
        let da32 = norm([g32.ax as f64 - want.ax, g32.ay as f64 - want.ay, g32.az as f64 - want.az]) / scale;
        // The offsets lose f32's digits of the distances (40 times the cell's size).
        prop_assert!(da32 < 2e-4, "f32: {da32:e}");
    }
}

/// Several cells around a group add: the series of all is the sum of their fields to the
/// same order, and its error is no larger than the nearest cell's share allows.
#[test]
fn cells_around_a_group_add() {
    let cells: Vec<Cell<f64>> = (0..12)
        .map(|k| {
            let a = k as f64 * 0.7;
            let d = 8.0 + k as f64;
            Cell::new(
                d * a.cos(),
                d * a.sin(),
                (k as f64 - 6.0) * 0.9,
                1.0 + 0.1 * k as f64,
                [0.1, -0.05, 0.02, 0.2, 0.0, -0.3],
            )
        })
        .collect();
    let mut l = Local::at([0.0; 3]);
    for c in &cells {
        l.add_cell(c, 0.0);
    }
    let nearest = cells.iter().map(|c| norm([c.x, c.y, c.z])).fold(f64::INFINITY, f64::min);
    for x in [[0.3, 0.0, 0.0], [0.0, -0.4, 0.2], [0.25, 0.25, -0.25]] {
        let (da, _) = errors(&l, &cells, 0.0, x);
        assert!(da <= 6.0 * (norm(x) / nearest).powi(3), "{da:e} at {x:?}");
    }
}
