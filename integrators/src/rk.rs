//! Adaptive embedded Runge-Kutta: Dormand-Prince 5(4) with local error control.

use crate::{Diagnostics, State, diagnostics_combined};
use nbody_core::{Error, Executor, Field, Params, Particle, Real, Velocity};

/// Dormand & Prince (1980) coefficients.
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0],
    [9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0.0],
    [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
];
/// Fifth-order weights (= the last row of A: first same as last) and fourth-order ones.
const B5: [f64; 7] = [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0];
const B4: [f64; 7] =
    [5179.0 / 57600.0, 0.0, 7571.0 / 16695.0, 393.0 / 640.0, -92097.0 / 339200.0, 187.0 / 2100.0, 1.0 / 40.0];

/// Dormand-Prince 5(4): each step's error estimate (5th minus 4th order) is held below
/// `atol + rtol · |y|` per component; the step adapts.
///
/// ```
/// use nbody_core::Reference;
/// use nbody_integrators::{ics, DormandPrince, State};
/// let (p, v) = ics::kepler::<f64>(0.5, 0.5, 0.5);
/// let mut s = State::new(p, v);
/// DormandPrince::new(1e-10, 1e-10, 0.0)?.advance_to(&mut s, &mut Reference, 1.0)?;
/// assert_eq!(s.time, 1.0);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct DormandPrince<T: Real> {
    rtol: f64,
    atol: f64,
    pub(crate) params: Params<T>,
    dt: f64,
    field: Vec<Field<T>>,
    scratch: Vec<Particle<T>>,
}

impl<T: Real> DormandPrince<T> {
    /// An integrator with relative and absolute tolerances and softening `eps`.
    pub fn new(rtol: f64, atol: f64, eps: T) -> Result<Self, Error> {
        if !(rtol.is_finite() && atol.is_finite() && rtol >= 0.0 && atol >= 0.0 && rtol + atol > 0.0) {
            return Err(Error::InvalidParameter {
                name: "tolerance",
                requirement: "finite, non-negative, not both zero",
            });
        }
        let params = Params::softened(eps).with_overlap_identical().acceleration_only();
        nbody_core::validate::params(&params)?;
        Ok(Self { rtol, atol, params, dt: 0.0, field: Vec::new(), scratch: Vec::new() })
    }

    /// Derivative of y = (x, v) per particle: (v, a(x)).
    fn derivative<E: Executor<T>>(&mut self, y: &[[f64; 6]], masses: &[T], e: &mut E) -> Result<Vec<[f64; 6]>, Error> {
        self.scratch.clear();
        self.scratch.extend(
            y.iter()
                .zip(masses)
                .map(|(q, &m)| Particle::new(T::from_f64(q[0]), T::from_f64(q[1]), T::from_f64(q[2]), m)),
        );
        self.field.clear();
        self.field.resize(y.len(), Field::zero());
        let (sources, params) = crate::state::sources(&self.scratch, &self.params, e);
        e.accelerations(&self.scratch, sources, &params, &mut self.field)?;
        Ok(y.iter()
            .zip(&self.field)
            .map(|(q, f)| [q[3], q[4], q[5], f.ax.to_f64(), f.ay.to_f64(), f.az.to_f64()])
            .collect())
    }

    /// Integrates until `s.time == t_end`; returns the number of accepted steps.
    pub fn advance_to<E: Executor<T>>(&mut self, s: &mut State<T>, e: &mut E, t_end: f64) -> Result<usize, Error> {
        let masses: Vec<T> = s.pos.iter().map(|p| p.m).collect();
        let mut y: Vec<[f64; 6]> = s
            .pos
            .iter()
            .zip(&s.vel)
            .map(|(p, v)| {
                let (x, u) = (p.position().map(Real::to_f64), v.components().map(Real::to_f64));
                [x[0], x[1], x[2], u[0], u[1], u[2]]
            })
            .collect();
        let mut k0 = self.derivative(&y, &masses, e)?;
        if self.dt <= 0.0 {
            self.dt = 1e-3 * (t_end - s.time).abs().max(f64::MIN_POSITIVE);
        }
        let mut steps = 0;
        while s.time < t_end {
            let h = self.dt.min(t_end - s.time);
            let mut k = vec![k0.clone()];
            for (stage, a) in A.iter().enumerate().skip(1) {
                let ys: Vec<[f64; 6]> = (0..y.len())
                    .map(|i| core::array::from_fn(|c| y[i][c] + h * (0..stage).map(|l| a[l] * k[l][i][c]).sum::<f64>()))
                    .collect();
                k.push(self.derivative(&ys, &masses, e)?);
            }
            let mut err: f64 = 0.0;
            let y5: Vec<[f64; 6]> = (0..y.len())
                .map(|i| {
                    core::array::from_fn(|c| {
                        let y5 = y[i][c] + h * (0..7).map(|l| B5[l] * k[l][i][c]).sum::<f64>();
                        let y4 = y[i][c] + h * (0..7).map(|l| B4[l] * k[l][i][c]).sum::<f64>();
                        let scale = self.atol + self.rtol * y[i][c].abs().max(y5.abs());
                        err = err.max((y5 - y4).abs() / scale);
                        y5
                    })
                })
                .collect();
            if !err.is_finite() {
                return Err(Error::InvalidParameter { name: "state", requirement: "finite during integration" });
            }
            // Standard controller: safety 0.9, growth within [0.2, 5].
            let factor = (0.9 * err.max(1e-10).powf(-0.2)).clamp(0.2, 5.0);
            if err <= 1.0 {
                y = y5;
                k0 = k.pop().unwrap_or_default(); // first same as last
                s.time += h;
                steps += 1;
            }
            self.dt = h * factor;
        }
        s.time = t_end;
        for ((p, v), q) in s.pos.iter_mut().zip(&mut s.vel).zip(&y) {
            *p = Particle::new(T::from_f64(q[0]), T::from_f64(q[1]), T::from_f64(q[2]), p.m);
            *v = Velocity::new(T::from_f64(q[3]), T::from_f64(q[4]), T::from_f64(q[5]));
        }
        Ok(steps)
    }

    /// Diagnostics at the current state (one force evaluation with the potential).
    pub fn diagnostics<E: Executor<T>>(&mut self, s: &State<T>, e: &mut E) -> Result<Diagnostics, Error> {
        let mut field = vec![Field::zero(); s.len()];
        e.accelerations(&s.pos, &s.pos, &Params { potential: true, ..self.params }, &mut field)?;
        Ok(diagnostics_combined(s, &field, e))
    }
}

impl<T: Real> crate::Checkpoint for DormandPrince<T> {
    fn save_to(&self, out: &mut crate::Sink<'_>) {
        out.f64(self.dt);
    }

    fn restore_from(&mut self, from: &mut crate::Source<'_, '_, '_>) -> Result<(), Error> {
        self.dt = from.f64()?;
        Ok(())
    }
}
