//! The standing mutation test: an executor wrapped in a [`Mutant`] computes a wrong
//! answer in one small, plausible way (a source dropped, a self term kept, ε² off by one
//! part in a thousand, …), and the suite must catch every mutant, for every executor and
//! precision. A mutant that survives means a check whose tolerance or reach is too weak
//! to notice that bug in a real kernel.
//!
//! ```
//! use nbody_conformance::mutants::{Mutant, Mutation};
//! use nbody_core::{Executor, Field, Params, Particle, Reference};
//! let ps = [Particle::new(0.0f64, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
//! let mut out = [Field::zero(); 2];
//! let mut m = Mutant { inner: Reference, mutation: Mutation::DoubleMass };
//! m.accelerations(&ps[..1], &ps[1..], &Params::softened(0.0), &mut out[..1])?;
//! assert_eq!(out[0].ax, 2.0); // twice the pull of the one source
//! # Ok::<(), nbody_core::Error>(())
//! ```
//!
//! The mutant implements [`Executor`]'s hooks rather than [`nbody_core::forward::Forward`]
//! (which forwards calls unchanged and cannot alter their arrays): the trait's doors
//! check each call, and every hook goes to the inner executor's hook, the plain, jerk,
//! batched and per-particle ones with the mutation applied.

use crate::checks;
use nbody_core::calls::{
    BatchCall, BatchCellsCall, BatchPerParticleCall, CellsCall, DirectCall, JerkCall, NeighboursCall, PerParticleCall,
    SnapCall, TidalCall, VjpBatchCall, VjpCall,
};
use nbody_core::capabilities::{Capabilities, Entry};
use nbody_core::columns::ColumnsCall;
use nbody_core::projection::{Project, Projecting, Projection};
use nbody_core::{Bodies, Error, Executor, Field, Params, Particle, Real, Softening};

/// One way of being wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// The middle source of each call contributes nothing (its mass read as zero; its
    /// own self term, where it is also a target, is still subtracted).
    DropSource,
    /// The first target that is also a source keeps its self term `−G m / ε` in the
    /// potential (the subtraction skipped).
    KeepSelfTerm,
    /// ε² scaled by `1 + 1e-3`.
    ScaleEps2,
    /// The middle source of each call counted with twice its mass.
    DoubleMass,
    /// An entry point the executor declares answers [`Error::Unsupported`].
    RefuseDeclared,
    /// One acceleration component of the middle target comes back NaN.
    WriteNan,
    /// The first and last targets' contributions are exchanged.
    SwapTargets,
}

impl Mutation {
    /// Every mutation.
    pub const ALL: [Mutation; 7] = [
        Mutation::DropSource,
        Mutation::KeepSelfTerm,
        Mutation::ScaleEps2,
        Mutation::DoubleMass,
        Mutation::RefuseDeclared,
        Mutation::WriteNan,
        Mutation::SwapTargets,
    ];

    /// The name the mutation table prints.
    pub const fn name(self) -> &'static str {
        match self {
            Mutation::DropSource => "drop one source",
            Mutation::KeepSelfTerm => "keep one self term",
            Mutation::ScaleEps2 => "eps^2 x (1 + 1e-3)",
            Mutation::DoubleMass => "double one mass",
            Mutation::RefuseDeclared => "refuse a declared entry",
            Mutation::WriteNan => "write one NaN",
            Mutation::SwapTargets => "swap two targets",
        }
    }
}

/// An executor with one [`Mutation`].
#[derive(Debug, Clone)]
pub struct Mutant<E> {
    /// The executor underneath.
    pub inner: E,
    /// What it gets wrong.
    pub mutation: Mutation,
}

impl<E> Mutant<E> {
    /// Sources as this mutant reads them: the middle one dropped or doubled.
    fn sources<T: Real>(&self, sources: &[Particle<T>]) -> Option<Vec<Particle<T>>> {
        let scale = match self.mutation {
            Mutation::DropSource => T::zero(),
            Mutation::DoubleMass => T::from_f64(2.0),
            _ => return None,
        };
        let mut s = sources.to_vec();
        if let Some(q) = s.get_mut(sources.len() / 2) {
            q.m = q.m * scale;
        }
        Some(s)
    }

    /// Parameters as this mutant reads them.
    fn params<T: Real>(&self, params: &Params<T>) -> Params<T> {
        let mut p = *params;
        if self.mutation == Mutation::ScaleEps2 {
            p.eps = T::from_f64(params.eps.to_f64() * (1.0 + 1e-3f64).sqrt());
        }
        p
    }

    /// The entry point [`Mutation::RefuseDeclared`] refuses: the spline's plain call
    /// where declared, else the Plummer jerk.
    fn refuses<T: Real>(&self, entry: Entry, params: &Params<T>, caps: Capabilities) -> bool {
        if self.mutation != Mutation::RefuseDeclared {
            return false;
        }
        let target = if caps.computes(Entry::Accelerations, Softening::Spline) {
            (Entry::Accelerations, Softening::Spline)
        } else {
            (Entry::Jerk, Softening::Plummer)
        };
        (entry, params.softening) == target && caps.computes(entry, params.softening) && !params.masked()
    }

    /// The mutation of the output after a successful call that started from `before`.
    fn after<T: Real>(&self, targets: &[Particle<T>], params: &Params<T>, before: &[Field<T>], out: &mut [Field<T>]) {
        let n = out.len();
        match self.mutation {
            Mutation::WriteNan if n > 0 => out[n / 2].ay = T::nan(),
            Mutation::SwapTargets if n > 1 => {
                // Contributions exchanged: out[0] = before[0] + (out[n-1] − before[n-1]).
                let (a, b) = (out[0], out[n - 1]);
                let d = |f: Field<T>, g: Field<T>| [f.ax - g.ax, f.ay - g.ay, f.az - g.az, f.phi - g.phi];
                let (da, db) = (d(a, before[0]), d(b, before[n - 1]));
                let put = |base: Field<T>, x: [T; 4]| {
                    Field::new(base.ax + x[0], base.ay + x[1], base.az + x[2], base.phi + x[3])
                };
                out[0] = put(before[0], db);
                out[n - 1] = put(before[n - 1], da);
            }
            Mutation::KeepSelfTerm
                if params.potential && !params.masked() && params.softening == Softening::Plummer =>
            {
                if let Some(i) = (0..n).find(|&i| params.overlap.source_of(i).is_some()) {
                    out[i].phi = out[i].phi - params.g * targets[i].m / params.eps;
                }
            }
            _ => {}
        }
    }
}

fn refused(operation: &'static str) -> Error {
    Error::Unsupported { operation, reason: "a mutant refusing what its executor declares" }
}

impl<T: Real, E: Executor<T>> Executor<T> for Mutant<E> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    unsafe fn accelerations_unchecked(&mut self, call: DirectCall<'_, T>) -> Result<(), Error> {
        let DirectCall { targets, sources, params, out } = call;
        if self.refuses(Entry::Accelerations, params, self.inner.capabilities()) {
            return Err(refused("accelerations"));
        }
        let (before, s, p) = (out.to_vec(), self.sources(sources), self.params(params));
        let call = DirectCall { targets, sources: s.as_deref().unwrap_or(sources), params: &p, out: &mut *out };
        // SAFETY: the caller's valid call, with a source's mass or ε changed within range.
        unsafe { self.inner.accelerations_unchecked(call)? };
        self.after(targets, params, &before, out);
        Ok(())
    }

    unsafe fn accelerations_jerk_unchecked(&mut self, call: JerkCall<'_, T>) -> Result<(), Error> {
        let JerkCall { targets, sources, params, out, jerk } = call;
        if self.refuses(Entry::Jerk, params, self.inner.capabilities()) {
            return Err(refused("accelerations_jerk"));
        }
        let (before, s, p) = (out.to_vec(), self.sources(sources.pos), self.params(params));
        let sources = Bodies { pos: s.as_deref().unwrap_or(sources.pos), vel: sources.vel };
        let call = JerkCall { targets, sources, params: &p, out: &mut *out, jerk };
        // SAFETY: as in `accelerations_unchecked`.
        unsafe { self.inner.accelerations_jerk_unchecked(call)? };
        self.after(targets.pos, params, &before, out);
        Ok(())
    }

    unsafe fn accelerations_jerk_neighbours_unchecked(&mut self, call: NeighboursCall<'_, '_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_jerk_neighbours_unchecked(call) }
    }

    unsafe fn accelerations_snap_unchecked(&mut self, call: SnapCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_snap_unchecked(call) }
    }

    unsafe fn accelerations_tidal_unchecked(&mut self, call: TidalCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_tidal_unchecked(call) }
    }

    unsafe fn vjp_unchecked(&mut self, call: VjpCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.vjp_unchecked(call) }
    }

    unsafe fn vjp_batch_unchecked(&mut self, call: VjpBatchCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.vjp_batch_unchecked(call) }
    }

    unsafe fn accelerations_batch_unchecked(&mut self, call: BatchCall<'_, T>) -> Result<(), Error> {
        let BatchCall { particles, list, params, out } = call;
        let (before, s, p) = (out.to_vec(), self.sources(particles), self.params(params));
        let call = BatchCall { particles: s.as_deref().unwrap_or(particles), list, params: &p, out: &mut *out };
        // SAFETY: as in `accelerations_unchecked`.
        unsafe { self.inner.accelerations_batch_unchecked(call)? };
        if self.mutation != Mutation::KeepSelfTerm {
            self.after(particles, params, &before, out);
        }
        Ok(())
    }

    unsafe fn accelerations_cells_unchecked(&mut self, call: CellsCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_cells_unchecked(call) }
    }

    unsafe fn accelerations_batch_cells_unchecked(&mut self, call: BatchCellsCall<'_, T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_batch_cells_unchecked(call) }
    }

    unsafe fn accelerations_per_particle_unchecked(&mut self, call: PerParticleCall<'_, T>) -> Result<(), Error> {
        let PerParticleCall { targets, sources, eps, params, out } = call;
        let (before, s) = (out.to_vec(), self.sources(sources));
        let call = PerParticleCall { targets, sources: s.as_deref().unwrap_or(sources), eps, params, out: &mut *out };
        // SAFETY: as in `accelerations_unchecked`.
        unsafe { self.inner.accelerations_per_particle_unchecked(call)? };
        if self.mutation != Mutation::KeepSelfTerm {
            self.after(targets, params, &before, out);
        }
        Ok(())
    }

    unsafe fn accelerations_batch_per_particle_unchecked(
        &mut self,
        call: BatchPerParticleCall<'_, T>,
    ) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_batch_per_particle_unchecked(call) }
    }

    fn collective(&mut self) -> Option<&mut dyn nbody_core::collective::Collective> {
        self.inner.collective()
    }

    fn field_columns(
        &mut self,
        call: ColumnsCall<'_, T>,
        params: &Params<T>,
        acc: &mut [[T; 3]],
        phi: Option<&mut [T]>,
    ) -> Result<(), Error> {
        self.inner.field_columns(call, params, acc, phi)
    }

    unsafe fn field_columns_device(
        &mut self,
        call: nbody_core::columns::DeviceColumns,
        params: &Params<T>,
    ) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.field_columns_device(call, params) }
    }

    unsafe fn accelerations_batch_cells_device(
        &mut self,
        call: nbody_core::columns::DeviceColumns,
        cells: &[nbody_core::cell::Cell<T>],
        list: &nbody_core::LeafList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.accelerations_batch_cells_device(call, cells, list, params) }
    }

    unsafe fn vjp_device(&mut self, call: nbody_core::columns::DeviceVjp, params: &Params<T>) -> Result<(), Error> {
        // SAFETY: the caller's call, unchanged.
        unsafe { self.inner.vjp_device(call, params) }
    }
}

impl<T: Real, E: Project<T>> Project<T> for Mutant<E> {
    fn project(&mut self, particles: &[Particle<T>], projection: &Projection, grid: &mut [f64]) -> Result<(), Error> {
        self.inner.project(particles, projection, grid)
    }
}

/// What became of one mutant: the check that caught it, or `None` if it survived.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The mutation.
    pub mutation: Mutation,
    /// The first check that failed on it, with its message.
    pub caught_by: Option<(&'static str, String)>,
}

/// Runs the suite's checks against each mutant of a fresh executor from `make`, in the
/// suite's order, until one fails: the check that caught it. `Err` when an executor
/// cannot be made.
pub fn run_mutants<T: Real, E: Projecting<T> + 'static>(
    u: f64,
    make: &dyn Fn() -> Result<E, Error>,
) -> Result<Vec<Outcome>, Error> {
    checks::without_shrinking(|| run_each::<T, E>(u, make))
}

/// [`run_mutants`]' work.
fn run_each<T: Real, E: Projecting<T> + 'static>(
    u: f64,
    make: &dyn Fn() -> Result<E, Error>,
) -> Result<Vec<Outcome>, Error> {
    let mut outcomes = Vec::new();
    for mutation in Mutation::ALL {
        let mut caught_by = None;
        for (name, check) in checks::all::<T, Mutant<E>>() {
            let mut m = Mutant { inner: make()?, mutation };
            // A panic inside a check (a NaN reaching an assertion, say) catches it too.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mut m, u)))
                .unwrap_or_else(|_| Err("the check panicked".to_owned()));
            if let Err(msg) = r {
                caught_by = Some((name, msg));
                break;
            }
        }
        outcomes.push(Outcome { mutation, caught_by });
    }
    Ok(outcomes)
}

/// One trial, `{prefix}::mutants`: every mutant of the executor from `make` must be
/// caught; it prints a line per mutant (the check that caught it) and `mutants caught
/// N / M`, and fails naming the survivors. Ignored, like the suite, without a device.
pub fn mutation_trial<T: Real, E: Projecting<T> + 'static>(
    prefix: &str,
    u: f64,
    make: impl Fn() -> Result<E, Error> + Send + Sync + 'static,
) -> crate::Trial {
    let no_device = matches!(make(), Err(Error::NoDevice));
    let name = format!("{prefix}::mutants");
    let label = prefix.to_owned();
    crate::Trial::test(name, move || {
        let outcomes = run_mutants::<T, E>(u, &make).map_err(|e| format!("creating the executor: {e}"))?;
        let caught = outcomes.iter().filter(|o| o.caught_by.is_some()).count();
        let mut report = String::new();
        for o in &outcomes {
            let by = o.caught_by.as_ref().map_or("SURVIVED", |(check, _)| check);
            report.push_str(&format!("mutant {label} | {} | {by}\n", o.mutation.name()));
        }
        report.push_str(&format!("mutants {label}: caught {caught} / {}\n", outcomes.len()));
        print!("{report}");
        if caught == outcomes.len() {
            Ok(())
        } else {
            let survivors: Vec<&str> =
                outcomes.iter().filter(|o| o.caught_by.is_none()).map(|o| o.mutation.name()).collect();
            Err(format!("mutants survived the suite: {}", survivors.join(", ")).into())
        }
    })
    .with_ignored_flag(no_device)
}

/// Whether the suite's check `check` alone catches `mutation` of the executor from
/// `make`: for tests that hold one check to its reach (the 30,025-source call must
/// catch one source in it dropped, say).
///
/// ```
/// use nbody_conformance::mutants::{caught_by, Mutation};
/// use nbody_core::Reference;
/// let caught = caught_by::<f64, _>("matches_oracle", Mutation::DoubleMass, f64::EPSILON, &|| Ok(Reference));
/// assert_eq!(caught, Ok(true));
/// ```
pub fn caught_by<T: Real, E: Projecting<T> + 'static>(
    check: &str,
    mutation: Mutation,
    u: f64,
    make: &dyn Fn() -> Result<E, Error>,
) -> Result<bool, String> {
    let (_, f) = checks::all::<T, Mutant<E>>()
        .into_iter()
        .find(|(name, _)| *name == check)
        .ok_or_else(|| format!("no check named {check}"))?;
    let mut m = Mutant { inner: make().map_err(|e| e.to_string())?, mutation };
    Ok(checks::without_shrinking(|| f(&mut m, u)).is_err())
}
