//! The GRAPE-5 calls beyond the one-shot force call: the split call (`g5_set_xi`,
//! `g5_run`, `g5_get_force`), the other spellings of softening and j-particles
//! (`g5_set_eps2_to_all`, `g5_set_jp`), the hardware queries and `g5_open_special`.
//! One test: the GRAPE-5 board is one per process.

use nbody_c::grape::grape5::*;

fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string valid until the next failure.
    unsafe { std::ffi::CStr::from_ptr(nbody_c::nbody_last_error()) }.to_string_lossy().into_owned()
}

/// Forces and potentials on `x` by the one-shot call.
fn one_shot(x: &[[f64; 3]]) -> (Vec<[f64; 3]>, Vec<f64>) {
    let (mut a, mut p) = (vec![[0.0; 3]; x.len()], vec![0.0; x.len()]);
    // SAFETY: x.len() of each.
    unsafe { g5_calculate_force_on_x(x.as_ptr(), a.as_mut_ptr(), p.as_mut_ptr(), x.len() as i32) };
    (a, p)
}

#[test]
fn split_calls_and_other_spellings_agree_with_the_one_shot_call() {
    g5_open();
    let xj: Vec<[f64; 3]> =
        (0..50).map(|k| [(k as f64 * 0.37).sin(), (k as f64 * 0.11).cos(), k as f64 / 50.0]).collect();
    let mj: Vec<f64> = (0..50).map(|k| 1.0 + k as f64 / 100.0).collect();
    // SAFETY: 50 of each.
    unsafe { g5_set_xmj(0, 50, xj.as_ptr(), mj.as_ptr()) };
    g5_set_n(50);
    g5_set_eps_to_all(0.05);
    let xi: Vec<[f64; 3]> = (0..20).map(|k| [k as f64 / 7.0, -0.3, 0.2]).collect();
    let (a1, p1) = one_shot(&xi);
    assert!(p1.iter().all(|p| *p < 0.0));

    // ε² instead of ε, masses first instead of positions first: the same forces.
    g5_set_eps2_to_all(0.05 * 0.05);
    // SAFETY: 50 of each.
    unsafe { g5_set_jp(0, 50, mj.as_ptr(), xj.as_ptr()) };
    let (a2, p2) = one_shot(&xi);
    assert_eq!((&a1, &p1), (&a2, &p2));

    // The split call, with g5_run and without it (Sapporo2 computes at g5_set_xi).
    for run in [true, false] {
        let (mut a, mut p) = (vec![[9.0; 3]; 20], vec![9.0; 20]);
        // SAFETY: 20 of each.
        unsafe { g5_set_xi(20, xi.as_ptr()) };
        if run {
            g5_run();
        }
        // SAFETY: 20 of each.
        unsafe { g5_get_force(20, a.as_mut_ptr(), p.as_mut_ptr()) };
        assert_eq!((&a, &p), (&a1, &p1), "split call, g5_run called: {run}");
    }
    // Fortran spellings of the split call.
    let (ni, mut a, mut p) = (20i32, vec![[0.0; 3]; 20], vec![0.0; 20]);
    // SAFETY: 20 of each, scalars by reference.
    unsafe {
        g5_set_xi_(&ni, xi.as_ptr());
        g5_run_();
        g5_get_force_(&ni, a.as_mut_ptr(), p.as_mut_ptr());
    }
    assert_eq!((&a, &p), (&a1, &p1));

    // More positions than pipelines are refused (and the last results stay).
    let many = vec![[0.0; 3]; g5_get_number_of_pipelines() as usize + 1];
    // SAFETY: many.len() triples.
    unsafe { g5_set_xi(many.len() as i32, many.as_ptr()) };
    assert!(last_error().contains("more than g5_get_number_of_pipelines() = 4096"), "{}", last_error());
    // A count that does not match g5_set_xi's is refused, the output untouched.
    let (mut a, mut p) = (vec![[7.0; 3]; 3], vec![7.0; 3]);
    // SAFETY: 3 of each.
    unsafe { g5_get_force(3, a.as_mut_ptr(), p.as_mut_ptr()) };
    assert!(last_error().contains("g5_set_xi gave 20"));
    assert_eq!(p, vec![7.0; 3]);

    // Hardware queries: documented constants.
    assert_eq!(g5_get_jmemsize(), i32::MAX);
    assert_eq!(g5_get_number_of_real_pipelines(), g5_get_number_of_pipelines());
    assert_eq!(g5_get_pcibus_freq(), 1);
    g5_close();

    // g5_open_special with no devices named opens as g5_open does; naming GPUs in a
    // build without CUDA is an error that leaves the board closed.
    // SAFETY: ndev = 0 reads no list; 50 of each.
    unsafe {
        g5_open_special(0, std::ptr::null());
        g5_set_xmj(0, 50, xj.as_ptr(), mj.as_ptr());
    }
    g5_set_n(50);
    g5_set_eps_to_all(0.05);
    assert_eq!(one_shot(&xi), (a1.clone(), p1.clone()));
    g5_close();
    if !cfg!(feature = "cuda") {
        let list = [0i32];
        // SAFETY: one device in the list.
        unsafe { g5_open_special(1, list.as_ptr()) };
        assert!(last_error().contains("g5_open_special"), "{}", last_error());
        g5_set_n(1);
        assert!(last_error().contains("not open"), "{}", last_error());
    }
}
