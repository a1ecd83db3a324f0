//! The output folder of a run, claimed for the run's whole life: locked against a
//! second run writing into it, and never mixed with another run's outputs unless the
//! user says to replace them (`--overwrite`) or to continue them (`--resume`).

use anyhow::{Context, Result, bail};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The lock file's name inside an output folder: an advisory lock on it (released by
/// the kernel when the process ends, however it ends) marks the folder as being written;
/// the run removes it when it ends (one killed leaves it, unlocked and harmless).
pub const LOCK: &str = ".nbody-lock";

/// What a run does with a folder that already holds a run's outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A new run: refuse another run's outputs.
    Fresh,
    /// A new run that replaces another run's outputs (`--overwrite`).
    Overwrite,
    /// The continuation of the run whose outputs are there (`--resume`).
    Resume,
}

/// A claimed output folder; dropping it removes the lock file and releases the lock.
#[derive(Debug)]
pub struct Claimed {
    lock: Option<File>,
    path: std::path::PathBuf,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // Removed while still held: a run waiting on the old file finds it gone (see
        // `same_file`) and takes a new one.
        let _ = std::fs::remove_file(&self.path);
        drop(self.lock.take());
    }
}

/// Whether the open `file` is still the one at `path` (not removed and replaced by
/// the run that held it before).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Whether `name` is one of the files a run writes.
fn is_run_output(name: &str) -> bool {
    let ext = |prefix: &str, suffix: &str| name.starts_with(prefix) && name.ends_with(suffix);
    matches!(name, "settings.toml" | "energy.csv" | "energy-error.png" | "summary.txt")
        || ext("snapshot-", ".npy")
        || ext("snapshot-", ".csv")
        || ext("snapshot-", ".hdf5")
        || ext("checkpoint-", ".nbck")
        || ext("density-", ".png")
}

/// Claims `dir` for a run (creating it), or says in one line why not: another run is
/// writing it (named by its process id, host and start), or it holds another run's
/// outputs and `claim` is [`Claim::Fresh`].
///
/// ```
/// use nbody::cli::folder::{claim, Claim};
/// let dir = tempfile::tempdir().unwrap();
/// let out = dir.path().join("out");
/// let first = claim(&out, Claim::Fresh).unwrap();
/// let second = claim(&out, Claim::Fresh).unwrap_err().to_string();
/// assert!(second.contains("being written by another run"), "{second}");
/// drop(first);
/// std::fs::write(out.join("settings.toml"), "n = 1").unwrap();
/// assert!(claim(&out, Claim::Fresh).unwrap_err().to_string().contains("--overwrite"));
/// claim(&out, Claim::Overwrite).unwrap();
/// assert!(!out.join("settings.toml").exists());
/// ```
pub fn claim(dir: &Path, claim: Claim) -> Result<Claimed> {
    let shown = dir.display();
    std::fs::create_dir_all(dir).with_context(|| format!("creating the output folder {shown}"))?;
    let path = dir.join(LOCK);
    let mut lock = loop {
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("{shown}: opening its lock file"))?;
        match lock.try_lock() {
            Ok(()) if same_file(&lock, &path) => break lock,
            Ok(()) => continue,
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = lock.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() { "a process that has not said who it is" } else { holder };
                bail!("--out {shown} is being written by another run ({holder}): choose another --out or wait for it");
            }
            Err(TryLockError::Error(e)) => return Err(e).with_context(|| format!("{shown}: locking it")),
        }
    };
    let found: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("{shown}: listing it"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| is_run_output(n))
        .collect();
    match claim {
        Claim::Fresh if !found.is_empty() => bail!(
            "--out {shown} holds another run's outputs ({} files, e.g. {}): pass --overwrite to replace them or --resume {shown} to continue that run",
            found.len(),
            found.iter().min().map_or("", String::as_str)
        ),
        Claim::Overwrite => {
            for name in &found {
                std::fs::remove_file(dir.join(name)).with_context(|| format!("{shown}: removing {name}"))?;
            }
        }
        _ => {}
    }
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let me = format!("process {} on {}, started at unix time {started}", std::process::id(), host.trim());
    lock.set_len(0).and_then(|()| lock.rewind()).and_then(|()| lock.write_all(me.as_bytes())).ok();
    Ok(Claimed { lock: Some(lock), path })
}
