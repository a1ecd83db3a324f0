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

/// Sapporo2's remaining GRAPE-6 calls: the list sort mode and overflow test mode are
/// accepted (lists always come sorted; no fixed-point overflow exists here), and
/// `g6_open_special` opens cluster 0 (its driver's choice when no device is named).
#[test]
fn sort_and_overflow_modes_are_accepted_and_open_special_opens_cluster_0() {
    assert_eq!(g6_set_neighbour_list_sort_mode(0), 0);
    assert_eq!(g6_set_overflow_flag_test_mode(1, 1, 1), 0);
    let (mode, flag) = (1i32, 1i32);
    assert_eq!(g6_set_neighbour_list_sort_mode_(&mode), 0);
    assert_eq!(g6_set_overflow_flag_test_mode_(&flag, &flag, &flag), 0);
    // SAFETY: ndev = 0 reads no list.
    assert_eq!(unsafe { g6_open_special(0, std::ptr::null()) }, 0);
    assert_eq!(g6_set_ti(0, 0.0), 0);
    assert_eq!(g6_close(0), 0);
    if !cfg!(feature = "cuda") {
        let list = [0i32];
        // SAFETY: one device named.
        assert_eq!(unsafe { g6_open_special(1, list.as_ptr()) }, -1);
    }
}

/// Every g5_* and g6_* entry point Sapporo2's lib/interfaces export, in both spellings,
/// is here (a missing one fails to compile).
#[test]
fn every_entry_point_sapporo2_exports_exists() {
    use nbody_c::grape::grape5::*;
    let g5: [*const (); 34] = [
        g5_open as *const (),
        g5_open_ as *const (),
        g5_open_special as *const (),
        g5_open_special_ as *const (),
        g5_close as *const (),
        g5_close_ as *const (),
        g5_get_number_of_pipelines as *const (),
        g5_get_number_of_pipelines_ as *const (),
        g5_get_number_of_real_pipelines as *const (),
        g5_get_number_of_real_pipelines_ as *const (),
        g5_get_jmemsize as *const (),
        g5_get_jmemsize_ as *const (),
        g5_get_pcibus_freq as *const (),
        g5_get_pcibus_freq_ as *const (),
        g5_set_n as *const (),
        g5_set_n_ as *const (),
        g5_set_eps_to_all as *const (),
        g5_set_eps_to_all_ as *const (),
        g5_set_eps2_to_all as *const (),
        g5_set_eps2_to_all_ as *const (),
        g5_set_range as *const (),
        g5_set_range_ as *const (),
        g5_set_xmj as *const (),
        g5_set_xmj_ as *const (),
        g5_set_jp as *const (),
        g5_set_jp_ as *const (),
        g5_set_xi as *const (),
        g5_set_xi_ as *const (),
        g5_run as *const (),
        g5_run_ as *const (),
        g5_get_force as *const (),
        g5_get_force_ as *const (),
        g5_calculate_force_on_x as *const (),
        g5_calculate_force_on_x_ as *const (),
    ];
    let g6: [*const (); 38] = [
        g6_open as *const (),
        g6_open_ as *const (),
        g6_open_special as *const (),
        g6_open_special_ as *const (),
        g6_close as *const (),
        g6_close_ as *const (),
        g6_npipes as *const (),
        g6_npipes_ as *const (),
        g6_set_tunit as *const (),
        g6_set_tunit_ as *const (),
        g6_set_xunit as *const (),
        g6_set_xunit_ as *const (),
        g6_set_ti as *const (),
        g6_set_ti_ as *const (),
        g6_set_j_particle as *const (),
        g6_set_j_particle_ as *const (),
        g6calc_firsthalf as *const (),
        g6calc_firsthalf_ as *const (),
        g6calc_lasthalf as *const (),
        g6calc_lasthalf_ as *const (),
        g6calc_lasthalf2 as *const (),
        g6calc_lasthalf2_ as *const (),
        g6_initialize_jp_buffer as *const (),
        g6_initialize_jp_buffer_ as *const (),
        g6_flush_jp_buffer as *const (),
        g6_flush_jp_buffer_ as *const (),
        g6_reset as *const (),
        g6_reset_ as *const (),
        g6_reset_fofpga as *const (),
        g6_reset_fofpga_ as *const (),
        g6_read_neighbour_list as *const (),
        g6_read_neighbour_list_ as *const (),
        g6_get_neighbour_list as *const (),
        g6_get_neighbour_list_ as *const (),
        g6_set_neighbour_list_sort_mode as *const (),
        g6_set_neighbour_list_sort_mode_ as *const (),
        g6_set_overflow_flag_test_mode as *const (),
        g6_set_overflow_flag_test_mode_ as *const (),
    ];
    assert!(g5.iter().chain(&g6).all(|f| !f.is_null()));
}

#[test]
fn j_addresses_past_the_j_memory_are_an_error_not_an_allocation() {
    // Cluster 5: the other tests here use 0.
    assert_eq!(g6_open(5), 0);
    let (x, v, z) = ([1.0f64, 0.0, 0.0], [0.0f64, 0.1, 0.0], [0.0f64; 3]);
    let set = |address: i32| {
        // SAFETY: three doubles behind every vector pointer.
        unsafe {
            g6_set_j_particle(5, address, 3, 0.0, 0.0, 1.0, z.as_ptr(), z.as_ptr(), z.as_ptr(), v.as_ptr(), x.as_ptr())
        }
    };
    assert_eq!(set(0), 0);
    // A garbage address (an uninitialised int, say) is refused at once: before, the
    // board resized its j-memory to the address and the allocation aborted.
    assert_eq!(set(i32::MAX), -1);
    assert_eq!(set(1 << 24), -1);
    assert_eq!(set(-1), -1);
    assert_eq!(set(1000), 0, "an address inside the j-memory");
    assert_eq!(g6_close(5), 0);
}
