//! Helpers the command's integration tests share.

use std::path::Path;

/// The snapshots and energy rows of an output folder, by name.
pub(crate) fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("snapshot-") || n == "energy.csv"
        })
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

/// Whether the folder holds a checkpoint.
#[allow(dead_code)] // Not every test file uses it.
pub(crate) fn has_checkpoint(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .is_ok_and(|d| d.filter_map(Result::ok).any(|e| e.file_name().to_string_lossy().ends_with(".nbck")))
}
