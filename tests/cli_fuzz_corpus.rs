//! Replays the committed corpus of the `cli_parsers` fuzz target (fuzz/corpus/) on
//! stable, so CI runs every saved parser input without a nightly toolchain.

#[test]
fn replay_cli_parsers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/cli_parsers");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 6, "corpus missing in {}", dir.display());
    for f in files {
        let data = std::fs::read(&f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        nbody::cli::fuzz::parsers(&data);
    }
}
