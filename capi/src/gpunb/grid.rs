//! The j-particles in cells, for finding each i-particle's candidates on the host: cells
//! of one edge (the size the first call after a `send` asks for), only the occupied ones
//! kept, as keys sorted by (z, y, x) beside the particles in that order, so a far-flung
//! particle costs nothing and a row of cells is one binary search. A GPU then computes
//! forces only, which its kernels do at full speed, while the lists (a few hundred entries
//! a target) come from here on the host's threads.

/// Cell coordinates are clamped to `±OFFSET` (21 bits each in a key).
const OFFSET: i64 = 1 << 20;

#[derive(Debug, Default)]
pub(super) struct Grid {
    origin: [f64; 3],
    /// Cell edge.
    size: f64,
    /// The occupied cells' keys, increasing, and where each one's particles begin in
    /// `order` (one more entry: the end).
    keys: Vec<u64>,
    start: Vec<u32>,
    /// Particle indices, cell by cell, increasing within a cell.
    order: Vec<u32>,
}

impl Grid {
    /// Cells of edge `size` (the set's extent where `size` is not a positive number) over
    /// `x`.
    pub(super) fn new(x: &[[f64; 3]], size: f64) -> Grid {
        if x.is_empty() {
            return Grid::default();
        }
        let mut lo = x[0];
        let mut hi = x[0];
        for p in x {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        let extent = (0..3).map(|k| hi[k] - lo[k]).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
        // Cells past ±OFFSET (a far-flung particle) share the boundary cell.
        let size = if size.is_finite() && size > 0.0 { size } else { extent };
        let mut g = Grid { origin: lo, size, ..Grid::default() };
        let mut keyed: Vec<(u64, u32)> = x.iter().enumerate().map(|(j, p)| (g.key(g.cell(p)), j as u32)).collect();
        keyed.sort_unstable();
        g.order = keyed.iter().map(|&(_, j)| j).collect();
        for (at, &(key, _)) in keyed.iter().enumerate() {
            if g.keys.last() != Some(&key) {
                g.keys.push(key);
                g.start.push(at as u32);
            }
        }
        g.start.push(x.len() as u32);
        g
    }

    /// The cell edge.
    pub(super) fn size(&self) -> f64 {
        self.size
    }

    fn cell(&self, p: &[f64; 3]) -> [i64; 3] {
        std::array::from_fn(|k| {
            let c = ((p[k] - self.origin[k]) / self.size).floor();
            if c.is_nan() { 0 } else { (c.clamp(-(OFFSET as f64), (OFFSET - 1) as f64)) as i64 }
        })
    }

    fn key(&self, c: [i64; 3]) -> u64 {
        let f = |v: i64| (v + OFFSET) as u64;
        (f(c[2]) << 42) | (f(c[1]) << 21) | f(c[0])
    }

    /// Calls `f` with every particle in the cells that meet the cube of half-edge `r`
    /// about `x` (a superset of those within `r`), row of cells by row.
    pub(super) fn around(&self, x: [f64; 3], r: f64, mut f: impl FnMut(u32)) {
        if self.order.is_empty() {
            return;
        }
        let lo = self.cell(&[x[0] - r, x[1] - r, x[2] - r]);
        let hi = self.cell(&[x[0] + r, x[1] + r, x[2] + r]);
        for cz in lo[2]..=hi[2] {
            for cy in lo[1]..=hi[1] {
                let (first, last) = (self.key([lo[0], cy, cz]), self.key([hi[0], cy, cz]));
                let from = self.keys.partition_point(|&k| k < first);
                let to = from + self.keys[from..].partition_point(|&k| k <= last);
                if from < to {
                    let (a, b) = (self.start[from] as usize, self.start[to] as usize);
                    self.order[a..b].iter().for_each(|&j| f(j));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn around_finds_every_particle_within_the_radius() {
        let mut s = 1u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let x: Vec<[f64; 3]> = (0..3000).map(|_| [rnd(), rnd() * 0.5, rnd() * 3.0]).collect();
        for size in [0.05, 0.3, 7.0] {
            let g = Grid::new(&x, size);
            for i in (0..3000).step_by(37) {
                let r = 0.2 + 0.1 * (i % 5) as f64;
                let mut got = vec![];
                g.around(x[i], r, |j| got.push(j));
                got.sort_unstable();
                for (j, p) in x.iter().enumerate() {
                    let d2: f64 = (0..3).map(|k| (p[k] - x[i][k]).powi(2)).sum();
                    if d2 <= r * r {
                        assert!(got.binary_search(&(j as u32)).is_ok(), "size {size}: {j} within {r} of {i}");
                    }
                }
            }
        }
        // Far beyond the box: still every particle once at most, none missed; a far-flung
        // particle leaves the cells small.
        let g = Grid::new(&x, 0.1);
        let mut n = 0;
        g.around([0.0; 3], 100.0, |_| n += 1);
        assert_eq!(n, 3000);
        let mut far = x.clone();
        far.push([1e7, 0.0, 0.0]);
        let g = Grid::new(&far, 0.05);
        let mut near = 0;
        g.around(far[0], 0.1, |_| near += 1);
        assert!(near < 100, "{near} candidates in cells of 0.05");
        let mut found = false;
        g.around([1e7, 0.0, 0.0], 1.0, |j| found |= j == 3000);
        assert!(found);
    }
}
