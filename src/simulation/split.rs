//! Checkpoints of a system split over processes (MPI ranks), gathered into one: what a
//! share saves and how a share is taken back, on as many ranks as wrote it or another
//! number.

use nbody_core::Error;
use nbody_integrators::Words;

/// One share of a split checkpoint: the words every share saves alike, and this
/// share's part of each per-particle array.
pub type Share = (Vec<u64>, Vec<Vec<u64>>);

/// Marks a checkpoint gathered from several ranks.
pub const SPLIT: u64 = u64::from_le_bytes(*b"NBRANKS1");

/// The error of a checkpoint that is not a gathered one of this run.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn not_gathered() -> Error {
    Error::InvalidParameter { name: "checkpoint", requirement: "one gathered from MPI ranks, of this run's particles" }
}

/// One share of a gathered checkpoint (after its [`SPLIT`] mark) for rank `rank` of
/// `size`: its shared words and its part of every array (`expected`, where given, must
/// be the saved particle count). On as many ranks as wrote it, each rank's own words
/// (bit for bit); on another number, rank 0's shared words (time, steps and step sizes
/// are the same on every rank) and the rank's new share of every array.
///
/// ```
/// use nbody::integrators::Words;
/// use nbody::simulation::take_share;
/// // One rank's shared words [7], one array of two particles, one word each.
/// let words = [1, 2, 1, 7, 1, 2, 10, 20];
/// let (own, arrays) = take_share(&mut Words::new(&words), 2, 1, Some(2))?;
/// assert_eq!((own, arrays), (vec![7], vec![vec![20]]));
/// # Ok::<(), nbody::Error>(())
/// ```
pub fn take_share(w: &mut Words<'_>, size: usize, rank: usize, expected: Option<usize>) -> Result<Share, Error> {
    let ranks = w.len(0)?;
    let n = usize::try_from(w.word()?).map_err(|_| not_gathered())?;
    if ranks == 0 || expected.is_some_and(|e| e != n) {
        return Err(not_gathered());
    }
    let mut shared = Vec::with_capacity(ranks);
    for _ in 0..ranks {
        let len = w.len(1)?;
        shared.push((0..len).map(|_| w.word()).collect::<Result<Vec<u64>, Error>>()?);
    }
    let share = n * rank / size..n * (rank + 1) / size;
    let count = w.len(1)?;
    let mut mine = Vec::with_capacity(count);
    for _ in 0..count {
        let len = w.len(1)?;
        let all = (0..len).map(|_| w.word()).collect::<Result<Vec<u64>, Error>>()?;
        let per = len.checked_div(n).unwrap_or(0);
        if per * n != len {
            return Err(not_gathered());
        }
        mine.push(all[share.start * per..share.end * per].to_vec());
    }
    let own = if ranks == size { shared.swap_remove(rank) } else { shared.swap_remove(0) };
    Ok((own, mine))
}
