//! Columns calls ([`nbody_core::Executor::field_columns`]): the caller's rows of
//! positions and column of masses go up as they are, a kernel packs them into records
//! (checking every value as it goes), the tiled kernel runs on the records, and a kernel
//! unpacks the field into rows of accelerations and a column of potentials that come
//! down straight into the caller's arrays. The host makes no pass over the particles,
//! which for a front end such as Python's is the difference between a call that costs
//! what the kernel costs and one that adds a pack and an unpack on one core.
//!
//! The device side ([`nbody_core::Executor::field_columns_device`],
//! [`nbody_core::Executor::accelerations_batch_cells_device`]) starts from arrays the
//! caller already holds on this GPU (another library's): the same kernels pack them
//! (velocities too, for the jerk), every value is known good before anything is written,
//! and the field (and jerk) is unpacked straight into the caller's output arrays.

use crate::args::{ColumnsArgs, Ptr, null};
use crate::kernels::{Kernel, count};
use crate::memory::{download, ptr, upload_padded};
use crate::tiled::TiledSoft;
use crate::{CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, EXTRA_C, Family, OUT, SOURCE_PAD, SOURCES};
use cust::memory::{CopyDestination, DeviceSlice};
use nbody_core::columns::{self, ColumnsCall, DeviceColumns};
use nbody_core::{Error, Field, Params};

/// Offsets of the pieces one scratch buffer holds, each on a 256-byte boundary.
fn layout(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut at = 0;
    let offsets = sizes
        .iter()
        .map(|&s| {
            let o = at;
            at = (at + s).next_multiple_of(256);
            o
        })
        .collect();
    (offsets, at.max(1))
}

/// The first offending index of each kind a packing kernel keeps (non-finite, negative
/// mass), before any is found.
const NONE_BAD: [i32; 2] = [i32::MAX, i32::MAX];

impl CudaExecutor {
    /// See the module documentation. f32 and f64 kernels, Plummer and the spline with
    /// one length; the mixed kernels (which run on sorted records) refuse.
    pub(crate) fn columns_call<T: DeviceReal>(
        &mut self,
        call: ColumnsCall<'_, T>,
        params: &Params<T>,
        acc: &mut [[T; 3]],
        mut phi: Option<&mut [T]>,
    ) -> Result<(), Error> {
        columns::check(&call, params, acc.len(), phi.as_ref().map(|p| p.len()))?;
        if self.family::<T>() == Family::Mixed {
            return Err(Error::Unsupported {
                operation: "field_columns on the mixed kernels",
                reason: "they run on records sorted on the device: pack the particles and call accelerations",
            });
        }
        let (n_s, n_t) = (call.positions.len(), call.targets_len());
        if n_t == 0 || n_s == 0 {
            // Nothing to compute, but bad values are refused as the host door refuses
            // them (sources are checked even with no target to pull).
            if let Some(bad) = columns::first_bad(&call) {
                return Err(bad);
            }
            acc.fill([T::zero(); 3]);
            phi.iter_mut().for_each(|p| p.fill(T::zero()));
            return Ok(());
        }
        let (ni, nsi) = (count(n_t)?, count(n_s)?);
        let mut p = params.with_overlap(if call.targets.is_none() {
            nbody_core::Overlap::Identical
        } else {
            nbody_core::Overlap::Disjoint
        });
        p.potential = phi.is_some();
        let sz = size_of::<T>();
        self.guarded(|me| {
            // Up: the rows, the masses and the targets' rows as the caller holds them.
            let t_rows = call.targets.unwrap_or(&[]);
            let (ins, in_len) = layout(&[n_s * 3 * sz, n_s * sz, t_rows.len() * 3 * sz, 4 * NONE_BAD.len()]);
            let input = me.scratch[EXTRA_A].reserve(in_len)?;
            let up = |buf: &mut cust::memory::DeviceBuffer<u8>, at: usize, data: &[u8]| -> Result<(), Error> {
                if data.is_empty() {
                    return Ok(());
                }
                buf.index(at..at + data.len())
                    .copy_from(data)
                    .map_err(crate::device::cuda("copying columns to the device"))
            };
            up(input, ins[0], bytemuck::cast_slice(call.positions))?;
            up(input, ins[1], bytemuck::cast_slice(call.masses))?;
            up(input, ins[2], bytemuck::cast_slice(t_rows))?;
            up(input, ins[3], bytemuck::cast_slice(&NONE_BAD))?;
            let base = ptr(input);
            let at = |k: usize| base.wrapping_add(ins[k]);
            let targets = call.targets.map(|_| at(2));
            me.pack_columns::<T>(at(0), at(1), nsi, targets, ni, at(3), at(3))?;
            // Unpacked on the device into rows and (when wanted) a column.
            let (outs, out_len) = layout(&[n_t * 3 * sz, if p.potential { n_t * sz } else { 0 }]);
            let rbase = ptr(me.scratch[EXTRA_C].reserve(out_len)?);
            let column = if p.potential { rbase.wrapping_add(outs[1]) } else { null() };
            me.field_of_packed(&p, n_t, n_s, call.targets.is_some(), rbase, column)?;
            me.gpu.stream().synchronize().map_err(crate::device::cuda("running the kernels"))?;
            let mut flags = NONE_BAD;
            let input = me.scratch[EXTRA_A].buf_ref().ok_or(Error::NoDevice)?;
            download(&input.index(ins[3]..), bytemuck::cast_slice_mut(&mut flags))?;
            if flags != NONE_BAD {
                // Named on the host, as the host-slice calls name it.
                return Err(columns::first_bad(&call).unwrap_or(Error::Device {
                    during: "checking columns (the device saw a bad value the host does not)",
                    code: 0,
                }));
            }
            let result: &DeviceSlice<u8> = me.scratch[EXTRA_C].buf_ref().ok_or(Error::NoDevice)?;
            download(result, bytemuck::cast_slice_mut(acc))?;
            if let Some(phi) = phi {
                download(&result.index(outs[1]..), bytemuck::cast_slice_mut(phi))?;
            }
            Ok(())
        })
    }

    /// [`nbody_core::Executor::field_columns_device`]: the caller's device arrays are
    /// packed straight into records (checked as they go), then, once every value is
    /// known good, the tiled kernel runs and its field is unpacked into the caller's
    /// output arrays. The call waits (on the device) for the caller's streams before it
    /// reads, and returns once the outputs are written.
    ///
    /// # Safety
    /// As the trait method's.
    pub(crate) unsafe fn device_columns_call<T: DeviceReal>(
        &mut self,
        call: DeviceColumns,
        params: &Params<T>,
    ) -> Result<(), Error> {
        self.device_preamble::<T>(&call, params, "field_columns_device on the mixed kernels")?;
        if call.velocities.is_some() && call.targets.is_some() {
            return Err(Error::InvalidParameter {
                name: "targets",
                requirement: "none with velocities (the jerk is the particles' on themselves)",
            });
        }
        let (n_s, n_t) = (call.n, call.targets_len());
        let mut p = params.with_overlap(if call.targets.is_none() {
            nbody_core::Overlap::Identical
        } else {
            nbody_core::Overlap::Disjoint
        });
        p.potential = call.phi.is_some();
        self.guarded(|me| {
            // SAFETY: the caller's contract.
            unsafe { me.pack_device_particles::<T>(&call)? };
            let column = call.phi.map_or(null(), device);
            match call.jerk {
                Some(jerk) => me.jerk_of_packed(&p, n_s, device(call.acc), column, device(jerk))?,
                None => me.field_of_packed(&p, n_t, n_s, call.targets.is_some(), device(call.acc), column)?,
            }
            me.gpu.stream().synchronize().map_err(crate::device::cuda("running the kernels"))
        })
    }

    /// [`nbody_core::Executor::accelerations_batch_cells_device`]: the list checked on
    /// the host, the particles packed and checked on the device, the leaf kernels run on
    /// them and the field unpacked into the caller's outputs.
    ///
    /// # Safety
    /// As the trait method's.
    pub(crate) unsafe fn device_leaves_call<T: DeviceReal>(
        &mut self,
        call: DeviceColumns,
        cells: &[nbody_core::cell::Cell<T>],
        list: &nbody_core::LeafList<'_>,
        params: &Params<T>,
    ) -> Result<(), Error> {
        self.device_preamble::<T>(&call, params, "accelerations_batch_cells_device on the mixed kernels")?;
        if call.targets.is_some() || call.velocities.is_some() {
            return Err(Error::InvalidParameter {
                name: "targets",
                requirement: "none, nor velocities, in a leaf call (its targets are its particles)",
            });
        }
        nbody_core::cell::check(cells)?;
        list.validate(call.n, cells.len())?;
        let pairs: Vec<nbody_core::Pair> = list.cell_pairs().collect();
        let cell_list = nbody_core::InteractionList { pairs: &pairs, source_spans: list.cell_spans };
        let p = Params { potential: call.phi.is_some(), ..*params };
        self.leaves_on(crate::executor::Leaves::Device(call), None, &list.particles, cells, &cell_list, &p)
    }

    /// The checks of a device call that read no array: the parameters, the device, the
    /// family (the mixed kernels refuse: `operation`), jerk and velocities together.
    pub(crate) fn device_preamble<T: DeviceReal>(
        &self,
        call: &DeviceColumns,
        params: &Params<T>,
        operation: &'static str,
    ) -> Result<(), Error> {
        nbody_core::validate::params(params)?;
        if call.device != self.gpu.ordinal() {
            return Err(Error::InvalidParameter {
                name: "device",
                requirement: "the ordinal of the executor's own GPU (the arrays are on another)",
            });
        }
        if self.family::<T>() == Family::Mixed {
            return Err(Error::Unsupported {
                operation,
                reason: "they run on records sorted on the device: use the f32 or f64 executor",
            });
        }
        if call.velocities.is_some() != call.jerk.is_some() {
            return Err(Error::InvalidParameter {
                name: "jerk",
                requirement: "given with velocities, and only with them",
            });
        }
        Ok(())
    }

    /// Checks that every array of `call` is memory of this GPU, makes this executor's
    /// stream wait for the caller's streams, packs the particles (SOURCES, padded), the
    /// targets (EXTRA_B) and the velocities (EXTRA_B) and checks every value, naming the
    /// first bad one as the host would. Runs inside `guarded`.
    ///
    /// # Safety
    /// As [`nbody_core::Executor::field_columns_device`]'s.
    pub(crate) unsafe fn pack_device_particles<T: DeviceReal>(&mut self, call: &DeviceColumns) -> Result<(), Error> {
        let (n_s, n_t) = (call.n, call.targets_len());
        let (ni, nsi) = (count(n_t)?, count(n_s)?);
        let sz = size_of::<T>();
        for (what, address, len) in [
            ("positions", call.positions, n_s * 3 * sz),
            ("masses", call.masses, n_s * sz),
            ("targets", call.targets.map_or(0, |t| t.0), n_t * 3 * sz),
            ("acc", call.acc, n_t * 3 * sz),
            ("phi", call.phi.unwrap_or(0), n_t * sz),
            ("velocities", call.velocities.unwrap_or(0), n_s * 3 * sz),
            ("jerk", call.jerk.unwrap_or(0), n_t * 3 * sz),
        ] {
            if len > 0 && address != 0 {
                self.check_owned(what, address)?;
            }
        }
        let mut streams: Vec<u64> = call.streams.into_iter().flatten().collect();
        streams.sort_unstable();
        streams.dedup();
        for stream in streams {
            // The producer's writes first: this stream waits (on the device) for the
            // point the producer's stream has reached.
            let mark = crate::pipeline::Marker::new()?;
            // SAFETY: the caller vouches for the stream; the event is ours and live.
            unsafe { mark.record_raw(stream)? };
            mark.block(self.gpu.stream())?;
        }
        let flag_buf = self.scratch[EXTRA_A].reserve(4 * 3 * NONE_BAD.len())?;
        upload_padded(flag_buf, bytemuck::cast_slice(&[NONE_BAD; 3]), 0)?;
        let flags = ptr(flag_buf);
        let targets = call.targets.map(|(t, _)| device(t));
        let target_flags = flags.wrapping_add(4 * NONE_BAD.len());
        self.pack_columns::<T>(device(call.positions), device(call.masses), nsi, targets, ni, flags, target_flags)?;
        let velocity_flags = flags.wrapping_add(8 * NONE_BAD.len());
        if let Some(v) = call.velocities {
            // Into EXTRA_B (free: no targets with velocities), padded like the sources.
            self.pack_velocities::<T>(device(v), nsi, velocity_flags)?;
        }
        self.gpu.stream().synchronize().map_err(crate::device::cuda("packing columns"))?;
        let mut found = [NONE_BAD; 3];
        download(self.scratch[EXTRA_A].reserve(0)?, bytemuck::cast_slice_mut(&mut found))?;
        let bad = match flagged(found[0], found[1]) {
            Some((array, index, true)) => return Err(Error::NegativeMass { array, index }),
            Some((array, index, false)) => {
                (array, index, if array == nbody_core::Array::Targets { EXTRA_B } else { SOURCES })
            }
            None if found[2][0] != i32::MAX => (nbody_core::Array::Velocities, found[2][0] as usize, EXTRA_B),
            None => return Ok(()),
        };
        let (array, index, slot) = bad;
        Err(self.flagged_record::<T>(slot, array, index)?)
    }

    /// The error of record `index` of scratch slot `slot`, which a packing kernel flagged
    /// (of the caller's array `array`): out of range when every value is finite, else
    /// non-finite (the kernel's one flag covers both).
    pub(crate) fn flagged_record<T: DeviceReal>(
        &mut self,
        slot: usize,
        array: nbody_core::Array,
        index: usize,
    ) -> Result<Error, Error> {
        let sz = 4 * size_of::<T>();
        let mut record = [T::zero(); 4];
        download(
            &self.scratch[slot].reserve(0)?.index(index * sz..(index + 1) * sz),
            bytemuck::cast_slice_mut(&mut record),
        )?;
        let finite = record.iter().all(|v| v.is_finite());
        Ok(if finite { Error::OutOfRange { array, index } } else { Error::NonFinite { array, index } })
    }

    /// Unpacks the field in OUT (`call.n` records) into the caller's rows and column.
    pub(crate) fn unpack_device_field<T: DeviceReal>(&mut self, call: &DeviceColumns) -> Result<(), Error> {
        if call.n == 0 {
            return Ok(());
        }
        let records = ptr(self.scratch[OUT].buf_ref().ok_or(Error::NoDevice)?);
        let ni = count(call.n)?;
        let column = call.phi.map_or(null(), device);
        let unpack = ColumnsArgs { records, rows: device(call.acc), column, first_bad: null(), n: ni, padded: ni };
        // SAFETY: n records in; 3 n rows and n potentials out (the caller's word).
        unsafe { self.launch_columns::<T>(true, call.n, unpack, "unpacking columns") }
    }

    /// Launches the packing (`unpack` false) or unpacking kernel of precision `T` over
    /// `threads` records.
    ///
    /// # Safety
    /// `args` names buffers that hold what the kernel reads and writes for `args.n` and
    /// `args.padded` records.
    pub(crate) unsafe fn launch_columns<T: DeviceReal>(
        &self,
        unpack: bool,
        threads: usize,
        args: ColumnsArgs,
        what: &'static str,
    ) -> Result<(), Error> {
        let kernel =
            if unpack { Kernel::UnpackColumns { tag: T::FAMILY } } else { Kernel::PackColumns { tag: T::FAMILY } };
        // SAFETY: the caller's word.
        unsafe { self.launch(kernel, threads.div_ceil(256) as u32, 256, args, what) }
    }

    /// Refuses `address` (the caller's array `what`) unless the driver places it in
    /// device memory of this executor's GPU.
    pub(crate) fn check_owned(&self, what: &'static str, address: u64) -> Result<(), Error> {
        if crate::DeviceMemory::ordinal_of(address) != Some(self.gpu.ordinal()) {
            return Err(Error::InvalidParameter { name: what, requirement: "device memory of the executor's GPU" });
        }
        Ok(())
    }

    /// Queues the packing of `n_s` sources (rows and masses; padded with massless
    /// records to [`SOURCE_PAD`]) into the SOURCES slot and, when given, `n_t` targets'
    /// rows into EXTRA_B; the first bad index of each kind goes to `source_flags` and
    /// `target_flags` (two ints each, [`NONE_BAD`] before).
    #[allow(clippy::too_many_arguments)]
    fn pack_columns<T: DeviceReal>(
        &mut self,
        rows: Ptr,
        masses: Ptr,
        n_s: i32,
        targets: Option<Ptr>,
        n_t: i32,
        source_flags: Ptr,
        target_flags: Ptr,
    ) -> Result<(), Error> {
        let padded = (n_s as usize).next_multiple_of(SOURCE_PAD);
        if padded > 0 {
            let records = ptr(self.scratch[SOURCES].reserve(padded * 4 * size_of::<T>())?);
            let pack =
                ColumnsArgs { records, rows, column: masses, first_bad: source_flags, n: n_s, padded: count(padded)? };
            // SAFETY: the rows hold 3 n_s values and the column n_s (the caller's word),
            // the records `padded`, the flags two ints.
            unsafe { self.launch_columns::<T>(false, padded, pack, "packing columns")? };
        }
        if let Some(t_rows) = targets.filter(|_| n_t > 0) {
            let records = ptr(self.scratch[EXTRA_B].reserve(n_t as usize * 4 * size_of::<T>())?);
            let pack =
                ColumnsArgs { records, rows: t_rows, column: null(), first_bad: target_flags, n: n_t, padded: n_t };
            // SAFETY: as above, for the targets' rows and n_t records.
            unsafe { self.launch_columns::<T>(false, n_t as usize, pack, "packing targets")? };
        }
        Ok(())
    }

    /// Queues the packing of `n` velocity rows into records (`[vx, vy, vz, 0]`) in
    /// EXTRA_B, padded with zeros as the sources are; a non-finite value's first index
    /// goes to `flags` (two ints, [`NONE_BAD`] before; the second stays).
    fn pack_velocities<T: DeviceReal>(&mut self, rows: Ptr, n: i32, flags: Ptr) -> Result<(), Error> {
        let padded = (n as usize).next_multiple_of(SOURCE_PAD);
        if padded == 0 {
            return Ok(());
        }
        let records = ptr(self.scratch[EXTRA_B].reserve(padded * 4 * size_of::<T>())?);
        let pack = ColumnsArgs { records, rows, column: null(), first_bad: flags, n, padded: count(padded)? };
        // SAFETY: the rows hold 3 n values (the caller's word), the records `padded`, the
        // flags two ints.
        unsafe { self.launch_columns::<T>(false, padded, pack, "packing velocities") }
    }

    /// Queues the field and jerk of the `n` packed particles (SOURCES, velocities in
    /// EXTRA_B) on themselves and their unpacking into `rows` (3 n), `column` (n, unless
    /// null) and `jerk_rows` (3 n).
    fn jerk_of_packed<T: DeviceReal>(
        &mut self,
        p: &Params<T>,
        n: usize,
        rows: Ptr,
        column: Ptr,
        jerk_rows: Ptr,
    ) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let rec = 4 * size_of::<T>();
        let padded = n.next_multiple_of(SOURCE_PAD);
        upload_padded(self.scratch[OUT].reserve(n * rec)?, &[], n * rec)?;
        upload_padded(self.scratch[EXTRA_C].reserve(n * rec)?, &[], n * rec)?;
        let b = |k: usize| self.scratch[k].buf_ref().map(|b| ptr(b)).ok_or(Error::NoDevice);
        let (particles, velocities, field, jerk) = (b(SOURCES)?, b(EXTRA_B)?, b(OUT)?, b(EXTRA_C)?);
        let bufs = crate::jerk::JerkBuffers {
            targets: particles,
            target_vel: velocities,
            sources: particles,
            source_vel: velocities,
            out: field,
            jerk,
        };
        let (sm_count, per_thread, wide) =
            (self.gpu.info().sm_count, self.jerk_per_thread, self.two_per_thread::<T>(false));
        let at = crate::jerk::PART_ACC;
        let partials: &mut [crate::memory::Scratch; 3] =
            (&mut self.scratch[at..at + 3]).try_into().map_err(|_| Error::NoDevice)?;
        let staged =
            crate::jerk::Staged::resident(bufs, n, n, padded, sm_count, per_thread, partials, (size_of::<T>(), wide))?;
        self.launch_jerk(&staged, p)?;
        let ni = count(n)?;
        for (records, rows, column, what) in
            [(field, rows, column, "unpacking the field"), (jerk, jerk_rows, null(), "unpacking the jerk")]
        {
            let unpack = ColumnsArgs { records, rows, column, first_bad: null(), n: ni, padded: ni };
            // SAFETY: n records in; 3 n rows and n values out (the caller's word).
            unsafe { self.launch_columns::<T>(true, n, unpack, what)? };
        }
        Ok(())
    }

    /// Queues the field of the packed sources (SOURCES) on the packed targets (EXTRA_B
    /// when `targets`, else the sources themselves) and its unpacking into `rows` (3 n_t
    /// values) and, unless null, `column` (n_t).
    fn field_of_packed<T: DeviceReal>(
        &mut self,
        p: &Params<T>,
        n_t: usize,
        n_s: usize,
        targets: bool,
        rows: Ptr,
        column: Ptr,
    ) -> Result<(), Error> {
        let rec = size_of::<Field<T>>();
        if n_t == 0 {
            return Ok(());
        }
        let padded = n_s.next_multiple_of(SOURCE_PAD);
        let tgt = if targets { EXTRA_B } else { SOURCES };
        let out = self.scratch[OUT].reserve(n_t * rec)?;
        upload_padded(out, &[], n_t * rec)?;
        if n_s > 0 {
            let plummer = nbody_core::kernel::Softened::of(p).softening() == nbody_core::Softening::Plummer;
            let soft = (!plummer).then(|| TiledSoft::of(p));
            let config = match soft {
                Some(_) => self.soft_config(n_t, n_s, padded, p)?,
                None => self.config_for(n_t, n_s, p)?,
            };
            let s = &self.scratch;
            let (t, src, o) = (
                s[tgt].buf_ref().ok_or(Error::NoDevice)?,
                s[SOURCES].buf_ref().ok_or(Error::NoDevice)?,
                s[OUT].buf_ref().ok_or(Error::NoDevice)?,
            );
            match soft {
                Some(soft) => self.launch_tiled_as(config, t, n_t, src, padded, o, p, soft)?,
                None => self.launch_tiled(config, t, n_t, src, padded, o, p)?,
            }
        }
        let records = ptr(self.scratch[OUT].buf_ref().ok_or(Error::NoDevice)?);
        let ni = count(n_t)?;
        let unpack = ColumnsArgs { records, rows, column, first_bad: null(), n: ni, padded: ni };
        // SAFETY: n_t records in; 3 n_t rows and n_t potentials out (the caller's word).
        unsafe { self.launch_columns::<T>(true, n_t, unpack, "unpacking columns") }
    }
}

/// A caller's device address as a kernel argument.
fn device(address: u64) -> Ptr {
    cust::memory::DevicePointer::from_raw(address)
}

/// Which bad value a packing kernel's flags point at (first non-finite or out-of-range
/// index, first negative mass), targets' before sources' as the host checks them;
/// `None` when every value was good.
fn flagged(sources: [i32; 2], targets: [i32; 2]) -> Option<(nbody_core::Array, usize, bool)> {
    use nbody_core::Array;
    if targets[0] != i32::MAX {
        return Some((Array::Targets, targets[0] as usize, false));
    }
    let (bad, negative) = (sources[0], sources[1]);
    if bad == i32::MAX && negative == i32::MAX {
        return None;
    }
    Some(if bad <= negative {
        (Array::Particles, bad as usize, false)
    } else {
        (Array::Particles, negative as usize, true)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_start_on_256_byte_boundaries() {
        let (at, len) = super::layout(&[12, 0, 300, 8]);
        assert_eq!(at, vec![0, 256, 256, 768]);
        assert_eq!(len, 1024);
    }
}
