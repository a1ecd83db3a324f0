//! An example Barnes-Hut tree code that hands all of its leaf work to an executor
//! through the batched entry point: the way a tree or FMM code embeds nbody.
//!
//! 1. Particles are sorted along a Morton curve and an octree is built over the sorted
//!    array: every cell is a contiguous range of it.
//! 2. Every cell gets its mass, centre of mass and (with [`Multipole::Quadrupole`], the
//!    default) traceless quadrupole, summed up the tree in f64 by the parallel-axis rule.
//! 3. Each target group (the largest cell of at most `group_size` particles, or a
//!    leaf) walks the tree: a cell whose
//!    centre of mass is farther from the group's bounding box than `size / theta` (the
//!    size: twice its particles' extent around the centre of mass by default, or the
//!    node's side; see [`Opening`]) is
//!    accepted whole; otherwise it is opened, down to leaves, whose particles are
//!    taken directly. The leaf's own particles are in its list: the executor subtracts
//!    their self terms from the span overlap.
//! 4. One call computes every group's interactions: `accelerations_batch_cells` with
//!    the accepted cells as [`nbody_core::cell::Cell`]s (quadrupole), or
//!    `accelerations_batch` with each cell's monopole appended to the particles as a
//!    pseudo-particle ([`Multipole::Monopole`]).
//!
//! ```
//! use nbody::core::{Field, Params};
//! use nbody::cpu::{CpuExecutor, Parallelism};
//! use nbody::tree::BarnesHut;
//!
//! let (bodies, _) = nbody::integrators::ics::plummer::<f32>(2000, 1);
//! let mut field = vec![Field::zero(); bodies.len()];
//! let bh = BarnesHut::for_cpu(0.5);
//! let stats = bh.forces(&bodies, &Params::softened(0.01), &mut CpuExecutor::new(Parallelism::Sequential), &mut field)?;
//! assert!(stats.interactions < 2000 * 2000);
//! # Ok::<(), nbody::Error>(())
//! ```

mod leapfrog;

pub use leapfrog::TreeLeapfrog;
use nbody_core::cell::Criterion;
use nbody_core::layout::morton;
use nbody_core::{Error, Executor, Field, InteractionList, LeafList, Pair, Params, Particle, Real, Span};
use rayon::prelude::*;

use std::time::{Duration, Instant};

/// Tree-code settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BarnesHut {
    /// Opening angle: a cell of size `s` (see [`Opening`]) at distance `d` from a group
    /// is accepted whole when `s / d < theta`.
    pub theta: f64,
    /// Most particles in a leaf: the finest cells a walk opens down to.
    pub leaf_size: usize,
    /// Most targets sharing one walk and one source list: the largest cells of at most
    /// this many particles (or leaves) are the target groups. Larger groups mean fewer,
    /// longer walks and more interactions: worth it where interactions are cheap (a
    /// GPU: 256 to 1,024), not on a CPU (equal to `leaf_size`).
    pub group_size: usize,
    /// How an accepted cell acts on a group.
    pub multipole: Multipole,
    /// What `theta` compares with the distance.
    pub opening: Opening,
    /// When a cell is taken whole (the geometric test with `theta`, or Gadget's
    /// relative test, which needs the previous force: [`BarnesHut::forces_after`]).
    pub criterion: Criterion,
}

/// The size a cell's opening test compares with `theta` times its distance `d` from a
/// group (from the cell's centre of mass to the group's bounding box): a cell is
/// accepted when `size < theta d`.
///
/// ```
/// use nbody::tree::{BarnesHut, Opening};
/// let classic = BarnesHut::for_gpu(0.5).with_opening(Opening::Side);
/// assert_eq!((classic.opening, BarnesHut::for_gpu(0.5).opening), (Opening::Side, Opening::Extent));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Opening {
    /// The octree node's side (Barnes & Hut 1986).
    Side,
    /// Twice the distance from the centre of mass to the cell's farthest particle,
    /// `2 b_max`: the size of what the expansion stands for, tighter than the node
    /// where particles fill it unevenly (the outskirts of a cluster), so the same error
    /// costs fewer interactions (Salmon & Warren 1994 bound the error by `b_max / d`).
    #[default]
    Extent,
}

/// The expansion an accepted cell is taken as.
///
/// ```
/// use nbody::tree::{BarnesHut, Multipole};
/// let bh = BarnesHut::for_cpu(0.8).with_multipole(Multipole::Monopole);
/// assert_eq!(BarnesHut::for_cpu(0.8).multipole, Multipole::Quadrupole); // the default
/// assert_eq!(bh.multipole, Multipole::Monopole);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Multipole {
    /// Its mass at its centre of mass: a pseudo-particle in the particle list. The
    /// error falls as `theta²`.
    Monopole,
    /// Mass, centre of mass and traceless quadrupole ([`nbody_core::cell`]): a cell
    /// source of the leaf list. The error falls as `theta³`, so a larger `theta` (fewer
    /// interactions) reaches the same accuracy.
    #[default]
    Quadrupole,
}

impl BarnesHut {
    /// Settings for an executor whose interactions are cheap against a walk (a GPU):
    /// leaves of 128, groups of 4,096: more interactions than small groups, but far fewer
    /// walks on the host, which dominate a GPU's force otherwise.
    pub const fn for_gpu(theta: f64) -> Self {
        Self {
            theta,
            leaf_size: 128,
            group_size: 4096,
            multipole: Multipole::Quadrupole,
            opening: Opening::Extent,
            criterion: Criterion::Geometric,
        }
    }

    /// Settings for a CPU executor: leaves and groups of 64.
    pub const fn for_cpu(theta: f64) -> Self {
        Self {
            theta,
            leaf_size: 64,
            group_size: 64,
            multipole: Multipole::Quadrupole,
            opening: Opening::Extent,
            criterion: Criterion::Geometric,
        }
    }

    /// [`BarnesHut::for_gpu`] for an executor on GPUs, else [`BarnesHut::for_cpu`].
    ///
    /// ```
    /// use nbody::tree::BarnesHut;
    /// assert_eq!(BarnesHut::for_executor(true, 0.5), BarnesHut::for_gpu(0.5));
    /// ```
    pub const fn for_executor(gpu: bool, theta: f64) -> Self {
        if gpu { Self::for_gpu(theta) } else { Self::for_cpu(theta) }
    }

    /// The same settings with the opening test `opening`.
    pub const fn with_opening(mut self, opening: Opening) -> Self {
        self.opening = opening;
        self
    }

    /// The same settings with the acceptance test `criterion`.
    ///
    /// ```
    /// use nbody::core::cell::Criterion;
    /// let bh = nbody::tree::BarnesHut::for_cpu(0.5).with_criterion(Criterion::Relative { alpha: 0.003 });
    /// assert_eq!(bh.criterion, Criterion::Relative { alpha: 0.003 });
    /// ```
    pub const fn with_criterion(mut self, criterion: Criterion) -> Self {
        self.criterion = criterion;
        self
    }

    /// Checks the settings: theta finite and positive, the criterion's alpha too.
    ///
    /// ```
    /// assert!(nbody::tree::BarnesHut::for_cpu(-1.0).check().is_err());
    /// assert!(nbody::tree::BarnesHut::for_cpu(0.5).check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), Error> {
        self.criterion.check_with(self.theta)
    }

    /// The same settings with cells taken as `multipole`.
    pub const fn with_multipole(mut self, multipole: Multipole) -> Self {
        self.multipole = multipole;
        self
    }
}

/// What one force calculation did and where its time went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeStats {
    /// Particle-particle interactions the executor computed (monopole pseudo-particles
    /// included).
    pub interactions: usize,
    /// Particle-cell interactions (quadrupole cells).
    pub cell_interactions: usize,
    /// Leaf groups (pairs of the interaction list).
    pub groups: usize,
    /// Source spans in the list (particle ranges, runs of monopoles or of cells).
    pub spans: usize,
    /// Sorting and building the tree.
    pub build: Duration,
    /// Walking it into the interaction list.
    pub walk: Duration,
    /// The executor's batched call.
    pub kernel: Duration,
}

#[derive(Clone, Copy, Debug)]
struct Cell {
    start: u32,
    end: u32,
    /// Children, as a range of the cell array (empty for a leaf).
    first_child: u32,
    children: u32,
    com: [f64; 3],
    mass: f64,
    /// Traceless quadrupole about `com`: xx, xy, xz, yy, yz, zz; then the spread
    /// `Σ m |s|²` (`nbody_core::cell::Cell::spread`).
    quad: [f64; 7],
    side: f64,
    /// The farthest of its particles from `com` (the cell's extent for the opening test).
    bmax: f64,
}

/// The index pairs of the quadrupole's lanes, in their order.
const PAIRS: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];

/// Adds `m (3 s_a s_b − |s|² δ_ab)` and the spread `m |s|²` into `q`: a point mass at
/// offset `s`.
fn add_quadrupole(q: &mut [f64; 7], m: f64, s: [f64; 3]) {
    let s2 = s[0] * s[0] + s[1] * s[1] + s[2] * s[2];
    for (qk, &(a, b)) in q.iter_mut().zip(&PAIRS) {
        *qk += m * (3.0 * s[a] * s[b] - if a == b { s2 } else { 0.0 });
    }
    q[6] += m * s2;
}

struct Tree<T: Real> {
    /// Particles in Morton order (then, for monopoles, one pseudo-particle per cell).
    all: Vec<Particle<T>>,
    /// `order[k]` is the original index of sorted particle k.
    order: Vec<u32>,
    cells: Vec<Cell>,
    keys: Vec<u64>,
}

impl<T: Real> Tree<T> {
    fn build(ps: &[Particle<T>], leaf_size: usize) -> Tree<T> {
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for p in ps {
            for (k, x) in p.position().into_iter().enumerate() {
                lo[k] = lo[k].min(x.to_f64());
                hi[k] = hi[k].max(x.to_f64());
            }
        }
        let side = (0..3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max).max(f64::MIN_POSITIVE) * (1.0 + 1e-12);
        let scale = 2_097_151.0 / side;
        let mut keyed: Vec<(u64, u32)> = ps
            .par_iter()
            .enumerate()
            .map(|(i, p)| {
                let c = core::array::from_fn(|k| ((p.position()[k].to_f64() - lo[k]) * scale) as u64);
                (morton(c), i as u32)
            })
            .collect();
        keyed.par_sort_unstable();
        let order: Vec<u32> = keyed.par_iter().map(|&(_, i)| i).collect();
        let keys: Vec<u64> = keyed.par_iter().map(|&(k, _)| k).collect();
        let all: Vec<Particle<T>> = order.par_iter().map(|&i| ps[i as usize]).collect();
        let mut tree = Tree { all, order, cells: Vec::new(), keys };
        tree.cells.push(Cell {
            start: 0,
            end: ps.len() as u32,
            first_child: 0,
            children: 0,
            com: [0.0; 3],
            mass: 0.0,
            quad: [0.0; 7],
            side,
            bmax: 0.0,
        });
        tree.split(0, 0, leaf_size);
        tree
    }

    /// Appends every cell's monopole to the particles (index `n + cell`).
    fn append_monopoles(&mut self) {
        let t = T::from_f64;
        let monopoles: Vec<Particle<T>> = self
            .cells
            .iter()
            .map(|c| Particle::new(t(c.com[0]), t(c.com[1]), t(c.com[2]), t(c.mass.max(0.0))))
            .collect();
        self.all.extend(monopoles);
    }

    /// Every cell as a source of the cell kernel.
    fn sources(&self) -> Vec<nbody_core::cell::Cell<T>> {
        let t = T::from_f64;
        self.cells
            .par_iter()
            .map(|c| {
                let q = core::array::from_fn(|k| t(c.quad[k]));
                nbody_core::cell::Cell::new(t(c.com[0]), t(c.com[1]), t(c.com[2]), t(c.mass.max(0.0)), q)
                    .with_spread(t(c.quad[6]))
            })
            .collect()
    }

    /// Splits cell `c` (at depth `level`) into its non-empty octants, recursively, and
    /// fills in its centre of mass.
    fn split(&mut self, c: usize, level: u32, leaf_size: usize) {
        let cell = self.cells[c];
        if (cell.end - cell.start) as usize > leaf_size && level < 21 {
            let shift = 3 * (20 - level);
            let first = self.cells.len() as u32;
            let mut a = cell.start as usize;
            while a < cell.end as usize {
                let octant = (self.keys[a] >> shift) & 7;
                let b = a + self.keys[a..cell.end as usize].partition_point(|k| (k >> shift) & 7 == octant);
                self.cells.push(Cell {
                    start: a as u32,
                    end: b as u32,
                    first_child: 0,
                    children: 0,
                    com: [0.0; 3],
                    mass: 0.0,
                    quad: [0.0; 7],
                    side: cell.side / 2.0,
                    bmax: 0.0,
                });
                a = b;
            }
            let n = self.cells.len() as u32 - first;
            self.cells[c].first_child = first;
            self.cells[c].children = n;
            for child in first..first + n {
                self.split(child as usize, level + 1, leaf_size);
            }
        }
        // Mass moments from the children (each particle is summed once, in its leaf).
        let (mut m, mut s) = (0.0, [0.0; 3]);
        if self.cells[c].children == 0 {
            for p in &self.all[cell.start as usize..cell.end as usize] {
                let w = p.m.to_f64();
                m += w;
                for (k, x) in p.position().into_iter().enumerate() {
                    s[k] += w * x.to_f64();
                }
            }
        } else {
            let first = self.cells[c].first_child as usize;
            for child in &self.cells[first..first + self.cells[c].children as usize] {
                m += child.mass;
                for (sk, ck) in s.iter_mut().zip(child.com) {
                    *sk += child.mass * ck;
                }
            }
        }
        let com = if m > 0.0 { s.map(|x| x / m) } else { self.bbox_centre(cell.start, cell.end) };
        // The quadrupole about `com`: of the leaf's particles, or the children's moved
        // there (parallel axis: each child's own plus its mass at its offset).
        let (mut q, mut bmax) = ([0.0; 7], 0.0f64);
        let offset = |x: [f64; 3]| core::array::from_fn(|k| x[k] - com[k]);
        let norm = |s: [f64; 3]| (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]).sqrt();
        if self.cells[c].children == 0 {
            for p in &self.all[cell.start as usize..cell.end as usize] {
                let s = offset(p.position().map(|x| x.to_f64()));
                add_quadrupole(&mut q, p.m.to_f64(), s);
                bmax = bmax.max(norm(s));
            }
        } else {
            let first = self.cells[c].first_child as usize;
            for child in &self.cells[first..first + self.cells[c].children as usize] {
                let s = offset(child.com);
                add_quadrupole(&mut q, child.mass, s);
                q.iter_mut().zip(child.quad).for_each(|(a, b)| *a += b);
                bmax = bmax.max(norm(s) + child.bmax);
            }
        }
        let cell = &mut self.cells[c];
        (cell.mass, cell.com, cell.quad, cell.bmax) = (m, com, q, bmax);
    }

    fn bbox(&self, start: u32, end: u32) -> ([f64; 3], [f64; 3]) {
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for p in &self.all[start as usize..end as usize] {
            for (k, x) in p.position().into_iter().enumerate() {
                lo[k] = lo[k].min(x.to_f64());
                hi[k] = hi[k].max(x.to_f64());
            }
        }
        (lo, hi)
    }

    fn bbox_centre(&self, start: u32, end: u32) -> [f64; 3] {
        let (lo, hi) = self.bbox(start, end);
        core::array::from_fn(|k| 0.5 * (lo[k] + hi[k]))
    }

    /// The source spans of group `leaf`: particle ranges of nearby leaves, and accepted
    /// cells (cell indices, or with `monopoles` the pseudo-particles `n + cell` in the
    /// particle spans), adjacent ranges merged.
    fn walk(&self, leaf: &Cell, test: &Test<'_, T>, n: usize, monopoles: bool) -> (Vec<Span>, Vec<Span>) {
        let (lo, hi) = self.bbox(leaf.start, leaf.end);
        // The group's smallest previous acceleration (the relative test's scale).
        let a_old = test.previous.map(|f| {
            self.order[leaf.start as usize..leaf.end as usize].iter().fold(f64::INFINITY, |a, &i| {
                let f = f[i as usize];
                let (x, y, z) = (f.ax.to_f64(), f.ay.to_f64(), f.az.to_f64());
                a.min((x * x + y * y + z * z).sqrt())
            })
        });
        let (mut spans, mut cells): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
        let push = |list: &mut Vec<Span>, s: Span| match list.last_mut() {
            Some(last) if last.end == s.start => last.end = s.end,
            _ => list.push(s),
        };
        let mut stack = vec![0u32];
        while let Some(c) = stack.pop() {
            let cell = &self.cells[c as usize];
            // Distance from the centre of mass to the group's bounding box.
            let d2: f64 = (0..3).map(|k| (lo[k] - cell.com[k]).max(cell.com[k] - hi[k]).max(0.0).powi(2)).sum();
            let size = match test.bh.opening {
                Opening::Side => cell.side,
                Opening::Extent => 2.0 * cell.bmax,
            };
            let holds = leaf.start < cell.end && cell.start < leaf.end;
            if !holds && test.bh.criterion.accepts(test.bh.theta, test.g, cell.mass, size, d2, !monopoles, a_old) {
                if monopoles {
                    push(&mut spans, Span::new((n + c as usize) as u32, (n + c as usize + 1) as u32));
                } else {
                    push(&mut cells, Span::new(c, c + 1));
                }
            } else if cell.children == 0 {
                push(&mut spans, Span::new(cell.start, cell.end));
            } else {
                // Reversed, so the children come off the stack in order and spans merge.
                stack.extend((cell.first_child..cell.first_child + cell.children).rev());
            }
        }
        (spans, cells)
    }
}

/// What a walk's acceptance test reads: the settings, G, and the previous field in the
/// caller's order (for the relative criterion).
struct Test<'a, T: Real> {
    bh: &'a BarnesHut,
    g: f64,
    previous: Option<&'a [Field<T>]>,
}

/// Concatenates per-group span lists in parallel (a million-particle walk emits tens of
/// millions of spans); returns them with each group's range of them.
fn concatenate(lists: &[&Vec<Span>]) -> (Vec<Span>, Vec<Span>) {
    let mut ranges = Vec::with_capacity(lists.len());
    let mut total = 0u32;
    for list in lists {
        ranges.push(Span::new(total, total + list.len() as u32));
        total += list.len() as u32;
    }
    let mut spans = vec![Span::new(0, 0); total as usize];
    let mut pieces = Vec::with_capacity(lists.len());
    let mut rest = spans.as_mut_slice();
    for list in lists {
        let (head, tail) = core::mem::take(&mut rest).split_at_mut(list.len());
        pieces.push(head);
        rest = tail;
    }
    pieces.into_par_iter().zip(lists.par_iter()).for_each(|(dst, src)| dst.copy_from_slice(src));
    (spans, ranges)
}

/// An earlier field for the relative criterion: every acceleration finite and not zero
/// (the test scales by its magnitude: NaN would skip every cell's test, infinity take
/// every cell whole, zero open every cell down to its particles).
///
/// ```
/// use nbody::core::{Array, Error, Field};
/// use nbody::tree::check_previous;
/// assert!(check_previous(&[Field::new(1.0f64, 0.0, 0.0, -1.0)]).is_ok());
/// let bad = [Field::new(1.0f64, 0.0, 0.0, 0.0), Field::new(f64::INFINITY, 0.0, 0.0, 0.0)];
/// assert_eq!(check_previous(&bad), Err(Error::NonFinite { array: Array::PreviousField, index: 1 }));
/// assert!(check_previous(&[Field::new(0.0f64, 0.0, 0.0, 0.0)]).is_err());
/// ```
pub fn check_previous<T: Real>(previous: &[Field<T>]) -> Result<(), Error> {
    for (index, f) in previous.iter().enumerate() {
        let a = [f.ax.to_f64(), f.ay.to_f64(), f.az.to_f64()];
        if !a.iter().all(|x| x.is_finite()) {
            return Err(Error::NonFinite { array: nbody_core::Array::PreviousField, index });
        }
        if a.iter().all(|x| *x == 0.0) {
            return Err(Error::InvalidParameter {
                name: "previous field",
                requirement: "a non-zero acceleration for every particle (the relative criterion scales by it)",
            });
        }
    }
    Ok(())
}

impl BarnesHut {
    /// Adds the tree-code field of `particles` on themselves into `out` (same order as
    /// `particles`); `params.overlap` is ignored (every particle is a target and a source).
    pub fn forces<T: Real, E: Executor<T>>(
        &self,
        particles: &[Particle<T>],
        params: &Params<T>,
        exec: &mut E,
        out: &mut [Field<T>],
    ) -> Result<TreeStats, Error> {
        self.forces_with(particles, None, params, exec, out)
    }

    /// [`BarnesHut::forces`] after an earlier force `previous` on the same particles
    /// (same order), which the relative criterion ([`Criterion::Relative`]) scales its
    /// test by: an integrator passes the field of its last step. The geometric test
    /// does not read it.
    ///
    /// ```
    /// use nbody::core::{cell::Criterion, Field, Params};
    /// use nbody::cpu::{CpuExecutor, Parallelism};
    /// use nbody::tree::BarnesHut;
    /// let (bodies, _) = nbody::integrators::ics::plummer::<f64>(3000, 1);
    /// let (params, mut cpu) = (Params::softened(0.01), CpuExecutor::new(Parallelism::Sequential));
    /// let bh = BarnesHut::for_cpu(0.5).with_criterion(Criterion::Relative { alpha: 0.002 });
    /// let mut first = vec![Field::zero(); bodies.len()];
    /// bh.forces(&bodies, &params, &mut cpu, &mut first)?; // geometric: no earlier force
    /// let mut second = vec![Field::zero(); bodies.len()];
    /// let stats = bh.forces_after(&bodies, &first, &params, &mut cpu, &mut second)?;
    /// assert!(stats.interactions + stats.cell_interactions < 3000 * 3000);
    /// # Ok::<(), nbody::Error>(())
    /// ```
    pub fn forces_after<T: Real, E: Executor<T>>(
        &self,
        particles: &[Particle<T>],
        previous: &[Field<T>],
        params: &Params<T>,
        exec: &mut E,
        out: &mut [Field<T>],
    ) -> Result<TreeStats, Error> {
        nbody_core::validate::length("previous field", particles.len(), previous.len())?;
        check_previous(previous)?;
        self.forces_with(particles, Some(previous), params, exec, out)
    }

    fn forces_with<T: Real, E: Executor<T>>(
        &self,
        particles: &[Particle<T>],
        previous: Option<&[Field<T>]>,
        params: &Params<T>,
        exec: &mut E,
        out: &mut [Field<T>],
    ) -> Result<TreeStats, Error> {
        nbody_core::validate::params(params)?;
        nbody_core::validate::length("output", particles.len(), out.len())?;
        nbody_core::validate::particles(particles, nbody_core::Array::Particles)?;
        self.check()?;
        if particles.is_empty() {
            return Ok(TreeStats::default());
        }
        let clock = Instant::now();
        let monopoles = self.multipole == Multipole::Monopole;
        let mut tree = Tree::build(particles, self.leaf_size.max(1));
        let cells = if monopoles {
            tree.append_monopoles();
            Vec::new()
        } else {
            tree.sources()
        };
        let build = clock.elapsed();
        let clock = Instant::now();
        let n = particles.len();
        let group_size = self.group_size.max(1);
        let mut leaves: Vec<&Cell> = Vec::new();
        let mut stack = vec![0usize];
        while let Some(c) = stack.pop() {
            let cell = &tree.cells[c];
            if cell.children == 0 || ((cell.end - cell.start) as usize) <= group_size {
                leaves.push(cell);
            } else {
                stack.extend((cell.first_child as usize..(cell.first_child + cell.children) as usize).rev());
            }
        }
        // Only the relative test reads the previous field.
        let previous = previous.filter(|_| matches!(self.criterion, Criterion::Relative { .. }));
        let test = Test { bh: self, g: params.g.to_f64(), previous };
        let lists: Vec<(Vec<Span>, Vec<Span>)> =
            leaves.par_iter().map(|leaf| tree.walk(leaf, &test, n, monopoles)).collect();
        let (spans, ranges) = concatenate(&lists.iter().map(|l| &l.0).collect::<Vec<_>>());
        let (cell_spans, cell_ranges) = concatenate(&lists.iter().map(|l| &l.1).collect::<Vec<_>>());
        let pairs: Vec<Pair> = leaves
            .iter()
            .zip(&ranges)
            .map(|(leaf, r)| Pair { targets: Span::new(leaf.start, leaf.end), sources: *r })
            .collect();
        let list = LeafList {
            particles: InteractionList { pairs: &pairs, source_spans: &spans },
            cells: &cell_ranges,
            cell_spans: &cell_spans,
        };
        let walk = clock.elapsed();
        let clock = Instant::now();
        let mut sorted_out = vec![Field::zero(); tree.all.len()];
        if monopoles {
            exec.accelerations_batch(&tree.all, &list.particles, params, &mut sorted_out)?;
        } else {
            exec.accelerations_batch_cells(&tree.all, &cells, &list, params, &mut sorted_out)?;
        }
        let kernel = clock.elapsed();
        // Back to the caller's order, in parallel through the inverse permutation.
        let mut rank = vec![0u32; n];
        for (k, &i) in tree.order.iter().enumerate() {
            rank[i as usize] = k as u32;
        }
        out.par_iter_mut().zip(rank.par_iter()).for_each(|(o, &k)| {
            let f = sorted_out[k as usize];
            let phi = if params.potential { o.phi + f.phi } else { o.phi };
            *o = Field::new(o.ax + f.ax, o.ay + f.ay, o.az + f.az, phi);
        });
        Ok(TreeStats {
            interactions: list.particles.interactions(),
            cell_interactions: list.cell_interactions(),
            groups: pairs.len(),
            spans: spans.len() + cell_spans.len(),
            build,
            walk,
            kernel,
        })
    }
}
