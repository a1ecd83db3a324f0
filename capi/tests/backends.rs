//! Every backend this build and machine offer (`nbody_backends::offered`) opens through
//! both C front ends, `nbody_open` and the GRAPE layer's `NBODY_GRAPE_EXECUTOR`, and
//! gives the reference's forces. One test in its own process: the GRAPE board reads the
//! environment when it opens.

use nbody_c::grape::grape5::*;
use nbody_c::*;
use nbody_core::{Executor, Field, Params, Particle, Reference};
use std::ffi::CString;

/// Relative agreement a backend must reach: f64 throughout, or f32 interactions.
fn tolerance(backend: &str) -> f64 {
    if backend.contains("mixed") { 2e-5 } else { 1e-12 }
}

fn worst(got: &[[f64; 4]], want: &[Field<f64>]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let d = ((g[0] - w.ax).powi(2) + (g[1] - w.ay).powi(2) + (g[2] - w.az).powi(2)).sqrt();
            d / (w.ax * w.ax + w.ay * w.ay + w.az * w.az).sqrt()
        })
        .fold(0.0, f64::max)
}

#[test]
fn every_offered_backend_opens_through_nbody_open_and_the_grape_layer() {
    let n = 256;
    let (bodies, _) = nbody_integrators::ics::plummer::<f64>(n, 3);
    let eps = 0.01;
    let mut want = vec![Field::zero(); n];
    Reference.accelerations(&bodies, &bodies, &Params::softened(eps).with_overlap_identical(), &mut want).unwrap();
    let offered = nbody_backends::offered();
    assert!(offered.len() >= 3, "cpu, mixed and reference at least");
    for offer in offered {
        let name = offer.backend.to_string();
        let tol = tolerance(&name);

        // nbody_open, then a double call through the handle.
        let mut e = std::ptr::null_mut();
        let c = CString::new(name.as_str()).unwrap();
        // SAFETY: a NUL-terminated string and a valid handle slot.
        assert_eq!(unsafe { nbody_open(c.as_ptr(), &mut e) }, NbodyStatus::Ok, "nbody_open({name})");
        let params = NbodyParams {
            g: 1.0,
            eps,
            potential: 1,
            overlap: NbodyOverlap::Identical as i32,
            target_start: 0,
            source_start: 0,
            shared_len: 0,
            softening: NbodySoftening::Plummer as i32,
        };
        let mut out = vec![Field::<f64>::zero(); n];
        let p = bodies.as_ptr().cast::<f64>();
        // SAFETY: `bodies` and `out` hold n aligned records each.
        let s = unsafe { nbody_accelerations_f64(e, p, n, p, n, &params, out.as_mut_ptr().cast(), n) };
        assert_eq!(s, NbodyStatus::Ok, "{name}");
        let got: Vec<[f64; 4]> = out.iter().map(|f| [f.ax, f.ay, f.az, f.phi]).collect();
        let err = worst(&got, &want);
        assert!(err < tol, "nbody_open({name}): worst relative error {err:e}");
        // SAFETY: the handle came from nbody_open.
        unsafe { nbody_executor_free(e) };

        // The GRAPE-5 board on the same backend: every j acts on every i, (i, i) included.
        // SAFETY: the one test of this binary, on its one thread: nothing else reads or
        // writes the environment meanwhile (the GRAPE layer reads it at g5_open, below).
        unsafe { std::env::set_var("NBODY_GRAPE_EXECUTOR", &name) };
        g5_open();
        g5_set_range(-64.0, 64.0, 1.0 / n as f64);
        g5_set_n(n as i32);
        g5_set_eps_to_all(eps);
        let x: Vec<[f64; 3]> = bodies.iter().map(Particle::position).collect();
        let m: Vec<f64> = bodies.iter().map(|b| b.m).collect();
        let (mut a, mut pot) = (vec![[0.0; 3]; n], vec![0.0; n]);
        // SAFETY: n positions, masses, accelerations and potentials.
        unsafe {
            g5_set_xmj(0, n as i32, x.as_ptr(), m.as_ptr());
            g5_calculate_force_on_x(x.as_ptr(), a.as_mut_ptr(), pot.as_mut_ptr(), n as i32);
        }
        g5_close();
        let got: Vec<[f64; 4]> = a.iter().zip(&pot).map(|(a, p)| [a[0], a[1], a[2], *p]).collect();
        let err = worst(&got, &want);
        assert!(err < tol, "NBODY_GRAPE_EXECUTOR={name}: worst relative error {err:e}");
    }
    // A string outside the grammar is refused by both, naming the grammar.
    let mut e = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string and a valid handle slot.
    assert_eq!(unsafe { nbody_open(c"cpu:x".as_ptr(), &mut e) }, NbodyStatus::BadParameter);
    // SAFETY: nbody_last_error returns a valid NUL-terminated string.
    let msg = unsafe { std::ffi::CStr::from_ptr(nbody_last_error()) }.to_string_lossy().into_owned();
    assert!(msg.contains("not a thread count") && msg.contains("use reference"), "{msg}");
}
