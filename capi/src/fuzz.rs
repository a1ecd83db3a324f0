//! The C ABI under arbitrary input: the body of the `c_abi` fuzz target (fuzz/), also
//! replayed over its committed corpus by `cargo test` on stable. Bytes choose a
//! sequence of calls through the `extern "C"` functions themselves (the plain, jerk,
//! batched and tree forces, the tree run, GRAPE-6 and GRAPE-5) with arbitrary counts
//! against the arrays, spans, addresses and parameters, NaN, infinite and negative
//! values, null and misaligned pointers. What must hold: no call panics or aborts (a
//! caught panic is [`NbodyStatus::Panic`], a failure here), every refusal is a status,
//! and an `Ok` call leaves finite outputs.
//!
//! Counts never exceed the memory behind a pointer: a C caller that lies about its
//! array's length is outside what a library can check.
//!
//! ```
//! nbody_c::fuzz::c_abi(&[0, 1, 2, 3, 200, 17, 5, 9, 0xff, 0x7f, 0x80]);
//! ```

use crate::grape::grape5::{g5_close, g5_open, g5_set_xmj};
use crate::grape::grape6::{g6_close, g6_open, g6_set_j_particle};
use crate::*;

/// Reads the fuzzer's bytes: small integers, and floats that are often ordinary and
/// sometimes NaN, infinite, negative, tiny or huge.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }

    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n.max(1)
    }

    fn int(&mut self) -> i32 {
        i32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    fn real(&mut self) -> f64 {
        match self.byte() {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -1.0,
            4 => 0.0,
            5 => 1e-300,
            6 => 1e300,
            k => (k as f64 - 128.0) / 37.0,
        }
    }

    fn mass(&mut self) -> f64 {
        let m = self.real();
        if self.byte() < 240 { m.abs() } else { m }
    }
}

/// Aligned room for records (32 bytes covers the f64 records' alignment), from which a
/// call takes an aligned, misaligned or null pointer.
#[repr(C, align(32))]
#[derive(Clone, Copy)]
struct Room([f64; 4]);

/// Records in aligned room, with one spare record so a misaligned view stays inside.
struct Records {
    room: Vec<Room>,
}

impl Records {
    fn new(b: &mut Bytes<'_>, n: usize, masses: bool) -> Self {
        let room = (0..n + 1)
            .map(|_| Room([b.real(), b.real(), b.real(), if masses { b.mass() } else { b.real() }]))
            .collect();
        Records { room }
    }

    /// A pointer to the records as `R` (f32 or f64): aligned, null, or one element off.
    fn ptr<R>(&mut self, how: u8) -> *mut R {
        let base = self.room.as_mut_ptr().cast::<R>();
        match how % 16 {
            0 => std::ptr::null_mut(),
            // SAFETY: one element into room that holds a spare record beyond the count.
            1 => unsafe { base.add(1) },
            _ => base,
        }
    }

    fn f64s(&self) -> impl Iterator<Item = f64> + '_ {
        self.room.iter().flat_map(|r| r.0)
    }
}

fn params(b: &mut Bytes<'_>) -> NbodyParams {
    NbodyParams {
        g: if b.byte() < 230 { 1.0 } else { b.real() },
        eps: if b.byte() < 200 { 0.05 } else { b.real() },
        potential: b.below(3) as i32,
        overlap: if b.byte() < 220 { b.below(3) as i32 } else { b.int() },
        target_start: b.below(10),
        source_start: b.below(10),
        shared_len: b.below(10),
        softening: if b.byte() < 230 { b.below(2) as i32 } else { b.int() },
    }
}

/// A status the library may return; `Ok` with every written value finite.
fn check(what: &str, s: NbodyStatus, out: Option<&Records>) {
    assert_ne!(s, NbodyStatus::Panic, "{what}: a panic inside the library");
    if s == NbodyStatus::Ok
        && let Some(o) = out
    {
        assert!(o.f64s().all(|x| !x.is_nan()), "{what}: Ok, with NaN in its output");
    }
}

/// Runs the calls `data` chooses (see the module docs).
pub fn c_abi(data: &[u8]) {
    let mut b = Bytes(data);
    let backend = [c"cpu:1", c"reference", c"mixed:1"][b.below(3)];
    let mut opened = std::ptr::null_mut();
    // SAFETY: a C string and a place for the handle.
    check("nbody_open", unsafe { nbody_open(backend.as_ptr(), &mut opened) }, None);
    let e = if b.byte() < 8 { std::ptr::null_mut() } else { opened };
    for _ in 0..8 {
        if b.0.is_empty() {
            break;
        }
        let (nt, ns) = (b.below(7), b.below(7));
        let (mut t, mut s) = (Records::new(&mut b, nt, true), Records::new(&mut b, ns, true));
        let mut out = Records { room: vec![Room([0.0; 4]); nt + 1] };
        let p = params(&mut b);
        let pp: *const NbodyParams = if b.byte() < 8 { std::ptr::null() } else { &p };
        let (ht, hs, ho) = (b.byte(), b.byte(), b.byte());
        // Counts within the room behind each pointer, not always the matching ones.
        let n_out = if b.byte() < 16 { b.below(nt + 1) } else { nt };
        match b.below(7) {
            0 => {
                // SAFETY: each pointer is null or holds its count of records (plus one).
                let st = unsafe { nbody_accelerations_f64(e, t.ptr(ht), nt, s.ptr(hs), ns, pp, out.ptr(ho), n_out) };
                check("nbody_accelerations_f64", st, Some(&out));
            }
            1 => {
                // SAFETY: as above, f32 records fit in the f64 room.
                let st = unsafe { nbody_accelerations_f32(e, t.ptr(ht), nt, s.ptr(hs), ns, pp, out.ptr(ho), n_out) };
                check("nbody_accelerations_f32", st, Some(&out));
            }
            2 => {
                let (mut tv, mut sv) = (Records::new(&mut b, nt, false), Records::new(&mut b, ns, false));
                let mut jerk = Records { room: vec![Room([0.0; 4]); nt + 1] };
                let (a, c, d) = (b.byte(), b.byte(), b.byte());
                // SAFETY: as above.
                let st = unsafe {
                    nbody_jerk_f64(e, t.ptr(ht), tv.ptr(a), nt, s.ptr(hs), sv.ptr(c), ns, pp, out.ptr(ho), jerk.ptr(d))
                };
                check("nbody_jerk_f64", st, Some(&out));
                check("nbody_jerk_f64 (jerk)", st, Some(&jerk));
            }
            3 => {
                let span = |b: &mut Bytes<'_>| {
                    let (x, y) = if b.byte() < 200 {
                        (b.below(8) as u32, b.below(8) as u32)
                    } else {
                        (b.int() as u32, b.int() as u32)
                    };
                    NbodySpan { start: x, end: y }
                };
                let pairs: Vec<NbodyPair> =
                    (0..b.below(4)).map(|_| NbodyPair { targets: span(&mut b), sources: span(&mut b) }).collect();
                let spans: Vec<NbodySpan> = (0..b.below(4)).map(|_| span(&mut b)).collect();
                let mut o = Records { room: vec![Room([0.0; 4]); ns + 1] };
                // SAFETY: the particle array holds ns records; pairs and spans their counts.
                let st = unsafe {
                    nbody_batch_f64(
                        e,
                        s.ptr(hs),
                        ns,
                        pairs.as_ptr(),
                        pairs.len(),
                        spans.as_ptr(),
                        spans.len(),
                        pp,
                        o.ptr(ho),
                    )
                };
                check("nbody_batch_f64", st, Some(&o));
            }
            4 => {
                let tree = NbodyTree { theta: b.real(), alpha: if b.byte() < 128 { 0.0 } else { b.real() } };
                let mut prev = Records::new(&mut b, ns, false);
                let mut o = Records { room: vec![Room([0.0; 4]); ns + 1] };
                let hp = b.byte();
                // SAFETY: n records behind each non-null pointer.
                let st = unsafe { nbody_tree_forces_f64(e, s.ptr(hs), ns, &tree, prev.ptr(hp), pp, o.ptr(ho)) };
                check("nbody_tree_forces_f64", st, Some(&o));
            }
            5 => {
                // A tree run owns (and frees) the executor it is given: open one of its own.
                let mut own = std::ptr::null_mut();
                // SAFETY: a C string and a place for the handle.
                check("nbody_open", unsafe { nbody_open(c"cpu:1".as_ptr(), &mut own) }, None);
                let mut vel = Records::new(&mut b, ns, false);
                let tree = NbodyTree { theta: 0.5, alpha: 0.0 };
                let mut run: *mut NbodyTreeRun = std::ptr::null_mut();
                let (hv, dt) = (b.byte(), if b.byte() < 128 { 1.0 / 64.0 } else { b.real() });
                // SAFETY: ns records behind each non-null pointer.
                let st = unsafe {
                    nbody_tree_run_new_f64(own, s.ptr(hs), vel.ptr(hv), ns, &tree, p.eps, p.softening, dt, &mut run)
                };
                check("nbody_tree_run_new_f64", st, None);
                if st == NbodyStatus::Ok {
                    // SAFETY: a run just made, freed once.
                    unsafe {
                        check("nbody_tree_run_evolve", nbody_tree_run_evolve(run, 2.0 / 64.0), None);
                        nbody_tree_run_free(run);
                    }
                }
            }
            _ => {
                // GRAPE: j-particles at arbitrary addresses, then the board closed.
                g6_open(7);
                let x = [b.real(), b.real(), b.real()];
                let v = [b.real(), b.real(), b.real()];
                let (address, index, mass) = (b.int(), b.int(), b.mass());
                // SAFETY: three doubles behind each vector pointer.
                let r = unsafe {
                    g6_set_j_particle(
                        7,
                        address,
                        index,
                        0.0,
                        0.0,
                        mass,
                        x.as_ptr(),
                        x.as_ptr(),
                        v.as_ptr(),
                        v.as_ptr(),
                        x.as_ptr(),
                    )
                };
                assert!(r == 0 || r == -1, "g6_set_j_particle returned {r}");
                g6_close(7);
                g5_open();
                let xs: Vec<[f64; 3]> = (0..ns).map(|_| [b.real(), b.real(), b.real()]).collect();
                let ms: Vec<f64> = (0..ns).map(|_| b.mass()).collect();
                // SAFETY: ns of each.
                unsafe { g5_set_xmj(b.int(), ns as i32, xs.as_ptr(), ms.as_ptr()) };
                g5_close();
            }
        }
    }
    // SAFETY: a handle from nbody_open (or null), freed once.
    unsafe { nbody_executor_free(opened) };
}
