//! Columns calls ([`nbody_core::Executor::field_columns`]): the caller's rows of
//! positions and column of masses go up as they are, a kernel packs them into records
//! (checking every value as it goes), the tiled kernel runs on the records, and a kernel
//! unpacks the field into rows of accelerations and a column of potentials that come
//! down straight into the caller's arrays. The host makes no pass over the particles,
//! which for a front end such as Python's is the difference between a call that costs
//! what the kernel costs and one that adds a pack and an unpack on one core.

use crate::args::{ColumnsArgs, null};
use crate::kernels::{Kernel, count};
use crate::memory::{download, ptr, upload_padded};
use crate::tiled::TiledSoft;
use crate::{CudaExecutor, DeviceReal, EXTRA_A, EXTRA_B, EXTRA_C, Family, OUT, SOURCE_PAD, SOURCES};
use cust::memory::{CopyDestination, DeviceSlice};
use nbody_core::columns::{self, ColumnsCall};
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
        let padded = n_s.next_multiple_of(SOURCE_PAD);
        let (sz, rec) = (size_of::<T>(), size_of::<Field<T>>());
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
            // Packed on the device: sources padded, targets (massless) as they are.
            let sources = me.scratch[SOURCES].reserve(padded * 4 * sz)?;
            let src = ptr(sources);
            let pack = ColumnsArgs {
                records: src,
                rows: at(0),
                column: at(1),
                first_bad: at(3),
                n: nsi,
                padded: count(padded)?,
            };
            let blocks = |n: usize| n.div_ceil(256) as u32;
            // SAFETY: the rows hold 3 n values, the column n, the records `padded`; the
            // flags two ints; all in buffers reserved above.
            unsafe { me.launch(Kernel::PackColumns { tag: T::FAMILY }, blocks(padded), 256, pack, "packing columns")? };
            let tgt = if call.targets.is_some() {
                let t = ptr(me.scratch[EXTRA_B].reserve(n_t * 4 * sz)?);
                let pack = ColumnsArgs { records: t, rows: at(2), column: null(), first_bad: at(3), n: ni, padded: ni };
                // SAFETY: as above, for the targets' rows and n_t records.
                unsafe {
                    me.launch(Kernel::PackColumns { tag: T::FAMILY }, blocks(n_t), 256, pack, "packing targets")?
                };
                EXTRA_B
            } else {
                SOURCES
            };
            let out = me.scratch[OUT].reserve(n_t * rec)?;
            upload_padded(out, &[], n_t * rec)?;
            let plummer = nbody_core::kernel::Softened::of(&p).softening() == nbody_core::Softening::Plummer;
            let soft = (!plummer).then(|| TiledSoft::of(&p));
            let config = match soft {
                Some(_) => me.soft_config(n_t, n_s, padded, &p)?,
                None => me.config_for(n_t, n_s, &p)?,
            };
            {
                let s = &me.scratch;
                let (t, src, o) = (
                    s[tgt].buf_ref().ok_or(Error::NoDevice)?,
                    s[SOURCES].buf_ref().ok_or(Error::NoDevice)?,
                    s[OUT].buf_ref().ok_or(Error::NoDevice)?,
                );
                match soft {
                    Some(soft) => me.launch_tiled_as(config, t, n_t, src, padded, o, &p, soft)?,
                    None => me.launch_tiled(config, t, n_t, src, padded, o, &p)?,
                }
            }
            // Unpacked on the device into rows and (when wanted) a column.
            let (outs, out_len) = layout(&[n_t * 3 * sz, if p.potential { n_t * sz } else { 0 }]);
            let o = ptr(me.scratch[OUT].buf_ref().ok_or(Error::NoDevice)?);
            let result = me.scratch[EXTRA_C].reserve(out_len)?;
            let rbase = ptr(result);
            let unpack = ColumnsArgs {
                records: o,
                rows: rbase,
                column: if p.potential { rbase.wrapping_add(outs[1]) } else { null() },
                first_bad: null(),
                n: ni,
                padded: ni,
            };
            // SAFETY: n_t records in, 3 n_t rows and n_t potentials out, reserved above.
            unsafe {
                me.launch(Kernel::UnpackColumns { tag: T::FAMILY }, blocks(n_t), 256, unpack, "unpacking columns")?
            };
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
