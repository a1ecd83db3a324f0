//! Local expansions: the field of far [`Cell`]s about a target group's centre, as a
//! Taylor series in the offset from it, so a group takes each far cell once (cell to
//! local) instead of once per target, and each target evaluates one series (local to
//! particle). This module is the f64 oracle of that translation (the device tree's,
//! exec-cuda's kernels/local.cuh, runs the same series): the cell's softened potential
//! (the [`cell`](crate::cell::cell) expansion: monopole, traceless quadrupole and spread)
//! differentiated exactly at the group's centre `g` up to third order, and the
//! monopole's to fourth, so the acceleration is exact to second order in the offset
//! `s = x − g`, and to third for the monopole:
//!
//! ```text
//! phi(g + s) ≈ L0 + L1·s + ½ s·L2·s + ⅙ L3[s, s, s] + (1/24) L4[s, s, s, s],   a = −∇phi
//! L_k = ∂^k phi_cell(g − c) = −M ∂^k K − ⅙ (Q + S δ)_ab ∂_ab ∂^k K   (k ≤ 3),   L4 = −M ∂⁴K,
//! K(d) = (|d|² + ε²)^(−1/2),   S the cell's spread Σ m |s|²
//! ```
//!
//! The translation's own error, relative to the cell's field, falls as `(|s| / D)⁴` for
//! the monopole of a cell at distance `D` from the centre (at most about `5 (|s| / D)⁴`,
//! its remainder along the line to the cell), and as `(|s| / D)³` for the quadrupole,
//! whose field is smaller by the cell's `(size / D)²`; the cell's expansion error,
//! `(size / D)³`, comes on top, as it does for a target taking the cell alone.
//!
//! ```
//! use nbody_core::cell::{cell, Cell};
//! use nbody_core::local::Local;
//! use nbody_core::Field;
//! let c = Cell::new(10.0f64, 0.0, 0.0, 2.0, [0.3, 0.1, 0.0, -0.2, 0.05, -0.1]);
//! let mut l = Local::at([0.0, 0.0, 0.0]);
//! l.add_cell(&c, 0.0);
//! // At the centre the series is the cell's field itself.
//! let (mut exact, got) = (Field::zero(), l.field_at([0.0; 3]));
//! cell([0.0; 3], &c, 0.0, &mut exact);
//! assert!((got.ax - exact.ax).abs() < 1e-15 && (got.phi - exact.phi).abs() < 1e-15);
//! // A tenth of the distance away, across the line to the cell: within 4 (1/10)³.
//! let (mut exact, got) = (Field::zero(), l.field_at([0.0, 1.0, 0.0]));
//! cell([0.0, 1.0, 0.0], &c, 0.0, &mut exact);
//! let norm = |f: &Field<f64>| (f.ax * f.ax + f.ay * f.ay + f.az * f.az).sqrt();
//! let diff = Field::new(got.ax - exact.ax, got.ay - exact.ay, got.az - exact.az, 0.0);
//! assert!(norm(&diff) < 4e-3 * norm(&exact));
//! ```

use crate::cell::Cell;
use crate::{Field, Real};

/// The coefficients of a local expansion about `centre`: the potential and its first,
/// second and third derivatives there, and the monopoles' fourth, as full tensors
/// (`l2[a][b]`, `l3[a][b][c]`, `l4[a][b][c][e]`, symmetric), in f64. Cells add into it
/// ([`Local::add_cell`]); targets near the centre read it ([`Local::field_at`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Local {
    /// The expansion's centre (a target group's).
    pub centre: [f64; 3],
    /// The potential at the centre.
    pub l0: f64,
    /// Its gradient.
    pub l1: [f64; 3],
    /// Its second derivatives.
    pub l2: [[f64; 3]; 3],
    /// Its third derivatives.
    pub l3: [[[f64; 3]; 3]; 3],
    /// The fourth derivatives of the cells' monopoles (the quadrupoles' would add a
    /// term smaller by the cell's `(size / D)²`).
    pub l4: [[[[f64; 3]; 3]; 3]; 3],
}

impl Local {
    /// An empty expansion (no cells) about `centre`.
    pub fn at(centre: [f64; 3]) -> Self {
        Self { centre, l0: 0.0, l1: [0.0; 3], l2: [[0.0; 3]; 3], l3: [[[0.0; 3]; 3]; 3], l4: [[[[0.0; 3]; 3]; 3]; 3] }
    }

    /// Adds cell `c` (without G), softened as [`cell`](crate::cell::cell) softens it
    /// (Plummer, `eps2`): its potential's derivatives up to the third at the centre, and
    /// its monopole's fourth.
    pub fn add_cell(&mut self, c: &Cell<f64>, eps2: f64) {
        let d = [self.centre[0] - c.x, self.centre[1] - c.y, self.centre[2] - c.z];
        let k = Derivatives::of(d, eps2);
        let q = c.quadrupole();
        // Three times the second moment, Q + S δ: the softened kernel's derivatives are
        // not traceless, so the spread acts (see the [`cell`](crate::cell) docs).
        let qab = |a: usize, b: usize| q[PAIR_LANE[a][b]] + if a == b { c.spread } else { 0.0 };
        // ⅙ (Q + S δ)_ab ∂_ab applied to the derivative tensor of order n + 2.
        let quad = |idx: &[usize]| -> f64 {
            let mut s = 0.0;
            let mut full = [0usize; 5];
            full[2..2 + idx.len()].copy_from_slice(idx);
            for a in 0..3 {
                for b in 0..3 {
                    (full[0], full[1]) = (a, b);
                    s += qab(a, b) * k.at(&full[..2 + idx.len()]);
                }
            }
            s / 6.0
        };
        self.l0 -= c.m * k.at(&[]) + quad(&[]);
        for a in 0..3 {
            self.l1[a] -= c.m * k.at(&[a]) + quad(&[a]);
            for b in 0..3 {
                self.l2[a][b] -= c.m * k.at(&[a, b]) + quad(&[a, b]);
                for e in 0..3 {
                    self.l3[a][b][e] -= c.m * k.at(&[a, b, e]) + quad(&[a, b, e]);
                    for f in 0..3 {
                        self.l4[a][b][e][f] -= c.m * k.at(&[a, b, e, f]);
                    }
                }
            }
        }
    }

    /// The series' acceleration and potential (without G) at `x`: exact at the centre,
    /// to second order in `x − centre` for the acceleration (third for the potential),
    /// one order more for the monopoles.
    pub fn field_at(&self, x: [f64; 3]) -> Field<f64> {
        let s = [x[0] - self.centre[0], x[1] - self.centre[1], x[2] - self.centre[2]];
        let mut phi = self.l0;
        let mut grad = self.l1;
        for a in 0..3 {
            phi += self.l1[a] * s[a];
            for b in 0..3 {
                phi += 0.5 * self.l2[a][b] * s[a] * s[b];
                grad[a] += self.l2[a][b] * s[b];
                for e in 0..3 {
                    phi += self.l3[a][b][e] * s[a] * s[b] * s[e] / 6.0;
                    grad[a] += 0.5 * self.l3[a][b][e] * s[b] * s[e];
                    for f in 0..3 {
                        phi += self.l4[a][b][e][f] * s[a] * s[b] * s[e] * s[f] / 24.0;
                        grad[a] += self.l4[a][b][e][f] * s[b] * s[e] * s[f] / 6.0;
                    }
                }
            }
        }
        Field::new(-grad[0], -grad[1], -grad[2], phi)
    }
}

/// Unique coefficients of a [`Series`]: the potential, then each order's derivatives
/// over sorted axes (`x y z`, `xx xy xz yy yz zz`, `xxx xxy … zzz`, `xxxx … zzzz`).
pub const SERIES_TERMS: usize = 35;

/// The same expansion as [`Local`] in its compact form: the 35 unique derivatives in
/// `T`, summed from a cell in closed form (about 150 operations) and evaluated term by
/// term, the formulas the device tree's kernels/local.cuh runs, so they are checked
/// against [`Local`] here (the series agree to rounding). A translation costs about as
/// much as a few hundred particle-cell interactions on a CPU core, so it pays for groups
/// of that many targets, not for a CPU tree's groups of 64.
///
/// ```
/// use nbody_core::cell::Cell;
/// use nbody_core::local::{Local, Series};
/// let c = Cell::new(10.0f64, 2.0, -1.0, 2.0, [0.3, 0.1, 0.0, -0.2, 0.05, -0.1]);
/// let (mut fast, mut oracle) = (Series::at([0.0; 3]), Local::at([0.0; 3]));
/// fast.add_cell(&c, 0.01);
/// oracle.add_cell(&c, 0.01);
/// let (a, b) = (fast.field_at([0.3, -0.2, 0.5]), oracle.field_at([0.3, -0.2, 0.5]));
/// assert!((a.ax - b.ax).abs() < 1e-14 * b.ax.abs() && (a.phi - b.phi).abs() < 1e-14 * b.phi.abs());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Series<T: Real> {
    /// The expansion's centre.
    pub centre: [T; 3],
    /// The derivatives at the centre, in [`SERIES_TERMS`]' order.
    pub terms: [T; SERIES_TERMS],
}

impl<T: Real> Series<T> {
    /// An empty expansion about `centre`.
    pub fn at(centre: [T; 3]) -> Self {
        Self { centre, terms: [T::zero(); SERIES_TERMS] }
    }

    /// Adds cell `c` (without G, Plummer softened by `eps2`, as [`cell`](crate::cell::cell)):
    /// with `K = (|d|² + ε²)^(−1/2)`, `G_k = 2^k d^kK/du^k`, `Qd = Q d` and
    /// `q = d·Q·d − ε² S` (`S` the spread) at `d = centre − c`, the derivatives are
    /// `s1 d_i + t2 Qd_i`, `s2 d_i d_j + s1 δ_ij +
    /// t2 Q_ij + t3 (Qd_i d_j + Qd_j d_i)`, and so on, with `s_k = −(M G_k + q G_(k+2) / 6)`
    /// and `t_k = −G_k / 3`; the monopole's fourth is `−M ∂⁴K`.
    pub fn add_cell(&mut self, c: &Cell<T>, eps2: T) {
        let d = [self.centre[0] - c.x, self.centre[1] - c.y, self.centre[2] - c.z];
        let u = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
        let k = T::one() / u.sqrt();
        let k2 = k * k;
        let n = |x: f64| T::from_f64(x);
        let g1 = -k2 * k;
        let g2 = n(-3.0) * g1 * k2;
        let g3 = n(-5.0) * g2 * k2;
        let g4 = n(-7.0) * g3 * k2;
        let g5 = n(-9.0) * g4 * k2;
        let q = c.quadrupole();
        let qab = |a: usize, b: usize| q[PAIR_LANE[a][b]];
        let qd: [T; 3] = core::array::from_fn(|i| qab(i, 0) * d[0] + qab(i, 1) * d[1] + qab(i, 2) * d[2]);
        // q less the spread's softened share, as the cell kernel takes it: `S` is constant,
        // so it enters q's value and none of its derivatives.
        let q6 = (d[0] * qd[0] + d[1] * qd[1] + d[2] * qd[2] - eps2 * c.spread) / n(6.0);
        let (s1, s2, s3) = (-(c.m * g1 + q6 * g3), -(c.m * g2 + q6 * g4), -(c.m * g3 + q6 * g5));
        let third = n(-1.0 / 3.0);
        let (t2, t3, t4) = (g2 * third, g3 * third, g4 * third);
        let l = &mut self.terms;
        l[0] = l[0] - (c.m * k + q6 * g2);
        for i in 0..3 {
            l[1 + i] = l[1 + i] + s1 * d[i] + t2 * qd[i];
        }
        let mut at = 4;
        for i in 0..3 {
            for j in i..3 {
                let mut v = s2 * d[i] * d[j] + t2 * qab(i, j) + t3 * (qd[i] * d[j] + qd[j] * d[i]);
                if i == j {
                    v = v + s1;
                }
                l[at] = l[at] + v;
                at += 1;
            }
        }
        for i in 0..3 {
            for j in i..3 {
                for m in j..3 {
                    let mut v = s3 * d[i] * d[j] * d[m]
                        + t3 * (qab(i, j) * d[m] + qab(i, m) * d[j] + qab(j, m) * d[i])
                        + t4 * (qd[i] * d[j] * d[m] + qd[j] * d[i] * d[m] + qd[m] * d[i] * d[j]);
                    // The deltas: s2 d_x + t3 Qd_x for each pair of equal axes, x the third.
                    if i == j {
                        v = v + s2 * d[m] + t3 * qd[m];
                    }
                    if i == m {
                        v = v + s2 * d[j] + t3 * qd[j];
                    }
                    if j == m {
                        v = v + s2 * d[i] + t3 * qd[i];
                    }
                    l[at] = l[at] + v;
                    at += 1;
                }
            }
        }
        // −M (G4 d d d d + G3 (δ d d, six ways) + G2 (δ δ, three ways)).
        let (m4, m3, m2) = (-c.m * g4, -c.m * g3, -c.m * g2);
        for i in 0..3 {
            for j in i..3 {
                for m in j..3 {
                    for e in m..3 {
                        let t = [i, j, m, e];
                        let equal = |p: [usize; 2]| t[p[0]] == t[p[1]];
                        let dd = FOUR_SPLITS
                            .iter()
                            .filter(|(p, _)| equal(*p))
                            .fold(T::zero(), |s, (_, r)| s + d[t[r[0]]] * d[t[r[1]]]);
                        let pairs = FOUR_SPLITS[..3].iter().filter(|(p, r)| equal(*p) && equal(*r)).count();
                        l[at] = l[at] + m4 * d[i] * d[j] * d[m] * d[e] + m3 * dd + m2 * n(pairs as f64);
                        at += 1;
                    }
                }
            }
        }
    }

    /// The series' acceleration and potential (without G) at `x`.
    pub fn field_at(&self, x: [T; 3]) -> Field<T> {
        let y = [x[0] - self.centre[0], x[1] - self.centre[1], x[2] - self.centre[2]];
        // y^e / e! over the axes.
        let monomial = |e: [usize; 3]| -> T {
            const INV_FACTORIAL: [f64; 5] = [1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0];
            let mut p = T::one();
            for ax in 0..3 {
                for _ in 0..e[ax] {
                    p = p * y[ax];
                }
                p = p * T::from_f64(INV_FACTORIAL[e[ax]]);
            }
            p
        };
        let (mut phi, mut grad) = (T::zero(), [T::zero(); 3]);
        for (coef, e) in self.terms.iter().zip(SERIES_EXPONENTS.iter()) {
            phi = phi + *coef * monomial(*e);
            for ax in 0..3 {
                if e[ax] > 0 {
                    let mut lower = *e;
                    lower[ax] -= 1;
                    grad[ax] = grad[ax] + *coef * monomial(lower);
                }
            }
        }
        Field::new(-grad[0], -grad[1], -grad[2], phi)
    }
}

/// Each [`Series`] term's exponents over the axes, in [`SERIES_TERMS`]' order: a
/// sorted index tuple of an order has as many x, y and z as its exponents say, and the
/// tuples' order is that of falling x, then falling y exponents.
const SERIES_EXPONENTS: [[usize; 3]; SERIES_TERMS] = {
    let mut out = [[0usize; 3]; SERIES_TERMS];
    let (mut at, mut order) = (1, 1);
    while order <= 4 {
        let mut x = order + 1;
        while x > 0 {
            x -= 1;
            let mut y = order - x + 1;
            while y > 0 {
                y -= 1;
                out[at] = [x, y, order - x - y];
                at += 1;
            }
        }
        order += 1;
    }
    out
};

/// The six ways to pair two of four indices (a δ; the other two take a `d` each), as
/// (pair, the other two); the first three with their others are the three ways to pair
/// all four (δ δ).
const FOUR_SPLITS: [([usize; 2], [usize; 2]); 6] =
    [([0, 1], [2, 3]), ([0, 2], [1, 3]), ([0, 3], [1, 2]), ([2, 3], [0, 1]), ([1, 3], [0, 2]), ([1, 2], [0, 3])];

/// The quadrupole lane of each index pair (its lanes are `[xx, xy, xz, yy, yz, zz]`).
const PAIR_LANE: [[usize; 3]; 3] = [[0, 1, 2], [1, 3, 4], [2, 4, 5]];

/// The derivatives of `K(d) = (|d|² + ε²)^(−1/2)` at one `d`, orders 0 to 5: with
/// `u = |d|² + ε²` and `F_k = d^k K / du^k`, `∂^n K` is the sum over ways to pair `m` of
/// the `n` indices (a `δ` for each pair, `d` for each index left) of `2^(n−m) F_(n−m)`.
struct Derivatives {
    d: [f64; 3],
    /// `2^j F_j(u)`, j = 0..5.
    f: [f64; 6],
}

impl Derivatives {
    fn of(d: [f64; 3], eps2: f64) -> Self {
        let u = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
        // F_j = (−1/2)(−3/2)…(−(2j−1)/2) u^(−1/2 − j); times 2^j: (−1)^j (2j−1)!! u^(−1/2−j).
        let mut f = [0.0; 6];
        // Float::sqrt: libm where there is no std.
        f[0] = 1.0 / num_traits::Float::sqrt(u);
        for j in 1..6 {
            f[j] = -f[j - 1] * (2 * j - 1) as f64 / u;
        }
        Self { d, f }
    }

    /// `∂_(idx) K`, for at most five indices.
    fn at(&self, idx: &[usize]) -> f64 {
        let n = idx.len();
        // Each index either takes a d, or pairs with a later one for a δ.
        fn pairings(idx: &[usize], used: u32, d: &[f64; 3], pairs: usize, f: &[f64; 6], n: usize) -> f64 {
            let Some(first) = (0..idx.len()).find(|&i| used & (1 << i) == 0) else {
                return f[n - pairs];
            };
            let used = used | (1 << first);
            // The first free index takes a d ...
            let mut s = d[idx[first]] * pairings(idx, used, d, pairs, f, n);
            // ... or pairs with a later free one (a δ: zero unless they are equal).
            for j in first + 1..idx.len() {
                if used & (1 << j) == 0 && idx[j] == idx[first] {
                    s += pairings(idx, used | (1 << j), d, pairs + 1, f, n);
                }
            }
            s
        }
        pairings(idx, 0, &self.d, 0, &self.f, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::cell;

    /// The derivative tensors against finite differences of the order below.
    #[test]
    fn derivatives_are_those_of_the_softened_inverse_distance() {
        let (d, eps2, h) = ([0.7, -1.1, 0.4], 0.05, 1e-5);
        let at = |x: [f64; 3], idx: &[usize]| Derivatives::of(x, eps2).at(idx);
        assert!((at(d, &[]) - 1.0 / (0.49 + 1.21 + 0.16 + 0.05f64).sqrt()).abs() < 1e-15);
        let orders: [&[usize]; 5] = [&[], &[1], &[0, 2], &[2, 2, 1], &[0, 1, 1, 2]];
        for idx in orders {
            for k in 0..3 {
                let (mut up, mut down) = (d, d);
                up[k] += h;
                down[k] -= h;
                let numeric = (at(up, idx) - at(down, idx)) / (2.0 * h);
                let mut next = idx.to_vec();
                next.push(k);
                let exact = at(d, &next);
                assert!((numeric - exact).abs() < 1e-7 * (1.0 + exact.abs()), "{idx:?} + {k}: {numeric} vs {exact}");
            }
        }
    }

    /// Symmetric in its indices, and traceless in any pair (Laplace's equation) without
    /// softening.
    #[test]
    fn derivatives_are_symmetric_and_harmonic() {
        let k = Derivatives::of([0.3, 1.2, -0.8], 0.0);
        let v = k.at(&[0, 1, 2, 2]);
        for p in [[1, 0, 2, 2], [2, 2, 0, 1], [2, 1, 2, 0]] {
            assert!((k.at(&p) - v).abs() < 1e-13 * v.abs());
        }
        let trace: f64 = (0..3).map(|a| k.at(&[a, a, 1, 2, 0])).sum();
        assert!(trace.abs() < 1e-12 * k.at(&[0, 0, 1, 2, 0]).abs().max(1.0));
    }

    /// At the centre the series gives each cell's field; two cells add.
    #[test]
    fn at_the_centre_it_is_the_cells_field() {
        let cells = [
            Cell::new(3.0, -1.0, 2.0, 1.5, [0.2, -0.1, 0.05, 0.3, 0.02, -0.5]),
            Cell::new(-4.0, 0.5, 1.0, 0.7, [-0.1, 0.0, 0.2, 0.4, -0.3, -0.3]),
        ];
        let centre = [0.2, 0.1, -0.3];
        let mut l = Local::at(centre);
        let mut exact = Field::zero();
        for c in &cells {
            l.add_cell(c, 0.01);
            cell(centre, c, 0.01, &mut exact);
        }
        let got = l.field_at(centre);
        for (g, e) in [(got.ax, exact.ax), (got.ay, exact.ay), (got.az, exact.az), (got.phi, exact.phi)] {
            assert!((g - e).abs() < 1e-14 * e.abs().max(1e-3), "{g} vs {e}");
        }
    }
}
