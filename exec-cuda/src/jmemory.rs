//! GRAPE-6-style j-particle memory on the device: each j-particle's position, velocity,
//! acceleration, jerk and time stay on the GPU; a code sends only the particles it
//! corrected since the last force call, and each force call predicts every j-particle to
//! the call's time with a kernel before the jerk kernel runs. This is what the GRAPE-6
//! drop-in (nbody-capi) uses on a GPU, so a block step moves its active particles over
//! PCIe, not the whole system.

use crate::args::JmemArgs;
use crate::device::cuda;
use crate::jerk::{JerkBuffers, ListSearch, Staged};
use crate::kernels::{Kernel, count};
use crate::memory::{Pinned, Scratch, alloc, download, ptr, upload_padded};
use crate::{CudaExecutor, SOURCE_PAD};
use cust::memory::{CopyDestination, DeviceBuffer};
use nbody_core::jmemory::{JParticle, PackedLists};
use nbody_core::neighbours::Neighbours;
use nbody_core::{Array, Bodies, Error, Field, Jerk, Params, Particle, Velocity, validate};

/// Threads per block of the per-particle kernels.
const THREADS: u32 = 256;

/// The record the scatter kernel reads: five double4 (x m, v, a, jerk, t).
fn record(p: &JParticle) -> [f64; 20] {
    let mut r = [0.0; 20];
    r[..3].copy_from_slice(&p.x);
    r[3] = p.m;
    r[4..7].copy_from_slice(&p.v);
    r[8..11].copy_from_slice(&p.a);
    r[12..15].copy_from_slice(&p.j);
    r[16] = p.t;
    r
}

/// A j-memory on one GPU (f64; the executor's kernel family, so a mixed-precision
/// executor's interactions are mixed).
///
/// ```no_run
/// use nbody_core::{Bodies, Field, Jerk, Velocity, Particle};
/// use nbody_cuda::{CudaExecutor, DeviceJMemory, JParticle};
/// let mut gpu = CudaExecutor::new()?;
/// let mut jm = DeviceJMemory::new(&mut gpu)?;
/// jm.set(0, JParticle { x: [1.0, 0.0, 0.0], m: 1.0, v: [0.0; 3], a: [0.0; 3], j: [0.0; 3], t: 0.0 })?;
/// let (pos, vel) = ([Particle::new(0.0, 0.0, 0.0, 0.0)], [Velocity::new(0.0, 0.0, 0.0)]);
/// let (mut out, mut jerk) = ([Field::zero()], [Jerk::zero()]);
/// jm.forces(&mut gpu, 1, 0.0, Bodies { pos: &pos, vel: &vel }, &[-1], 0.01, &mut out, &mut jerk, None)?;
/// assert!(out[0].ax > 0.99);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceJMemory {
    /// Addresses the buffers hold (a multiple of [`SOURCE_PAD`]).
    capacity: usize,
    pos: DeviceBuffer<u8>,
    vel: DeviceBuffer<u8>,
    acc: DeviceBuffer<u8>,
    jerk: DeviceBuffer<u8>,
    tj: DeviceBuffer<u8>,
    ppos: DeviceBuffer<u8>,
    pvel: DeviceBuffer<u8>,
    /// Updates since the last force call: addresses, and their records written
    /// straight into the front of `up` (the next call's upload).
    addresses: Vec<u32>,
    /// Highest address set plus one.
    len: usize,
    /// A force call's inputs (updates, targets, own addresses) and outputs (field, jerk),
    /// each packed into one buffer: a call then costs one copy each way, not seven
    /// (each a PCIe round trip of several microseconds, at a few hundred i-particles per
    /// block step as much as the interactions).
    up: Pinned,
    down: Pinned,
    scratch: [Scratch; 2],
    partials: [Scratch; 3],
}

/// Scratch slots.
const UP: usize = 0;
const DOWN: usize = 1;

impl DeviceJMemory {
    /// An empty j-memory on `gpu`'s device.
    pub fn new(gpu: &mut CudaExecutor) -> Result<Self, Error> {
        gpu.gpu.make_current()?;
        let capacity = SOURCE_PAD;
        let zeroed = |records: usize, size: usize| -> Result<DeviceBuffer<u8>, Error> {
            let mut b = alloc(records * size)?;
            upload_padded(&mut b, &[], records * size)?;
            Ok(b)
        };
        Ok(Self {
            capacity,
            pos: zeroed(capacity, 32)?,
            vel: zeroed(capacity, 32)?,
            acc: zeroed(capacity, 32)?,
            jerk: zeroed(capacity, 32)?,
            tj: zeroed(capacity, 8)?,
            ppos: zeroed(capacity, 32)?,
            pvel: zeroed(capacity, 32)?,
            addresses: Vec::new(),
            len: 0,
            up: Pinned::default(),
            down: Pinned::default(),
            scratch: Default::default(),
            partials: Default::default(),
        })
    }

    /// Addresses set so far (the highest plus one).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no j-particle was set.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the j-particle at `address` (sent with the next force call; a later set of
    /// the same address wins). Non-finite values or a negative mass are refused.
    pub fn set(&mut self, address: usize, p: JParticle) -> Result<(), Error> {
        let finite = [p.m, p.t].iter().chain(&p.x).chain(&p.v).chain(&p.a).chain(&p.j).all(|c| c.is_finite());
        if !finite {
            return Err(Error::NonFinite { array: Array::Sources, index: address });
        }
        if p.m < 0.0 {
            return Err(Error::NegativeMass { array: Array::Sources, index: address });
        }
        let address32 = u32::try_from(address)
            .map_err(|_| Error::InvalidParameter { name: "address", requirement: "below 2^32" })?;
        self.addresses.push(address32);
        let at = self.up.bytes().len();
        self.up.resize(at + 160)?[at..].copy_from_slice(bytemuck::cast_slice(&record(&p)));
        self.len = self.len.max(address + 1);
        Ok(())
    }

    /// Replaces the whole j-memory with `pos` (positions with masses) and `vel` at
    /// addresses `0..n`, at time 0 without acceleration or jerk, in two copies: for a code
    /// that sends every particle as it stands before its force calls (NBODY6++'s gpunb),
    /// where [`DeviceJMemory::set`] would pack a full record each. Sets not yet sent are
    /// dropped; addresses from `n` on are forgotten. Non-finite values or a negative mass
    /// are refused, leaving the j-memory as it was.
    ///
    /// ```no_run
    /// use nbody_core::{Particle, Velocity};
    /// let mut gpu = nbody_cuda::CudaExecutor::new()?;
    /// let mut jm = nbody_cuda::DeviceJMemory::new(&mut gpu)?;
    /// jm.replace(&mut gpu, &[Particle::new(1.0, 0.0, 0.0, 1.0)], &[Velocity::new(0.0, 0.0, 0.0)])?;
    /// assert_eq!(jm.len(), 1);
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn replace(
        &mut self,
        gpu: &mut CudaExecutor,
        pos: &[Particle<f64>],
        vel: &[Velocity<f64>],
    ) -> Result<(), Error> {
        let n = pos.len();
        validate::particles(pos, Array::Sources)?;
        validate::velocities(vel, n, Array::Sources)?;
        gpu.gpu.make_current()?;
        self.addresses.clear();
        self.up.clear();
        self.grow(n)?;
        upload_padded(&mut self.pos, bytemuck::cast_slice(pos), 0)?;
        upload_padded(&mut self.vel, bytemuck::cast_slice(vel), 0)?;
        for b in [&mut self.acc, &mut self.jerk] {
            upload_padded(b, &[], n * 32)?;
        }
        upload_padded(&mut self.tj, &[], n * 8)?;
        self.len = n;
        Ok(())
    }

    /// Forgets every j-particle.
    pub fn clear(&mut self, gpu: &mut CudaExecutor) -> Result<(), Error> {
        gpu.gpu.make_current()?;
        self.addresses.clear();
        self.up.clear();
        self.len = 0;
        for b in [&mut self.pos, &mut self.vel, &mut self.acc, &mut self.jerk, &mut self.ppos, &mut self.pvel] {
            upload_padded(b, &[], self.capacity * 32)?;
        }
        upload_padded(&mut self.tj, &[], self.capacity * 8)
    }

    /// Grows the buffers to hold `needed` addresses, keeping their contents.
    fn grow(&mut self, needed: usize) -> Result<(), Error> {
        if needed <= self.capacity {
            return Ok(());
        }
        let capacity = needed.next_multiple_of(SOURCE_PAD).max(2 * self.capacity);
        let regrow = |old: &DeviceBuffer<u8>, size: usize, keep: usize| -> Result<DeviceBuffer<u8>, Error> {
            let mut b = alloc(capacity * size)?;
            upload_padded(&mut b, &[], capacity * size)?;
            b.index(..keep * size).copy_from(&old.index(..keep * size)).map_err(cuda("copying the j-memory"))?;
            Ok(b)
        };
        let keep = self.capacity;
        self.pos = regrow(&self.pos, 32, keep)?;
        self.vel = regrow(&self.vel, 32, keep)?;
        self.acc = regrow(&self.acc, 32, keep)?;
        self.jerk = regrow(&self.jerk, 32, keep)?;
        self.tj = regrow(&self.tj, 8, keep)?;
        self.ppos = regrow(&self.ppos, 32, 0)?;
        self.pvel = regrow(&self.pvel, 32, 0)?;
        self.capacity = capacity;
        Ok(())
    }

    /// Acceleration, potential and jerk on `targets` from the j-particles at addresses
    /// `0..nj`, predicted to `time` on the device, written into `out` and `jerk`
    /// (overwritten, G = 1, softening `eps`). `own[i]` is the address of target i's own
    /// j-particle (its self pair is left out) or -1; the code's position and velocity
    /// of it stand in for the prediction, as on a GRAPE-6. With `neighbours`, the same
    /// pass finds each target's nearest j-particle (by address, its own excluded) and,
    /// with `neighbours.within`, the addresses with unsoftened r² ≤ its radius² (its own
    /// excluded), merged into `neighbours` as every executor does.
    #[allow(clippy::too_many_arguments)]
    pub fn forces(
        &mut self,
        gpu: &mut CudaExecutor,
        nj: usize,
        time: f64,
        targets: Bodies<'_, f64>,
        own: &[i32],
        eps: f64,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
        neighbours: Option<&mut Neighbours<'_, f64>>,
    ) -> Result<(), Error> {
        if let Some(nb) = &neighbours {
            nb.validate(targets.pos.len(), nj)?;
        }
        let search = match neighbours {
            Some(nb) => Search::Into(nb),
            None => Search::Nothing,
        };
        self.checked(gpu, nj, time, targets, own, eps, out, jerk, search).map(|_| ())
    }

    /// As [`DeviceJMemory::forces`], finding each target's nearest j-particle and the
    /// addresses `lists` asks for (unsoftened r² ≤ `radius2[i]`, or with `ahead` also
    /// `|dx + ahead[i] dv|² ≤ radius2[i]`, NBODY6++'s velocity criterion; its own
    /// excluded), in `capacity` slots per target, returned packed: only the entries found
    /// cross from the device, which is what makes reading the lists every block step
    /// cheap (a GRAPE-6 code's neighbour lists). With `exclude`, the addresses listed are
    /// left out of the sums. On a mixed executor the distances are those of its float
    /// separations. See [`ListSearch`] for an example.
    #[allow(clippy::too_many_arguments)]
    pub fn forces_and_lists(
        &mut self,
        gpu: &mut CudaExecutor,
        nj: usize,
        time: f64,
        targets: Bodies<'_, f64>,
        own: &[i32],
        eps: f64,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
        lists: ListSearch<'_, f64>,
    ) -> Result<PackedLists, Error> {
        let ni = targets.pos.len();
        validate::length("neighbour radii", ni, lists.radius2.len())?;
        nbody_core::neighbours::check_radii(lists.radius2)?;
        if let Some(dt) = lists.ahead {
            validate::length("look-ahead steps", ni, dt.len())?;
            if let Some(i) = dt.iter().position(|t| !t.is_finite()) {
                return Err(Error::NonFinite { array: Array::Targets, index: i });
            }
        }
        if let Some(r2) = lists.inside {
            validate::length("inside radii", ni, r2.len())?;
            if let Some(i) = r2.iter().position(|r| r.is_nan()) {
                return Err(Error::NonFinite { array: Array::Targets, index: i });
            }
        }
        let capacity = lists.capacity;
        let packed = self.checked(gpu, nj, time, targets, own, eps, out, jerk, Search::Packed(lists))?;
        Ok(packed.unwrap_or_else(|| PackedLists {
            counts: vec![0; ni],
            start: vec![0; ni],
            entries: Vec::new(),
            capacity,
            nearest: vec![None; ni],
        }))
    }

    #[allow(clippy::too_many_arguments)]
    fn checked(
        &mut self,
        gpu: &mut CudaExecutor,
        nj: usize,
        time: f64,
        targets: Bodies<'_, f64>,
        own: &[i32],
        eps: f64,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
        search: Search<'_, '_>,
    ) -> Result<Option<PackedLists>, Error> {
        let ni = targets.pos.len();
        validate::length("target velocities", ni, targets.vel.len())?;
        validate::particles(targets.pos, Array::Targets)?;
        validate::velocities(targets.vel, ni, Array::Targets)?;
        validate::length("own addresses", ni, own.len())?;
        validate::length("output", ni, out.len())?;
        validate::length("jerk output", ni, jerk.len())?;
        let params = Params::softened(eps);
        validate::params(&params)?;
        if !time.is_finite() {
            return Err(Error::InvalidParameter { name: "time", requirement: "finite" });
        }
        if nj > self.len {
            return Err(Error::InvalidParameter { name: "nj", requirement: "at most the addresses set" });
        }
        let mut seen = vec![false; nj];
        if own.iter().any(|&a| a >= 0 && (a as usize >= nj || std::mem::replace(&mut seen[a as usize], true))) {
            return Err(Error::InvalidParameter { name: "own", requirement: "distinct addresses below nj, or -1" });
        }
        out.fill(Field::zero());
        jerk.fill(Jerk::zero());
        if ni == 0 || nj == 0 {
            return Ok(None);
        }
        gpu.gpu.make_current()?;
        let result = self.launch(gpu, nj, time, targets, own, &params, out, jerk, search);
        if result.is_err() {
            let _ = gpu.gpu.stream().synchronize();
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn launch(
        &mut self,
        gpu: &mut CudaExecutor,
        nj: usize,
        time: f64,
        targets: Bodies<'_, f64>,
        own: &[i32],
        params: &Params<f64>,
        out: &mut [Field<f64>],
        jerk: &mut [Jerk<f64>],
        search: Search<'_, '_>,
    ) -> Result<Option<PackedLists>, Error> {
        let ni = targets.pos.len();
        let k = self.addresses.len();
        self.grow(self.len)?;
        // The records are already at the front of `up`.
        let at_rec = 0;
        let at_addr = self.up.pack(bytemuck::cast_slice(&self.addresses))?;
        let at_tpos = self.up.pack(bytemuck::cast_slice(targets.pos))?;
        let at_tvel = self.up.pack(bytemuck::cast_slice(targets.vel))?;
        let at_own = self.up.pack(bytemuck::cast_slice(own))?;
        let uploaded = upload_padded(self.scratch[UP].reserve(self.up.bytes().len())?, self.up.bytes(), 0);
        // The pieces packed after the records were for this call alone.
        self.up.truncate(k * 160);
        uploaded?;
        let at_jerk = (ni * 32).next_multiple_of(256);
        self.scratch[DOWN].reserve(at_jerk + ni * 32)?;
        let (up, down) = (a_ref(&self.scratch[UP])?, a_ref(&self.scratch[DOWN])?);
        let (tpos, tvel, own_d) = (ptr(&up.index(at_tpos..)), ptr(&up.index(at_tvel..)), ptr(&up.index(at_own..)));
        let (field, jout) = (ptr(down), ptr(&down.index(at_jerk..)));
        if k > 0 {
            // The updates set since the last call into the j-memory.
            let args = JmemArgs {
                address: ptr(&up.index(at_addr..)),
                rec: ptr(&up.index(at_rec..)),
                pos: ptr(&self.pos),
                vel: ptr(&self.vel),
                acc: ptr(&self.acc),
                jerk: ptr(&self.jerk),
                tj: ptr(&self.tj),
                k: count(k)?,
                ..JmemArgs::empty()
            };
            let (blocks, what) = ((k as u32).div_ceil(THREADS), "launching the j-memory update");
            // SAFETY: k addresses below capacity (grown above) and k records of 160 bytes;
            // the j-memory buffers hold capacity records.
            unsafe { gpu.launch(Kernel::JmemScatter, blocks, THREADS, args, what)? };
            self.addresses.clear();
            self.up.clear();
        }
        let padded = nj.next_multiple_of(SOURCE_PAD);
        // Massless padding beyond nj (addresses there may hold particles the call leaves out).
        if padded > nj {
            self.ppos.index(nj * 32..padded * 32).set_zero().map_err(cuda("zeroing the padding"))?;
        }
        let (ppos, pvel) = (ptr(&self.ppos), ptr(&self.pvel));
        let j = [&self.pos, &self.vel, &self.acc, &self.jerk];
        // SAFETY: the j-memory holds capacity >= nj records; ppos and pvel capacity >= padded.
        unsafe { crate::hermite::predict::<f64>(gpu, nj, time, j, &self.tj, [ppos, pvel])? };
        let args = JmemArgs {
            own: own_d,
            tpos,
            tvel,
            pos: ppos,
            vel: pvel,
            field,
            jerk_out: jout,
            k: count(ni)?,
            ..JmemArgs::empty()
        };
        let (blocks, what) = ((ni as u32).div_ceil(THREADS), "launching the i-particle placement");
        // SAFETY: ni targets, velocities, addresses (checked below nj) and outputs.
        unsafe { gpu.launch(Kernel::JmemPlace, blocks, THREADS, args, what)? };
        let bufs =
            JerkBuffers { targets: tpos, target_vel: tvel, sources: ppos, source_vel: pvel, out: field, jerk: jout };
        let staged = Staged::resident(
            bufs,
            ni,
            nj,
            padded,
            gpu.gpu.info().sm_count,
            gpu.jerk_per_thread,
            &mut self.partials,
            (8, gpu.two_per_thread::<f64>(!matches!(search, Search::Nothing))),
        )?;
        let staged = match &search {
            Search::Nothing => staged,
            Search::Into(nb) => {
                let within = nb.within.as_ref().map(|w| ListSearch {
                    radius2: w.radius2,
                    capacity: w.capacity,
                    ahead: None,
                    inside: None,
                    exclude: false,
                });
                staged.with_neighbours(gpu, within, own_d)?
            }
            Search::Packed(lists) => staged.with_neighbours(gpu, Some(*lists), own_d)?,
        };
        gpu.launch_jerk(&staged, params)?;
        gpu.gpu.stream().synchronize().map_err(cuda("running the jerk kernel"))?;
        let down = self.down.resize(at_jerk + ni * 32)?;
        download(a_ref(&self.scratch[DOWN])?, down)?;
        bytemuck::cast_slice_mut::<_, u8>(out).copy_from_slice(&down[..ni * 32]);
        bytemuck::cast_slice_mut::<_, u8>(jerk).copy_from_slice(&down[at_jerk..]);
        let packed = match search {
            Search::Nothing => None,
            Search::Into(nb) => {
                gpu.merge_neighbours(ni, nb)?;
                None
            }
            Search::Packed(lists) => Some(gpu.pack_lists(ni, lists.capacity)?),
        };
        // The self pairs (zero distance) added m / eps to the potential (nothing to the
        // acceleration or jerk): remove them (in f64; the kernel's own term differs by a
        // rounding of its precision).
        if !gpu.kernel_eps2(params)?.1 {
            for (f, (&a, p)) in out.iter_mut().zip(own.iter().zip(targets.pos)) {
                if a >= 0 {
                    f.phi += nbody_core::kernel::self_potential(p.m, params.eps2());
                }
            }
        }
        Ok(packed)
    }
}

/// What a force call on the j-memory searches besides the forces.
enum Search<'a, 'b> {
    Nothing,
    /// Into the caller's neighbours, as every executor merges them.
    Into(&'a mut Neighbours<'b, f64>),
    /// The nearest and the lists, packed on the device.
    Packed(ListSearch<'a, f64>),
}

fn a_ref(s: &Scratch) -> Result<&DeviceBuffer<u8>, Error> {
    s.buf_ref().ok_or(Error::NoDevice)
}
