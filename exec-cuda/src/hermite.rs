//! A fourth-order Hermite system held on the device, as a GRAPE-6 keeps its j-particles
//! ([`HermiteResident`] for [`CudaExecutor`]): positions, velocities, accelerations,
//! jerks and times stay there; a force call predicts all particles to the step's time (a
//! kernel), gathers the active ones as targets, runs the jerk kernel (split over the
//! sources when they are few) and corrects them on the device. Only the active
//! particles' indices go up and their next steps come back; which particles and when is
//! `nbody_integrators::ResidentHermite`'s.

use crate::args::HermiteArgs;
use crate::device::cuda;
use crate::jerk::{JerkBuffers, Staged};
use crate::kernels::{Kernel, count};
use crate::memory::{Scratch, alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, DeviceReal, SOURCE_PAD};
use cust::memory::DeviceBuffer;
use nbody_core::resident::{HermiteCall, HermiteRecords, HermiteResident, Owner};
#[cfg(feature = "testing")]
use nbody_core::rules::MIN_FRACTION;
use nbody_core::{Error, Params};

/// Threads per block of the per-particle kernels.
const THREADS: u32 = 256;

/// A Hermite system on one GPU ([`HermiteResident::upload_hermite`]): the records, the
/// predicted particles (padded with massless ones at rest at the origin), and the
/// active particles' gathered targets, field, jerk and next steps.
///
/// ```no_run
/// use nbody_cuda::CudaExecutor;
/// use nbody_integrators::{ResidentHermite, Steps};
/// let mut gpu = CudaExecutor::new()?;
/// let (p, v) = nbody_integrators::ics::plummer::<f64>(16_384, 1);
/// let mut h = ResidentHermite::new(&mut gpu, &p, &v, 0.0, 0.02, 1.0 / 256.0, Steps::Block { dt_max: 1.0 / 16.0 })?;
/// while h.time() < 0.125 {
///     h.step(&mut gpu, 0.125)?;
/// }
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub struct CudaHermite<T: DeviceReal> {
    n: usize,
    padded: usize,
    params: Params<T>,
    owner: Owner,
    pos: DeviceBuffer<u8>,
    vel: DeviceBuffer<u8>,
    acc: DeviceBuffer<u8>,
    jerk: DeviceBuffer<u8>,
    tj: DeviceBuffer<u8>,
    ppos: DeviceBuffer<u8>,
    pvel: DeviceBuffer<u8>,
    idx: DeviceBuffer<u8>,
    tpos: DeviceBuffer<u8>,
    tvel: DeviceBuffer<u8>,
    field: DeviceBuffer<u8>,
    jerk_out: DeviceBuffer<u8>,
    want_dev: DeviceBuffer<u8>,
    partials: [Scratch; 3],
}

impl<T: DeviceReal> CudaHermite<T> {
    /// The `n` records of four lanes a state buffer holds.
    fn lanes(&self, buf: &DeviceBuffer<u8>) -> Result<Vec<[T; 4]>, Error> {
        let mut v = vec![[T::zero(); 4]; self.n];
        download(buf, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }
}

impl<T: DeviceReal> std::fmt::Debug for CudaHermite<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaHermite").field("n", &self.n).finish()
    }
}

impl<T: DeviceReal> HermiteResident<T> for CudaExecutor {
    type Hermite = CudaHermite<T>;

    fn upload_hermite(&mut self, records: &HermiteRecords<T>, eps: T) -> Result<CudaHermite<T>, Error> {
        let params = records.params(eps)?;
        self.gpu.make_current()?;
        let n = records.len();
        let padded = n.next_multiple_of(SOURCE_PAD).max(SOURCE_PAD);
        let v4 = 4 * size_of::<T>();
        let up = |data: &[u8], total: usize| -> Result<DeviceBuffer<u8>, Error> {
            let mut b = alloc(total.max(16))?;
            upload_padded(&mut b, data, total)?;
            Ok(b)
        };
        Ok(CudaHermite {
            n,
            padded,
            params,
            owner: self.gpu.owner(),
            pos: up(bytemuck::cast_slice(&records.pos), n * v4)?,
            vel: up(bytemuck::cast_slice(&records.vel), n * v4)?,
            acc: up(bytemuck::cast_slice(&records.acc), n * v4)?,
            jerk: up(bytemuck::cast_slice(&records.jerk), n * v4)?,
            tj: up(bytemuck::cast_slice(&records.t), n * 8)?,
            // Padding: massless particles at rest at the origin (predicted as such).
            ppos: up(&[], padded * v4)?,
            pvel: up(&[], padded * v4)?,
            idx: up(&[], n * 4)?,
            tpos: up(&[], n * v4)?,
            tvel: up(&[], n * v4)?,
            field: up(&[], n * v4)?,
            jerk_out: up(&[], n * v4)?,
            want_dev: up(&[], n * 8)?,
            partials: Default::default(),
        })
    }

    fn hermite_force(&mut self, h: &mut CudaHermite<T>, call: HermiteCall<'_>) -> Result<(), Error> {
        self.gpu.owner().check(h.owner)?;
        call.check(h.n)?;
        let HermiteCall { active, t, start, rule, want } = call;
        let (n, na) = (h.n, active.len());
        self.gpu.make_current()?;
        upload_padded(&mut h.idx, bytemuck::cast_slice(active), 0)?;
        let (ppos, pvel) = (ptr(&h.ppos), ptr(&h.pvel));
        // SAFETY: every buffer holds n records (the predicted ones `padded`).
        unsafe { predict::<T>(self, n, t, [&h.pos, &h.vel, &h.acc, &h.jerk], &h.tj, [ppos, pvel])? };
        let (tpos, tvel, field, jout) = (ptr(&h.tpos), ptr(&h.tvel), ptr(&h.field), ptr(&h.jerk_out));
        let dt_max = rule.dt_max.unwrap_or(0.0);
        let args = HermiteArgs {
            pos: ptr(&h.pos),
            vel: ptr(&h.vel),
            acc: ptr(&h.acc),
            jerk: ptr(&h.jerk),
            tj: ptr(&h.tj),
            ppos,
            pvel,
            idx: ptr(&h.idx),
            tpos,
            tvel,
            field,
            jerk_out: jout,
            want: ptr(&h.want_dev),
            t,
            eta: rule.eta,
            dt_max,
            dt_min: dt_max * nbody_core::rules::MIN_FRACTION,
            n: count(n)?,
            na: count(na)?,
            start: i32::from(start),
            block: i32::from(rule.dt_max.is_some()),
        };
        let blocks = (na as u32).div_ceil(THREADS);
        // SAFETY: idx holds na indices below n; the target buffers hold n records.
        unsafe {
            self.launch(
                Kernel::HermiteGather { tag: T::FAMILY },
                blocks,
                THREADS,
                args,
                "launching the Hermite gather",
            )?
        };
        let bufs =
            JerkBuffers { targets: tpos, target_vel: tvel, sources: ppos, source_vel: pvel, out: field, jerk: jout };
        let staged = Staged::resident(
            bufs,
            na,
            n,
            h.padded,
            self.gpu.info().sm_count,
            self.jerk_per_thread,
            &mut h.partials,
            (size_of::<T>(), self.two_per_thread::<T>(false)),
        )?;
        self.launch_jerk(&staged, &h.params)?;
        let correct = Kernel::HermiteCorrect { tag: T::FAMILY };
        // SAFETY: as above; want holds n doubles.
        unsafe { self.launch(correct, blocks, THREADS, args, "launching the Hermite corrector")? };
        self.gpu.stream().synchronize().map_err(cuda("running the Hermite step"))?;
        if !start {
            // Only the active particles' next steps come back.
            download(&h.want_dev, bytemuck::cast_slice_mut(&mut want[..na]))?;
        }
        Ok(())
    }

    fn download_hermite(&mut self, h: &CudaHermite<T>) -> Result<HermiteRecords<T>, Error> {
        self.gpu.owner().check(h.owner)?;
        self.gpu.make_current()?;
        self.gpu.stream().synchronize().map_err(cuda("waiting for the kernels"))?;
        let mut t = vec![0.0; h.n];
        download(&h.tj, bytemuck::cast_slice_mut(&mut t))?;
        Ok(HermiteRecords {
            pos: h.lanes(&h.pos)?,
            vel: h.lanes(&h.vel)?,
            acc: h.lanes(&h.acc)?,
            jerk: h.lanes(&h.jerk)?,
            t,
        })
    }
}

/// Queues the predictor kernel: particles `0..n` (positions, velocities, accelerations,
/// jerks as [x, y, z, w] of `T`, times in f64) to time `t`, into `out`
/// (predicted positions, velocities).
///
/// # Safety
/// Every buffer holds at least `n` records.
pub(crate) unsafe fn predict<T: DeviceReal>(
    exec: &CudaExecutor,
    n: usize,
    t: f64,
    [pos, vel, acc, jerk]: [&DeviceBuffer<u8>; 4],
    tj: &DeviceBuffer<u8>,
    [ppos, pvel]: [cust::memory::DevicePointer<u8>; 2],
) -> Result<(), Error> {
    let args = HermiteArgs {
        pos: ptr(pos),
        vel: ptr(vel),
        acc: ptr(acc),
        jerk: ptr(jerk),
        tj: ptr(tj),
        ppos,
        pvel,
        t,
        n: count(n)?,
        ..HermiteArgs::empty()
    };
    let blocks = (n as u32).div_ceil(THREADS);
    // SAFETY: the caller's contract.
    unsafe { exec.launch(Kernel::HermitePredict { tag: T::FAMILY }, blocks, THREADS, args, "launching the predictor") }
}

/// One particle's inputs to [`hermite_kernels`]: its state at its time `t0` and the
/// acceleration and jerk at the predicted end of its step.
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelCase {
    /// Position, velocity, acceleration and jerk at `t0`.
    pub x: [f64; 3],
    /// Velocity at `t0`.
    pub v: [f64; 3],
    /// Acceleration at `t0`.
    pub a0: [f64; 3],
    /// Jerk at `t0`.
    pub j0: [f64; 3],
    /// Acceleration at the end of the step.
    pub a1: [f64; 3],
    /// Jerk at the end of the step.
    pub j1: [f64; 3],
    /// The particle's time.
    pub t0: f64,
}

/// What the device's Hermite kernels made of a [`KernelCase`].
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelOutcome {
    /// Predicted position and velocity at `t`.
    pub px: [f64; 3],
    /// Predicted velocity.
    pub pv: [f64; 3],
    /// Corrected position and velocity at `t`.
    pub x1: [f64; 3],
    /// Corrected velocity.
    pub v1: [f64; 3],
    /// The shared-step corrector's wish (Aarseth, or 2 h).
    pub want: f64,
    /// The block-step corrector's next step.
    pub block: f64,
}

/// Test harness (feature `testing`): runs the f64 predictor and corrector kernels (shared
/// and block steps) on `cases` stepped to `t`, so the tests can compare them with
/// `nbody_core::rules` bit for bit.
#[cfg(feature = "testing")]
pub fn hermite_kernels(
    exec: &mut CudaExecutor,
    cases: &[KernelCase],
    t: f64,
    eta: f64,
    dt_max: f64,
) -> Result<Vec<KernelOutcome>, Error> {
    exec.gpu.make_current()?;
    let n = cases.len();
    let lanes = |f: &dyn Fn(&KernelCase) -> [f64; 3], w: f64| -> Vec<[f64; 4]> {
        cases.iter().map(f).map(|[x, y, z]| [x, y, z, w]).collect()
    };
    let up = |data: &[u8]| -> Result<DeviceBuffer<u8>, Error> {
        let mut b = alloc(data.len().max(16))?;
        upload_padded(&mut b, data, 0)?;
        Ok(b)
    };
    let state = || -> Result<[DeviceBuffer<u8>; 5], Error> {
        Ok([
            up(bytemuck::cast_slice(&lanes(&|c| c.x, 1.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.v, 0.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.a0, 0.0)))?,
            up(bytemuck::cast_slice(&lanes(&|c| c.j0, 0.0)))?,
            up(bytemuck::cast_slice(&cases.iter().map(|c| c.t0).collect::<Vec<f64>>()))?,
        ])
    };
    let [pos, vel, acc, jerk, tj] = state()?;
    let (ppos, pvel) = (up(&vec![0u8; n * 32])?, up(&vec![0u8; n * 32])?);
    // SAFETY: every buffer holds n records.
    unsafe { predict::<f64>(exec, n, t, [&pos, &vel, &acc, &jerk], &tj, [ptr(&ppos), ptr(&pvel)])? };
    let idx = up(bytemuck::cast_slice(&(0..n as u32).collect::<Vec<u32>>()))?;
    let field = up(bytemuck::cast_slice(&lanes(&|c| c.a1, 0.0)))?;
    let jerk_out = up(bytemuck::cast_slice(&lanes(&|c| c.j1, 0.0)))?;
    let want = up(&vec![0u8; n * 8])?;
    let mut out = vec![KernelOutcome::default(); n];
    let down4 = |b: &DeviceBuffer<u8>| -> Result<Vec<[f64; 4]>, Error> {
        let mut v = vec![[0.0; 4]; n];
        download(b, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    };
    exec.gpu.stream().synchronize().map_err(cuda("predicting"))?;
    for (o, (p, q)) in out.iter_mut().zip(down4(&ppos)?.into_iter().zip(down4(&pvel)?)) {
        (o.px, o.pv) = ([p[0], p[1], p[2]], [q[0], q[1], q[2]]);
    }
    for block in [0, 1] {
        let [pos, vel, acc, jerk, tj] = state()?;
        let args = HermiteArgs {
            pos: ptr(&pos),
            vel: ptr(&vel),
            acc: ptr(&acc),
            jerk: ptr(&jerk),
            tj: ptr(&tj),
            idx: ptr(&idx),
            field: ptr(&field),
            jerk_out: ptr(&jerk_out),
            want: ptr(&want),
            t,
            eta,
            dt_max,
            dt_min: dt_max * MIN_FRACTION,
            na: count(n)?,
            block,
            ..HermiteArgs::empty()
        };
        let kernel = Kernel::HermiteCorrect { tag: crate::Family::F64 };
        // SAFETY: idx holds n indices below n; every buffer holds n records.
        unsafe { exec.launch(kernel, (n as u32).div_ceil(THREADS), THREADS, args, "the corrector")? };
        exec.gpu.stream().synchronize().map_err(cuda("correcting"))?;
        let mut w = vec![0.0f64; n];
        download(&want, bytemuck::cast_slice_mut(&mut w))?;
        let (x1, v1) = (down4(&pos)?, down4(&vel)?);
        for (k, o) in out.iter_mut().enumerate() {
            if block == 0 {
                (o.x1, o.v1, o.want) = ([x1[k][0], x1[k][1], x1[k][2]], [v1[k][0], v1[k][1], v1[k][2]], w[k]);
            } else {
                o.block = w[k];
            }
        }
    }
    Ok(out)
}
