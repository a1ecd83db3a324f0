//! What an integrator carries from one step to the next, as 64-bit words, so that a run
//! stopped after any step continues bit for bit: the state's positions and velocities,
//! the time, and each integrator's own arrays (the last field, Hermite's jerks and
//! step, block-step times).
//!
//! ```
//! use nbody_core::Reference;
//! use nbody_integrators::{ics, Checkpoint, Leapfrog, State, Words};
//! let (p, v) = ics::plummer::<f64>(32, 1);
//! let (mut a, mut b) = (State::new(p.clone(), v.clone()), State::new(p, v));
//! let mut lf = Leapfrog::new(0.01, 0.01)?;
//! lf.step(&mut a, &mut Reference)?;
//! let mut words = Vec::new();
//! a.save(&mut words);
//! lf.save(&mut words);
//! let mut again = Leapfrog::new(0.01, 0.01)?;
//! let mut w = Words::new(&words);
//! b.restore(&mut w)?;
//! again.restore(&mut w)?;
//! lf.step(&mut a, &mut Reference)?;
//! again.step(&mut b, &mut Reference)?;
//! assert_eq!(a, b);
//! # Ok::<(), nbody_core::Error>(())
//! ```

use crate::State;
use nbody_core::{Error, Field, Jerk, Particle, Real, Velocity};

/// Saved and restored between steps.
pub trait Checkpoint {
    /// Appends the state to `out`.
    fn save(&self, out: &mut Vec<u64>);
    /// Takes the state back from `words` (what [`Checkpoint::save`] wrote).
    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error>;

    /// The state of one share of a system split over processes: the words every share
    /// holds alike go to `shared`, each per-particle array (a fixed number of words per
    /// particle, in particle order) to `arrays`, so that the shares' arrays concatenated
    /// can be cut again for another split. The default writes everything to `shared`,
    /// which is right for state without per-particle arrays; integrators with such
    /// arrays override both split methods.
    fn save_split(&self, shared: &mut Vec<u64>, arrays: &mut Vec<Vec<u64>>) {
        let _ = arrays;
        self.save(shared);
    }

    /// Takes one share's state back: the shared words, and this share's part of each
    /// array [`Checkpoint::save_split`] wrote.
    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        let _ = arrays;
        self.restore(shared)
    }
}

/// One share's part of each per-particle array of a split checkpoint, in the order
/// [`Checkpoint::save_split`] wrote them.
///
/// ```
/// use nbody_integrators::{ics, Arrays, Checkpoint, State, Words};
/// let (p, v) = ics::plummer::<f64>(8, 1);
/// let s = State::new(p, v);
/// let (mut shared, mut arrays) = (Vec::new(), Vec::new());
/// s.save_split(&mut shared, &mut arrays);
/// let mut back = State::new(Vec::new(), Vec::new());
/// let parts: Vec<&[u64]> = arrays.iter().map(Vec::as_slice).collect();
/// back.restore_split(&mut Words::new(&shared), &mut Arrays::new(&parts))?;
/// assert_eq!(back, s);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Arrays<'a> {
    arrays: &'a [&'a [u64]],
    at: usize,
}

impl<'a> Arrays<'a> {
    /// This share's part of each array, in order.
    pub fn new(arrays: &'a [&'a [u64]]) -> Self {
        Self { arrays, at: 0 }
    }

    /// The next array as values of `T`, `per` to a particle (its length must be a
    /// multiple of `per`).
    pub fn reals<T: Real>(&mut self, per: usize) -> Result<Vec<T>, Error> {
        let a = *self.arrays.get(self.at).ok_or_else(short)?;
        self.at += 1;
        if !a.len().is_multiple_of(per) {
            return Err(short());
        }
        Ok(a.iter().map(|&w| T::from_f64(f64::from_bits(w))).collect())
    }
}

/// Appends values as one per-particle array.
pub(crate) fn put_array<T: Real>(arrays: &mut Vec<Vec<u64>>, xs: impl IntoIterator<Item = T>) {
    arrays.push(xs.into_iter().map(|x| x.to_f64().to_bits()).collect());
}

/// Appends a field array (four lanes each).
pub(crate) fn put_field_array<T: Real>(arrays: &mut Vec<Vec<u64>>, f: &[Field<T>]) {
    put_array(arrays, f.iter().flat_map(|f| [f.ax, f.ay, f.az, f.phi]));
}

/// Reads a field array.
pub(crate) fn take_field_array<T: Real>(a: &mut Arrays<'_>) -> Result<Vec<Field<T>>, Error> {
    Ok(a.reals::<T>(4)?.chunks_exact(4).map(|c| Field::new(c[0], c[1], c[2], c[3])).collect())
}

/// Appends a jerk array (three lanes each).
pub(crate) fn put_jerk_array<T: Real>(arrays: &mut Vec<Vec<u64>>, j: &[Jerk<T>]) {
    put_array(arrays, j.iter().flat_map(|j| j.components()));
}

/// Reads a jerk array.
pub(crate) fn take_jerk_array<T: Real>(a: &mut Arrays<'_>) -> Result<Vec<Jerk<T>>, Error> {
    Ok(a.reals::<T>(3)?.chunks_exact(3).map(|c| Jerk::new(c[0], c[1], c[2])).collect())
}

/// Appends f64 triples as an array.
pub(crate) fn put_triple_array(arrays: &mut Vec<Vec<u64>>, v: &[[f64; 3]]) {
    put_array(arrays, v.iter().flatten().copied());
}

/// Reads f64 triples.
pub(crate) fn take_triple_array(a: &mut Arrays<'_>) -> Result<Vec<[f64; 3]>, Error> {
    Ok(a.reals::<f64>(3)?.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// Appends the FNV-1a checksum of `bytes` to them: the last word of every saved file
/// (the command's checkpoints, Python's and C's saved runs), so damage is found, not
/// loaded.
///
/// ```
/// let mut bytes = b"NBODY".to_vec();
/// nbody_integrators::seal(&mut bytes);
/// assert_eq!(nbody_integrators::unseal(&bytes), Some(&b"NBODY"[..]));
/// bytes[1] ^= 1;
/// assert_eq!(nbody_integrators::unseal(&bytes), None);
/// ```
pub fn seal(bytes: &mut Vec<u8>) {
    let sum = fnv1a(bytes);
    bytes.extend(sum.to_le_bytes());
}

/// The bytes [`seal`] sealed, without their checksum; `None` when it does not match or
/// they are too short to hold one.
pub fn unseal(bytes: &[u8]) -> Option<&[u8]> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    (fnv1a(body) == u64::from_le_bytes(sum.try_into().ok()?)).then_some(body)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Words being read back, in order.
#[derive(Debug)]
pub struct Words<'a> {
    words: &'a [u64],
    at: usize,
}

fn short() -> Error {
    Error::InvalidParameter { name: "checkpoint", requirement: "complete (it ends early or is of another integrator)" }
}

impl<'a> Words<'a> {
    /// Reads `words` from the start.
    pub fn new(words: &'a [u64]) -> Self {
        Self { words, at: 0 }
    }

    /// The next word.
    pub fn word(&mut self) -> Result<u64, Error> {
        let w = *self.words.get(self.at).ok_or_else(short)?;
        self.at += 1;
        Ok(w)
    }

    /// The next word as an f64.
    pub fn f64(&mut self) -> Result<f64, Error> {
        self.word().map(f64::from_bits)
    }

    /// A count, bounded by what is left (a corrupt count cannot ask for the moon).
    pub fn len(&mut self, per_item: usize) -> Result<usize, Error> {
        let n = usize::try_from(self.word()?).map_err(|_| short())?;
        match n.checked_mul(per_item) {
            Some(need) if need <= self.words.len() - self.at => Ok(n),
            _ => Err(short()),
        }
    }

    /// `n` values of `T` (each saved through f64, which is exact for f32 and f64).
    fn reals<T: Real>(&mut self, n: usize) -> Result<Vec<T>, Error> {
        (0..n).map(|_| self.f64().map(T::from_f64)).collect()
    }

    /// True when every word was read.
    pub fn is_done(&self) -> bool {
        self.at == self.words.len()
    }
}

/// Appends `x` as its bits.
pub(crate) fn put(out: &mut Vec<u64>, x: f64) {
    out.push(x.to_bits());
}

fn put_reals<T: Real>(out: &mut Vec<u64>, xs: impl IntoIterator<Item = T>) {
    out.extend(xs.into_iter().map(|x| x.to_f64().to_bits()));
}

/// Appends a field array (count, then four lanes each, as f64 bits): for integrators
/// outside this crate that keep a field in their checkpoints.
///
/// ```
/// use nbody_core::Field;
/// use nbody_integrators::{put_fields, take_fields, Words};
/// let mut w = Vec::new();
/// put_fields(&mut w, &[Field::new(1.0f32, 2.0, 3.0, -4.0)]);
/// assert_eq!(take_fields::<f32>(&mut Words::new(&w))?, vec![Field::new(1.0, 2.0, 3.0, -4.0)]);
/// # Ok::<(), nbody_core::Error>(())
/// ```
pub fn put_fields<T: Real>(out: &mut Vec<u64>, f: &[Field<T>]) {
    out.push(f.len() as u64);
    put_reals(out, f.iter().flat_map(|f| [f.ax, f.ay, f.az, f.phi]));
}

/// Reads a field array [`put_fields`] wrote.
pub fn take_fields<T: Real>(w: &mut Words<'_>) -> Result<Vec<Field<T>>, Error> {
    let n = w.len(4)?;
    let v = w.reals::<T>(4 * n)?;
    Ok(v.chunks_exact(4).map(|c| Field::new(c[0], c[1], c[2], c[3])).collect())
}

/// Appends a jerk array (count, then three lanes each).
pub(crate) fn put_jerks<T: Real>(out: &mut Vec<u64>, j: &[Jerk<T>]) {
    out.push(j.len() as u64);
    put_reals(out, j.iter().flat_map(|j| j.components()));
}

/// Reads a jerk array.
pub(crate) fn take_jerks<T: Real>(w: &mut Words<'_>) -> Result<Vec<Jerk<T>>, Error> {
    let n = w.len(3)?;
    let v = w.reals::<T>(3 * n)?;
    Ok(v.chunks_exact(3).map(|c| Jerk::new(c[0], c[1], c[2])).collect())
}

/// Appends f64 triples (count, then three each).
pub(crate) fn put_triples(out: &mut Vec<u64>, v: &[[f64; 3]]) {
    out.push(v.len() as u64);
    out.extend(v.iter().flatten().map(|x| x.to_bits()));
}

/// Reads f64 triples.
pub(crate) fn take_triples(w: &mut Words<'_>) -> Result<Vec<[f64; 3]>, Error> {
    let n = w.len(3)?;
    (0..n).map(|_| Ok([w.f64()?, w.f64()?, w.f64()?])).collect()
}

/// Appends f64 values (count, then each).
pub(crate) fn put_f64s(out: &mut Vec<u64>, v: &[f64]) {
    out.push(v.len() as u64);
    out.extend(v.iter().map(|x| x.to_bits()));
}

/// Reads f64 values.
pub(crate) fn take_f64s(w: &mut Words<'_>) -> Result<Vec<f64>, Error> {
    let n = w.len(1)?;
    (0..n).map(|_| w.f64()).collect()
}

impl<T: Real> Checkpoint for State<T> {
    fn save(&self, out: &mut Vec<u64>) {
        put(out, self.time);
        out.push(self.pos.len() as u64);
        put_reals(out, self.pos.iter().flat_map(|p| [p.x, p.y, p.z, p.m]));
        put_reals(out, self.vel.iter().flat_map(|v| v.components()));
    }

    fn save_split(&self, shared: &mut Vec<u64>, arrays: &mut Vec<Vec<u64>>) {
        put(shared, self.time);
        put_array(arrays, self.pos.iter().flat_map(|p| [p.x, p.y, p.z, p.m]));
        put_array(arrays, self.vel.iter().flat_map(|v| v.components()));
    }

    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        self.time = shared.f64()?;
        let (p, v) = (arrays.reals::<T>(4)?, arrays.reals::<T>(3)?);
        if p.len() / 4 != v.len() / 3 {
            return Err(short());
        }
        self.pos = p.chunks_exact(4).map(|c| Particle::new(c[0], c[1], c[2], c[3])).collect();
        self.vel = v.chunks_exact(3).map(|c| Velocity::new(c[0], c[1], c[2])).collect();
        Ok(())
    }

    fn restore(&mut self, w: &mut Words<'_>) -> Result<(), Error> {
        self.time = w.f64()?;
        let n = w.len(7)?;
        let p = w.reals::<T>(4 * n)?;
        let v = w.reals::<T>(3 * n)?;
        self.pos = p.chunks_exact(4).map(|c| Particle::new(c[0], c[1], c[2], c[3])).collect();
        self.vel = v.chunks_exact(3).map(|c| Velocity::new(c[0], c[1], c[2])).collect();
        Ok(())
    }
}
