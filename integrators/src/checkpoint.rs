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

/// Saved and restored between steps. An implementation says once what it carries
/// ([`Checkpoint::save_to`] and [`Checkpoint::restore_from`], in the same order): its
/// shared words and its per-particle arrays. Where they go decides the form: one run of
/// words ([`Checkpoint::save`]), or for one share of a system split over processes the
/// shared words apart from the arrays ([`Checkpoint::save_split`]), so that the shares'
/// arrays concatenated can be cut again for another split.
///
/// ```
/// use nbody_core::Error;
/// use nbody_integrators::{Checkpoint, Sink, Source, Words};
/// struct Steps { dt: f64, per_particle: Vec<f64> }
/// impl Checkpoint for Steps {
///     fn save_to(&self, out: &mut Sink<'_>) {
///         out.f64(self.dt);
///         out.f64s(&self.per_particle);
///     }
///     fn restore_from(&mut self, from: &mut Source<'_, '_, '_>) -> Result<(), Error> {
///         self.dt = from.f64()?;
///         self.per_particle = from.f64s()?;
///         Ok(())
///     }
/// }
/// let mut words = Vec::new();
/// Steps { dt: 0.5, per_particle: vec![1.0, 2.0] }.save(&mut words);
/// let mut back = Steps { dt: 0.0, per_particle: Vec::new() };
/// back.restore(&mut Words::new(&words))?;
/// assert_eq!((back.dt, back.per_particle), (0.5, vec![1.0, 2.0]));
/// # Ok::<(), Error>(())
/// ```
pub trait Checkpoint {
    /// Writes the state: shared words and per-particle arrays.
    fn save_to(&self, out: &mut Sink<'_>);
    /// Reads the state back, in the order [`Checkpoint::save_to`] wrote it.
    fn restore_from(&mut self, from: &mut Source<'_, '_, '_>) -> Result<(), Error>;

    /// Appends the state to `out` as one run of words.
    fn save(&self, out: &mut Vec<u64>) {
        self.save_to(&mut Sink::Flat(out));
    }

    /// Takes the state back from `words` (what [`Checkpoint::save`] wrote).
    fn restore(&mut self, words: &mut Words<'_>) -> Result<(), Error> {
        self.restore_from(&mut Source::Flat(words))
    }

    /// The state of one share of a split system: shared words to `shared`, each
    /// per-particle array (a fixed number of words per particle, in particle order) to
    /// `arrays`.
    fn save_split(&self, shared: &mut Vec<u64>, arrays: &mut Vec<Vec<u64>>) {
        self.save_to(&mut Sink::Split { shared, arrays });
    }

    /// Takes one share's state back: the shared words, and this share's part of each
    /// array [`Checkpoint::save_split`] wrote.
    fn restore_split(&mut self, shared: &mut Words<'_>, arrays: &mut Arrays<'_>) -> Result<(), Error> {
        self.restore_from(&mut Source::Split(shared, arrays))
    }
}

/// Where a [`Checkpoint`] writes: one run of words (an array as its count of particles,
/// then its values), or a share's shared words apart from its arrays.
#[derive(Debug)]
pub enum Sink<'a> {
    /// One run of words.
    Flat(&'a mut Vec<u64>),
    /// Shared words and per-particle arrays apart.
    Split {
        /// The words every share holds alike.
        shared: &'a mut Vec<u64>,
        /// One entry per per-particle array.
        arrays: &'a mut Vec<Vec<u64>>,
    },
}

impl Sink<'_> {
    /// A shared word.
    pub fn word(&mut self, w: u64) {
        match self {
            Sink::Flat(out) | Sink::Split { shared: out, .. } => out.push(w),
        }
    }

    /// A shared f64, as its bits.
    pub fn f64(&mut self, x: f64) {
        self.word(x.to_bits());
    }

    /// A per-particle array of `per` values a particle (each saved through f64, which
    /// is exact for f32 and f64).
    pub fn array<T: Real>(&mut self, per: usize, values: impl IntoIterator<Item = T>) {
        let v: Vec<u64> = values.into_iter().map(|x| x.to_f64().to_bits()).collect();
        match self {
            Sink::Flat(out) => {
                out.push((v.len() / per) as u64);
                out.extend(v);
            }
            Sink::Split { arrays, .. } => arrays.push(v),
        }
    }

    /// A field per particle.
    pub fn fields<T: Real>(&mut self, f: &[Field<T>]) {
        self.array(4, f.iter().flat_map(|f| [f.ax, f.ay, f.az, f.phi]));
    }

    /// A jerk per particle.
    pub fn jerks<T: Real>(&mut self, j: &[Jerk<T>]) {
        self.array(3, j.iter().flat_map(|j| j.components()));
    }

    /// Three f64 per particle.
    pub fn triples(&mut self, v: &[[f64; 3]]) {
        self.array(3, v.iter().flatten().copied());
    }

    /// One f64 per particle.
    pub fn f64s(&mut self, v: &[f64]) {
        self.array(1, v.iter().copied());
    }
}

/// Where a [`Checkpoint`] reads what [`Sink`] wrote: one run of words, or a share's
/// shared words and its part of each array.
#[derive(Debug)]
pub enum Source<'s, 'w, 'a> {
    /// One run of words.
    Flat(&'s mut Words<'w>),
    /// Shared words, and this share's arrays.
    Split(&'s mut Words<'w>, &'s mut Arrays<'a>),
}

impl Source<'_, '_, '_> {
    /// The next shared word.
    pub fn word(&mut self) -> Result<u64, Error> {
        match self {
            Source::Flat(w) | Source::Split(w, _) => w.word(),
        }
    }

    /// The next shared f64.
    pub fn f64(&mut self) -> Result<f64, Error> {
        self.word().map(f64::from_bits)
    }

    /// The next shared word as a flag.
    pub fn flag(&mut self) -> Result<bool, Error> {
        Ok(self.word()? != 0)
    }

    /// The next per-particle array, `per` values a particle.
    pub fn array<T: Real>(&mut self, per: usize) -> Result<Vec<T>, Error> {
        match self {
            Source::Flat(w) => {
                let n = w.len(per)?;
                w.reals(per * n)
            }
            Source::Split(_, a) => a.reals(per),
        }
    }

    /// A field per particle.
    pub fn fields<T: Real>(&mut self) -> Result<Vec<Field<T>>, Error> {
        Ok(self.array::<T>(4)?.chunks_exact(4).map(|c| Field::new(c[0], c[1], c[2], c[3])).collect())
    }

    /// A jerk per particle.
    pub fn jerks<T: Real>(&mut self) -> Result<Vec<Jerk<T>>, Error> {
        Ok(self.array::<T>(3)?.chunks_exact(3).map(|c| Jerk::new(c[0], c[1], c[2])).collect())
    }

    /// Three f64 per particle.
    pub fn triples(&mut self) -> Result<Vec<[f64; 3]>, Error> {
        Ok(self.array::<f64>(3)?.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    }

    /// One f64 per particle.
    pub fn f64s(&mut self) -> Result<Vec<f64>, Error> {
        self.array(1)
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

fn put_reals<T: Real>(out: &mut Vec<u64>, xs: impl IntoIterator<Item = T>) {
    out.extend(xs.into_iter().map(|x| x.to_f64().to_bits()));
}

/// Positions and velocities as two per-particle arrays after the time; the flat form
/// keeps its own layout (the time, one count, every position, every velocity), which
/// saved files have.
impl<T: Real> Checkpoint for State<T> {
    fn save_to(&self, out: &mut Sink<'_>) {
        out.f64(self.time);
        out.array(4, self.pos.iter().flat_map(|p| [p.x, p.y, p.z, p.m]));
        out.array(3, self.vel.iter().flat_map(|v| v.components()));
    }

    fn restore_from(&mut self, from: &mut Source<'_, '_, '_>) -> Result<(), Error> {
        self.time = from.f64()?;
        let (p, v) = (from.array::<T>(4)?, from.array::<T>(3)?);
        if p.len() / 4 != v.len() / 3 {
            return Err(short());
        }
        self.pos = p.chunks_exact(4).map(|c| Particle::new(c[0], c[1], c[2], c[3])).collect();
        self.vel = v.chunks_exact(3).map(|c| Velocity::new(c[0], c[1], c[2])).collect();
        Ok(())
    }

    fn save(&self, out: &mut Vec<u64>) {
        out.push(self.time.to_bits());
        out.push(self.pos.len() as u64);
        put_reals(out, self.pos.iter().flat_map(|p| [p.x, p.y, p.z, p.m]));
        put_reals(out, self.vel.iter().flat_map(|v| v.components()));
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
