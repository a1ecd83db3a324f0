//! SoA staging buffers and the per-thread parts of a call.

use crate::kernel::{Found, PartSearch, SourcesSoa};
use nbody_core::{Bodies, Field, Jerk, Particle, Real, Velocity};

/// Copies sources into SoA lanes and checks them (`dispatch::gather`, compiled per
/// instruction set).
pub(crate) type GatherFn<T> = unsafe fn(&[Particle<T>], &[Velocity<T>], &mut [&mut [T]; 7]) -> bool;

/// Targets are padded (with massless particles at the origin, whose sums are dropped)
/// to a multiple of this, the largest block any backend uses.
pub(crate) const BLOCK: usize = 32;

/// Reusable SoA buffers of one precision. They only grow.
#[derive(Default, Debug)]
pub struct Scratch<T> {
    /// Target x, y, z, vx, vy, vz.
    tpos: [Vec<T>; 6],
    /// One tile's sums ax, ay, az, phi, jx, jy, jz (working precision).
    acc: [Vec<T>; 7],
    /// Totals over all tiles, same lanes, in f64.
    total: [Vec<f64>; 7],
    /// Source x, y, z, m, vx, vy, vz.
    src: [Vec<T>; 7],
    /// Per-particle softening of the (padded) targets and of the sources as the
    /// kernels read it (`kernel::Block::eps`); empty when the call has none.
    teps: Vec<T>,
    seps: Vec<T>,
    /// Padded target count and the number of parts the call is split into.
    padded: usize,
    parts: usize,
    /// The parts split the sources (each part: every target, its own sums) instead of
    /// the targets: how a call of few targets still uses every thread.
    by_sources: bool,
    /// Neighbour search, when asked: per padded target the source that is its own
    /// particle (`u32::MAX` if none) and its squared radius (negative: no list), and
    /// what each part found.
    own: Vec<u32>,
    h2: Vec<T>,
    found: Vec<Found<T>>,
    search: bool,
}

/// The slices one thread works on: whole blocks of targets and their sums.
#[derive(Debug)]
pub struct Part<'a, T> {
    pub pos: [&'a [T]; 3],
    /// Per-particle softening (empty unless the call has it).
    pub eps: &'a [T],
    pub vel: [&'a [T]; 3],
    pub acc: [&'a mut [T]; 4],
    pub jerk: [&'a mut [T]; 3],
    pub total: [&'a mut [f64]; 7],
    /// The neighbour search's share, when the call asks for one.
    pub search: Option<PartSearch<'a, T>>,
}

/// A part's sources: staged by the caller, or a run of the call's sources the part
/// copies into its own stretch of the SoA lanes (and checks) on its own thread, so a leaf
/// call's copying runs in parallel too.
pub(crate) enum Sources<'a, T: Real> {
    Staged(SourcesSoa<'a, T>),
    Unstaged { pos: &'a [Particle<T>], vel: &'a [Velocity<T>], e: &'a [T], lanes: [&'a mut [T]; 7] },
}

impl<'a, T: Real> Sources<'a, T> {
    /// The SoA view, copying first if the part must; `None` if a source fails
    /// `validate::particles` (the call then stops before it writes any output).
    ///
    /// # Safety
    /// `gather` must suit this CPU.
    pub(crate) unsafe fn stage(self, gather: GatherFn<T>) -> Option<SourcesSoa<'a, T>> {
        match self {
            Sources::Staged(s) => Some(s),
            Sources::Unstaged { pos, vel, e, mut lanes } => {
                // SAFETY: the caller's promise.
                if !unsafe { gather(pos, vel, &mut lanes) } {
                    return None;
                }
                let [x, y, z, m, vx, vy, vz] = lanes.map(|l| &*l);
                Some(SourcesSoa { x, y, z, m, vx, vy, vz, e })
            }
        }
    }
}

/// Copies positions and masses (and velocities, where `vel` is not empty) into SoA
/// lanes as long as `pos`; true when every source passes `validate::particles`.
#[inline(always)]
pub(crate) fn gather<T: Real>(pos: &[Particle<T>], vel: &[Velocity<T>], lanes: &mut [&mut [T]; 7]) -> bool {
    let [x, y, z, m, vx, vy, vz] = lanes;
    // One plain pass per lane: it vectorises, where a per-element choice of lane did not.
    for (d, p) in x.iter_mut().zip(pos) {
        *d = p.x;
    }
    for (d, p) in y.iter_mut().zip(pos) {
        *d = p.y;
    }
    for (d, p) in z.iter_mut().zip(pos) {
        *d = p.z;
    }
    for (d, p) in m.iter_mut().zip(pos) {
        *d = p.m;
    }
    for (d, v) in vx.iter_mut().zip(vel) {
        *d = v.vx;
    }
    for (d, v) in vy.iter_mut().zip(vel) {
        *d = v.vy;
    }
    for (d, v) in vz.iter_mut().zip(vel) {
        *d = v.vz;
    }
    nbody_core::validate::particles_ok(pos)
}

impl<T> Part<'_, T> {
    pub(crate) fn len(&self) -> usize {
        self.pos[0].len()
    }
}

/// Splits the first `k` elements (or all, if fewer) off the front of `s`.
fn take_front<'a, U>(s: &mut &'a mut [U], k: usize) -> &'a mut [U] {
    let n = k.min(s.len());
    let (a, b) = core::mem::take(s).split_at_mut(n);
    *s = b;
    a
}

fn fill<T: Copy>(v: &mut Vec<T>, n: usize, value: T) {
    v.clear();
    v.resize(n, value);
}

/// `v` at length `n`, contents left to be overwritten (grown with `value`).
fn sized<T: Copy>(v: &mut Vec<T>, n: usize, value: T) {
    v.truncate(n);
    v.resize(n, value);
}

impl<T: Real> Scratch<T> {
    /// Copies the targets into SoA form and zeroes the sums; copies the sources too
    /// (with `gather`), unless the parts split them and copy their own runs
    /// ([`Sources::Unstaged`]). False when a source fails `validate::particles`.
    ///
    /// # Safety
    /// `gather` must suit this CPU.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn stage(
        &mut self,
        targets: Bodies<'_, T>,
        sources: Bodies<'_, T>,
        jerk: bool,
        parts: usize,
        by_sources: bool,
        search: Option<(&nbody_core::Overlap, Option<&[T]>)>,
        gather: GatherFn<T>,
    ) -> bool {
        let z = T::zero();
        let n = targets.pos.len();
        self.padded = n.next_multiple_of(BLOCK);
        self.parts = parts.max(1);
        self.by_sources = by_sources && parts > 1;
        let copies = if self.by_sources { self.parts } else { 1 };
        let lanes = if jerk { 6 } else { 3 };
        for (k, v) in self.tpos.iter_mut().enumerate().take(lanes) {
            fill(v, self.padded, z);
            for (i, dst) in v.iter_mut().take(n).enumerate() {
                *dst = match k {
                    0 => targets.pos[i].x,
                    1 => targets.pos[i].y,
                    2 => targets.pos[i].z,
                    3 => targets.vel[i].vx,
                    4 => targets.vel[i].vy,
                    _ => targets.vel[i].vz,
                };
            }
        }
        let sums = if jerk { 7 } else { 4 };
        for v in self.acc.iter_mut().take(sums) {
            fill(v, copies * self.padded, z);
        }
        for v in self.total.iter_mut().take(sums) {
            fill(v, copies * self.padded, 0.0);
        }
        let ns = sources.pos.len();
        for (k, v) in self.src.iter_mut().enumerate() {
            sized(v, if k < 4 || jerk { ns } else { 0 }, z);
        }
        // SAFETY: the caller's promise.
        let valid = self.by_sources
            || unsafe { gather(sources.pos, sources.vel, &mut self.src.each_mut().map(|v| v.as_mut_slice())) };
        self.search = search.is_some();
        if let Some((overlap, radius2)) = search {
            fill(&mut self.own, self.padded, u32::MAX);
            let (t0, s0, len) = overlap.resolve(n);
            for k in 0..len {
                self.own[t0 + k] = (s0 + k) as u32;
            }
            fill(&mut self.h2, self.padded, -T::one());
            if let Some(r) = radius2 {
                self.h2[..n].copy_from_slice(r);
            }
            self.found.resize_with(self.parts, Found::default);
            for f in &mut self.found[..self.parts] {
                f.pairs.clear();
            }
        }
        valid
    }

    /// Stages a softening length per particle as the kernels read it (see
    /// `kernel::Block::eps`): Plummer `ε²/2` for targets against `−ε²/2` for sources,
    /// the spline `−h` for both (`h = 2.8 ε`). After [`Scratch::stage`]; `None` (a call
    /// with one softening) leaves them empty.
    pub(crate) fn stage_lengths(&mut self, lengths: Option<(nbody_core::PerParticle<'_, T>, nbody_core::Softening)>) {
        self.teps.clear();
        self.seps.clear();
        let Some((eps, softening)) = lengths else { return };
        let (scale, squared) = softening.pair_rule().stored();
        let scale = T::from_f64(scale);
        // The targets' value and the sources' (the sources' negated for a sum; for the
        // larger of the two, both negated).
        let (target_scale, source_scale) = match softening.pair_rule() {
            nbody_core::PairRule::MeanSquare => (scale, -scale),
            nbody_core::PairRule::Larger => (-scale, -scale),
        };
        let value = move |scale: T, e: T| if squared { scale * e * e } else { scale * e };
        let (target, source) = (|e: T| value(target_scale, e), |e: T| value(source_scale, e));
        self.teps.extend(eps.targets.iter().map(|&e| target(e)));
        self.teps.resize(self.padded, T::zero());
        self.seps.extend(eps.sources.iter().map(|&e| source(e)));
    }

    /// The call's neighbour findings, part by part (in source order when the parts
    /// split the sources): `(first target of the part, what it found)`.
    pub(crate) fn found(&self) -> impl Iterator<Item = (usize, &Found<T>)> {
        let per = if self.by_sources { 0 } else { (self.padded / BLOCK).div_ceil(self.parts.max(1)) * BLOCK };
        self.found[..self.parts].iter().enumerate().map(move |(k, f)| (k * per, f))
    }

    /// Splits the call into its parts, each with the sources it sees: runs of whole
    /// target blocks against all sources, or (by sources) every target against a run of
    /// the sources, into sums of its own. Unused lanes (velocities and jerk without the
    /// jerk kernel) are empty.
    pub(crate) fn split<'a>(&'a mut self, sources: Bodies<'a, T>) -> Vec<(Part<'a, T>, Sources<'a, T>)> {
        if self.by_sources {
            return self.split_sources(sources);
        }
        let per = (self.padded / BLOCK).div_ceil(self.parts.max(1)) * BLOCK;
        let Self { tpos, acc, total, src, padded, own, h2, found, search, teps, seps, .. } = self;
        let mut teps: &[T] = teps;
        let mut own: &[u32] = own;
        let mut h2: &[T] = h2;
        let mut found = found.iter_mut();
        let mut pos: [&[T]; 6] = tpos.each_ref().map(|v| v.as_slice());
        let mut sums: [&mut [T]; 7] = acc.each_mut().map(|v| v.as_mut_slice());
        let mut totals: [&mut [f64]; 7] = total.each_mut().map(|v| v.as_mut_slice());
        let mut parts = Vec::with_capacity(self.parts);
        let mut left = *padded;
        while left > 0 {
            let k = per.min(left);
            left -= k;
            let p: [&[T]; 6] = core::array::from_fn(|i| {
                let (a, b) = pos[i].split_at(k.min(pos[i].len()));
                pos[i] = b;
                a
            });
            let [ax, ay, az, phi, jx, jy, jz] = sums.each_mut().map(|s| take_front(s, k));
            let search = match (*search, found.next()) {
                (true, Some(found)) => {
                    let (o, rest) = own.split_at(k);
                    let (h, hrest) = h2.split_at(k);
                    (own, h2) = (rest, hrest);
                    Some(PartSearch { source_start: 0, own: o, h2: h, found })
                }
                _ => None,
            };
            let eps = if teps.is_empty() {
                teps
            } else {
                let (a, b) = teps.split_at(k);
                teps = b;
                a
            };
            parts.push(Part {
                pos: [p[0], p[1], p[2]],
                eps,
                vel: [p[3], p[4], p[5]],
                acc: [ax, ay, az, phi],
                jerk: [jx, jy, jz],
                total: totals.each_mut().map(|s| take_front(s, k)),
                search,
            });
        }
        let s = &*src;
        let all = SourcesSoa { x: &s[0], y: &s[1], z: &s[2], m: &s[3], vx: &s[4], vy: &s[5], vz: &s[6], e: seps };
        parts.into_iter().map(|p| (p, Sources::Staged(all))).collect()
    }

    /// [`Scratch::split`] by sources.
    #[allow(clippy::type_complexity)]
    fn split_sources<'a>(&'a mut self, sources: Bodies<'a, T>) -> Vec<(Part<'a, T>, Sources<'a, T>)> {
        let Self { tpos, acc, total, src, padded, parts, own, h2, found, search, teps, seps, .. } = self;
        let (teps, seps): (&[T], &[T]) = (teps, seps);
        let (n_src, parts, padded) = (src[0].len(), *parts, *padded);
        let (own, h2, search): (&[u32], &[T], bool) = (own, h2, *search);
        let mut found = found.iter_mut();
        let per = n_src.div_ceil(parts);
        let pos: [&[T]; 6] = tpos.each_ref().map(|v| v.as_slice());
        let mut sums: [&mut [T]; 7] = acc.each_mut().map(|v| v.as_mut_slice());
        let mut totals: [&mut [f64]; 7] = total.each_mut().map(|v| v.as_mut_slice());
        let mut lanes: [&mut [T]; 7] = src.each_mut().map(|v| v.as_mut_slice());
        (0..parts)
            .map(|k| {
                let r = (k * per).min(n_src)..((k + 1) * per).min(n_src);
                let [ax, ay, az, phi, jx, jy, jz] = sums.each_mut().map(|s| take_front(s, padded));
                let search = match (search, found.next()) {
                    (true, Some(found)) => Some(PartSearch { source_start: r.start, own, h2, found }),
                    _ => None,
                };
                let part = Part {
                    pos: [pos[0], pos[1], pos[2]],
                    eps: teps,
                    vel: [pos[3], pos[4], pos[5]],
                    acc: [ax, ay, az, phi],
                    jerk: [jx, jy, jz],
                    total: totals.each_mut().map(|s| take_front(s, padded)),
                    search,
                };
                let run = Sources::Unstaged {
                    pos: &sources.pos[r.clone()],
                    vel: if sources.vel.is_empty() { sources.vel } else { &sources.vel[r.clone()] },
                    e: if seps.is_empty() { seps } else { &seps[r.clone()] },
                    lanes: lanes.each_mut().map(|l| take_front(l, r.len())),
                };
                (part, run)
            })
            .collect()
    }

    /// Lane `k` of target `i`'s total (summed over the parts, in part order, when they
    /// split the sources).
    fn total(&self, k: usize, i: usize) -> f64 {
        if self.by_sources {
            (0..self.parts).map(|p| self.total[k][p * self.padded + i]).sum()
        } else {
            self.total[k][i]
        }
    }

    /// Sums of target `i` (without G) as a field value.
    pub(crate) fn sums(&self, i: usize) -> Field<T> {
        let t = |k: usize| T::from_f64(self.total(k, i));
        Field::new(t(0), t(1), t(2), t(3))
    }

    /// Jerk sums of target `i` (without G).
    pub(crate) fn jerk_sums(&self, i: usize) -> Jerk<T> {
        let t = |k: usize| T::from_f64(self.total(k, i));
        Jerk::new(t(4), t(5), t(6))
    }
}
