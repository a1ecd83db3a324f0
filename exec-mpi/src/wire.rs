//! Records on the wire: particles, velocities and fields travel as their bytes (all are
//! `bytemuck::Pod`), and gathers of uneven slices are laid out from per-rank counts.

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nbody_core::Error;

/// The bytes of a slice of records.
pub(crate) fn bytes<R: bytemuck::Pod>(records: &[R]) -> &[u8] {
    bytemuck::cast_slice(records)
}

/// The bytes of a mutable slice of records.
pub(crate) fn bytes_mut<R: bytemuck::Pod>(records: &mut [R]) -> &mut [u8] {
    bytemuck::cast_slice_mut(records)
}

/// A message of `n` records of `R` must fit MPI's `int` count of bytes (about 2 GiB:
/// 134 million f32 particles): checked before any message is posted, from counts every
/// rank knows, so every rank reaches the same verdict.
pub(crate) fn check_count<R>(n: usize) -> Result<(), Error> {
    match n.checked_mul(std::mem::size_of::<R>()) {
        Some(b) if b <= Count::MAX as usize => Ok(()),
        _ => Err(Error::InvalidParameter {
            name: "particles per message",
            requirement: "at most 2^31 bytes per rank's slice (use more ranks)",
        }),
    }
}

/// Gathers every member's `mine` (of `counts[k]` records on member `k`) into one
/// vector, in member order, on every member of `comm`.
pub(crate) fn all_gather<R: bytemuck::Pod + bytemuck::Zeroable>(
    comm: &SimpleCommunicator,
    mine: &[R],
    counts: &[usize],
) -> Vec<R> {
    let size = std::mem::size_of::<R>();
    let byte_counts: Vec<Count> = counts.iter().map(|&c| (c * size) as Count).collect();
    let displs: Vec<Count> = byte_counts
        .iter()
        .scan(0 as Count, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut all = vec![R::zeroed(); counts.iter().sum()];
    {
        let mut partition = PartitionMut::new(bytes_mut(&mut all), byte_counts, &displs[..]);
        comm.all_gather_varcount_into(bytes(mine), &mut partition);
    }
    all
}
