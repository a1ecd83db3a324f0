//! Replays the committed corpus of the `c_abi` fuzz target (fuzz/corpus/c_abi) through
//! the C ABI on stable, so CI runs every saved input without a nightly toolchain. Its
//! own test binary: the GRAPE boards it opens and closes are process-wide.

#[test]
fn replay_c_abi() {
    let inputs = nbody_conformance::fuzz::corpus("c_abi");
    assert!(inputs.len() >= 16, "corpus too small: {} inputs", inputs.len());
    for data in inputs {
        nbody_c::fuzz::c_abi(&data);
    }
}
