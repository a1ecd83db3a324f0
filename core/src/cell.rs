//! Far cells as sources: a tree or FMM code's particle–cell interaction.
//!
//! A [`Cell`] carries its mass `M`, centre of mass `c`, traceless quadrupole about
//! the centre of mass, `Q_ab = Σ_k m_k (3 s_a s_b − |s|² δ_ab)` with `s = x_k − c` (no
//! dipole: it vanishes about the centre of mass), and spread `S = Σ_k m_k |s|²`. For a
//! target at `x_i`, with `d = x_i − c`, `r² = |d|² + ε²` (the Plummer softening of the
//! pair kernel, so a cell of one particle is exactly that particle) and
//! `q = d·Q·d − ε² S`:
//!
//! ```text
//! phi_i −= G (M / r + q / (2 r⁵))
//! a_i   += G (−M d / r³ + Q d / r⁵ − 5 q d / (2 r⁷))
//! ```
//!
//! This is the softened kernel's second-order Taylor term exactly: the Newtonian kernel
//! is harmonic, so the second moment's trace `S` drops out of it, but the softened one
//! is not (`∇² (|d|² + ε²)^(−1/2) = −3 ε² / r⁵`), and without `ε² S` a cell a few
//! softening lengths across and away is off by a few percent of its monopole
//! (`S ε² / r⁴`), however small theta is. A cell with `S = 0` has the traceless
//! quadrupole's expansion alone.
//!
//! The error of the expansion is the octupole term: relative to the field it falls as
//! `(s / |d|)³` for a cell of size `s` (the monopole alone: `(s / |d|)²`). A cell is
//! never a target, so there is no self term.
//!
//! ```
//! use nbody_core::{cell::Cell, Field, Particle};
//! let pair = [Particle::new(-0.5f64, 0.0, 0.0, 1.0), Particle::new(0.5, 0.0, 0.0, 1.0)];
//! let c = Cell::from_particles(&pair);
//! assert_eq!((c.m, c.x, c.qxx, c.qyy), (2.0, 0.0, 1.0, -0.5));
//! let mut f = Field::zero();
//! nbody_core::cell::cell([10.0, 0.0, 0.0], &c, 0.0, &mut f);
//! // The two pull with 1/9.5² + 1/10.5²; the expansion is off by 5 (s/d)⁴ = 3.1e-5 here
//! // (the octupole vanishes by symmetry), the monopole alone by 3 (s/d)² = 7.5e-3.
//! let direct = -(1.0 / 9.5f64.powi(2) + 1.0 / 10.5f64.powi(2));
//! assert!((f.ax - direct).abs() < 4e-5 * direct.abs());
//! ```

use crate::kernel::Softened;
use crate::{Array, Error, Field, Particle, Real};
use core::fmt;

/// A far cell `[x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz, spread, _]`: centre of mass,
/// mass, traceless quadrupole and spread (see the [module](self) docs), twelve lanes aligned like a
/// [`Particle`] (48 bytes in f32, 96 in f64) and `Pod`, so arrays of cells go to a
/// device as they are.
///
/// ```
/// use nbody_core::cell::Cell;
/// let c = Cell::new(1.0f32, 2.0, 3.0, 4.0, [0.0; 6]);
/// assert_eq!(c.monopole().position(), [1.0, 2.0, 3.0]);
/// assert_eq!(core::mem::size_of_val(&c), 48);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq)]
pub struct Cell<T: Real> {
    /// Centre of mass, x.
    pub x: T,
    /// Centre of mass, y.
    pub y: T,
    /// Centre of mass, z.
    pub z: T,
    /// Mass (non-negative).
    pub m: T,
    /// Quadrupole `Q_xx`.
    pub qxx: T,
    /// Quadrupole `Q_xy`.
    pub qxy: T,
    /// Quadrupole `Q_xz`.
    pub qxz: T,
    /// Quadrupole `Q_yy`.
    pub qyy: T,
    /// Quadrupole `Q_yz`.
    pub qyz: T,
    /// Quadrupole `Q_zz` (`−Q_xx − Q_yy` for a traceless one; kept so that kernels
    /// need not rebuild it).
    pub qzz: T,
    /// The spread `Σ m_k |s_k|²`, the trace of the second moment that the traceless
    /// quadrupole leaves out: Newtonian gravity ignores it, the Plummer-softened kernel
    /// does not (its Laplacian is `−3 ε² / r⁵`), so it carries the expansion's
    /// `−ε² S / (2 r⁵)` term; zero leaves that term out.
    pub spread: T,
    pad: T,
    _align: [T::Align4; 0],
}

// SAFETY: twelve `T` lanes of a Pod float and a zero-length alignment marker whose
// alignment (four lanes) divides the size: no padding, every bit pattern valid; the
// assertions check size and alignment for both types.
unsafe impl<T: Real> bytemuck::Zeroable for Cell<T> {}
// SAFETY: as above.
unsafe impl<T: Real> bytemuck::Pod for Cell<T> {}

const _: () = {
    assert!(core::mem::size_of::<Cell<f32>>() == 48 && core::mem::align_of::<Cell<f32>>() == 16);
    assert!(core::mem::size_of::<Cell<f64>>() == 96 && core::mem::align_of::<Cell<f64>>() == 32);
};

impl<T: Real> fmt::Debug for Cell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cell")
            .field("x", &self.x)
            .field("y", &self.y)
            .field("z", &self.z)
            .field("m", &self.m)
            .field("q", &self.quadrupole())
            .field("spread", &self.spread)
            .finish()
    }
}

impl<T: Real> Cell<T> {
    /// A cell at `(x, y, z)` of mass `m` with quadrupole `[qxx, qxy, qxz, qyy, qyz, qzz]`
    /// and no spread ([`Cell::with_spread`] gives it one).
    pub fn new(x: T, y: T, z: T, m: T, q: [T; 6]) -> Self {
        let [qxx, qxy, qxz, qyy, qyz, qzz] = q;
        Self { x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz, spread: T::zero(), pad: T::zero(), _align: [] }
    }

    /// The same cell with spread `Σ m_k |s_k|²` (see [`Cell::spread`]).
    ///
    /// ```
    /// use nbody_core::cell::Cell;
    /// let c = Cell::new(0.0f64, 0.0, 0.0, 2.0, [1.0, 0.0, 0.0, -0.5, 0.0, -0.5]).with_spread(0.5);
    /// assert_eq!(c, Cell::from_particles(&[nbody_core::Particle::new(-0.5, 0.0, 0.0, 1.0), nbody_core::Particle::new(0.5, 0.0, 0.0, 1.0)]));
    /// ```
    pub fn with_spread(self, spread: T) -> Self {
        Self { spread, ..self }
    }

    /// The cell of `particles`: their total mass, centre of mass, traceless quadrupole
    /// and spread about it, summed in f64 (a massless set gives a massless cell at the
    /// origin).
    pub fn from_particles(particles: &[Particle<T>]) -> Self {
        let f = |p: &Particle<T>| [p.x.to_f64(), p.y.to_f64(), p.z.to_f64(), p.m.to_f64()];
        let (mut m, mut c) = (0.0, [0.0f64; 3]);
        for p in particles.iter().map(f) {
            m += p[3];
            for k in 0..3 {
                c[k] += p[3] * p[k];
            }
        }
        if m > 0.0 {
            c = c.map(|v| v / m);
        }
        let (mut q, mut spread) = ([0.0f64; 6], 0.0);
        for p in particles.iter().map(f) {
            let s = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
            let s2 = s[0] * s[0] + s[1] * s[1] + s[2] * s[2];
            for (k, (a, b)) in PAIRS.iter().enumerate() {
                q[k] += p[3] * (3.0 * s[*a] * s[*b] - if a == b { s2 } else { 0.0 });
            }
            spread += p[3] * s2;
        }
        let t = T::from_f64;
        Self::new(t(c[0]), t(c[1]), t(c[2]), t(m), q.map(t)).with_spread(t(spread))
    }

    /// The quadrupole `[qxx, qxy, qxz, qyy, qyz, qzz]`.
    pub fn quadrupole(&self) -> [T; 6] {
        [self.qxx, self.qxy, self.qxz, self.qyy, self.qyz, self.qzz]
    }

    /// The cell as a point mass at its centre of mass (its monopole).
    pub fn monopole(&self) -> Particle<T> {
        Particle::new(self.x, self.y, self.z, self.m)
    }
}

/// The index pairs `(a, b)` of the six quadrupole lanes, in their order.
const PAIRS: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];

/// Adds cell `c`'s field (without G) at a target at `xi` to the running sums `acc`,
/// with Plummer softening `eps2` (see the [module](self) docs).
#[inline(always)]
pub fn cell<T: Real>(xi: [T; 3], c: &Cell<T>, eps2: T, acc: &mut Field<T>) {
    let d = [xi[0] - c.x, xi[1] - c.y, xi[2] - c.z];
    let r2 = eps2 + d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    // A target on an unsoftened cell's centre feels nothing from it (as the pair
    // kernel masks coincident particles); a walk never asks for that.
    let rinv = crate::kernel::inverse_distance(r2, true);
    let m_rinv = c.m * rinv;
    add_expansion(d, c, m_rinv * rinv * rinv, m_rinv, rinv, eps2, acc);
}

/// [`cell`] with either softening: with the spline the monopole is the spline-softened
/// mass and the quadrupole term the Newtonian one beyond the support `h` (where the
/// spline is Newtonian), dropped inside it (a cell that close to a target is one a walk
/// opens; Gadget does the same).
///
/// ```
/// use nbody_core::{cell::{cell_softened, Cell}, kernel::Softened, Field, Params, Softening};
/// let c = Cell::new(2.0f64, 0.0, 0.0, 4.0, [0.0; 6]);
/// let mut f = Field::zero();
/// cell_softened([0.0; 3], &c, &Softened::of(&Params::softened(0.1).with_softening(Softening::Spline)), &mut f);
/// assert_eq!((f.ax, f.phi), (1.0, -2.0)); // beyond h = 0.28: Newtonian
/// ```
#[inline(always)]
pub fn cell_softened<T: Real>(xi: [T; 3], c: &Cell<T>, kernel: &Softened<T>, acc: &mut Field<T>) {
    match *kernel {
        Softened::Plummer { eps2, .. } => cell(xi, c, eps2, acc),
        Softened::Spline { h, h_inv } => {
            let d = [xi[0] - c.x, xi[1] - c.y, xi[2] - c.z];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let (w, g, _) = crate::kernel::spline(r2, h, h_inv);
            let rinv = if r2 >= h * h { crate::rsqrt::exact(r2) } else { T::zero() };
            add_expansion(d, c, c.m * g, c.m * w, rinv, T::zero(), acc);
        }
    }
}

/// Adds the monopole `−mono_a d` (potential `−mono_phi`) and the quadrupole terms at
/// `1/r = rinv` (none for `rinv = 0`) of cell `c` at offset `d` from its centre.
#[inline(always)]
fn add_expansion<T: Real>(d: [T; 3], c: &Cell<T>, mono_a: T, mono_phi: T, rinv: T, eps2: T, acc: &mut Field<T>) {
    let [dx, dy, dz] = d;
    let rinv2 = rinv * rinv;
    let (qdx, qdy, qdz) = (
        c.qxx * dx + c.qxy * dy + c.qxz * dz,
        c.qxy * dx + c.qyy * dy + c.qyz * dz,
        c.qxz * dx + c.qyz * dy + c.qzz * dz,
    );
    // d·Q·d less the spread's softened share, ε² S (see `Cell::spread`).
    let dqd = dx * qdx + dy * qdy + dz * qdz - eps2 * c.spread;
    let rinv5 = rinv2 * rinv2 * rinv;
    let quad_phi = T::from_f64(0.5) * dqd * rinv5;
    // a = −M d / r³ + Q d / r⁵ − 5/2 (dQd) d / r⁷
    let radial = -mono_a - T::from_f64(5.0) * quad_phi * rinv2;
    acc.ax = acc.ax + radial * dx + qdx * rinv5;
    acc.ay = acc.ay + radial * dy + qdy * rinv5;
    acc.az = acc.az + radial * dz + qdz * rinv5;
    acc.phi = acc.phi - mono_phi - quad_phi;
}

/// Checks every cell: finite lanes and a non-negative mass and spread.
///
/// ```
/// use nbody_core::{cell::{check, Cell}, Array, Error};
/// let bad = [Cell::new(0.0f64, 0.0, 0.0, 1.0, [0.0; 6]), Cell::new(0.0, 0.0, 0.0, 1.0, [f64::NAN; 6])];
/// assert_eq!(check(&bad), Err(Error::NonFinite { array: Array::Cells, index: 1 }));
/// let spread = [Cell::new(0.0f64, 0.0, 0.0, 1.0, [0.0; 6]).with_spread(-1.0)];
/// assert_eq!(check(&spread), Err(Error::NegativeSpread { index: 0 }));
/// ```
pub fn check<T: Real>(cells: &[Cell<T>]) -> Result<(), Error> {
    for (index, c) in cells.iter().enumerate() {
        let lanes = [c.x, c.y, c.z, c.m, c.qxx, c.qxy, c.qxz, c.qyy, c.qyz, c.qzz, c.spread];
        if lanes.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite { array: Array::Cells, index });
        }
        if c.m < T::zero() {
            return Err(Error::NegativeMass { array: Array::Cells, index });
        }
        if c.spread < T::zero() {
            return Err(Error::NegativeSpread { index });
        }
    }
    Ok(())
}

/// The f64 truth of a cell call for one target: the field of every cell in `cells` at
/// `xi` (G applied, softened by `kernel`), and an error scale for each acceleration component and the
/// potential: the sums of the terms' magnitudes, the quadrupole's products taken in
/// absolute value (its contractions can cancel).
///
/// ```
/// use nbody_core::cell::{exact, Cell};
/// use nbody_core::{kernel::Softened, Params};
/// let c = [Cell::new(2.0f64, 0.0, 0.0, 4.0, [0.0; 6])];
/// let (acc, phi, _, _) = exact([0.0; 3], &c, 1.0, &Softened::of(&Params::softened(0.0)));
/// assert_eq!((acc, phi), ([1.0, 0.0, 0.0], -2.0));
/// ```
pub fn exact<T: Real>(xi: [f64; 3], cells: &[Cell<T>], g: f64, kernel: &Softened<f64>) -> ([f64; 3], f64, f64, f64) {
    // The bounds take the Plummer softening's r (the spline is Newtonian beyond h and
    // bounded by the same terms inside).
    let eps2 = match *kernel {
        Softened::Plummer { eps2, .. } => eps2,
        Softened::Spline { h, .. } => h * h / (crate::SPLINE_SUPPORT * crate::SPLINE_SUPPORT),
    };
    let (mut acc_bound, mut phi_bound) = (0.0f64, 0.0f64);
    // Compensated, as the particle oracle's sums are.
    let (mut acc, mut phi) = ([crate::oracle::Compensated::default(); 3], crate::oracle::Compensated::default());
    for c in cells {
        let q = c.quadrupole().map(|q| q.to_f64());
        let c64 = Cell::new(c.x.to_f64(), c.y.to_f64(), c.z.to_f64(), c.m.to_f64(), q).with_spread(c.spread.to_f64());
        let mut f = Field::zero();
        cell_softened(xi, &c64, kernel, &mut f);
        for (a, x) in acc.iter_mut().zip([f.ax, f.ay, f.az]) {
            a.add(x);
        }
        phi.add(f.phi);
        let d = [(xi[0] - c64.x).abs(), (xi[1] - c64.y).abs(), (xi[2] - c64.z).abs()];
        let r2 = eps2 + d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if r2 < f64::MIN_POSITIVE {
            continue;
        }
        let r = num_traits::Float::sqrt(r2);
        let dn = num_traits::Float::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        // |Q| |d| componentwise, and |d| |Q| |d|.
        let qa = q.map(f64::abs);
        let qd = [
            qa[0] * d[0] + qa[1] * d[1] + qa[2] * d[2],
            qa[1] * d[0] + qa[3] * d[1] + qa[4] * d[2],
            qa[2] * d[0] + qa[4] * d[1] + qa[5] * d[2],
        ];
        let dqd = d[0] * qd[0] + d[1] * qd[1] + d[2] * qd[2] + eps2 * c64.spread.abs();
        let r5 = r2 * r2 * r;
        let mono = c64.m.abs() / r;
        phi_bound += mono + 0.5 * dqd / r5;
        acc_bound += mono * dn / r2 + (qd[0] + qd[1] + qd[2]) / r5 + 2.5 * dqd * dn / (r5 * r2);
    }
    (acc.map(|a| g * a.value()), g * phi.value(), g.abs() * acc_bound, g.abs() * phi_bound)
}

/// When a tree walk takes a cell whole instead of opening it: a group of targets at
/// distance `d` from the cell's centre of mass (to the nearest point of the group's
/// box), a cell of mass `M` and size `s` (its extent `2 b_max` or its side).
///
/// - [`Criterion::Geometric`] (Barnes & Hut): taken when `s < theta d`.
/// - [`Criterion::Relative`] (Gadget's relative criterion): taken when the cell's
///   expansion error, estimated as `G M / d² (s / d)^k`, is at most `alpha` times the
///   smallest previous acceleration `|a_old|` of the group's targets, with `k = 2` for
///   monopole cells and `k = 3` for quadrupole cells (the order of the first term left
///   out), and never when `d <= s` (a group beside or inside a big cell, where the
///   estimate fails). It needs an earlier force: a walk without one uses the geometric
///   test, as Gadget does for its first force. Forces at one alpha have about the same
///   relative error in dense and sparse regions, where one theta gives the clump
///   centres of a clustered system (small net forces) much larger relative errors.
///
/// ```
/// use nbody_core::cell::Criterion;
/// // A cell of mass 1 and size 0.1 at distance 1, quadrupole cells: error ~ 1e-3.
/// let rel = Criterion::Relative { alpha: 0.002 };
/// assert!(rel.accepts(0.5, 1.0, 1.0, 0.1, 1.0, true, Some(1.0)));
/// assert!(!rel.accepts(0.5, 1.0, 1.0, 0.1, 1.0, true, Some(0.1)));
/// // Without an earlier force it is the geometric test at theta.
/// assert!(rel.accepts(0.5, 1.0, 1.0, 0.1, 1.0, true, None));
/// assert!(!Criterion::Geometric.accepts(0.05, 1.0, 1.0, 0.1, 1.0, true, None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Criterion {
    /// `size < theta d`.
    #[default]
    Geometric,
    /// `G M / d² (size / d)^k <= alpha |a_old|` and `size < d`.
    Relative {
        /// The tolerated error relative to the target's acceleration (Gadget's
        /// `ErrTolForceAcc`; 0.0025 to 0.005 is customary).
        alpha: f64,
    },
}

impl Criterion {
    /// Whether a cell of mass `m` and size `size` at squared distance `d2` from a group
    /// is taken whole: with opening angle `theta` for the geometric test (or a relative
    /// test without `a_old`), gravitational constant `g`, quadrupole cells or not, and
    /// the group's smallest previous acceleration `a_old`.
    #[allow(clippy::too_many_arguments)]
    pub fn accepts(
        &self,
        theta: f64,
        g: f64,
        m: f64,
        size: f64,
        d2: f64,
        quadrupole: bool,
        a_old: Option<f64>,
    ) -> bool {
        match (*self, a_old) {
            (Criterion::Relative { alpha }, Some(a)) => {
                if d2 <= size * size {
                    return false;
                }
                let ratio = size * size / d2;
                let order = if quadrupole { ratio * num_traits::Float::sqrt(ratio) } else { ratio };
                g * m / d2 * order <= alpha * a
            }
            _ => size * size < theta * theta * d2,
        }
    }

    /// Gadget's relative criterion at `alpha`, or the geometric test without one (how
    /// the command, Python and C take the choice).
    ///
    /// ```
    /// use nbody_core::cell::Criterion;
    /// assert_eq!(Criterion::from_alpha(None), Criterion::Geometric);
    /// assert_eq!(Criterion::from_alpha(Some(0.003)), Criterion::Relative { alpha: 0.003 });
    /// ```
    pub fn from_alpha(alpha: Option<f64>) -> Self {
        alpha.map_or(Criterion::Geometric, |alpha| Criterion::Relative { alpha })
    }

    /// Checks the criterion's parameter: alpha finite and positive.
    ///
    /// ```
    /// use nbody_core::cell::Criterion;
    /// assert!(Criterion::Relative { alpha: 0.0 }.check().is_err());
    /// assert!(Criterion::Geometric.check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), Error> {
        match *self {
            Criterion::Relative { alpha } if !(alpha.is_finite() && alpha > 0.0) => {
                Err(Error::InvalidParameter { name: "alpha", requirement: "finite and positive" })
            }
            _ => Ok(()),
        }
    }

    /// Checks an opening angle `theta` (finite and positive), then the criterion.
    ///
    /// ```
    /// use nbody_core::cell::Criterion;
    /// assert!(Criterion::Geometric.check_with(f64::NAN).is_err());
    /// assert!(Criterion::Geometric.check_with(0.5).is_ok());
    /// ```
    pub fn check_with(&self, theta: f64) -> Result<(), Error> {
        if !(theta.is_finite() && theta > 0.0) {
            return Err(Error::InvalidParameter { name: "theta", requirement: "finite and positive" });
        }
        self.check()
    }
}
