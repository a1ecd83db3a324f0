//! The GRAPE-6 entry points codes call around their force loop (AMUSE's ph4 among them):
//! the hardware's fixed-point units are accepted and change nothing, and resetting the
//! force FPGAs keeps the j-memory and needs an open cluster.

use nbody_c::grape::grape6::*;

#[test]
fn units_and_fpga_reset_are_accepted_and_change_nothing() {
    assert_eq!(g6_open(3), 0);
    assert_eq!(g6_set_tunit(45), 0);
    assert_eq!(g6_set_xunit(45), 0);
    let (i, d) = (45i32, 45.0f64);
    assert_eq!(g6_set_tunit_((&raw const i).cast()), 0);
    assert_eq!(g6_set_xunit_((&raw const d).cast()), 0);
    // Two particles in the j-memory, a force on the first before and after the reset.
    let force = || {
        let zero = [0.0f64; 3];
        for (a, x) in [(0, [0.0, 0.0, 0.0]), (1, [1.0, 0.0, 0.0])] {
            // SAFETY: every pointer names three doubles.
            let r = unsafe {
                g6_set_j_particle(
                    3,
                    a,
                    a,
                    0.0,
                    0.0,
                    1.0,
                    zero.as_ptr(),
                    zero.as_ptr(),
                    zero.as_ptr(),
                    zero.as_ptr(),
                    x.as_ptr(),
                )
            };
            assert_eq!(r, 0);
        }
        assert_eq!(g6_set_ti(3, 0.0), 0);
        let (index, xi, vi, h2) = ([0i32], [[0.0f64; 3]], [[0.0f64; 3]], [0.0f64]);
        let (mut acc, mut jerk, mut pot) = ([[0.0f64; 3]], [[0.0f64; 3]], [0.0f64]);
        // SAFETY: one i-particle, arrays of one.
        unsafe {
            g6calc_firsthalf(
                3,
                2,
                1,
                index.as_ptr(),
                xi.as_ptr(),
                vi.as_ptr(),
                xi.as_ptr(),
                xi.as_ptr(),
                pot.as_ptr(),
                0.0,
                h2.as_ptr(),
            );
            assert_eq!(
                g6calc_lasthalf(
                    3,
                    2,
                    1,
                    index.as_ptr(),
                    xi.as_ptr(),
                    vi.as_ptr(),
                    0.0,
                    h2.as_ptr(),
                    acc.as_mut_ptr(),
                    jerk.as_mut_ptr(),
                    pot.as_mut_ptr()
                ),
                0
            );
        }
        (acc[0], pot[0])
    };
    let before = force();
    assert_eq!(before, ([1.0, 0.0, 0.0], -1.0));
    assert_eq!(g6_reset_fofpga(3), 0);
    let id = 3;
    // SAFETY: a valid reference.
    assert_eq!(unsafe { g6_reset_fofpga_(&id) }, 0);
    assert_eq!(force(), before);
    assert_eq!(g6_close(3), 0);
    assert_eq!(g6_reset_fofpga(3), -1, "a closed cluster is an error");
}
