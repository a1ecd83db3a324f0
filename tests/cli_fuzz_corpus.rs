//! Replays the committed corpus of the `cli_parsers` fuzz target (fuzz/corpus/) on
//! stable, so CI runs every saved parser input without a nightly toolchain.

#[test]
fn replay_cli_parsers() {
    let inputs = nbody_conformance::fuzz::corpus("cli_parsers");
    assert!(inputs.len() >= 6, "corpus too small: {} inputs", inputs.len());
    for data in inputs {
        nbody::cli::fuzz::parsers(&data);
    }
}
